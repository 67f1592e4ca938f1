"""``lightning_tau.tuner.analysis.scaling``, the finder axes' statistics (issues 20 and 28): the scaling exponent, its interval's
coverage, and where the staging of seeds="auto" stops. (The paired interior test's tests are ``test_grid_best.py``,
the stages' ``test_staging.py``, Student's t's ``test_tdist.py``, all beside this file in ``tests/tuner/analysis/``.)

Pure numpy, no Lightning: exact values on hand-made curves, and a simulation of curves like the digits width
demo's, asymmetric, V-shaped, with correlated noise, and with a shape that changes with scale on the finder's grid
(issue 36), that checks the interval's coverage at every seed count that gets one and where the staging stops.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys

import numpy as np
import pytest

from lightning_tau.tuner import axes
from lightning_tau.tuner.analysis import rules
from lightning_tau.tuner.analysis.curve import DEFAULT_TAU_EPOCHS, smoothed_optimum
from lightning_tau.tuner.analysis.scaling import (
    MIN_SEEDS_FOR_INTERVAL,
    ScalingFit,
    _column_optima,
    _column_optima_lopsided,
    _envelope,
    _seed_exponents,
    _sign,
    _smoothers,
    fit_scaling,
    seed_stages,
    staged_level,
)
from lightning_tau.tuner.analysis.tdist import t_quantile

GRID = [2.0**k for k in range(7)]  # 1 .. 64, one octave apart


def parabolas(best_log2, offsets=(0.0,), curvature=0.1, grid=GRID):
    """``grid x seeds``: ``curvature (log2 x - best)^2 + offset`` per seed (column)."""
    return [[curvature * (math.log2(x) - best_log2) ** 2 + off for off in offsets] for x in grid]


def test_exports_split_modules_names_as_before():
    """The paired test and the staging moved below stats.py; every name its ``__all__`` had is still importable from
    it, and is the same object."""
    from lightning_tau.tuner.analysis import grid_best, staging
    from lightning_tau.tuner.analysis import scaling as stats

    assert stats.__all__ == [
        "MIN_SEEDS_FOR_INTERVAL",
        "InteriorTest",
        "ScalingFit",
        "fit_scaling",
        "paired_interior",
        "per_seed_optima",
        "seed_stages",
        "staged_level",
    ]
    for name in ("InteriorTest", "paired_interior", "per_seed_optima"):
        assert getattr(stats, name) is getattr(grid_best, name)
    for name in ("seed_stages", "staged_level"):
        assert getattr(stats, name) is getattr(staging, name)


def test_stats_imports_without_lightning_or_torch():
    code = (
        "import sys, lightning_tau.tuner.analysis.scaling, lightning_tau.tuner.analysis.verdicts, lightning_tau.tuner.analysis.finder_result,"
        " lightning_tau.tuner.analysis.grid_best, lightning_tau.tuner.analysis.staging;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('lightning', 'torch', 'pytorch_lightning')"
        " or m == 'lightning_tau.tuner.finder');"
        "print(bad); assert not bad"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    import lightning_tau.tuner as tuner

    assert {"FinderResult", "TimescaleFinder"} <= set(dir(tuner)) and tuner.__all__ == [
        "FinderResult",
        "TimescaleFinder",
    ]


SHAPE_HINT = (
    "use one row per grid point and one column per seed (grid x seeds), e.g. [[0.5], [0.4], [0.6]] for 3 grid points"
    " and 1 seed."
)
INCREASING = "is not valid: use positive numbers in increasing order."


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: fit_scaling([1.0], GRID, [parabolas(3)]),
            "`fit_scaling(scales=[1.0])` is not valid: it needs at least 2 values.",
        ),
        (lambda: fit_scaling([4, 1], GRID, [parabolas(3)] * 2), f"`fit_scaling(scales=[4.0, 1.0])` {INCREASING}"),
        (lambda: fit_scaling([0, 1], GRID, [parabolas(3)] * 2), f"`fit_scaling(scales=[0.0, 1.0])` {INCREASING}"),
        (lambda: fit_scaling([1, 1], GRID, [parabolas(3)] * 2), f"`fit_scaling(scales=[1.0, 1.0])` {INCREASING}"),
        (
            lambda: fit_scaling([1, math.inf], GRID, [parabolas(3)] * 2),
            f"`fit_scaling(scales=[1.0, inf])` {INCREASING}",
        ),
        (
            lambda: fit_scaling([1, 4], GRID[::-1], [parabolas(3)] * 2),
            f"`fit_scaling(xs=[64.0, 32.0, 16.0, 8.0, 4.0, 2.0, 1.0])` {INCREASING}",
        ),
        (
            lambda: fit_scaling([1, 4], GRID, [parabolas(3)]),
            "`fit_scaling(curves=...)` is not valid: it needs one grid x seeds array per scale, 2 in all, got 1.",
        ),
        (
            lambda: fit_scaling([1, 4], GRID, "abc"),
            "`fit_scaling(curves=...)` is not valid: it needs one grid x seeds array per scale, 2 in all, got 3.",
        ),
        (
            lambda: fit_scaling([1, 4], GRID, [parabolas(3), parabolas(3)[:-1]]),
            "`fit_scaling(curves=...)` is not valid: the curve at scale 4 has 6 rows for 7 grid points in `xs`.",
        ),
        (
            lambda: fit_scaling([1, 4], GRID, [parabolas(3), [["a"]] * 7]),
            "`fit_scaling(curves[scale=4]=...)` is not valid: use numbers, one row per grid point and one column per"
            " seed.",
        ),
        (
            lambda: fit_scaling([1, 4], GRID, [parabolas(3)] * 2, level=95),
            "`fit_scaling(level=95)` is not valid: use a number strictly between 0 and 1.",
        ),
        (
            lambda: fit_scaling([1, 4], GRID, [parabolas(3)] * 2, interior_level=1),
            "`fit_scaling(interior_level=1)` is not valid: use a number strictly between 0 and 1.",
        ),
        (
            lambda: fit_scaling([1, 4], GRID, [parabolas(3)] * 2, window=0),
            "`fit_scaling(window=0)` is not valid: use an integer >= 1.",
        ),
        (
            lambda: fit_scaling([1, 4], GRID, [parabolas(3)] * 2, window=True),
            "`fit_scaling(window=True)` is not valid: use an integer >= 1.",
        ),
        (
            lambda: fit_scaling([1, 4], GRID, [parabolas(3)] * 2, window=1.0),
            "`fit_scaling(window=1.0)` is not valid: use an integer >= 1.",
        ),
        (
            lambda: fit_scaling([1, 4], GRID, [parabolas(3)] * 2, mode="low"),
            "`fit_scaling(mode='low')` is not valid: use 'min' (a loss) or 'max'.",
        ),
        (
            lambda: fit_scaling([1, 4], GRID, [parabolas(3), [[math.nan]] * 7]),
            "`fit_scaling(curves=...)` is not valid: at scale 4 every grid point has a non-finite value (a diverged"
            " run), so there is no best point.",
        ),
    ],
)
def test_stats_bad_input(call, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        call()


# --- the scaling exponent ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("window", [1, 2])
def test_stats_exact_parabolas_give_planted_exponent(window):
    """Vertices at 10 s^-1/2 (off the grid): 10, 5, 2.5; three seeds offset from each other."""
    curves = [parabolas(math.log2(10 / math.sqrt(s)), offsets=(0.5, 0.6, 0.45)) for s in (1, 4, 16)]
    fit = fit_scaling([1, 4, 16], GRID, curves, window=window)
    assert fit.exponent == pytest.approx(-0.5, abs=1e-9)
    assert fit.optima == pytest.approx([10.0, 5.0, 2.5], rel=1e-9)
    assert fit.grid_optima == [8.0, 4.0, 2.0] and fit.grid_exponent == pytest.approx(-0.5, abs=1e-12)
    assert fit.per_seed_grid_optima == [[8.0] * 3, [4.0] * 3, [2.0] * 3]
    assert fit.seed_exponents == pytest.approx([-0.5] * 3, abs=1e-9)
    assert fit.ci == pytest.approx((-0.5, -0.5), abs=1e-9) and fit.ci_reason is None and fit.level == 0.95
    assert not fit.sign_disagrees and fit.note() is None and fit.at_edge == [False] * 3
    assert [t.interior for t in fit.interior] == [True] * 3  # the same gap for every seed: p = 0
    assert fit.scales == [1.0, 4.0, 16.0] and fit.xs == GRID


def test_stats_interval_t_interval_over_per_seed_exponents():
    """Seed j's vertex moves as s^e_j, e = (-0.4, -0.5, -0.6); the same curvature, so the mean curve's vertex
    is the mean of the seeds' (in log x) and its exponent -0.5."""
    seed_exps = (-0.4, -0.5, -0.6)
    curves = []
    for s in (1.0, 4.0, 16.0):
        columns = [parabolas(3.3 + e * math.log2(s), offsets=(0.1 * j,)) for j, e in enumerate(seed_exps)]
        curves.append([[col[i][0] for col in columns] for i in range(len(GRID))])
    fit = fit_scaling([1, 4, 16], GRID, curves)
    assert fit.exponent == pytest.approx(-0.5, abs=1e-9)
    assert fit.seed_exponents == pytest.approx(list(seed_exps), abs=1e-9)
    half = 4.302652729911275 * 0.1 / math.sqrt(3)  # t_{2, 0.975} sd / sqrt(k)
    assert fit.ci == pytest.approx((-0.5 - half, -0.5 + half), abs=1e-9)
    low, high = fit_scaling([1, 4, 16], GRID, curves, level=0.9).ci
    assert high - low == pytest.approx(2 * 2.919985580355516 * 0.1 / math.sqrt(3), abs=1e-9)


