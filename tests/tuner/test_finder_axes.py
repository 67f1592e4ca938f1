"""The finder's width and dataset-size axes: planted exponents through real fits and real Optuna, a user's own μP
model with real mup on digits, the CLI and the Python API on one study, and every bad input before any training."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import pytest
import torch
from axes_models import (
    BATCH,
    BETA2_WEIGHT,
    LR,
    N,
    NotMupModel,
    PlantedAccumulatedModel,
    PlantedBatchModel,
    PlantedBeta2Model,
    PlantedData,
    PlantedSizeModel,
    PlantedWidthModel,
)

from lightning_tau import TimescaleCallback
from lightning_tau.errors import TimescaleError
from lightning_tau.tuner.finder import TimescaleFinder
from lightning_tau.tuner.analysis.scaling import MIN_SEEDS_FOR_INTERVAL, seed_stages, staged_level
from lightning_tau.tuner.analysis.verdicts import size_verdict, width_verdict

TRAINER = {"max_epochs": 1, "accelerator": "cpu", "devices": 1}
TAUS = (2.0, 4.0, 8.0, 16.0, 32.0)
SEEDS = tuple(range(max(3, MIN_SEEDS_FOR_INTERVAL)))
WIDTHS = (8, 16, 32)


def _width_finder(tmp_path: Path, **kwargs: Any) -> TimescaleFinder:
    settings: dict[str, Any] = dict(
        axis="width",
        widths=WIDTHS,
        tau_epochs=TAUS,
        seeds=SEEDS,
        fraction=1.0,
        trainer_kwargs=TRAINER,
        root_dir=tmp_path / "find",
        progress=False,
        verbose=False,
    )
    settings.update(kwargs)
    return TimescaleFinder(**settings)


@pytest.mark.slow
def test_width_axis_measures_planted_exponent_and_reuses_study(tmp_path: Path) -> None:
    finder = _width_finder(tmp_path)
    result = finder.fit(PlantedWidthModel, datamodule=PlantedData())  # best λ_base ∝ width^-1/2 (Fan et al.)
    assert finder.trained_runs == len(WIDTHS) * len(TAUS) * len(SEEDS) and finder.reused_runs == 0
    assert len(finder.studies) == len(WIDTHS) and finder.studies[0].study.study_name.endswith("_width=8")

    # the sweep is a λ_base sweep at a fixed lr_base: λ_base = 1 / (lr_base M tau_epoch), M = N / B, increasing
    assert result.xs == pytest.approx([1 / (LR * (N / BATCH) * t) for t in reversed(TAUS)])
    assert result.scales == [8.0, 16.0, 32.0] and result.values == list(WIDTHS)
    assert result.exponent == pytest.approx(-0.5, abs=0.15)
    assert result.exponent_ci is not None and result.exponent_ci[0] <= -0.5 <= result.exponent_ci[1]
    assert result.width_exponent == pytest.approx(1 + result.exponent)
    assert result.verdict == width_verdict(result.fit, result.rules, monitor=result.results[0].monitor)
    per_seed = result.fit.per_seed_grid_optima
    assert len(per_seed) == 3 and all(len(v) == len(SEEDS) for v in per_seed)
    # everything a FinderResult has, per width
    assert [len(r.curve) for r in result.results] == [len(TAUS)] * 3
    assert all(r.subset_size == N and r.dataset_size == N for r in result.results)
    assert result.cost == sum(r.cost for r in result.results) == 3 * len(TAUS) * len(SEEDS) * (N // BATCH)

    callback = result.callback(verbose=False)
    assert isinstance(callback, TimescaleCallback)
    assert callback.width_exponent == 1 + result.exponent_used  # a rule's where one holds, else the measured
    assert result.base_width_mult == 1.0  # the smallest width is μP's base: the callback's tau_epoch is the best there
    assert callback.tau_epoch == pytest.approx(result.results[0].tau_epoch)

    text = result.table()
    for line in ("width axis", "lambda_base", "width 32", "Exponent of best lambda_base on width", "Verdict:"):
        assert line in text, line
    assert "Full run: TimescaleCallback(tau_epoch=" in text and "Published rules at tolerance x1.25" in text
    data = json.loads(result.save_json(tmp_path / "axis.json").read_text())
    assert data["axis"] == "width" and data["exponent"] == pytest.approx(result.exponent)
    assert data["exponent_ci"] == pytest.approx(list(result.exponent_ci)) and data["verdict"] == result.verdict
    assert len(data["results"]) == 3 and len(data["results"][2]["curve"]) == len(TAUS)
    assert result.plot(tmp_path / "axis.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # the same settings on the same storage: nothing trained, the same answer
    again = _width_finder(tmp_path)
    same = again.fit(PlantedWidthModel, datamodule=PlantedData())
    assert again.trained_runs == 0 and again.reused_runs == finder.trained_runs
    assert same.exponent == result.exponent and same.exponent_ci == result.exponent_ci


@pytest.mark.slow
def test_dataset_size_axis_with_one_seed_has_no_interval_and_says_why(tmp_path: Path) -> None:
    finder = TimescaleFinder(
        axis="dataset_size",
        fractions=(0.25, 0.5, 1.0),
        tau_epochs=TAUS,
        seeds=(0,),
        trainer_kwargs=TRAINER,
        root_dir=tmp_path,
        progress=False,
        verbose=False,
    )
    result = finder.fit(functools.partial(PlantedSizeModel, exponent=-0.5), datamodule=PlantedData())
    assert not any(r.at_edge for r in result.results)  # only the seed count stands in the way
    assert result.exponent_ci is None
    assert result.ci_reason == "1 seed: an interval needs at least 2 (a spread across seeds)"
    assert result.exponent == pytest.approx(-0.5, abs=0.1)


@pytest.mark.slow
@pytest.mark.parametrize("planted", [0.0, -0.5])
def test_dataset_size_axis_reports_how_best_tau_epoch_moves_with_n(tmp_path: Path, planted: float) -> None:
    finder = TimescaleFinder(
        axis="dataset_size",
        fractions=(0.25, 0.5, 1.0),
        tau_epochs=TAUS,
        seeds=SEEDS,
        trainer_kwargs=TRAINER,
        root_dir=tmp_path,
        progress=False,
        verbose=False,
    )
    result = finder.fit(functools.partial(PlantedSizeModel, exponent=planted), datamodule=PlantedData())
    assert [r.fraction for r in result.results] == [0.25, 0.5, 1.0]
    assert result.scales == [16.0, 32.0, 64.0] and result.xs == list(TAUS)
    assert result.exponent == pytest.approx(planted, abs=0.1)
    assert result.width_exponent is None
    assert result.verdict == size_verdict(result.fit, result.rules, monitor=result.results[0].monitor)
    # enough seeds, and the planted optimum inside the grid at every N: the interval must exist
    assert not any(r.at_edge for r in result.results)
    assert result.exponent_ci is not None and result.ci_reason is None
    # (a seed's planted offset is the same at every N, so at exponent 0 the interval is a point, up to rounding)
    assert (result.exponent_ci[0] - 1e-9 <= 0 <= result.exponent_ci[1] + 1e-9) == (planted == 0.0)
    settings = result.callback_kwargs()  # the largest fraction's best, carried to the full N by the callback
    assert settings["tau_epoch"] == pytest.approx(result.results[-1].tau_epoch)
    assert settings["reference_dataset_size"] == result.results[-1].subset_size
    assert "dataset_size axis" in result.table() and "N=64" in result.table()
    assert result.full_cost == result.results[-1].full_cost


# --- a user's own μP model, written as a user would -----------------------------------------------------------


mup = pytest.importorskip("mup")
pytest.importorskip("sklearn")


class MyMuMLP(pl.LightningModule):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(64, width, bias=False),
            torch.nn.LayerNorm(width),
            torch.nn.ReLU(),
            torch.nn.Linear(width, width, bias=False),
            torch.nn.LayerNorm(width),
            torch.nn.ReLU(),
        )
        self.readout = mup.MuReadout(width, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.readout(self.body(x))

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.cross_entropy(self(x), y)

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        self.log("val_loss", torch.nn.functional.cross_entropy(self(x), y))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        matrices = [p for n, p in self.named_parameters() if p.ndim >= 2 and not n.startswith("readout")]
        others = [p for n, p in self.named_parameters() if p.ndim < 2 or n.startswith("readout")]
        return mup.MuAdamW(
            [{"params": matrices, "weight_decay": 0.01}, {"params": others, "weight_decay": 0.0}], lr=3e-3
        )


def make_model(width: int) -> MyMuMLP:
    model = MyMuMLP(width)
    mup.set_base_shapes(model, MyMuMLP(16), delta=MyMuMLP(32))
    return model


@pytest.mark.slow
def test_users_own_mup_model_gets_exponent_verdict_and_callback(tmp_path: Path) -> None:
    from lightning_tau.demos.digits import DigitsDataModule

    finder = TimescaleFinder(
        axis="width",
        widths=(16, 32, 64),
        tau_epochs=(1.0, 4.0, 16.0),
        seeds=SEEDS,
        fraction=1.0,
        trainer_kwargs={"max_epochs": 3, "accelerator": "cpu", "devices": 1},
        root_dir=tmp_path,
        progress=False,
        verbose=False,
    )
    result = finder.fit(make_model, datamodule=DigitsDataModule(train_size=256, batch_size=64))
    assert math.isfinite(result.exponent) and result.verdict
    # the interval exists unless a width's best is at the grid's edge (enough seeds, the same count at every width)
    edge = [r.at_edge for r in result.results]
    assert (result.exponent_ci is None) == any(edge) == (result.ci_reason is not None)
    if any(edge):
        width = result.scales[edge.index(True)]
        assert result.ci_reason == (
            f"the best x is at the grid's edge at scale {width:g}, so the exponent is capped by the grid: widen it"
        )
    # MuAdamW gives the hidden matrix lr / s and the callback weight decay s λ_base: λ_base is the same grid everywhere
    assert result.xs == pytest.approx([1 / (3e-3 * 4 * t) for t in (16.0, 4.0, 1.0)])
    callback = result.callback(verbose=False)
    assert callback.width_exponent == 1 + result.exponent_used
    assert result.base_width_mult == 1.0  # width 16 is the μP base: the callback's tau_epoch is the best there
    assert callback.tau_epoch == pytest.approx(result.results[0].tau_epoch)


# --- bad input: one line, before any training -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"axis": "depth"}, r"`TimescaleFinder\(axis='depth'\)` is not supported"),
        ({"axis": "width"}, r"`TimescaleFinder\(axis='width'\)` needs `widths`"),
        ({"axis": "width", "widths": (64,)}, r"`TimescaleFinder\(widths=\(64,\)\)` is not valid: give at least 2"),
        ({"axis": "width", "widths": (128, 64)}, r"widths=\[128, 64\]\)` is not valid: 64 follows 128"),
        ({"axis": "width", "widths": (64, 64)}, r"widths=\[64, 64\]\)` is not valid: 64 follows 64"),
        ({"axis": "width", "widths": (0, 64)}, r"widths=\[0, 64\]\)` is not valid: 0 is not a positive integer"),
        ({"axis": "width", "widths": (16.5, 64)}, r"16.5 is not a positive integer"),
        ({"axis": "width", "widths": "64"}, r"`TimescaleFinder\(widths='64'\)` is not valid"),
        ({"widths": (64, 128)}, r"`TimescaleFinder\(widths=\(64, 128\)\)` is only used with axis='width'"),
        ({"axis": "width", "widths": (8, 16), "fractions": (0.1, 0.5)}, r"only used with axis='dataset_size'"),
        ({"axis": "dataset_size"}, r"`TimescaleFinder\(axis='dataset_size'\)` needs `fractions`"),
        ({"axis": "dataset_size", "fractions": (0.5, 0.25)}, r"0.25 follows 0.5"),
        ({"axis": "dataset_size", "fractions": (0.1, 1.5)}, r"1.5 is not a number in \(0, 1\]"),
        ({"axis": "dataset_size", "fractions": (0.5,)}, r"give at least 2 increasing fractions"),
        ({"axis": "dataset_size", "fractions": (0.1, 0.5), "fraction": 0.5}, r"`TimescaleFinder\(fraction=0.5\)` is"),
        ({"axis": "width", "widths": (8, 16), "level": 1.5}, r"`TimescaleFinder\(level=1.5\)` is not valid"),
        (
            {"axis": "width", "widths": (8, 16), "tolerance": 1.0},
            r"`TimescaleFinder\(tolerance=1.0\)` is not valid: use a",
        ),
        ({"axis": "width", "widths": (8, 16), "tolerance": "x"}, r"`TimescaleFinder\(tolerance='x'\)` is not valid"),
        ({"tolerance": 1.25}, r"`TimescaleFinder\(tolerance=1.25\)` is only used with axis='width', 'dataset_size' or"),
        ({"seeds": "auto"}, r"`TimescaleFinder\(seeds='auto'\)` is only used with axis='width', 'dataset_size' or"),
        ({"axis": "width", "widths": (8, 16), "seeds": "some"}, r"`TimescaleFinder\(seeds='some'\)` is not valid"),
        ({"axis": "width", "widths": (8, 16), "max_seeds": 8}, r"`TimescaleFinder\(max_seeds=8\)` is only used with"),
        (
            {"axis": "width", "widths": (8, 16), "seeds": "auto", "max_seeds": 2},
            r"`TimescaleFinder\(max_seeds=2\)` is not valid: use an integer >= 3",
        ),
    ],
)
def test_bad_axis_arguments_one_line_errors(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match) as err:
        TimescaleFinder(trainer_kwargs=TRAINER, **kwargs)
    assert "\n" not in str(err.value)


def test_default_to_five_seeds_and_auto_starts_at_three() -> None:
    width = TimescaleFinder(axis="width", widths=(8, 16), trainer_kwargs=TRAINER)
    size = TimescaleFinder(axis="dataset_size", fractions=(0.5, 1.0), trainer_kwargs=TRAINER)
    one = TimescaleFinder(trainer_kwargs=TRAINER)
    assert width.seeds == size.seeds == (0, 1, 2, 3, 4) and one.seeds == (0, 1, 2)
    assert (width.settings.tolerance, size.settings.tolerance, one.settings.tolerance) == (1.25, 1.25, 1.25)
    auto = TimescaleFinder(axis="width", widths=(8, 16), seeds="auto", trainer_kwargs=TRAINER)
    assert (auto.seeds, auto.settings.auto_seeds, auto.settings.max_seeds) == ((0, 1, 2), True, 12)
    assert not width.settings.auto_seeds and width.staging is None


def _without_base_shapes(width: int) -> MyMuMLP:
    return MyMuMLP(width)


@pytest.mark.parametrize(
    ("model", "error", "match"),
    [
        (lambda width: PlantedWidthModel(), ValueError, r"`make_model` ignores its `width` argument"),
        (NotMupModel, ValueError, r"make_model\(32\) is not μP: every decaying weight has width multiplier s = 1"),
        (_without_base_shapes, ValueError, r"Did you forget to call `mup.set_base_shapes"),
        (lambda: PlantedWidthModel(), ValueError, r"make_model\(8\) raised TypeError"),
        (PlantedWidthModel(), TypeError, r"needs `make_model`, a callable that takes the width"),
        (lambda width: torch.nn.Linear(width, 2), TypeError, r"make_model\(8\) must return a LightningModule"),
    ],
)
def test_bad_width_models_one_line_errors_before_any_training(
    tmp_path: Path, model: Any, error: type[Exception], match: str
) -> None:
    finder = _width_finder(tmp_path)
    with pytest.raises(error, match=match) as err:
        finder.fit(model, datamodule=PlantedData())
    assert "\n" not in str(err.value)
    assert finder.trained_runs == 0 and not (tmp_path / "find" / "tb").exists()


# --- the command line -------------------------------------------------------------------------------------------


def _config(tmp_path: Path, model: str, init_args: dict[str, Any]) -> Path:
    yaml = pytest.importorskip("yaml")
    config = {
        "seed_everything": 0,
        "trainer": dict(TRAINER),
        "model": {"class_path": model, "init_args": init_args},
        "data": {"class_path": "axes_models.PlantedData"},
    }
    path = tmp_path / "model.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.slow
def test_cli_and_python_api_give_same_answer_for_same_study(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lightning_tau.cli import main

    pytest.importorskip("jsonargparse")
    config = _config(tmp_path, "axes_models.PlantedWidthModel", {"exponent": 0.0})  # Wang & Aitchison's rule
    out = tmp_path / "out"
    argv = ["find", "--axis", "width", "--widths", *map(str, WIDTHS), "--config", str(config), "--fraction", "1"]
    argv += ["--tau-epochs", *map(str, TAUS), "--seeds", *map(str, SEEDS), "--out", str(out), "--study", "shared"]
    assert main([*argv, "--no-progress", "--target-width", "256"]) == 0
    printed = capsys.readouterr().out
    data = json.loads((out / "shared" / "finder.json").read_text())  # in the study's folder
    assert data["axis"] == "width" and data["values"] == list(WIDTHS)
    assert data["exponent"] == pytest.approx(0.0, abs=0.15) and data["verdict"] in printed
    assert "Exponent of best lambda_base on width" in printed and (out / "shared" / "tau_finder.png").is_file()
    assert all(f"Study: shared_width={w} (in {out / 'study.journal'})" in printed for w in WIDTHS)  # what to reopen

    finder = _width_finder(tmp_path, storage=out / "study.journal", study_name="shared", root_dir=out, verbose=True)
    result = finder.fit(functools.partial(PlantedWidthModel, exponent=0.0), datamodule=PlantedData())
    assert finder.trained_runs == 0
    assert result.exponent == data["exponent"] and list(result.exponent_ci or []) == (data["exponent_ci"] or [])
    assert result.to_json() == data
    from lightning_tau.cli.find import target_line

    assert target_line(result.predict(256), "width") in printed.splitlines()  # --target-width: the prediction there


@pytest.mark.slow
def test_cli_study_name_alone_reopens_axis_sweep_with_axis_points_and_grid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lightning_tau.cli import main

    pytest.importorskip("jsonargparse")
    config = _config(tmp_path, "axes_models.PlantedWidthModel", {})
    out = tmp_path / "out"
    common = ["--out", str(out), "--no-progress", "--no-plot"]
    argv = ["find", "--axis", "width", "--widths", "8", "16", "--config", str(config), "--fraction", "1"]
    argv += ["--tau-epochs", "2", "8", "--seeds", "0", "--monitor", "val_loss", "--reduce", "best", "--study", "ws"]
    assert main([*argv, *common]) == 0
    first = json.loads((out / "ws" / "finder.json").read_text())
    capsys.readouterr()

    # the sweep's points are the studies ws_width=8 and ws_width=16: the name alone finds them and their settings
    assert main(["find", "--study", "ws", *common]) == 0
    printed = capsys.readouterr().out
    reopened = next(line for line in printed.splitlines() if line.startswith("Reopening study 'ws'"))
    for option in ("--axis", "--widths", "--tau-epochs", "--seeds", "--fraction", "--config", "--reduce"):
        assert option in reopened, option
    trials = sum(len(r["curve"]) for r in first["results"])  # 2 widths x 2 tau_epochs x 1 seed, and points added
    assert f"({trials} of {trials} trials were complete in the study before this command.)" in printed
    assert json.loads((out / "ws" / "finder.json").read_text()) == first

    # a setting given that the studies do not hold: a usage error naming it, as for a single study
    assert main(["find", "--study", "ws", "--seeds", "1", *common]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("lightning-tau find: error: argument --study:") and "seeds" in line


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--widths", "8", "16"], "argument --widths: 8 16 is only used with --axis width (the axis is fraction)"),
        (["--axis", "width"], "`TimescaleFinder(axis='width')` needs `widths`"),
        (["--axis", "width", "--widths", "16", "8"], "8 follows 16"),
        (["--fractions", "0.1", "0.5"], "argument --fractions: 0.1 0.5 is only used with --axis dataset_size"),
        (
            ["--axis", "dataset_size", "--fractions", "0.1", "0.5", "--fraction", "0.5"],
            "argument --fraction: 0.5 is not used with --axis dataset_size",
        ),
        (["--batch-sizes", "32", "64"], "argument --batch-sizes: 32 64 is only used with --axis batch_size (the axis"),
        (["--axis", "batch-size"], "`TimescaleFinder(axis='batch_size')` needs `batch_sizes`"),
        (["--axis", "batch_size", "--batch-sizes", "64", "32"], "argument --batch-sizes: `TimescaleFinder(batch_sizes"),
        (
            ["--axis", "width", "--widths", "8", "16", "--lr-scaling", "sqrt"],
            "argument --lr-scaling: `TimescaleFinder(lr_scaling='sqrt')` is only used with axis='batch_size'",
        ),
    ],
)
def test_cli_axis_usage_errors_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], match: str
) -> None:
    from lightning_tau.cli import main

    assert main(["find", *argv, "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert match in err and err.count("\n") == 1
    assert not (tmp_path / "o" / "tb").exists()


def test_cli_width_axis_needs_model_takes_width(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lightning_tau.cli import main

    pytest.importorskip("jsonargparse")
    config = _config(tmp_path, "axes_models.PlantedSizeModel", {})
    argv = ["find", "--axis", "width", "--widths", "8", "16", "--config", str(config), "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--axis width: the model of --config" in err and "has no `width` argument" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--seeds", "auto"], "argument --seeds: 'auto' is only used with --axis width, dataset_size or batch_size"),
        (["--axis", "width", "--widths", "8", "16", "--seeds", "auto", "3"], "argument --seeds: 'auto' stands alone"),
        (["--axis", "width", "--widths", "8", "16", "--max-seeds", "8"], "argument --max-seeds: 8 is only used with"),
        (
            ["--tolerance", "1.5"],
            "argument --tolerance: 1.5 is only used with --axis width, dataset_size or batch_size",
        ),
        (
            ["--axis", "width", "--widths", "8", "16", "--tolerance", "1"],
            "argument --tolerance: expected a factor above",
        ),
        (
            ["--axis", "width", "--widths", "8", "16", "--seeds", "auto", "--max-seeds", "2"],
            "argument --max-seeds: exp",
        ),
    ],
)
def test_cli_seed_and_tolerance_usage_errors_exit_2_in_flag_terms(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], match: str
) -> None:
    from lightning_tau.cli import main

    try:
        code = main(["find", *argv, "--out", str(tmp_path / "o"), "--no-progress"])
    except SystemExit as exit_info:  # argparse's own (a value its type refuses)
        code = exit_info.code
    assert code == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]  # argparse's own errors come after its usage lines
    assert last.startswith("lightning-tau find: error: ") and match in last
    assert not (tmp_path / "o" / "tb").exists()


def test_cli_max_grid_extensions_reaches_finder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lightning_tau.cli import main
    from lightning_tau.tuner.finder import TimescaleFinder

    seen = []

    def record(self: TimescaleFinder, *args: object, **kwargs: object) -> None:
        seen.append(self.settings.max_grid_extensions)
        raise ValueError("stop before training")

    monkeypatch.setattr(TimescaleFinder, "fit", record)
    common = ["find", "--epochs", "1", "--no-progress", "--out", str(tmp_path / "o")]
    assert main([*common, "--max-grid-extensions", "0"]) == 1
    assert main(common) == 1
    assert seen == [0, 3]


def test_cli_rejects_unknown_axis(capsys: pytest.CaptureFixture[str]) -> None:
    from lightning_tau.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["find", "--axis", "depth"])
    assert exit_info.value.code == 2 and "--axis: invalid choice: 'depth'" in capsys.readouterr().err


@pytest.mark.slow
def test_along_axis_process_trains_every_points_free_trials_before_it_waits_on_one_held_elsewhere(
    tmp_path: Path,
) -> None:
    """A process on several axis points first takes every point's free trials, then waits: a first point's trial
    running on another machine must not idle it while the second point's trials are free. Here that trial is held
    by a far worker that stops giving signs of life, so the process reclaims it after ``stale_after`` seconds; it
    must have trained the second point's trials before."""
    import time

    import optuna
    from finder_study import DROP, with_attrs
    from optuna.trial import TrialState

    from lightning_tau.tuner.study.grid_study import SETTINGS_ATTR

    kwargs: dict[str, Any] = dict(
        axis="dataset_size",
        fractions=(0.5, 1.0),
        tau_epochs=(2.0, 8.0),
        seeds=(0,),
        trainer_kwargs=TRAINER,
        max_grid_extensions=0,  # the grid given: the trials counted below
    )
    make = functools.partial(PlantedSizeModel, exponent=0.0)
    done = TimescaleFinder(root_dir=tmp_path / "done", progress=False, verbose=False, **kwargs)
    done.fit(make, datamodule=PlantedData())
    first, second = (s.study for s in done.studies)

    def journal(path: Path) -> optuna.storages.JournalStorage:
        return optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(path)))

    # the second point untrained; the first point's tau_epoch 2 running on a far machine, alive a moment ago
    (tmp_path / "copy").mkdir()
    copy = journal(tmp_path / "copy" / "study.journal")
    far = {"host": "far", "machine": "far/1", "pid": 4242}
    for source in (first, second):
        target = optuna.create_study(storage=copy, study_name=source.study_name)
        target.set_user_attr(SETTINGS_ATTR, source.user_attrs[SETTINGS_ATTR])
        for trial in source.trials if source is first else []:
            if trial.params["tau_epoch"] == 2.0:
                trial = with_attrs(trial, state=TrialState.RUNNING, record=DROP, worker=far, alive_at=time.time())
            target.add_trial(trial)
    stale_after = 10.0  # longer than the three free trials take
    finder = TimescaleFinder(
        root_dir=tmp_path / "copy", progress=False, verbose=False, stale_after=stale_after, **kwargs
    )
    result = finder.fit(make, datamodule=PlantedData())
    assert result is not None and finder.trained_runs == 3  # the second point's two, the reclaimed one
    second_done = [t.datetime_complete for t in optuna.load_study(study_name=second.study_name, storage=copy).trials]
    assert len(second_done) == 2 and None not in second_done
    reclaimed = [
        t
        for t in optuna.load_study(study_name=first.study_name, storage=copy).trials
        if t.params["tau_epoch"] == 2.0 and t.state == TrialState.COMPLETE
    ]
    assert len(reclaimed) == 1
    assert max(second_done) <= reclaimed[0].datetime_start  # the free trials first, then the wait


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"axis": "width", "widths": (128, 64)},
            "`TimescaleFinder(widths=[128, 64])` is not valid: 64 follows 128; give the widths increasing, each once,"
            " e.g. (64, 128, 256).",
        ),
        (
            {"axis": "dataset_size", "fractions": (0.5, 0.25)},
            "`TimescaleFinder(fractions=[0.5, 0.25])` is not valid: 0.25 follows 0.5; give the fractions increasing,"
            " each once, e.g. (0.1, 0.25, 0.5).",
        ),
    ],
)
def test_axis_points_out_of_order_refused_in_one_whole_message(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as err:
        TimescaleFinder(trainer_kwargs=TRAINER, **kwargs)
    assert str(err.value) == message


# --- seeds="auto": stages added to the same studies until every published rule is decided --------------------------


def _trials_per_study(root: Path) -> dict[str, int]:
    import optuna

    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(root / "study.journal")))
    return {
        name: len(optuna.load_study(study_name=name, storage=storage).trials)
        for name in optuna.get_all_study_names(storage)
    }


