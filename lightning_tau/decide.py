"""Decide each param group's weight decay from the run's shape and a target timescale (pure; no torch, no Lightning).

The callback, :func:`lightning_tau.apply_timescale` and the monitor share this one path:

1. *read* the run's shape (:class:`RunShape`: optimizer steps per epoch ``M``, ``N``, ``B``, world size,
   accumulation, with where each came from): :func:`lightning_tau._trainer.read_run_shape` for a Lightning
   ``Trainer``, or the user's ``dataset_size`` / ``batch_size`` in a plain loop;
2. *decide* (:func:`resolve_tau_iter`, then :func:`decide_groups`): ``tau_iter = tau_epoch * M`` and
   ``weight_decay = 1 / (lr_ref * tau_iter)`` for every managed group;
3. *apply* the values to the optimizer and *report* them.

A change mid-fit (accumulation, reloaded data, a new param group) takes the same path again.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from lightning_tau import timescale

__all__ = ["GroupInput", "GroupTimescale", "RunShape", "decide_groups", "resolve_tau_iter", "shape_changes"]


@dataclass(frozen=True)
class RunShape:
    """How many optimizer steps an epoch of this run takes, and the facts it came from.

    Attributes:
        steps_per_epoch: ``M``, the optimizer steps one epoch really runs on each rank (``None`` when unknown,
            e.g. an endless ``IterableDataset`` with no ``dataset_size`` given).
        dataset_size: ``N``, samples (or tokens) per epoch summed over the train dataloaders, if known.
        global_batch_size: ``B``, per-device batch x world size x accumulation, if known.
        world_size: processes that train together.
        accumulation: gradient accumulation in force.
        sources: where ``M``, ``N`` and ``B`` came from, one sentence each, for the summary.
        problems: why what is ``None`` could not be read, one sentence each, for the error that needs it.

    Example:
        >>> shape = RunShape(steps_per_epoch=3, dataset_size=100, global_batch_size=40, accumulation=4)
        >>> shape.steps_per_epoch
        3
    """

    steps_per_epoch: float | None
    dataset_size: float | None = None
    global_batch_size: float | None = None
    world_size: int = 1
    accumulation: int = 1
    sources: tuple[str, ...] = field(default=(), compare=False)
    problems: tuple[str, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class GroupInput:
    """One param group as the decision sees it.

    Attributes:
        name: the group's ``name`` key, else ``pg1``, ``pg2``, ... (``optimizer{i}/`` prefixed with several).
        optimizer_index: index of the optimizer in the run's list of optimizers.
        group_index: index of the group in ``optimizer.param_groups``.
        num_params: scalar parameters in the group.
        reference_lr: learning rate the timescale is defined at (the schedule's base or peak lr).
        weight_decay_before: the group's ``weight_decay`` as the user configured it.
        managed: whether to set this group's decay (decoupled optimizer and ``weight_decay_before > 0``).
        width_mult: muP width multiplier, if the parameters or the group carry one.
    """

    name: str
    optimizer_index: int
    group_index: int
    num_params: int
    reference_lr: float
    weight_decay_before: float
    managed: bool
    width_mult: float | None = None


@dataclass
class GroupTimescale:
    """What was decided for one param group.

    Attributes:
        name: the group's ``name`` key, else ``pg1``, ``pg2``, ... (``optimizer{i}/`` prefixed with several).
        optimizer_index: index of the optimizer in ``trainer.optimizers``.
        group_index: index of the group in ``optimizer.param_groups``.
        num_params: number of scalar parameters in the group.
        reference_lr: learning rate the timescale is defined at (the scheduler's base or peak lr).
        weight_decay_before: the group's ``weight_decay`` as ``configure_optimizers`` set it.
        weight_decay: the value to write (equal to ``weight_decay_before`` for groups left alone).
        decays: whether this group is managed (decoupled optimizer, ``weight_decay_before > 0``).
        width_mult: muP width multiplier, if the parameters or the group carry one.
        planned_timescales: ``sum_t lr_t * weight_decay`` from this decision to the end of the planned run, if it
            could be estimated.
    """

    name: str
    optimizer_index: int
    group_index: int
    num_params: int
    reference_lr: float
    weight_decay_before: float
    weight_decay: float
    decays: bool
    width_mult: float | None = None
    planned_timescales: float | None = None


def resolve_tau_iter(
    *, tau_epoch: float | None = None, tau_iter: float | None = None, steps_per_epoch: float | None = None
) -> float:
    """The target timescale in optimizer steps: ``tau_iter`` as given, or ``tau_epoch * M``.

    Raises:
        ValueError: both or neither target given; ``tau_epoch`` without a known ``M``; or a ``tau_iter`` of one
            step or less, where ``lr * weight_decay >= 1`` makes every step flip or zero the weights. The message
            names the smallest valid value for this run.

    Example:
        >>> resolve_tau_iter(tau_epoch=5.0, steps_per_epoch=3)
        15.0
        >>> resolve_tau_iter(tau_epoch=0.2, steps_per_epoch=3)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: `tau_epoch=0.2` is 0.6 optimizer steps at M=3 steps per epoch, ... Use `tau_epoch` above 0.3333 ...
    """
    if (tau_epoch is None) == (tau_iter is None):
        raise ValueError(f"Give exactly one of `tau_epoch` and `tau_iter`, got {tau_epoch=!r} and {tau_iter=!r}.")
    if tau_iter is not None:
        steps = timescale.check_positive("tau_iter", tau_iter)
        if steps <= 1:
            raise ValueError(_too_short(f"`tau_iter={tau_iter!r}` optimizer steps", steps) + " Use `tau_iter > 1`.")
        return steps
    assert tau_epoch is not None
    timescale.check_positive("tau_epoch", tau_epoch)
    if steps_per_epoch is None:
        raise ValueError(
            f"`tau_epoch={tau_epoch!r}` needs the optimizer steps per epoch, which this run does not tell (an"
            " endless train dataloader?). Pass `dataset_size` and `batch_size` (M = dataset_size / batch_size),"
            " or give the target as `tau_iter` in optimizer steps."
        )
    m = timescale.check_positive("steps_per_epoch", steps_per_epoch)
    steps = tau_epoch * m
    if steps <= 1:
        raise ValueError(
            _too_short(f"`tau_epoch={tau_epoch!r}` is {steps:.4g} optimizer steps at M={m:.4g} steps per epoch,", steps)
            + f" Use `tau_epoch` above {1 / m:.4g} (one optimizer step); good values are usually several epochs."
        )
    return steps


def decide_groups(groups: Sequence[GroupInput], tau_iter: float) -> list[GroupTimescale]:
    """Each managed group's weight decay for ``tau_iter``: ``1 / (reference_lr * tau_iter)``; others unchanged.

    Each group uses its own reference lr, so muP groups at ``lr / s`` get ``weight_decay * s``.

    Raises:
        ValueError: a managed group whose reference lr is not positive and finite.

    Example:
        >>> groups = [GroupInput("hidden", 0, 0, 64, 1e-3, 0.1, True, width_mult=4.0),
        ...           GroupInput("bias", 0, 1, 8, 4e-3, 0.0, False)]
        >>> [(g.name, round(g.weight_decay, 6)) for g in decide_groups(groups, tau_iter=500.0)]
        [('hidden', 2.0), ('bias', 0.0)]
    """
    decided = []
    for g in groups:
        weight_decay = g.weight_decay_before
        if g.managed:
            if not (g.reference_lr > 0 and math.isfinite(g.reference_lr)):
                raise ValueError(
                    f"Cannot set a timescale for param group {g.name!r}: its reference learning rate is"
                    f" {g.reference_lr!r}. Give it a positive lr, or `weight_decay=0` to leave it out."
                )
            weight_decay = timescale.weight_decay_for_tau_iter(g.reference_lr, tau_iter)
        decided.append(
            GroupTimescale(
                name=g.name,
                optimizer_index=g.optimizer_index,
                group_index=g.group_index,
                num_params=g.num_params,
                reference_lr=g.reference_lr,
                weight_decay_before=g.weight_decay_before,
                weight_decay=weight_decay,
                decays=g.managed,
                width_mult=g.width_mult,
            )
        )
    return decided


def shape_changes(old: RunShape, new: RunShape) -> list[str]:
    """What differs between two shapes, as ``"name old -> new"`` phrases (empty when nothing that matters did).

    Example:
        >>> shape_changes(RunShape(10, 100, 10), RunShape(3, 100, 40, accumulation=4))
        ['steps per epoch 10 -> 3', 'global batch 10 -> 40', 'accumulation 1 -> 4']
    """
    out = []
    for label, a, b in (
        ("steps per epoch", old.steps_per_epoch, new.steps_per_epoch),
        ("dataset size", old.dataset_size, new.dataset_size),
        ("global batch", old.global_batch_size, new.global_batch_size),
        ("world size", old.world_size, new.world_size),
        ("accumulation", old.accumulation, new.accumulation),
    ):
        if a != b and not (a is not None and b is not None and math.isclose(a, b, rel_tol=1e-12)):
            out.append(f"{label} {_num(a)} -> {_num(b)}")
    return out


def _too_short(what: str, steps: float) -> str:
    return (
        f"{what} so `lr * weight_decay = {1 / steps:.4g}` (>= 1): every step would shrink the weights to zero or past"
        " it, and training diverges."
    )


def _num(value: float | None) -> str:
    return "?" if value is None else f"{value:.4g}"
