"""The timescale finder's curve maths: the ``tau_epoch`` grid, one run's metric, the smoothed optimum and its range.

No Lightning import (numpy and the standard library only).

More: docs/finder.rst, module notes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, NamedTuple

import numpy as np

from lightning_tau._constants import GOALS, Goal
from lightning_tau.tuner.analysis.tdist import paired_half_width, t_quantile

__all__ = [
    "DEFAULT_TAU_EPOCHS",
    "LONG_TIMESCALE",
    "NEGLIGIBLE_SD",
    "PRUNER_NAMES",
    "SmoothedOptimum",
    "log_grid",
    "optimum_range",
    "plateau",
    "reduce_metric",
    "smoothed_optimum",
]


#: The finder's default grid: ``tau_epoch`` from 2 to 128 epochs, doubling (7 points).
DEFAULT_TAU_EPOCHS: tuple[float, ...] = (2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0)
#: The pruners ``TimescaleFinder(pruner=...)`` and ``lightning-tau find --pruner`` name (here, where the command's
#: parser reads them without importing Optuna; :func:`lightning_tau.tuner.finder.make_pruner` builds them).
PRUNER_NAMES: tuple[str, ...] = ("median", "successive_halving", "hyperband")
#: A ``tau_epoch`` at least this many times the run's epochs is longer than the run: the weights cover at most half a
#: timescale, so they keep most of their initialisation (``exp(-1/2) = 61 %``) and weight decay has little to act on.
LONG_TIMESCALE: float = 2.0
#: A grid point's mean within this many of the best point's seed s.d. of the best is a tie for :func:`plateau`, however
#: consistently the seeds find it (a quarter of the seeds' own spread: below what anyone tells apart run to run).
NEGLIGIBLE_SD: float = 0.25


def reduce_metric(values: Sequence[float], reduce: Literal["last", "best"], mode: Goal) -> float:
    """One run's value of the monitored metric from its per-epoch values: the last one (``reduce="last"``) or the
    best finite one (``reduce="best"``, the smallest for ``mode="min"``); ``nan`` when there is none.

    Example:
        >>> reduce_metric([0.9, 0.5, 0.7], "last", "min"), reduce_metric([0.9, 0.5, 0.7], "best", "min")
        (0.7, 0.5)
        >>> reduce_metric([0.9, float("nan"), 0.7], "best", "max"), reduce_metric([float("nan")], "best", "min")
        (0.9, nan)
    """
    if not values:
        return math.nan
    if reduce == "last":
        return float(values[-1])
    finite = [float(v) for v in values if math.isfinite(v)]
    if not finite:
        return math.nan
    return min(finite) if mode == "min" else max(finite)


def log_grid(low: float, high: float, num: int) -> tuple[float, ...]:
    """``num`` values from ``low`` to ``high``, evenly spaced in ``log``: a ``tau_epoch`` grid.

    Raises:
        ValueError: ``low`` or ``high`` not positive and finite, ``high < low``, or ``num < 1``.

    Example:
        >>> log_grid(1.0, 100.0, 3)
        (1.0, 10.0, 100.0)
        >>> log_grid(2.0, 128.0, 4)
        (2.0, 8.0, 32.0, 128.0)
        >>> log_grid(10.0, 1.0, 3)
        Traceback (most recent call last):
        ...
        ValueError: `log_grid(low=10.0, high=1.0)`: `high` must be at least `low`.
    """
    for name, value in (("low", low), ("high", high)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
            raise ValueError(f"`log_grid({name}={value!r})` is not valid: use a positive finite number.")
    if high < low:
        raise ValueError(f"`log_grid(low={low!r}, high={high!r})`: `high` must be at least `low`.")
    if isinstance(num, bool) or not isinstance(num, int) or num < 1:
        raise ValueError(f"`log_grid(num={num!r})` is not valid: use a positive integer.")
    if num == 1:
        return (float(low),)
    step = (math.log(high) - math.log(low)) / (num - 1)
    # 12 significant digits: exact grids stay exact (10.0, not 10.000000000000002)
    values = [float(f"{math.exp(math.log(low) + i * step):.12g}") for i in range(num)]
    values[0], values[-1] = float(low), float(high)
    return tuple(values)


class SmoothedOptimum(NamedTuple):
    """What :func:`smoothed_optimum` found.

    Attributes:
        tau_epoch: the suggested timescale (the parabola's vertex, or the best grid point).
        metric: the parabola's value at the vertex (the best grid value when no parabola was used).
        grid_index: index of the best grid point (the argmin, or argmax for ``mode="max"``).
        at_edge: the best grid point is the first or last one: the true optimum may lie outside the grid.
        smoothed: a parabola was fitted and used.
    """

    tau_epoch: float
    metric: float
    grid_index: int
    at_edge: bool
    smoothed: bool


def smoothed_optimum(
    tau_epochs: Sequence[float], values: Sequence[float], mode: Goal = "min", window: int = 1
) -> SmoothedOptimum:
    r"""The optimum of a metric curve over ``tau_epochs``, smoothed by a parabola in ``log(tau_epoch)``.

    With ``x = log(tau_epoch)`` and ``i`` the best grid point, fit ``y = a x^2 + b x + c`` by least squares to
    the points ``i - window .. i + window`` (those on the grid) and return the vertex
    :math:`\tau^* = \exp(-b / 2a)`, clamped to ``[tau_{i-1}, tau_{i+1}]``. With ``window=1`` the parabola passes
    through the three points. Falls back to the best grid point (``smoothed=False``) when it is at an edge of the
    grid, when a value in the window is not finite, or when the parabola has no minimum (``a <= 0``; no maximum,
    ``a >= 0``, for ``mode="max"``). Non-finite values (a diverged run) count as the worst.

    Args:
        tau_epochs: the grid, strictly increasing, positive.
        values: the metric at each grid point (e.g. the mean over seeds).
        mode: ``"min"`` (lower is better, a loss) or ``"max"``.
        window: grid points on each side of the best one that the parabola is fitted to (at least 1).

    Raises:
        ValueError: lengths differ, the grid is empty, not positive or not increasing, ``mode`` or ``window``
            invalid, or no value is finite.

    Example:
        A curve that is exactly a parabola in ``log(tau_epoch)`` with its minimum at 10 (off the grid):

        >>> import math
        >>> grid = [1.0, 3.0, 9.0, 27.0, 81.0]
        >>> loss = [0.5 + (math.log(t) - math.log(10.0)) ** 2 for t in grid]
        >>> opt = smoothed_optimum(grid, loss)
        >>> round(opt.tau_epoch, 6), round(opt.metric, 6), opt.grid_index, opt.at_edge
        (10.0, 0.5, 2, False)
        >>> smoothed_optimum(grid, [3.0, 2.0, 1.0, 0.5, 0.4]).at_edge  # still falling at the largest tau
        True
    """
    if mode not in GOALS:
        raise ValueError(f"`smoothed_optimum(mode={mode!r})` is not supported. Use 'min' or 'max'.")
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError(f"`smoothed_optimum(window={window!r})` is not valid: use an integer >= 1.")
    if len(tau_epochs) != len(values) or not tau_epochs:
        raise ValueError(
            f"`smoothed_optimum` needs one value per grid point, got {len(tau_epochs)} tau_epochs and"
            f" {len(values)} values."
        )
    taus = [float(t) for t in tau_epochs]
    if any(not (math.isfinite(t) and t > 0) for t in taus) or any(b <= a for a, b in zip(taus, taus[1:])):
        raise ValueError(f"`smoothed_optimum(tau_epochs={list(tau_epochs)!r})` must be positive and increasing.")
    sign = 1.0 if mode == "min" else -1.0
    # lower is better after the sign flip; a non-finite value is the worst
    scores = [sign * float(v) if math.isfinite(float(v)) else math.inf for v in values]
    if all(s == math.inf for s in scores):
        raise ValueError("`smoothed_optimum`: no value is finite (every run diverged or none reported the metric).")
    best = scores.index(min(scores))
    at_edge = len(taus) > 1 and best in (0, len(taus) - 1)
    fallback = SmoothedOptimum(taus[best], float(values[best]), best, at_edge, False)
    if at_edge or len(taus) < 3:
        return fallback
    lo, hi = max(0, best - window), min(len(taus), best + window + 1)
    xs = np.log(np.asarray(taus[lo:hi]))
    ys = np.asarray(scores[lo:hi])
    if not np.all(np.isfinite(ys)):
        return fallback
    a, b, c = np.polyfit(xs, ys, 2)
    if not a > 0:
        return fallback
    x_star = float(np.clip(-b / (2 * a), math.log(taus[best - 1]), math.log(taus[best + 1])))
    metric = sign * float(a * x_star**2 + b * x_star + c)
    return SmoothedOptimum(math.exp(x_star), metric, best, at_edge, True)


def optimum_range(
    tau_epochs: Sequence[float],
    values: Sequence[Sequence[float]],
    mode: Goal = "min",
    window: int = 1,
    level: float = 0.9,
    resamples: int = 1000,
    seed: int = 0,
) -> tuple[float, float]:
    r"""The ``tau_epoch`` range the seeds cannot tell apart from the smoothed optimum.

    The union of two ranges, each holding the optimum of all the seeds:

    - a **seed bootstrap**: draw ``resamples`` sets of seeds with replacement (the same seeds at every grid point:
      a seed's runs share its initialization and batch order), take :func:`smoothed_optimum` of each resample's
      seed-mean curve; the range is the optimum times and divided by ``exp(t * s)``, with ``s`` the standard
      deviation of those optima in ``log(tau_epoch)`` (times ``sqrt(n / (n - 1))``, as the bootstrap of ``n``
      seeds is too narrow by that much) and ``t`` Student's two-sided ``level`` quantile with ``n - 1`` degrees
      of freedom;
    - a **paired test** against the best grid point: every grid point whose per-seed difference to the best one
      has a mean within ``t * sd / sqrt(n)`` of zero (``t`` Student's one-sided ``(1 + level) / 2`` quantile
      with ``n - 1`` degrees of freedom) is as good as the best one, as far as ``n`` seeds can tell.

    The range is clipped to the grid, beyond which the data say nothing. The test alone is only as fine as the
    grid; the bootstrap's percentiles alone would be far too narrow with the few seeds a finder runs (three seeds
    give ten distinct resamples): on simulated curves (3 seeds, 7 points) two runs' suggestions fell in each other's
    ranges 38% of the time with those, 83-95% with this range. A seed that diverged at a grid point makes that
    point the worst wherever it is drawn, and never as good as the best. With one seed there is no noise to go
    by: the range is the best grid point's neighbours (``[tau_{i-1}, tau_{i+1}]``), where the optimum lies if the
    curve has one minimum. The draws are seeded (``seed``), so the same values give the same range in every process.

    Args:
        tau_epochs: the grid, strictly increasing, positive.
        values: per grid point, the metric of each seed (the same seeds, in the same order, at every point).
        mode: ``"min"`` or ``"max"``.
        window: as in :func:`smoothed_optimum`.
        level: the confidence of the bootstrap range and of the paired test, in ``(0, 1)``.
        resamples: bootstrap draws (at least 1).
        seed: seed of the draws.

    Raises:
        ValueError: the grid and the values do not match, the points hold different numbers of seeds, or
            ``level`` or ``resamples`` is invalid (and what :func:`smoothed_optimum` raises).

    Example:
        Three seeds of a curve whose minimum is at ``tau_epoch = 10``, each seed shifted a little:

        >>> import math
        >>> grid = [1.0, 3.0, 9.0, 27.0, 81.0]
        >>> seeds = [[(math.log(t) - math.log(10.0 * k)) ** 2 for k in (0.8, 1.0, 1.25)] for t in grid]
        >>> low, high = optimum_range(grid, seeds)
        >>> 5.0 < low < 10.0 < high < 20.0
        True
        >>> optimum_range(grid, [[v[1]] for v in seeds])  # one seed: the best grid point's neighbours
        (3.0, 27.0)
    """
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"`optimum_range(level={level!r})` is not valid: use a number in (0, 1), e.g. 0.9.")
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"`optimum_range(resamples={resamples!r})` is not valid: use a positive integer.")
    if len(tau_epochs) != len(values):
        raise ValueError(
            f"`optimum_range` needs the seeds' values at every grid point, got {len(tau_epochs)} tau_epochs and"
            f" {len(values)} lists of values."
        )
    counts = {len(v) for v in values}
    if len(counts) != 1 or 0 in counts:
        raise ValueError(
            f"`optimum_range` needs the same seeds at every grid point, got {sorted(counts)} values per point."
        )
    # a diverged run (non-finite) makes its grid point the worst, as CurvePoint.mean (tuner/analysis/finder_result.py) does for the
    # full curve
    worst = math.inf if mode == "min" else -math.inf
    table = np.array([[float(v) if math.isfinite(float(v)) else worst for v in row] for row in values])
    full = smoothed_optimum(tau_epochs, list(table.mean(axis=1)), mode, window)
    taus = [float(t) for t in tau_epochs]
    n_seeds = table.shape[1]
    if n_seeds == 1:
        i = full.grid_index
        return taus[max(0, i - 1)], taus[min(len(taus) - 1, i + 1)]
    draws = np.random.default_rng(seed).integers(0, n_seeds, size=(resamples, n_seeds))
    logs = []
    for pick in draws:
        curve = table[:, pick].mean(axis=1)
        if np.any(np.isfinite(curve)):
            logs.append(math.log(smoothed_optimum(taus, list(curve), mode, window).tau_epoch))
    t = t_quantile((1 + level) / 2, n_seeds - 1)
    centre = math.log(full.tau_epoch)
    half = t * float(np.std(logs, ddof=1)) * math.sqrt(n_seeds / (n_seeds - 1)) if len(logs) > 1 else 0.0
    low, high = math.exp(centre - half), math.exp(centre + half)
    sign = 1.0 if mode == "min" else -1.0
    best = table[full.grid_index]
    for tau, row in zip(taus, table):
        diffs = sign * (row - best)
        if not np.all(np.isfinite(diffs)):
            continue
        if diffs.mean() <= paired_half_width(diffs, level):
            low, high = min(low, tau), max(high, tau)
    return max(low, taus[0]), min(high, taus[-1])  # the grid is all the data can speak for


def plateau(
    tau_epochs: Sequence[float],
    values: Sequence[Sequence[float]],
    mode: Goal = "min",
    epochs: float | None = None,
    level: float = 0.9,
) -> float | None:
    """Where weight decay stops mattering: the smallest grid ``tau_epoch`` X from which every larger grid point is as
    good as the best (within one seed s.d. of it, and not measurably worse), when the best point lies in that flat
    top and the top of the grid is longer than the run; else ``None``.

    A timescale much longer than the run leaves the weights near their initialisation memory, so the curve is flat
    at its top: any ``tau_epoch >= X`` is as good, and the best grid point sitting on the top edge is a plateau,
    not an edge to widen (``../THEORY.md`` §13). A point is as good as the best when its seed mean is within one seed
    s.d. of the best's (the best point's s.d. over seeds, ``ddof=1``) *and* it is not measurably worse: the seeds'
    paired differences to the best point have a mean within ``t * sd_d / sqrt(n)`` (Student's one-sided
    ``(1 + level) / 2`` quantile with ``n - 1`` degrees of freedom, ``sd_d`` the differences' s.d.), as
    :func:`optimum_range` judges them, or within :data:`NEGLIGIBLE_SD` of the seed s.d. (a tie). The seeds share their
    initialization and batch order across the grid, so a loss every seed finds worse is worse, however widely the
    seeds spread: a curve that rises from its best at every seed has a minimum, not a flat top; and two seeds that
    cannot tell a difference of several seed s.d. apart do not make it flat either. With one seed there is no spread
    and the answer is ``None``.

    Args:
        tau_epochs: the grid, strictly increasing, positive.
        values: per grid point, the metric of each seed (the same seeds, in the same order, at every point).
        mode: ``"min"`` or ``"max"``.
        epochs: the run's epochs: the top of the grid must be at least :data:`LONG_TIMESCALE` times it; ``None``
            skips that condition.
        level: the confidence of the paired test, in ``(0, 1)``.

    Raises:
        ValueError: the grid and the values do not match, or ``mode`` or ``level`` is invalid.

    Example:
        A loss that falls to a floor of 0.149 from ``tau_epoch`` 32 on, with a seed spread of about 0.002, in a
        20-epoch run:

        >>> grid = [4.0, 8.0, 16.0, 32.0, 64.0, 128.0]
        >>> seeds = [[m + d for d in (-0.002, 0.0, 0.002)] for m in (0.20, 0.17, 0.155, 0.1492, 0.1491, 0.149)]
        >>> plateau(grid, seeds, epochs=20)
        32.0
        >>> plateau(grid, seeds, epochs=100) is None  # the top, 128, is not twice the run's 100 epochs
        True
        >>> plateau(grid[:4], seeds[:4], epochs=5) is None  # the best, 32, alone at the top: an edge, not a plateau
        True

        Seeds far apart (s.d. 0.03) that all find the top 0.03 worse than the best: a minimum, not a plateau.

        >>> offsets = (-0.04, -0.02, 0.0, 0.02, 0.04)
        >>> rising = [[m + d + 0.003 * (i % 2) for i, d in enumerate(offsets)] for m in (0.30, 0.21, 0.22, 0.24)]
        >>> plateau([2.0, 8.0, 32.0, 128.0], rising, epochs=16) is None
        True
    """
    if mode not in GOALS:
        raise ValueError(f"`plateau(mode={mode!r})` is not supported. Use 'min' or 'max'.")
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"`plateau(level={level!r})` is not valid: use a number in (0, 1), e.g. 0.9.")
    taus = [float(t) for t in tau_epochs]
    if len(taus) != len(values) or not taus:
        raise ValueError(
            f"`plateau` needs the seeds' values at every grid point, got {len(taus)} tau_epochs and {len(values)}"
            " lists of values."
        )
    table = np.asarray([[float(v) for v in row] for row in values], dtype=float)
    if table.ndim != 2 or table.shape[1] < 2 or not np.all(np.isfinite(table)):
        return None  # one seed (no spread to judge by), or a diverged run: nothing to call flat
    if epochs is not None and taus[-1] < LONG_TIMESCALE * float(epochs):
        return None
    scores = table if mode == "min" else -table
    best = int(np.argmin(scores.mean(axis=1)))
    sd = float(scores[best].std(ddof=1))

    def as_good(i: int) -> bool:
        diffs = scores[i] - scores[best]
        return bool(diffs.mean() <= min(sd, max(paired_half_width(diffs, level), NEGLIGIBLE_SD * sd)))

    start = len(taus) - 1
    while start > 0 and as_good(start - 1):
        start -= 1
    if not as_good(len(taus) - 1) or start > best or start == len(taus) - 1:
        return None  # the top is worse than the best, the best lies below the flat top, or one point
    return taus[start]