def test_stats_exponent_centre_of_interval_not_seed_mean_curves():
    """Seeds with curvatures 0.05, 0.1, 0.2 whose vertices move as s^-0.2, s^-0.5, s^-0.8: the mean per-seed exponent
    is -0.5, while the seed-mean curve's vertex is their curvature-weighted mean, so its exponent is -0.22 / 0.35."""
    seeds = ((0.05, -0.2), (0.1, -0.5), (0.2, -0.8))
    curves = []
    for s in (1.0, 4.0, 16.0):
        columns = [parabolas(4.3 + e * math.log2(s), curvature=c) for c, e in seeds]
        curves.append([[col[i][0] for col in columns] for i in range(len(GRID))])
    fit = fit_scaling([1, 4, 16], GRID, curves)
    assert fit.curve_exponent == pytest.approx(-0.22 / 0.35, abs=1e-9)
    assert fit.seed_exponents == pytest.approx([-0.2, -0.5, -0.8], abs=1e-9)
    half = 4.302652729911275 * 0.3 / math.sqrt(3)  # the windows agree on exact parabolas: no spread to add
    assert fit.ci == pytest.approx((-0.5 - half, -0.5 + half), abs=1e-9)
    assert fit.exponent == pytest.approx(-0.5, abs=1e-9) == (fit.ci[0] + fit.ci[1]) / 2
    assert fit.note() is None  # -0.63 is inside the interval


