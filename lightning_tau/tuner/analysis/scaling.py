"""Statistics of the finder's width and dataset-size axes: the scaling exponent of the best ``x``, with an interval that
reaches its nominal coverage.

:func:`fit_scaling`, and the axes' other statistics re-exported from the modules below. Pure (numpy and the standard
library).

More: docs/finder.rst, module notes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lightning_tau import _checks
from lightning_tau._constants import Goal
from lightning_tau._numbers import exponent as exponent_text
from lightning_tau._numbers import interval
from lightning_tau.tuner.analysis import rules
from lightning_tau.tuner.analysis.curve import smoothed_optimum
from lightning_tau.tuner.analysis.grid_best import (
    InteriorTest,
    _as_table,
    _check_level,
    _check_mode,
    _check_positive_increasing,
    _grid_argbest,
    _interior_test,
    _scores,
    paired_interior,
    per_seed_optima,
)
from lightning_tau.tuner.analysis.rules import DEFAULT_TOLERANCE
from lightning_tau.tuner.analysis.staging import seed_stages, staged_level
from lightning_tau.tuner.analysis.tdist import t_quantile

__all__ = [
    "MIN_SEEDS_FOR_INTERVAL",
    "InteriorTest",
    "ScalingFit",
    "fit_scaling",
    "paired_interior",
    "per_seed_optima",
    "seed_stages",
    "staged_level",
]

#: The smallest number of seeds at which :func:`fit_scaling` gives an interval. Its interval is built from Student
#: t-intervals over per-seed exponents, with ``seeds - 1`` degrees of freedom; they need a spread across seeds, so
#: two. The simulation (``tests/tuner/analysis/test_scaling.py``, ``benchmarks/stats_coverage.py``; regimes in
#: :func:`fit_scaling`) puts its coverage at 97.5-100 % at every seed count from 2 to 12 in every simulated regime
#: (at 2 seeds 99.5-100 %; with the shape changing across scales on the finder's grid 99.3-100 %), so no seed count
#: from 2 up is refused. With 2 seeds it is honest but wide (``t_{1, 0.975} = 12.7``): about ±0.7 on the demo's
#: noise, so it rarely tells the published rules apart.
MIN_SEEDS_FOR_INTERVAL: int = 2


#: The interval of :func:`fit_scaling` is the envelope of its smoothers' t-intervals widened on each side by this
#: times the spread of their means (the shape part is then the centre ± the spread, :func:`_interval_parts`). In the
#: simulation (600 runs per cell, every regime of ``benchmarks/stats_coverage.py`` at 3, 8 and 12 seeds) the envelope
#: alone covered 94.0-100 %, widened by half a spread 97.8-100 %, by a whole one 98.7-100 % (up to twice the
#: envelope's width where the smoothers disagree most).
_SPREAD_WIDENING: float = 0.5

#: The lopsided parabola of :func:`fit_scaling` is fitted to ``window + LOPSIDED_EXTRA`` neighbours on each side of
#: the best grid point (5 to 7 points of the finder's 7-point grid at ``window=1``): it has four parameters, and
#: through 3 neighbours its intervals were narrower than through 2 in the simulation (``benchmarks/README.md``).
LOPSIDED_EXTRA: int = 2


def _slope(x: Sequence[float], y: Sequence[float]) -> float:
    """Least-squares slope of ``log y`` on ``log x`` (exactly 0 when every ``y`` is the same)."""
    lx, ly = np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float))
    lx, ly = lx - lx.mean(), ly - ly.mean()
    return float(np.dot(lx, ly) / np.dot(lx, lx))


# --- the scaling exponent -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScalingFit:
    """How the best ``x`` of a sweep moves with scale: its exponent, the interval, and the evidence beside it.

    Attributes:
        exponent: the estimate of the exponent of the best ``x`` in the scale. With an interval, its centre (the
            estimate the interval is built around, see :func:`fit_scaling`); without one, the midpoint of the
            smoothing windows' mean per-seed exponents, or ``curve_exponent`` when the scales' seed counts differ.
        ci: the interval at ``level`` (see :func:`fit_scaling`), or ``None``.
        ci_reason: why ``ci`` is ``None`` (else ``None``).
        level: the interval's nominal coverage, e.g. 0.95.
        optima: per scale, the smoothed best ``x`` of the seed-mean curve.
        grid_optima: per scale, the seed-mean curve's best grid ``x``.
        per_seed_grid_optima: per scale, per seed, the best grid ``x`` of that seed's curve.
        grid_exponent: slope of ``log grid_optima`` on ``log`` scale.
        sign_disagrees: ``grid_exponent`` and ``exponent`` are both nonzero (beyond ``1e-9``, rounding) and of
            opposite signs.
        interior: per scale, the paired interior test of the seed-mean curve's best grid point.
        scales: the scales (width multipliers, or dataset sizes).
        xs: the swept grid.
        seed_exponents: per seed, the slope of ``log`` (smoothed best ``x`` of that seed's own curve, at the fit's
            ``window``) on ``log`` scale (empty when the seed counts differ across scales).
        at_edge: per scale, whether the seed-mean curve's best grid point is the grid's first or last.
        curve_exponent: least-squares slope of ``log optima`` (the seed-mean curves' smoothed optima) on ``log``
            scale: a second estimator, labelled as such (``nan`` on a hand-made fit that does not give it).
        tolerance: the factor by which the best ``x`` may move over the range of scales and still count as the
            same rule (:mod:`lightning_tau.tuner.analysis.rules`); :attr:`half_width` is it in exponent units.
        window_cis: per smoother (``"parabola 1"``, ``"lopsided 3"`` at ``window=1``), the t-interval of its
            per-seed exponents; ``ci`` is their envelope widened on each side by half the spread of their centres
            (empty without an interval).
        interval_parts: ``ci`` split into the part the seeds make and the part the curve's shape makes, each an
            interval around ``ci``'s centre whose half-widths add up to ``ci``'s: ``{"seeds": (lo, hi), "shape":
            (lo, hi)}`` (``None`` without an interval); the shape part is the centre ± the spread between the
            smoothers' mean exponents. Only the seeds part shrinks as ``1/sqrt(seeds)``; when the
            shape part alone straddles a rule's band edge, more seeds cannot decide the rule, points nearer the
            optimum can (``../THEORY.md`` §13).
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
    curve_exponent: float = math.nan
    tolerance: float = DEFAULT_TOLERANCE
    window_cis: dict[str, tuple[float, float]] = field(default_factory=dict)
    interval_parts: dict[str, tuple[float, float]] | None = None

    @property
    def half_width(self) -> float:
        """``tolerance`` in exponent units over ``scales`` (:func:`~lightning_tau.tuner.analysis.rules.half_width`).

        Raises:
            ValueError: ``scales`` do not span a range (a hand-made fit without them).
        """
        return rules.half_width(self.tolerance, self.scales)

    def note(self, half_width: float | None = None) -> str | None:
        """A caution about where the exponent comes from, or ``None``; ``half_width`` is :attr:`half_width` where the
        caller computed it already (an axis result's), else it is computed here.

        - The grid optima and the estimate move the best ``x`` over the range of scales by factors further apart
          than ``tolerance`` (``|grid_exponent - exponent| >`` :attr:`half_width`): the estimate's movement comes
          from smoothed optima inside grid cells. Needs ``scales`` (a fit by :func:`fit_scaling` has them).
        - ``curve_exponent`` (the seed-mean curves') lies outside the interval: the seeds' own optima disagree with
          their mean's.

        Example:
            >>> fit = ScalingFit(-0.2, (-0.3, -0.1), None, 0.95, [46.3, 33.0, 26.0], [32.0, 32.0, 32.0],
            ...     [[32.0] * 3] * 3, 0.0, False, [], scales=[1.0, 4.0, 16.0])
            >>> fit.note()
            'The best grid point is 32 at every scale, but the estimate moves the best x by a factor of 0.574 from scale 1 to 16 (exponent -0.20), more than the tolerance x1.25: the movement comes from smoothed optima inside one grid cell; a finer grid or more seeds would settle it.'
        """  # noqa: E501
        sentences = []
        finite = math.isfinite(self.grid_exponent) and math.isfinite(self.exponent)
        ranged = finite and len(set(self.scales)) >= 2
        delta = (self.half_width if half_width is None else half_width) if ranged else math.inf
        if ranged and abs(self.grid_exponent - self.exponent) > delta:
            low, high = min(self.scales), max(self.scales)
            span, estimate = f"from scale {low:g} to {high:g}", f"{(high / low) ** self.exponent:.3g}"
            if len(set(self.grid_optima)) == 1:
                sentences.append(
                    f"The best grid point is {self.grid_optima[0]:g} at every scale, but the estimate moves the best"
                    f" x by a factor of {estimate} {span} (exponent {exponent_text(self.exponent)}), more than the"
                    f" tolerance x{self.tolerance:g}: the movement comes from smoothed optima inside one grid cell; a"
                    " finer grid or more seeds would settle it."
                )
            else:
                sentences.append(
                    f"The grid's best points move by a factor of {(high / low) ** self.grid_exponent:.3g} {span}"
                    f" (exponent {exponent_text(self.grid_exponent)}) but the smoothed estimate by {estimate} (exponent"
                    f" {exponent_text(self.exponent)}), further apart than the tolerance x{self.tolerance:g}: the"
                    " estimate's movement comes from smoothed optima inside grid cells; a finer grid or more seeds"
                    " would settle it."
                )
        curve = self.curve_exponent
        tol = 1e-9 * max(1.0, abs(curve)) if math.isfinite(curve) else 0.0  # rounding: an exact fit's ci is a point
        if self.ci is not None and math.isfinite(curve) and not self.ci[0] - tol <= curve <= self.ci[1] + tol:
            sentences.append(
                f"The seed-mean curves' exponent {exponent_text(curve)} lies outside the interval"
                f" {interval(*self.ci)}: the seeds' own optima disagree with their mean's."
            )
        return " ".join(sentences) or None


def _sign(value: float) -> int:
    """``-1``, ``0`` or ``1``; below ``1e-9`` in size is ``0`` (the rounding of a slope through equal points)."""
    return 0 if abs(value) < 1e-9 else (1 if value > 0 else -1)


def fit_scaling(
    scales: Sequence[float],
    xs: Sequence[float],
    curves: Sequence[Any],
    mode: Goal = "min",
    level: float = 0.95,
    window: int = 1,
    interior_level: float = 0.05,
    tolerance: float = DEFAULT_TOLERANCE,
) -> ScalingFit:
    r"""The exponent of the best ``x`` in the scale, its interval, and the per-scale evidence.

    At each scale ``s`` the best ``x`` of a curve is its smoothed optimum
    (:func:`~lightning_tau.tuner.analysis.curve.smoothed_optimum`: a parabola in ``log x`` through the best grid point and
    its neighbours on each side, its vertex clamped between the nearest neighbours). ``optima`` are the seed-mean
    curves' (``window`` neighbours), and ``curve_exponent`` is the least-squares slope of their ``log`` on ``log s``.
    A run that diverged (non-finite value) makes its grid point's mean ``inf``.

    **Interval and estimate.** Seed ``j`` (column ``j`` at every scale) gets its own exponent under each of two
    smoothers: the parabola through ``window`` neighbours on each side of the best grid point, and a lopsided
    parabola through ``window + 2`` (:data:`LOPSIDED_EXTRA`), whose curvature may differ on the two sides of its
    vertex (:func:`_column_optima_lopsided`); a seed's exponent is the slope of the smoothed optima of its own
    curves. For each smoother the ``k`` seeds give a t-interval,
    :math:`\bar e_w \pm t_{k-1,(1+level)/2}\, s_w / \sqrt{k}` (the seeds are independent, so their exponents are
    too). The interval is the envelope of the two, widened on each side by half the spread
    :math:`|\bar e_1 - \bar e_2|` between the smoothers' means. A parabola's vertex moves toward the flatter side
    of a lopsided curve, by an amount that depends on the lopsidedness and on where the optimum sits in its grid
    cell; where the curve's shape changes with scale (sharp and symmetric at small N, flat and lopsided at large
    N) that error changes with scale too, and the exponent inherits it. It is shared by every seed, so more seeds
    do not shrink it: the former interval, two parabolas through ``window`` and ``window + 1`` widened by their
    whole spread, covered 95.5, 90.0 and 82.7 % at 3, 5 and 8 seeds there (a bias of +0.04 that stayed). The
    lopsided fit does not lean, so the two smoothers' disagreement measures that error; ``interval_parts`` holds
    it as the shape part (the centre ± the spread). ``exponent`` is the interval's centre; ``window_cis`` holds
    each smoother's t-interval. On exact parabolas both smoothers give the vertex, the spread is 0, and the
    interval is the t-interval around the exact exponent. Without an interval ``exponent`` is the midpoint of the
    smoothers' mean per-seed exponents (with one seed, its two exponents), or ``curve_exponent`` when the scales'
    seed counts differ. (A percentile seed bootstrap does not account for estimating the spread from ``k`` values:
    with 3 seeds it has 10 distinct resamples per scale and covered 78 % at 3 seeds and 68 % at 2, nominal 95 %.)

    The interval is ``None``, with a reason, when there are fewer than :data:`MIN_SEEDS_FOR_INTERVAL` seeds, when
    the scales have different seed counts (the pairing of seed ``j`` across scales is then undefined), or when
    the seed-mean optimum is at the grid's edge at some scale (the exponent is then capped by the grid).

    **Coverage.** ``tests/tuner/analysis/test_scaling.py`` simulates curves in ``log2 x`` with the optimum
    ``x*(s) = x*(1) s^e``, ``e`` uniform in [-1.2, 0.2], ``x*(1)`` anywhere within a cell of a ×2 grid, widths
    ``s`` = 1, 4, 16, per seed a shared offset (std 0.02) and noise at each grid point, in seven regimes: the
    digits width demo's (``docs/width_demo.rst``: parabolas of curvature 0.04 per octave², noise 0.02);
    asymmetric parabolas (curvatures 0.06/0.03 and 0.08/0.02 on the two sides, noise 0.01); V shapes
    ``c |log2 x - log2 x*|`` (slopes 0.05, and 0.08/0.03 on the two sides); and a seed's noise correlated 0.8
    between neighbouring grid points and 0.5 across scales (on the demo's parabola, and on the 0.06/0.03 one). An
    eighth has a shape that changes with scale, on the finder's default grid (``tau_epoch`` 2 to 128) over dataset
    sizes 0.1-1: curvature 0.14 to 0.013 per octave² and left/right rise 1.2 to 2.1 from the smallest size to the
    largest, noise 0.005. It checks coverage >= 93 % at 2-8 seeds in each, and under the staging of
    :func:`seed_stages` with :func:`staged_level`. ``benchmarks/stats_coverage.py`` prints them beside the former
    interval with ten more regimes (noise/curvature 2, a ×4 grid, 2 or 5 scales, dataset sizes 0.1-1, the demo's
    parabola on the finder's grid, the changing shape at noise 0.002 and 0.01, mirrored, and on the wide grid).
    Measured (1000 runs per cell, ``benchmarks/README.md``): 97.5-100 % at 2-12 seeds in every regime; the changing
    shape 99.3-100 % on the finder's grid at noise 0.005 (the former interval 78.6-98.9 %), 99.0-99.9 % at 2-8 seeds
    on its variants (the lowest, 97.5 %, mirrored at 12 seeds); the asymmetric V 99.9-100 % (the former 90.5 % at
    12 seeds). The price is width on V shapes, where a lopsided parabola fits less well: 1.4-1.8 times the former
    interval's; on parabolas, lopsided or not, 0.8-1.35 times (the most at 2 seeds).

    Args:
        scales: increasing positive scales (width multipliers ``s``, or dataset sizes ``N``), at least 2.
        xs: the swept grid shared by every scale (``λ_base`` or ``tau_epoch``), positive and increasing.
        curves: one ``len(xs) x seeds`` array per scale; within a scale column ``j`` is seed ``j`` at every grid
            point (paired), and for the interval column ``j`` is seed ``j`` at every scale.
        mode: ``"min"`` (lower is better, a loss) or ``"max"``.
        level: the interval's nominal coverage.
        window: grid points on each side of the best one that the parabola is fitted to.
        interior_level: the level of each one-sided paired test in :func:`paired_interior`.
        tolerance: kept on the fit for its note (:attr:`ScalingFit.half_width`): a factor above 1, checked where the
            user gave it (``TimescaleFinder``, ``AxisResult.build``), not again here.

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
    curve_exponent = _slope(scale_list, optima)
    grid_exponent = _slope(scale_list, grid_optima)

    smoothers = _smoother_names(window)
    seed_table: np.ndarray | None = None
    ci: tuple[float, float] | None = None
    window_cis: dict[str, tuple[float, float]] = {}
    parts: dict[str, tuple[float, float]] | None = None
    counts = [t.shape[1] for t in tables]
    k = counts[0]
    if len(set(counts)) > 1:
        reason: str | None = (
            f"the scales have different seed counts ({', '.join(map(str, counts))}): the interval pairs seed j"
            " across scales"
        )
    else:
        seed_table = _seed_exponents(scale_list, grid, tables, mode, *_smoothers(window))
        if k < MIN_SEEDS_FOR_INTERVAL:
            reason = (
                f"{k} seed{'s' if k != 1 else ''}: an interval needs at least {MIN_SEEDS_FOR_INTERVAL} (a spread"
                " across seeds)"
            )
        elif any(at_edge):
            s = scale_list[at_edge.index(True)]
            reason = f"the best x is at the grid's edge at scale {s:g}, so the exponent is capped by the grid: widen it"
        else:
            reason = None
            low, high, lows, highs = _envelope(seed_table, level)
            ci = (float(low), float(high))
            window_cis = {name: (float(lo), float(hi)) for name, lo, hi in zip(smoothers, lows, highs)}
            parts = _interval_parts(ci, seed_table)
    if ci is not None:
        exponent = (ci[0] + ci[1]) / 2
    elif seed_table is not None:
        means = seed_table.mean(axis=1)
        exponent = float(means.max() + means.min()) / 2
    else:
        exponent = curve_exponent
    return ScalingFit(
        exponent=exponent,
        ci=ci,
        ci_reason=reason,
        level=level,
        optima=optima,
        grid_optima=grid_optima,
        per_seed_grid_optima=per_seed,
        grid_exponent=grid_exponent,
        sign_disagrees=_sign(exponent) * _sign(grid_exponent) < 0,
        interior=interior,
        scales=scale_list,
        xs=grid,
        seed_exponents=[float(e) for e in seed_table[0]] if seed_table is not None else [],
        at_edge=at_edge,
        curve_exponent=curve_exponent,
        tolerance=float(tolerance),
        window_cis=window_cis,
        interval_parts=parts,
    )


def _smoothers(window: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The smoothers of :func:`fit_scaling` at ``window``, as :func:`_seed_exponents` takes them: the windows of its
    parabolas (``window`` neighbours on each side) and of its lopsided parabolas (``window + LOPSIDED_EXTRA``)."""
    return (window,), (window + LOPSIDED_EXTRA,)


def _smoother_names(window: int) -> list[str]:
    """The keys of :attr:`ScalingFit.window_cis`, in :func:`_seed_exponents`' row order.

    Example:
        >>> _smoother_names(1)
        ['parabola 1', 'lopsided 3']
    """
    windows, lopsided = _smoothers(window)
    return [f"parabola {w}" for w in windows] + [f"lopsided {w}" for w in lopsided]


def _interval_parts(ci: tuple[float, float], seed_table: np.ndarray) -> dict[str, tuple[float, float]]:
    """``ci`` split into its seeds part and its shape part (:attr:`ScalingFit.interval_parts`).

    ``ci`` is the envelope of the smoothers' t-intervals widened by half the spread of their means on each side:
    with equal t half-widths ``h`` its half-width is ``h + spread`` (half the spread between the means, plus half
    the spread on each side). The shape part is ``centre ± spread``, which no number of seeds shrinks; the seeds
    part the rest of the half-width, ``centre ± (half - spread)``.

    Example:
        >>> table = np.array([[0.1, 0.2, 0.3], [0.2, 0.3, 0.4]])  # two smoothers' exponents of three seeds
        >>> {k: tuple(round(v, 3) for v in part) for k, part in _interval_parts((-0.3, 0.8), table).items()}
        {'seeds': (-0.2, 0.7), 'shape': (0.15, 0.35)}
    """
    means = seed_table.mean(axis=1)
    shape_half = (0.5 + _SPREAD_WIDENING) * float(means.max() - means.min())
    centre, half = (ci[0] + ci[1]) / 2, (ci[1] - ci[0]) / 2
    seeds_half = max(0.0, half - shape_half)
    return {"seeds": (centre - seeds_half, centre + seeds_half), "shape": (centre - shape_half, centre + shape_half)}


def _seed_exponents(
    scales: Sequence[float],
    grid: list[float],
    tables: Sequence[np.ndarray],
    mode: Goal,
    windows: Sequence[int],
    lopsided: Sequence[int] = (),
) -> np.ndarray:
    """Each column's exponent under each smoother: ``(len(windows) + len(lopsided)) x columns``, the parabolas
    through ``windows`` neighbours first, then the lopsided parabolas (:func:`_column_optima_lopsided`) through
    ``lopsided`` neighbours.

    Column ``j`` of every scale's table is one seed; its exponent is the slope of its own smoothed optima. Vectorized
    over columns, so the coverage simulation passes thousands of runs' seeds side by side.
    """
    # a seed with no finite value at a scale cannot reach here: every mean there would be inf (fit_scaling raises)
    # every scale shares the grid: one call for all the columns, then one row of seed optima per scale
    stacked = np.concatenate(tables, axis=1)
    log_s = np.log(np.asarray(scales, dtype=float))
    log_s = log_s - log_s.mean()
    smoothers = [(_column_optima, w) for w in windows] + [(_column_optima_lopsided, w) for w in lopsided]
    out = np.empty((len(smoothers), tables[0].shape[1]))
    for i, (optima_of, window) in enumerate(smoothers):
        optima = optima_of(grid, stacked, mode, window).reshape(len(scales), out.shape[1])  # a row per scale
        out[i] = log_s @ np.log(optima) / (log_s @ log_s)  # one least-squares slope per seed
    return out


def _envelope(seed_exponents: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The interval of :func:`fit_scaling` over the last axis (the ``k`` seeds), vectorized over the middle ones.

    ``seed_exponents`` is ``smoothers x ... x k``. Each smoother gets a t-interval; the interval is their envelope
    widened on each side by :data:`_SPREAD_WIDENING` times the spread of the smoothers' means. Returns
    ``(low, high, lows, highs)``: the interval's ends (shape ``...``) and each smoother's t-interval ends
    (``smoothers x ...``).
    """
    k = seed_exponents.shape[-1]
    means = seed_exponents.mean(axis=-1)
    half = t_quantile((1 + level) / 2, k - 1) * seed_exponents.std(axis=-1, ddof=1) / math.sqrt(k)
    lows, highs = means - half, means + half
    spread = means.max(axis=0) - means.min(axis=0)
    return lows.min(axis=0) - _SPREAD_WIDENING * spread, highs.max(axis=0) + _SPREAD_WIDENING * spread, lows, highs


def _column_optima(grid: list[float], table: np.ndarray, mode: Goal, window: int) -> np.ndarray:
    """:func:`~lightning_tau.tuner.analysis.curve.smoothed_optimum` of every column of ``table`` at once (the same rule).

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


def _column_optima_lopsided(grid: list[float], table: np.ndarray, mode: Goal, window: int) -> np.ndarray:
    r"""The vertex of a lopsided parabola in ``log x`` for every column of ``table``: a curvature of its own on each
    side, :math:`a + L (u - v)^2` left of the vertex ``v`` and :math:`a + R (u - v)^2` right of it (``u = log x``),
    fitted by least squares to the best grid point and ``window`` neighbours on each side; ``exp(v)`` within the
    best point's two neighbours, as :func:`_column_optima`.

    A parabola with one curvature puts its vertex toward the flatter side of a lopsided curve; this fit does not, so
    its disagreement with the parabola measures that bias (:func:`fit_scaling`). At each ``v`` the fit is linear in
    ``(a, L, R)``; ``v`` is the one with the least residual among those with ``L, R > 0`` (profile least squares:
    a scan of the bracket in 20 steps, then a golden-section search between the best step's neighbours). Four
    parameters: where the window has fewer than 4 points, no ``v`` gives ``L, R > 0``, or a value in the window is
    not finite, the column gets :func:`_column_optima`'s value at the same ``window``.

    Example:
        >>> grid = [2.0**k for k in range(1, 8)]
        >>> u = np.log(grid)[:, None]
        >>> v = np.log([10.0, 40.0])
        >>> table = np.where(u < v, 0.3, 0.05) * (u - v) ** 2 + 0.5  # steeper left of the vertex
        >>> np.round(_column_optima_lopsided(grid, table, "min", 3), 6)
        array([10., 40.])
        >>> np.round(_column_optima(grid, table, "min", 3), 2)  # one curvature: toward the flatter side
        array([21.41, 56.96])
    """
    out = _column_optima(grid, table, mode, window)
    scores = _scores(table, mode)
    rows = scores.shape[0]
    best = np.argmin(scores, axis=0)
    log_x = np.log(np.asarray(grid, dtype=float))
    for b in set(best.tolist()):
        lo, hi = max(0, b - window), min(rows, b + window + 1)
        if b == 0 or b == rows - 1 or hi - lo < 4:
            continue
        cols = np.flatnonzero(best == b)
        cols = cols[np.all(np.isfinite(scores[lo:hi, cols]), axis=0)]
        if cols.size == 0:
            continue
        u, y = log_x[lo:hi], scores[lo:hi, cols]
        vs = np.linspace(log_x[b - 1], log_x[b + 1], 21)
        rss = np.stack([_lopsided_rss(u, y, np.full(cols.size, v)) for v in vs])  # steps x columns
        pick = rss.argmin(axis=0)
        found = np.isfinite(rss[pick, np.arange(cols.size)])
        step = vs[1] - vs[0]
        low = np.maximum(vs[pick] - step, vs[0])
        high = np.minimum(vs[pick] + step, vs[-1])
        inner_low, inner_high = high - _GOLDEN * (high - low), low + _GOLDEN * (high - low)
        rss_low, rss_high = _lopsided_rss(u, y, inner_low), _lopsided_rss(u, y, inner_high)
        for _ in range(44):  # golden section: the bracket (two scan steps) shrinks to 0.618^44 ~ 1e-9 of it
            keep_low = rss_low <= rss_high  # the minimum is in [low, inner_high]
            low, high = np.where(keep_low, low, inner_low), np.where(keep_low, inner_high, high)
            new = np.where(keep_low, high - _GOLDEN * (high - low), low + _GOLDEN * (high - low))
            rss_new = _lopsided_rss(u, y, new)
            inner_low, inner_high = np.where(keep_low, new, inner_high), np.where(keep_low, inner_low, new)
            rss_low, rss_high = np.where(keep_low, rss_new, rss_high), np.where(keep_low, rss_low, rss_new)
        vertex = (low + high) / 2
        vertex = np.where(_lopsided_rss(u, y, vertex) <= rss[pick, np.arange(cols.size)], vertex, vs[pick])
        out[cols[found]] = np.exp(vertex[found])
    return out


_GOLDEN = (math.sqrt(5) - 1) / 2


def _lopsided_rss(u: np.ndarray, y: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The residual sum of squares of the lopsided parabola with vertex ``v[j]`` fitted to column ``j`` of ``y``
    (points ``u``), ``inf`` where a side's curvature is not positive or has no point to fit.

    The sides share no point, so the normal equations of ``(a, L, R)`` have a zero between ``L`` and ``R`` and solve
    in closed form, elementwise over the columns.
    """
    d = u[:, None] - v[None, :]  # points x columns
    left, right = np.minimum(d, 0) ** 2, np.maximum(d, 0) ** 2
    sum_l, sum_r, sum_l2, sum_r2 = left.sum(axis=0), right.sum(axis=0), (left**2).sum(axis=0), (right**2).sum(axis=0)
    y_l, y_r = (y * left).sum(axis=0), (y * right).sum(axis=0)
    fits = (sum_l2 > 0) & (sum_r2 > 0)
    sum_l2, sum_r2 = np.where(fits, sum_l2, 1.0), np.where(fits, sum_r2, 1.0)
    pivot = len(u) - sum_l**2 / sum_l2 - sum_r**2 / sum_r2  # > 0: the points are not all on the two parabolas' axes
    a = (y.sum(axis=0) - sum_l * y_l / sum_l2 - sum_r * y_r / sum_r2) / np.where(fits, pivot, 1.0)
    curve_l, curve_r = (y_l - sum_l * a) / sum_l2, (y_r - sum_r * a) / sum_r2
    rss = ((y - a - curve_l * left - curve_r * right) ** 2).sum(axis=0)
    return np.where(fits & (curve_l > 0) & (curve_r > 0), rss, np.inf)
