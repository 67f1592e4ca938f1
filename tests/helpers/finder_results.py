"""One builder of hand-made :class:`~lightning_tau.tuner.analysis.finder_result.FinderResult` objects, for the tests that check what a
result says (its table, JSON, figure, range, axis statistics) without training anything.

``FinderResult.from_curve`` takes ten keyword settings besides the curve; :func:`finder_result` gives them the values
most tests use (a quarter of 1000 samples, 10 epochs of batch 50, ``val_loss`` at its last epoch, one group
``decay`` at lr 1e-3) and takes any of them as a keyword in their place.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lightning_tau.tuner.analysis.finder_result import CurvePoint, FinderResult

#: The settings :func:`finder_result` passes unless told otherwise (``subset_size`` and ``full_cost`` are derived).
DEFAULTS: dict[str, Any] = dict(
    lr={"decay": 1e-3},
    monitor="val_loss",
    mode="min",
    reduce="last",
    fraction=0.25,
    dataset_size=1000,
    batch_size=50,
    epochs=10,
)


def finder_result(curve: Sequence[CurvePoint], **settings: Any) -> FinderResult:
    """``FinderResult.from_curve(curve, ...)`` with :data:`DEFAULTS` for the settings not given.

    ``subset_size`` is by default ``round(fraction * dataset_size)`` and ``full_cost`` the steps of every run of
    ``curve`` scaled from the subset to the whole training set (``sum of steps * dataset_size / subset_size``).

    Example:
        >>> curve = [CurvePoint(t, [v], [0], {}, [10]) for t, v in [(2.0, 0.4), (8.0, 0.2), (32.0, 0.3)]]
        >>> result = finder_result(curve)
        >>> result.subset_size, result.cost, result.full_cost, result.grid_tau_epoch
        (250, 30, 120, 8.0)
        >>> finder_result(curve, fraction=0.5, full_cost=7).subset_size, finder_result(curve, full_cost=7).full_cost
        (500, 7)
    """
    merged = {**DEFAULTS, **settings}
    merged.setdefault("subset_size", round(merged["fraction"] * merged["dataset_size"]))
    if "full_cost" not in merged:
        steps = sum(sum(p.steps) for p in curve)
        merged["full_cost"] = round(steps * merged["dataset_size"] / merged["subset_size"])
    return FinderResult.from_curve(curve, **merged)