@pytest.mark.slow
def test_auto_seeds_stop_at_first_stage_decides_every_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the planted exponent 0 with a seed's offset the same at every N: the interval is a point at 0, so every rule is
    # decided (Wang & Aitchison holds, the others are excluded) at the first stage, 3 seeds
    finder = TimescaleFinder(
        axis="dataset_size",
        fractions=(0.5, 1.0),
        tau_epochs=TAUS,
        seeds="auto",
        max_seeds=5,
        trainer_kwargs=TRAINER,
        root_dir=tmp_path,
        progress=False,
    )
    result = finder.fit(functools.partial(PlantedSizeModel, exponent=0.0), datamodule=PlantedData())
    staging = finder.staging
    assert staging is not None and staging.stages == (3,) and staging.seeds == 3 and staging.decided
    assert staging.reason == "stopped at 3 seeds: every published rule decided"
    assert (
        finder.seeds == (0, 1, 2)  # what was asked for (the first stage); the seeds used: `result.staging.seeds`
        and result.fit.per_seed_grid_optima[0]
        and len(result.fit.per_seed_grid_optima[0]) == 3
    )
    assert list(_trials_per_study(tmp_path).values()) == [len(TAUS) * 3] * 2  # the 5-seed stage never started
    # the interval of each look is at the level for the planned looks (3, then 5), above the finder's 95%
    assert staging.level == result.fit.level == staged_level(0.95, len(seed_stages(5))) > 0.95
    assert "Seeds (seeds='auto'): stopped at 3 seeds: every published rule decided" in capsys.readouterr().out
    # the result carries it: a line of its table, and its JSON
    assert result.staging == staging and staging.sentence() in result.table().splitlines()
    assert result.to_json()["staging"]["reason"] == staging.reason and result.to_json()["staging"]["stages"] == [3]


