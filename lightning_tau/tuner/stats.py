r"""Statistics of the finder's width and dataset-size axes: a paired interior test and a scaling exponent with an
interval that reaches its nominal coverage.

No Lightning or torch import (numpy and the standard library only). Used by the finder's ``axis="width"`` and
``axis="dataset_size"``, the demos and ``lightning-tau plot``.

A *curve* is a ``grid x seeds`` array of a validation metric: row ``i`` is grid point ``xs[i]`` (``λ_base`` or
``tau_epoch``), column ``j`` is seed ``j``. Runs with the same seed share their initialisation and batch order
across the grid, so they are compared in pairs.

- :func:`paired_interior`: the best grid point is *interior* when it beats each grid neighbour in a one-sided
  paired t-test on the per-seed differences at ``level`` (intersection-union test: both must pass, so no
  multiplicity correction is needed).
- :func:`fit_scaling`: at each scale ``s`` (a width multiplier, or a dataset size ``N``) the best ``x`` is the
  finder's smoothed optimum (:func:`~lightning_tau.tuner.curve.smoothed_optimum`) of the seed-mean curve; the
  *exponent* is the least-squares slope of ``log best x`` on ``log s``. Its interval is a t-interval over
  per-seed exponents (see :func:`fit_scaling` for the method, its estimand and the simulation that backs it).

The Student t distribution they use is :mod:`lightning_tau.tuner.tdist`'s; the sentences that say what an interval
admits (:func:`~lightning_tau.tuner.verdicts.width_verdict`, :func:`~lightning_tau.tuner.verdicts.size_verdict`) are
:mod:`lightning_tau.tuner.verdicts`'.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lightning_tau import _checks
from lightning_tau._constants import GOALS, Goal
from lightning_tau.tuner.curve import smoothed_optimum
from lightning_tau.tuner.tdist import t_quantile, t_sf

__all__ = [
    "MIN_SEEDS_FOR_INTERVAL",
    "InteriorTest",
    "ScalingFit",
    "fit_scaling",
    "paired_interior",
    "per_seed_optima",
]

#: The smallest number of seeds at which :func:`fit_scaling`'s interval reaches its nominal coverage. The interval
#: is a Student t-interval over per-seed exponents, with ``seeds - 1`` degrees of freedom; it needs a spread
#: across seeds, so two. Simulation (``tests/test_tuner_stats.py``; the regime is in :func:`fit_scaling`) puts its
#: coverage within about a point of nominal at 2-8 seeds on the demo's noise. With 2 seeds it is honest but wide
#: (``t_{1, 0.975} = 12.7``): about ±0.5 on the demo's noise, so it rarely tells the width rules apart.
MIN_SEEDS_FOR_INTERVAL: int = 2


# --- input checks ---------------------------------------------------------------------------------------------------


def _check_mode(mode: Any, owner: str) -> None:
    if mode not in GOALS:
        raise _checks.invalid(owner, "mode", mode, "use 'min' (a loss) or 'max'.")


def _check_level(level: Any, owner: str, name: str = "level") -> float:
    return _checks.in_range(owner, name, level, "use a number strictly between 0 and 1.", low=0, high=1)


def _as_table(values: Any, owner: str, name: str = "values") -> np.ndarray:
    """``values`` as a float ``grid x seeds`` array with at least one row and one column."""
    try:
        table = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"`{owner}({name}=...)` is not valid: use numbers, one row per grid point and one column per seed."
        ) from None
    if table.ndim != 2 or table.shape[0] < 1 or table.shape[1] < 1:
        raise ValueError(
            f"`{owner}({name}=...)` is not valid: got shape {table.shape}; use one row per grid point and one"
            " column per seed (grid x seeds), e.g. [[0.5], [0.4], [0.6]] for 3 grid points and 1 seed."
        )
    return table


def _check_positive_increasing(seq: Any, owner: str, name: str, min_len: int) -> list[float]:
    try:
        values = [float(v) for v in seq]
    except (TypeError, ValueError):
        raise ValueError(f"`{owner}({name}={seq!r})` is not valid: use a sequence of positive numbers.") from None
    if len(values) < min_len:
        raise ValueError(f"`{owner}({name}={values!r})` is not valid: it needs at least {min_len} values.")
    if any(not (math.isfinite(v) and v > 0) for v in values) or any(b <= a for a, b in zip(values, values[1:])):
        raise ValueError(f"`{owner}({name}={values!r})` is not valid: use positive numbers in increasing order.")
    return values


def _scores(table: np.ndarray, mode: Goal) -> np.ndarray:
    """Lower is better; a non-finite value (a diverged run) is the worst (``+inf``)."""
    scores = table if mode == "min" else -table
    return np.where(np.isfinite(scores), scores, np.inf)


def _slope(x: Sequence[float], y: Sequence[float]) -> float:
    """Least-squares slope of ``log y`` on ``log x``."""
    lx, ly = np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float))
    lx = lx - lx.mean()
    return float(np.dot(lx, ly) / np.dot(lx, lx))


# --- the paired interior test ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InteriorTest:
    """Whether a curve's best grid point beats each grid neighbour, in pairs of runs with the same seed.

    Attributes:
        interior: the best point beats each neighbour (one-sided paired t-test on the per-seed differences,
            ``p < level`` for both).
        level: the level of each one-sided test, e.g. 0.05.
        p_lower: p-value against the lower neighbour (``None`` at the grid's low edge or with one seed).
        p_upper: p-value against the upper neighbour (``None`` at the grid's high edge or with one seed).
        reason: one short phrase saying why, e.g. ``"beats both neighbours (paired, p<0.05)"``.
    """

    interior: bool
    level: float
    p_lower: float | None
    p_upper: float | None
    reason: str


def _paired_p(best: np.ndarray, neighbour: np.ndarray) -> float:
    """One-sided p-value that ``best`` scores lower than ``neighbour`` (paired over seeds; ``+inf`` = diverged)."""
    best_bad, nb_bad = ~np.isfinite(best), ~np.isfinite(neighbour)
    if np.any(best_bad & ~nb_bad):  # the best point diverged where the neighbour did not
        return 1.0
    finite = ~best_bad & ~nb_bad
    diffs = neighbour[finite] - best[finite]
    if np.any(nb_bad & ~best_bad) and diffs.size == 0:  # the neighbour diverged on every seed it could be compared
        return 0.0
    if diffs.size < 2:
        return 1.0
    mean, sd = float(diffs.mean()), float(diffs.std(ddof=1))
    if sd == 0.0:
        return 0.0 if mean > 0 else 1.0
    return t_sf(mean / (sd / math.sqrt(diffs.size)), diffs.size - 1)


def paired_interior(
    values: Any, best_index: int | None = None, mode: Goal = "min", level: float = 0.05
) -> InteriorTest:
    r"""Whether the best grid point of a ``grid x seeds`` curve beats each of its grid neighbours, seed by seed.

    For a neighbour ``n`` of the best point ``b`` the per-seed differences ``d_j = y_{n,j} - y_{b,j}`` (sign
    flipped for ``mode="max"``) are tested with a one-sided paired t-test, :math:`t = \bar d / (s_d / \sqrt{k})`
    on ``k - 1`` degrees of freedom, ``H0: mean d <= 0``. The point is interior when both neighbours' p-values are
    below ``level``. Pairing removes what a seed shares across the grid (its initialisation and batch order): a
    seed that is 0.1 worse everywhere does not hide a gap of 0.01 that every seed shows.

    With one seed there is no paired test and the point is not interior. A best point at the grid's edge is not
    interior. A diverged run (non-finite value) is the worst: a pair where only the neighbour diverged is left
    out of the t statistic (conservative), a neighbour that diverged on every seed is beaten (``p = 0``), and a
    pair where only the best point diverged gives ``p = 1``. With all differences equal the p-value is 0 when they
    are positive, else 1.

    Args:
        values: ``grid x seeds``: row ``i`` is grid point ``i``, column ``j`` seed ``j``.
        best_index: the row to test; by default the best row of the seed mean (a row with a non-finite value has
            mean ``inf``).
        mode: ``"min"`` (lower is better, a loss) or ``"max"``.
        level: the level of each one-sided test.

    Raises:
        ValueError: ``values`` not a non-empty 2-D array of numbers, ``best_index`` out of range, ``mode`` or
            ``level`` invalid, or (without ``best_index``) no row with every value finite.

    Example:
        The seeds sit 0.1 apart at every grid point, and the middle point is 0.01-0.03 better than its
        neighbours for every seed. The pairs see it (an unpaired t-test of the middle row against the first gives
        p = 0.39):

        >>> curve = [[0.62, 0.52, 0.43], [0.60, 0.50, 0.40], [0.63, 0.51, 0.42]]  # 3 grid points x 3 seeds
        >>> test = paired_interior(curve)
        >>> test.interior, test.reason, round(test.p_lower, 4), round(test.p_upper, 4)
        (True, 'beats both neighbours (paired, p<0.05)', 0.0099, 0.0371)
        >>> paired_interior([[0.6], [0.5], [0.7]]).reason
        '1 seed: no paired test'
        >>> paired_interior([[0.4, 0.5], [0.5, 0.6], [0.7, 0.8]]).reason
        'at the grid edge'
    """
    owner = "paired_interior"
    _check_mode(mode, owner)
    level = _check_level(level, owner)
    table = _as_table(values, owner)
    scores = _scores(table, mode)
    rows = scores.shape[0]
    if best_index is None:
        finite = np.isfinite(scores)
        means = np.where(np.all(finite, axis=1), np.where(finite, scores, 0.0).mean(axis=1), np.inf)
        if not np.any(np.isfinite(means)):
            raise ValueError(
                f"`{owner}(values=...)` is not valid: every grid point has a non-finite value (a diverged run);"
                " there is no best point to test."
            )
        best = int(np.argmin(means))
    else:
        if isinstance(best_index, bool) or not isinstance(best_index, (int, np.integer)) or not 0 <= best_index < rows:
            raise ValueError(
                f"`{owner}(best_index={best_index!r})` is not valid: use a row index from 0 to {rows - 1}."
            )
        best = int(best_index)
    return _interior_test(scores, best, level)


def _interior_test(scores: np.ndarray, best: int, level: float) -> InteriorTest:
    """:func:`paired_interior` on checked input: ``scores`` lower is better, ``+inf`` for a diverged run."""
    rows, seeds = scores.shape
    if seeds == 1:
        return InteriorTest(False, level, None, None, "1 seed: no paired test")
    p_lower = _paired_p(scores[best], scores[best - 1]) if best > 0 else None
    p_upper = _paired_p(scores[best], scores[best + 1]) if best < rows - 1 else None
    if p_lower is None or p_upper is None:
        reason = "at the grid edge" if rows > 1 else "1 grid point: no neighbour"
        return InteriorTest(False, level, p_lower, p_upper, reason)
    lower_ok, upper_ok = p_lower < level, p_upper < level
    if lower_ok and upper_ok:
        reason = f"beats both neighbours (paired, p<{level:g})"
    elif lower_ok or upper_ok:
        side, p = ("upper", p_upper) if lower_ok else ("lower", p_lower)
        reason = f"does not beat the {side} neighbour (paired, p={p:.2g})"
    else:
        reason = f"beats neither neighbour (paired, p={p_lower:.2g} and {p_upper:.2g})"
    return InteriorTest(lower_ok and upper_ok, level, p_lower, p_upper, reason)


def per_seed_optima(xs: Sequence[float], values: Any, mode: Goal = "min") -> list[float]:
    """The grid's best ``x`` for each seed (column) of a ``grid x seeds`` curve.

    A non-finite value (a diverged run) is the worst; a seed with no finite value gets ``nan``. Ties go to the
    smaller ``x``.

    Raises:
        ValueError: ``xs`` not positive and increasing, ``values`` not ``len(xs) x seeds``, or ``mode`` invalid.

    Example:
        >>> per_seed_optima([8.0, 16.0, 32.0], [[0.9, 0.5], [0.7, 0.6], [0.8, 0.7]])
        [16.0, 8.0]
        >>> per_seed_optima([8.0, 16.0, 32.0], [[0.9, 0.5], [0.7, 0.6], [0.8, 0.7]], mode="max")
        [8.0, 32.0]
    """
    owner = "per_seed_optima"
    _check_mode(mode, owner)
    grid = _check_positive_increasing(xs, owner, "xs", 1)
    scores = _scores(_as_table(values, owner), mode)
    if scores.shape[0] != len(grid):
        raise ValueError(
            f"`{owner}(values=...)` is not valid: it has {scores.shape[0]} rows for {len(grid)} grid points in `xs`."
        )
    return _grid_argbest(grid, scores)


def _grid_argbest(grid: list[float], scores: np.ndarray) -> list[float]:
    """:func:`per_seed_optima` on checked input: ``scores`` lower is better, ``+inf`` for a diverged run."""
    best = np.argmin(scores, axis=0)
    return [grid[i] if np.isfinite(scores[i, j]) else math.nan for j, i in enumerate(best.tolist())]


# --- the scaling exponent -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScalingFit:
    """How the best ``x`` of a sweep moves with scale: its exponent, the interval, and the evidence beside it.

    Attributes:
        exponent: least-squares slope of ``log`` (smoothed best ``x`` of the seed-mean curve) on ``log`` scale.
        ci: the interval at ``level`` (a t-interval over per-seed exponents, see :func:`fit_scaling`), or ``None``.
        ci_reason: why ``ci`` is ``None`` (else ``None``).
        level: the interval's nominal coverage, e.g. 0.95.
        optima: per scale, the smoothed best ``x`` of the seed-mean curve.
        grid_optima: per scale, the seed-mean curve's best grid ``x``.
        per_seed_grid_optima: per scale, per seed, the best grid ``x`` of that seed's curve.
        grid_exponent: slope of ``log grid_optima`` on ``log`` scale.
        sign_disagrees: ``grid_exponent`` and ``exponent`` are both nonzero and of opposite signs.
        interior: per scale, the paired interior test of the seed-mean curve's best grid point.
        scales: the scales (width multipliers, or dataset sizes).
        xs: the swept grid.
        seed_exponents: per seed, the slope of ``log`` (smoothed best ``x`` of that seed's own curve) on ``log``
            scale; the interval is built from these (empty when the seed counts differ across scales).
        at_edge: per scale, whether the seed-mean curve's best grid point is the grid's first or last.
    """

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
    scales: list[float] = field(default_factory=list)
    xs: list[float] = field(default_factory=list)
    seed_exponents: list[float] = field(default_factory=list)
    at_edge: list[bool] = field(default_factory=list)

    def note(self) -> str | None:
        """A caution about where the exponent comes from, or ``None``.

        - The grid exponent and the smoothed one have opposite signs: the smoothed direction comes from parabola
          vertices inside grid cells.
        - The best grid point is the same at every scale while the smoothed exponent is not 0: the exponent comes
          from the vertex moving inside one grid cell.
        - The exponent lies outside its interval (the per-seed optima and the seed mean's disagree).

        Example:
            >>> fit = ScalingFit(-0.07, (-0.15, -0.01), None, 0.95, [46.3, 37.9, 38.0], [32.0, 32.0, 32.0],
            ...     [[32.0] * 3] * 3, 0.0, False, [])
            >>> fit.note()
            'The best grid point is 32 at every scale: the exponent -0.07 comes from the smoothed optimum moving within one grid cell.'
        """  # noqa: E501
        sentences = []
        if self.sign_disagrees:
            sentences.append(
                f"The grid optima give an exponent of {self.grid_exponent:+.2f} but the smoothed optima"
                f" {self.exponent:+.2f}: opposite signs, so the direction comes from parabola vertices inside grid"
                " cells; a finer grid or more seeds would settle it."
            )
        elif self.grid_exponent == 0 and self.exponent != 0 and len(set(self.grid_optima)) == 1:
            sentences.append(
                f"The best grid point is {self.grid_optima[0]:g} at every scale: the exponent {self.exponent:+.2f}"
                " comes from the smoothed optimum moving within one grid cell."
            )
        tol = 1e-9 * max(1.0, abs(self.exponent))  # rounding: an exact fit's interval is a point
        if self.ci is not None and not self.ci[0] - tol <= self.exponent <= self.ci[1] + tol:
            sentences.append(
                f"The seed-mean curves' exponent {self.exponent:+.2f} lies outside the interval of the per-seed"
                f" exponents [{self.ci[0]:+.2f}, {self.ci[1]:+.2f}]: the seeds' own optima disagree with their"
                " mean's."
            )
        return " ".join(sentences) or None


def fit_scaling(
    scales: Sequence[float],
    xs: Sequence[float],
    curves: Sequence[Any],
    mode: Goal = "min",
    level: float = 0.95,
    window: int = 1,
    interior_level: float = 0.05,
) -> ScalingFit:
    r"""The exponent of the best ``x`` in the scale, its interval, and the per-scale evidence.

    At each scale ``s`` the best ``x`` is the smoothed optimum (:func:`~lightning_tau.tuner.curve.smoothed_optimum`,
    a parabola in ``log x`` through the best grid point and ``window`` neighbours on each side, its vertex clamped
    between the neighbours) of the seed-mean curve; ``exponent`` is the least-squares slope of ``log best x`` on
    ``log s``. A run that diverged (non-finite value) makes its grid point's mean ``inf``.

    **Interval.** Seed ``j`` (column ``j`` at every scale) gets its own exponent :math:`e_j`: the slope of the
    smoothed optima of its own curves. The interval is :math:`\bar e \pm t_{k-1,(1+level)/2}\, s_e / \sqrt{k}` over
    the ``k`` seeds. The seeds are independent, so the :math:`e_j` are too, and the t-interval accounts for
    estimating their spread from ``k`` values. (A percentile seed bootstrap does not: with 3 seeds it has 10
    distinct resamples per scale, and in the simulation below it covers 78 % at 3 seeds and 68 % at 2, nominal
    95 %.) The interval's estimand is the mean per-seed exponent; ``exponent`` is the seed-mean curves'. On
    parabola-in-``log x`` curves both are unbiased for the true exponent (mean error within 0.01 in every
    simulated regime), and the interval contains ``exponent`` in 98-100 % of the simulated runs at the demo's
    noise (95 % at four times that noise and 8 seeds); :meth:`ScalingFit.note` says when it does not. The
    interval is ``None``, with a reason, when there are fewer than :data:`MIN_SEEDS_FOR_INTERVAL` seeds, when
    the scales have different seed counts (the pairing of seed ``j`` across scales is then undefined), or when
    the seed-mean optimum is at the grid's edge at some scale (the exponent is then capped by the grid).

    **Coverage.** ``tests/test_tuner_stats.py`` simulates the regime of the digits width demo
    (``docs/width_demo.rst``): curves ``c (log2 x - log2 x*(s))^2`` with curvature ``c = 0.04`` per octave², plus
    per seed a shared offset (std 0.02) and independent noise at each grid point (std 0.02), so noise/curvature is
    0.5 octave²; a ×2 grid (one octave) with the optima at least 2 octaves inside it; widths ``s`` = 1, 4, 16;
    true exponents uniform in [-1.2, 0.2], the optimum anywhere within a grid cell. It checks that 95 % intervals
    cover within ±5 points at 2-6 seeds (500 runs each). ``benchmarks/stats_coverage.py`` runs the same
    simulation over more regimes, 1000 runs per row: 92.5-96.7 % at 2-8 seeds with noise/curvature 2, a ×4 grid,
    2 or 5 scales, or dataset sizes 0.1-1. Not covered: curves that are not parabolas in ``log x``. With
    curvatures 0.06 and 0.03 on the two sides of the optimum (noise 0.01), the vertex has a bias that depends on
    where the optimum sits in its grid cell. That bias does not shrink with more seeds, so coverage falls from
    95 % at 2 seeds to 91 % at 8.

    Args:
        scales: increasing positive scales (width multipliers ``s``, or dataset sizes ``N``), at least 2.
        xs: the swept grid shared by every scale (``λ_base`` or ``tau_epoch``), positive and increasing.
        curves: one ``len(xs) x seeds`` array per scale; within a scale column ``j`` is seed ``j`` at every grid
            point (paired), and for the interval column ``j`` is seed ``j`` at every scale.
        mode: ``"min"`` (lower is better, a loss) or ``"max"``.
        level: the interval's nominal coverage.
        window: grid points on each side of the best one that the parabola is fitted to.
        interior_level: the level of each one-sided paired test in :func:`paired_interior`.

    Raises:
        ValueError: fewer than 2 scales; scales or ``xs`` not positive and increasing; a curve count or shape that
            does not match; ``mode``, ``level``, ``window`` or ``interior_level`` invalid; or a scale at which
            every grid point has a diverged run.

    Example:
        Exact parabolas in ``log x`` whose vertex moves as ``s^{-1/2}``: 16 at ``s = 1``, 8 at ``s = 4``, 4 at
        ``s = 16``, two seeds offset from each other:

        >>> import math
        >>> xs = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
        >>> def curve(best):
        ...     return [[0.1 * (math.log2(x / best)) ** 2 + off for off in (0.5, 0.6)] for x in xs]
        >>> fit = fit_scaling([1, 4, 16], xs, [curve(16.0), curve(8.0), curve(4.0)])
        >>> round(fit.exponent, 9), fit.ci is not None, fit.grid_optima, round(fit.grid_exponent, 9)
        (-0.5, True, [16.0, 8.0, 4.0], -0.5)
        >>> fit_scaling([1, 4, 16], xs, [[[v[0]] for v in curve(b)] for b in (16.0, 8.0, 4.0)]).ci_reason
        '1 seed: an interval needs at least 2 (a spread across seeds)'
    """
    owner = "fit_scaling"
    _check_mode(mode, owner)
    level = _check_level(level, owner)
    interior_level = _check_level(interior_level, owner, "interior_level")
    _checks.positive_int(owner, "window", window, "use an integer >= 1.")
    scale_list = _check_positive_increasing(scales, owner, "scales", 2)
    grid = _check_positive_increasing(xs, owner, "xs", 1)
    if isinstance(curves, (str, bytes)) or len(curves) != len(scale_list):
        raise ValueError(
            f"`{owner}(curves=...)` is not valid: it needs one grid x seeds array per scale, {len(scale_list)} in"
            f" all, got {len(curves)}."
        )
    tables = []
    for s, values in zip(scale_list, curves):
        table = _as_table(values, owner, f"curves[scale={s:g}]")
        if table.shape[0] != len(grid):
            raise ValueError(
                f"`{owner}(curves=...)` is not valid: the curve at scale {s:g} has {table.shape[0]} rows for"
                f" {len(grid)} grid points in `xs`."
            )
        tables.append(table)

    optima, grid_optima, per_seed, interior, at_edge = [], [], [], [], []
    for s, table in zip(scale_list, tables):
        finite = np.isfinite(table)
        means = np.where(np.all(finite, axis=1), np.where(finite, table, 0.0).mean(axis=1), np.inf)
        if not np.any(np.isfinite(means)):
            raise ValueError(
                f"`{owner}(curves=...)` is not valid: at scale {s:g} every grid point has a non-finite value (a"
                " diverged run), so there is no best point."
            )
        opt = smoothed_optimum(grid, list(means), mode, window)
        optima.append(float(opt.tau_epoch))
        grid_optima.append(grid[opt.grid_index])
        at_edge.append(bool(opt.at_edge))
        scores = _scores(table, mode)
        per_seed.append(_grid_argbest(grid, scores))
        interior.append(_interior_test(scores, opt.grid_index, interior_level))
    exponent = _slope(scale_list, optima)
    grid_exponent = _slope(scale_list, grid_optima)

    seed_exponents: list[float] = []
    ci: tuple[float, float] | None = None
    counts = [t.shape[1] for t in tables]
    if len(set(counts)) > 1:
        reason: str | None = (
            f"the scales have different seed counts ({', '.join(map(str, counts))}): the interval pairs seed j"
            " across scales"
        )
    else:
        reason = None
        seed_exponents = _seed_exponents(scale_list, grid, tables, mode, window)
    k = counts[0]
    if reason is not None:
        pass
    elif k < MIN_SEEDS_FOR_INTERVAL:
        reason = (
            f"{k} seed{'s' if k != 1 else ''}: an interval needs at least {MIN_SEEDS_FOR_INTERVAL} (a spread across"
            " seeds)"
        )
    elif any(at_edge):
        s = scale_list[at_edge.index(True)]
        reason = f"the best x is at the grid's edge at scale {s:g}, so the exponent is capped by the grid: widen it"
    else:
        mean, sd = float(np.mean(seed_exponents)), float(np.std(seed_exponents, ddof=1))
        half = t_quantile((1 + level) / 2, k - 1) * sd / math.sqrt(k)
        ci = (mean - half, mean + half)
    return ScalingFit(
        exponent=exponent,
        ci=ci,
        ci_reason=reason if ci is None else None,
        level=level,
        optima=optima,
        grid_optima=grid_optima,
        per_seed_grid_optima=per_seed,
        grid_exponent=grid_exponent,
        sign_disagrees=exponent * grid_exponent < 0,
        interior=interior,
        scales=scale_list,
        xs=grid,
        seed_exponents=seed_exponents,
        at_edge=at_edge,
    )


def _seed_exponents(
    scales: list[float], grid: list[float], tables: list[np.ndarray], mode: Goal, window: int
) -> list[float]:
    """Each seed's exponent: the slope of its own smoothed optima (column ``j`` of every scale's table)."""
    # a seed with no finite value at a scale cannot reach here: every mean there would be inf (fit_scaling raises)
    # every scale shares the grid: one call for all the columns, then one row of seed optima per scale
    optima = _column_optima(grid, np.concatenate(tables, axis=1), mode, window).reshape(len(scales), -1)
    log_s = np.log(np.asarray(scales)) - np.mean(np.log(scales))
    slopes = log_s @ np.log(optima) / (log_s @ log_s)  # one least-squares slope per seed
    return [float(e) for e in slopes]


def _column_optima(grid: list[float], table: np.ndarray, mode: Goal, window: int) -> np.ndarray:
    """:func:`~lightning_tau.tuner.curve.smoothed_optimum` of every column of ``table`` at once (the same rule).

    One least-squares solve per distinct best grid point instead of one ``polyfit`` per column: the coverage
    simulation calls :func:`fit_scaling` thousands of times. Columns with no finite value are the caller's to
    rule out.
    """
    scores = _scores(table, mode)
    rows = scores.shape[0]
    best = np.argmin(scores, axis=0)  # the first best, as smoothed_optimum's list.index(min)
    out = np.asarray(grid, dtype=float)[best]
    log_x = np.log(np.asarray(grid, dtype=float))
    for b in set(best.tolist()):
        if b == 0 or b == rows - 1:  # at an edge: the grid point
            continue
        lo, hi = max(0, b - window), min(rows, b + window + 1)
        cols = np.flatnonzero(best == b)
        cols = cols[np.all(np.isfinite(scores[lo:hi, cols]), axis=0)]  # a non-finite value in the window: grid point
        if cols.size == 0:
            continue
        (a, slope, _), *_ = np.linalg.lstsq(np.vander(log_x[lo:hi], 3), scores[lo:hi, cols], rcond=None)
        opens_up = a > 0  # else no minimum: the grid point
        vertex = -slope[opens_up] / (2 * a[opens_up])
        out[cols[opens_up]] = np.exp(np.clip(vertex, log_x[b - 1], log_x[b + 1]))
    return out
