"""``lightning-tau find --study NAME`` alone (:mod:`lightning_tau.cli.find_reopen`) reopening a batch-size sweep with
every option it was made with: ``--axis``, ``--batch-sizes``, ``--lr-scaling`` and ``--beta2`` (issue 40)."""

from __future__ import annotations

import shutil
from pathlib import Path

import optuna
import pytest

pytest.importorskip("jsonargparse")
yaml = pytest.importorskip("yaml")

from lightning_tau.cli import main  # noqa: E402

#: the planted batch model (a ``batch_size`` and an ``lr`` hparam), two batch sizes, one seed: 6 trials a sweep
SWEEP = ["--axis", "batch_size", "--batch-sizes", "16", "32", "--fraction", "1", "--tau-epochs", "2", "6", "18"]
SWEEP += ["--seeds", "0", "--monitor", "val_loss", "--max-grid-extensions", "0"]


def _config(folder: Path) -> Path:
    config = {
        "seed_everything": 0,
        "trainer": {"max_epochs": 1, "accelerator": "cpu", "devices": 1},
        "model": {"class_path": "axes_models.PlantedBatchModel"},
        "data": {"class_path": "axes_models.PlantedData"},
    }
    path = folder / "model.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _common(out: Path) -> list[str]:
    return ["--out", str(out), "--no-progress", "--no-plot"]


@pytest.fixture(scope="module")
def sqrt_both(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``--out`` of a sweep ``bs`` made with ``--lr-scaling sqrt --beta2 both`` (6 trials and the held round's 1)."""
    folder = tmp_path_factory.mktemp("reopen")
    out = folder / "out"
    argv = ["find", *SWEEP, "--lr-scaling", "sqrt", "--beta2", "both", "--config", str(_config(folder))]
    assert main([*argv, *_common(out), "--study", "bs"]) == 0
    return out


def _reopened(out: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[str, str]:
    """``find --study bs`` alone (and ``extra``) in ``out``: its "Reopening ..." line and all it printed; every
    trial must have been complete before it (nothing trained again)."""
    capsys.readouterr()
    assert main(["find", "--study", "bs", *extra, *_common(out)]) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "(7 of 7 trials were complete in the study before this command.)" in printed, printed
    return next(line for line in printed.splitlines() if line.startswith("Reopening study 'bs'")), printed


@pytest.mark.slow
def test_study_alone_takes_the_batch_axis(sqrt_both: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line, printed = _reopened(sqrt_both, capsys)
    assert "--axis" in line
    assert "--max-grid-extensions" in line  # the sweep's 0, not the default 3
    assert "Timescale finder, batch_size_lr_sqrt axis: 2 batch sizes (16, 32)" in printed


@pytest.mark.slow
def test_study_alone_takes_the_batch_sizes(sqrt_both: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line, printed = _reopened(sqrt_both, capsys, "--axis", "batch_size")
    assert "--batch-sizes" in line and "--axis," not in line  # --axis given: not taken
    assert "Study: bs_batch_size_lr_sqrt=16 (in " in printed and "Study: bs_batch_size_lr_sqrt=32 (in " in printed


@pytest.mark.slow
def test_study_alone_takes_the_lr_scaling(sqrt_both: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line, printed = _reopened(sqrt_both, capsys)
    assert "--lr-scaling" in line
    assert "lr x (B / 16)^0.5" in printed and "Study: bs_batch_size=" not in printed


@pytest.mark.slow
def test_study_alone_takes_beta2_both_from_its_held_round(
    sqrt_both: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line, printed = _reopened(sqrt_both, capsys)
    assert "--beta2" in line  # the points say "fixed": the held round's study says "both"
    assert "Study: bs_beta2=held_batch_size_lr_sqrt=32 (in " in printed
    assert any(line.startswith("β₂ at B=32, tau_epoch=") for line in printed.splitlines())


@pytest.mark.slow
def test_study_alone_takes_beta2_both_stopped_before_its_held_round(
    sqrt_both: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    shutil.copytree(sqrt_both, out)
    # the sweep as it was when stopped between its last point's trial and the held round: no held round's study
    backend = optuna.storages.journal.JournalFileBackend(str(out / "study.journal"))
    optuna.delete_study(study_name="bs_beta2=held_batch_size_lr_sqrt=32", storage=optuna.storages.JournalStorage(backend))
    capsys.readouterr()
    assert main(["find", "--study", "bs", *_common(out)]) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    line = next(line for line in printed.splitlines() if line.startswith("Reopening study 'bs'"))
    assert "--beta2" in line  # the points' settings say "fixed"; what the sweep asked says "both"
    assert "Study: bs_beta2=held_batch_size_lr_sqrt=32 (in " in printed  # the held round trained now
    assert any(line.startswith("β₂ at B=32, tau_epoch=") for line in printed.splitlines())


@pytest.mark.slow
def test_study_with_other_lr_scaling_is_a_usage_error(sqrt_both: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["find", "--study", "bs", "--lr-scaling", "linear", *_common(sqrt_both)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (
        f"lightning-tau find: error: argument --study: 'bs' in {sqrt_both / 'study.journal'} is a sweep at"
        " --lr-scaling sqrt (its studies bs_batch_size_lr_sqrt=...), not --lr-scaling linear: leave --lr-scaling out"
        " to reopen it, or pass another --study."
    )
    # another --beta2 than the sweep's: the study's own mismatch error, as for --seeds
    assert main(["find", "--study", "bs", "--beta2", "held", *_common(sqrt_both)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("lightning-tau find: error: argument --study:") and "axis.beta2 is 'fixed' there" in line


@pytest.mark.slow
def test_study_alone_takes_beta2_held_from_its_points(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    argv = ["find", *SWEEP, "--beta2", "held", "--config", str(_config(tmp_path)), *_common(out), "--study", "bs"]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["find", "--study", "bs", *_common(out)]) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    line = next(line for line in printed.splitlines() if line.startswith("Reopening study 'bs'"))
    assert "--beta2" in line and "--lr-scaling" not in line  # lr_scaling "none": the default, nothing to take
    assert "(6 of 6 trials were complete in the study before this command.)" in printed
    assert "β₂ held in samples" in printed
