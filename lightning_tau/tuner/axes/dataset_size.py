"""The dataset-size axis (``TimescaleFinder(axis="dataset_size", fractions=...)``): the sweep on a subset of every
fraction of the training set.

The swept ``x`` is ``tau_epoch``, the scale the training samples ``N``; the published rules are :data:`SIZE_RULES`.

More: docs/finder.rst, 'Along width and dataset size: measure the rule on your model'.
"""

from __future__ import annotations

from typing import Any, ClassVar

from lightning_tau._numbers import exponent as exponent_text
from lightning_tau.tuner.axes.base import Axis, Rule, frac

__all__ = ["DATASET_SIZE", "SIZE_RULES", "DatasetSizeAxis"]

#: Dataset-size rules, as the exponent of the best ``tau_epoch`` in ``N`` at fixed epochs, batch and lr.
SIZE_RULES: tuple[Rule, ...] = (
    Rule("Wang & Aitchison", 0.0, "ICML 2025, Sec. 4.1", "tau_epoch constant, so λ ∝ 1/N"),
    Rule(
        "the 1/2 rules",
        -0.5,
        "Loshchilov & Hutter's normalized weight decay; Bergsma et al. 2025 (Power Lines, about -0.53, derived for"
        " one epoch)",
        "tau_epoch ∝ 1/√N, so λ ∝ 1/√N",
    ),
    Rule("fixed λ", -1.0, "what most runs do today", "the same λ at every N, so tau_epoch ∝ 1/N"),
)


class DatasetSizeAxis(Axis):
    """The sweep on a subset of every fraction; the exponent of the best ``tau_epoch`` in ``N``, applied as
    ``size_exponent`` from the largest fraction's ``N``.

    Example:
        >>> DATASET_SIZE.callback_kwargs(8.0, -0.5, 500)
        {'tau_epoch': 8.0, 'size_exponent': -0.5, 'reference_dataset_size': 500}
        >>> DATASET_SIZE.point_name(0.1, 150.0), DATASET_SIZE.span_text(150, 1350), DATASET_SIZE.anchor(3)
        ('N=150', 'N = 150 to 1350', 2)
    """

    __slots__ = ()

    name: ClassVar[str] = "dataset_size"
    spellings: ClassVar[tuple[str, ...]] = ("dataset_size", "dataset-size")
    description: ClassVar[str] = "with `fractions`"
    scaling: ClassVar[bool] = True
    values_argument: ClassVar[str | None] = "fractions"
    values_needed: ClassVar[str] = (
        "at least 2 increasing fractions of the training set, e.g. fractions=(0.1, 0.25, 0.5)"
    )
    values_elsewhere: ClassVar[str] = "`fraction=` for one subset"
    value_key: ClassVar[str | None] = "fraction"
    value_type: ClassVar[Any] = float
    model_per_point: ClassVar[bool] = False
    point_noun: ClassVar[str | None] = "size"
    point_nouns: ClassVar[str] = "sizes"
    range_noun: ClassVar[str] = "N"
    scale_symbol: ClassVar[str] = "N"
    scale_words: ClassVar[str] = "training samples N"
    rules: ClassVar[tuple[Rule, ...]] = SIZE_RULES
    x_falls_with_tau: ClassVar[bool] = False
    anchor_smallest: ClassVar[bool] = False
    paper_setting: ClassVar[str] = "size_exponent=0"

    def callback_kwargs(self, tau_epoch: float, exponent: float, reference_size: int) -> dict[str, Any]:
        """``tau_epoch``, ``size_exponent = exponent`` and ``reference_dataset_size``: the callback holds
        ``tau_epoch * (N / reference_dataset_size) ** size_exponent``."""
        return {"tau_epoch": tau_epoch, "size_exponent": float(exponent), "reference_dataset_size": int(reference_size)}

    def follow_text(self, exponent: float) -> str:
        if exponent == 0:
            return "result.callback() keeps the largest fraction's best tau_epoch at every N (size_exponent = 0)"
        return (
            "result.callback() carries the largest fraction's best tau_epoch to the full N as"
            f" (N / N_ref)^{frac(exponent)}"
        )

    def measured_text(self, exponent: float) -> str:
        return f"size_exponent = {exponent_text(exponent)}"

    def scale_text(self, scale: str) -> str:
        return f"N = {scale}"

    def span_text(self, lo: float, hi: float) -> str:
        return f"N = {lo:g} to {hi:g}"

    def from_to_text(self, lo: float, hi: float) -> str:
        return f"from N = {lo:g} to N = {hi:g}"

    def point_name(self, value: float, scale: float) -> str:
        return f"N={int(scale)}"


DATASET_SIZE = DatasetSizeAxis()
