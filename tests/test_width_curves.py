"""The width demo's pure statistics (:mod:`lightning_tau.demos.width_curves`) on synthetic sweeps whose answer is known.

Each seed's curve is an exact parabola in ``log λ_base`` plus a constant of its own, with its vertex at
``V0 * s ** EXPONENT``: the smoothed optimum recovers the vertex exactly, the exponent is ``EXPONENT``, and the
grid's best points (one x2 step apart) give another slope, so a fit to the grid best is seen.
"""

from __future__ import annotations

import math
import statistics

import pytest

from lightning_tau.demos.width_curves import bootstrap_exponent, summarize_arm

V0, EXPONENT = 10.0, 0.35
LAMBDAS = [2.0**k for k in range(7)]  # 1 .. 64
MULTS = [1.0, 4.0, 16.0]
OFFSETS = [0.0, 0.1, 0.2]  # one constant per seed: a seed that is better everywhere


def vertex(s: float, exponent: float = EXPONENT) -> float:
    return V0 * s**exponent


def seed_lines(exponent: float = EXPONENT, offsets: list[float] = OFFSETS) -> dict[float, dict[float, list[float]]]:
    """``{s: {λ_base: [loss per seed]}}``: ``offset + (log2 λ - log2 vertex(s))**2``."""
    return {
        s: {lam: [c + (math.log2(lam) - math.log2(vertex(s, exponent))) ** 2 for c in offsets] for lam in LAMBDAS}
        for s in MULTS
    }


def grid_best(lines: dict[float, dict[float, list[float]]]) -> dict[float, float]:
    return {s: min(line, key=lambda lam: statistics.fmean(line[lam])) for s, line in lines.items()}


def slope(xs: list[float], ys: list[float]) -> float:
    return statistics.linear_regression([math.log(x) for x in xs], [math.log(y) for y in ys]).slope


@pytest.mark.parametrize("exponent", [EXPONENT, -EXPONENT])
def test_summary_recovers_the_smoothed_optima_and_the_exponent_of_a_known_sweep(exponent: float) -> None:
    lines = seed_lines(exponent)
    arm = summarize_arm(lines, widths={1.0: 16, 4.0: 64, 16.0: 256})
    for s, name in zip(MULTS, ["16", "64", "256"]):
        assert arm["best_lambda_base"][name] == pytest.approx(vertex(s, exponent), rel=1e-9)
        assert arm["interior"][name] and arm["bracketed"][name]
        rows = arm["curves"][name]
        assert [row[0] for row in rows] == LAMBDAS
        assert all(row[2] == pytest.approx(0.1) for row in rows)  # the std of the offsets 0, 0.1, 0.2
    assert arm["exponent"] == pytest.approx(exponent, abs=1e-9)
    # the grid's best points move by whole x2 steps and give another slope: the fit uses the smoothed optima
    grid = grid_best(lines)
    assert abs(slope(MULTS, [grid[s] for s in MULTS]) - exponent) > 0.05
    # constant seed offsets move no optimum: every resample of whole seed curves gives the same exponent
    low, high = arm["exponent_ci"]
    assert low == pytest.approx(exponent, abs=1e-9) and high == pytest.approx(exponent, abs=1e-9)


def test_bootstrap_resamples_whole_seed_curves_not_single_runs() -> None:
    # Seed curves that differ by a constant have the same vertex, so resampling whole curves cannot move the
    # optimum. Resampling single runs would mix the seeds' offsets point by point and move it.
    low, high = bootstrap_exponent(seed_lines(offsets=[0.0, 0.3, 0.6, 0.9]))
    assert low == pytest.approx(EXPONENT, abs=1e-9) and high == pytest.approx(EXPONENT, abs=1e-9)


def test_bootstrap_interval_comes_from_the_smoothed_optima_of_the_resamples() -> None:
    # seed 0 has the vertex V0 * s^0.1, seed 1 V0 * s^0.4 (both on the same grid, no offset): a resample's mean
    # curve is one of them or their mean, so its smoothed slope lies in [0.1, 0.4]; grid optima give other slopes
    slow, fast = seed_lines(0.1, offsets=[0.0]), seed_lines(0.4, offsets=[0.0])
    lines = {s: {lam: [slow[s][lam][0], fast[s][lam][0]] for lam in LAMBDAS} for s in MULTS}
    low, high = bootstrap_exponent(lines, level=0.999)
    assert low == pytest.approx(0.1, abs=1e-9) and high == pytest.approx(0.4, abs=1e-9)
