"""``lightning_tau.tuner.analysis.grid_extension``: which points a round adds to the grid, and why: a step at an edge at any
axis point, up to the limit, never under two optimizer steps nor above a plateau; whole steps that bring a rule's
``tau_epoch`` onto the grid; the midpoints around each optimum, once."""

from __future__ import annotations

import math
from typing import Any

import pytest

from lightning_tau.tuner.analysis.grid_extension import (
    MAX_RUNS,
    MIDPOINT_REASON,
    AddedPoint,
    ScaleCurve,
    grid_line,
    lowest_tau_epoch,
    plan_round,
)

BASE = (2.0, 4.0, 8.0, 16.0, 32.0)


def curve(name: str, best: float, grid: tuple[float, ...] = BASE, seeds: int = 3) -> ScaleCurve:
    """Seed ``s``: ``(log2 tau - log2 best)^2 + 0.01 s`` on ``grid``; its edge as the finder reads it."""
    values = [[(math.log2(t) - math.log2(best)) ** 2 + 0.01 * s for s in range(seeds)] for t in grid]
    means = [sum(v) / len(v) for v in values]
    i = means.index(min(means))
    edge = "bottom" if i == 0 else "top" if i == len(grid) - 1 else None
    return ScaleCurve(name, list(grid), values, grid[i], edge)  # type: ignore[arg-type]


def plan(scales: list[ScaleCurve], grid: tuple[float, ...] = BASE, **kwargs: Any) -> Any:
    settings: dict[str, Any] = dict(mode="min", epochs=10, lowest=0.1, max_extensions=3, at_round=0)
    settings.update(kwargs)
    return plan_round(BASE, grid, scales, **settings)


def test_edge_at_any_axis_point_adds_one_step_at_end() -> None:
    # the smallest N's best is the grid's smallest; the largest N's is inside
    bottom = plan([curve("N=250", 1.0), curve("N=1000", 8.0)])
    assert bottom.added == (AddedPoint(1.0, "edge at N=250", 0),) and bottom.held == ()
    # only the largest N's best is on the top edge (its loss still falling at 32, a 10-epoch run: no plateau)
    top = plan([curve("N=250", 8.0), curve("N=1000", 100.0)], at_round=2)
    assert top.added == (AddedPoint(64.0, "edge at N=1000", 2),)
    both = plan([curve("N=250", 1.0), curve("N=500", 1.5), curve("N=1000", 100.0)])
    assert both.added == (AddedPoint(1.0, "edge at N=250, N=500", 0), AddedPoint(64.0, "edge at N=1000", 0))
    assert plan([curve("N=250", 6.0), curve("N=1000", 10.0)]).added == ()  # interior everywhere: nothing


def test_step_given_grids_log_step_at_end() -> None:
    base = (1.0, 3.0, 9.0, 12.0)
    scale = ScaleCurve("N=64", list(base), [[3.0, 3.1], [2.0, 2.1], [1.0, 1.1], [0.5, 0.6]], 12.0, "top")
    assert [p.tau_epoch for p in plan_round(base, base, [scale], mode="min", epochs=100, lowest=0.1,
                                             max_extensions=3, at_round=0).added] == [16.0]
    low = ScaleCurve("N=64", list(base), [[0.5, 0.6], [1.0, 1.1], [2.0, 2.1], [3.0, 3.1]], 1.0, "bottom")
    assert [p.tau_epoch for p in plan_round(base, base, [low], mode="min", epochs=100, lowest=0.1, max_extensions=3,
                                             at_round=0).added] == [pytest.approx(1 / 3)]


def test_stops_at_max_grid_extensions_steps_per_end() -> None:
    grown = (0.5, 1.0, *BASE)  # two steps below the grid given already
    second = plan([curve("N=250", 0.1, grid=grown)], grid=grown)
    assert [p.tau_epoch for p in second.added] == [0.25]
    third = plan([curve("N=250", 0.1, grid=(0.25, *grown))], grid=(0.25, *grown))
    assert third.added == ()
    assert third.held == ("not extended below 0.25 (edge at N=250): max_grid_extensions=3 steps at that end reached",)
    # the steps below do not count against the top
    top = plan([curve("N=250", 100.0, grid=(0.25, *grown))], grid=(0.25, *grown))
    assert [p.tau_epoch for p in top.added] == [64.0]
    off = plan([curve("N=250", 1.0)], max_extensions=0)
    assert off.added == () and "max_grid_extensions=0" in off.held[0]