def lopsided_vertex(grid, values, window):
    """The lopsided parabola's vertex of one curve, by profile least squares written out: at each vertex ``v`` the
    fit ``a + L d^2 (d < 0) + R d^2 (d > 0)`` is linear; the vertex with the least residual among those with
    ``L, R > 0``, found by a fine scan of the best point's bracket and a golden-section search around the best."""
    log_x, y = np.log(np.asarray(grid, dtype=float)), np.asarray(values, dtype=float)
    b = int(np.argmin(y))
    lo, hi = max(0, b - window), min(len(y), b + window + 1)
    u, y = log_x[lo:hi], y[lo:hi]

    def rss(v):
        d = u - v
        design = np.stack([np.ones_like(d), np.minimum(d, 0) ** 2, np.maximum(d, 0) ** 2], axis=1)
        coef = np.linalg.lstsq(design, y, rcond=None)[0]
        return float(((y - design @ coef) ** 2).sum()) if coef[1] > 0 and coef[2] > 0 else math.inf

    vs = np.linspace(log_x[b - 1], log_x[b + 1], 2001)
    i = int(np.argmin([rss(v) for v in vs]))
    a, c = vs[max(i - 1, 0)], vs[min(i + 1, len(vs) - 1)]
    for _ in range(80):  # golden section
        m1, m2 = c - 0.618034 * (c - a), a + 0.618034 * (c - a)
        a, c = (a, m2) if rss(m1) <= rss(m2) else (m1, c)
    return math.exp((a + c) / 2)


def test_stats_lopsided_optima_profile_least_squares_vertex():
    """_column_optima_lopsided on noisy lopsided curves equals the vertex written out seed by seed; on exact
    lopsided parabolas it is the planted vertex, where the one-curvature parabola leans toward the flatter side."""
    rng = np.random.default_rng(3)
    grid = [2.0**k for k in range(1, 8)]
    u = np.log(grid)[:, None]
    vertex = np.log(rng.uniform(5.0, 40.0, 12))
    table = np.where(u < vertex, 0.2, 0.03) * (u - vertex) ** 2 + 0.003 * rng.standard_normal((7, 12))
    fast = _column_optima_lopsided(grid, table, "min", 3)
    assert fast == pytest.approx([lopsided_vertex(grid, table[:, j], 3) for j in range(12)], rel=1e-7)
    exact = np.where(u < vertex, 0.2, 0.03) * (u - vertex) ** 2
    assert np.log(_column_optima_lopsided(grid, exact, "min", 3)) == pytest.approx(vertex, abs=1e-9)
    leaning = np.log(_column_optima(grid, exact, "min", 3)) - vertex
    assert np.all(leaning[np.abs(leaning) < 0.69] > 0.05)  # toward the flatter right, unless clamped
    assert _column_optima_lopsided(grid, -exact, "max", 3) == pytest.approx(np.exp(vertex), rel=1e-9)
    # fewer than 4 points in the window, or no fit opening up on both sides: the parabola's vertex
    assert _column_optima_lopsided(grid[:3], exact[:3], "min", 3) == pytest.approx(
        _column_optima(grid[:3], exact[:3], "min", 3))
    falling = np.array([[3.0], [2.0], [1.0], [0.0], [1.0], [1.5], [1.6]])  # a kink: concave right of the best
    assert _column_optima_lopsided(grid, falling, "min", 3) == pytest.approx(
        [lopsided_vertex(grid, falling[:, 0], 3)], rel=1e-7)


def test_stats_interval_widened_envelope_of_windows_intervals():
    """Curves that grow lopsided with scale (curvature 0.09 left of the optimum, 0.09 to 0.01 right; noise): the
    parabola through 1 neighbour and the lopsided parabola through 3 put the optimum at different places, so their
    per-seed exponents differ.
    The interval is recomputed here seed by seed (smoothed_optimum; the lopsided vertex written out): each
    smoother's t-interval, their envelope, widened on each side by half the spread of the smoothers' means."""
    rng = np.random.default_rng(7)
    scales, seeds = [1.0, 4.0, 16.0], 4
    log_grid = np.log2(GRID)
    curves = []
    for s in scales:
        d = log_grid[:, None] - (3.4 - 0.4 * math.log2(s))
        right = 0.09 / 3 ** (math.log2(s) / 2)  # 0.09, 0.03, 0.01: lopsided only at the larger scales
        curve = np.where(d < 0, 0.09, right) * d**2 + 0.004 * rng.standard_normal((len(GRID), seeds))
        curves.append(curve)
    fit = fit_scaling(scales, GRID, curves)
    t = t_quantile(0.975, seeds - 1)
    smoothers = {
        "parabola 1": lambda column: smoothed_optimum(GRID, list(column), window=1).tau_epoch,
        "lopsided 3": lambda column: lopsided_vertex(GRID, column, 3),
    }
    ends, means = {}, {}
    for name, optimum in smoothers.items():
        exps = []
        for j in range(seeds):
            optima = [optimum(c[:, j]) for c in curves]
            exps.append(np.polyfit(np.log(scales), np.log(optima), 1)[0])
        means[name] = np.mean(exps)
        half = t * np.std(exps, ddof=1) / math.sqrt(seeds)
        ends[name] = (means[name] - half, means[name] + half)
    assert set(fit.window_cis) == set(smoothers)
    for name in smoothers:
        assert fit.window_cis[name] == pytest.approx(ends[name], abs=1e-6)
    spread = abs(means["parabola 1"] - means["lopsided 3"])
    assert spread > 0.05  # the smoothers disagree: the case this is about
    low = min(e[0] for e in ends.values()) - spread / 2
    high = max(e[1] for e in ends.values()) + spread / 2
    assert fit.ci == pytest.approx((low, high), abs=1e-6)
    assert fit.exponent == pytest.approx((fit.ci[0] + fit.ci[1]) / 2, abs=1e-12)
    assert fit.seed_exponents == pytest.approx(list(_seed_exponents(scales, GRID, curves, "min", (1,))[0]))
    # window=2: the parabola through 2 and the lopsided one through 4
    assert set(fit_scaling(scales, GRID, curves, window=2).window_cis) == {"parabola 2", "lopsided 4"}


