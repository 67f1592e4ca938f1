"""The finder axes' statistics (issue 20, part 3): paired interior test, scaling exponent, its interval's coverage.

Pure numpy, no Lightning: exact values on hand-made curves, and a simulation of curves like the digits width
demo's that checks the interval's coverage at every seed count that gets one.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys

import numpy as np
import pytest

from lightning_tau.tuner.curve import smoothed_optimum
from lightning_tau.tuner.stats import (
    MIN_SEEDS_FOR_INTERVAL,
    ScalingFit,
    _column_optima,
    fit_scaling,
    paired_interior,
    per_seed_optima,
)
from lightning_tau.tuner.tdist import t_quantile, t_sf

GRID = [2.0**k for k in range(7)]  # 1 .. 64, one octave apart


def parabolas(best_log2, offsets=(0.0,), curvature=0.1, grid=GRID):
    """``grid x seeds``: ``curvature (log2 x - best)^2 + offset`` per seed (column)."""
    return [[curvature * (math.log2(x) - best_log2) ** 2 + off for off in offsets] for x in grid]


def test_tuner_stats_imports_without_lightning_or_torch():
    code = (
        "import sys, lightning_tau.tuner.stats, lightning_tau.tuner.verdicts, lightning_tau.tuner.result;"
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


# --- Student's t -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "df", "expected"),
    [  # textbook values
        (0.975, 1, 12.706204736174698),
        (0.975, 2, 4.302652729911275),
        (0.975, 3, 3.182446305284263),
        (0.975, 4, 2.7764451051977934),
        (0.975, 10, 2.2281388519649385),
        (0.95, 29, 1.6991270265334972),
        (0.6, 5, 0.26718086570308856),
        (0.025, 7, -2.3646242515927844),
    ],
)
def test_tuner_stats_t_quantile_matches_tables(p, df, expected):
    assert t_quantile(p, df) == pytest.approx(expected, rel=1e-10)
    assert t_sf(expected, df) == pytest.approx(1 - p, rel=1e-9)


def test_tuner_stats_t_sf_closed_forms():
    for t in (-3.0, -0.4, 0.0, 0.7, 2.5, 40.0):
        assert t_sf(t, 1) == pytest.approx(0.5 - math.atan(t) / math.pi, abs=1e-14)
        assert t_sf(t, 2) == pytest.approx(0.5 * (1 - t / math.sqrt(t * t + 2)), abs=1e-14)
    assert t_sf(math.inf, 4) == 0.0 and t_sf(-math.inf, 4) == 1.0
    with pytest.raises(ValueError, match=r"`t_quantile\(p=1.0\)` is not valid"):
        t_quantile(1.0, 3)
    with pytest.raises(ValueError, match=r"`t_sf\(df=0\)` is not valid: use a positive integer"):
        t_sf(1.0, 0)


# --- paired interior test ----------------------------------------------------------------------------------------


def test_tuner_stats_paired_test_sees_a_gap_that_the_seed_spread_hides():
    """Seeds 0.1 apart everywhere (shared offsets), the middle point 0.02-0.03 better for every seed."""
    curve = np.array([[0.62, 0.52, 0.43], [0.60, 0.50, 0.40], [0.63, 0.51, 0.42]])
    test = paired_interior(curve)
    assert test.interior and test.reason == "beats both neighbours (paired, p<0.05)" and test.level == 0.05
    # d = (0.02, 0.02, 0.03): t = 7 on 2 df; d = (0.03, 0.01, 0.02): t = 2 sqrt(3)
    assert test.p_lower == pytest.approx(0.5 * (1 - 7 / math.sqrt(51)), rel=1e-9)
    assert test.p_upper == pytest.approx(0.5 * (1 - 2 * math.sqrt(3) / math.sqrt(14)), rel=1e-9)
    # the old rule (mean gap > the larger seed std) calls it flat
    means, stds = curve.mean(axis=1), curve.std(axis=1, ddof=1)
    assert not means[0] - means[1] > max(stds[0], stds[1])
    # the same gaps with the seeds shuffled at one grid point are no longer consistent: not interior
    shuffled = curve.copy()
    shuffled[0] = shuffled[0][[2, 0, 1]]
    assert not paired_interior(shuffled).interior


def test_tuner_stats_paired_interior_edges_one_seed_level_and_mode():
    assert paired_interior([[0.6], [0.5], [0.7]]) == paired_interior([[0.6], [0.5], [0.7]], best_index=1)
    one = paired_interior([[0.6], [0.5], [0.7]])
    assert (one.interior, one.p_lower, one.p_upper, one.reason) == (False, None, None, "1 seed: no paired test")
    edge = paired_interior([[0.4, 0.5], [0.5, 0.6], [0.7, 0.8]])
    assert (edge.interior, edge.p_lower, edge.reason) == (False, None, "at the grid edge")
    assert edge.p_upper == pytest.approx(0.0, abs=1e-12)  # every seed 0.1 worse: no spread, p = 0
    high = paired_interior([[0.5, 0.6], [0.7, 0.8], [0.4, 0.5]])
    assert high.p_upper is None and high.p_lower == pytest.approx(0.0, abs=1e-12) and high.reason == "at the grid edge"
    # p = 0.0371 against the upper neighbour: interior at 0.05, not at 0.01
    curve = [[0.62, 0.52, 0.43], [0.60, 0.50, 0.40], [0.63, 0.51, 0.42]]
    strict = paired_interior(curve, level=0.01)
    assert not strict.interior and strict.reason == "does not beat the upper neighbour (paired, p=0.037)"
    flipped = paired_interior([[-v for v in row] for row in curve], mode="max")
    assert flipped.interior and flipped.p_lower == pytest.approx(paired_interior(curve).p_lower)
    neither = paired_interior([[0.5, 0.6], [0.45, 0.62], [0.5, 0.6]], best_index=1)
    assert neither.reason.startswith("beats neither neighbour (paired, p=")


def test_tuner_stats_paired_interior_diverged_runs():
    nan = math.nan
    # the upper neighbour diverged on every seed: beaten; the lower one is 0.1 worse for both seeds
    test = paired_interior([[0.6, 0.7], [0.5, 0.6], [nan, math.inf]], best_index=1)
    assert test.interior and test.p_upper == 0.0
    # the best point diverged where its neighbour did not: p = 1
    assert paired_interior([[0.6, 0.7], [0.5, nan], [0.7, 0.8]], best_index=1).p_lower == 1.0
    with pytest.raises(ValueError, match="every grid point has a non-finite value"):
        paired_interior([[nan, 0.5], [0.4, nan]])


def test_tuner_stats_per_seed_optima():
    nan = math.nan  # the third seed diverged everywhere
    values = [[0.9, 0.5, nan], [0.7, 0.6, nan], [0.8, 0.5, nan]]
    assert per_seed_optima([8.0, 16.0, 32.0], values) == pytest.approx([16.0, 8.0, nan], nan_ok=True)
    assert per_seed_optima([8.0, 16.0, 32.0], values, mode="max")[:2] == [8.0, 16.0]


SHAPE_HINT = (
    "use one row per grid point and one column per seed (grid x seeds), e.g. [[0.5], [0.4], [0.6]] for 3 grid points"
    " and 1 seed."
)
INCREASING = "is not valid: use positive numbers in increasing order."


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: paired_interior([[0.5, 0.6], [0.4, 0.5]], best_index=2),
            "`paired_interior(best_index=2)` is not valid: use a row index from 0 to 1.",
        ),
        (
            lambda: paired_interior([[0.5, 0.6], [0.4, 0.5]], best_index=True),
            "`paired_interior(best_index=True)` is not valid: use a row index from 0 to 1.",
        ),
        (
            lambda: paired_interior([[0.5, 0.6], [0.4, 0.5]], best_index=-1),
            "`paired_interior(best_index=-1)` is not valid: use a row index from 0 to 1.",
        ),
        (
            lambda: paired_interior([0.5, 0.4, 0.6]),
            f"`paired_interior(values=...)` is not valid: got shape (3,); {SHAPE_HINT}",
        ),
        (lambda: paired_interior([[]]), f"`paired_interior(values=...)` is not valid: got shape (1, 0); {SHAPE_HINT}"),
        (
            lambda: paired_interior([[0.5], [0.4]], mode="best"),
            "`paired_interior(mode='best')` is not valid: use 'min' (a loss) or 'max'.",
        ),
        (
            lambda: paired_interior([[0.5], [0.4]], level=1.5),
            "`paired_interior(level=1.5)` is not valid: use a number strictly between 0 and 1.",
        ),
        (
            lambda: paired_interior([[0.5]], level=True),
            "`paired_interior(level=True)` is not valid: use a number strictly between 0 and 1.",
        ),
        (
            lambda: paired_interior([[0.5]], level=0),
            "`paired_interior(level=0)` is not valid: use a number strictly between 0 and 1.",
        ),
        (
            lambda: paired_interior([[0.5]], level="0.05"),
            "`paired_interior(level='0.05')` is not valid: use a number strictly between 0 and 1.",
        ),
        (
            lambda: per_seed_optima([1.0, 2.0], [[0.5], [0.4], [0.6]]),
            "`per_seed_optima(values=...)` is not valid: it has 3 rows for 2 grid points in `xs`.",
        ),
        (
            lambda: per_seed_optima([1.0, 2.0], [[0.5], [0.4]], mode="best"),
            "`per_seed_optima(mode='best')` is not valid: use 'min' (a loss) or 'max'.",
        ),
        (lambda: per_seed_optima([2.0, 1.0], [[0.5], [0.4]]), f"`per_seed_optima(xs=[2.0, 1.0])` {INCREASING}"),
        (lambda: per_seed_optima([], [[0.5]]), "`per_seed_optima(xs=[])` is not valid: it needs at least 1 values."),
        (
            lambda: per_seed_optima(["a"], [[0.5]]),
            "`per_seed_optima(xs=['a'])` is not valid: use a sequence of positive numbers.",
        ),
        (
            lambda: per_seed_optima([1.0, 2.0], [["a"], [0.4]]),
            "`per_seed_optima(values=...)` is not valid: use numbers, one row per grid point and one column per seed.",
        ),
        (
            lambda: per_seed_optima([1.0, 2.0], [0.5, 0.4]),
            f"`per_seed_optima(values=...)` is not valid: got shape (2,); {SHAPE_HINT}",
        ),
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
        (lambda: t_quantile(0.5, 1.5), "`t_quantile(df=1.5)` is not valid: use a positive integer."),
        (lambda: t_quantile(0.0, 3), "`t_quantile(p=0.0)` is not valid: use a probability strictly between 0 and 1."),
        (lambda: t_sf(1.0, True), "`t_sf(df=True)` is not valid: use a positive integer."),
    ],
)
def test_tuner_stats_bad_input(call, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        call()


# --- the scaling exponent ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("window", [1, 2])
def test_tuner_stats_exact_parabolas_give_the_planted_exponent(window):
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


def test_tuner_stats_interval_is_a_t_interval_over_per_seed_exponents():
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


def test_tuner_stats_no_interval_and_why():
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


def test_tuner_stats_note_when_grid_and_smoothed_exponents_disagree_in_sign():
    """Vertices (log2) 2.49, 3.49, 2.51, 2.51 at s = 1, 2, 4, 8: the grid optima 4, 8, 8, 8 rise, the vertices fall."""
    fit = fit_scaling([1, 2, 4, 8], GRID, [parabolas(u) for u in (2.49, 3.49, 2.51, 2.51)])
    assert fit.grid_optima == [4.0, 8.0, 8.0, 8.0] and fit.grid_exponent == pytest.approx(0.3)
    assert fit.exponent == pytest.approx(-0.46 / 5, abs=1e-9)
    assert fit.sign_disagrees
    assert fit.note().startswith("The grid optima give an exponent of +0.30 but the smoothed optima -0.09: opposite")


def test_tuner_stats_note_when_the_optimum_moves_within_one_grid_cell():
    fit = fit_scaling([1, 4, 16], GRID, [parabolas(u, offsets=(0.0, 0.01)) for u in (5.3, 5.1, 4.9)])
    assert fit.grid_optima == [32.0] * 3 and fit.grid_exponent == 0.0 and not fit.sign_disagrees
    assert fit.exponent == pytest.approx(-0.1, abs=1e-9)
    assert fit.note() == (
        "The best grid point is 32 at every scale: the exponent -0.10 comes from the smoothed optimum moving within"
        " one grid cell."
    )
    outside = ScalingFit(-0.3, (-0.2, 0.1), None, 0.95, [], [], [], -0.3, False, [])
    assert "lies outside the interval of the per-seed exponents [-0.20, +0.10]" in outside.note()


def test_tuner_stats_column_optima_is_smoothed_optimum_for_every_column():
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

#: The simulated regime (see fit_scaling's docstring): the digits width demo's curvature near the optimum and
#: seed spread (docs/width_demo.rst), a x2 grid, widths s = 1, 4, 16.
SIM_GRID = 2.0 ** np.arange(-2.0, 13.0)
SIM_SCALES = np.array([1.0, 4.0, 16.0])
CURVATURE, SD_OFFSET, SD_POINT = 0.04, 0.02, 0.02  # per octave^2; a seed's shared offset; per grid point
RUNS = 500  # binomial standard error of a 95 % coverage: 1 point


def simulated_coverage(seeds: int, rng: np.random.Generator) -> tuple[float, float, float]:
    """Coverage of the true exponent, mean error of ``exponent``, share of intervals containing ``exponent``."""
    log_grid = np.log2(SIM_GRID)
    exponents = rng.uniform(-1.2, 0.2, RUNS)
    best = rng.uniform(5.0, 6.0, RUNS)[:, None] + exponents[:, None] * np.log2(SIM_SCALES)  # log2 x*, run x scale
    curves = CURVATURE * (log_grid[None, None, :, None] - best[:, :, None, None]) ** 2
    curves = curves + SD_OFFSET * rng.standard_normal((RUNS, len(SIM_SCALES), 1, seeds))
    curves = curves + SD_POINT * rng.standard_normal((RUNS, len(SIM_SCALES), len(SIM_GRID), seeds))
    covered, errors, contains = [], [], []
    for run in range(RUNS):
        fit = fit_scaling(SIM_SCALES, SIM_GRID, list(curves[run]))
        low, high = fit.ci
        covered.append(low <= exponents[run] <= high)
        errors.append(fit.exponent - exponents[run])
        contains.append(low <= fit.exponent <= high)
    return float(np.mean(covered)), float(np.mean(errors)), float(np.mean(contains))


def test_tuner_stats_interval_reaches_nominal_coverage_at_every_allowed_seed_count():
    rng = np.random.default_rng(2026)
    for seeds in range(MIN_SEEDS_FOR_INTERVAL, 7):
        coverage, bias, contains = simulated_coverage(seeds, rng)
        assert abs(coverage - 0.95) <= 0.05, (seeds, coverage)
        assert abs(bias) < 0.02, (seeds, bias)
        assert contains >= 0.95, (seeds, contains)
    curves = [np.zeros((len(SIM_GRID), MIN_SEEDS_FOR_INTERVAL - 1)) + (np.log2(SIM_GRID)[:, None] - 5) ** 2] * 3
    assert fit_scaling(SIM_SCALES, SIM_GRID, curves).ci is None  # below the minimum: no interval


def test_tuner_stats_best_index_zero_is_the_low_edge():
    test = paired_interior([[0.4, 0.5], [0.5, 0.6], [0.7, 0.8]], best_index=0)
    assert (test.interior, test.p_lower, test.reason) == (False, None, "at the grid edge")
    assert test.p_upper == pytest.approx(0.0, abs=1e-12)


def test_tuner_stats_note_is_none_when_the_grid_and_the_smoothed_optima_stay_put():
    still = ScalingFit(0.0, None, "x", 0.95, [8.0, 8.0], [8.0, 8.0], [[8.0], [8.0]], 0.0, False, [])
    assert still.note() is None
    moving = ScalingFit(1.0, None, "x", 0.95, [6.0, 12.0], [8.0, 8.0], [[8.0], [8.0]], 0.0, False, [])
    assert moving.note() == (
        "The best grid point is 8 at every scale: the exponent +1.00 comes from the smoothed optimum moving within one"
        " grid cell."
    )


def test_tuner_stats_one_grid_point_and_one_comparable_pair():
    alone = paired_interior([[0.5, 0.6]])
    assert (alone.interior, alone.p_lower, alone.p_upper, alone.reason) == (
        False,
        None,
        None,
        "1 grid point: no neighbour",
    )
    assert per_seed_optima([4.0], [[0.5, math.nan]]) == pytest.approx([4.0, math.nan], nan_ok=True)
    # seed 1 diverged at all three points: one pair left to compare on each side, no t-test: p = 1
    test = paired_interior([[0.6, math.nan], [0.5, math.nan], [0.7, math.nan]], best_index=1)
    assert (test.p_lower, test.p_upper, test.interior) == (1.0, 1.0, False)
    assert test.reason == "beats neither neighbour (paired, p=1 and 1)"
