"""``tuner/answer.py``: the value a trial tells Optuna (what optuna-dashboard and a pruner see)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import optuna
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from lightning_tau.tuner.answer import finder_result, last_value, store_answer, tell_value
from lightning_tau.tuner.study import GridStudy
from tests.helpers.finder_study import make_finder


def _record(*losses: float) -> dict:
    return {"metrics": [{"val/loss": loss, "epoch": i} for i, loss in enumerate(losses)]}


def test_a_diverged_run_tells_optuna_the_worst_value_of_the_study_direction() -> None:
    diverged = _record(0.9, math.nan)
    assert tell_value(diverged, "val/loss", "last", "min", minimize=True) == math.inf
    assert tell_value(diverged, "val/loss", "last", "max", minimize=False) == -math.inf
    assert tell_value(_record(math.inf), "val/loss", "best", "min", minimize=True) == math.inf


def test_a_finite_run_tells_its_reduced_metric() -> None:
    run = _record(0.9, 0.4, 0.6)
    assert tell_value(run, "val/loss", "last", "min", minimize=True) == 0.6
    assert tell_value(run, "val/loss", "best", "min", minimize=True) == 0.4
    assert tell_value(run, "val/loss", "best", "max", minimize=False) == 0.9
    assert last_value(run, "val/loss") == 0.6
    assert math.isnan(last_value({"metrics": []}, "val/loss"))


def _run(tau: float, seed: int, losses: list[float], *, pruned_after: int | None = None) -> dict[str, Any]:
    """A trial's record as a worker stores it: one decaying group at lr 0.01 and the weight decay tau set."""
    record: dict[str, Any] = {
        "groups": {
            "pg1": {"lr": 1e-2, "weight_decay": 1 / (1e-2 * tau * 2), "decays": True},
            "no_decay": {"lr": 1e-2, "weight_decay": 0.0, "decays": False},
        },
        "metrics": [{"val_loss": loss, "epoch": i} for i, loss in enumerate(losses)],
        "steps": 2 * len(losses),
        "world_size": 1,
        "global_batch_size": 16,
    }
    if pruned_after is not None:
        record["pruned"] = {"after_epoch": pruned_after}
    return record


def _grid_answer(tmp_path: Path) -> tuple[Any, Any, dict]:
    finder = make_finder(tmp_path, tau_epochs=(1.0, 4.0, 16.0), seeds=(0, 1))
    records = {
        (1.0, 0): _run(1.0, 0, [0.9, 0.8]),
        (1.0, 1): _run(1.0, 1, [0.9, 0.6]),
        (4.0, 0): _run(4.0, 0, [0.7, 0.5]),
        (4.0, 1): _run(4.0, 1, [0.6, 0.3]),
        (16.0, 0): _run(16.0, 0, [1.5], pruned_after=0),
        (16.0, 1): _run(16.0, 1, [1.4, 1.2]),
    }
    full_train = DataLoader(TensorDataset(torch.zeros(80, 1)), batch_size=16)  # 5 batches: M = 5 in the full run
    return finder, finder_result(finder.settings, records, full_train, dataset_size=80, subset_size=32), records


def test_finder_result_builds_the_curve_the_pruned_points_and_the_full_runs_weight_decay(tmp_path: Path) -> None:
    finder, result, _ = _grid_answer(tmp_path)
    assert finder.reduce == "last" and finder.mode == "min"
    assert [(p.tau_epoch, p.values, p.seeds, p.steps) for p in result.curve] == [
        (1.0, [0.8, 0.6], [0, 1], [4, 4]),
        (4.0, [0.5, 0.3], [0, 1], [4, 4]),
    ]
    assert result.curve[0].weight_decay == {"pg1": 1 / (1e-2 * 1.0 * 2)}  # only the decaying group
    [pruned] = result.pruned
    assert (pruned.tau_epoch, pruned.pruned_after, pruned.last_values, pruned.steps) == (
        16.0,
        [0, None],
        [1.5, 1.2],
        [2, 4],
    )
    assert pruned.weight_decay == {"pg1": 1 / (1e-2 * 16.0 * 2)}
    # the best mean (0.4) is at 4; the pruned 16 lies beyond it, so 4 is not at the edge and the range reaches 16
    assert result.tau_epoch == 4.0 and not result.at_edge and result.tau_epoch_range[1] == 16.0
    assert result.lr == {"pg1": 1e-2} and result.monitor == "val_loss" and result.batch_size == 16
    assert (result.dataset_size, result.subset_size, result.steps_per_epoch) == (80, 32, 5)
    assert result.full_cost == 3 * 2 * finder.epochs * 5 and result.cost == 4 * 4 + 2 + 4
    assert result.weight_decay["pg1"] == pytest.approx(1 / (1e-2 * 4.0 * 5))


def test_store_answer_puts_the_answer_on_the_study_and_it_reads_back(tmp_path: Path) -> None:
    finder, result, _ = _grid_answer(tmp_path)
    grid = [(tau, seed) for tau in finder.tau_epochs for seed in finder.seeds]
    study = GridStudy.open(tmp_path / "j.journal", tmp_path, "s", {"seeds": [0, 1]}, grid)
    said: list[str] = []
    store_answer(study, result, finder.settings, said.append)
    attrs = optuna.load_study(study_name="s", storage=study.storage).user_attrs
    assert said == []
    assert attrs["suggested_tau_epoch"] == 4.0 and attrs["tau_epoch_range"] == list(result.tau_epoch_range)
    assert attrs["verdict"] == result.verdict and attrs["weight_decay"] == pytest.approx({"pg1": 1 / (1e-2 * 4.0 * 5)})
    assert attrs["curve"] == [
        {"tau_epoch": 1.0, "mean": pytest.approx(0.7), "std": pytest.approx(result.curve[0].std)},
        {"tau_epoch": 4.0, "mean": pytest.approx(0.4), "std": pytest.approx(result.curve[1].std)},
    ]
    assert attrs["pruned_tau_epochs"] == [16.0] and attrs["pruned_trials"] == 1
    assert attrs["finder"] == {
        "monitor": "val_loss",
        "mode": "min",
        "reduce": "last",
        "window": finder.window,
        "pruner": finder.pruner_setting,
    }