def test_stats_interval_parts_split_interval_into_seeds_and_shape():
    """The shape part is centre ± the smoothers' spread (no seed count shrinks it), the seeds part the rest:
    their half-widths add up to the interval's, both around its centre; exact parabolas have no shape part."""
    rng = np.random.default_rng(7)
    scales, seeds = [1.0, 4.0, 16.0], 4
    log_grid = np.log2(GRID)
    curves = []
    for s in scales:
        d = log_grid[:, None] - (3.4 - 0.4 * math.log2(s))
        curves.append(np.where(d < 0, 0.09, 0.01) * d**2 + 0.004 * rng.standard_normal((len(GRID), seeds)))
    fit = fit_scaling(scales, GRID, curves)
    assert fit.ci is not None and fit.interval_parts is not None
    means = _seed_exponents(scales, GRID, curves, "min", (1,), (3,)).mean(axis=1)
    spread = float(abs(means[0] - means[1]))
    centre, half = (fit.ci[0] + fit.ci[1]) / 2, (fit.ci[1] - fit.ci[0]) / 2
    shape, seeds_part = fit.interval_parts["shape"], fit.interval_parts["seeds"]
    assert shape == pytest.approx((centre - spread, centre + spread), abs=1e-12)
    assert (seeds_part[1] - seeds_part[0]) / 2 + (shape[1] - shape[0]) / 2 == pytest.approx(half, abs=1e-12)
    assert (seeds_part[0] + seeds_part[1]) / 2 == pytest.approx(centre, abs=1e-12)
    exact = fit_scaling([1, 4], GRID, [[[(math.log2(x / b)) ** 2 + o for o in (0.0, 0.1, 0.3)] for x in GRID]
                                       for b in (8.0, 4.0)])
    assert exact.interval_parts is not None
    assert exact.interval_parts["shape"][1] - exact.interval_parts["shape"][0] == pytest.approx(0.0, abs=1e-12)
    no_ci = fit_scaling(scales, GRID, [c[:, :1] for c in curves])
    assert no_ci.ci is None and no_ci.interval_parts is None


def test_stats_envelope_vectorized_over_runs():
    """_envelope over a batch of runs equals it run by run (the coverage simulation relies on it)."""
    rng = np.random.default_rng(11)
    table = rng.normal(size=(2, 5, 4))  # windows x runs x seeds
    low, high, lows, highs = _envelope(table, 0.9)
    for run in range(5):
        one = _envelope(table[:, run], 0.9)
        assert (low[run], high[run]) == pytest.approx((one[0], one[1]))
        assert list(lows[:, run]) == pytest.approx(list(one[2]))


def test_stats_tolerance_stored_and_sets_half_width():
    curves = [parabolas(math.log2(10 / math.sqrt(s)), offsets=(0.5, 0.6)) for s in (1, 4, 16)]
    fit = fit_scaling([1, 4, 16], GRID, curves)
    assert fit.tolerance == rules.DEFAULT_TOLERANCE == 1.25
    assert fit.half_width == pytest.approx(math.log(1.25) / math.log(16))
    wide = fit_scaling([1, 4, 16], GRID, curves, tolerance=2)
    assert wide.tolerance == 2.0 and wide.half_width == pytest.approx(0.25)
    assert rules.all_decided(fit.ci, axes.WIDTH_RULES, fit.half_width)  # an exact -1/2: Fan et al. holds


def test_stats_no_interval_and_why():
    curves = [parabolas(math.log2(10 / math.sqrt(s)), offsets=(0.5, 0.6)) for s in (1, 4, 16)]
    one_seed = fit_scaling([1, 4, 16], GRID, [[row[:1] for row in c] for c in curves])
    assert MIN_SEEDS_FOR_INTERVAL == 2
    assert one_seed.ci is None and one_seed.ci_reason == "1 seed: an interval needs at least 2 (a spread across seeds)"
    assert one_seed.exponent == pytest.approx(-0.5, abs=1e-9)  # the point estimate is still given
    uneven = fit_scaling([1, 4, 16], GRID, [curves[0], [row[:1] for row in curves[1]], curves[2]])
    assert uneven.ci is None and uneven.ci_reason.startswith("the scales have different seed counts (2, 1, 2)")
    assert uneven.seed_exponents == []
    at_edge = fit_scaling([1, 4], GRID, [parabolas(0.0, offsets=(0.5, 0.6)), curves[1]])
    assert at_edge.ci is None and at_edge.at_edge == [True, False]
    assert at_edge.ci_reason.startswith("the best x is at the grid's edge at scale 1")


