"""What following a scaling rule costs: the loss where the rule puts the best ``x`` at the largest scale, against the
loss at the best ``x`` there, paired by seed.

The mean over seeds with a Student t-interval; a rule off the grid has no cost. Pure (numpy and the standard library).

More: docs/finder.rst, module notes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lightning_tau import _checks
from lightning_tau._constants import GOALS, Goal
from lightning_tau.tuner.analysis.tdist import paired_half_width

__all__ = ["RuleCost", "read_curve", "rule_cost"]

# x_rule this close to a grid end (relative) is the grid end: rounding in x_from * ratio ** e, not a rule beyond it
_EDGE_RTOL = 1e-9


@dataclass(frozen=True)
class RuleCost:
    """The loss a rule costs at the largest scale (see the module's text).

    Attributes:
        x_rule: where the rule puts the best ``x`` at the largest scale.
        x_best: the best ``x`` measured there.
        mean: the mean cost over seeds (positive: worse than ``x_best``), or ``None`` (``reason`` says why).
        ci: the paired t-interval of ``mean`` at ``level``, or ``None`` (``reason`` says why).
        level: the interval's level.
        reason: why ``mean`` or ``ci`` is ``None``, else ``None``.
        per_seed: each seed's cost (empty when ``mean`` is ``None``).
        same_point: the rule puts ``x`` on the grid point that is best at the largest scale (``x_rule == x_best``, a
            grid point): every seed compares a run with itself, so the cost is 0 by construction (no cost within the
            grid's resolution), not a measured 0.
    """

    x_rule: float
    x_best: float
    mean: float | None
    ci: tuple[float, float] | None
    level: float
    reason: str | None
    per_seed: tuple[float, ...] = ()
    same_point: bool = False


def read_curve(xs: Sequence[float], values: Sequence[float], x: float, best: int | None = None) -> float:
    """A curve measured at grid ``xs`` (positive, increasing) read at ``x``, in ``log x``.

    Within the two grid cells around grid index ``best``, the parabola through the three points there (the
    finder's smoothing, :func:`~lightning_tau.tuner.analysis.curve.smoothed_optimum`, at ``window=1``); elsewhere, or with
    ``best`` ``None`` or at the grid's edge, the straight line between the two grid points around ``x``. Both pass
    through every grid point, so the reading is continuous and a grid point reads as its own value. A non-finite
    value among the points used gives ``nan``.

    Example:
        >>> round(read_curve([1.0, 4.0], [0.2, 0.4], 2.0), 12)  # half-way in log x
        0.3
        >>> read_curve([1.0, 4.0, 16.0], [0.2, 0.4, 0.1], 16.0)
        0.1
        >>> round(read_curve([1.0, 2.0, 4.0], [1.0, 0.0, 1.0], 2 ** 0.5, best=1), 12)  # (log2 x - 1)^2
        0.25

    Raises:
        ValueError: ``x`` outside the grid.
    """
    grid = [float(g) for g in xs]
    if not grid[0] <= x <= grid[-1]:
        raise ValueError(
            f"`read_curve(x={x!r})` is not valid: use an x within the grid ({grid[0]:g} to {grid[-1]:g}); a curve is"
            " not extrapolated."
        )
    if x in grid:
        value = float(values[grid.index(x)])
        return value if math.isfinite(value) else math.nan
    i = int(np.searchsorted(grid, x)) - 1  # grid[i] < x < grid[i + 1]
    if best is not None and 0 < best < len(grid) - 1 and best - 1 <= i <= best:
        points = range(best - 1, best + 2)  # the parabola through the best point and its neighbours
    else:
        points = range(i, i + 2)
    ys = [float(values[k]) for k in points]
    if not all(math.isfinite(y) for y in ys):
        return math.nan
    logs = [math.log(grid[k]) for k in points]
    t = math.log(x)
    total = 0.0
    for k, (lk, yk) in enumerate(zip(logs, ys)):  # Lagrange's form: a line through 2 points, a parabola through 3
        weight = 1.0
        for m, lm in enumerate(logs):
            if m != k:
                weight *= (t - lm) / (lk - lm)
        total += weight * yk
    return total


def rule_cost(
    xs: Sequence[float],
    curve: Any,
    *,
    x_from: float,
    x_best: float,
    scale_ratio: float,
    exponent: float,
    mode: Goal = "min",
    level: float = 0.95,
    x_label: str = "x",
) -> RuleCost:
    """The loss a rule of ``exponent`` costs at the largest scale (see the module's text).

    Args:
        xs: the grid, positive and increasing.
        curve: the largest scale's ``len(xs) x seeds`` values (row ``i`` is grid point ``i``, column ``j`` seed ``j``).
        x_from: the smallest scale's best ``x``.
        x_best: the largest scale's best ``x`` (within the grid).
        scale_ratio: ``s_max / s_min`` (at least 1).
        exponent: the rule's exponent of the best ``x`` in the scale.
        mode: ``"min"`` (a loss) or ``"max"``; the cost is positive when following the rule is worse either way.
        level: the interval's level.
        x_label: what ``x`` is called in ``reason`` (``"tau_epoch"``, ``"λ_base"``).

    Raises:
        ValueError: a bad ``xs``, ``curve``, ``x_from``, ``x_best``, ``scale_ratio``, ``mode`` or ``level``.

    Example:
        Two seeds, a loss ``(log2 x - 3)^2`` (best at 8) plus a seed offset; the rule carries ``x_from = 4`` over a
        x4 range by ``-1/2`` to 2, two octaves from 8, so it costs 4 on each seed:

        >>> xs = [1.0, 2.0, 4.0, 8.0, 16.0]
        >>> curve = [[(math.log2(x) - 3) ** 2 + off for off in (0.0, 0.5)] for x in xs]
        >>> cost = rule_cost(xs, curve, x_from=4.0, x_best=8.0, scale_ratio=4.0, exponent=-0.5)
        >>> cost.x_rule, cost.mean, cost.ci, cost.reason, cost.same_point
        (2.0, 4.0, (4.0, 4.0), None, False)
        >>> rule_cost(xs, curve, x_from=8.0, x_best=8.0, scale_ratio=4.0, exponent=0.0).same_point  # 8 is best
        True
        >>> rule_cost(xs, curve, x_from=8.0, x_best=8.0, scale_ratio=4.0, exponent=1.0, x_label="tau_epoch").reason
        'the rule puts tau_epoch at 32, beyond the grid (up to 16): not measured there'
    """
    owner = "rule_cost"
    if mode not in GOALS:
        raise _checks.invalid(owner, "mode", mode, "use 'min' (a loss) or 'max'.")
    level = _checks.in_range(owner, "level", level, "use a number strictly between 0 and 1.", low=0, high=1)
    try:
        grid = [float(x) for x in xs]
    except (TypeError, ValueError):
        raise _checks.invalid(owner, "xs", xs, "use positive numbers in increasing order.") from None
    if not grid or any(not (math.isfinite(x) and x > 0) for x in grid) or any(b <= a for a, b in zip(grid, grid[1:])):
        raise _checks.invalid(owner, "xs", xs, "use positive numbers in increasing order.")
    try:
        table = np.asarray(curve, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"`{owner}(curve=...)` is not valid: use numbers, one row per grid point.") from None
    if table.ndim != 2 or table.shape[0] != len(grid) or table.shape[1] < 1:
        raise ValueError(
            f"`{owner}(curve=...)` is not valid: got shape {table.shape}; use one row per grid point ({len(grid)})"
            " and one column per seed."
        )
    hint = "use a positive number."
    x_from = _checks.in_range(owner, "x_from", x_from, hint, low=0, high=math.inf)
    x_best = _checks.in_range(owner, "x_best", x_best, hint, low=0, high=math.inf)
    if not grid[0] <= x_best <= grid[-1]:
        raise _checks.invalid(owner, "x_best", x_best, f"use an x within the grid ({grid[0]:g} to {grid[-1]:g}).")
    ratio = _checks.in_range(
        owner, "scale_ratio", scale_ratio, "use a number >= 1.", low=1, high=math.inf, low_closed=True
    )
    e = _checks.finite_number(owner, "exponent", exponent)

    x_rule = x_from * ratio**e
    for end in (grid[0], grid[-1]):
        if math.isclose(x_rule, end, rel_tol=_EDGE_RTOL):
            x_rule = end
    if x_rule > grid[-1] or x_rule < grid[0]:
        where = (
            f"beyond the grid (up to {grid[-1]:.3g})" if x_rule > grid[-1] else f"below the grid (from {grid[0]:.3g})"
        )
        return RuleCost(
            x_rule, x_best, None, None, level, f"the rule puts {x_label} at {x_rule:.3g}, {where}: not measured there"
        )
    scores = np.where(np.isfinite(table), table if mode == "min" else -table, np.inf)
    finite_rows = np.all(np.isfinite(scores), axis=1)
    means = np.where(finite_rows, np.where(finite_rows[:, None], scores, 0.0).mean(axis=1), np.inf)
    best = int(np.argmin(means))  # the seed mean's best grid point: the curves are read around it as the finder does
    at_rule = np.array([read_curve(grid, table[:, j], x_rule, best) for j in range(table.shape[1])])
    at_best = np.array([read_curve(grid, table[:, j], x_best, best) for j in range(table.shape[1])])
    if not (np.all(np.isfinite(at_rule)) and np.all(np.isfinite(at_best))):
        return RuleCost(
            x_rule,
            x_best,
            None,
            None,
            level,
            f"a run next to {x_label} {x_rule:.3g} or {x_best:.3g} diverged (no finite loss)",
        )
    costs = at_rule - at_best if mode == "min" else at_best - at_rule
    k = costs.size
    mean = float(costs.mean())
    per_seed = tuple(float(c) for c in costs)
    # the rule lands on the best point, a grid point (to rounding: a smoothed optimum on a grid point reads 8 + 7e-14)
    on_grid = any(math.isclose(x_rule, g, rel_tol=_EDGE_RTOL) for g in grid)
    same = x_rule == x_best and on_grid and all(c == 0 for c in per_seed)
    if k < 2:
        return RuleCost(x_rule, x_best, mean, None, level, "1 seed: an interval needs at least 2", per_seed, same)
    half = paired_half_width(costs, level)
    return RuleCost(x_rule, x_best, mean, (mean - half, mean + half), level, None, per_seed, same)
