"""``lightning_tau.tuner.pruning``: the Optuna pruner each name gives, the pruner as a study's settings hold it, and
the pruned seeds (the pruned sweeps themselves, which train, are in ``tests/tuner/test_finder_pruning.py``)."""

from __future__ import annotations

from typing import Any

import optuna
import pytest

from lightning_tau.tuner.pruning import make_pruner, pruned_sibling, pruner_setting


def _setting(name: Any, epochs: int) -> dict[str, Any]:
    return {k: v for k, v in pruner_setting(make_pruner(name, epochs)).items() if k != "class"}


@pytest.mark.parametrize(("epochs", "warmup"), [(40, 5), (16, 2), (15, 1), (8, 1), (7, 0), (1, 0)])
def test_median_waits_for_three_runs_and_first_eighth_of_epochs(epochs: int, warmup: int) -> None:
    pruner = make_pruner("median", epochs)
    assert type(pruner) is optuna.pruners.MedianPruner
    assert _setting("median", epochs) == {
        "_percentile": 50.0,
        "_n_startup_trials": 3,
        "_n_warmup_steps": warmup,
        "_interval_steps": 1,
        "_n_min_trials": 1,
    }


@pytest.mark.parametrize(("epochs", "low"), [(40, 5), (16, 2), (15, 1), (8, 1), (7, 1), (1, 1)])
def test_halving_and_hyperband_start_at_eighth_of_epochs_and_at_least_one(epochs: int, low: int) -> None:
    assert type(make_pruner("successive_halving", epochs)) is optuna.pruners.SuccessiveHalvingPruner
    assert _setting("successive_halving", epochs) == {
        "_min_resource": low,
        "_reduction_factor": 3,
        "_min_early_stopping_rate": 0,
        "_bootstrap_count": 0,
    }
    assert type(make_pruner("hyperband", epochs)) is optuna.pruners.HyperbandPruner
    setting = _setting("hyperband", epochs)
    assert (setting["_min_resource"], setting["_max_resource"], setting["_reduction_factor"]) == (low, epochs, 3)


@pytest.mark.parametrize("name", ["Median", "nop", "", None])
def test_unknown_pruner_name_names_known_ones(name: Any) -> None:
    with pytest.raises(ValueError) as info:
        make_pruner(name, 8)
    assert str(info.value) == (
        f"`make_pruner(name={name!r})` is not valid: use one of 'median', 'successive_halving', 'hyperband'."
    )


def test_setting_name_or_instances_class_and_attributes() -> None:
    assert pruner_setting(None) is None
    assert pruner_setting("median") == "median"
    assert pruner_setting(optuna.pruners.PercentilePruner(25.0, n_startup_trials=2, n_warmup_steps=float("inf"))) == {
        "class": "optuna.pruners._percentile.PercentilePruner",
        "_percentile": 25.0,
        "_n_startup_trials": 2,
        "_n_warmup_steps": "inf",  # JSON-ready
        "_interval_steps": 1,
        "_n_min_trials": 1,
    }

    class Mine(optuna.pruners.BasePruner):
        def __init__(self) -> None:
            self.levels = (1, 2)

        def prune(self, study: Any, trial: Any) -> bool:
            return False

    assert pruner_setting(Mine()) == {
        "class": f"{__name__}.test_setting_name_or_instances_class_and_attributes.<locals>.Mine",
        "levels": [1, 2],
    }


RUN = {"groups": [], "values": [1.0]}


def test_pruned_sibling_another_seeds_trained_run_at_same_tau() -> None:
    pruned = {**RUN, "pruned": {"after_epoch": 3}}
    records = {(4.0, 0): pruned, (4.0, 1): RUN, (8.0, 0): RUN}
    assert pruned_sibling(records, 4.0, 1) == (0, 3)
    assert pruned_sibling(records, 4.0, 2) == (0, 3)
    assert pruned_sibling(records, 4.0, 0) is None  # the pruned run itself is no sibling of its own
    assert pruned_sibling(records, 8.0, 1) is None  # another tau's run was not pruned
    assert pruned_sibling({}, 4.0, 1) is None


def test_pruned_sibling_needs_trained_record_and_lowest_seed_named() -> None:
    untrained = {"pruned": {"after_epoch": 2}}  # no "groups": not a trained run's record
    assert pruned_sibling({(4.0, 0): untrained}, 4.0, 1) is None
    records = {
        (4.0, 5): {**RUN, "pruned": {"after_epoch": 9.0}},
        (4.0, 2): {**RUN, "pruned": {"after_epoch": 7}},
        (2.0, 0): {**RUN, "pruned": {"after_epoch": 1}},
    }
    assert pruned_sibling(records, 4.0, 1) == (2, 7)  # in seed order, whatever the records' order
    assert pruned_sibling(records, 4.0, 2) == (5, 9)
    assert type(pruned_sibling(records, 4.0, 2)[1]) is int  # type: ignore[index]
