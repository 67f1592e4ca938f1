"""The grid that leaves its edges: which ``tau_epoch`` points the finder adds to its grid after a round, and why.

Pure (the standard library). :func:`plan_round` reads a round's curves and returns the points to add, each an
:class:`AddedPoint` with its reason; a round that adds nothing ends the extension.

More: docs/finder.rst, module notes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from lightning_tau._constants import Goal
from lightning_tau._numbers import setting
from lightning_tau.tuner.analysis.curve import plateau
from lightning_tau.tuner.analysis.grid_args import tau_name

__all__ = [
    "DEFAULT_MAX_GRID_EXTENSIONS",
    "MAX_RUNS",
    "MIN_TAU_ITER",
    "AddedPoint",
    "RoundPlan",
    "ScaleCurve",
    "grid_line",
    "lowest_tau_epoch",
    "plan_round",
]

#: ``TimescaleFinder(max_grid_extensions=...)`` when not given: steps the grid may grow by at each end.
DEFAULT_MAX_GRID_EXTENSIONS = 3
#: The shortest timescale the extension goes down to, in optimizer steps: an EMA over fewer than about two steps
#: keeps nothing from one step to the next.
MIN_TAU_ITER = 2.0
#: The longest timescale the extension goes up to, in runs: a ``tau_epoch`` over this many times the run's epochs
#: leaves the weights ``exp(-1/16) = 94 %`` of their initialisation after the whole run: weight decay does next to
#: nothing there, as good as no decay, whatever the curve's noise says (one seed has no s.d. to judge a plateau by).
MAX_RUNS = 16.0
#: The reason of every midpoint.
MIDPOINT_REASON = "midpoint: shape undecided"


@dataclass(frozen=True)
class AddedPoint:
    """A ``tau_epoch`` the finder added to its grid, and why.

    Attributes:
        tau_epoch: the point added (trained at every axis point, for every seed).
        reason: why: ``"edge at N=250"``, ``"rule fixed λ at 0.8"``, ``"midpoint: shape undecided"`` (several, joined
            by ``"; "``, when one point serves several).
        round: the round that decided it (the grid as given is round 0's; this point is trained in ``round + 1``).

    Example:
        >>> point = AddedPoint(1.0, "edge at N=250", 0)
        >>> point.to_json()
        {'tau_epoch': 1.0, 'reason': 'edge at N=250', 'round': 0}
        >>> AddedPoint.from_json(point.to_json()) == point
        True
    """

    tau_epoch: float
    reason: str
    round: int

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of the three fields."""
        return {"tau_epoch": self.tau_epoch, "reason": self.reason, "round": self.round}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AddedPoint:
        """The record :meth:`to_json` wrote, back."""
        return cls(float(data["tau_epoch"]), str(data["reason"]), int(data["round"]))


class ScaleCurve(NamedTuple):
    """One axis point's curve as :func:`plan_round` reads it.

    Attributes:
        name: how a reason names the point: ``"N=250"``, ``"width 64"``.
        tau_epochs: the curve's grid, increasing.
        values: per grid point, each seed's metric.
        best: the seed mean's best grid ``tau_epoch``.
        edge: ``"bottom"`` or ``"top"`` when ``best`` is the grid's first or last point (an edge to widen), else
            ``None``.
    """

    name: str
    tau_epochs: Sequence[float]
    values: Sequence[Sequence[float]]
    best: float
    edge: Literal["bottom", "top"] | None


class RoundPlan(NamedTuple):
    """What :func:`plan_round` decided: the points to add, and why an edge or rule was left as it is.

    Attributes:
        added: the points to train next, increasing.
        held: one sentence per extension the bounds or the limit stopped (for the finder's log).
    """

    added: tuple[AddedPoint, ...]
    held: tuple[str, ...]


def lowest_tau_epoch(steps_per_epoch: Sequence[int]) -> float:
    """The smallest ``tau_epoch`` the extension adds: :data:`MIN_TAU_ITER` optimizer steps at the axis point with the
    fewest steps per epoch (the smallest subset), so every axis point can set it.

    Raises:
        ValueError: no steps, or a count below 1.

    Example:
        >>> lowest_tau_epoch([4, 16])  # 2 steps of the 4-step epoch
        0.5
    """
    steps = list(steps_per_epoch)
    if not steps or min(steps) < 1:
        raise ValueError(f"`lowest_tau_epoch(steps_per_epoch={steps!r})` is not valid: use positive step counts.")
    return MIN_TAU_ITER / min(steps)


def plan_round(
    base: Sequence[float],
    grid: Sequence[float],
    scales: Sequence[ScaleCurve],
    *,
    mode: Goal,
    epochs: float,
    lowest: float,
    max_extensions: int,
    at_round: int,
    rule_taus: Sequence[tuple[str, float]] = (),
    midpoints: bool = False,
) -> RoundPlan:
    """The points to add after a round (see the module's text for what and why).

    Args:
        base: the grid as given (its end steps are the extension's steps; what lies beyond it counts against
            ``max_extensions``).
        grid: the round's grid, increasing (``base`` and the points added so far).
        scales: each axis point's curve, in axis order (the last is the largest).
        mode: ``"min"`` or ``"max"``.
        epochs: the runs' epochs (a plateau needs a top at least :data:`~lightning_tau.tuner.analysis.curve.LONG_TIMESCALE`
            times it).
        lowest: the smallest ``tau_epoch`` to add (:func:`lowest_tau_epoch`).
        max_extensions: the most steps added at each end in all; 0 adds nothing (no midpoints either).
        at_round: the round whose curves these are (the records' ``round``).
        rule_taus: ``(rule name, tau_epoch)`` where each published rule puts the largest point's best ``tau_epoch``.
        midpoints: add the midpoints around each point's best, once, if nothing else is added this round.

    Example:
        One axis point whose loss still falls at the top of ``(2, 4, 8)``, 3 seeds, 10-epoch runs (8 is no plateau):

        >>> values = [[0.5, 0.51, 0.49], [0.4, 0.41, 0.39], [0.3, 0.31, 0.29]]
        >>> curve = ScaleCurve("N=500", [2.0, 4.0, 8.0], values, 8.0, "top")
        >>> plan = plan_round([2.0, 4.0, 8.0], [2.0, 4.0, 8.0], [curve], mode="min", epochs=10, lowest=0.1,
        ...     max_extensions=3, at_round=0)
        >>> plan.added
        (AddedPoint(tau_epoch=16.0, reason='edge at N=500', round=0),)
        >>> plan_round([2.0, 4.0, 8.0], [2.0, 4.0, 8.0], [curve], mode="min", epochs=10, lowest=0.1,
        ...     max_extensions=0, at_round=0).held
        ('not extended above 8 (edge at N=500): max_grid_extensions=0 steps at that end reached',)
    """
    base = sorted(float(t) for t in base)
    grid = sorted(float(t) for t in grid)
    held: list[str] = []
    if max_extensions <= 0 or len(base) < 2:
        wanted = _edges(scales, mode, epochs, held)
        for end, names in wanted.items():
            where = "below" if end == "bottom" else "above"
            edge = grid[0] if end == "bottom" else grid[-1]
            why = (
                f"max_grid_extensions={max_extensions} steps at that end reached"
                if len(base) >= 2
                else "a grid of one tau_epoch has no step to extend by"
            )
            held.append(f"not extended {where} {edge:g} (edge at {', '.join(names)}): {why}")
        return RoundPlan((), tuple(held))
    steps = {"bottom": base[1] / base[0], "top": base[-1] / base[-2]}
    used = {"bottom": sum(t < base[0] for t in grid), "top": sum(t > base[-1] for t in grid)}
    # per end, the reasons for each step j = 1, 2, ... beyond the grid's end (a request for k steps is in 1 .. k)
    wants: dict[str, dict[int, list[str]]] = {"bottom": {}, "top": {}}
    for end, names in _edges(scales, mode, epochs, held).items():
        wants[end].setdefault(1, []).append(f"edge at {', '.join(names)}")
    for name, tau in rule_taus:
        end = "bottom" if tau < grid[0] else "top" if tau > grid[-1] else None
        if end is None:
            continue
        gap = grid[0] / tau if end == "bottom" else tau / grid[-1]
        count = max(1, math.ceil(math.log(gap) / math.log(steps[end]) - 1e-9))
        for j in range(1, count + 1):
            wants[end].setdefault(j, []).append(f"rule {name} at {tau:.3g}")
    added: list[AddedPoint] = []
    for end in ("bottom", "top"):
        if not wants[end]:
            continue
        edge = grid[0] if end == "bottom" else grid[-1]
        where = "below" if end == "bottom" else "above"
        for j in range(1, max(wants[end]) + 1):
            reasons = wants[end][j]  # every request that needs this step: an edge the first, a rule each up to it
            tau = _rounded(edge / steps[end] ** j if end == "bottom" else edge * steps[end] ** j)
            if used[end] + j > max_extensions:
                held.append(
                    f"not extended {where} {edge:g} ({'; '.join(reasons)}): max_grid_extensions={max_extensions}"
                    " steps at that end reached"
                )
                break
            if end == "top" and tau > MAX_RUNS * epochs:
                held.append(
                    f"not extended above {edge:g} ({'; '.join(reasons)}): tau_epoch {setting(tau)} is over"
                    f" {MAX_RUNS:g} times the run's {setting(float(epochs))} epochs, where weight decay does next to"
                    " nothing (as good as none)"
                )
                break
            if end == "bottom" and tau < lowest:
                held.append(
                    f"not extended below {edge:g} ({'; '.join(reasons)}): tau_epoch {tau:.3g} is under"
                    f" {MIN_TAU_ITER:g} optimizer steps at the smallest axis point (the least is {lowest:.3g})"
                )
                break
            added.append(AddedPoint(tau, "; ".join(reasons), at_round))
    if not added and midpoints:
        added = _midpoints(base, grid, scales, at_round)
    return RoundPlan(tuple(sorted(added, key=lambda p: p.tau_epoch)), tuple(held))


def grid_line(added: Sequence[AddedPoint]) -> str | None:
    """The table's line listing the points added, or ``None`` when none was.

    Example:
        >>> grid_line([AddedPoint(1.0, "edge at N=250", 0), AddedPoint(0.5, "edge at N=250", 1)])
        'Grid extended (points added to the grid given, in the order trained): tau_epoch 1 (edge at N=250), 0.5 (edge at N=250).'
    """  # noqa: E501
    if not added:
        return None
    parts = [f"{setting(p.tau_epoch)} ({p.reason})" for p in added]
    return f"Grid extended (points added to the grid given, in the order trained): tau_epoch {', '.join(parts)}."


# --- the pieces of plan_round ----------------------------------------------------------------------------------


def _edges(scales: Sequence[ScaleCurve], mode: Goal, epochs: float, held: list[str]) -> dict[str, list[str]]:
    """The axis points whose best is at each end of their curve, a top that is a plateau left out (``held`` says)."""
    wanted: dict[str, list[str]] = {}
    for scale in scales:
        if scale.edge is None:
            continue
        if scale.edge == "top":
            flat = plateau(scale.tau_epochs, scale.values, mode, epochs)
            if flat is not None:
                held.append(
                    f"not extended above {scale.tau_epochs[-1]:g} at {scale.name}: the top is a plateau (any"
                    f" tau_epoch >= {flat:g} is as good, longer than the run's {epochs:g} epochs)"
                )
                continue
        wanted.setdefault(scale.edge, []).append(scale.name)
    return wanted


def _midpoints(
    base: Sequence[float], grid: Sequence[float], scales: Sequence[ScaleCurve], at_round: int
) -> list[AddedPoint]:
    """The geometric midpoints between each axis point's best grid point and its neighbours; none when an earlier
    round added midpoints (a point inside the given grid that it does not hold)."""
    given = {tau_name(t) for t in base}
    if any(base[0] < t < base[-1] and tau_name(t) not in given for t in grid):
        return []
    have = {tau_name(t) for t in grid}
    points: dict[str, float] = {}
    for scale in scales:
        taus = [float(t) for t in scale.tau_epochs]
        i = taus.index(float(scale.best))
        for j in (i - 1, i + 1):
            if 0 <= j < len(taus):
                mid = _rounded(math.sqrt(taus[i] * taus[j]))
                if tau_name(mid) not in have:
                    points[tau_name(mid)] = mid
    return [AddedPoint(t, MIDPOINT_REASON, at_round) for t in sorted(points.values())]


def _rounded(value: float) -> float:
    """A new grid point to 12 significant digits (``1.0``, not ``0.9999999999999999``), as ``log_grid`` makes them."""
    return float(f"{value:.12g}")
