"""The finder's grid that leaves its edges, through real fits and real Optuna: an optimum on the grid's edge is
followed round by round until it is inside, a published rule's point off the grid is trained at every axis point, and
every point added goes into the same studies, so a rerun trains nothing. (Which points a round adds, and why:
``tests/tuner/analysis/test_grid_extension.py``; the seeds="auto" stop where only the shape part is undetermined:
``tests/tuner/test_axis_runner.py``.)"""

from __future__ import annotations

import dataclasses
import functools
import json
import pickle
from pathlib import Path

import pytest
from finder_procs import run_worker_here
from finder_study import TRUE_TAU, CurveModel, curve_loaders, fit_finder, make_finder

from lightning_tau.tuner.analysis.grid_extension import AddedPoint

GIVEN = (16.0, 32.0, 64.0)  # CurveModel's loss is lowest at tau_epoch 6: below this grid


@pytest.mark.slow
def test_edge_optimum_extends_grid_until_it_interior_and_rerun_trains_nothing(tmp_path: Path) -> None:
    finder = make_finder(tmp_path, tau_epochs=GIVEN)
    result = fit_finder(finder)
    # 16 was the best, then 8: a step down (the grid's x2) each round, until 8 has a worse point on each side
    assert result.grid_added == (AddedPoint(8.0, "edge at N=32", 0), AddedPoint(4.0, "edge at N=32", 1))
    assert [p.tau_epoch for p in result.curve] == [4.0, 8.0, 16.0, 32.0, 64.0]
    assert not result.at_edge and result.grid_tau_epoch == 8.0 and 4.0 < result.tau_epoch < 8.0
    assert finder.trained_runs == 5 and finder.reused_runs == 0 and finder.total_runs == 5
    assert finder.tau_epochs == finder.settings.base_tau_epochs == GIVEN  # the grid as given: the fit added to a copy
    assert "Grid extended (points added to the grid given, in the order trained): tau_epoch 8 (edge at N=32), 4" in (
        result.table()
    )
    data = json.loads(result.save_json(tmp_path / "result.json").read_text())
    assert data["grid_added"] == [
        {"tau_epoch": 8.0, "reason": "edge at N=32", "round": 0},
        {"tau_epoch": 4.0, "reason": "edge at N=32", "round": 1},
    ]

    again = make_finder(tmp_path, tau_epochs=GIVEN)
    rerun = fit_finder(again)
    assert again.trained_runs == 0 and again.reused_runs == 5
    assert again.study is not None and finder.study is not None
    assert again.study.study.study_name == finder.study.study.study_name  # the same study: keyed by the grid given
    assert rerun.grid_added == result.grid_added and rerun.tau_epoch == result.tau_epoch

    # without the extension the same study answers from the grid given: at its edge, as before
    given = make_finder(tmp_path, tau_epochs=GIVEN, max_grid_extensions=0)
    edge = fit_finder(given)
    assert given.trained_runs == 0 and edge.at_edge and edge.grid_added == () and "Grid extended" not in edge.table()
    assert edge.verdict == (
        "the best tau_epoch is the grid's smallest (16), so the best may lie below it: widen the grid"
    )


@pytest.mark.slow
def test_extension_stops_at_limit_and_at_two_optimizer_steps(tmp_path: Path) -> None:
    # one step allowed: 8 is added, still the edge, and nothing more
    one = fit_finder(make_finder(tmp_path / "one", tau_epochs=GIVEN, max_grid_extensions=1))
    assert [p.tau_epoch for p in one.grid_added] == [8.0] and one.at_edge
    # the loss upside down: lowest far from 6, so always at the bottom of (2, 4, 8); the step down to 1 is 2 optimizer
    # steps of the 32-sample subset's 2-step epoch, the next (0.5) would be 1, which the callback cannot set
    finder = make_finder(tmp_path / "low", tau_epochs=(2.0, 4.0, 8.0))
    low = fit_finder(finder, functools.partial(CurveModel, sign=-1.0))
    assert [p.tau_epoch for p in low.grid_added] == [1.0] and low.grid_tau_epoch == 1.0 and low.at_edge
    assert finder.trained_runs == 4


@pytest.mark.slow
def test_rule_off_grid_trained_at_every_axis_point(tmp_path: Path) -> None:
    axis = {"fraction": None, "axis": "dataset_size", "fractions": (0.5, 1.0)}
    finder = make_finder(tmp_path, tau_epochs=(4.0, 8.0, 16.0), **axis)
    result = fit_finder(finder)
    # the best is 6 at N = 32 and 64; a fixed λ carries it to 3 at N=64, below the grid: one step down trains 2
    [fixed] = [r for r in result.rules if r.name == "fixed λ"]
    assert fixed.x_rule == pytest.approx(TRUE_TAU / 2, rel=0.05) and fixed.loss_cost is not None
    assert [(p.tau_epoch, p.reason.split(" at ")[0]) for p in result.grid_added] == [(2.0, "rule fixed λ")]
    assert all([p.tau_epoch for p in r.curve] == [2.0, 4.0, 8.0, 16.0] for r in result.results)
    assert finder.trained_runs == 2 * 4 and "Grid extended" in result.table()
    assert json.loads(json.dumps(result.to_json()))["grid_added"][0]["tau_epoch"] == 2.0


@pytest.mark.slow
def test_worker_sent_round_trains_added_points_into_same_study(tmp_path: Path) -> None:
    finder = make_finder(tmp_path, tau_epochs=GIVEN, workers=2)
    fit_finder(finder)  # (the grid is extended here; a worker process may take some of its trials)
    grown = dataclasses.replace(finder.settings, tau_epochs=(2.0, 4.0, 8.0, *GIVEN))  # a round the main one trains
    train, val = curve_loaders()
    payload = finder._worker_payload(CurveModel, train, val, grown)
    assert pickle.loads(payload)[4] == {"seeds": (0,), "tau_epochs": (2.0, 4.0, 8.0, 16.0, 32.0, 64.0)}
    run_worker_here(payload)  # in this process: a worker sent the round whose grid holds 2
    assert finder.study is not None
    trained = {t.user_attrs["tau_epoch"] for t in finder.study.study.trials if t.state.name == "COMPLETE"}
    assert trained == {2.0, 4.0, 8.0, 16.0, 32.0, 64.0}
    added = [t for t in finder.study.study.trials if t.user_attrs["tau_epoch"] == 2.0]
    assert [t.params for t in added] == [{"tau_epoch": 2.0, "seed": 0}]  # one distribution for every point
