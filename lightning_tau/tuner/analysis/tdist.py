"""Student's t distribution for integer degrees of freedom, in closed form (no scipy): its tail and its quantiles.

Used by the statistics of the finder's axes (:mod:`lightning_tau.tuner.analysis.scaling`: the paired interior test's p-values,
the scaling exponent's interval). Pure (the standard library only).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from lightning_tau import _checks

__all__ = ["paired_half_width", "t_quantile", "t_sf"]


def _t_central_mass(theta: float, df: int) -> float:
    """``P(|T| <= sqrt(df) tan(theta))`` for ``T ~ t_df`` (Abramowitz & Stegun 26.7.3-4, finite series)."""
    c2 = math.cos(theta) ** 2
    if df % 2 == 1:
        total = term = math.cos(theta) if df > 1 else 0.0
        for j in range(1, (df - 1) // 2):
            term *= 2 * j / (2 * j + 1) * c2
            total += term
        return 2 / math.pi * (theta + math.sin(theta) * total)
    total = term = 1.0
    for j in range(1, df // 2):
        term *= (2 * j - 1) / (2 * j) * c2
        total += term
    return math.sin(theta) * total


def _check_df(df: int, owner: str) -> None:
    _checks.positive_int(owner, "df", df)


def t_sf(t: float, df: int) -> float:
    """Upper tail ``P(T > t)`` of Student's t with ``df`` (a positive integer) degrees of freedom.

    Example:
        >>> round(t_sf(2.919985580355516, 2), 12)  # the 95 % point of t_2
        0.05
        >>> t_sf(0.0, 5), t_sf(math.inf, 3)
        (0.5, 0.0)
    """
    _check_df(df, "t_sf")
    if math.isnan(t):
        return math.nan
    mass = _t_central_mass(math.atan(abs(t) / math.sqrt(df)), int(df))
    return max(0.0, (1 - mass) / 2 if t >= 0 else (1 + mass) / 2)


@functools.lru_cache(maxsize=256)
def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` (a positive integer) degrees of freedom.

    Example:
        >>> round(t_quantile(0.975, 2), 6), round(t_quantile(0.975, 1), 6), round(t_quantile(0.025, 4), 6)
        (4.302653, 12.706205, -2.776445)
    """
    _check_df(df, "t_quantile")
    if not 0 < p < 1:
        raise ValueError(f"`t_quantile(p={p!r})` is not valid: use a probability strictly between 0 and 1.")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    target, lo, hi = 2 * p - 1, 0.0, math.pi / 2
    for _ in range(100):  # bisection on theta = atan(t / sqrt(df)); the mass rises with theta
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _t_central_mass(mid, int(df)) < target else (lo, mid)
    return math.sqrt(df) * math.tan((lo + hi) / 2)


def paired_half_width(differences: Sequence[float], level: float) -> float:
    """The half width of the two-sided Student t-interval at ``level`` of the mean of paired ``differences`` (one per
    seed, at least two): ``t_{(1 + level) / 2, n - 1} * sd / sqrt(n)``, ``sd`` their sample s.d. (``ddof=1``).

    Example:
        >>> round(paired_half_width([0.1, 0.3], 0.95), 4)  # t_{0.975, 1} = 12.706205, sd = 0.141421
        1.2706
    """
    n = len(differences)
    if n < 2:
        raise ValueError(f"`paired_half_width` needs at least 2 differences, got {n}.")
    sd = float(np.std(np.asarray(differences, dtype=float), ddof=1))
    return t_quantile((1 + level) / 2, n - 1) * sd / math.sqrt(n)