def test_stats_note_grid_and_smoothed_exponents_disagree():
    """Vertices (log2) 2.49, 3.49, 2.51, 2.51 at s = 1, 2, 4, 8: the grid optima 4, 8, 8, 8 rise, the vertices fall."""
    fit = fit_scaling([1, 2, 4, 8], GRID, [parabolas(u) for u in (2.49, 3.49, 2.51, 2.51)])
    assert fit.grid_optima == [4.0, 8.0, 8.0, 8.0] and fit.grid_exponent == pytest.approx(0.3)
    assert fit.ci is None  # one seed: exponent is the midpoint of the windows' exponents (exact parabolas: equal)
    assert fit.exponent == pytest.approx(-0.46 / 5, abs=1e-9) and fit.curve_exponent == pytest.approx(-0.092)
    assert fit.sign_disagrees and fit.half_width == pytest.approx(math.log(1.25) / math.log(8))
    assert fit.note() == (
        "The grid's best points move by a factor of 1.87 from scale 1 to 8 (exponent +0.30) but the smoothed estimate"
        " by 0.826 (exponent -0.09), further apart than the tolerance x1.25: the estimate's movement comes from"
        " smoothed optima inside grid cells; a finer grid or more seeds would settle it."
    )
    # at a tolerance of x2.5 (half-width 0.44 > 0.39) the two are close enough: no note
    wide = fit_scaling([1, 2, 4, 8], GRID, [parabolas(u) for u in (2.49, 3.49, 2.51, 2.51)], tolerance=2.5)
    assert wide.note() is None


def hand_fit(
    exponent,
    ci,
    reason=None,
    scales=(100.0, 250.0, 500.0),
    xs=(2.0, 4.0, 8.0, 16.0),
    grid_exponent=0.0,
    grid_optima=(),
    curve_exponent=math.nan,
):
    sign = (exponent * grid_exponent < 0) and min(abs(exponent), abs(grid_exponent)) >= 1e-9
    return ScalingFit(
        exponent,
        ci,
        reason,
        0.95,
        [],
        list(grid_optima),
        [],
        grid_exponent,
        sign,
        [],
        scales=list(scales),
        xs=list(xs),
        curve_exponent=curve_exponent,
    )


def test_stats_note_compares_grid_and_estimate_by_tolerance_not_by_sign():
    """The issue's two cases: +0.000 (rounding) against -0.09 fired; -0.000 against -0.465 did not."""
    scales = [1.0, 2.0, 4.0, 8.0]  # half-width log(1.25) / log(8) = 0.107
    small = hand_fit(-0.09, (-0.19, 0.01), scales=scales, grid_exponent=4.6e-16, grid_optima=[8.0] * 4)
    assert small.note() is None and not small.sign_disagrees
    large = hand_fit(-0.465, (-0.62, -0.31), scales=scales, grid_exponent=-1e-17, grid_optima=[8.0] * 4)
    assert not large.sign_disagrees
    assert large.note() == (
        "The best grid point is 8 at every scale, but the estimate moves the best x by a factor of 0.38 from scale 1"
        " to 8 (exponent -0.47), more than the tolerance x1.25: the movement comes from smoothed optima inside one"
        " grid cell; a finer grid or more seeds would settle it."
    )
    # just inside and just outside the half-width
    edge = math.log(1.25) / math.log(8)
    assert hand_fit(-edge + 1e-6, None, scales=scales, grid_optima=[8.0] * 4).note() is None
    assert hand_fit(-edge - 1e-6, None, scales=scales, grid_optima=[8.0] * 4).note() is not None
    # sign_disagrees treats a rounding-sized exponent as 0 (fit_scaling sets it from _sign), and still sees real
    # opposite signs
    assert [_sign(v) for v in (4.6e-16, -1e-10, 0.0, 2e-9, -0.3)] == [0, 0, 0, 1, -1]
    assert hand_fit(-0.3, None, grid_exponent=1e-12).sign_disagrees is False
    assert hand_fit(-0.3, None, grid_exponent=0.2).sign_disagrees is True


def test_stats_note_optimum_moves_within_one_grid_cell():
    fit = fit_scaling([1, 4, 16], GRID, [parabolas(u, offsets=(0.0, 0.01)) for u in (5.4, 5.1, 4.8)])
    assert fit.grid_optima == [32.0] * 3 and fit.grid_exponent == 0.0 and not fit.sign_disagrees
    assert fit.exponent == pytest.approx(-0.15, abs=1e-9) and fit.ci == pytest.approx((-0.15, -0.15), abs=1e-9)
    assert fit.note() == (
        "The best grid point is 32 at every scale, but the estimate moves the best x by a factor of 0.66 from scale 1"
        " to 16 (exponent -0.15), more than the tolerance x1.25: the movement comes from smoothed optima inside one"
        " grid cell; a finer grid or more seeds would settle it."
    )
    outside = hand_fit(-0.05, (-0.2, 0.1), curve_exponent=-0.3)
    assert outside.note() == (
        "The seed-mean curves' exponent -0.30 lies outside the interval [-0.20, +0.10]: the seeds' own optima"
        " disagree with their mean's."
    )
    assert hand_fit(-0.05, (-0.2, 0.1), curve_exponent=-0.2).note() is None  # an end of the interval is inside


