"""The loss a rule costs (lightning_tau/tuner/analysis/rule_costs.py): where the rule lands, the paired interval, the grid."""

from __future__ import annotations

import math
import re

import pytest

from lightning_tau.tuner.analysis.rule_costs import read_curve, rule_cost
from lightning_tau.tuner.analysis.tdist import t_quantile

XS = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]


def curve(curvatures: list[float], best: float = 8.0, offsets: list[float] | None = None) -> list[list[float]]:
    """Seed j: ``c_j (log2 x - log2 best)^2 + offset_j`` on XS (grid x seeds)."""
    offsets = offsets or [0.0] * len(curvatures)
    return [[c * (math.log2(x / best)) ** 2 + o for c, o in zip(curvatures, offsets)] for x in XS]


def test_read_curve_linear_in_log_x_away_from_best_point():
    values = [0.9, 0.5, 0.2, 0.1, 0.3, 0.8]
    assert read_curve(XS, values, 4.0) == 0.2  # a grid point reads as itself
    assert read_curve(XS, values, 2**1.25) == pytest.approx(0.5 + 0.25 * (0.2 - 0.5))  # a quarter of the way, log x
    assert read_curve(XS, values, 2**1.25, best=3) == pytest.approx(0.425)  # best 8: its cells are 4-8 and 8-16
    assert read_curve(XS, values, 1.0) == 0.9 and read_curve(XS, values, 32.0) == 0.8


def test_read_curve_parabola_in_best_points_cells():
    values = [0.25 * (math.log2(x) - 2.7) ** 2 for x in XS]  # best grid point 8 (index 3); vertex 2^2.7 = 6.5
    for x in (4.5, 6.5, 8.0, 11.0, 16.0):
        exact = 0.25 * (math.log2(x) - 2.7) ** 2
        assert read_curve(XS, values, x, best=3) == pytest.approx(exact, abs=1e-12)
    # without `best`, or a best point at the grid's edge: the straight line (above the parabola between grid points)
    assert read_curve(XS, values, 6.5) > 0.25 * (math.log2(6.5) - 2.7) ** 2 + 0.01
    w = math.log2(1.5)  # the share of the way from 1 to 2 in log x
    assert read_curve(XS, values, 1.5, best=0) == pytest.approx(values[0] + w * (values[1] - values[0]))


def test_read_curve_non_finite_and_outside_grid():
    values = [0.9, math.nan, 0.2, 0.1, 0.3, 0.8]
    assert math.isnan(read_curve(XS, values, 1.5)) and math.isnan(read_curve(XS, values, 2.0))
    assert read_curve(XS, values, 3.0) != read_curve(XS, values, 3.0) is not None  # nan
    assert read_curve(XS, values, 16.0) == 0.3
    with pytest.raises(
        ValueError, match=r"^`read_curve\(x=64\.0\)` is not valid: use an x within the grid \(1 to 32\)"
    ):
        read_curve(XS, values, 64.0)


def test_cost_carries_smallest_scales_best_x_by_rule():
    # x_from 4 over a x4 range: exponent -1/2 lands on 2, two octaves below the best 8; +1/2 would land on 8 (cost 0)
    cost = rule_cost(XS, curve([0.25, 0.5, 0.75]), x_from=4.0, x_best=8.0, scale_ratio=4.0, exponent=-0.5)
    assert cost.x_rule == 2.0 and cost.x_best == 8.0
    assert cost.per_seed == pytest.approx((1.0, 2.0, 3.0))  # 4 c_j
    assert cost.mean == pytest.approx(2.0)
    half = t_quantile(0.975, 2) * 1.0 / math.sqrt(3)  # the paired t-interval over the 3 seeds' costs (sd 1)
    assert cost.ci == pytest.approx((2.0 - half, 2.0 + half)) and cost.ci[0] < cost.ci[1]
    assert cost.level == 0.95 and cost.reason is None
    assert rule_cost(XS, curve([0.25, 0.5, 0.75]), x_from=4.0, x_best=8.0, scale_ratio=4.0, exponent=0.5).mean == 0


def test_cost_pairs_seeds():
    # seeds 1.0 apart at every point: the pairs see a cost of exactly 1 on each, an interval of width 0
    cost = rule_cost(
        XS, curve([0.25] * 3, offsets=[0.0, 1.0, 2.0]), x_from=8.0, x_best=8.0, scale_ratio=2.0, exponent=1
    )
    assert cost.x_rule == 16.0 and cost.per_seed == pytest.approx((0.25, 0.25, 0.25))
    assert cost.ci == pytest.approx((0.25, 0.25))


