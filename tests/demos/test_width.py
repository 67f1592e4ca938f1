"""``lightning-tau demo --axis width``: the finder's width axis on the digits μP MLP, real mup, Optuna and Lightning.

What must hold: every run steps with the weight decay the width axis claims at every optimizer step (read by a torch
step post-hook: the hidden matrices ``s λ_base`` at ``η_base / s``, the input matrix ``λ_base``); ``summary.json``'s
exponent, interval (or the reason there is none), per-seed grid optima, paired interior tests and verdict are the
stats module's on the summary's own curves, and its grid optima follow from the curves written out here; and the
curves are the runs the finder logged to TensorBoard.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")
pytest.importorskip("mup")

import lightning.pytorch as pl  # noqa: E402
import torch  # noqa: E402
from demos import check_width_summary
from lightning.pytorch.callbacks import Callback  # noqa: E402

from lightning_tau import TimescaleCallback  # noqa: E402
from lightning_tau.cli import main  # noqa: E402
from lightning_tau.demos.width import MuDigitsMLP, WidthConfig, run_width_demo  # noqa: E402

# one short epoch per run: enough for the optimizer to take steps, cheap on two shared cores
TINY = WidthConfig(widths=[8, 32], weight_decays=[0.5, 2.0, 8.0], seeds=[0], epochs=1, train_size=128, batch_size=32)

# the CLI sweep the summary tests read: 2 widths (s = 1, 4) x 3 λ_base x 2 seeds, one epoch of 6 steps per run
SWEEP_ARGS = ["--widths", "8", "32", "--weight-decays", "4", "16", "64", "--seeds", "0", "1"]
SWEEP_ARGS += ["--epochs", "1", "--batch-size", "256", "--lr-base", "0.003"]


class _EveryStep(Callback):
    """A torch step post-hook on every trial: per (width, λ_base), each group kind's (weight_decay, initial_lr)."""

    def __init__(self, lr_base: float) -> None:
        self.lr_base = lr_base
        self.seen: dict[tuple[int, float], dict[str, set[tuple[float, float]]]] = {}
        self.steps: dict[tuple[int, float], int] = defaultdict(int)

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        tau = next(c for c in trainer.callbacks if isinstance(c, TimescaleCallback)).tau_epoch
        lam = 1.0 / (self.lr_base * trainer.num_training_batches * tau)
        key = (pl_module.width, round(lam, 9))
        seen = self.seen.setdefault(key, defaultdict(set))
        kinds = {id(pl_module.body[0].weight): "input"}
        kinds |= {id(m.weight): "hidden" for m in list(pl_module.body)[3:] if isinstance(m, torch.nn.Linear)}

        def hook(opt: Any, args: Any, kwargs: Any) -> None:
            self.steps[key] += 1
            for group in opt.param_groups:
                for p in group["params"]:
                    if id(p) in kinds:
                        seen[kinds[id(p)]].add((float(group["weight_decay"]), float(group["initial_lr"])))

        trainer.optimizers[0].register_step_post_hook(hook)


@pytest.mark.slow
def test_every_run_steps_with_width_axis_weight_decay(tmp_path: Path) -> None:
    every = _EveryStep(TINY.lr)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.filterwarnings("ignore", message=r".*(does not have many workers|less than one)")
        run_width_demo(TINY, tmp_path, plot=False, progress=False, callbacks=[every])
    # the configured grid, and any point the finder's grid extension added at every width
    assert {(w, lam) for w in TINY.widths for lam in TINY.weight_decays} <= set(every.seen)
    assert len({lam for _, lam in every.seen}) * len(TINY.widths) == len(every.seen)
    for (width, lam), seen in every.seen.items():
        s = width / TINY.base_width
        assert every.steps[(width, lam)] == 4  # 128 digits / 32 per batch, one epoch, one seed
        # one (weight_decay, lr) pair over every step of the run, per kind of matrix
        assert len(seen["hidden"]) == 1 and next(iter(seen["hidden"])) == pytest.approx((s * lam, TINY.lr / s))
        assert len(seen["input"]) == 1 and next(iter(seen["input"])) == pytest.approx((lam, TINY.lr))


@pytest.fixture(scope="module")
def width_sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("tau_runs")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["demo", "--axis", "width", *SWEEP_ARGS, "--out", str(out), "--no-progress"])
    assert code == 0
    return out / "sweep_0", buffer.getvalue()


@pytest.mark.slow
def test_summary_stats_of_own_curves_and_logged_runs(width_sweep: tuple[Path, str]) -> None:
    sweep, printed = width_sweep
    summary = check_width_summary(sweep, printed, [8, 32], [4.0, 16.0, 64.0], [0, 1])
    assert summary["lr_base"] == 0.003 and summary["metric"] == "val/loss"
    assert f"tensorboard --logdir {sweep / 'tb'}" in printed


@pytest.mark.slow
def test_draws_figure(width_sweep: tuple[Path, str]) -> None:
    sweep, printed = width_sweep
    png, svg = sweep / "width_sweep.png", sweep / "width_sweep.svg"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in svg.read_bytes()[:1000]
    assert f"Figure: {png}" in printed and f"Figure: {svg}" in printed


def test_rejects_bad_axis(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--axis", "depth", "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "argument --axis: invalid choice: 'depth' (choose from" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--widths", "32", "128"], "--widths apply to `--axis width` only (got --axis dataset-size)"),
        (["--weight-decays", "1", "2", "4"], "--weight-decays apply to `--axis width` only"),
        (["--axis", "width", "--sizes", "100"], "--sizes apply to `--axis dataset-size` only"),
        (["--axis", "width", "--lr", "0.01"], "for `--axis width` use --widths, --weight-decays and --lr-base"),
        (["--axis", "width", "--widths", "32"], "--widths 32: give at least two widths to compare"),
        (["--axis", "width", "--weight-decays", "1", "2"], "--weight-decays 1 2: give at least three λ_base values"),
        (["--axis", "width", "--depth", "1"], "--depth 1: the width demo needs depth >= 2"),
    ],
)
def test_rejects_options_of_other_axis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    assert main(["demo", "--out", str(tmp_path), *argv]) == 2
    assert expected in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        # was "`MuDigitsMLP(depth=1)` has no hidden width x width matrix, ...: use depth >= 2": now _checks' form
        ({"depth": 1}, r"^`MuDigitsMLP\(depth=1\)` is not valid: use depth >= 2: .* no hidden width x width matrix"),
        ({"weight_decay": 0.0}, r"^`MuDigitsMLP\(weight_decay=0\.0\)` is not valid: use a positive value\.$"),
        ({"width": 0}, r"^`MuDigitsMLP\(width=0\)` is not valid: use a positive integer\.$"),
        ({"lr": float("nan")}, r"^`MuDigitsMLP\(lr=nan\)` is not valid: use a positive learning rate\.$"),
        ({"schedule": "step"}, r"^`MuDigitsMLP\(schedule='step'\)` is not supported\. Use 'constant' or 'cosine'\.$"),
        ({"decay_input": "no"}, r"^`MuDigitsMLP\(decay_input='no'\)` is not valid: use True or False\.$"),
        ({"other_lr": -1.0}, r"^`MuDigitsMLP\(other_lr=-1\.0\)` is not valid: use a positive learning rate, or None"),
    ],
)
def test_model_rejects_bad_arguments(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        MuDigitsMLP(**kwargs)


def test_config_model_has_no_fixed_arm() -> None:
    with pytest.raises(ValueError, match=r"^`WidthConfig.model\(arm='fixed'\)` is not supported\. The width demo has"):
        WidthConfig().model(64, arm="fixed")