def test_stats_column_optima_smoothed_optimum_for_every_column():
    rng = np.random.default_rng(3)
    grid = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]
    table = rng.uniform(0.0, 1.0, (6, 400))
    table[rng.uniform(size=table.shape) < 0.05] = math.nan  # some diverged runs
    table[:, 0] = [0.5, 0.4, 0.4, 0.6, 0.7, 0.8]  # a tie: the first best
    table[:, 1] = [0.5, 0.4, 0.3, 0.2, 0.1, 0.0]  # the best at an edge
    for mode in ("min", "max"):
        for window in (1, 2):
            fast = _column_optima(grid, table, mode, window)
            slow = [smoothed_optimum(grid, list(table[:, j]), mode, window).tau_epoch for j in range(table.shape[1])]
            np.testing.assert_allclose(fast, slow, rtol=1e-9)


# --- coverage of the interval, by simulation ---------------------------------------------------------------------

#: The simulated regimes (fit_scaling's docstring; benchmarks/stats_coverage.py prints them with more runs): curves
#: in log2 x with the optimum x*(s) = x*(1) s^e, e uniform in [-1.2, 0.2], x*(1) anywhere within a grid cell, on a
#: x2 grid. Each: (shape, curvature or slope left of the optimum, right of it [per octave^2, or per octave for a V],
#: sd of a seed's offset, sd of the noise at each grid point, the noise's correlation between neighbouring grid
#: points, its correlation across scales for one seed). The first is the digits width demo's (docs/width_demo.rst).
REGIMES = {
    "demo-like parabola": ("parabola", 0.04, 0.04, 0.02, 0.02, 0.0, 0.0),
    "asymmetric 0.06/0.03": ("parabola", 0.06, 0.03, 0.02, 0.01, 0.0, 0.0),
    "asymmetric 0.08/0.02": ("parabola", 0.08, 0.02, 0.02, 0.01, 0.0, 0.0),
    "V-shaped 0.05": ("V", 0.05, 0.05, 0.02, 0.01, 0.0, 0.0),
    "V-shaped 0.08/0.03": ("V", 0.08, 0.03, 0.02, 0.01, 0.0, 0.0),
    "correlated noise": ("parabola", 0.04, 0.04, 0.02, 0.02, 0.8, 0.5),
    "correlated noise, asymmetric 0.06/0.03": ("parabola", 0.06, 0.03, 0.02, 0.01, 0.8, 0.5),
}
SIM_GRID = 2.0 ** np.arange(-2.0, 13.0)
FINDER_GRID = np.asarray(DEFAULT_TAU_EPOCHS)  # tau_epoch 2 .. 128, 7 points
WIDTHS = (1.0, 4.0, 16.0)
SIZES = (0.1, 0.25, 0.5, 1.0)  # dataset sizes as fractions of N: the scale's unit cancels in the exponent
RUNS = 1000  # binomial standard error of a 95 % coverage: 0.7 points
#: issue 36's shape that changes with scale, on the finder's default grid over dataset sizes 0.1-1: curvature 0.14 to
#: 0.013 per octave² (the geometric mean of the two sides), left/right rise 1.2 to 2.1 (flatter toward long
#: tau_epoch), log-linear in the scale; a pair is a side's curvature at the smallest and the largest scale
CHANGING = (
    "parabola",
    (0.14 * math.sqrt(1.2), 0.013 * math.sqrt(2.1)),
    (0.14 / math.sqrt(1.2), 0.013 / math.sqrt(2.1)),
    0.02,
    0.005,
    0.0,
    0.0,
)


def across(side, log_s):
    """A side's curvature at each scale: a constant, or ``(first, last)`` log-linear in ``log`` scale."""
    if not isinstance(side, tuple):
        return np.full(len(log_s), float(side))
    where = (log_s - log_s[0]) / (log_s[-1] - log_s[0])
    return np.exp(np.log(side[0]) + where * math.log(side[1] / side[0]))


def simulate(regime, seeds, rng, scales=WIDTHS, runs=RUNS, grid=SIM_GRID):
    """``(true exponents, curves)``: curves ``runs x scales x grid x seeds``. On the wide ``SIM_GRID`` the optimum at
    scale 1 lies within the cell [2^5, 2^6]; on ``FINDER_GRID``, at the scales' geometric centre within [2^3.5,
    2^4.5] (the grid's middle cell)."""
    shape, left, right, sd_offset, sd_point, rho_grid, rho_scale = regime
    log_grid, log_s = np.log2(grid), np.log2(scales)
    exponents = rng.uniform(-1.2, 0.2, runs)
    if grid is SIM_GRID:
        best = rng.uniform(5.0, 6.0, runs)[:, None] + exponents[:, None] * log_s
    else:
        best = rng.uniform(3.5, 4.5, runs)[:, None] + exponents[:, None] * (log_s - log_s.mean())
    d = log_grid[None, None, :, None] - best[:, :, None, None]
    left, right = across(left, log_s)[None, :, None, None], across(right, log_s)[None, :, None, None]
    curves = np.where(d < 0, left, right) * (d**2 if shape == "parabola" else np.abs(d))
    curves = curves + sd_offset * rng.standard_normal((runs, len(scales), 1, seeds))

    def ar1(size):  # unit-variance noise, correlated rho_grid between neighbouring grid points
        z = rng.standard_normal(size)
        for g in range(1, size[2]):
            z[:, :, g] = rho_grid * z[:, :, g - 1] + math.sqrt(1 - rho_grid**2) * z[:, :, g]
        return z

    shared = ar1((runs, 1, len(log_grid), seeds))  # the seed's part common to every scale
    own = ar1((runs, len(scales), len(log_grid), seeds))
    return exponents, curves + sd_point * (rho_scale * shared + math.sqrt(1 - rho_scale**2) * own)


