"""The finder as a new user meets it (issue 21): the printed answer and its uncertainty, reruns that train nothing,
threads, one warning per fit, the answer on the study, and the range on simulated noisy curves."""

from __future__ import annotations

import dataclasses
import math
import os
import re
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import numpy as np
import optuna
import pytest
import torch
from finder_results import finder_result
from lightning.pytorch.callbacks import Callback
from torch.utils.data import DataLoader, TensorDataset

from lightning_tau.param_groups import build_param_groups
from lightning_tau.tuner.analysis.curve import optimum_range, smoothed_optimum
from lightning_tau.tuner.finder import TimescaleFinder
from lightning_tau.tuner.analysis.finder_result import CurvePoint, FinderResult
from lightning_tau.tuner.workers import cores

GRID = (1.0, 4.0, 16.0)


class Net(pl.LightningModule):
    """A small classifier logging ``val_loss``; ``decay_vectors=True`` decays its biases and norm too."""

    def __init__(self, hidden: int = 8, decay_vectors: bool = False) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(4, hidden), torch.nn.LayerNorm(hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 2)
        )

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        self.log("val_loss", torch.nn.functional.cross_entropy(self.net(x), y))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        if self.hparams["decay_vectors"]:
            return torch.optim.AdamW(self.parameters(), lr=1e-2, weight_decay=0.1)
        return torch.optim.AdamW(build_param_groups(self, weight_decay=0.1), lr=1e-2)


def _loaders() -> tuple[DataLoader, DataLoader]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(160, 4, generator=g)
    y = (x[:, 0] + 0.3 * x[:, 1] > 0).long()
    return DataLoader(TensorDataset(x[:120], y[:120]), batch_size=16, shuffle=True), DataLoader(
        TensorDataset(x[120:], y[120:]), batch_size=40
    )


def _finder(root: Path, **kwargs: Any) -> TimescaleFinder:
    settings: dict[str, Any] = dict(
        fraction=0.5,
        tau_epochs=GRID,
        seeds=(0, 1),
        trainer_kwargs={"max_epochs": 2, "accelerator": "cpu", "devices": 1},
        root_dir=root,
        progress=False,
    )
    settings.update(kwargs)
    return TimescaleFinder(**settings)


def _fit(finder: TimescaleFinder, model: Any) -> FinderResult:
    train, val = _loaders()
    return finder.fit(model, train_dataloaders=train, val_dataloaders=val)


@pytest.mark.slow
def test_rerun_with_new_unseeded_instance_trains_nothing_prints_answer_and_stores_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _finder(tmp_path)
    result = _fit(first, Net())  # unseeded: other initial weights than the rerun's
    printed = capsys.readouterr().out
    assert first.trained_runs == len(GRID) * 2
    for line in ("Suggested tau_epoch:", "Uncertainty: the 2 seeds cannot tell tau_epoch", "per seed"):
        assert line in printed
    assert printed.count("Suggested tau_epoch:") == 1

    again = _finder(tmp_path)
    rerun = _fit(again, Net())
    assert (again.trained_runs, again.reused_runs) == (0, len(GRID) * 2)
    assert rerun.tau_epoch == result.tau_epoch and rerun.tau_epoch_range == result.tau_epoch_range
    assert "Suggested tau_epoch:" in capsys.readouterr().out

    low, high = result.tau_epoch_range
    assert GRID[0] <= low <= result.tau_epoch <= high <= GRID[-1]
    # the answer on the study, for optuna-dashboard and anyone with the storage
    assert first.study is not None
    attrs = optuna.load_study(study_name=first.study.study.study_name, storage=first.study.storage).user_attrs
    assert attrs["suggested_tau_epoch"] == result.tau_epoch
    assert attrs["tau_epoch_range"] == [low, high]
    assert attrs["verdict"] == result.verdict
    assert [p["tau_epoch"] for p in attrs["curve"]] == list(GRID)
    assert attrs["curve"][1]["mean"] == pytest.approx(result.curve[1].mean)
    assert attrs["finder"] == {
        "monitor": "val_loss", "mode": "min", "reduce": "last", "window": 1, "pruner": None, "max_grid_extensions": 3
    }

    # verbose=False: nothing printed; another architecture: another study
    quiet = _finder(tmp_path, verbose=False)
    _fit(quiet, Net(hidden=4))
    assert quiet.trained_runs == len(GRID) * 2
    assert capsys.readouterr().out == ""


