"""``TimescaleCallback``'s decision in one call: which optimizers it manages, each group's weight decay decided and
written, Adam's ``β₂`` held (torch only, no Lightning).

The callback reads the run's shape from the Trainer and hands plain values here; :func:`decide_and_write` decides
through :mod:`lightning_tau.decide` and writes through :mod:`lightning_tau.apply`, changing none of its arguments:
what the next decision needs comes back in the :class:`Decision`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import torch

from lightning_tau.apply import adam_beta2s, gather_groups, write_beta2, write_weight_decays
from lightning_tau.couplings import beta_for_epochs
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

__all__ = ["MAX_BETA2_STEPS", "Decision", "checked_beta2", "decide_and_write", "decoupled_groups", "hold_beta2"]

#: The longest ``β₂`` window, in optimizer steps, that a float64 ``β₂`` below 1 expresses: ``1 - 2**-53`` is the largest
#: double under 1. A window of ``2**54`` steps or more rounds ``β₂ = 1 - 1 / steps`` to exactly 1, which torch's Adam
#: refuses at construction and which, written later, turns the weights non-finite (``1 - β₂**t = 0``).
MAX_BETA2_STEPS = 2.0**53


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
        tau_epoch: the ``tau_epoch`` held at this shape's ``N`` (the given one times
            ``(N / reference_dataset_size) ** size_exponent``); ``None`` for a target in steps.
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
        target: the target timescale (``tau_epoch`` or ``tau_iter``, the width exponent and the size rule).
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
    )
    try:
        if power_law is not None:
            steps, note = power_law()
        else:
            steps, note = run_tau_iter(shape, tau_epoch=held, tau_iter=target.tau_iter, epoch=epoch), None
    except ValueError as err:
        scaled = target.scaling_text(shape.dataset_size)
        if scaled is None:
            raise
        raise ValueError(f"{err} (The tau_epoch held at this N: {scaled}.)") from None
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


def hold_beta2(
    optimizers: Sequence[torch.optim.Optimizer], decision: Decision, managed_optimizers: set[int], beta2_epochs: float
) -> dict[tuple[int, int], float]:
    """Write ``β₂ = 1 - 1 / (beta2_epochs · M)`` into every Adam-like group of the managed optimizers, ``M`` its
    optimizer's at ``decision``; return the values written per ``(optimizer, group)``. Every value is checked
    (:func:`checked_beta2`) before any is written.

    Example:
        >>> opt = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters())
        >>> decision = Decision(RunShape(100), 500.0, None, [], [], {}, 500.0)
        >>> hold_beta2([opt], decision, {0}, beta2_epochs=10.0), opt.param_groups[0]["betas"]
        ({(0, 0): 0.999}, (0.9, 0.999))

    Raises:
        ValueError: an epoch length that could not be read, or a ``β₂`` window that cannot be held.
    """
    beta2 = {}
    when = "" if decision.epoch is None else f" at epoch {decision.epoch} ({' '.join(decision.shape.sources)})"
    for i, j in adam_beta2s(optimizers, managed_optimizers):
        m = decision.optimizer_steps_per_epoch.get(i, decision.shape.steps_per_epoch)
        if not m:
            raise ValueError(
                f"`TimescaleCallback(beta2_epochs={beta2_epochs!r})` needs the epoch length in optimizer"
                " steps, which could not be read: give `dataset_size` (or `batch_size`), or leave `beta2_epochs`"
                " out."
            )
        own = f", optimizer {i}" if i in decision.optimizer_steps_per_epoch else ""
        beta2[(i, j)] = checked_beta2(beta2_epochs, m, where=when + own)
    write_beta2(optimizers, beta2)
    return beta2


def checked_beta2(beta2_epochs: float, steps_per_epoch: float, *, where: str = "") -> float:
    """``β₂ = 1 - 1 / (beta2_epochs · M)``, refused unless it lies in ``(0, 1)`` in float64: a window of one step or
    less gives ``β₂ <= 0``; one past :data:`MAX_BETA2_STEPS` steps may round ``β₂`` to exactly 1.

    Args:
        beta2_epochs: the window in epochs.
        steps_per_epoch: ``M``, the optimizer's steps per epoch.
        where: said after the argument in the message (the epoch of a decision mid-fit, the optimizer).

    Raises:
        ValueError: one line naming ``beta2_epochs``, its value, the window in steps at this ``M`` and the largest
            (smallest) ``beta2_epochs`` that works at this ``M``.

    Example:
        >>> checked_beta2(1.0, 12)
        0.9166666666666666
        >>> checked_beta2(1e20, 12)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: `TimescaleCallback(beta2_epochs=1e+20)` is 1.2e+21 optimizer steps at M=12 steps per epoch, so ...
    """
    steps = beta2_epochs * steps_per_epoch
    beta2 = beta_for_epochs(beta2_epochs, steps_per_epoch) if steps > 1 else 1.0 - 1.0 / steps
    if 0.0 < beta2 < 1.0:
        return beta2
    head = (
        f"`TimescaleCallback(beta2_epochs={beta2_epochs!r})`{where} is {steps:.4g} optimizer steps at"
        f" M={steps_per_epoch:.4g} steps per epoch, so β₂ = 1 - 1/(beta2_epochs·M)"
    )
    if beta2 >= 1.0:
        raise ValueError(
            f"{head} rounds to 1 in float64: torch's Adam refuses β₂ = 1 and its steps would turn the weights"
            f" non-finite. Use `beta2_epochs` of at most {MAX_BETA2_STEPS / steps_per_epoch:.4g} at this M (2^53"
            " steps, the longest window a float64 β₂ below 1 expresses)."
        )
    raise ValueError(
        f"{head} = {beta2:.4g} (<= 0: no average at all). Use `beta2_epochs` above {1 / steps_per_epoch:.4g} at this M"
        " (one optimizer step)."
    )
