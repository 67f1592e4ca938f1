"""``tuner/collect.py``: the value a trial tells Optuna (what optuna-dashboard and a pruner see), the answer computed
from a grid's records (no run trains: the records are written here as a worker stores them) and stored on the study."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import optuna
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from lightning_tau.tuner.collect import finder_result, finite, last_value, run_value, store_answer, tell_value
from lightning_tau.tuner.study.grid_study import GridStudy
from finder_study import make_finder


def _record(*losses: float) -> dict:
    return {"metrics": [{"val/loss": loss, "epoch": i} for i, loss in enumerate(losses)]}


def test_diverged_run_tells_optuna_worst_value_of_study_direction() -> None:
    diverged = _record(0.9, math.nan)
    assert tell_value(diverged, "val/loss", "last", "min", minimize=True) == math.inf
    assert tell_value(diverged, "val/loss", "last", "max", minimize=False) == -math.inf
    assert tell_value(_record(math.inf), "val/loss", "best", "min", minimize=True) == math.inf


def test_finite_run_tells_reduced_metric() -> None:
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


def test_finder_result_builds_curve_pruned_points_and_full_runs_weight_decay(tmp_path: Path) -> None:
    finder, result, _ = _grid_answer(tmp_path)
    assert finder.settings.reduce == "last" and finder.settings.mode == "min"
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
    assert result.full_cost == 3 * 2 * finder.settings.epochs * 5 and result.cost == 4 * 4 + 2 + 4
    assert result.weight_decay["pg1"] == pytest.approx(1 / (1e-2 * 4.0 * 5))


def test_store_answer_puts_answer_on_study_and_it_reads_back(tmp_path: Path) -> None:
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
        "window": finder.settings.window,
        "pruner": finder.settings.pruner_setting,
        "max_grid_extensions": finder.settings.max_grid_extensions,
    }


def test_finder_result_takes_full_runs_steps_over_devices_and_accumulation_and_reduce(tmp_path: Path) -> None:
    trainer_kwargs = {"max_epochs": 2, "accelerator": "cpu", "devices": 1, "accumulate_grad_batches": 2}
    finder = make_finder(tmp_path, tau_epochs=(1.0, 4.0), seeds=(0,), reduce="best", trainer_kwargs=trainer_kwargs)
    records = {(1.0, 0): _run(1.0, 0, [0.5, 0.9]), (4.0, 0): _run(4.0, 0, [0.7, 0.6])}
    for record in records.values():
        record["world_size"] = 2
    full_train = DataLoader(TensorDataset(torch.zeros(80, 1)), batch_size=16)  # 5 batches, 3 per device, 2 steps
    result = finder_result(finder.settings, records, full_train, dataset_size=80, subset_size=40)
    assert [p.values for p in result.curve] == [[0.5], [0.6]]  # each run's best epoch
    assert (result.reduce, result.mode, result.epochs, result.fraction) == ("best", "min", 2, 0.5)
    assert result.steps_per_epoch == 2 and result.full_cost == 2 * 1 * 2 * 2
    assert (result.dataset_size, result.subset_size, result.batch_size) == (80, 40, 16)


def test_finder_result_keeps_curve_with_one_diverged_point(tmp_path: Path) -> None:
    finder = make_finder(tmp_path, tau_epochs=(1.0, 4.0), seeds=(0,))
    records = {(1.0, 0): _run(1.0, 0, [math.nan]), (4.0, 0): _run(4.0, 0, [0.5])}
    full_train = DataLoader(TensorDataset(torch.zeros(80, 1)), batch_size=16)
    result = finder_result(finder.settings, records, full_train, dataset_size=80, subset_size=40)
    assert math.isnan(result.curve[0].values[0]) and result.curve[1].values == [0.5]


def test_pruned_point_no_run_of_which_trained_has_no_weight_decay(tmp_path: Path) -> None:
    finder = make_finder(tmp_path, tau_epochs=(1.0, 4.0, 16.0), seeds=(0, 1))
    untrained = {"metrics": [], "steps": 0, "pruned": {"after_epoch": 0}}
    records = {(tau, seed): _run(tau, seed, [1 / tau]) for tau in (1.0, 4.0) for seed in (0, 1)}
    records |= {(16.0, 0): dict(untrained), (16.0, 1): _run(16.0, 1, [0.1], pruned_after=0)}
    records[(16.0, 1)]["groups"]["pg1"]["weight_decay"] = 0.5
    full_train = DataLoader(TensorDataset(torch.zeros(80, 1)), batch_size=16)
    [pruned] = finder_result(finder.settings, records, full_train, dataset_size=80, subset_size=40).pruned
    assert pruned.weight_decay == {"pg1": 0.5} and pruned.steps == [0, 2] and math.isnan(pruned.last_values[0])
    records[(16.0, 1)] = dict(untrained)
    [pruned] = finder_result(finder.settings, records, full_train, dataset_size=80, subset_size=40).pruned
    assert pruned.weight_decay == {} and pruned.pruned_after == [0, 0]


def _answer_error(tmp_path: Path, records: dict, **kwargs: Any) -> str:
    finder = make_finder(tmp_path, **{"tau_epochs": (1.0, 4.0), "seeds": (0,), **kwargs})
    full_train = DataLoader(TensorDataset(torch.zeros(80, 1)), batch_size=16)
    with pytest.raises(ValueError) as info:
        finder_result(finder.settings, records, full_train, dataset_size=80, subset_size=40)
    return str(info.value)


def test_finder_result_says_why_there_no_answer(tmp_path: Path) -> None:
    pruned = {(tau, 0): _run(tau, 0, [1.0], pruned_after=0) for tau in (1.0, 4.0)}
    assert _answer_error(tmp_path, pruned, pruner="median") == (
        "`TimescaleFinder(pruner='median')` pruned every tau_epoch of the grid [1.0, 4.0]: there is no curve to"
        " suggest from. Use a gentler pruner (e.g. more warm-up epochs or start-up trials) or pruner=None."
    )
    diverged = {(1.0, 0): _run(1.0, 0, [math.nan]), (4.0, 0): _run(4.0, 0, [0.5, math.inf])}
    assert _answer_error(tmp_path, diverged) == (
        "`TimescaleFinder(monitor='val_loss')`: every run diverged (its val_loss is NaN or infinite at every"
        " tau_epoch of [1.0, 4.0]), so there is no curve to suggest from. Lower the learning rate, or try larger"
        " tau_epochs (less weight decay)."
    )
    no_decay = {(tau, 0): _run(tau, 0, [1 / tau]) for tau in (1.0, 4.0)}
    for record in no_decay.values():
        record["groups"]["pg1"]["decays"] = False
    assert _answer_error(tmp_path, no_decay) == (
        "`TimescaleFinder`: the model has no AdamW param group with a positive weight decay, so there is no weight"
        " decay to tune. Give the groups that should decay a positive `weight_decay` in `configure_optimizers`"
        " (TimescaleCallback replaces the value)."
    )


def test_finder_result_names_run_never_validated(tmp_path: Path) -> None:
    records = {(1.0, 0): _run(1.0, 0, [0.5]), (4.0, 0): _run(4.0, 0, [])}
    assert _answer_error(tmp_path, records).startswith(
        "`TimescaleFinder`: the run tau_epoch=4, seed=0 never validated."
    )
    records = {(1.0, 3): _run(1.0, 3, [0.5]), (4.0, 3): _run(4.0, 3, [])}
    assert "the run tau_epoch=4, seed=3 never validated" in _answer_error(tmp_path, records, seeds=(3,))


def test_run_value_reduces_monitor_and_names_run_without_it() -> None:
    run = {"metrics": [{"val_loss": 0.5, "epoch": 0}, {"epoch": 1}, {"val_loss": 0.7, "epoch": 2}]}
    assert run_value(run, 4.0, 1, "val_loss", "last", "min") == 0.7
    assert run_value(run, 4.0, 1, "val_loss", "best", "min") == 0.5
    assert run_value(run, 4.0, 1, "val_loss", "best", "max") == 0.7
    with pytest.raises(ValueError) as info:
        run_value({"metrics": []}, 4.0, 1, "val_loss", "last", "min")
    assert str(info.value) == (
        "`TimescaleFinder`: the run tau_epoch=4, seed=1 never validated. Check `check_val_every_n_epoch` /"
        " `val_check_interval` in `trainer_kwargs`."
    )
    with pytest.raises(ValueError) as info:
        run_value({"metrics": [{"val_acc": 1, "epoch": 0}, {"loss": 1, "epoch": 1}]}, 0.5, 2, "val_loss", "last", "min")
    assert str(info.value) == (
        "`TimescaleFinder(monitor='val_loss')`: the run tau_epoch=0.5, seed=2 logged no such metric; it logged"
        " ['epoch', 'loss']. Pass one of those as `monitor`."
    )


def test_finite_keeps_finite_values_only() -> None:
    assert finite(1.5) == 1.5 and finite(-0.0) == 0.0
    assert finite(math.nan) is None and finite(math.inf) is None and finite(-math.inf) is None


class _Attrs:
    """Stands in for a GridStudy's ``.study``: its user attributes, the writes made, and a storage that may refuse."""

    def __init__(self, refuse: Exception | None = None) -> None:
        self.user_attrs: dict[str, Any] = {}
        self.writes: list[str] = []
        self.refuse = refuse

    def set_user_attr(self, key: str, value: Any) -> None:
        if self.refuse is not None:
            raise self.refuse
        self.writes.append(key)
        self.user_attrs[key] = value


def test_store_answer_writes_only_what_changed_counts_pruned_trials_and_says_it_cannot(tmp_path: Path) -> None:
    finder, result, _ = _grid_answer(tmp_path)
    settings = finder.settings
    result.pruned[0].pruned_after[1] = 1  # both seeds of tau_epoch=16 pruned
    study = SimpleNamespace(study=_Attrs())
    store_answer(study, result, settings, pytest.fail)  # type: ignore[arg-type]
    assert len(study.study.writes) == 8 and study.study.user_attrs["pruned_trials"] == 2
    study.study.writes.clear()
    store_answer(study, result, settings, pytest.fail)  # type: ignore[arg-type]
    assert study.study.writes == []  # the same answer again: nothing written
    said: list[str] = []
    store_answer(SimpleNamespace(study=_Attrs(PermissionError("read-only"))), result, settings, said.append)  # type: ignore[arg-type]
    assert said == ["could not store the answer on the study (PermissionError)."]
