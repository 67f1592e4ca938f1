"""AdamW param groups for ``configure_optimizers``: who decays, and the muP split by width multiplier.

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Union

from torch import Tensor, nn

from lightning_tau.width import has_infshape, param_width_mult

__all__ = ["WidthMultSpec", "build_param_groups", "decays"]

#: How :func:`build_param_groups` learns a parameter's width multiplier without mup: a mapping from name
#: patterns (``fnmatch`` globs, or a module prefix such as ``"blocks"``) to multipliers, first match wins, or a
#: function ``(name, param) -> multiplier``.
WidthMultSpec = Union[Mapping[str, float], Callable[[str, Tensor], float]]


def decays(name: str, param: Tensor, no_weight_decay: Iterable[str] = ()) -> bool:
    """Whether ``param`` should get weight decay by the timm rule.

    ``False`` for biases (``name`` ends in ``.bias`` or is ``bias``), parameters with ``ndim <= 1`` (norm gains
    and biases, scalars), and names matched by ``no_weight_decay`` (exact names, module prefixes such as
    ``"pos_embed"`` or ``"encoder.norm"``, or ``fnmatch`` globs such as ``"*.scale"``).

    Example:
        >>> import torch
        >>> decays("layer.weight", torch.zeros(3, 3)), decays("layer.bias", torch.zeros(3))
        (True, False)
        >>> decays("norm.weight", torch.zeros(3)), decays("pos_embed", torch.zeros(1, 4, 3), ["pos_embed"])
        (False, False)
    """
    if param.ndim <= 1 or name == "bias" or name.endswith(".bias"):
        return False
    return not any(_matches(name, pattern) for pattern in no_weight_decay)


def build_param_groups(
    module: nn.Module,
    weight_decay: float,
    lr: float | None = None,
    *,
    no_weight_decay: Iterable[str] = (),
    mup: bool = False,
    width_mult: WidthMultSpec | None = None,
) -> list[dict[str, Any]]:
    """Param groups for ``torch.optim.AdamW``: decay on weights only, optionally split for muP.

    Groups are named (``name`` key, which Lightning's ``LearningRateMonitor`` and ``TimescaleCallback`` show):
    ``"decay"`` and ``"no_decay"``, and with ``mup=True`` ``"decay_s4"``, ``"no_decay_s4"``, ... for the
    matrix-like parameters of width multiplier 4. Each group carries a ``width_mult`` key. Empty groups are left
    out. The decaying groups' ``weight_decay`` is only a placeholder when ``TimescaleCallback`` manages the run:
    it rewrites it from the timescale (and keeps the zeros).

    Args:
        module: the model; its ``no_weight_decay()`` method, if it has one (timm's convention), lists more
            names (or prefixes) to exempt.
        weight_decay: the decaying groups' weight decay (width-multiplier-1 value; ``x s`` for muP groups).
        lr: the base learning rate. Needed with ``mup=True`` (groups get ``lr / s``); otherwise, when given,
            every group gets it as its ``lr`` key, and when ``None`` the optimizer's default applies.
        no_weight_decay: more names, module prefixes or ``fnmatch`` globs to exempt from decay.
        mup: split matrix-like parameters (``ndim >= 2``) by width multiplier ``s`` and give them ``lr / s``
            and ``weight_decay * s``. ``s`` comes from ``width_mult`` when given, else from mup's
            ``p.infshape`` (matrix-like = two infinite dimensions; mup's ``MuReadout`` weight stays at ``s = 1``
            because the layer scales its own output).
        width_mult: multipliers for a model without mup (see :data:`WidthMultSpec`): for example
            ``{"blocks": 4}`` for the hidden layers of a model 4x wider than the base. Only ``ndim >= 2``
            parameters use it; others keep ``s = 1``. Implies ``mup=True``.

    Returns:
        A list of param-group dicts (``params``, ``weight_decay``, ``name``, ``width_mult``, and ``lr`` when
        ``lr`` is given), for ``torch.optim.AdamW(groups, lr=lr)``.

    Raises:
        ValueError: for a negative or non-finite ``weight_decay``, a non-positive ``lr``, ``mup=True`` without
            ``lr``, ``mup=True`` on a model without ``infshape`` and no ``width_mult``, a multiplier that is not
            positive, or a model with no trainable parameter.

    Example:
        >>> import torch
        >>> net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.LayerNorm(8), torch.nn.Linear(8, 2))
        >>> groups = build_param_groups(net, weight_decay=0.1)
        >>> [(g["name"], g["weight_decay"], len(g["params"])) for g in groups]
        [('decay', 0.1, 2), ('no_decay', 0.0, 4)]
        >>> # muP without mup: the hidden layer of a 4x wider model gets lr / 4 and weight decay x 4
        >>> groups = build_param_groups(net, weight_decay=0.1, lr=1e-3, width_mult={"2": 4.0})
        >>> [(g["name"], g["lr"], g["weight_decay"]) for g in groups]
        [('decay', 0.001, 0.1), ('decay_s4', 0.00025, 0.4), ('no_decay', 0.001, 0.0)]
        >>> opt = torch.optim.AdamW(groups, lr=1e-3)
    """
    if isinstance(weight_decay, bool) or not (math.isfinite(float(weight_decay)) and float(weight_decay) >= 0):
        raise ValueError(f"`build_param_groups(weight_decay={weight_decay!r})` is not valid: use a finite number >= 0.")
    if lr is not None and (isinstance(lr, bool) or not (math.isfinite(float(lr)) and float(lr) > 0)):
        raise ValueError(f"`build_param_groups(lr={lr!r})` is not valid: use a positive finite learning rate.")
    mup = mup or width_mult is not None
    named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
    if not named:
        raise ValueError(
            f"`build_param_groups` found no parameter with `requires_grad=True` in {type(module).__name__}."
        )
    if mup:
        if lr is None:
            raise ValueError(
                "`build_param_groups(mup=True)` needs the base `lr`: muP gives each matrix-like group `lr / s`."
            )
        if width_mult is None and not any(has_infshape(p) for _, p in named):
            raise ValueError(
                "`build_param_groups(mup=True)` found no `p.infshape` on the model's parameters. Did you forget to"
                " call `mup.set_base_shapes(model, base_model)`? Without mup, pass `width_mult=` (for example"
                " `{'blocks': 4.0}`)."
            )
    exempt = list(no_weight_decay) + _own_no_weight_decay(module)

    buckets: dict[tuple[bool, float], list[Tensor]] = {}
    for name, p in named:
        s = _width_mult_of(name, p, width_mult) if mup else 1.0
        buckets.setdefault((decays(name, p, exempt), s), []).append(p)

    groups: list[dict[str, Any]] = []
    for decay, s in sorted(buckets, key=lambda key: (not key[0], key[1] != 1.0, key[1])):
        group: dict[str, Any] = {
            "params": buckets[(decay, s)],
            "weight_decay": float(weight_decay) * s if decay else 0.0,
            "name": ("decay" if decay else "no_decay") + ("" if s == 1.0 else f"_s{s:g}"),
            "width_mult": s,
        }
        if lr is not None:
            group["lr"] = float(lr) / s
        groups.append(group)
    return groups


def _own_no_weight_decay(module: nn.Module) -> list[str]:
    """The model's own exemptions, timm's convention: a ``no_weight_decay()`` method returning names."""
    method = getattr(module, "no_weight_decay", None)
    if not callable(method):
        return []
    names = method()
    if isinstance(names, str):
        return [names]
    return [str(n) for n in names]


def _matches(name: str, pattern: str) -> bool:
    return name == pattern or name.startswith(pattern + ".") or fnmatch.fnmatchcase(name, pattern)


def _width_mult_of(name: str, param: Tensor, spec: WidthMultSpec | None) -> float:
    if spec is None:
        return param_width_mult(param)
    if param.ndim < 2:
        return 1.0
    if callable(spec) and not isinstance(spec, Mapping):
        s = spec(name, param)
    else:
        s = next((float(v) for pattern, v in spec.items() if _matches(name, pattern)), 1.0)
    if isinstance(s, bool) or not (math.isfinite(float(s)) and float(s) > 0):
        raise ValueError(
            f"`build_param_groups(width_mult=...)` gave {s!r} for parameter {name!r}: multipliers must be positive"
            " finite numbers (the model's width over the base model's width)."
        )
    return float(s)
