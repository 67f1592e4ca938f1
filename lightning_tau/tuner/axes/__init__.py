"""The finder's axes, each one object: what it varies, its published rules, and how its result is read.

:func:`resolve_axis` turns the user's ``axis`` string into its :class:`Axis` once; no axis name is compared outside this
folder. Pure (the standard library only).

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

from typing import Any

from lightning_tau.errors import TimescaleError
from lightning_tau.tuner.axes.base import Axis, Rule
from lightning_tau.tuner.axes.batch_size import BATCH_SIZE, BATCH_SIZE_VARIANTS, LR_SCALINGS, batch_rules
from lightning_tau.tuner.axes.dataset_size import DATASET_SIZE, SIZE_RULES
from lightning_tau.tuner.axes.fraction import FRACTION
from lightning_tau.tuner.axes.width import WIDTH, WIDTH_RULES

__all__ = [
    "AXES",
    "BATCH_SIZE",
    "LR_SCALINGS",
    "DATASET_SIZE",
    "FRACTION",
    "SIZE_RULES",
    "WIDTH",
    "WIDTH_RULES",
    "Axis",
    "Rule",
    "axis_spellings",
    "batch_rules",
    "resolve_axis",
]

#: Every axis, by name, in the order the finder's documentation and ``--axis`` list them.
AXES: dict[str, Axis] = {axis.name: axis for axis in (FRACTION, WIDTH, DATASET_SIZE, BATCH_SIZE)}

_BY_SPELLING: dict[str, Axis] = {spelling: axis for axis in AXES.values() for spelling in axis.spellings}
#: the batch axis at a scaled lr, by name (``AxisResult.axis``): not a spelling the user gives (``lr_scaling`` is)
_VARIANTS: dict[str, Axis] = {v.name: v for v in BATCH_SIZE_VARIANTS.values() if v is not BATCH_SIZE}


def axis_spellings() -> tuple[str, ...]:
    """Every string an axis is accepted as, names first.

    Example:
        >>> axis_spellings()
        ('fraction', 'width', 'dataset_size', 'batch_size', 'dataset-size', 'batch-size')
    """
    names = tuple(AXES)
    return names + tuple(s for s in _BY_SPELLING if s not in names)


def _accepted() -> str:
    """Every axis's spellings and what it needs, e.g. "'fraction' (one sweep on a subset), ... or 'dataset_size'
    ('dataset-size' too; with `fractions`)"."""
    said = [
        f"{a.name!r} ({''.join(f'{s!r} too; ' for s in a.spellings[1:])}{a.description})" for a in AXES.values()
    ]
    return ", ".join(said[:-1]) + " or " + said[-1]


def resolve_axis(axis: Any, owner: str = "TimescaleFinder") -> Axis:
    """The :class:`Axis` that ``axis`` names (an :class:`Axis` is returned as it is).

    Example:
        >>> resolve_axis("dataset-size") is resolve_axis("dataset_size") is DATASET_SIZE
        True
        >>> resolve_axis("depth")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleFinder(axis='depth')` is not supported. Use 'fraction' (one sweep on a subset), ...

    Raises:
        TimescaleError: ``axis`` is no axis's spelling; the message names ``owner``'s ``axis`` and lists them.
    """
    if isinstance(axis, Axis):
        return axis
    found = (_BY_SPELLING.get(axis) or _VARIANTS.get(axis)) if isinstance(axis, str) else None
    if found is None:
        raise TimescaleError(f"`{owner}(axis={axis!r})` is not supported. Use {_accepted()}.")
    return found
