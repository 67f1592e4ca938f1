"""The width demo's pure parts: λ_base curves, their smoothed optima, the interior test and the width exponent.

No Lightning import (numpy only). The Lightning side, which trains the runs, is :mod:`lightning_tau.demos.width`.

A *curve* is one ``(arm, width)`` line of a λ_base sweep at a fixed base learning rate: rows
``[lambda_base, mean, std]`` over seeds, in increasing ``lambda_base``. Its best ``λ_base`` is the finder's
smoothed optimum (:func:`~lightning_tau.tuner.curve.smoothed_optimum`: a parabola in ``log λ_base`` through the
grid's best point and its two neighbours, its vertex clamped between them). The optimum is *interior* when the best
grid point has a neighbour on each side and both neighbours are worse by more than the seed spread there; it is
*bracketed* when some grid point on each side is (a flat-bottomed optimum between two grid points is bracketed
but not interior). The
*exponent* of an arm is the least-squares slope of ``log best λ_base`` on ``log s``, ``s = width / base width``:
Wang & Aitchison (ICML 2025, Sec. 4.2) predict 0 when ``λ = s λ_base`` holds the hidden weights' ``tau_iter``
(the ``timescale`` arm) and 1 when ``λ = λ_base`` at every width (the ``fixed`` arm); Fan et al. (2025) argue for
``λ ∝ √s``, i.e. 1/2 and -1/2. Its interval comes from a bootstrap over seeds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from lightning_tau.tuner.curve import smoothed_optimum

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "best_lambda_base",
    "bootstrap_exponent",
    "curve_rows",
    "fit_exponent",
    "is_bracketed",
    "is_interior",
    "summarize_arm",
]

#: Bootstrap resamples behind ``exponent_ci``.
BOOTSTRAP_RESAMPLES = 1000

#: Seed of the bootstrap's random generator, so a summary is reproducible from its runs.
BOOTSTRAP_SEED = 0

#: ``{lambda_base: [metric per seed]}``, one line of a sweep.
PerSeed = Mapping[float, Sequence[float]]


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample std (``ddof=1``, 0 for one value); a non-finite value (a diverged run) makes both ``inf``."""
    if not values or any(not math.isfinite(v) for v in values):
        return math.inf, math.inf
    mean = float(np.mean(values))
    return mean, float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def curve_rows(per_seed: PerSeed) -> list[list[float]]:
    """``[lambda_base, mean, std]`` rows in increasing ``lambda_base`` (``std`` over seeds, ``ddof=1``).

    Example:
        >>> curve_rows({2.0: [0.5, 0.7], 1.0: [0.4]})
        [[1.0, 0.4, 0.0], [2.0, 0.6, 0.14142135623730948]]
    """
    return [[float(lam), *_mean_std(list(values))] for lam, values in sorted(per_seed.items())]


def best_lambda_base(rows: Sequence[Sequence[float]]) -> float:
    """The smoothed best ``lambda_base`` of a curve: the finder's parabola in ``log λ`` (see module docstring).

    Example:
        >>> rows = [[1.0, 0.9, 0.0], [4.0, 0.5, 0.0], [16.0, 0.9, 0.0]]
        >>> round(best_lambda_base(rows), 6)  # symmetric: the vertex is the middle point
        4.0
        >>> round(best_lambda_base([[1.0, 0.9, 0.0], [4.0, 0.5, 0.0], [16.0, 0.6, 0.0]]), 3)  # pulled to 16
        6.063
        >>> best_lambda_base([[1.0, 0.3, 0.0], [4.0, 0.5, 0.0]])  # at the grid edge: the grid point
        1.0
    """
    return float(smoothed_optimum([r[0] for r in rows], [r[1] for r in rows]).tau_epoch)


def is_interior(rows: Sequence[Sequence[float]]) -> bool:
    """Whether the best grid point has a neighbour on each side, each worse by more than the seed spread.

    "Worse by more than the seed spread": ``mean_neighbour - mean_best > max(std_best, std_neighbour)``. With one
    seed the spread is 0, so any worse neighbour counts; read such a verdict with care.

    Example:
        >>> is_interior([[1.0, 0.9, 0.05], [4.0, 0.5, 0.05], [16.0, 0.8, 0.05]])
        True
        >>> is_interior([[1.0, 0.9, 0.05], [4.0, 0.5, 0.05], [16.0, 0.52, 0.05]])  # flat within the spread
        False
        >>> is_interior([[1.0, 0.4, 0.0], [4.0, 0.5, 0.0], [16.0, 0.8, 0.0]])  # best at the edge
        False
    """
    means = [r[1] if math.isfinite(r[1]) else math.inf for r in rows]
    if len(rows) < 3 or all(m == math.inf for m in means):
        return False
    best = means.index(min(means))
    if best in (0, len(rows) - 1):
        return False
    spread = rows[best][2]
    for neighbour in (best - 1, best + 1):
        gap = means[neighbour] - means[best]
        if not gap > max(spread, rows[neighbour][2] if math.isfinite(rows[neighbour][2]) else 0.0):
            return False
    return True


def is_bracketed(rows: Sequence[Sequence[float]]) -> bool:
    """Whether some grid point on each side of the best one is worse by more than the seed spread.

    A looser test than :func:`is_interior`: a flat-bottomed optimum that falls between two grid points fails the
    neighbour test (the neighbours are within the spread) yet is bracketed when the curve rises further out.

    Example:
        >>> rows = [[1.0, 0.9, 0.05], [2.0, 0.52, 0.05], [4.0, 0.5, 0.05], [8.0, 0.52, 0.05], [16.0, 0.8, 0.05]]
        >>> is_interior(rows), is_bracketed(rows)
        (False, True)
    """
    means = [r[1] if math.isfinite(r[1]) else math.inf for r in rows]
    if len(rows) < 3 or all(m == math.inf for m in means):
        return False
    best = means.index(min(means))
    spread = rows[best][2]

    def worse(j: int) -> bool:
        other = rows[j][2] if math.isfinite(rows[j][2]) else 0.0
        return means[j] - means[best] > max(spread, other)

    return any(worse(j) for j in range(best)) and any(worse(j) for j in range(best + 1, len(rows)))


