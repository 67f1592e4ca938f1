"""What the timescale view needs to know about a torch optimizer: its decay kind, each group's lr and width.

Imports torch only (no Lightning, and no optional optimizer package: bitsandbytes, torchao, lion-pytorch and
composer classes are recognised by module and class name), so it serves plain PyTorch loops too.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import Tensor

__all__ = [
    "DecayKind",
    "decay_kind",
    "group_lr",
    "group_names",
    "group_width_mult",
    "param_group_layers",
    "reference_lr",
    "register_decay_kind",
    "unit_rms_updates",
    "unsupported_message",
    "unwrap_optimizer",
]

DecayKind = Literal["decoupled", "coupled", "unknown", "none"]

# Attributes through which a wrapper holds the optimizer that really steps (read from the sources of torch 2.13 and
# Lightning 2.6): `_optimizer`: Lightning's `LightningOptimizer` and Fabric's `_FabricOptimizer`, torch's
# `_NamedOptimizer`; `optimizer`: Accelerate / Hugging Face style wrappers and DeepSpeed's ZeRO optimizers (which
# Lightning's DeepSpeed strategies hand the loop); `base_optimizer`: SAM and Lookahead; `optim`: torch's
# `ZeroRedundancyOptimizer` (the local shard's optimizer) and `PostLocalSGDOptimizer`; `_optim`: torch's
# `ShardedOptimizer`.
_WRAPPER_ATTRIBUTES = ("_optimizer", "optimizer", "base_optimizer", "optim", "_optim")


@dataclass(frozen=True)
class _Entry:
    """What is known about one optimizer class.

    ``kind``: ``"decoupled"`` (``w <- (1 - lr * wd) w`` each step, whatever the update), ``"coupled"`` (``wd * w``
    is added to the gradient), ``"flag"`` (torch's ``Adam``/``NAdam``/``RAdam``: decoupled where the group says
    ``decoupled_weight_decay=True``), ``"lion_flag"`` (lion-pytorch's ``Lion``: decoupled unless built with
    ``decoupled_weight_decay=True``, which divides ``wd`` by the initial lr), ``"lr_relative"`` (decays by
    ``(lr / initial_lr) * wd``: ``wd`` is already ``1 / tau_iter``, so torch's formula would be wrong).
    """

    kind: Literal["decoupled", "coupled", "flag", "lion_flag", "lr_relative"]
    unit_rms: bool = False
    hint: str = ""


_ADAM_LIKE = _Entry("decoupled", unit_rms=True)
_USE_ADAMW = "Use `torch.optim.AdamW`"

_REGISTERED: dict[type, _Entry] = {}


def _torch_entries() -> dict[type, _Entry]:
    # getattr: `Muon` (2.9) and `Adafactor` (2.5) are newer than the oldest torch this package supports.
    table = {
        "AdamW": _ADAM_LIKE,
        "Adam": _Entry("flag", unit_rms=True, hint="Use `torch.optim.AdamW` (or `Adam(decoupled_weight_decay=True)`)"),
        "NAdam": _Entry("flag", unit_rms=True, hint="Build it with `NAdam(..., decoupled_weight_decay=True)`"),
        "RAdam": _Entry("flag", unit_rms=True, hint="Build it with `RAdam(..., decoupled_weight_decay=True)`"),
        # Muon: the decay uses the group's lr; the orthogonalised step uses the shape-adjusted lr (`adjust_lr_fn`).
        "Muon": _Entry("decoupled", unit_rms=False),
        # Adafactor: the decay uses the group's lr; the step is relative to RMS(w), not of RMS about 1.
        "Adafactor": _Entry("decoupled", unit_rms=False),
        **{
            name: _Entry("coupled", hint=_USE_ADAMW)
            for name in ("SGD", "RMSprop", "Adagrad", "Adamax", "Adadelta", "ASGD")
        },
    }
    return {cls: entry for name, entry in table.items() if (cls := getattr(torch.optim, name, None)) is not None}


def _third_party_entries() -> dict[tuple[str, str], _Entry]:
    table: dict[tuple[str, str], _Entry] = {}
    # bitsandbytes 0.50 (CPU backend checked by a zero-gradient step): its whole Adam family, `Adam` included,
    # multiplies the weights by 1 - lr * wd; SGD, RMSprop, Adagrad and LARS add wd * w to the gradient.
    for base in ("Adam", "AdamW", "Lion", "AdEMAMix"):
        for name in (base, f"{base}8bit", f"{base}32bit", f"Paged{base}", f"Paged{base}8bit", f"Paged{base}32bit"):
            # AdEMAMix adds alpha * (slow momentum) to Adam's step, so its update RMS is not about 1
            table[("bitsandbytes", name)] = _Entry("decoupled", unit_rms=base != "AdEMAMix")
    for base in ("SGD", "RMSprop", "Adagrad", "LARS"):
        for name in (base, f"{base}8bit", f"{base}32bit"):
            table[("bitsandbytes", name)] = _Entry("coupled", hint=_USE_ADAMW + " or bitsandbytes' `AdamW8bit`")
    # torchao low-bit optimizers: the AdamW classes decay decoupled, the Adam ones add wd * w to the gradient.
    for suffix in ("8bit", "4bit", "Fp8"):
        table[("torchao", f"AdamW{suffix}")] = _ADAM_LIKE
        table[("torchao", f"Adam{suffix}")] = _Entry("coupled", hint=f"Use torchao's `AdamW{suffix}`")
    table[("torchao", "_AdamW")] = _ADAM_LIKE
    table[("lion_pytorch", "Lion")] = _Entry("lion_flag", unit_rms=True)
    # composer's decoupled optimizers decay by (lr / initial_lr) * wd: `wd` is 1 / tau_iter itself.
    table[("composer", "DecoupledAdamW")] = _Entry("lr_relative")
    table[("composer", "DecoupledSGDW")] = _Entry("lr_relative")
    return table


_TORCH = _torch_entries()
_THIRD_PARTY = _third_party_entries()


def register_decay_kind(
    optimizer_class: type, kind: Literal["decoupled", "coupled"], *, unit_rms_updates: bool = False
) -> None:
    """Declare how ``optimizer_class`` (and its subclasses) apply weight decay.

    Declare ``"decoupled"`` when one step multiplies every weight by exactly ``1 - lr * weight_decay`` (``lr`` and
    ``weight_decay`` read from the param group) before adding the update: a step with all gradients zero then
    leaves ``w * (1 - lr * weight_decay)`` (see the how-to on optimizers). Declare ``"coupled"`` when
    ``weight_decay * w`` is added to the gradient. A registration is looked up before the built-in table, along
    the class's MRO (the most derived class with an entry decides); registering a class again replaces the entry.

    Args:
        optimizer_class: the optimizer class (not an instance).
        kind: ``"decoupled"`` or ``"coupled"``.
        unit_rms_updates: for a decoupled optimizer, whether its update ``u`` (``w <- (1 - lr wd) w - lr u``) has an
            RMS of about 1 per element, as Adam's and Lion's do; only then does ``TimescaleMonitor`` draw the
            random-walk prediction ``sqrt(lr / (2 wd))``.

    Raises:
        TypeError: ``optimizer_class`` is not a class.
        ValueError: ``kind`` is not one of the two, or ``unit_rms_updates=True`` with ``kind="coupled"``.

    Example:
        >>> class MyOptimizer(torch.optim.Optimizer):  # some optimizer of your own that decays decoupled
        ...     pass
        >>> p = torch.nn.Parameter(torch.zeros(2))
        >>> decay_kind(MyOptimizer([p], {"lr": 1e-3, "weight_decay": 0.1}))
        'unknown'
        >>> register_decay_kind(MyOptimizer, "decoupled", unit_rms_updates=True)
        >>> decay_kind(MyOptimizer([p], {"lr": 1e-3, "weight_decay": 0.1}))
        'decoupled'
    """
    if not isinstance(optimizer_class, type):
        raise TypeError(
            "`register_decay_kind(optimizer_class=...)` expects an optimizer class, got an instance of"
            f" {type(optimizer_class).__name__}. Pass the class itself, e.g. `register_decay_kind(MyOptimizer,"
            ' "decoupled")`.'
        )
    if kind not in ("decoupled", "coupled"):
        raise ValueError(
            f"`register_decay_kind(kind={kind!r})` is not a decay kind. Expected 'decoupled' (every step multiplies"
            " the weights by 1 - lr * weight_decay) or 'coupled' (weight_decay * w is added to the gradient)."
        )
    if not isinstance(unit_rms_updates, bool):
        raise TypeError(f"`register_decay_kind(unit_rms_updates={unit_rms_updates!r})` expects True or False.")
    if unit_rms_updates and kind == "coupled":
        raise ValueError(
            "`register_decay_kind(kind='coupled', unit_rms_updates=True)`: the random-walk prediction that"
            " `unit_rms_updates` enables holds for decoupled decay only. Drop `unit_rms_updates` or declare"
            " 'decoupled'."
        )
    _REGISTERED[optimizer_class] = _Entry(kind, unit_rms=unit_rms_updates)


def unwrap_optimizer(optimizer: Any) -> Any:
    """The optimizer that really steps, inside any wrappers around it.

    Follows ``_optimizer`` (Lightning's ``LightningOptimizer`` and Fabric's optimizer, torch's ``_NamedOptimizer``),
    ``optimizer`` (Accelerate-style wrappers, DeepSpeed's ZeRO optimizers), ``base_optimizer`` (SAM, Lookahead),
    ``optim`` (torch's ``ZeroRedundancyOptimizer`` and ``PostLocalSGDOptimizer``) and ``_optim`` (torch's
    ``ShardedOptimizer``) while they lead to a ``torch.optim.Optimizer``. A wrapper class that is registered with
    :func:`register_decay_kind` is not unwrapped by :func:`decay_kind`.

    Example:
        >>> class Wrapper:
        ...     def __init__(self, optimizer):
        ...         self.optimizer = optimizer
        >>> inner = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters())
        >>> unwrap_optimizer(Wrapper(inner)) is inner
        True
    """
    seen = {id(optimizer)}
    while (inner := _inner_optimizer(optimizer)) is not None and id(inner) not in seen:
        seen.add(id(inner))
        optimizer = inner
    return optimizer


def param_group_layers(optimizer: Any) -> list[list[dict[str, Any]]]:
    """The ``param_groups`` lists of ``optimizer`` and of every optimizer inside it that keeps its own copy.

    A wrapper may hold groups of its own beside those of the optimizer that steps: torch's
    ``ZeroRedundancyOptimizer`` copies its groups into its shard optimizer before each step and the shard's back
    over its own after it, so a value written into one of the two alone during a step is lost. A value meant to
    hold is written into every list returned here (the same index in each: only lists as long as the outermost
    are returned; a wrapper that shares its inner optimizer's list is returned once).

    Example:
        >>> class Wrapper:
        ...     def __init__(self, optimizer):
        ...         self.optimizer = optimizer
        ...         self.param_groups = [dict(g) for g in optimizer.param_groups]
        >>> inner = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters())
        >>> [len(groups) for groups in param_group_layers(Wrapper(inner))]
        [1, 1]
        >>> len(param_group_layers(inner))
        1
    """
    layers: list[list[dict[str, Any]]] = []
    seen: set[int] = set()
    while optimizer is not None and id(optimizer) not in seen:
        seen.add(id(optimizer))
        groups = getattr(optimizer, "param_groups", None)
        if isinstance(groups, list) and all(groups is not known for known in layers):
            if not layers or len(groups) == len(layers[0]):
                layers.append(groups)
        optimizer = _inner_optimizer(optimizer)
    return layers


def _inner_optimizer(optimizer: Any, depth: int = 8) -> Any:
    """The object ``optimizer`` wraps, if it is a torch optimizer or a wrapper that leads to one, else ``None``."""
    for attribute in _WRAPPER_ATTRIBUTES:
        inner = getattr(optimizer, attribute, None)
        if inner is None or inner is optimizer:
            continue
        if isinstance(inner, torch.optim.Optimizer) or (depth > 0 and _inner_optimizer(inner, depth - 1) is not None):
            return inner
    return None


def _lookup(optimizer: Any) -> _Entry | None:
    """The entry that decides: from the outermost wrapper inwards, registry then built-ins along each MRO."""
    seen: set[int] = set()
    while optimizer is not None and id(optimizer) not in seen:
        seen.add(id(optimizer))
        for cls in type(optimizer).__mro__:
            entry = _REGISTERED.get(cls) or _TORCH.get(cls)
            if entry is None:
                entry = _THIRD_PARTY.get((cls.__module__.split(".")[0], cls.__name__))
            if entry is not None:
                return entry
        optimizer = _inner_optimizer(optimizer)
    return None


def _resolve(optimizer: Any) -> tuple[Any, str, _Entry | None]:
    """``(innermost optimizer, kind, entry)``, kind being a :data:`DecayKind` or ``"lr_relative"``."""
    entry = _lookup(optimizer)
    # groups and flags come from the optimizer that steps: Lightning's wrapper has no `param_groups` of its own
    inner = unwrap_optimizer(optimizer)
    groups = getattr(inner, "param_groups", None)
    if groups is None:
        raise TypeError(
            f"`decay_kind` expects a torch optimizer (or a wrapper holding one), got {type(optimizer).__name__}"
            " without `param_groups`."
        )
    decaying = [group for group in groups if _as_float(group.get("weight_decay", 0.0)) > 0]
    kind = entry.kind if entry is not None else "unknown"
    if kind == "flag":
        flagged = [group.get("decoupled_weight_decay", False) for group in (decaying or groups)]
        kind = "decoupled" if flagged and all(flagged) else "coupled"
    elif kind == "lion_flag":
        kind = "lr_relative" if getattr(inner, "decoupled_wd", False) else "decoupled"
    if kind == "decoupled":
        return inner, kind, entry
    return inner, kind if decaying else "none", entry


def decay_kind(optimizer: Any) -> DecayKind:
    """How ``optimizer`` applies weight decay, judged by what it is known to do, through any wrappers.

    Returns:
        ``"decoupled"`` when every step multiplies the weights by ``1 - lr * weight_decay`` (the EMA view holds):
        torch's ``AdamW`` (and subclasses, mup's ``MuAdamW``), ``Adam``/``NAdam``/``RAdam`` whose groups have
        ``decoupled_weight_decay=True``, ``Muon``, ``Adafactor``; bitsandbytes' ``Adam``, ``AdamW``, ``Lion`` and
        ``AdEMAMix`` families (8-bit, 32-bit and paged); torchao's ``AdamW8bit``/``AdamW4bit``/``AdamWFp8``;
        lion-pytorch's ``Lion``; any class registered ``"decoupled"`` with :func:`register_decay_kind`.
        ``"coupled"`` for a class known to add ``weight_decay * w`` to the gradient (torch ``Adam`` without the
        flag, ``SGD``, ``RMSprop``, ...) with a decaying group. ``"unknown"`` for any other optimizer with a group
        whose ``weight_decay`` is positive, including those that decay by ``(lr / initial_lr) * weight_decay``
        (composer's ``DecoupledAdamW``, lion-pytorch's ``Lion(decoupled_weight_decay=True)``), whose
        ``weight_decay`` means something else. ``"none"`` when no group decays and the optimizer is not decoupled.

    Example:
        >>> layer = torch.nn.Linear(2, 2)
        >>> decay_kind(torch.optim.AdamW(layer.parameters()))
        'decoupled'
        >>> decay_kind(torch.optim.NAdam(layer.parameters(), weight_decay=0.1, decoupled_weight_decay=True))
        'decoupled'
        >>> decay_kind(torch.optim.Adam(layer.parameters(), weight_decay=0.1))
        'coupled'
        >>> decay_kind(torch.optim.SGD(layer.parameters(), lr=0.1))
        'none'
    """
    kind = _resolve(optimizer)[1]
    return "unknown" if kind == "lr_relative" else kind  # type: ignore[return-value]


def unit_rms_updates(optimizer: Any) -> bool:
    """Whether ``optimizer`` decays decoupled with an update of RMS about 1 per element.

    Only then is the random-walk equilibrium ``RMS(w) ~ sqrt(lr / (2 wd))`` a prediction worth drawing: for
    ``w <- (1 - lr wd) w - lr u`` with uncorrelated updates, ``RMS(w)^2 ~ lr RMS(u)^2 / (2 wd)``. True for the Adam
    family (AdamW, decoupled NAdam/RAdam, the 8-bit and 4-bit AdamWs) and for Lion (a sign update: RMS exactly 1).
    False for ``Muon``: its orthogonalised update has singular values spread around 1 (Newton-Schulz does not
    converge to exactly 1) and a rank set by the gradients, scaled by the shape-dependent ``adjust_lr_fn``, so its
    RMS is not known in advance. False for ``Adafactor`` (a step relative to RMS(w)), bitsandbytes' ``AdEMAMix``,
    any coupled or unknown optimizer, and registered classes unless registered with ``unit_rms_updates=True``.

    Example:
        >>> w = torch.nn.Parameter(torch.zeros(4, 4))
        >>> unit_rms_updates(torch.optim.AdamW([w])), unit_rms_updates(torch.optim.Muon([w]))
        (True, False)
    """
    _, kind, entry = _resolve(optimizer)
    return kind == "decoupled" and entry is not None and entry.unit_rms


def unsupported_message(optimizer: Any, index: int, *, caller: str = "TimescaleCallback", can_skip: bool = True) -> str:
    """Why ``optimizer`` (the ``index``-th) cannot have its weight decay set from ``tau``, and what to do.

    Args:
        optimizer: an optimizer whose :func:`decay_kind` is ``"coupled"`` or ``"unknown"``.
        index: its position among the run's optimizers, for the message.
        caller: the name the message speaks for; it also says to pass ``{caller}(skip_unsupported_optimizers=True)``.
        can_skip: whether ``caller`` takes ``skip_unsupported_optimizers`` (else the last resort is another optimizer).

    Raises:
        ValueError: the optimizer is supported (``"decoupled"``) or has nothing to refuse (``"none"``).

    Example:
        >>> opt = torch.optim.Adam(torch.nn.Linear(2, 2).parameters(), weight_decay=0.1)
        >>> print(unsupported_message(opt, 0))  # doctest: +NORMALIZE_WHITESPACE
        `TimescaleCallback` needs decoupled weight decay, but optimizer 0 (torch.optim.Adam) adds `weight_decay`
        to the gradient (coupled L2 decay), where AdamW's EMA view does not hold. Use `torch.optim.AdamW` (or
        `Adam(decoupled_weight_decay=True)`), or pass `TimescaleCallback(skip_unsupported_optimizers=True)` to
        leave this optimizer alone.
    """
    inner, kind, entry = _resolve(optimizer)
    cls = type(inner)
    name = _class_path(cls)
    head = f"`{caller}` needs decoupled weight decay, but optimizer {index} ({name})"
    skip = (
        f"pass `{caller}(skip_unsupported_optimizers=True)` to leave this optimizer alone."
        if can_skip
        else "use an optimizer with decoupled weight decay."
    )
    if kind == "coupled":
        hint = entry.hint if entry is not None and entry.hint else _USE_ADAMW
        return (
            f"{head} adds `weight_decay` to the gradient (coupled L2 decay), where AdamW's EMA view does not hold."
            f" {hint}, or {skip}"
        )
    if kind == "lr_relative":
        return (
            f"{head} multiplies the weights by `1 - (lr / initial_lr) * weight_decay` each step: its"
            " `weight_decay` is already `1 / tau_iter` (at the initial lr), not torch's `weight_decay = 1 / (lr *"
            " tau_iter)` that this package computes. Set its `weight_decay` to `1 / tau_iter` yourself, use"
            " `torch.optim.AdamW`"
            + (" (or `Lion(decoupled_weight_decay=False)`)" if cls.__module__.startswith("lion_pytorch") else "")
            + f", or {skip}"
        )
    if kind == "unknown":
        return (
            f"{head} is not known to decay decoupled (every step multiplying the weights by exactly"
            " `1 - lr * weight_decay`, as AdamW does). If it does, declare it before the fit with"
            f' `lightning_tau.register_decay_kind({cls.__name__}, "decoupled")`; a step with all gradients zero'
            f" that leaves exactly `w * (1 - lr * weight_decay)` shows it. Otherwise {skip}"
        )
    raise ValueError(
        f"`unsupported_message`: optimizer {index} ({name}) has decay kind {kind!r}; only 'coupled' and 'unknown'"
        " optimizers are refused."
    )


def _class_path(cls: type) -> str:
    if getattr(torch.optim, cls.__name__, None) is cls:
        return f"torch.optim.{cls.__name__}"
    return f"{cls.__module__}.{cls.__qualname__}"


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
    """Names for every param group, as Lightning's ``LearningRateMonitor`` would show them, each one unique.

    A group's own ``name`` key wins, else ``pg1``, ``pg2``, ... Groups of one optimizer that would share a name
    (mup's ``MuAdamW`` copies ``name`` onto every group it splits a group into) get their index after it,
    ``all/pg1``, ``all/pg2``, so no two groups ever share a logged series or a table row; names that are unique
    stay as they are. With several optimizers each name is prefixed by ``optimizer{i}/`` (counting from 0).
    The monitor's keys, the callback's table and the finder's trial records all name groups with this function.

    Example:
        >>> net = torch.nn.Linear(2, 2)
        >>> opt = torch.optim.AdamW([{"params": [net.weight], "name": "matrices"}, {"params": [net.bias]}])
        >>> group_names([opt])
        [['matrices', 'pg2']]
        >>> opt = torch.optim.AdamW([{"params": [net.weight], "name": "all"}, {"params": [net.bias], "name": "all"}])
        >>> group_names([opt])
        [['all/pg1', 'all/pg2']]
    """
    names = []
    for i, optimizer in enumerate(optimizers):
        prefix = f"optimizer{i}/" if len(optimizers) > 1 else ""
        own = [str(group.get("name", f"pg{j + 1}")) for j, group in enumerate(optimizer.param_groups)]
        names.append([prefix + name for name in _unique(own)])
    return names


def _unique(names: list[str]) -> list[str]:
    """``names`` with every name that occurs more than once followed by its group's index (``name/pg{j + 1}``)."""
    for _ in range(len(names)):  # a suffixed name may clash with a given one ("all/pg2"): suffix again
        counts = Counter(names)
        if len(counts) == len(names):
            break
        names = [f"{name}/pg{j + 1}" if counts[name] > 1 else name for j, name in enumerate(names)]
    return names


def _as_float(value: float | Tensor) -> float:
    number = float(value.item() if isinstance(value, Tensor) else value)
    if math.isnan(number):
        raise ValueError(f"param group value is NaN: {value!r}")
    return number
