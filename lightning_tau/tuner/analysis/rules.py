"""How an interval decides the published scaling rules of the finder's width and dataset-size axes.

A rule holds when the whole exponent interval lies within its tolerance band (default 1.25), is excluded when it lies
wholly outside, and is undetermined otherwise. Pure (the standard library only).

More: docs/finder.rst, module notes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from lightning_tau import _checks
from lightning_tau.tuner.axes import Axis, Rule, resolve_axis

__all__ = [
    "DEFAULT_TOLERANCE",
    "Decision",
    "Rule",
    "all_decided",
    "decide",
    "half_width",
    "rules_for",
]

#: The default ``tolerance`` (see the module's text for why).
DEFAULT_TOLERANCE: float = 1.25

Decision = Literal["holds", "excluded", "undetermined"]


def rules_for(axis: str | Axis) -> tuple[Rule, ...]:
    """The published rules of ``axis`` (an axis's name or :class:`~lightning_tau.tuner.axes.Axis`): its module holds
    them (:mod:`lightning_tau.tuner.axes`); the fraction axis has none.

    Example:
        >>> [r.exponent for r in rules_for("dataset_size")]
        [0.0, -0.5, -1.0]
    """
    return resolve_axis(axis, "rules_for").rules


def half_width(tolerance: float, scales: Sequence[float]) -> float:
    """The tolerance in exponent units over ``scales``: ``log(tolerance) / log(max(scales) / min(scales))``.

    ``tolerance`` comes checked (a factor above 1) from where the user gave it, ``TimescaleFinder``'s or
    ``AxisResult.build``'s argument, and is not checked again here. An axis result computes its half-width once
    (``AxisResult.half_width``), and its verdicts, table and note read it.

    Example:
        >>> round(half_width(1.25, [100, 800]), 4)  # x1.25 over an 8x range
        0.1073
        >>> round(half_width(1.25, [64, 128, 256]), 4)
        0.161

    Raises:
        ValueError: ``scales`` do not span a range (fewer than 2 distinct positive values).
    """
    values = [float(s) for s in scales]
    if len(values) < 2 or min(values) <= 0 or max(values) <= min(values):
        raise ValueError(
            f"`half_width(scales={values!r})` is not valid: use at least 2 distinct positive scales (a range)."
        )
    return math.log(tolerance) / math.log(max(values) / min(values))


def decide(ci: tuple[float, float] | None, exponent: float, delta: float) -> Decision:
    """Whether the interval ``ci`` decides the rule of ``exponent`` at half-width ``delta`` (:func:`half_width`).

    *holds*: ``ci`` lies wholly within ``[exponent - delta, exponent + delta]``; *excluded*: wholly outside it;
    *undetermined*: it straddles an edge, or there is no interval.

    Example:
        >>> decide((-0.05, 0.04), 0.0, 0.1073)
        'holds'
        >>> decide((-0.05, 0.04), -0.5, 0.1073)
        'excluded'
        >>> decide((-0.2, 0.04), 0.0, 0.1073)
        'undetermined'
        >>> decide(None, 0.0, 0.1073)
        'undetermined'
    """
    if ci is None:
        return "undetermined"
    lo, hi = ci
    band_lo, band_hi = exponent - delta, exponent + delta
    if band_lo <= lo and hi <= band_hi:
        return "holds"
    if hi < band_lo or lo > band_hi:
        return "excluded"
    return "undetermined"


def all_decided(ci: tuple[float, float] | None, rules: Sequence[Rule], delta: float) -> bool:
    """Whether every rule of ``rules`` holds or is excluded at half-width ``delta``.

    Example:
        >>> size = rules_for("dataset_size")
        >>> all_decided((-0.05, 0.04), size, 0.1073), all_decided((-0.3, 0.04), size, 0.1073)
        (True, False)
    """
    return all(decide(ci, r.exponent, delta) != "undetermined" for r in rules)