@pytest.mark.slow
def test_rerun_trains_nothing_says_nothing_of_capping_workers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _fit(_finder(tmp_path, seeds=(0,), trainer_kwargs={"max_epochs": 1, "accelerator": "cpu", "devices": 1}), Net())
    caplog.clear()
    again = _finder(tmp_path, seeds=(0,), trainer_kwargs={"max_epochs": 1, "accelerator": "cpu", "devices": 1})
    # set after construction: no workers' server is started for a rerun that trains nothing
    again.settings = dataclasses.replace(again.settings, workers=2)
    _fit(again, Net())
    assert (again.trained_runs, again.reused_runs) == (0, len(GRID))
    assert f"{len(GRID)} done before." in caplog.text  # the log was captured
    assert "capped" not in caplog.text and "workers" not in caplog.text, caplog.text


class _Threads(Callback):
    def __init__(self) -> None:
        self.seen: list[int] = []

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.seen.append(torch.get_num_threads())


@pytest.mark.parametrize(("setting", "expected"), [(None, 1), ("auto", "cores"), (3, 3)])
@pytest.mark.slow
def test_trials_run_on_threads_setting_and_warn_once_per_fit(tmp_path: Path, setting, expected) -> None:
    """One torch thread per process by default (benchmarks/bench_threads.py: all threads ran 5-30x slower on a busy
    machine), ``threads="auto"`` for cores // workers, a number as given; torch's own setting restored after."""
    threads = _Threads()
    before = torch.get_num_threads()
    torch.set_num_threads(2 * cores() + 1)
    try:
        finder = _finder(
            tmp_path,
            seeds=(0,),
            verbose=False,
            max_grid_extensions=0,  # the grid given: one trial per point of GRID
            trainer_kwargs={"max_epochs": 1, "accelerator": "cpu", "devices": 1, "callbacks": [threads]},
            **({} if setting is None else {"threads": setting}),
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _fit(finder, Net(decay_vectors=True))  # every trial's callback warns about the decaying biases
        assert torch.get_num_threads() == 2 * cores() + 1  # restored
    finally:
        torch.set_num_threads(before)
    assert threads.seen == [cores() if expected == "cores" else expected] * len(GRID)
    vectors = [w for w in caught if "1-D" in str(w.message) or "decay_vectors" in str(w.message)]
    assert len(vectors) == 1, [str(w.message) for w in vectors]


@pytest.mark.slow
def test_trial_warning_shows_once_per_fit_on_own_line_beside_bar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    finder = _finder(
        tmp_path, verbose=False, progress=True, trainer_kwargs={"max_epochs": 1, "accelerator": "cpu", "devices": 1}
    )

    def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))  # as Python shows them

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show
        _fit(finder, Net(decay_vectors=True))  # six trials, each warning of the decaying biases and norm
    printed = capsys.readouterr().err
    assert printed.count("1-D parameters") == 1, printed
    assert "tau finder" in printed  # the bar was drawn
    # the warning's line holds nothing of the bar: it was cleared before, and drawn again after
    start = re.split(r"[\r\n]", printed[: printed.index("1-D parameters")])[-1]
    assert "tau finder" not in start and "epoch" not in start, start


# --- the range, pure -------------------------------------------------------------------------------------------


def _noisy_run(rng: np.random.Generator, sigma: float, grid: list[float]) -> list[list[float]]:
    """Three seeds of a loss curve with its minimum at tau_epoch 10: a per-seed offset and per-run noise."""
    offsets = rng.normal(0, sigma, 3)
    return [
        [0.3 + 0.02 * (math.log(t) - math.log(10.0)) ** 2 + o + rng.normal(0, sigma) for o in offsets] for t in grid
    ]