def test_stops_above_two_optimizer_steps() -> None:
    # a 4-step epoch: 2 steps is tau_epoch 0.5; the next step below 1 would be 0.5, then 0.25
    assert lowest_tau_epoch([4, 16]) == 0.5
    grid = (1.0, *BASE)
    at_bound = plan([curve("N=250", 0.1, grid=grid)], grid=grid, lowest=0.5)
    assert [p.tau_epoch for p in at_bound.added] == [0.5]
    below = plan([curve("N=250", 0.1, grid=(0.5, *grid))], grid=(0.5, *grid), lowest=0.5)
    assert below.added == () and below.held == (
        "not extended below 0.5 (edge at N=250): tau_epoch 0.25 is under 2 optimizer steps at the smallest axis point"
        " (the least is 0.5)",
    )
    with pytest.raises(ValueError, match=r"`lowest_tau_epoch\(steps_per_epoch=\[0, 4\]\)` is not valid"):
        lowest_tau_epoch([0, 4])


def test_stops_above_max_runs_times_run() -> None:
    # one seed (no s.d.: no plateau to judge), loss still falling at 32 in a 2-epoch run: 64 is 32 runs long
    falling = curve("N=250", 1000.0, seeds=1)
    held = plan([falling], epochs=2)
    assert held.added == () and held.held == (
        "not extended above 32 (edge at N=250): tau_epoch 64 is over 16 times the run's 2 epochs, where weight decay"
        " does next to nothing (as good as none)",
    )
    assert MAX_RUNS == 16.0
    assert [p.tau_epoch for p in plan([falling], epochs=4).added] == [64.0]  # 64 is 16 runs: still added


def test_plateau_at_top_not_edge_to_widen() -> None:
    # the loss falls to 8 and is flat from there (within the seeds' spread, 0.01): weight decay stops mattering
    means = (0.30, 0.20, 0.150, 0.1495, 0.149)
    flat = ScaleCurve("N=1000", list(BASE), [[m - 0.01, m, m + 0.01] for m in means], 32.0, "top")
    held = plan([curve("N=250", 8.0), flat], epochs=10)  # the top, 32, is longer than the 10-epoch run
    assert held.added == ()
    assert held.held == (
        "not extended above 32 at N=1000: the top is a plateau (any tau_epoch >= 8 is as good, longer than the run's"
        " 10 epochs)",
    )
    # the same curve in a 20-epoch run: 32 is not twice the run, so it is an edge
    assert [p.tau_epoch for p in plan([flat], epochs=20).added] == [64.0]


def test_rule_off_grid_adds_whole_steps_until_grid_covers_it() -> None:
    inside = [curve("N=250", 8.0), curve("N=1000", 8.0)]
    below = plan(inside, rule_taus=[("Wang & Aitchison", 8.0), ("fixed λ", 0.6)])
    assert below.added == (AddedPoint(0.5, "rule fixed λ at 0.6", 0), AddedPoint(1.0, "rule fixed λ at 0.6", 0))
    assert [p.tau_epoch for p in plan(inside, rule_taus=[("fixed λ", 1.0)]).added] == [1.0]  # exactly one step
    above = plan(inside, rule_taus=[("Qiu et al.", 100.0)])
    assert [p.tau_epoch for p in above.added] == [64.0, 128.0]
    # within the limit, and one point serving an edge and a rule says both
    capped = plan([curve("N=250", 1.0), curve("N=1000", 8.0)], rule_taus=[("fixed λ", 0.3)], max_extensions=2)
    assert capped.added == (
        AddedPoint(0.5, "rule fixed λ at 0.3", 0),
        AddedPoint(1.0, "edge at N=250; rule fixed λ at 0.3", 0),
    )
    assert capped.held == (
        "not extended below 2 (rule fixed λ at 0.3): max_grid_extensions=2 steps at that end reached",
    )


