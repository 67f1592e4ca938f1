"""What the timescale view needs to know about a torch optimizer: its decay kind, each group's lr and width.

Imports torch only (no Lightning), so it serves plain PyTorch loops too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import torch
from torch import Tensor

__all__ = [
    "DecayKind",
    "decay_kind",
    "group_lr",
    "group_names",
    "group_width_mult",
    "reference_lr",
]

DecayKind = Literal["decoupled", "coupled", "none"]


def decay_kind(optimizer: torch.optim.Optimizer) -> DecayKind:
    """How ``optimizer`` applies weight decay.

    Returns:
        ``"decoupled"`` for the AdamW family (``torch.optim.AdamW`` and subclasses, ``Adam`` built with
        ``decoupled_weight_decay=True``, mup's ``MuAdamW``, which returns a ``torch.optim.AdamW``);
        ``"coupled"`` for any other optimizer with a group whose ``weight_decay`` is positive (L2 added to the
        gradient, as plain ``Adam`` and ``SGD`` do: the EMA view does not hold there); ``"none"`` when no group
        decays.

    Example:
        >>> layer = torch.nn.Linear(2, 2)
        >>> decay_kind(torch.optim.AdamW(layer.parameters()))
        'decoupled'
        >>> decay_kind(torch.optim.Adam(layer.parameters(), weight_decay=0.1))
        'coupled'
        >>> decay_kind(torch.optim.SGD(layer.parameters(), lr=0.1))
        'none'
    """
    if isinstance(optimizer, torch.optim.AdamW):
        return "decoupled"
    if isinstance(optimizer, torch.optim.Adam) and all(
        group.get("decoupled_weight_decay", False) for group in optimizer.param_groups
    ):
        return "decoupled"
    if any(_as_float(group.get("weight_decay", 0.0)) > 0 for group in optimizer.param_groups):
        return "coupled"
    return "none"


def group_lr(group: Mapping[str, Any]) -> float:
    """The learning rate a param group uses at this step, as a float (torch allows a tensor ``lr``)."""
    return _as_float(group["lr"])


def reference_lr(group: Mapping[str, Any]) -> float:
    """The learning rate ``tau`` is defined at: the group's base lr, not its warmed-up value of the moment.

    ``max_lr`` when present (``OneCycleLR`` stores its peak there), else ``initial_lr`` (which every torch
    scheduler records when it is built), else the current ``lr``.

    Example:
        >>> opt = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters(), lr=1e-3)
        >>> _ = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1)
        >>> round(opt.param_groups[0]["lr"], 6), reference_lr(opt.param_groups[0])
        (0.0001, 0.001)
    """
    for key in ("max_lr", "initial_lr", "lr"):
        if key in group:
            return _as_float(group[key])
    raise KeyError("param group has no `lr`")


def group_width_mult(group: Mapping[str, Any]) -> float | None:
    """The muP width multiplier of a param group, or ``None`` when nothing says.

    A ``width_mult`` key on the group wins. Otherwise mup's ``p.infshape.width_mult()`` is read from the
    group's matrix-like parameters (mup stores nothing on the group; ``MuAdamW`` groups parameters by it). When
    the group mixes several multipliers the largest is returned.

    Example:
        >>> group_width_mult({"params": [], "width_mult": 4})
        4.0
        >>> group_width_mult({"params": [torch.nn.Parameter(torch.zeros(2, 2))]}) is None
        True
    """
    if "width_mult" in group:
        return _as_float(group["width_mult"])
    mults = []
    for p in group.get("params", ()):
        infshape = getattr(p, "infshape", None)
        if infshape is not None and infshape.ninf() == 2:
            mults.append(float(infshape.width_mult()))
    return max(mults) if mults else None


def group_names(optimizers: Sequence[torch.optim.Optimizer]) -> list[list[str]]:
    """Names for every param group, as Lightning's ``LearningRateMonitor`` would show them.

    A group's own ``name`` key wins, else ``pg1``, ``pg2``, ... With several optimizers each name is prefixed by
    ``optimizer{i}/`` (counting from 0) so names stay unique.

    Example:
        >>> net = torch.nn.Linear(2, 2)
        >>> opt = torch.optim.AdamW([{"params": [net.weight], "name": "matrices"}, {"params": [net.bias]}])
        >>> group_names([opt])
        [['matrices', 'pg2']]
    """
    names = []
    for i, optimizer in enumerate(optimizers):
        prefix = f"optimizer{i}/" if len(optimizers) > 1 else ""
        names.append([f"{prefix}{group.get('name', f'pg{j + 1}')}" for j, group in enumerate(optimizer.param_groups)])
    return names


def _as_float(value: float | Tensor) -> float:
    number = float(value.item() if isinstance(value, Tensor) else value)
    if math.isnan(number):
        raise ValueError(f"param group value is NaN: {value!r}")
    return number