def test_cost_positive_worse_in_either_mode():
    accuracy = [[1.0 - v for v in row] for row in curve([0.25, 0.5])]
    as_max = rule_cost(XS, accuracy, x_from=8.0, x_best=8.0, scale_ratio=4.0, exponent=-1, mode="max")
    as_min = rule_cost(XS, curve([0.25, 0.5]), x_from=8.0, x_best=8.0, scale_ratio=4.0, exponent=-1)
    assert as_max.mean == pytest.approx(as_min.mean) == pytest.approx(1.5)  # 4 c_j, c = 0.25, 0.5
    assert as_max.per_seed == pytest.approx((1.0, 2.0)) and as_max.x_rule == 2.0


def test_cost_at_vertex_between_grid_points_never_negative_on_mean():
    # best at 2^2.7: x_best is the parabola's vertex; a rule on the grid point 8 must cost more, not less
    values = [[0.25 * (math.log2(x) - 2.7) ** 2 + o for o in (0.0, 0.1)] for x in XS]
    cost = rule_cost(XS, values, x_from=8.0, x_best=2**2.7, scale_ratio=2.0, exponent=0)
    assert cost.mean == pytest.approx(0.25 * 0.3**2) and cost.mean > 0


def test_cost_beyond_or_below_grid_not_extrapolated():
    values = curve([0.25, 0.5])
    beyond = rule_cost(XS, values, x_from=16.0, x_best=8.0, scale_ratio=4.0, exponent=1, x_label="tau_epoch")
    assert (beyond.x_rule, beyond.mean, beyond.ci, beyond.per_seed) == (64.0, None, None, ())
    assert beyond.reason == "the rule puts tau_epoch at 64, beyond the grid (up to 32): not measured there"
    below = rule_cost(XS, values, x_from=2.0, x_best=8.0, scale_ratio=8.0, exponent=-1, x_label="λ_base")
    assert below.reason == "the rule puts λ_base at 0.25, below the grid (from 1): not measured there"
    assert (beyond.level, below.level, below.x_best) == (0.95, 0.95, 8.0)
    # "x" unless told; a grid of one point
    one_point = rule_cost([8.0], [[0.1, 0.2]], x_from=8.0, x_best=8.0, scale_ratio=2.0, exponent=1, level=0.9)
    assert one_point.reason == "the rule puts x at 16, beyond the grid (up to 8): not measured there"
    assert one_point.level == 0.9
    # a rule landing on the grid's end up to rounding is on the grid
    edge = rule_cost(XS, values, x_from=32.0, x_best=8.0, scale_ratio=3.0, exponent=math.log(1 + 1e-12) / math.log(3))
    assert edge.x_rule == 32.0 and edge.mean is not None


def test_cost_one_seed_and_diverged_run():
    one = rule_cost(XS, curve([0.5]), x_from=4.0, x_best=8.0, scale_ratio=2.0, exponent=0)
    assert one.mean == pytest.approx(0.5) and one.ci is None and one.reason == "1 seed: an interval needs at least 2"
    assert (one.x_rule, one.x_best, one.level, one.per_seed) == (4.0, 8.0, 0.95, pytest.approx((0.5,)))
    diverged = curve([0.5, 0.5])
    diverged[2][1] = math.nan  # seed 1 diverged at x = 4, where the rule lands
    cost = rule_cost(XS, diverged, x_from=4.0, x_best=8.0, scale_ratio=2.0, exponent=0, x_label="tau_epoch")
    assert cost.mean is None and cost.reason == "a run next to tau_epoch 4 or 8 diverged (no finite loss)"
    assert (cost.x_rule, cost.x_best, cost.ci, cost.level, cost.per_seed) == (4.0, 8.0, None, 0.95, ())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "best"}, "`rule_cost(mode='best')` is not valid: use 'min' (a loss) or 'max'."),
        ({"level": 1.0}, "`rule_cost(level=1.0)` is not valid: use a number strictly between 0 and 1."),
        ({"xs": [1.0, 1.0]}, "`rule_cost(xs=[1.0, 1.0])` is not valid: use positive numbers in increasing order."),
        (
            {"curve": [[0.1], [0.2]]},
            "`rule_cost(curve=...)` is not valid: got shape (2, 1); use one row per grid point (6) and one column per"
            " seed.",
        ),
        ({"curve": [["a"]] * 6}, "`rule_cost(curve=...)` is not valid: use numbers, one row per grid point."),
        ({"xs": ["a", "b"]}, "`rule_cost(xs=['a', 'b'])` is not valid: use positive numbers in increasing order."),
        ({"xs": [-1.0, 2.0]}, "`rule_cost(xs=[-1.0, 2.0])` is not valid: use positive numbers in increasing order."),
        ({"xs": [1.0, math.inf]}, "`rule_cost(xs=[1.0, inf])` is not valid: use positive numbers in increasing order."),
        ({"x_from": 0.0}, "`rule_cost(x_from=0.0)` is not valid: use a positive number."),
        ({"x_best": 64.0}, "`rule_cost(x_best=64.0)` is not valid: use an x within the grid (1 to 32)."),
        ({"scale_ratio": 0.5}, "`rule_cost(scale_ratio=0.5)` is not valid: use a number >= 1."),
        ({"exponent": math.inf}, "`rule_cost(exponent=inf)` is not valid"),
    ],
)
def test_cost_refuses_bad_input(kwargs, message):
    args = {"xs": XS, "curve": curve([0.5]), "x_from": 4.0, "x_best": 8.0, "scale_ratio": 2.0, "exponent": 0.0}
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        rule_cost(**{**args, **kwargs})


