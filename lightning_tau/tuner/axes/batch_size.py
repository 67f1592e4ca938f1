"""The batch-size axis (``TimescaleFinder(axis="batch_size", batch_sizes=..., lr_scaling=...)``): the sweep at every
global batch ``B``, its rules from ``lr ∝ B^m`` (:func:`batch_rules`), one axis object per ``lr_scaling``.

More: docs/finder.rst, "Along the batch size".
"""

from __future__ import annotations

from typing import Any, ClassVar

from lightning_tau._numbers import exponent as exponent_text
from lightning_tau.tuner.axes.base import Axis, Rule, frac

__all__ = [
    "BATCH_SIZE",
    "BATCH_SIZE_VARIANTS",
    "LR_SCALINGS",
    "BatchSizeAxis",
    "batch_rules",
]

#: ``lr_scaling`` -> ``m`` of ``lr ∝ B^m`` across the batch sizes.
LR_SCALINGS: dict[str, float] = {"none": 0.0, "sqrt": 0.5, "linear": 1.0}


def batch_rules(m: float) -> tuple[Rule, ...]:
    """The batch rules at ``lr ∝ B^m``, as the exponent of the best ``tau_epoch`` in ``B`` (``B^(1 - k - m)`` for a
    rule ``λ ∝ B^k``). Malladi et al. 2022's square-root rule (arXiv 2205.10287) is not among them: its prescription
    for decoupled weight decay was not found in its text, and no rule goes in without a source.

    Example:
        >>> [(r.name, r.exponent) for r in batch_rules(0.5)]
        [('constant tau_epoch', 0.0), ('fixed λ', 0.5)]
    """
    k = 1.0 - m  # the λ ∝ B^k that holds tau_epoch
    return (
        Rule(
            "constant tau_epoch",
            0.0,
            "Wang & Aitchison, ICML 2025, discussion; Bergsma et al. 2025 (Power Lines: λ ∝ B at a fixed lr)",
            f"λ ∝ B^{frac(k)} at lr ∝ B^{frac(m)}, so tau_epoch constant",
        ),
        Rule("fixed λ", 1.0 - m, "what most runs do today", f"the same λ at every B, so tau_epoch ∝ B^{frac(1 - m)}"),
    )


