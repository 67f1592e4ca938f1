"""Look ahead at a learning-rate schedule without touching the real optimizer (torch only).

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor

__all__ = [
    "PlannedGroup",
    "ScheduledStep",
    "optimizer_remaining",
    "planned_lr_sums",
    "planned_lrs",
    "planned_timescales",
]

#: Beyond this many simulated optimizer steps the look-ahead gives up (it is a Python loop).
MAX_SIMULATED_STEPS = 200_000


@dataclass(frozen=True)
class ScheduledStep:
    """A scheduler and when the training loop steps it (Lightning's ``interval`` and ``frequency``)."""

    scheduler: object
    interval: str = "step"
    frequency: int = 1


def planned_lr_sums(
    optimizer: torch.optim.Optimizer,
    schedulers: Sequence[ScheduledStep],
    total_steps: int,
    steps_per_epoch: float,
) -> list[float] | None:
    """Sum of each param group's learning rate over the next ``total_steps`` optimizer steps.

    Args:
        optimizer: the optimizer whose groups are summed; it is not modified.
        schedulers: the schedulers that drive ``optimizer``, with their stepping interval.
        total_steps: optimizer steps left in the run.
        steps_per_epoch: optimizer steps per epoch, for ``interval="epoch"`` schedulers.

    Returns:
        One sum per param group, or ``None`` when the schedule cannot be simulated (``ReduceLROnPlateau``
        depends on metrics not yet seen; a run longer than ``MAX_SIMULATED_STEPS``).

    Example:
        >>> opt = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters(), lr=1.0)
        >>> sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        >>> planned_lr_sums(opt, [ScheduledStep(sched)], total_steps=4, steps_per_epoch=4)
        [3.0]
        >>> opt.param_groups[0]["lr"]  # the real optimizer is untouched
        1.0
    """
    lrs = planned_lrs(optimizer, schedulers, total_steps, steps_per_epoch)
    return None if lrs is None else [sum(group) for group in lrs]


def planned_lrs(
    optimizer: torch.optim.Optimizer,
    schedulers: Sequence[ScheduledStep],
    total_steps: int,
    steps_per_epoch: float,
) -> list[list[float]] | None:
    """Each param group's learning rate at each of the next ``total_steps`` optimizer steps, as the schedulers will
    set them (the look-ahead of :func:`planned_lr_sums`, kept step by step for ``couplings.plan``).

    Args:
        optimizer: the optimizer whose groups are read; it is not modified.
        schedulers: the schedulers that drive ``optimizer``, with their stepping interval (none: the lr stays).
        total_steps: optimizer steps left in the run.
        steps_per_epoch: optimizer steps per epoch, for ``interval="epoch"`` schedulers.

    Returns:
        One list of ``total_steps`` lrs per param group, or ``None`` when the schedule cannot be simulated
        (``ReduceLROnPlateau``; a run longer than ``MAX_SIMULATED_STEPS``; an unknown epoch length).

    Example:
        >>> opt = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters(), lr=1.0)
        >>> sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        >>> planned_lrs(opt, [ScheduledStep(sched)], total_steps=5, steps_per_epoch=5)
        [[1.0, 1.0, 0.5, 0.5, 0.25]]
    """
    if total_steps > MAX_SIMULATED_STEPS or not math.isfinite(steps_per_epoch) or steps_per_epoch <= 0:
        return None
    if any(isinstance(s.scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau) for s in schedulers):
        return None
    shadow_optimizer, shadow_schedulers = _shadow_copy(optimizer, [s.scheduler for s in schedulers])
    lrs: list[list[float]] = [[] for _ in shadow_optimizer.param_groups]
    epoch_length = max(1, round(steps_per_epoch))
    with warnings.catch_warnings():
        # "lr_scheduler.step() before optimizer.step()": the shadow optimizer never steps, by design.
        warnings.simplefilter("ignore")
        for step in range(total_steps):
            for i, group in enumerate(shadow_optimizer.param_groups):
                lr = group["lr"]
                lrs[i].append(float(lr.item() if isinstance(lr, Tensor) else lr))
            for spec, shadow in zip(schedulers, shadow_schedulers):
                if spec.interval == "step":
                    due = (step + 1) % spec.frequency == 0
                else:
                    due = (step + 1) % epoch_length == 0 and ((step + 1) // epoch_length) % spec.frequency == 0
                if due:
                    shadow.step()  # type: ignore[attr-defined]
    return lrs


class PlannedGroup(Protocol):
    """What the look-ahead reads of one param group's decision (``decide.GroupTimescale`` has it)."""

    optimizer_index: int
    group_index: int
    managed: bool
    reference_lr: float
    weight_decay: float
    tau_iter: float | None


def optimizer_remaining(remaining: int, steps_per_epoch: float | None, optimizer_m: float | None) -> int:
    """The run's ``remaining`` steps in one optimizer's own steps (it may take fewer or more per epoch).

    Args:
        remaining: optimizer steps left in the run, counted in the run's ``M`` per epoch.
        steps_per_epoch: the run's ``M`` (``None`` or ``0``: unknown, ``remaining`` is kept).
        optimizer_m: the optimizer's own ``M``, or ``None`` when it is the run's.

    Example:
        >>> optimizer_remaining(1000, 100, 50), optimizer_remaining(1000, 100, None), optimizer_remaining(7, None, 3)
        (500, 1000, 7)
    """
    if optimizer_m is None or not steps_per_epoch:
        return remaining
    return round(remaining * optimizer_m / steps_per_epoch)


def planned_timescales(
    groups: Sequence[PlannedGroup],
    optimizers: Sequence[torch.optim.Optimizer],
    schedulers: Sequence[Sequence[ScheduledStep]],
    remaining: int,
    *,
    steps_per_epoch: float | None,
    optimizer_m: Mapping[int, float],
    per_step: bool,
) -> dict[tuple[int, int], float | None]:
    """Each managed group's ``sum_t lr_t * weight_decay`` over the ``remaining`` steps: the EMA timescales left.

    In ``per_step`` mode ``lr_t * weight_decay_t = 1 / tau_iter`` at every step, so it is the group's remaining
    steps over its ``tau_iter``. Otherwise the lrs are summed over the schedule (:func:`planned_lr_sums`), or are
    the reference lr at every step for an optimizer with no scheduler.

    Args:
        groups: the decision per param group; groups left alone get no entry.
        optimizers: the run's optimizers, by index (not modified).
        schedulers: the schedulers driving each optimizer, by optimizer index.
        remaining: optimizer steps left in the run, in the run's ``M`` per epoch.
        steps_per_epoch: the run's ``M`` (``None``: unknown).
        optimizer_m: optimizer index -> its own ``M`` where it is not the run's.
        per_step: whether the weight decay is rewritten before every step (``mode="per_step"``).

    Returns:
        ``(optimizer index, group index) -> timescales``, ``None`` where the schedule cannot be simulated.

    Example:
        >>> from lightning_tau.decide import GroupTimescale
        >>> opt = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters(), lr=0.01)
        >>> g = GroupTimescale("pg1", 0, 0, 6, 0.01, 0.1, 2.0, True, tau_iter=50.0)
        >>> planned_timescales([g], [opt], [[]], 100, steps_per_epoch=10, optimizer_m={}, per_step=False)
        {(0, 0): 2.0}
        >>> planned_timescales([g], [opt], [[]], 100, steps_per_epoch=10, optimizer_m={0: 5}, per_step=True)
        {(0, 0): 1.0}
    """
    out: dict[tuple[int, int], float | None] = {}
    if per_step:
        for g in groups:
            if g.managed:
                assert g.tau_iter is not None
                steps = optimizer_remaining(remaining, steps_per_epoch, optimizer_m.get(g.optimizer_index))
                out[(g.optimizer_index, g.group_index)] = steps / g.tau_iter
        return out
    for i, optimizer in enumerate(optimizers):
        specs = schedulers[i]
        steps_i = optimizer_remaining(remaining, steps_per_epoch, optimizer_m.get(i))
        m_i = optimizer_m.get(i, steps_per_epoch) or float("nan")
        sums = planned_lr_sums(optimizer, specs, steps_i, m_i) if specs else None
        for g in groups:
            if g.optimizer_index != i or not g.managed:
                continue
            lr_sum = sums[g.group_index] if sums is not None else (None if specs else steps_i * g.reference_lr)
            out[(g.optimizer_index, g.group_index)] = None if lr_sum is None else lr_sum * g.weight_decay
    return out


def _shadow_copy(
    optimizer: torch.optim.Optimizer, schedulers: Sequence[object]
) -> tuple[torch.optim.Optimizer, list[object]]:
    """Deep-copy the optimizer and schedulers with every parameter and state tensor replaced by an empty one."""
    placeholders: dict[int, Tensor] = {}
    for group in optimizer.param_groups:
        for p in group["params"]:
            placeholders[id(p)] = torch.empty(0)
    for state in optimizer.state.values():
        for value in state.values():
            if isinstance(value, Tensor):
                placeholders[id(value)] = torch.empty(0)
    memo: dict[int, object] = dict(placeholders)
    shadow_optimizer, shadow_schedulers = copy.deepcopy((optimizer, list(schedulers)), memo)
    return shadow_optimizer, shadow_schedulers