@pytest.mark.slow
def test_auto_seeds_add_stages_to_same_studies_up_to_max_seeds(tmp_path: Path) -> None:
    # a width x1.01 of tolerance is narrower than any 5-seed interval: Fan et al. (the planted -1/2) stays
    # undetermined, so the finder looks at 3 seeds, adds 2 more to the same two studies, and stops at max_seeds
    finder = _width_finder(tmp_path, widths=(8, 32), seeds="auto", max_seeds=5, tolerance=1.01)
    settings = finder.settings
    result = finder.fit(PlantedWidthModel, datamodule=PlantedData())
    assert finder.settings is settings and settings == _width_finder(tmp_path, widths=(8, 32), seeds="auto",
                                                                      max_seeds=5, tolerance=1.01).settings
    staging = finder.staging
    assert staging is not None and staging.stages == (3, 5) and staging.seeds == 5 and not staging.decided
    assert "Fan et al." in staging.undetermined and staging.tolerance == 1.01
    assert staging.reason.startswith("reached max_seeds=5 with ") and staging.reason.endswith(" undetermined")
    assert all(len(v) == 5 for v in result.fit.per_seed_grid_optima)
    assert result.staging == staging and finder.seeds == (0, 1, 2)  # the seeds asked for stay; 5 were used
    # stage 2 added its seeds' trials to stage 1's studies: 2 studies of 5 tau_epochs x 5 seeds, each trained once
    trials = _trials_per_study(tmp_path / "find")
    assert len(trials) == 2 and list(trials.values()) == [len(TAUS) * 5] * 2
    assert finder.trained_runs == 2 * len(TAUS) * 5 and finder.reused_runs == 0
    assert result.tolerance == 1.01 and result.to_json()["tolerance"] == 1.01  # the rules were decided at it
    assert "Fan et al." in [r.name for r in result.rules if r.decision == "undetermined"]

    # the same studies at a tolerance wide enough for the 3-seed interval: decided at the first look, nothing trained
    wide = _width_finder(tmp_path, widths=(8, 32), seeds="auto", max_seeds=5, tolerance=10.0)
    again = wide.fit(PlantedWidthModel, datamodule=PlantedData())
    assert wide.staging is not None and wide.staging.stages == (3,) and wide.staging.decided
    assert wide.trained_runs == 0 and wide.reused_runs == 2 * len(TAUS) * 3
    assert all(len(v) == 3 for v in again.fit.per_seed_grid_optima)
    assert _trials_per_study(tmp_path / "find") == trials