def test_two_identical_noisy_runs_suggest_inside_each_other_s_ranges() -> None:
    grid = [2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0]
    rng = np.random.default_rng(1)
    inside = 0
    pairs = 20
    for _ in range(pairs):
        runs = [_noisy_run(rng, 0.01, grid) for _ in range(2)]
        taus = [smoothed_optimum(grid, [float(np.mean(v)) for v in run]).tau_epoch for run in runs]
        ranges = [optimum_range(grid, run, resamples=200) for run in runs]
        inside += ranges[0][0] <= taus[1] <= ranges[0][1] and ranges[1][0] <= taus[0] <= ranges[1][1]
    assert inside >= 0.8 * pairs


def test_range_grid_points_paired_test_cannot_tell_from_best_one() -> None:
    # hand-computed: 3 seeds, best grid point 4; per-seed differences to it, t = t_0.95(2 df) = 2.920:
    # at 2: [0.01, 0.02, 0.03], mean 0.02 > 2.920 x 0.01 / sqrt(3) = 0.0169: worse;
    # at 8: [0, 0.01, -0.005], mean 0.0017 < 2.920 x 0.0076 / sqrt(3) = 0.0129: as good; 1 and 16: worse by 1
    grid = [1.0, 2.0, 4.0, 8.0, 16.0]
    values = [[1.0] * 3, [0.01, 0.02, 0.03], [0.0] * 3, [0.0, 0.01, -0.005], [1.0] * 3]
    assert optimum_range(grid, values) == (4.0, 8.0)
    # each seed shifted by its own offset, the same curve: paired differences have no spread, so only the optimum
    shifted = [[(math.log(t) - math.log(4.0)) ** 2 + offset for offset in (0.0, 0.5, 1.0)] for t in grid]
    assert optimum_range(grid, shifted) == pytest.approx((4.0, 4.0))
    # one seed: the best grid point's neighbours
    assert optimum_range(grid, [[(math.log(t) - math.log(4.0)) ** 2] for t in grid]) == (2.0, 8.0)


def test_range_in_result_json_table_and_figure(tmp_path: Path) -> None:
    grid = [2.0, 4.0, 8.0, 16.0, 32.0]
    values = _noisy_run(np.random.default_rng(0), 0.01, grid)
    curve = [CurvePoint(t, v, [0, 1, 2], {"decay": 0.1 / t}, [10, 10, 10]) for t, v in zip(grid, values)]
    result = finder_result(curve, full_cost=1500)
    low, high = result.tau_epoch_range
    assert (low, high) == optimum_range(grid, values)
    assert result.to_json()["tau_epoch_range"] == [low, high] and result.to_json()["verdict"] == result.verdict
    assert f"tau_epoch {low:.3g} to {high:.3g}" in result.table()
    import matplotlib.pyplot as plt

    drawn: list[tuple[float, float]] = []
    axvspan = plt.Axes.axvspan
    try:  # see the band go onto the figure
        plt.Axes.axvspan = lambda self, a, b, **kw: drawn.append((a, b)) or axvspan(self, a, b, **kw)  # type: ignore[method-assign]
        result.plot(tmp_path / "finder.png")
    finally:
        plt.Axes.axvspan = axvspan  # type: ignore[method-assign]
    assert drawn == [(low, high)]


class PlaceholderNet(Net):
    """Like Lightning users write it: ``weight_decay`` a hparam (a placeholder the callback rewrites)."""

    def __init__(self, weight_decay: float = 0.01) -> None:
        super().__init__()
        self.save_hyperparameters()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(build_param_groups(self, weight_decay=self.hparams["weight_decay"]), lr=1e-2)


