"""The width demo's pure statistics (lightning_tau/demos/width_curves.py), without training.

Fast: `make mutation` runs these against width_curves.py's mutants (with test_demo_width.py's two pure tests), so
the summary is checked whole and the bootstrap against a plain re-statement of its resampling.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest

from lightning_tau.demos.width_curves import (
    best_lambda_base,
    bootstrap_exponent,
    curve_rows,
    fit_exponent,
    is_bracketed,
    is_interior,
    summarize_arm,
)

# seed 2 of the base width diverged at λ_base = 1; every λ_base of a width has its seeds in the same order
BASE = {1.0: [0.9, 0.8, math.nan], 4.0: [0.5, 0.4, 0.45], 16.0: [0.8, 0.9, 0.7]}
WIDE = {4.0: [0.9, 0.8, 0.85], 16.0: [0.5, 0.4, 0.6], 64.0: [0.8, 0.9, 0.7]}
# their bootstrap interval with the defaults (1000 resamples, seed 0, level 0.95), from reference_bootstrap below
DEFAULT_INTERVAL = [0.9444444444444433, 1.2142857142857137]


def raises_exactly(message: str) -> pytest.RaisesContext[ValueError]:
    return pytest.raises(ValueError, match=f"^{re.escape(message)}$")


def reference_bootstrap(lines: dict[float, Any], resamples: int, seed: int, level: float) -> list[float]:
    """The documented procedure, written out: per resample and per width one draw of seeds (with replacement)
    that every λ_base of that width shares, so each seed's curve stays whole."""
    rng = np.random.default_rng(seed)
    slopes = []
    for _ in range(resamples):
        best = []
        for mult in sorted(lines):
            lams = sorted(lines[mult])
            n_seeds = len(lines[mult][lams[0]])
            draw = rng.integers(0, n_seeds, n_seeds)
            means = []
            for lam in lams:
                picked = [lines[mult][lam][i] for i in draw]
                means.append(sum(picked) / len(picked) if all(math.isfinite(v) for v in picked) else math.inf)
            best.append(best_lambda_base([[lam, m, 0.0] for lam, m in zip(lams, means)]))
        slopes.append(fit_exponent(sorted(lines), best))
    return [float(np.percentile(slopes, 50 * (1 - level))), float(np.percentile(slopes, 50 * (1 + level)))]


def test_curve_rows_sort_and_treat_a_diverged_seed_as_the_worst() -> None:
    assert curve_rows({4.0: [0.5, 0.7], 1: [0.4], 2.0: [0.3, math.inf], 8.0: []}) == [
        [1.0, 0.4, 0.0],
        [2.0, math.inf, math.inf],
        [4.0, pytest.approx(0.6), pytest.approx(math.sqrt(0.02))],
        [8.0, math.inf, math.inf],
    ]


def test_interior_and_bracketed_edge_cases() -> None:
    assert not is_interior([[1.0, 0.9, 0.0], [2.0, 0.5, 0.0]]) and not is_bracketed([[1.0, 0.9, 0.0], [2.0, 0.5, 0.0]])
    diverged = [[1.0, math.inf, math.inf], [2.0, math.nan, 0.0], [4.0, math.inf, 0.0]]
    assert not is_interior(diverged) and not is_bracketed(diverged)
    # a gap equal to the spread is not "worse by more than the spread"
    assert not is_interior([[1.0, 0.75, 0.25], [2.0, 0.5, 0.25], [4.0, 0.9, 0.0]])
    assert not is_bracketed([[1.0, 0.75, 0.25], [2.0, 0.5, 0.25], [4.0, 0.9, 0.0]])
    assert not is_interior([[1.0, 0.9, 0.0], [2.0, 0.5, 0.0], [4.0, 0.75, 0.25]])  # the neighbour's own spread
    assert not is_bracketed([[1.0, 0.9, 0.0], [2.0, 0.5, 0.0], [4.0, 0.75, 0.25]])
    # a neighbour whose spread is not finite (one of its seeds diverged... but its mean is finite) counts as 0
    assert is_interior([[1.0, 0.9, math.inf], [2.0, 0.5, 0.1], [4.0, 0.7, math.nan]])
    assert is_bracketed([[1.0, 0.9, math.inf], [2.0, 0.5, 0.1], [4.0, 0.7, math.nan]])
    assert not is_bracketed([[1.0, 0.5, 0.0], [2.0, 0.6, 0.0], [4.0, 0.7, 0.0]])  # best at the edge
    assert not is_interior([[1.0, 0.7, 0.0], [2.0, 0.6, 0.0], [4.0, 0.5, 0.0]])  # best at the last point
    nan_mean = [[1.0, math.nan, 0.0], [2.0, 0.5, 0.0], [4.0, 0.7, 0.0], [8.0, 0.9, 0.0]]  # a nan mean is the worst
    assert is_interior(nan_mean) and is_bracketed(nan_mean)
    assert not is_bracketed([[1.0, 0.7, 0.0], [2.0, 0.6, 0.0], [4.0, 0.5, 0.0]])


