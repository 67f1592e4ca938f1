"""STAND-IN for the finder axes' statistics (the "stats" helper writes the real module with this interface).

Minimal and pure (numpy, scipy): a t-interval over per-seed exponents, a one-sided paired t-test for "interior".
The lead drops this file when merging the real one.

Example:
    >>> fit = fit_scaling([1, 2, 4], [1.0, 2.0, 4.0], [[[1.0] * 3, [0.0] * 3, [1.0] * 3]] * 3)
    >>> round(fit.exponent, 9) + 0, fit.ci is None
    (0.0, False)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lightning_tau.tuner.curve import Mode, smoothed_optimum

__all__ = [
    "MIN_SEEDS_FOR_INTERVAL",
    "WIDTH_RULES",
    "InteriorTest",
    "ScalingFit",
    "fit_scaling",
    "paired_interior",
    "per_seed_optima",
    "size_verdict",
    "width_verdict",
]

MIN_SEEDS_FOR_INTERVAL = 3

WIDTH_RULES: dict[str, float] = {
    "Wang & Aitchison (ICML 2025, Sec. 4.2), alpha = 1": 0.0,
    "Fan et al. (arXiv 2510.15262), alpha = 1/2": -0.5,
    "Qiu et al. (arXiv 2512.05620), alpha = 0": -1.0,
}


@dataclass(frozen=True)
class InteriorTest:
    interior: bool
    level: float
    p_lower: float | None
    p_upper: float | None
    reason: str


def paired_interior(
    values: Any, best_index: int | None = None, mode: Mode = "min", level: float = 0.05
) -> InteriorTest:
    from scipy import stats as sps

    v = np.asarray(values, dtype=float)
    sign = 1.0 if mode == "min" else -1.0
    v = sign * v
    if best_index is None:
        best_index = int(np.argmin(v.mean(axis=1)))
    if best_index in (0, len(v) - 1):
        return InteriorTest(False, level, None, None, "at the grid edge")
    if v.shape[1] < 2:
        return InteriorTest(False, level, None, None, "1 seed: no paired test")
    ps = []
    for j in (best_index - 1, best_index + 1):
        d = v[j] - v[best_index]
        ps.append(float(sps.ttest_1samp(d, 0.0, alternative="greater").pvalue) if np.std(d) > 0 else 0.0)
    ok = all(p < level for p in ps)
    return InteriorTest(ok, level, ps[0], ps[1], f"paired t-test p={max(ps):.2g}")


def per_seed_optima(xs: Sequence[float], values: Any, mode: Mode = "min") -> list[float]:
    v = np.asarray(values, dtype=float)
    idx = np.argmin(v, axis=0) if mode == "min" else np.argmax(v, axis=0)
    return [float(xs[i]) for i in idx]


@dataclass(frozen=True)
class ScalingFit:
    exponent: float
    ci: tuple[float, float] | None
    ci_reason: str | None
    level: float
    optima: list[float]
    grid_optima: list[float]
    per_seed_grid_optima: list[list[float]]
    grid_exponent: float
    sign_disagrees: bool
    interior: list[InteriorTest]

    def note(self) -> str | None:
        if self.sign_disagrees:
            return (
                f"The grid optima give exponent {self.grid_exponent:+.2f}, the smoothed optima {self.exponent:+.2f}:"
                " they disagree in sign."
            )
        return None


def _slope(scales: Sequence[float], ys: Sequence[float]) -> float:
    return float(np.polyfit(np.log(scales), np.log(ys), 1)[0])


def fit_scaling(
    scales: Sequence[float],
    xs: Sequence[float],
    curves: Sequence[Any],
    mode: Mode = "min",
    level: float = 0.95,
    window: int = 1,
) -> ScalingFit:
    from scipy import stats as sps

    arrays = [np.asarray(c, dtype=float) for c in curves]
    optima = [smoothed_optimum(xs, a.mean(axis=1), mode, window).tau_epoch for a in arrays]
    grid_optima = [float(xs[smoothed_optimum(xs, a.mean(axis=1), mode, window).grid_index]) for a in arrays]
    exponent = _slope(scales, optima)
    grid_exponent = _slope(scales, grid_optima)
    seeds = min(a.shape[1] for a in arrays)
    ci, why = None, None
    if seeds < MIN_SEEDS_FOR_INTERVAL:
        why = f"{seeds} seeds: an interval needs at least {MIN_SEEDS_FOR_INTERVAL}"
    else:
        per_seed = [
            _slope(scales, [smoothed_optimum(xs, a[:, j], mode, window).tau_epoch for a in arrays])
            for j in range(seeds)
        ]
        m, s = float(np.mean(per_seed)), float(np.std(per_seed, ddof=1))
        h = float(sps.t.ppf(0.5 + level / 2, seeds - 1)) * s / math.sqrt(seeds)
        ci = (m - h, m + h)
    return ScalingFit(
        exponent=exponent,
        ci=ci,
        ci_reason=why,
        level=level,
        optima=optima,
        grid_optima=grid_optima,
        per_seed_grid_optima=[per_seed_optima(xs, a, mode) for a in arrays],
        grid_exponent=grid_exponent,
        sign_disagrees=grid_exponent * exponent < 0,
        interior=[paired_interior(a, None, mode) for a in arrays],
    )


def width_verdict(fit: ScalingFit) -> str:
    if fit.ci is None:
        return f"No interval ({fit.ci_reason}); the point estimate {fit.exponent:+.2f} is not a verdict."
    lo, hi = fit.ci
    admits = [name for name, e in WIDTH_RULES.items() if lo <= e <= hi]
    excludes = [name for name, e in WIDTH_RULES.items() if not lo <= e <= hi]
    return f"The interval admits {admits or 'no rule'} and excludes {excludes or 'no rule'}."


def size_verdict(fit: ScalingFit) -> str:
    if fit.ci is None:
        return f"No interval ({fit.ci_reason}): cannot say whether 'tune on a fraction, train on all' holds."
    lo, hi = fit.ci
    holds = lo <= 0 <= hi
    return f"'Tune on a fraction, train on all' {'holds' if holds else 'fails'} for this model."