@pytest.mark.slow
def test_worker_sent_stage_trains_seeds_into_same_studies(tmp_path: Path) -> None:
    from finder_procs import run_worker_here

    # what the main process sends a worker at the 5-seed stage, run here: the worker's finder is built with
    # seeds="auto" and told the stage's seeds, so it opens the main process's studies and trains all 5 seeds there
    finder = _width_finder(tmp_path, widths=(8, 32), seeds="auto", max_seeds=5, tolerance=1.01)
    stage = dataclasses.replace(finder.settings, seeds=(0, 1, 2, 3, 4))  # the round the main process trains now
    data = PlantedData()
    payload = finder._worker_payload(PlantedWidthModel, data.train_dataloader(), data.val_dataloader(), stage)
    run_worker_here(payload)
    assert list(_trials_per_study(tmp_path / "find").values()) == [len(TAUS) * 5] * 2

    # the main process finds both stages complete in those studies: it trains nothing
    main = _width_finder(tmp_path, widths=(8, 32), seeds="auto", max_seeds=5, tolerance=1.01)
    result = main.fit(PlantedWidthModel, datamodule=PlantedData())
    assert main.staging is not None and main.staging.stages == (3, 5) and main.trained_runs == 0
    assert main.reused_runs == 2 * len(TAUS) * 5 and all(len(v) == 5 for v in result.fit.per_seed_grid_optima)


