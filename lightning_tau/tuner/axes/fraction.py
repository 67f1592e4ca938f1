"""The fraction axis (``TimescaleFinder(axis="fraction")``, the default): one sweep on one subset of the training set.

An axis of one point: no scale, no fitted exponent, no published rules (so no ``tolerance`` or ``seeds="auto"``),
and the only axis an Optuna pruner may stop runs on.
"""

from __future__ import annotations

from typing import ClassVar

from lightning_tau.tuner.axes.base import Axis

__all__ = ["FRACTION", "FractionAxis"]


class FractionAxis(Axis):
    """One sweep of ``tau_epoch`` on a subset holding ``fraction`` of the training set.

    Example:
        >>> FRACTION.name, FRACTION.scaling, FRACTION.rules
        ('fraction', False, ())
    """

    __slots__ = ()

    name: ClassVar[str] = "fraction"
    spellings: ClassVar[tuple[str, ...]] = ("fraction",)
    description: ClassVar[str] = "one sweep on a subset"
    scaling: ClassVar[bool] = False


FRACTION = FractionAxis()