def test_cost_takes_grid_below_one_and_scale_ratio_of_one():
    xs = [x / 64 for x in XS]  # 1/64 .. 1/2: x_best 1/8 and x_from 1/16 are below 1, and valid
    values = [[0.25 * math.log2(x * 8) ** 2] for x in xs]
    cost = rule_cost(xs, values, x_from=1 / 16, x_best=1 / 8, scale_ratio=1.0, exponent=-0.5)
    assert (cost.x_rule, cost.x_best, cost.per_seed) == (1 / 16, 1 / 8, pytest.approx((0.25,)))


def test_cost_rule_on_grids_first_point_up_to_rounding_on_grid():
    # x_from 1 carried by an exponent a hair below 0 lands on 1 - 1e-12: the grid's first point, not below it
    values = curve([0.25, 0.5])
    first = rule_cost(XS, values, x_from=1.0, x_best=8.0, scale_ratio=3.0, exponent=math.log(1 - 1e-12) / math.log(3))
    assert first.x_rule == 1.0 and first.reason is None
    assert first.per_seed == pytest.approx((0.25 * 9, 0.5 * 9))  # three octaves from the best 8


def test_cost_in_max_mode_reads_around_best_point_not_worst():
    # an accuracy peaking between grid points (2^2.7) and a rule landing between them (2^3.5): both are read on the
    # parabola around the best grid point 8, exactly as the loss 1 - accuracy is in "min" mode (a straight line in
    # each cell, as around the worst point 1, would read 0.04 c_j more)
    loss = [[c * (math.log2(x) - 2.7) ** 2 for c in (0.25, 0.5)] for x in XS]
    accuracy = [[1.0 - v for v in row] for row in loss]
    kwargs = dict(x_from=2**3.5, x_best=2**2.7, scale_ratio=2.0, exponent=0)
    as_max = rule_cost(XS, accuracy, mode="max", **kwargs)
    as_min = rule_cost(XS, loss, **kwargs)
    assert as_min.per_seed == pytest.approx((0.25 * 0.8**2, 0.5 * 0.8**2))  # exact: the parabola is the curve
    assert as_max.per_seed == pytest.approx(as_min.per_seed) and as_max.mean == pytest.approx(as_min.mean)


def test_same_point_rule_lands_on_best_grid_point():
    table = curve([1.0, 2.0], offsets=[0.0, 0.3])  # best at 8 on both seeds
    same = rule_cost(XS, table, x_from=8.0, x_best=8.0, scale_ratio=4.0, exponent=0.0)
    assert same.same_point and same.mean == 0.0 and same.ci == (0.0, 0.0)
    # off the best point, or between grid points: a measured cost, not the same point
    assert not rule_cost(XS, table, x_from=4.0, x_best=8.0, scale_ratio=4.0, exponent=0.0).same_point
    flat = [[0.5, 0.5] for _ in XS]  # every point equal: a measured zero between two grid points
    assert not rule_cost(XS, flat, x_from=2.0, x_best=8.0, scale_ratio=4.0, exponent=0.0).same_point
    between = rule_cost(XS, table, x_from=6.0, x_best=6.0, scale_ratio=4.0, exponent=0.0)
    assert not between.same_point