@pytest.mark.slow
def test_plot_of_finder_s_logs_reads_weight_decay_callback_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lightning_tau.cli import main
    from lightning_tau.diagnostics.sweep import find_optima, load_runs

    finder = _finder(tmp_path, seeds=(0,), verbose=False, trainer_kwargs={"max_epochs": 1, "accelerator": "cpu"})
    result = _fit(finder, PlaceholderNet())
    assert finder.study is not None
    logdir = tmp_path / "tb" / finder.study.study.study_name
    optima = find_optima(load_runs(logdir), metric="hp/val_loss")
    assert len(optima) == 1
    best = next(p for p in result.curve if p.tau_epoch == optima[0].tau_epoch)
    assert optima[0].weight_decay == pytest.approx(best.weight_decay["decay"])  # the callback's, not 0.01
    assert optima[0].weight_decay != pytest.approx(0.01)
    assert main(["plot", str(logdir), "--out", str(tmp_path / "fig")]) == 0
    assert f"{optima[0].weight_decay:.4g}"[:4] in capsys.readouterr().out


class _HoldFirstTrial(Callback):
    """In the main process only: hold its first trial until a worker process has completed one (observable in the
    study), so that the workers' trials finish while the main process's bar is up."""

    def __init__(self, journal: Path, study_name: str) -> None:
        self.pid, self.journal, self.study_name, self.held = os.getpid(), str(journal), study_name, False

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if os.getpid() != self.pid or self.held:
            return
        self.held = True
        storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(self.journal))
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            trials = optuna.load_study(study_name=self.study_name, storage=storage).get_trials(
                deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)
            )
            if any(t.user_attrs.get("worker", {}).get("pid") != self.pid for t in trials):
                return
            time.sleep(0.2)
        raise AssertionError("no worker completed a trial in 300 s")


@pytest.mark.slow
def test_progress_bar_counts_workers_trials_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hold = _HoldFirstTrial(tmp_path / "study.journal", "bar")
    finder = _finder(
        tmp_path,
        verbose=False,
        progress=True,
        workers=2,
        study_name="bar",
        trainer_kwargs={"max_epochs": 2, "accelerator": "cpu", "devices": 1, "callbacks": [hold]},
    )
    _fit(finder, Net)
    assert 0 < finder.trained_runs < len(GRID) * 2  # the worker trained some
    counts = re.findall(r"(\d+)/(\d+) \[", capsys.readouterr().err)
    assert counts and counts[-1] == (str(len(GRID) * 2 * 2),) * 2, counts[-3:]


class _RecordThreads(Callback):
    """Each trial, in whichever process trains it, appends ``pid threads`` to ``path`` (the worker's own
    ``torch.get_num_threads()``, not the main process's)."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        with open(self.path, "a") as out:
            out.write(f"{os.getpid()} {torch.get_num_threads()}\n")


@pytest.mark.slow
@pytest.mark.skipif(cores() < 2, reason="dividing the cores between 2 workers needs 2 cores")
def test_two_workers_each_train_on_their_share_of_cores(tmp_path: Path) -> None:
    record = tmp_path / "threads.txt"
    hold = _HoldFirstTrial(tmp_path / "study.journal", "threads")  # so that the worker process trains a trial
    before = torch.get_num_threads()
    torch.set_num_threads(2 * cores() + 1)  # more than the cores: each process gets cores // 2
    try:
        finder = _finder(
            tmp_path,
            seeds=(0,),
            verbose=False,
            workers=2,
            threads="auto",
            study_name="threads",
            max_grid_extensions=0,  # the grid given: one trial per point of GRID
            trainer_kwargs={
                "max_epochs": 1,
                "accelerator": "cpu",
                "devices": 1,
                "callbacks": [hold, _RecordThreads(record)],
            },
        )
        _fit(finder, Net)
        assert torch.get_num_threads() == 2 * cores() + 1  # restored
    finally:
        torch.set_num_threads(before)
    seen = [tuple(map(int, line.split())) for line in record.read_text().splitlines()]
    assert len(seen) == len(GRID)
    assert len({pid for pid, _ in seen}) == 2 and os.getpid() in {pid for pid, _ in seen}  # both processes trained
    assert [threads for _, threads in seen] == [cores() // 2] * len(GRID)
