"""muP width multipliers and the fixed-λ pitfall (pure logic; torch for annotations only, never mup).

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # annotations only: `lightning-tau transfer` imports this module before torch (its usage checks)
    from torch import Tensor

__all__ = [
    "NO_MUP",
    "FixedLambdaPitfall",
    "GroupRate",
    "find_fixed_lambda_pitfall",
    "format_fixed_lambda_pitfall",
    "group_width_problem",
    "has_infshape",
    "model_width_mult",
    "param_width_mult",
]

#: ``width_problem`` of a group none of whose parameters mup annotated, with no ``width_mult`` key.
NO_MUP = "it has no `width_mult` key and its parameters carry no mup `infshape`"


def has_infshape(param: Tensor) -> bool:
    """Whether ``mup.set_base_shapes`` has annotated ``param`` (it carries ``param.infshape``).

    Example:
        >>> import torch
        >>> has_infshape(torch.nn.Parameter(torch.zeros(2, 2)))
        False
    """
    return getattr(param, "infshape", None) is not None


def param_width_mult(param: Tensor) -> float:
    """The muP width multiplier Adam-style muP divides ``param``'s learning rate by.

    ``p.infshape.width_mult()`` for a parameter mup marks matrix-like (two infinite dimensions), else ``1.0``:
    vector-like and finite parameters keep the base learning rate, as in mup's ``MuAdamW``. A parameter without
    ``infshape`` (mup not used) has multiplier ``1.0``.

    Example:
        >>> import torch
        >>> param_width_mult(torch.nn.Parameter(torch.zeros(4, 4)))
        1.0
    """
    infshape = getattr(param, "infshape", None)
    if infshape is None or infshape.ninf() != 2:
        return 1.0
    return float(infshape.width_mult())


def model_width_mult(mults: Iterable[tuple[str, float | None]]) -> float:
    """``S``, a model's muP width multiplier, from its param groups' ``(name, s)``: the largest ``s`` other than 1;
    1 when no group has one (``s = None`` reads as 1).

    Under Adam-style muP the hidden (matrix-like) groups carry ``S`` (:func:`param_width_mult`, mup's fan-in ratio);
    vector-like groups carry 1 or nothing. Groups at 1 do not count, so a model narrower than the base (``S = 0.5``)
    is read as such. A ``width_exponent`` ``alpha`` scales every decaying group's timescale by ``S ** (1 - alpha)``
    (:func:`lightning_tau.decide.decide_groups`, :func:`lightning_tau.transfer.transfer_groups`).

    Raises:
        ValueError: a group whose multiplier is not positive and finite (named).

    Example:
        >>> model_width_mult([("embed", 1.0), ("hidden", 4.0), ("bias", None)])
        4.0
        >>> model_width_mult([("narrow", 0.5)]), model_width_mult([("plain", None)])
        (0.5, 1.0)
    """
    found = []
    for name, s in mults:
        if s is None or s == 1.0:
            continue
        if not (s > 0 and math.isfinite(s)):
            raise ValueError(f"Param group {name!r} has width multiplier {s!r}; `width_exponent` needs a positive one.")
        found.append(float(s))
    return max(found) if found else 1.0


def group_width_problem(group: Mapping[str, Any]) -> str | None:
    """Why a param group has no single width multiplier ``s`` (``None`` when it has one).

    A group has one when it carries a ``width_mult`` key, or when mup's ``set_base_shapes`` annotated every one of
    its parameters and they share one multiplier (:func:`param_width_mult`: 1 for vector-like ones). A width
    exponent other than 1 scales every group's weight decay by ``S ** (alpha - 1)``, ``S`` the largest group's
    multiplier (:func:`model_width_mult`), so it needs every group's ``s``.

    Example:
        >>> import torch
        >>> group_width_problem({"params": [], "width_mult": 4})  # declared
        >>> group_width_problem({"params": [torch.nn.Parameter(torch.zeros(2, 2))]})
        'it has no `width_mult` key and its parameters carry no mup `infshape`'
    """
    if "width_mult" in group:
        return None
    params = list(group.get("params", ()))
    missing = sum(not has_infshape(p) for p in params)
    if missing == len(params) and params:
        return NO_MUP
    if missing:
        return f"it has no `width_mult` key and {missing} of its {len(params)} parameters carry no mup `infshape`"
    mults = sorted({param_width_mult(p) for p in params})
    if len(mults) > 1:
        return (
            "its parameters have different width multipliers ("
            + ", ".join(f"{m:g}" for m in mults)
            + "): one group, one s (`mup.MuAdamW` and `build_param_groups(mup=True)` split groups by s)"
        )
    return None


class GroupRate(NamedTuple):
    """One param group as ``configure_optimizers`` built it: the facts the pitfall check needs.

    Attributes:
        name: the group's name (``pg1``, ... when it has none).
        lr: the group's reference (base or peak) learning rate.
        weight_decay: the group's ``weight_decay`` before the callback changed it.
        width_mult: the group's muP width multiplier; ``None`` means 1.
    """

    name: str
    lr: float
    weight_decay: float
    width_mult: float | None


@dataclass(frozen=True)
class FixedLambdaPitfall:
    """A param group whose lr was divided by its width multiplier but whose weight decay was not multiplied.

    Attributes:
        name: the group's name.
        width_mult: its width multiplier ``s``.
        lr: its reference learning rate.
        weight_decay: its weight decay as configured.
        base_lr_times_weight_decay: ``lr * weight_decay`` of the width-multiplier-1 groups it was compared with.
    """

    name: str
    width_mult: float
    lr: float
    weight_decay: float
    base_lr_times_weight_decay: float

    @property
    def lr_times_weight_decay(self) -> float:
        """The group's EMA rate ``1 / tau_iter`` as configured, about ``base_lr_times_weight_decay / s``."""
        return self.lr * self.weight_decay

    @property
    def corrected_weight_decay(self) -> float:
        """The weight decay that restores the base groups' ``tau_iter``: ``base_rate / lr`` (about ``s * wd``)."""
        return self.base_lr_times_weight_decay / self.lr


def find_fixed_lambda_pitfall(groups: Sequence[GroupRate], rel_tol: float = 0.05) -> list[FixedLambdaPitfall]:
    """Find decaying groups set up with "fixed-λ muP": ``lr / s`` but the base weight decay.

    Only groups with ``lr > 0`` and ``weight_decay > 0`` take part. With groups of width multiplier 1 to compare
    against, a group with multiplier ``s != 1`` is reported when its ``lr * weight_decay`` is about ``1 / s``
    times theirs (their median), i.e. its ``tau_iter`` is ``s`` times too long. Without such groups, the
    width-scaled groups are reported when they have at least two distinct multipliers and
    ``s * lr * weight_decay`` is the same for all of them while ``lr * weight_decay`` is not. Groups set up by
    the muP rule (``lr / s`` and ``weight_decay * s``, as mup 1.0.0's ``MuAdamW`` does) are never reported.

    Args:
        groups: every param group of the optimizer(s), in order.
        rel_tol: relative tolerance of "about".

    Returns:
        The pitfall groups, in input order (empty when none).

    Example:
        >>> groups = [
        ...     GroupRate("hidden", lr=1e-3 / 4, weight_decay=0.1, width_mult=4),  # nanoGPT-mup: lr / s only
        ...     GroupRate("embedding", lr=1e-3, weight_decay=0.1, width_mult=None),
        ...     GroupRate("norms", lr=1e-3, weight_decay=0.0, width_mult=None),
        ... ]
        >>> [(p.name, p.width_mult, round(p.corrected_weight_decay, 12)) for p in find_fixed_lambda_pitfall(groups)]
        [('hidden', 4.0, 0.4)]
        >>> # the muP rule (weight decay x s) is fine
        >>> find_fixed_lambda_pitfall([GroupRate("hidden", 1e-3 / 4, 0.4, 4), GroupRate("embedding", 1e-3, 0.1, 1)])
        []
    """
    decaying = [g for g in groups if g.lr > 0 and g.weight_decay > 0 and math.isfinite(g.lr * g.weight_decay)]
    base = [g for g in decaying if math.isclose(_mult(g), 1.0, rel_tol=1e-9)]
    scaled = [g for g in decaying if not math.isclose(_mult(g), 1.0, rel_tol=1e-9)]
    if not scaled:
        return []
    if base:
        reference = statistics.median(g.lr * g.weight_decay for g in base)
        return [
            _pitfall(g, reference)
            for g in scaled
            if _is_fixed_lambda(g.lr * g.weight_decay, _mult(g), reference, rel_tol)
        ]
    if len({_mult(g) for g in scaled}) < 2:
        return []
    reference = scaled[0].lr * scaled[0].weight_decay * _mult(scaled[0])
    if all(_is_fixed_lambda(g.lr * g.weight_decay, _mult(g), reference, rel_tol) for g in scaled):
        return [_pitfall(g, reference) for g in scaled]
    return []


def format_fixed_lambda_pitfall(
    pitfalls: Sequence[FixedLambdaPitfall], written: Sequence[float] | None = None, *, who: str = "TimescaleCallback"
) -> str:
    """The warning text for :func:`find_fixed_lambda_pitfall`'s findings.

    Args:
        pitfalls: the groups found.
        written: the weight decay the caller wrote into each of those groups (same order), if it wrote any.
        who: the name the message starts with.

    Example:
        >>> p = FixedLambdaPitfall("hidden", 4.0, 2.5e-4, 0.1, 1e-4)
        >>> print(format_fixed_lambda_pitfall([p], written=[0.4]))  # doctest: +NORMALIZE_WHITESPACE
        `TimescaleCallback`: fixed-λ muP pitfall: these param groups had their lr divided by the width
        multiplier s but kept the base weight decay (as mup's `decoupled_wd=True` and nanoGPT-mup groups do), so
        their EMA timescale tau_iter = 1/(lr*weight_decay) was s times the base groups' (base
        lr*weight_decay=0.0001): 'hidden' (s=4, lr*weight_decay=2.5e-05, weight_decay 0.1 -> 0.4). The muP rule
        for AdamW is lr / s *and* weight_decay * s (Wang & Aitchison 2025); the weight decay after the arrow is
        what was written, so every decaying group now has the same tau_iter.
    """
    if not pitfalls:
        return ""
    parts = []
    for i, p in enumerate(pitfalls):
        after = f" -> {written[i]:.4g}" if written is not None else f" (muP rule: {p.corrected_weight_decay:.4g})"
        parts.append(
            f"{p.name!r} (s={p.width_mult:.4g}, lr*weight_decay={p.lr_times_weight_decay:.4g},"
            f" weight_decay {p.weight_decay:.4g}{after})"
        )
    base = statistics.median(p.base_lr_times_weight_decay for p in pitfalls)
    tail = (
        "the weight decay after the arrow is what was written, so every decaying group now has the same tau_iter."
        if written is not None
        else "set each listed group's weight decay to the value shown."
    )
    return (
        f"`{who}`: fixed-λ muP pitfall: these param groups had their lr divided by the width multiplier s but kept"
        " the base weight decay (as mup's `decoupled_wd=True` and nanoGPT-mup groups do), so their EMA timescale"
        f" tau_iter = 1/(lr*weight_decay) was s times the base groups' (base lr*weight_decay={base:.4g}): "
        + ", ".join(parts)
        + ". The muP rule for AdamW is lr / s *and* weight_decay * s (Wang & Aitchison 2025); "
        + tail
    )


def _mult(group: GroupRate) -> float:
    return 1.0 if group.width_mult is None else float(group.width_mult)


def _is_fixed_lambda(rate: float, width_mult: float, reference: float, rel_tol: float) -> bool:
    """``rate`` is about ``reference / s`` and closer to that than to ``reference`` (the muP-correct value)."""
    fixed_error = abs(math.log(rate * width_mult / reference))
    mup_error = abs(math.log(rate / reference))
    return fixed_error <= math.log1p(rel_tol) and fixed_error < mup_error


def _pitfall(group: GroupRate, reference: float) -> FixedLambdaPitfall:
    return FixedLambdaPitfall(group.name, _mult(group), group.lr, group.weight_decay, reference)