def batch_fits(curves, scales, seeds, level, grid=SIM_GRID):
    """fit_scaling's ``ci`` for every run on its first ``seeds`` seeds, vectorized: ``(low, high)``, nan where
    fit_scaling gives no interval (the seed-mean optimum at the grid's edge)."""
    runs = curves.shape[0]
    part = curves[..., :seeds]
    tables = [np.concatenate(list(part[:, i]), axis=1) for i in range(len(scales))]  # grid x (runs * seeds)
    exps = _seed_exponents(list(scales), list(grid), tables, "min", *_smoothers(1))  # fit_scaling's at window 1
    low, high, _, _ = _envelope(exps.reshape(len(exps), runs, seeds), level)
    edge = np.isin(part.mean(axis=-1).argmin(axis=-1), [0, len(grid) - 1]).any(axis=-1)
    return np.where(edge, np.nan, low), np.where(edge, np.nan, high)


def former_fits(curves, scales, seeds, level, grid):
    """Issue 36's interval, before the lopsided parabola: the parabolas through 1 and 2 neighbours, their
    t-intervals' envelope widened on each side by the whole spread of their means."""
    runs = curves.shape[0]
    part = curves[..., :seeds]
    tables = [np.concatenate(list(part[:, i]), axis=1) for i in range(len(scales))]
    exps = _seed_exponents(list(scales), list(grid), tables, "min", (1, 2)).reshape(2, runs, seeds)
    means = exps.mean(axis=-1)
    half = t_quantile((1 + level) / 2, seeds - 1) * exps.std(axis=-1, ddof=1) / math.sqrt(seeds)
    spread = means.max(axis=0) - means.min(axis=0)
    edge = np.isin(part.mean(axis=-1).argmin(axis=-1), [0, len(grid) - 1]).any(axis=-1)
    low, high = (means - half).min(axis=0) - spread, (means + half).max(axis=0) + spread
    return np.where(edge, np.nan, low), np.where(edge, np.nan, high)


def staged_fits(curves, scales, axis_rules, max_seeds, grid=SIM_GRID, fits=batch_fits):
    """The interval where ``seeds="auto"`` stops: at each of seed_stages(max_seeds), the interval at
    staged_level; stop at the first that decides every rule (rules.all_decided at the default tolerance)."""
    stages = seed_stages(max_seeds)
    level = staged_level(0.95, len(stages))
    delta = rules.half_width(rules.DEFAULT_TOLERANCE, scales)
    low, high = np.full(curves.shape[0], np.nan), np.full(curves.shape[0], np.nan)
    going = np.ones(curves.shape[0], dtype=bool)
    for k in stages:
        lo, hi = fits(curves, scales, k, level, grid=grid)
        low[going], high[going] = lo[going], hi[going]
        decided = [np.isfinite(a) and rules.all_decided((a, b), axis_rules, delta) for a, b in zip(lo, hi)]
        going &= ~np.array(decided)
    return low, high


def coverage(exponents, low, high):
    given = np.isfinite(low)
    return float(np.mean((low <= exponents) & (exponents <= high) & given) / np.mean(given))


def test_stats_batch_simulation_fit_scaling():
    """The coverage test's vectorized intervals are fit_scaling's, run by run."""
    rng = np.random.default_rng(1)
    for regime in ("V-shaped 0.08/0.03", "correlated noise"):
        exponents, curves = simulate(REGIMES[regime], 5, rng, runs=15)
        low, high = batch_fits(curves, WIDTHS, 5, 0.95)
        for run in range(15):
            fit = fit_scaling(WIDTHS, SIM_GRID, list(curves[run]))
            assert (fit.ci is None) == np.isnan(low[run])
            if fit.ci is not None:
                assert fit.ci == pytest.approx((low[run], high[run]), abs=1e-12)


@pytest.mark.slow
def test_stats_interval_reaches_nominal_coverage_at_every_allowed_seed_count():
    """>= 93 % at 2-8 seeds in every regime, and where seeds="auto" stops (stages 3, 5, 8, 12) for the width rules
    over widths 1-16 and the dataset-size rules over N 0.1-1; the estimate's mean error is within 0.02."""
    rng = np.random.default_rng(2026)
    for name, regime in REGIMES.items():
        for seeds in range(MIN_SEEDS_FOR_INTERVAL, 9):
            exponents, curves = simulate(regime, seeds, rng)
            low, high = batch_fits(curves, WIDTHS, seeds, 0.95)
            assert coverage(exponents, low, high) >= 0.93, (name, seeds, coverage(exponents, low, high))
            assert abs(np.nanmean((low + high) / 2 - exponents)) < 0.02, (name, seeds)
        for scales, axis_rules in ((WIDTHS, axes.WIDTH_RULES), (SIZES, axes.SIZE_RULES)):
            exponents, curves = simulate(regime, 12, rng, scales=scales)
            low, high = staged_fits(curves, scales, axis_rules, 12)
            assert coverage(exponents, low, high) >= 0.93, (name, scales, coverage(exponents, low, high))
    curves = [np.zeros((len(SIM_GRID), MIN_SEEDS_FOR_INTERVAL - 1)) + (np.log2(SIM_GRID)[:, None] - 5) ** 2] * 3
    assert fit_scaling(WIDTHS, SIM_GRID, curves).ci is None  # below the minimum: no interval


