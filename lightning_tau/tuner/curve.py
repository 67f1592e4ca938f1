"""The timescale finder's pure parts: the ``tau_epoch`` grid, the smoothed optimum, and the result with its JSON.

No Lightning import (numpy only; matplotlib is imported by :meth:`FinderResult.plot` when it draws). The
Lightning side, which trains the runs, is :mod:`lightning_tau.tuner.finder`.

The suggested ``tau_epoch`` is not the argmin of a noisy grid. :func:`smoothed_optimum` fits a parabola in
``log(tau_epoch)`` by least squares to the seed-mean curve at the grid's best point and its neighbours
(``window`` on each side) and returns the parabola's vertex, kept inside the bracket of the best point's two
neighbours. At a grid edge, or where the fitted parabola opens the wrong way, it returns the best grid point.
:func:`optimum_range` gives the suggestion's uncertainty: the range of ``tau_epoch`` the seeds cannot tell apart
from it (a seed bootstrap of the smoothed optimum).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import NormalDist
from typing import Any, Literal, NamedTuple

import numpy as np

from lightning_tau._constants import GOALS, Goal
from lightning_tau._table import table_lines

__all__ = [
    "DEFAULT_TAU_EPOCHS",
    "PRUNER_NAMES",
    "CurvePoint",
    "FinderResult",
    "PrunedPoint",
    "SmoothedOptimum",
    "log_grid",
    "optimum_range",
    "reduce_metric",
    "smoothed_optimum",
    "write_json",
]


#: The finder's default grid: ``tau_epoch`` from 2 to 128 epochs, doubling (7 points).
DEFAULT_TAU_EPOCHS: tuple[float, ...] = (2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0)
#: The pruners ``TimescaleFinder(pruner=...)`` and ``lightning-tau find --pruner`` name (here, where the command's
#: parser reads them without importing Optuna; :func:`lightning_tau.tuner.finder.make_pruner` builds them).
PRUNER_NAMES: tuple[str, ...] = ("median", "successive_halving", "hyperband")


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
    # a diverged run (non-finite) makes its grid point the worst, as CurvePoint.mean does for the full curve
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
    t = _student_t_quantile((1 + level) / 2, n_seeds - 1)
    centre = math.log(full.tau_epoch)
    half = t * float(np.std(logs, ddof=1)) * math.sqrt(n_seeds / (n_seeds - 1)) if len(logs) > 1 else 0.0
    low, high = math.exp(centre - half), math.exp(centre + half)
    sign = 1.0 if mode == "min" else -1.0
    best = table[full.grid_index]
    for tau, row in zip(taus, table):
        diffs = sign * (row - best)
        if not np.all(np.isfinite(diffs)):
            continue
        if diffs.mean() <= t * diffs.std(ddof=1) / math.sqrt(n_seeds):
            low, high = min(low, tau), max(high, tau)
    return max(low, taus[0]), min(high, taus[-1])  # the grid is all the data can speak for


def _student_t_quantile(p: float, df: int) -> float:
    """Student's t quantile: exact for 1 and 2 degrees of freedom, Cornish-Fisher beyond (about 2% low at df 3).

    Example:
        >>> round(_student_t_quantile(0.95, 2), 3), round(_student_t_quantile(0.95, 10), 2)
        (2.92, 1.81)
    """
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    z = NormalDist().inv_cdf(p)
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


@dataclass
class CurvePoint:
    """One ``tau_epoch`` of the finder's grid: the metric of every seed on the subset.

    Attributes:
        tau_epoch: the timescale the runs used.
        values: the metric per seed, in ``seeds`` order (``nan`` for a run that diverged).
        seeds: the seeds.
        weight_decay: per param group, the weight decay the subset runs used (``B / (lr * N_subset * tau)``).
        steps: optimizer steps each run took.
    """

    tau_epoch: float
    values: list[float]
    seeds: list[int]
    weight_decay: dict[str, float] = field(default_factory=dict)
    steps: list[int] = field(default_factory=list)

    @property
    def mean(self) -> float:
        """Mean over seeds; ``inf`` if any seed diverged (so a diverging setting never looks best)."""
        if not self.values or any(not math.isfinite(v) for v in self.values):
            return math.inf
        return float(np.mean(self.values))

    @property
    def std(self) -> float:
        """Sample standard deviation over seeds (``ddof=1``); 0 with one seed, ``nan`` if a seed diverged."""
        if len(self.values) < 2:
            return 0.0
        if any(not math.isfinite(v) for v in self.values):
            return math.nan
        return float(np.std(self.values, ddof=1))


@dataclass
class PrunedPoint:
    """A ``tau_epoch`` of the grid that a pruner stopped: at least one seed's run was pruned, so it is not on the
    curve (the curve pairs every seed at every point).

    Attributes:
        tau_epoch: the timescale the runs used.
        seeds: the seeds.
        pruned_after: per seed, the epochs its run trained before it was pruned (``0``: not trained, as another
            seed of this ``tau_epoch`` was pruned), or ``None`` for a run that completed.
        last_values: per seed, the last value of the metric the run reported (``nan``: none); a pruned run's is from
            an earlier epoch than the curve's, so not comparable with it.
        weight_decay: per param group, the weight decay the subset runs used (empty when none was trained).
        steps: optimizer steps each run took.

    Example:
        >>> PrunedPoint(64.0, [0, 1], [5, 0], [0.9, float("nan")], {}, [30, 0]).note
        'pruned: seed 0 after epoch 5, seed 1 not trained'
    """

    tau_epoch: float
    seeds: list[int]
    pruned_after: list[int | None]
    last_values: list[float] = field(default_factory=list)
    weight_decay: dict[str, float] = field(default_factory=dict)
    steps: list[int] = field(default_factory=list)

    @property
    def note(self) -> str:
        """What happened to each seed, in one line."""
        parts = []
        for seed, after in zip(self.seeds, self.pruned_after):
            if after is None:
                parts.append(f"seed {seed} completed")
            elif after == 0:
                parts.append(f"seed {seed} not trained")
            else:
                parts.append(f"seed {seed} after epoch {after}")
        return "pruned: " + ", ".join(parts)


@dataclass
class FinderResult:
    """What the timescale finder found: the suggestion, the full run's weight decay, the curve and the cost.

    Attributes:
        tau_epoch: the suggested ``tau_epoch`` for the full run (smoothed, see :func:`smoothed_optimum`).
        grid_tau_epoch: the best ``tau_epoch`` on the grid (seed mean).
        at_edge: the grid's best point is its first or last: widen the grid.
        weight_decay: per param group, the weight decay for the full run: ``1 / (lr * tau_epoch * M)`` with ``M``
            the full run's optimizer steps per epoch, which is what ``TimescaleCallback(tau_epoch=tau_epoch)`` will
            write there (``M = N / B`` up to the last, partial batch, so this is ``B / (lr * N * tau_epoch)``);
            groups that do not decay are left out.
        lr: per decaying param group, the reference learning rate used above.
        subset_weight_decay: per param group, the weight decay of the best grid point on the subset: what keeping
            the subset's best weight decay as it is (the naive transfer) would use.
        monitor: the validation metric compared.
        mode: ``"min"`` or ``"max"``.
        reduce: ``"last"`` (the metric after the last epoch) or ``"best"`` (its best value over epochs).
        fraction: the subset's share of the training set.
        dataset_size: ``N``, training samples of the full run.
        subset_size: ``round(fraction * N)``, training samples of each finder run.
        batch_size: ``B``, samples per optimizer step.
        epochs: epochs per run (the same on the subset as planned for the full run).
        steps_per_epoch: ``M``, optimizer steps per epoch of the full run.
        cost: optimizer steps the finder's runs took in all.
        full_cost: optimizer steps the same grid and seeds would take on the full training set.
        curve: one :class:`CurvePoint` per ``tau_epoch``, in grid order.
        smoothed: whether a parabola gave ``tau_epoch`` (else it is the best grid point).
        tau_epoch_range: ``(low, high)``, the ``tau_epoch`` range the seeds cannot tell apart from the suggestion
            (:func:`optimum_range`); a rerun with other seeds may suggest anything in it.
        pruned: the ``tau_epoch`` values a pruner stopped (:class:`PrunedPoint`), in grid order: not on the curve,
            never the suggestion; their runs' steps count in ``cost``.

    Example:
        >>> points = [(2.0, 0.4), (8.0, 0.2), (32.0, 0.3)]
        >>> curve = [CurvePoint(t, [v], [0], {"decay": 0.1 / t}, [10]) for t, v in points]
        >>> result = FinderResult.from_curve(curve, lr={"decay": 1e-3}, monitor="val_loss", mode="min",
        ...     reduce="last", fraction=0.25, dataset_size=1000, subset_size=250, batch_size=50, epochs=10,
        ...     full_cost=3 * 10 * 20)
        >>> round(result.tau_epoch, 2), result.grid_tau_epoch, result.cost, result.full_cost
        (10.08, 8.0, 30, 600)
        >>> result.tau_epoch_range  # one seed: the best grid point's neighbours
        (2.0, 32.0)
        >>> round(result.weight_decay["decay"], 2)  # 50 / (1e-3 * 1000 * 10.08)
        4.96
        >>> sorted(result.to_json())[:5]
        ['at_edge', 'batch_size', 'cost', 'cost_fraction', 'curve']
    """

    tau_epoch: float
    grid_tau_epoch: float
    at_edge: bool
    weight_decay: dict[str, float]
    lr: dict[str, float]
    subset_weight_decay: dict[str, float]
    monitor: str
    mode: Goal
    reduce: Literal["last", "best"]
    fraction: float
    dataset_size: int
    subset_size: int
    batch_size: int
    epochs: int
    steps_per_epoch: float
    cost: int
    full_cost: int
    curve: list[CurvePoint]
    smoothed: bool = False
    tau_epoch_range: tuple[float, float] = (math.nan, math.nan)
    pruned: list[PrunedPoint] = field(default_factory=list)

    @classmethod
    def from_curve(
        cls,
        curve: Sequence[CurvePoint],
        *,
        lr: Mapping[str, float],
        monitor: str,
        mode: Goal,
        reduce: Literal["last", "best"],
        fraction: float,
        dataset_size: int,
        subset_size: int,
        batch_size: int,
        epochs: int,
        full_cost: int,
        steps_per_epoch: float | None = None,
        window: int = 1,
        pruned: Sequence[PrunedPoint] = (),
    ) -> FinderResult:
        """Smooth ``curve`` (:func:`smoothed_optimum` over its seed means) and derive the full run's weight decay.

        ``cost`` is the sum of every run's steps in ``curve`` and ``pruned``; ``weight_decay[g] = 1 / (lr[g] *
        tau_epoch * M)`` with ``M = steps_per_epoch``, by default ``N / B``. ``pruned``: the ``tau_epoch`` values a
        pruner stopped, which the curve leaves out; the best point of the curve is not at the grid's edge when a
        pruned ``tau_epoch`` lies beyond it (the pruner found that side worse), and the range then reaches that
        ``tau_epoch`` (no full run says the optimum is not between them).
        """
        from lightning_tau.timescale import steps_per_epoch as n_over_b
        from lightning_tau.timescale import weight_decay_for_tau_iter

        m = n_over_b(dataset_size, batch_size) if steps_per_epoch is None else float(steps_per_epoch)

        points = sorted(curve, key=lambda p: p.tau_epoch)
        opt = smoothed_optimum([p.tau_epoch for p in points], [p.mean for p in points], mode, window)
        low, high = optimum_range([p.tau_epoch for p in points], [p.values for p in points], mode, window)
        best = points[opt.grid_index]
        stopped = sorted(pruned, key=lambda p: p.tau_epoch)
        at_edge = opt.at_edge and not any((p.tau_epoch < best.tau_epoch) == (opt.grid_index == 0) for p in stopped)
        # a best point at the curve's end with a pruned tau_epoch beyond it: the optimum may lie up to that one
        if opt.grid_index == 0 and any(p.tau_epoch < best.tau_epoch for p in stopped):
            low = min(low, max(p.tau_epoch for p in stopped if p.tau_epoch < best.tau_epoch))
        if opt.grid_index == len(points) - 1 and any(p.tau_epoch > best.tau_epoch for p in stopped):
            high = max(high, min(p.tau_epoch for p in stopped if p.tau_epoch > best.tau_epoch))
        return cls(
            tau_epoch=opt.tau_epoch,
            grid_tau_epoch=best.tau_epoch,
            at_edge=at_edge,
            weight_decay={
                name: weight_decay_for_tau_iter(group_lr, opt.tau_epoch * m) for name, group_lr in lr.items()
            },
            lr=dict(lr),
            subset_weight_decay=dict(best.weight_decay),
            monitor=monitor,
            mode=mode,
            reduce=reduce,
            fraction=fraction,
            dataset_size=dataset_size,
            subset_size=subset_size,
            batch_size=batch_size,
            epochs=epochs,
            steps_per_epoch=m,
            cost=sum(sum(p.steps) for p in points) + sum(sum(p.steps) for p in stopped),
            full_cost=full_cost,
            curve=list(points),
            smoothed=opt.smoothed,
            tau_epoch_range=(low, high),
            pruned=stopped,
        )

    def callback(self, **kwargs: Any) -> Any:
        """The :class:`~lightning_tau.TimescaleCallback` for the full run: ``tau_epoch`` the suggestion.

        ``kwargs`` go to the callback (``verbose``, ``monitor``, ...). It writes ``weight_decay`` into the groups.

        Example:
            >>> curve = [CurvePoint(t, [v], [0]) for t, v in [(2.0, 0.4), (8.0, 0.2), (32.0, 0.3)]]
            >>> result = FinderResult.from_curve(curve, lr={"decay": 1e-3}, monitor="val_loss", mode="min",
            ...     reduce="last", fraction=0.25, dataset_size=1000, subset_size=250, batch_size=50, epochs=10,
            ...     full_cost=600)
            >>> round(result.callback(verbose=False).tau_epoch, 2)
            10.08
        """
        from lightning_tau.callback import TimescaleCallback  # Lightning only when asked: this module is pure

        return TimescaleCallback(tau_epoch=self.tau_epoch, **kwargs)

    @property
    def verdict(self) -> str:
        """One line on how far to trust the suggestion: at the grid's edge, a range as wide as the grid, or fine.

        Example:
            >>> curve = [CurvePoint(t, [v], [0]) for t, v in [(2.0, 0.4), (8.0, 0.2), (32.0, 0.3)]]
            >>> FinderResult.from_curve(curve, lr={"decay": 1e-3}, monitor="val_loss", mode="min",
            ...     reduce="last", fraction=0.25, dataset_size=1000, subset_size=250, batch_size=50, epochs=10,
            ...     full_cost=600).verdict
            'the seeds cannot tell the whole grid apart (2 to 32): run more seeds or epochs before trusting it'
        """
        low, high = self.tau_epoch_range
        taus = [p.tau_epoch for p in self.curve]
        if self.at_edge:
            return "at the edge of the grid: the optimum may lie beyond it, widen the grid"
        if taus and low <= taus[0] and high >= taus[-1]:
            return (
                f"the seeds cannot tell the whole grid apart ({low:.3g} to {high:.3g}): run more seeds or epochs"
                " before trusting it"
            )
        return f"an optimum inside the grid, in a range {high / low:.2g}x wide"

    @property
    def cost_fraction(self) -> float:
        """``cost / full_cost``: what the finder cost, as a share of the same sweep on the full data."""
        return self.cost / self.full_cost if self.full_cost else math.nan

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: every attribute, ``cost_fraction``, and per curve point ``mean`` and ``std``.

        Non-finite metric values are written as ``null`` (JSON has no ``NaN``).
        """
        data = asdict(self)
        data["cost_fraction"] = self.cost_fraction
        data["tau_epoch_range"] = [_finite_or_none(x) for x in self.tau_epoch_range]
        data["verdict"] = self.verdict
        data["curve"] = [
            {
                "tau_epoch": p.tau_epoch,
                "mean": _finite_or_none(p.mean),
                "std": _finite_or_none(p.std),
                "values": [_finite_or_none(v) for v in p.values],
                "seeds": list(p.seeds),
                "weight_decay": dict(p.weight_decay),
                "steps": list(p.steps),
            }
            for p in self.curve
        ]
        data["pruned"] = [
            {
                "tau_epoch": p.tau_epoch,
                "seeds": list(p.seeds),
                "pruned_after_epoch": list(p.pruned_after),
                "last_values": [_finite_or_none(v) for v in p.last_values],
                "weight_decay": dict(p.weight_decay),
                "steps": list(p.steps),
                "note": p.note,
            }
            for p in self.pruned
        ]
        return data

    def save_json(self, path: str | Path) -> Path:
        """Write :meth:`to_json` to ``path`` (parents created); returns the path."""
        return write_json(path, self.to_json())

    def table(self) -> str:
        """The curve, the suggestion, the full run's weight decay and the cost, as text for a terminal."""
        rows = [
            [
                f"{p.tau_epoch:g}",
                _fmt(p.mean),
                _fmt(p.std),
                ", ".join(_fmt(v) for v in p.values),
                ", ".join(f"{name}={wd:.3g}" for name, wd in p.weight_decay.items()),
                "best on grid" if p.tau_epoch == self.grid_tau_epoch else "",
            ]
            for p in self.curve
        ]
        for p in self.pruned:  # in grid order among the curve's rows
            row = [f"{p.tau_epoch:g}", "pruned", "", "", ", ".join(f"{n}={wd:.3g}" for n, wd in p.weight_decay.items())]
            at = next((i for i, q in enumerate(self.curve) if q.tau_epoch > p.tau_epoch), len(self.curve))
            rows.insert(at + sum(q.tau_epoch < p.tau_epoch for q in self.pruned), [*row, p.note])
        value = "final" if self.reduce == "last" else "best"
        lines = [
            f"Timescale finder: {len(self.curve) + len(self.pruned)} tau_epochs x"
            f" {len(self.curve[0].seeds) if self.curve else 0} seeds"
            f" on a {self.fraction:g} subset ({self.subset_size} of {self.dataset_size} samples), {self.epochs}"
            f" epochs, B={self.batch_size}; {value} {self.monitor} ({self.mode}):",
            *table_lines(
                ["tau_epoch", "mean", "std", "per seed", "subset weight decay", "note"], rows, rule=False, indent="  "
            ),
        ]
        how = (
            "parabola in log(tau_epoch) through the best grid point and its neighbours"
            if self.smoothed
            else ("best grid point")
        )
        lines.append(f"Suggested tau_epoch: {self.tau_epoch:.3g} ({how}; best on grid {self.grid_tau_epoch:g}).")
        low, high = self.tau_epoch_range
        seeds = len(self.curve[0].seeds) if self.curve else 0
        lines.append(
            f"Uncertainty: the seeds cannot tell tau_epoch {low:.3g} to {high:.3g} apart from it"
            + (" (one seed: the best grid point's neighbours)." if seeds == 1 else f" ({seeds} seeds).")
        )
        lines.append(f"Verdict: {self.verdict}.")
        if self.pruned:
            stopped = sum(bool(a) for p in self.pruned for a in p.pruned_after)
            untrained = sum(a == 0 for p in self.pruned for a in p.pruned_after)
            lines.append(
                f"Pruned: tau_epoch {', '.join(f'{p.tau_epoch:g}' for p in self.pruned)} (runs: {stopped} stopped"
                f" early, {untrained} not trained); not on the curve: every seed of a tau_epoch must complete to be"
                " compared."
            )
        lines.append(
            f"Weight decay for the full run (N={self.dataset_size}, B={self.batch_size}, {self.steps_per_epoch:g} steps"
            f" per epoch), as TimescaleCallback(tau_epoch={self.tau_epoch:.3g}) will set it:"
        )
        lines += table_lines(
            ["group", "lr", "weight decay", "naive (subset's best, kept)"],
            [
                [name, f"{self.lr[name]:.3g}", f"{wd:.4g}", _fmt(self.subset_weight_decay.get(name, math.nan))]
                for name, wd in self.weight_decay.items()
            ],
            rule=False,
            indent="  ",
        )
        lines.append(
            f"Cost: {self.cost:,} optimizer steps, {self.cost_fraction:.0%} of the {self.full_cost:,} the same sweep"
            " takes on the full data."
        )
        return "\n".join(lines)

    def plot(self, path: str | Path) -> Path:  # pragma: no mutate block (drawing; see benchmarks/mutation_survivors.md)
        """Draw the curve in the paper's Figure-1 style into ``path`` (``.png``, ``.svg``, ...); returns it.

        The metric against ``tau_epoch`` (log x): the seed mean as a line, single seeds as dots, the best grid
        point and the suggested (smoothed) ``tau_epoch`` marked, ``tau_epoch_range`` shaded. Uses matplotlib's Agg
        backend.
        """
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        taus = [p.tau_epoch for p in self.curve]
        fig, ax = plt.subplots(figsize=(6.4, 4.2), constrained_layout=True)
        ax.plot(taus, [p.mean for p in self.curve], "o-", color="tab:blue", label="mean over seeds", markersize=4)
        for p in self.curve:
            ax.plot([p.tau_epoch] * len(p.values), p.values, ".", color="tab:blue", alpha=0.35, markersize=4)
        grid_best = next(p for p in self.curve if p.tau_epoch == self.grid_tau_epoch)
        ax.plot([grid_best.tau_epoch], [grid_best.mean], "s", color="tab:orange", label="best on grid", zorder=3)
        if self.pruned:  # no value on the curve's scale: marked on the bottom edge
            ax.plot(
                [p.tau_epoch for p in self.pruned],
                [0.02] * len(self.pruned),
                "x",
                color="tab:red",
                transform=ax.get_xaxis_transform(),
                label="pruned (not on the curve)",
                clip_on=False,
            )
        ax.axvline(self.tau_epoch, color="black", linestyle=":", alpha=0.8)
        low, high = self.tau_epoch_range
        if math.isfinite(low) and math.isfinite(high):
            ax.axvspan(
                low, high, color="gold", alpha=0.2, label=f"as good as far as the seeds tell: {low:.3g}–{high:.3g}"
            )
        ax.plot(
            [self.tau_epoch],
            [grid_best.mean],
            "*",
            color="gold",
            markeredgecolor="black",
            markersize=15,
            zorder=4,
            label=f"suggested τ_epoch = {self.tau_epoch:.3g}",
        )
        ax.set_xscale("log")
        ax.set_xlabel("τ_epoch = B / (η λ N)  [epochs]")
        ax.set_ylabel(f"{'final' if self.reduce == 'last' else 'best'} {self.monitor}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
        decays = ", ".join(f"{name} {wd:.3g}" for name, wd in self.weight_decay.items())
        ax.set_title(
            f"finder: {self.subset_size} of {self.dataset_size} samples, {self.epochs} epochs\n"
            f"full run (N={self.dataset_size}): weight decay {decays}",
            fontsize="medium",
        )
        fig.savefig(path, dpi=120)
        plt.close(fig)
        return path


def write_json(path: str | Path, data: Any) -> Path:
    """Write ``data`` to ``path`` as indented strict JSON with a trailing newline (parents created); returns the path.

    Example:
        >>> import tempfile
        >>> path = write_json(Path(tempfile.mkdtemp()) / "new" / "r.json", {"tau_epoch": 8.0})
        >>> path.read_text()
        '{\\n  "tau_epoch": 8.0\\n}\\n'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n")
    return path


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _fmt(value: float) -> str:
    return f"{value:.4g}" if math.isfinite(value) else "nan"