def test_midpoints_around_each_optimum_once_and_only_nothing_else_added() -> None:
    scales = [curve("N=250", 5.0), curve("N=1000", 9.0)]  # best grid points 4 and 8
    mids = plan(scales, midpoints=True, at_round=1)
    assert [p.tau_epoch for p in mids.added] == pytest.approx([2**1.5, 2**2.5, 2**3.5])
    assert {p.reason for p in mids.added} == {MIDPOINT_REASON} and {p.round for p in mids.added} == {1}
    assert plan(scales).added == ()  # not asked for: the shape part does not decide
    grown = tuple(sorted({*BASE, *(p.tau_epoch for p in mids.added)}))
    again = [curve("N=250", 5.0, grid=grown), curve("N=1000", 9.0, grid=grown)]
    assert plan(again, grid=grown, midpoints=True).added == ()  # once
    edge = plan([curve("N=250", 1.0), curve("N=1000", 9.0)], midpoints=True)
    assert [p.tau_epoch for p in edge.added] == [1.0]  # the edge first; the midpoints in a later round


def test_line_lists_points_in_order_trained() -> None:
    assert grid_line([]) is None
    assert grid_line([AddedPoint(64.0, "edge at width 8", 0), AddedPoint(2**0.5, MIDPOINT_REASON, 1)]) == (
        "Grid extended (points added to the grid given, in the order trained): tau_epoch 64 (edge at width 8), 1.41"
        " (midpoint: shape undecided)."
    )


def test_lowest_tau_epoch_takes_one_step_epoch() -> None:
    assert lowest_tau_epoch([1, 4]) == 2.0  # one step per epoch is valid: 2 steps are 2 epochs
    with pytest.raises(ValueError, match=r"`lowest_tau_epoch\(steps_per_epoch=\[\]\)` is not valid"):
        lowest_tau_epoch([])


def test_max_grid_extensions_0_adds_nothing_and_says_which_edges_it_held() -> None:
    scales = [curve("N=250", 1.0), curve("N=500", 1.5), curve("N=1000", 100.0)]
    off = plan(scales, max_extensions=0, midpoints=True, rule_taus=[("fixed λ", 0.3)])
    assert off.added == () and off.held == (
        "not extended below 2 (edge at N=250, N=500): max_grid_extensions=0 steps at that end reached",
        "not extended above 32 (edge at N=1000): max_grid_extensions=0 steps at that end reached",
    )
    # no midpoints either, though asked for and nothing else is added
    assert plan([curve("N=250", 5.0)], max_extensions=0, midpoints=True) == ((), ())
    # a top that is a plateau says so, not the limit; in a longer run the same top is an edge the limit holds
    means = (0.30, 0.20, 0.150, 0.1495, 0.149)
    flat = ScaleCurve("N=1000", list(BASE), [[m - 0.01, m, m + 0.01] for m in means], 32.0, "top")
    assert plan([flat], max_extensions=0, epochs=10).held == (
        "not extended above 32 at N=1000: the top is a plateau (any tau_epoch >= 8 is as good, longer than the run's"
        " 10 epochs)",
    )
    assert plan([flat], max_extensions=0, epochs=20).held == (
        "not extended above 32 (edge at N=1000): max_grid_extensions=0 steps at that end reached",
    )
    # one step allowed: one step added
    assert plan([curve("N=250", 1.0)], max_extensions=1).added == (AddedPoint(1.0, "edge at N=250", 0),)


def test_grid_of_one_point_says_it_has_no_step_and_two_points_have_one() -> None:
    one = ScaleCurve("N=250", [8.0], [[0.3, 0.31, 0.29]], 8.0, "top")
    lone = plan_round([8.0], [8.0], [one], mode="min", epochs=10, lowest=0.1, max_extensions=3, at_round=0)
    assert lone == ((), ("not extended above 8 (edge at N=250): a grid of one tau_epoch has no step to extend by",))
    two = ScaleCurve("N=250", [4.0, 8.0], [[0.4, 0.41, 0.39], [0.3, 0.31, 0.29]], 8.0, "top")
    settings: dict[str, Any] = dict(mode="min", epochs=10, lowest=0.1, at_round=0)
    assert plan_round([4.0, 8.0], [4.0, 8.0], [two], max_extensions=3, **settings).added == (
        AddedPoint(16.0, "edge at N=250", 0),
    )
    assert plan_round([4.0, 8.0], [4.0, 8.0], [two], max_extensions=0, **settings).held == (
        "not extended above 8 (edge at N=250): max_grid_extensions=0 steps at that end reached",
    )