def fit_exponent(width_mults: Sequence[float], best: Sequence[float]) -> float:
    """Least-squares slope of ``log best`` on ``log width_mult``.

    Raises:
        ValueError: fewer than two distinct widths, or a non-positive value.

    Example:
        >>> round(fit_exponent([1, 4, 16], [2.0, 4.0, 8.0]), 6)  # best ∝ √s
        0.5
    """
    if len(width_mults) != len(best) or len(set(width_mults)) < 2:
        raise ValueError(f"`fit_exponent` needs two or more distinct widths, got width_mults={list(width_mults)!r}.")
    if any(not (v > 0 and math.isfinite(v)) for v in [*width_mults, *best]):
        raise ValueError(f"`fit_exponent` needs positive values, got {list(width_mults)!r} and {list(best)!r}.")
    slope, _ = np.polyfit(np.log(width_mults), np.log(best), 1)
    return float(slope)


def bootstrap_exponent(
    lines: Mapping[float, PerSeed],
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = 0.95,
) -> list[float]:
    """A percentile bootstrap interval of the exponent over seeds.

    Each resample draws, for every width independently, as many seeds as it has with replacement (the same draw
    for every ``lambda_base`` of that width, so a seed's curve stays whole), recomputes the mean curve, its
    smoothed best ``lambda_base`` and the slope on ``log s``.

    Args:
        lines: ``{width_mult: {lambda_base: [metric per seed]}}``; every ``lambda_base`` of a line has its seeds in
            the same order.
        resamples: bootstrap resamples.
        seed: seed of the generator (a fixed default: the interval is reproducible).
        level: coverage of the interval.

    Returns:
        ``[low, high]``.

    Example:
        >>> base = {1.0: [0.9, 0.8], 4.0: [0.5, 0.4], 16.0: [0.8, 0.9]}
        >>> wide = {4.0: [0.9, 0.8], 16.0: [0.5, 0.4], 64.0: [0.8, 0.9]}  # the same curve, 4 x the λ, at s = 4
        >>> low, high = bootstrap_exponent({1.0: base, 4.0: wide})
        >>> round(low, 3), round(high, 3)  # one seed's curve or the other: the slope moves by about ±0.13
        (0.873, 1.127)
    """
    rng = np.random.default_rng(seed)
    mults = sorted(lines)
    tables = []
    for mult in mults:
        lams = sorted(lines[mult])
        table = np.asarray([list(lines[mult][lam]) for lam in lams], dtype=float)  # (lambdas, seeds)
        tables.append((lams, table))
    slopes = []
    for _ in range(resamples):
        best = []
        for lams, table in tables:
            draw = rng.integers(0, table.shape[1], table.shape[1])
            sample = table[:, draw]
            means = np.where(np.all(np.isfinite(sample), axis=1), sample.mean(axis=1), np.inf)
            best.append(float(smoothed_optimum(lams, list(means)).tau_epoch))
        slopes.append(fit_exponent(mults, best))
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(slopes, [tail, 100 - tail])
    return [float(low), float(high)]


def summarize_arm(lines: Mapping[float, PerSeed], widths: Mapping[float, int] | None = None) -> dict[str, Any]:
    """One arm's part of the width demo's ``summary.json``.

    Args:
        lines: ``{width_mult: {lambda_base: [metric per seed]}}``.
        widths: ``{width_mult: width}`` for the keys of the per-width maps (default: the width mult itself).

    Returns:
        ``{"curves": {width: rows}, "best_lambda_base": {width: λ}, "interior": {width: bool},
        "bracketed": {width: bool}, "exponent": slope, "exponent_ci": [low, high]}``; per-width keys are strings
        (JSON keys), non-finite numbers ``None``.

    Example:
        >>> base = {1.0: [0.9, 0.8], 4.0: [0.5, 0.4], 16.0: [0.8, 0.9]}
        >>> wide = {4.0: [0.9, 0.8], 16.0: [0.5, 0.4], 64.0: [0.8, 0.9]}
        >>> arm = summarize_arm({1.0: base, 4.0: wide}, widths={1.0: 32, 4.0: 128})
        >>> {w: round(lam, 6) for w, lam in arm["best_lambda_base"].items()}, arm["interior"]
        ({'32': 4.0, '128': 16.0}, {'32': True, '128': True})
        >>> round(arm["exponent"], 6), arm["curves"]["32"][1]  # best λ_base ∝ s; rows [λ_base, mean, std]
        (1.0, [4.0, 0.45, 0.07071067811865474])
    """
    names = {mult: str(widths[mult] if widths else mult) for mult in lines}
    curves = {mult: curve_rows(lines[mult]) for mult in sorted(lines)}
    best = {mult: best_lambda_base(rows) for mult, rows in curves.items()}
    mults = list(curves)
    return {
        "curves": {names[m]: [[_json_number(v) for v in row] for row in rows] for m, rows in curves.items()},
        "best_lambda_base": {names[m]: best[m] for m in mults},
        "interior": {names[m]: is_interior(curves[m]) for m in mults},
        "bracketed": {names[m]: is_bracketed(curves[m]) for m in mults},
        "exponent": fit_exponent(mults, [best[m] for m in mults]),
        "exponent_ci": bootstrap_exponent(lines),
    }


def _json_number(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None