def test_stats_changing_shape_covers_at_8_seeds_in_short_run():
    """The quick suite's look at CHANGING (the slow tests below have the full check): 300 runs at 8 seeds, SE 1.3
    points; the new interval >= 93 %, the former one below (about 83 %)."""
    rng = np.random.default_rng(8)
    exponents, curves = simulate(CHANGING, 8, rng, scales=SIZES, runs=300, grid=FINDER_GRID)
    assert coverage(exponents, *batch_fits(curves, SIZES, 8, 0.95, grid=FINDER_GRID)) >= 0.93
    assert coverage(exponents, *former_fits(curves, SIZES, 8, 0.95, FINDER_GRID)) < 0.93


@pytest.mark.slow
def test_stats_coverage_holds_where_curves_shape_changes_with_scale():
    """Issue 36's regime (CHANGING: sharp and nearly symmetric at the smallest dataset size, flat and lopsided at the
    largest; the finder's 7-point grid): >= 93 % at 2-8 seeds and where seeds="auto" stops, 600 runs each (SE 0.9
    points); the former interval (two parabolas) falls below 93 % here at 5 and 8 seeds and staged, so the regime
    tells the two apart."""
    rng = np.random.default_rng(36)
    runs = 600
    for seeds in range(MIN_SEEDS_FOR_INTERVAL, 9):
        exponents, curves = simulate(CHANGING, seeds, rng, scales=SIZES, runs=runs, grid=FINDER_GRID)
        low, high = batch_fits(curves, SIZES, seeds, 0.95, grid=FINDER_GRID)
        assert coverage(exponents, low, high) >= 0.93, (seeds, coverage(exponents, low, high))
        if seeds in (5, 8):
            former = coverage(exponents, *former_fits(curves, SIZES, seeds, 0.95, FINDER_GRID))
            assert former < 0.93, (seeds, former)
    for scales, axis_rules in ((WIDTHS, axes.WIDTH_RULES), (SIZES, axes.SIZE_RULES)):
        exponents, curves = simulate(CHANGING, 12, rng, scales=scales, runs=runs, grid=FINDER_GRID)
        low, high = staged_fits(curves, scales, axis_rules, 12, grid=FINDER_GRID)
        assert coverage(exponents, low, high) >= 0.93, (scales, coverage(exponents, low, high))
        former = staged_fits(curves, scales, axis_rules, 12, grid=FINDER_GRID, fits=former_fits)
        assert coverage(exponents, *former) < 0.93, (scales, coverage(exponents, *former))


def test_stats_note_none_grid_and_smoothed_optima_stay_put():
    still = ScalingFit(0.0, None, "x", 0.95, [8.0, 8.0], [8.0, 8.0], [[8.0], [8.0]], 0.0, False, [], scales=[1, 4])
    assert still.note() is None
    # a hand-made fit without scales has no range to compare over: no grid sentence
    moving = ScalingFit(1.0, None, "x", 0.95, [6.0, 12.0], [8.0, 8.0], [[8.0], [8.0]], 0.0, False, [])
    assert moving.note() is None
    with pytest.raises(ValueError, match=r"^`half_width\(scales=\[\]\)` is not valid"):
        _ = moving.half_width


def test_stats_without_interval_exponent_midpoint_over_smoothers_not_seeds():
    # 3 seeds of exact parabolas (every smoother finds each seed's vertex), their vertices moving by different
    # amounts, so their exponents are uneven; the optimum at the smallest scale is at the grid's edge (no interval)
    scales = [1, 4, 16]
    vertices = [(-1.0, 2.0, 1.0), (-1.0, 2.0, 1.0), (-1.0, 2.4, 2.8)]  # log2 per seed at s = 1, 4, 16
    curves = [
        [[0.1 * (math.log2(x) - v[k]) ** 2 + 0.1 * j for j, v in enumerate(vertices)] for x in GRID] for k in range(3)
    ]
    fit = fit_scaling(scales, GRID, curves)
    assert fit.ci is None and fit.at_edge == [True, False, False]
    optima = [[1.0, 2 ** v[1], 2 ** v[2]] for v in vertices]  # the edge's grid point, then each vertex
    by_hand = [np.polyfit(np.log(scales), np.log(o), 1)[0] for o in optima]
    assert fit.seed_exponents == pytest.approx(by_hand, abs=1e-9)
    # the smoothers agree, so the midpoint of their means over seeds is the seeds' mean (not the seeds' midrange)
    assert fit.exponent == pytest.approx(np.mean(by_hand), abs=1e-9)
    assert abs(np.mean(by_hand) - (max(by_hand) + min(by_hand)) / 2) > 0.05