def test_steps_above_given_grid_count_against_top_and_third_allowed() -> None:
    # two steps above already (64, 128): the third, 256, is within max_grid_extensions=3 (a 20-epoch run: 256 <= 320)
    grown = (*BASE, 64.0, 128.0)
    third = plan([curve("N=250", 1000.0, grid=grown)], grid=grown, epochs=20)
    assert third.added == (AddedPoint(256.0, "edge at N=250", 0),) and third.held == ()
    full = (*grown, 256.0)
    assert plan([curve("N=250", 1000.0, grid=full)], grid=full, epochs=20) == (
        (),
        ("not extended above 256 (edge at N=250): max_grid_extensions=3 steps at that end reached",),
    )


def test_rule_on_or_inside_grid_adds_nothing_and_one_just_outside_one_step() -> None:
    inside = [curve("N=250", 8.0), curve("N=1000", 8.0)]
    on_or_in = [("a", 2.0), ("b", 3.0), ("c", 20.0), ("d", 32.0)]  # the two ends, next to each end
    assert plan(inside, rule_taus=on_or_in) == ((), ())
    # just above the top: one step there (not the steps from the grid's second or first point)
    assert plan(inside, rule_taus=[("Qiu et al.", 40.0)]) == ((AddedPoint(64.0, "rule Qiu et al. at 40", 0),), ())
    assert plan(inside, rule_taus=[("Qiu et al.", 100.0)]).held == ()  # 64 and 128 cover it: nothing held
    # exactly two steps above: count steps, not count + 1
    assert [p.tau_epoch for p in plan(inside, rule_taus=[("r", 128.0)], epochs=20).added] == [64.0, 128.0]
    # three steps: each a power of the step (32 * 2 ** 3, not 32 * 2 * 3)
    far = plan(inside, rule_taus=[("r", 200.0)], epochs=20)
    assert [p.tau_epoch for p in far.added] == [64.0, 128.0, 256.0] and far.held == ()


def test_held_step_names_every_reason_it_had() -> None:
    # the limit: three steps below already
    grown = (0.25, 0.5, 1.0, *BASE)
    limit = plan([curve("N=250", 0.01, grid=grown)], grid=grown, rule_taus=[("fixed λ", 0.1)])
    assert limit.held == (
        "not extended below 0.25 (edge at N=250; rule fixed λ at 0.1): max_grid_extensions=3 steps at that end"
        " reached",
    )
    # MAX_RUNS times the run
    runs = plan([curve("N=250", 1000.0, seeds=1)], epochs=2, rule_taus=[("Qiu et al.", 40.0)])
    assert runs.held == (
        "not extended above 32 (edge at N=250; rule Qiu et al. at 40): tau_epoch 64 is over 16 times the run's 2"
        " epochs, where weight decay does next to nothing (as good as none)",
    )
    # two optimizer steps
    low = (0.5, 1.0, *BASE)
    steps = plan([curve("N=250", 0.01, grid=low)], grid=low, lowest=0.5, rule_taus=[("fixed λ", 0.3)])
    assert steps.held == (
        "not extended below 0.5 (edge at N=250; rule fixed λ at 0.3): tau_epoch 0.25 is under 2 optimizer steps at"
        " the smallest axis point (the least is 0.5)",
    )


def test_plateau_at_one_axis_point_not_hide_edges_of_next() -> None:
    means = (0.30, 0.20, 0.150, 0.1495, 0.149)
    flat = ScaleCurve("N=250", list(BASE), [[m - 0.01, m, m + 0.01] for m in means], 32.0, "top")
    both = plan([flat, curve("N=1000", 1.0)], epochs=10)
    assert both.added == (AddedPoint(1.0, "edge at N=1000", 0),)
    assert both.held == (
        "not extended above 32 at N=250: the top is a plateau (any tau_epoch >= 8 is as good, longer than the run's"
        " 10 epochs)",
    )
    # nothing else to add: the midpoint below a plateau's top, the only neighbour it has
    assert plan([flat], epochs=10, midpoints=True).added == (AddedPoint(22.6274169980, MIDPOINT_REASON, 0),)


@pytest.mark.parametrize("earlier", [2**1.5, 2**3.5, 2**4.5])  # next to the bottom, inside, next to the top
def test_midpoints_only_once_whichever_gap_earlier_ones_in(earlier: float) -> None:
    grown = tuple(sorted((*BASE, earlier)))
    assert plan([curve("N=250", 5.0, grid=grown)], grid=grown, midpoints=True) == ((), ())
