"""``TimescaleCallback``'s decision in one call: the optimizers it manages and each group's weight decay, decided
and written (torch only, no Lightning). What the next decision needs comes back in the :class:`Decision`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import torch

from lightning_tau.apply import gather_groups, write_weight_decays
from lightning_tau.decide import (
    GroupInput,
    GroupTimescale,
    RunShape,
    decide_groups,
    held_tau_epoch,
    optimizer_tau_iters,
    run_tau_iter,
)
from lightning_tau.optim import decay_kind, reference_lr, unsupported_message
from lightning_tau.optimizer_steps import optimizer_steps_per_epoch
from lightning_tau.target import Target

__all__ = ["Decision", "decide_and_write", "decoupled_groups", "keep_plans"]

def decoupled_groups(
    optimizers: Sequence[torch.optim.Optimizer], *, skip_unsupported: bool, warn: Callable[[str], object]
) -> tuple[set[int], dict[tuple[int, int], float]]:
    """The optimizers ``TimescaleCallback`` manages, and each of their groups' ``weight_decay`` as configured.

    Args:
        optimizers: the run's optimizers, in order.
        skip_unsupported: leave an optimizer with coupled (or unknown) decay alone, saying so through ``warn``,
            instead of refusing it.
        warn: how to warn (``rank_zero_warn``).

    Returns:
        The indices of the optimizers with decoupled decay, and ``(optimizer, group) -> weight_decay`` of theirs.

    Raises:
        ValueError: an optimizer with coupled or unknown decay (unless skipped), or no group with
            ``weight_decay > 0`` in any optimizer managed.
    """
    decoupled: set[int] = set()
    before: dict[tuple[int, int], float] = {}
    supported = 0
    for i, optimizer in enumerate(optimizers):
        kind = decay_kind(optimizer)
        if kind in ("coupled", "unknown"):
            if not skip_unsupported:
                raise ValueError(unsupported_message(optimizer, i))
            why = "coupled (L2)" if kind == "coupled" else "not known to be decoupled (see `register_decay_kind`)"
            warn(
                f"`TimescaleCallback(skip_unsupported_optimizers=True)` leaves optimizer {i}"
                f" ({type(optimizer).__name__}) alone: its weight decay is {why}."
            )
            continue
        if kind != "decoupled":
            continue
        decoupled.add(i)
        for j, group in enumerate(optimizer.param_groups):
            wd = float(group.get("weight_decay", 0.0))
            before[(i, j)] = wd
            supported += wd > 0
    if supported == 0:
        raise ValueError(
            "`TimescaleCallback` found no AdamW param group with `weight_decay > 0` to manage (optimizers:"
            f" {[type(o).__name__ for o in optimizers]}). Use `torch.optim.AdamW` and give the"
            " groups that should decay a positive `weight_decay` (any value: the callback replaces it)."
        )
    return decoupled, before


@dataclass
class Decision:
    """One decision of ``TimescaleCallback``'s, as :func:`decide_and_write` took and wrote it.

    Attributes:
        shape: the run's shape it was decided with.
        tau_iter: the run's target in optimizer steps.
        note: how the power law picked ``tau_iter`` (``None`` for a given target).
        inputs: every param group as the decision saw it.
        groups: the decision per param group.
        optimizer_steps_per_epoch: optimizer index -> its own ``M`` where it is not the run's.
        tau_iters: the ``tau_iter`` each optimizer holds: one for all, or one per optimizer index.
        tau_epoch: the ``tau_epoch`` held at this shape's ``N`` and ``B`` (the given one times
            ``(N / reference_dataset_size) ** size_exponent`` and ``(B / reference_batch_size) ** batch_exponent``);
            ``None`` for a target in steps.
        weight_decay_before: the user's own ``weight_decay`` per ``(optimizer, group)``, a group first seen in this
            decision included (with its value then): what the next decision is given.
        pinned_lrs: the reference lrs held fixed per ``(optimizer, group)``, the groups first seen in this decision
            included: what the next decision is given.
        epoch: the epoch of a decision mid-fit (``None`` at train start), for the messages of what follows it.
    """

    shape: RunShape
    tau_iter: float
    note: str | None
    inputs: list[GroupInput]
    groups: list[GroupTimescale]
    optimizer_steps_per_epoch: dict[int, float]
    tau_iters: float | dict[int, float]
    tau_epoch: float | None = None
    weight_decay_before: dict[tuple[int, int], float] = field(default_factory=dict)
    pinned_lrs: dict[tuple[int, int], float] = field(default_factory=dict)
    epoch: int | None = None


def decide_and_write(
    optimizers: Sequence[torch.optim.Optimizer],
    shape: RunShape,
    target: Target,
    *,
    power_law: Callable[[], tuple[float, str]] | None = None,
    managed_optimizers: set[int],
    weight_decay_before: Mapping[tuple[int, int], float],
    pinned_lrs: Mapping[tuple[int, int], float],
    scheduled: set[int],
    measured: Mapping[int, tuple[int, int]],
    declared_steps_per_epoch: Mapping[int, float] | None,
    epoch: int | None = None,
) -> Decision:
    """``TimescaleCallback``'s decision, in one call: the target, each group's weight decay, written.

    It changes none of its arguments: what the next decision needs (the groups first seen here) comes back in the
    :class:`Decision`.

    Args:
        optimizers: the run's optimizers, in order.
        shape: the run's shape, just read.
        target: the target timescale (``tau_epoch`` or ``tau_iter``, the width exponent, the size and batch rules).
        power_law: when given, picks ``tau_iter`` instead (``token_budget.power_law_tau_iter`` with its arguments).
        managed_optimizers: indices of the optimizers with decoupled decay.
        weight_decay_before: the user's own ``weight_decay`` per ``(optimizer, group)``; a group missing here (added
            since) is read with its value now.
        pinned_lrs: reference lrs held fixed per ``(optimizer, group)``: a group with no ``initial_lr`` / ``max_lr``
            under a scheduler that moves its ``lr`` (``ReduceLROnPlateau``) keeps the lr it had when first seen, so
            the schedule is not undone.
        scheduled: ``id`` of every optimizer an lr scheduler drives.
        measured: optimizer index -> ``(steps, batches)`` of its last full epoch (manual optimization).
        declared_steps_per_epoch: optimizer index -> ``M`` the user declared.
        epoch: the epoch of a decision mid-fit, for the messages; ``None`` at train start.

    Raises:
        ValueError: a target that cannot be held (see ``decide.run_tau_iter``, ``decide.decide_groups``), with
            ``TimescaleCallback`` named.
    """
    held = held_tau_epoch(
        shape,
        target.tau_epoch,
        size_exponent=target.size_exponent,
        reference_dataset_size=target.reference_dataset_size,
        epoch=epoch,
        batch_exponent=target.batch_exponent,
        reference_batch_size=target.reference_batch_size,
    )
    try:
        if power_law is not None:
            steps, note = power_law()
        else:
            steps, note = run_tau_iter(shape, tau_epoch=held, tau_iter=target.tau_iter, epoch=epoch), None
    except ValueError as err:
        scaled = target.scaling_text(shape.dataset_size, shape.global_batch_size)
        if scaled is None:
            raise
        raise ValueError(f"{err} (The tau_epoch held at this {target.scaled_by()}: {scaled}.)") from None
    pinned = dict(pinned_lrs)
    for i, optimizer in enumerate(optimizers):
        if id(optimizer) in scheduled:
            for j, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group and "max_lr" not in group:
                    pinned.setdefault((i, j), reference_lr(group))
    inputs = gather_groups(
        optimizers,
        weight_decay_before=weight_decay_before,
        managed_optimizers=managed_optimizers,
        reference_lrs=pinned,
    )
    before = {(g.optimizer_index, g.group_index): g.weight_decay_before for g in inputs}  # the groups added since too
    optimizer_m = optimizer_steps_per_epoch(
        len(optimizers), shape.steps_per_epoch, measured=measured, declared=declared_steps_per_epoch
    )
    tau_iters = optimizer_tau_iters(len(optimizers), steps, tau_epoch=held, optimizer_m=optimizer_m, epoch=epoch)
    try:
        groups = decide_groups(inputs, tau_iters, width_exponent=target.width_exponent)
    except ValueError as err:
        raise ValueError(f"`TimescaleCallback`: {err}") from None
    write_weight_decays(optimizers, groups)
    return Decision(shape, steps, note, inputs, groups, optimizer_m, tau_iters, held, before, pinned, epoch)


def keep_plans(old: Decision | None, new: Decision) -> None:
    """Give each group of ``new`` whose weight decay ``old`` already had the look-ahead ``old`` planned
    (``planned_timescales``), so it is re-planned only when something changed.

    Example:
        >>> from lightning_tau.decide import GroupTimescale, RunShape
        >>> def decision(wd: float, planned: float | None) -> Decision:
        ...     group = GroupTimescale("pg1", 0, 0, 4, 1e-3, 0.1, wd, True, planned_timescales=planned)
        ...     return Decision(RunShape(100), 500.0, None, [], [group], {}, 500.0)
        >>> old, same, moved = decision(2.0, 3.5), decision(2.0, None), decision(1.0, None)
        >>> keep_plans(old, same), keep_plans(old, moved), keep_plans(None, moved)
        (None, None, None)
        >>> same.groups[0].planned_timescales, moved.groups[0].planned_timescales
        (3.5, None)
    """
    previous = {} if old is None else {(g.optimizer_index, g.group_index): g for g in old.groups}
    for g in new.groups:
        before = previous.get((g.optimizer_index, g.group_index))
        if before is not None and before.weight_decay == g.weight_decay:
            g.planned_timescales = before.planned_timescales
