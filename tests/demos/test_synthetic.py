"""The synthetic dataset-size demo (``lightning_tau/demos/synthetic.py``, ``lightning-tau demo --task synthetic``): its
data are what the module says (labels drawn from the teacher's probabilities, soft validation targets), the student
scores soft targets as the expected loss and error, and the quick sweep's summary follows from its own logged runs."""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path

import lightning.pytorch as pl
import pytest
import torch
from tb_events import read_run

from lightning_tau.cli import main
from lightning_tau.cli.demo import QUICK_SYNTHETIC
from lightning_tau.cli.demo_checks import too_short_timescale
from lightning_tau.demos.digits import DigitsMLP
from lightning_tau.demos.synthetic import SyntheticDataModule, SyntheticSizeConfig, teacher_student_tensors
from lightning_tau.tuner.analysis.scaling import fit_scaling


def test_training_labels_drawn_from_teachers_probabilities() -> None:
    """The inputs are drawn in one block, so ``(n, 0)`` and ``(0, n)`` are the same inputs: the second gives the
    teacher's probabilities on the first's training inputs. The labels follow them (class frequencies, and how often
    a label differs from the teacher's most likely class), and the seed fixes everything."""
    n = 20_000
    x, y, _, _ = teacher_student_tensors(n, 0, sharpness=6.0)
    _, _, x_same, p = teacher_student_tensors(0, n, sharpness=6.0)
    assert x.shape == (n, 16) and p.shape == (n, 4) and torch.equal(x, x_same)
    frequency = torch.bincount(y, minlength=4).float() / n
    assert torch.allclose(frequency, p.mean(dim=0), atol=0.01)
    noise = float((y != p.argmax(dim=1)).float().mean())
    expected_noise = float(1 - p.max(dim=1).values.mean())
    assert 0.1 < expected_noise < 0.3 and noise == pytest.approx(expected_noise, abs=0.01)
    assert torch.equal(y, teacher_student_tensors(n, 0, sharpness=6.0)[1])
    assert not torch.equal(y, teacher_student_tensors(n, 0, sharpness=6.0, data_seed=1)[1])


def test_sharper_teacher_gives_cleaner_labels() -> None:
    noise = [float(1 - teacher_student_tensors(10, 5000, sharpness=s)[3].max(dim=1).values.mean()) for s in (2, 6, 20)]
    assert noise[0] > noise[1] > noise[2]


def test_student_scores_soft_targets_as_expected_loss_and_error() -> None:
    """``val/loss`` is the cross-entropy against the teacher's probabilities and ``val/error`` the probability that
    the label differs from the predicted class, averaged over the validation inputs."""
    data = SyntheticDataModule(train_size=64, val_size=500, batch_size=32)
    data.setup("fit")
    pl.seed_everything(0, verbose=False)
    model = DigitsMLP(hidden=8, depth=1, norm="none", inputs=16, classes=4)
    trainer = pl.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False, accelerator="cpu")
    (metrics,) = trainer.validate(model, datamodule=data, verbose=False)
    assert data.val_set is not None
    x_val, p_val = data.val_set.tensors
    with torch.no_grad():
        log_q = torch.log_softmax(model(x_val), dim=1)
    expected_loss = float(-(p_val * log_q).sum(dim=1).mean())
    expected_error = float((1 - p_val[torch.arange(500), log_q.argmax(dim=1)]).mean())
    assert metrics["val/loss"] == pytest.approx(expected_loss, rel=1e-5)
    assert metrics["val/error"] == pytest.approx(expected_error, rel=1e-5)
    # not the error against the teacher's most likely class (a different, smaller number here)
    assert expected_error != pytest.approx(float((log_q.argmax(dim=1) != p_val.argmax(dim=1)).float().mean()))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"train_size": 0}, "`SyntheticDataModule(train_size=0)` is not valid: use a positive integer."),
        ({"classes": 1}, "`SyntheticDataModule(classes=1)` is not valid: use at least 2 classes."),
        ({"sharpness": 0.0}, "`SyntheticDataModule(sharpness=0.0)` is not valid: use a positive finite number."),
        ({"classes": 0}, "`SyntheticDataModule(classes=0)` is not valid: use at least 2 classes."),
        ({"data_seed": 0.5}, "`SyntheticDataModule(data_seed=0.5)` is not valid: use an integer."),
    ],
)
def test_datamodule_rejects_bad_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError) as info:
        SyntheticDataModule(**kwargs)
    assert str(info.value) == message


def test_default_config_one_demo_accepts() -> None:
    """The default grid is more than one optimizer step at every size, and there are at least 5 seeds (issue 28)."""
    config = SyntheticSizeConfig()
    assert too_short_timescale(config) is None and too_short_timescale(QUICK_SYNTHETIC) is None
    assert config.fractions()[-1] == 1.0 and len(config.seeds) >= 5


@pytest.mark.slow
def test_quick_synthetic_demo_summary_follows_from_logged_runs(tmp_path: Path) -> None:
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(io.StringIO()):
        code = main(["demo", "--task", "synthetic", "--quick", "--no-progress", "--no-plot", "--out", str(tmp_path)])
    assert code == 0
    sweep = tmp_path / "sweep_0"
    summary = json.loads((sweep / "summary.json").read_text())
    assert (summary["axis"], summary["task"], summary["sizes"]) == ("dataset_size", "synthetic", QUICK_SYNTHETIC.sizes)
    assert "on a synthetic task" in stdout.getvalue()
    logged: dict[int, dict[float, float]] = {}
    for run_dir in sorted({p.parent for p in (sweep / "tb").rglob("events.out.tfevents.*")}):
        hparams, scalars = read_run(run_dir)
        n, tau = int(hparams["dataset_size"]), hparams["tau_epoch"]
        steps = math.ceil(n / QUICK_SYNTHETIC.batch_size)
        assert hparams["weight_decay"] == pytest.approx(1 / (QUICK_SYNTHETIC.lr * steps * tau), rel=1e-6)
        assert hparams["sharpness"] == QUICK_SYNTHETIC.sharpness
        logged.setdefault(n, {})[tau] = scalars["hp/val_loss"]
    assert sorted(logged) == QUICK_SYNTHETIC.sizes
    curves = []
    for n in QUICK_SYNTHETIC.sizes:
        rows = summary["curves"][str(n)]
        assert [(tau, values) for tau, values in rows] == [
            (tau, [pytest.approx(logged[n][tau], rel=1e-6)]) for tau in sorted(QUICK_SYNTHETIC.tau_epochs)
        ]
        curves.append([values for _, values in rows])
    fit = fit_scaling(QUICK_SYNTHETIC.sizes, sorted(QUICK_SYNTHETIC.tau_epochs), curves, mode="min")
    assert summary["exponent"] == pytest.approx(fit.exponent, abs=1e-9)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["--task", "synthetic", "--axis", "width"],
            "--task synthetic --axis width: the synthetic task has --axis dataset-size and --axis batch-size only.",
        ),
        (
            ["--task", "synthetic", "--label-noise", "0.1"],
            "--label-noise do not apply to `--task synthetic` (its labels are noisy by construction).",
        ),
        (["--task", "synthetic", "--sizes", "128"], "--sizes 128: give at least two dataset sizes to compare."),
    ],
)
def test_rejects_what_it_cannot_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    assert main(["demo", *argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"lightning-tau demo: error: {expected}"
    assert not list(tmp_path.iterdir())
