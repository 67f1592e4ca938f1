"""``tuner/answer.py``: the value a trial tells Optuna (what optuna-dashboard and a pruner see)."""

from __future__ import annotations

import math

from lightning_tau.tuner.answer import last_value, tell_value


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