def test_fit_exponent_messages() -> None:
    assert fit_exponent([1, 4], [3.0, 0.75]) == pytest.approx(-1.0)
    with raises_exactly("`fit_exponent` needs two or more distinct widths, got width_mults=[1, 1]."):
        fit_exponent([1, 1], [2.0, 3.0])
    with raises_exactly("`fit_exponent` needs two or more distinct widths, got width_mults=[1, 2]."):
        fit_exponent([1, 2], [2.0])
    with raises_exactly("`fit_exponent` needs positive values, got [1, 2] and [0.0, 1]."):
        fit_exponent([1, 2], [0.0, 1])
    with raises_exactly("`fit_exponent` needs positive values, got [1, inf] and [1, 1]."):
        fit_exponent([1, math.inf], [1, 1])
    with raises_exactly("`fit_exponent` needs positive values, got [-1, 2] and [1, 1]."):
        fit_exponent([-1, 2], [1, 1])


@pytest.mark.parametrize(("resamples", "seed", "level"), [(1, 0, 0.95), (1, 5, 0.95), (40, 3, 0.5), (40, 3, 0.9)])
def test_bootstrap_resamples_whole_seed_curves_per_width(resamples: int, seed: int, level: float) -> None:
    lines = {1.0: BASE, 4.0: WIDE}
    interval = bootstrap_exponent(lines, resamples=resamples, seed=seed, level=level)
    assert interval == pytest.approx(reference_bootstrap(lines, resamples, seed, level), abs=1e-12)


def test_bootstrap_defaults_and_the_draw_varies_with_the_seed() -> None:
    lines = {1.0: BASE, 4.0: WIDE}
    # reference_bootstrap(lines, 1000, 0, 0.95), computed once (1000 resamples take seconds on a loaded machine)
    assert bootstrap_exponent(lines) == pytest.approx(DEFAULT_INTERVAL, abs=1e-12)
    singles = {tuple(bootstrap_exponent(lines, resamples=1, seed=s)) for s in range(6)}
    assert len(singles) > 1 and all(low == high for low, high in singles)


def test_summarize_arm_whole() -> None:
    lines = {4.0: WIDE, 1.0: BASE}
    best_wide = best_lambda_base(curve_rows(WIDE))
    expected = {
        "curves": {
            "32": [[1.0, None, None], [4.0, 0.45, 0.05], [16.0, 0.8, 0.1]],
            "128": [[4.0, 0.85, 0.05], [16.0, 0.5, 0.1], [64.0, 0.8, 0.1]],
        },
        "best_lambda_base": {"32": 4.0, "128": best_wide},
        "interior": {"32": True, "128": True},
        "bracketed": {"32": True, "128": True},
        "exponent": fit_exponent([1.0, 4.0], [4.0, best_wide]),
        "exponent_ci": DEFAULT_INTERVAL,
    }
    summary = summarize_arm(lines, widths={1.0: 32, 4.0: 128})
    assert list(summary["curves"]) == ["32", "128"] and list(summary["best_lambda_base"]) == ["32", "128"]
    assert _close(summary, expected), summary
    assert list(summarize_arm(lines)["curves"]) == ["1.0", "4.0"]  # without widths: the multipliers


def _close(actual: Any, expected: Any) -> bool:
    if isinstance(expected, dict):
        return (
            isinstance(actual, dict)
            and actual.keys() == expected.keys()
            and all(_close(actual[k], expected[k]) for k in expected)
        )
    if isinstance(expected, list):
        return isinstance(actual, list) and len(actual) == len(expected) and all(map(_close, actual, expected))
    if isinstance(expected, float):
        return isinstance(actual, float) and actual == pytest.approx(expected, rel=1e-12, abs=1e-12)
    return actual == expected and type(actual) is type(expected)
