"""The width axis (``TimescaleFinder(axis="width", widths=...)``): the sweep at every width of a μP model.

The swept ``x`` is ``λ_base``, the scale the width; the published rules are :data:`WIDTH_RULES`.

More: docs/finder.rst, 'Along width and dataset size: measure the rule on your model'.
"""

from __future__ import annotations

from typing import Any, ClassVar

from lightning_tau._numbers import exponent as exponent_text
from lightning_tau.tuner.axes.base import Axis, Rule, frac

__all__ = ["WIDTH", "WIDTH_RULES", "WidthAxis"]

#: Width rules, as the exponent of the best ``λ_base`` in the width (callback at ``width_exponent=1``); the rule's
#: ``α`` (``λ ∝ s^α``) is ``1 + exponent``.
WIDTH_RULES: tuple[Rule, ...] = (
    Rule("Wang & Aitchison", 0.0, "ICML 2025, Sec. 4.2", "α = 1: λ ∝ s, tau_iter held"),
    Rule("Fan et al.", -0.5, "arXiv 2510.15262", "α = 1/2: λ ∝ √s"),
    Rule("Qiu et al.", -1.0, "arXiv 2512.05620", "α = 0: the same λ at every width under μP's lr / s"),
)


class WidthAxis(Axis):
    """The sweep at every width; the exponent of the best ``λ_base`` in the width, applied as ``width_exponent``.

    Example:
        >>> WIDTH.callback_kwargs(4.0, -0.5, 300)
        {'tau_epoch': 4.0, 'width_exponent': 0.5}
        >>> WIDTH.point_name(64, 64.0), WIDTH.span_text(64, 512), WIDTH.anchor(3)
        ('width 64', 'widths 64 to 512', 0)
    """

    __slots__ = ()

    name: ClassVar[str] = "width"
    spellings: ClassVar[tuple[str, ...]] = ("width",)
    description: ClassVar[str] = "with `widths`"
    scaling: ClassVar[bool] = True
    values_argument: ClassVar[str | None] = "widths"
    values_needed: ClassVar[str] = "at least 2 increasing widths, e.g. widths=(64, 128, 256)"
    values_elsewhere: ClassVar[str] = "leave `widths` out"
    value_key: ClassVar[str | None] = "width"
    value_type: ClassVar[Any] = int
    model_per_point: ClassVar[bool] = True
    point_noun: ClassVar[str | None] = "width"
    point_nouns: ClassVar[str] = "widths"
    range_noun: ClassVar[str] = "widths"
    scale_symbol: ClassVar[str] = "width"
    scale_words: ClassVar[str] = "width"
    x_name: ClassVar[str] = "lambda_base"
    x_label: ClassVar[str] = "λ_base"
    x_words: ClassVar[str] = "base weight decay λ_base"
    best_words: ClassVar[str] = "best λ_base"
    rules: ClassVar[tuple[Rule, ...]] = WIDTH_RULES
    x_falls_with_tau: ClassVar[bool] = True
    anchor_smallest: ClassVar[bool] = True
    paper_setting: ClassVar[str] = "width_exponent=1"

    def callback_kwargs(self, tau_epoch: float, exponent: float, reference_size: int) -> dict[str, Any]:
        """``tau_epoch`` and ``width_exponent = 1 + exponent`` (``α``): the callback scales each decaying group's
        timescale by ``S ** (1 - width_exponent)``, ``S`` the model's μP width multiplier."""
        return {"tau_epoch": tau_epoch, "width_exponent": 1.0 + exponent}

    def alpha(self, exponent: float) -> float | None:
        """``α = 1 + exponent`` (``λ ∝ s ** α``)."""
        return 1.0 + exponent

    def follow_text(self, exponent: float) -> str:
        return f"result.callback() uses width_exponent = {frac(1 + exponent)} (α)"

    def measured_text(self, exponent: float) -> str:
        return f"width_exponent = {exponent_text(1 + exponent, sign=False)} (exponent {exponent_text(exponent)})"


WIDTH = WidthAxis()