@pytest.mark.slow
def test_cli_seeds_auto_says_why_it_stopped_and_study_name_alone_reopens_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lightning_tau.cli import main

    pytest.importorskip("jsonargparse")
    config = _config(tmp_path, "axes_models.PlantedWidthModel", {})
    out = tmp_path / "out"
    common = ["--out", str(out), "--no-progress", "--no-plot"]
    argv = ["find", "--axis", "width", "--widths", "8", "32", "--config", str(config), "--fraction", "1"]
    argv += ["--tau-epochs", *map(str, TAUS), "--seeds", "auto", "--max-seeds", "4", "--tolerance", "1.01"]
    assert main([*argv, "--monitor", "val_loss", "--study", "auto", *common]) == 0
    printed = capsys.readouterr().out
    assert "Seeds (seeds='auto'): reached max_seeds=4 with Fan et al. undetermined (looked at 3, 4 seeds" in printed
    first = json.loads((out / "auto" / "finder.json").read_text())
    assert all(len(seeds) == 4 for seeds in first["per_seed_grid_optima"])

    # the name alone: the axis, its points and seeds="auto" come from the studies; both stages are reused
    assert main(["find", "--study", "auto", "--max-seeds", "4", "--tolerance", "1.01", *common]) == 0
    printed = capsys.readouterr().out
    reopened = next(line for line in printed.splitlines() if line.startswith("Reopening study 'auto'"))
    assert "--seeds" in reopened and "--axis" in reopened
    total = 2 * len(TAUS) * 4
    assert f"({total} of {total} trials were complete in the study before this command.)" in printed
    assert json.loads((out / "auto" / "finder.json").read_text()) == first


