"""The width axis's model probes: ``make_model(width)`` checked before any training, and its μP width multipliers.

Along ``axis="width"`` the finder builds the model at every width first (:func:`probe_width`) and refuses a
``make_model`` that ignores ``width`` or builds a model that is not μP (:func:`check_mup`, reading the multipliers
with :func:`width_mults`); after training, :func:`record_lambda_base` reads each trial's ``λ_base``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import lightning.pytorch as pl

from lightning_tau.tuner.trial import configured_optimizers

__all__ = ["check_mup", "probe_width", "record_lambda_base", "width_mults"]


def probe_width(make_model: Callable[[int], Any], width: int) -> pl.LightningModule:
    """``make_model(width)``, checked to be a LightningModule."""
    try:
        probe = make_model(width)
    except Exception as err:
        raise ValueError(
            f"`TimescaleFinder(axis='width')`: make_model({width}) raised {type(err).__name__}: {err}. `fit` needs"
            " a callable that takes the width and returns a μP LightningModule (e.g. the model class, if its"
            " `__init__` takes `width` and calls `mup.set_base_shapes`)."
        ) from None
    if not isinstance(probe, pl.LightningModule):
        raise TypeError(
            f"`TimescaleFinder(axis='width')`: make_model({width}) must return a LightningModule, got"
            f" {type(probe).__name__!r}."
        )
    return probe


def width_mults(model: pl.LightningModule) -> list[float] | None:
    """The μP width multipliers ``s`` of ``model``'s decaying weights: mup's ``p.infshape`` (matrix-like ones), or
    the ``width_mult`` keys of the param groups ``configure_optimizers`` builds; ``None`` when neither can be read
    (no ``infshape`` and ``configure_optimizers`` needs a trainer)."""
    from lightning_tau.width import has_infshape, param_width_mult

    params = [p for p in model.parameters() if p.ndim >= 2]
    if any(has_infshape(p) for p in params):
        return [param_width_mult(p) for p in params if has_infshape(p)]
    optimizers = configured_optimizers(model)
    if optimizers is None:
        return None
    return [
        float(g["width_mult"])
        for o in optimizers
        for g in o.param_groups
        if g.get("weight_decay", 0) > 0 and g.get("width_mult") is not None
    ]


def record_lambda_base(record: Mapping[str, Any]) -> tuple[float, float]:
    """``(λ_base, s)`` of a width-axis trial: the weight decay the callback wrote into the decaying group with the
    largest width multiplier ``s``, divided by ``s`` (with ``width_exponent=1`` every group's is ``s λ_base``)."""
    decaying = [g for g in record["groups"].values() if g["decays"]]
    group = max(decaying, key=lambda g: float(g.get("width_mult") or 1.0))
    s = float(group.get("width_mult") or 1.0)
    return float(group["weight_decay"]) / s, s


def check_mup(probes: Mapping[int, pl.LightningModule]) -> None:
    """Bad width-axis models, before any training: one that ignores ``width``, or one that is not μP."""
    widths = list(probes)
    first, last = probes[widths[0]], probes[widths[-1]]
    shapes = [tuple(p.shape) for p in first.parameters()]
    if shapes == [tuple(p.shape) for p in last.parameters()]:
        raise ValueError(
            f"`TimescaleFinder(widths={widths!r})`: make_model({widths[0]}) and make_model({widths[-1]}) build"
            " parameters of the same shapes: `make_model` ignores its `width` argument. Pass it on to the"
            " model (e.g. `lambda width: MyModel(width=width)`)."
        )
    readouts = [type(m).__name__ for m in last.modules() if type(m).__name__ in ("MuReadout", "MuSharedReadout")]
    if readouts and not any(getattr(p, "infshape", None) is not None for p in last.parameters()):
        raise ValueError(
            f"`TimescaleFinder(axis='width')`: make_model({widths[-1]}) has a mup {readouts[0]} but its parameters"
            " carry no `infshape`. Did you forget to call `mup.set_base_shapes(model, base_model)` in make_model?"
        )
    mults = width_mults(last)
    if mults is not None and all(math.isclose(m, 1.0) for m in mults):
        raise ValueError(
            f"`TimescaleFinder(axis='width')`: make_model({widths[-1]}) is not μP: every decaying weight has"
            " width multiplier s = 1 (no mup `infshape` with s != 1, no param group with a `width_mult` other"
            " than 1). Call `mup.set_base_shapes(model, base_model)` in make_model and use `mup.MuAdamW`, or"
            " `build_param_groups(..., width_mult=...)`."
        )