class BatchSizeAxis(Axis):
    """The sweep at every global batch size; the exponent of the best ``tau_epoch`` in ``B``, applied as
    ``batch_exponent`` from the smallest batch (``B_0``, where the lr is the user's).

    Example:
        >>> BATCH_SIZE.callback_kwargs(8.0, 0.5, 32)
        {'tau_epoch': 8.0, 'batch_exponent': 0.5, 'reference_batch_size': 32}
        >>> BATCH_SIZE.with_lr_scaling("sqrt").name, BATCH_SIZE.with_lr_scaling("sqrt").lr_exponent
        ('batch_size_lr_sqrt', 0.5)
        >>> BATCH_SIZE.point_name(64, 64.0), BATCH_SIZE.span_text(32, 128), BATCH_SIZE.anchor(3)
        ('B=64', 'B = 32 to 128', 0)
    """

    __slots__ = ()

    name: ClassVar[str] = "batch_size"
    spellings: ClassVar[tuple[str, ...]] = ("batch_size", "batch-size")
    description: ClassVar[str] = "with `batch_sizes`"
    scaling: ClassVar[bool] = True
    values_argument: ClassVar[str | None] = "batch_sizes"
    values_needed: ClassVar[str] = "at least 2 increasing global batch sizes, e.g. batch_sizes=(32, 64, 128)"
    values_elsewhere: ClassVar[str] = "leave `batch_sizes` out"
    value_key: ClassVar[str | None] = "batch_size"
    value_type: ClassVar[Any] = int
    batch_per_point: ClassVar[bool] = True
    point_noun: ClassVar[str | None] = "batch size"
    point_nouns: ClassVar[str] = "batch sizes"
    range_noun: ClassVar[str] = "B"
    scale_symbol: ClassVar[str] = "B"
    scale_words: ClassVar[str] = "global batch size B"
    x_falls_with_tau: ClassVar[bool] = False
    anchor_smallest: ClassVar[bool] = True
    paper_setting: ClassVar[str] = "batch_exponent=0"
    #: ``lr_scaling`` of this axis object, and its ``m`` (``lr ∝ B^m``)
    lr_scaling: ClassVar[str] = "none"
    lr_exponent: ClassVar[float] = 0.0
    rules: ClassVar[tuple[Rule, ...]] = batch_rules(0.0)

    def with_lr_scaling(self, lr_scaling: str) -> BatchSizeAxis:
        """The batch axis object of ``lr_scaling`` (a key of :data:`LR_SCALINGS`, checked by the caller)."""
        return BATCH_SIZE_VARIANTS[lr_scaling]

    def lr_factor(self, batch_size: int, smallest: int) -> float:
        """What the user's lr is multiplied by at ``batch_size``: ``(batch_size / smallest) ** m``.

        Example:
            >>> BATCH_SIZE.with_lr_scaling("sqrt").lr_factor(128, 32), BATCH_SIZE.lr_factor(128, 32)
            (2.0, 1.0)
        """
        return (batch_size / smallest) ** self.lr_exponent

    def callback_kwargs(self, tau_epoch: float, exponent: float, reference_size: int) -> dict[str, Any]:
        """``tau_epoch`` (the smallest batch's best), ``batch_exponent = exponent`` and ``reference_batch_size``
        (the smallest batch): the callback holds ``tau_epoch * (B / reference_batch_size) ** batch_exponent``."""
        return {"tau_epoch": tau_epoch, "batch_exponent": float(exponent), "reference_batch_size": int(reference_size)}

    def follow_text(self, exponent: float) -> str:
        if exponent == 0:
            return "result.callback() keeps the smallest batch's best tau_epoch at every B (batch_exponent = 0)"
        return (
            "result.callback() carries the smallest batch's best tau_epoch to another B as"
            f" (B / B_ref)^{frac(exponent)}"
        )

    def measured_text(self, exponent: float) -> str:
        return f"batch_exponent = {exponent_text(exponent)}"

    def scale_text(self, scale: str) -> str:
        return f"B = {scale}"

    def span_text(self, lo: float, hi: float) -> str:
        return f"B = {lo:g} to {hi:g}"

    def from_to_text(self, lo: float, hi: float) -> str:
        return f"from B = {lo:g} to B = {hi:g}"

    def point_name(self, value: float, scale: float) -> str:
        return f"B={int(scale)}"


class _SqrtLrBatchSizeAxis(BatchSizeAxis):
    """The batch axis at ``lr ∝ √B`` (``lr_scaling="sqrt"``)."""

    __slots__ = ()

    name: ClassVar[str] = "batch_size_lr_sqrt"
    spellings: ClassVar[tuple[str, ...]] = ("batch_size_lr_sqrt",)
    lr_scaling: ClassVar[str] = "sqrt"
    lr_exponent: ClassVar[float] = 0.5
    rules: ClassVar[tuple[Rule, ...]] = batch_rules(0.5)


class _LinearLrBatchSizeAxis(BatchSizeAxis):
    """The batch axis at ``lr ∝ B`` (``lr_scaling="linear"``)."""

    __slots__ = ()

    name: ClassVar[str] = "batch_size_lr_linear"
    spellings: ClassVar[tuple[str, ...]] = ("batch_size_lr_linear",)
    lr_scaling: ClassVar[str] = "linear"
    lr_exponent: ClassVar[float] = 1.0
    rules: ClassVar[tuple[Rule, ...]] = batch_rules(1.0)


BATCH_SIZE = BatchSizeAxis()

#: The batch axis object of each ``lr_scaling`` (the rules depend on it): resolved by name too, so a result read back
#: from its JSON (``AxisResult.axis``) has its own rules.
BATCH_SIZE_VARIANTS: dict[str, BatchSizeAxis] = {
    "none": BATCH_SIZE,
    "sqrt": _SqrtLrBatchSizeAxis(),
    "linear": _LinearLrBatchSizeAxis(),
}
