"""``lightning_tau.tuner.analysis.grid_best``: the paired interior test of a curve's best grid point (exact p-values on
hand-made curves, the grid's edges, one seed, diverged runs) and each seed's best grid point; bad input is a one-line
error naming the argument."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from lightning_tau.tuner.analysis.grid_best import paired_interior, per_seed_optima

SHAPE_HINT = (
    "use one row per grid point and one column per seed (grid x seeds), e.g. [[0.5], [0.4], [0.6]] for 3 grid points"
    " and 1 seed."
)
INCREASING = "is not valid: use positive numbers in increasing order."


def test_paired_test_sees_gap_seed_spread_hides():
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


def test_paired_interior_edges_one_seed_level_and_mode():
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


def test_paired_interior_diverged_runs():
    nan = math.nan
    # the upper neighbour diverged on every seed: beaten; the lower one is 0.1 worse for both seeds
    test = paired_interior([[0.6, 0.7], [0.5, 0.6], [nan, math.inf]], best_index=1)
    assert test.interior and test.p_upper == 0.0
    # the best point diverged where its neighbour did not: p = 1
    assert paired_interior([[0.6, 0.7], [0.5, nan], [0.7, 0.8]], best_index=1).p_lower == 1.0
    with pytest.raises(ValueError, match="every grid point has a non-finite value"):
        paired_interior([[nan, 0.5], [0.4, nan]])


def test_per_seed_optima():
    nan = math.nan  # the third seed diverged everywhere
    values = [[0.9, 0.5, nan], [0.7, 0.6, nan], [0.8, 0.5, nan]]
    assert per_seed_optima([8.0, 16.0, 32.0], values) == pytest.approx([16.0, 8.0, nan], nan_ok=True)
    assert per_seed_optima([8.0, 16.0, 32.0], values, mode="max")[:2] == [8.0, 16.0]


def test_index_zero_low_edge():
    test = paired_interior([[0.4, 0.5], [0.5, 0.6], [0.7, 0.8]], best_index=0)
    assert (test.interior, test.p_lower, test.reason) == (False, None, "at the grid edge")
    assert test.p_upper == pytest.approx(0.0, abs=1e-12)


def test_one_grid_point_and_one_comparable_pair():
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
    ],
)
def test_bad_input_one_line_naming_argument(call, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        call()