@pytest.mark.slow
@pytest.mark.parametrize(
    ("model", "set_by", "beta2"),
    [
        (PlantedBatchModel, "the model's batch_size; β₂ held in samples (β₂^(B / 16))", "held"),
        (PlantedAccumulatedModel, "gradient accumulation", "fixed"),
    ],
)
def test_batch_axis_trains_each_global_batch_at_scaled_lr(
    tmp_path: Path, model: type, set_by: str, beta2: str
) -> None:
    finder = TimescaleFinder(
        axis="batch_size",
        batch_sizes=(BATCH, 2 * BATCH),
        lr_scaling="sqrt",
        beta2=beta2,
        tau_epochs=(2.0, 6.0, 18.0),
        seeds=(0,),
        fraction=1.0,
        trainer_kwargs=TRAINER,
        root_dir=tmp_path / "find",
        progress=False,
        verbose=False,
    )
    result = finder.fit(model, datamodule=PlantedData())  # best tau_epoch ∝ B^1/2, planted
    assert finder.trained_runs == 2 * 3 and finder.studies[1].study.study_name.endswith("_batch_size_lr_sqrt=32")
    for b, study in zip((BATCH, 2 * BATCH), finder.studies):
        for record in study.records().values():
            seen = record["metrics"][-1]
            assert record["global_batch_size"] == b  # what the callback read: the global batch, accumulation included
            assert seen["seen_batch"] * seen["accumulate"] == b
            assert seen["accumulate"] == (1 if model is PlantedBatchModel else b // BATCH)
            if model is PlantedBatchModel:
                assert seen["model_batch_size"] == b
            assert seen["lr_used"] == pytest.approx(LR * (b / BATCH) ** 0.5)  # lr ∝ √B from the smallest batch
            # AdamW's default β₂ = 0.999: held in samples, its window in steps shrinks as B grows
            assert seen["beta2_used"] == pytest.approx(0.999 ** (b / BATCH) if beta2 == "held" else 0.999, rel=1e-6)
            assert record["steps"] == N // b  # the same data for the same epoch: fewer steps at a larger batch
    assert result.axis == "batch_size_lr_sqrt" and result.scales == [16.0, 32.0]
    assert result.exponent == pytest.approx(0.5, abs=0.02)
    assert [(r.name, r.exponent) for r in result.rules] == [("constant tau_epoch", 0.0), ("fixed λ", 0.5)]
    kwargs = result.callback_kwargs()
    assert set(kwargs) == {"tau_epoch", "batch_exponent", "reference_batch_size"}
    assert kwargs["reference_batch_size"] == BATCH  # the smallest batch, where the lr is the user's
    assert kwargs["tau_epoch"] == pytest.approx(result.results[0].tau_epoch)
    callback = result.callback(verbose=False)  # the callback applies what was measured
    assert (callback.batch_exponent, callback.reference_batch_size) == (kwargs["batch_exponent"], BATCH)
    assert "Constant tau_epoch (" in result.verdict or "constant tau_epoch" in result.verdict
    assert result.batch_setting == set_by and f"the batch set by {result.batch_setting}" in result.table()
    assert result.predict(64).tau_epoch == pytest.approx(result.tau_epoch * 4 ** result.exponent_used)


def _beta2_finder(tmp_path: Path, beta2: str, **extra: Any) -> TimescaleFinder:
    return TimescaleFinder(
        axis="batch_size",
        batch_sizes=(BATCH, 2 * BATCH),
        beta2=beta2,
        tau_epochs=(2.0, 6.0, 18.0),
        seeds=(0, 1, 2),
        fraction=1.0,
        trainer_kwargs=TRAINER,
        root_dir=tmp_path / "find",
        progress=False,
        verbose=False,
        **extra,
    )


@pytest.mark.slow
def test_batch_axis_beta2_both_pairs_held_runs_with_fixed_at_largest_batch(tmp_path: Path) -> None:
    # val_loss = the planted tau_epoch parabola + BETA2_WEIGHT (1 - β₂) + the seed's own offset (spread 0.3):
    # holding β₂ in samples at B = 32 from 16 (0.999 -> 0.999^2) costs 100 (0.999 - 0.998001) = 0.0999 on every seed
    finder = _beta2_finder(tmp_path, "both")
    result = finder.fit(PlantedBeta2Model, datamodule=PlantedData())
    assert finder.trained_runs == 2 * 3 * 3 + 3 and finder.total_runs == 2 * 3 * 3 + 3  # the sweep, then 1 per seed
    sweep, held_study = finder.studies[:2], finder.studies[2]
    assert held_study.study.study_name.endswith("_beta2=held_batch_size=32") and finder.study is sweep[0]
    for study in sweep:  # the sweep: the optimizer's β₂ at every batch
        assert [r["metrics"][-1]["beta2_used"] for r in study.records().values()] == [pytest.approx(0.999)] * 9
    best = result.results[-1].grid_tau_epoch
    held = held_study.records()
    assert sorted(held) == [(best, 0), (best, 1), (best, 2)]  # the largest batch's best, every seed of the sweep
    for record in held.values():
        seen = record["metrics"][-1]
        assert record["global_batch_size"] == 2 * BATCH and seen["model_batch_size"] == 2 * BATCH
        assert seen["beta2_used"] == pytest.approx(0.999**2, rel=1e-6)  # β₂^(B / B_0), B / B_0 = 2
    cost = result.beta2_cost
    assert cost is not None and (cost.batch_size, cost.reference_batch_size, cost.tau_epoch) == (32, 16, best)
    assert cost.seeds == (0, 1, 2) and max(cost.fixed) - min(cost.fixed) > 0.05  # the seeds' offsets lie far apart
    expected = BETA2_WEIGHT * (0.999 - 0.999**2)
    assert cost.per_seed == pytest.approx((expected,) * 3, abs=1e-5)  # paired seed by seed: the offsets cancel
    assert cost.mean == pytest.approx(expected, abs=1e-5) and cost.better == "fixed"
    assert cost.ci is not None and cost.ci[1] - cost.ci[0] < 1e-4 and cost.level == 0.95
    assert cost.sentence() in result.table().splitlines()
    assert cost.sentence().endswith("Keeping β₂ fixed is better at B=32 (the interval lies above 0).")
    assert json.loads(json.dumps(result.to_json()))["beta2_cost"]["per_seed"] == list(cost.per_seed)

    # a rerun reuses every trial, the held round's too, and gives the same comparison
    again = _beta2_finder(tmp_path, "both")
    rerun = again.fit(PlantedBeta2Model, datamodule=PlantedData())
    assert again.trained_runs == 0 and again.reused_runs == 2 * 3 * 3 + 3 and rerun.beta2_cost == cost
    # beta2="fixed" trains the same sweep (the "both" sweep's callback only checks β₂): the same studies, reused
    fixed = _beta2_finder(tmp_path, "fixed")
    assert fixed.fit(PlantedBeta2Model, datamodule=PlantedData()).beta2_cost is None
    assert fixed.trained_runs == 0 and [s.study.study_name for s in fixed.studies] == [
        s.study.study_name for s in sweep
    ]


@pytest.mark.slow
def test_worker_sent_held_beta2_round_trains_it_for_main_process(tmp_path: Path) -> None:
    from lightning_tau.tuner.axis_runner import held_beta2_round
    from finder_procs import run_worker_here

    # what the main process sends a worker for the held round (the best tau_epoch at B = 32 is 6: the planted
    # 6 x 2^½ = 8.5 lies nearer 6 than 18 in log), run here: it trains the 3 held runs into the held study
    finder = _beta2_finder(tmp_path, "both")
    held = held_beta2_round(finder.settings, 6.0)
    data = PlantedData()
    payload = finder._worker_payload(PlantedBeta2Model, data.train_dataloader(), data.val_dataloader(), held)
    run_worker_here(payload)
    trials = _trials_per_study(tmp_path / "find")
    assert list(trials.values()) == [3] and next(iter(trials)).endswith("_beta2=held_batch_size=32")

    # the main process trains the sweep and finds the held round complete
    result = finder.fit(PlantedBeta2Model, datamodule=PlantedData())
    assert finder.trained_runs == 2 * 3 * 3 and finder.reused_runs == 3
    assert result.beta2_cost is not None and result.beta2_cost.tau_epoch == 6.0
    assert result.beta2_cost.per_seed == pytest.approx((BETA2_WEIGHT * (0.999 - 0.999**2),) * 3, abs=1e-5)


@pytest.mark.slow
def test_cli_beta2_both_prints_cost_and_writes_json_and_refuses_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lightning_tau.cli import main

    pytest.importorskip("jsonargparse")
    out = tmp_path / "out"
    argv = ["find", "--axis", "batch_size", "--batch-sizes", str(BATCH), str(2 * BATCH), "--beta2", "both"]
    argv += ["--fraction", "1", "--tau-epochs", "2", "6", "18", "--seeds", "0", "1", "2", "--monitor", "val_loss"]
    argv += ["--out", str(out), "--no-progress", "--no-plot", "--study", "b2"]
    config = _config(tmp_path, "axes_models.PlantedBeta2Model", {})
    assert main([*argv, "--config", str(config)]) == 0
    printed = capsys.readouterr().out
    line = next(line for line in printed.splitlines() if line.startswith("β₂ at B=32, tau_epoch=6 (val_loss, min;"))
    assert line.endswith("Keeping β₂ fixed is better at B=32 (the interval lies above 0).")
    assert "held in samples (β₂^2) +0.100 [+0.100, +0.100]" in line  # 100 (0.999 - 0.999^2) = 0.0999, paired
    assert "Study: b2_beta2=held_batch_size=32 (in " in printed
    data = json.loads((out / "b2" / "finder.json").read_text())
    assert data["beta2_cost"]["sentence"] == line and data["beta2_cost"]["seeds"] == [0, 1, 2]

    # a β₂ no batch of the sweep can hold: one line, a non-zero exit, nothing trained
    bad = _config(tmp_path, "axes_models.PlantedBeta2Model", {"beta2": 1e-200})
    assert main([*argv[:-2], "--study", "bad", "--config", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "lightning-tau find: error: `TimescaleFinder(beta2='both')`: the optimizer's β₂ = 1e-200 held in samples at"
        " the largest batch (2 times the smallest) is 0.0, which Adam cannot use"
    )
    assert err.count("\n") == 1 and not (out / "tb" / "bad_batch_size=16").exists()


class _TrainerOptimizerModel(PlantedBeta2Model):
    """Its optimizer needs the trainer (as a schedule over `estimated_stepping_batches` does): no β₂ to read before
    training, so the refusal comes from the first trial's train start; every step it trains is counted."""

    steps: list[int] = []

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        _TrainerOptimizerModel.steps.append(batch_idx)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        assert self.trainer.max_epochs is not None  # raises on a probe: no trainer attached
        return super().configure_optimizers()


@pytest.mark.slow
@pytest.mark.parametrize("read_before", [True, False])
@pytest.mark.parametrize("beta2", ["held", "both"])
def test_batch_axis_refuses_beta2_no_batch_can_hold_before_any_step(
    tmp_path: Path, beta2: str, read_before: bool
) -> None:
    # β₂ = 1e-200 is a β₂ Adam takes at B_0, but held at the largest batch (x2) it is 1e-400 = 0.0: refused before
    # the smallest batch (which "both" trains at the optimizer's β₂, "held" at β₂^1) trains a step
    model = PlantedBeta2Model if read_before else _TrainerOptimizerModel
    _TrainerOptimizerModel.steps = []
    finder = _beta2_finder(tmp_path, beta2)
    with pytest.raises(TimescaleError) as err:
        finder.fit(functools.partial(model, beta2=1e-200), datamodule=PlantedData())
    assert str(err.value) == (
        f"`TimescaleFinder(beta2={beta2!r})`: the optimizer's β₂ = 1e-200 held in samples at the largest batch (2"
        " times the smallest) is 0.0, which Adam cannot use (it must lie in (0, 1)): give the optimizer a β₂ nearer"
        " 1 (β₂^2 must stay above 0), a narrower batch_sizes range, or beta2='fixed'."
    )
    assert finder.trained_runs == 0 and _TrainerOptimizerModel.steps == []
    if read_before:  # read from configure_optimizers before any study opened
        assert finder.study is None and not (tmp_path / "find" / "tb").exists()
    else:  # the first trial's train start: it failed, and no trial of any study is complete
        assert finder.study is not None and all(not s.records() for s in finder.studies)


def test_batch_axis_refuses_accumulation_given_and_bad_lr_scaling_in_one_line() -> None:
    batch = {"axis": "batch_size", "batch_sizes": (16, 32)}
    for kwargs, match in [
        ({**batch, "lr_scaling": "cubic"}, "`TimescaleFinder(lr_scaling='cubic')` is not supported. Use 'none',"),
        ({"lr_scaling": "sqrt"}, "`TimescaleFinder(lr_scaling='sqrt')` is only used with axis='batch_size'"),
        ({"beta2": "held"}, "`TimescaleFinder(beta2='held')` is only used with axis='batch_size' (axis is 'fraction')"),
        ({"beta2": "both"}, "`TimescaleFinder(beta2='both')` is only used with axis='batch_size' (axis is 'fraction')"),
        ({**batch, "beta2": "half"}, "`TimescaleFinder(beta2='half')` is not supported. Use 'fixed', 'held' or"),
        (
            {**batch, "trainer_kwargs": {**TRAINER, "accumulate_grad_batches": 2}},
            "`TimescaleFinder(trainer_kwargs={'accumulate_grad_batches': 2})` is not used with axis='batch_size'",
        ),
    ]:
        with pytest.raises(ValueError) as err:
            TimescaleFinder(**{"trainer_kwargs": TRAINER, **kwargs})
        assert str(err.value).startswith(match) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("model", "settings", "match"),
    [
        (
            PlantedAccumulatedModel,
            {"batch_sizes": (16, 24)},
            "`TimescaleFinder(batch_sizes=[16, 24])`: 24 is not a whole multiple of the train loader's batch_size 16",
        ),
        (
            PlantedSizeModel,
            {"batch_sizes": (16, 32), "lr_scaling": "linear"},
            "`TimescaleFinder(lr_scaling='linear')` needs the model's learning rate as an `lr` or `learning_rate`",
        ),
    ],
)
def test_batch_axis_refuses_what_it_cannot_set_before_any_training(
    tmp_path: Path, model: type, settings: dict[str, Any], match: str
) -> None:
    finder = TimescaleFinder(
        axis="batch_size", seeds=(0,), trainer_kwargs=TRAINER, root_dir=tmp_path, progress=False, **settings
    )
    with pytest.raises(ValueError) as err:
        finder.fit(model, datamodule=PlantedData())
    assert str(err.value).startswith(match) and "\n" not in str(err.value)
    assert finder.trained_runs == 0 and not (tmp_path / "tb").exists()
