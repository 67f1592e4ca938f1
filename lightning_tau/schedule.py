"""Look ahead at a learning-rate schedule without touching the real optimizer (torch only).

The pre-flight summary reports how many EMA timescales a run will cover, ``sum_t lr_t * weight_decay``. Under a
scheduler that sum depends on every future ``lr_t``; :func:`planned_lr_sums` gets them by stepping a copy of the
schedulers on a copy of the optimizer whose parameters and state are swapped for empty tensors, so the look-ahead
costs no parameter-sized memory.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

__all__ = ["ScheduledStep", "planned_lr_sums"]

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
    if total_steps > MAX_SIMULATED_STEPS or not math.isfinite(steps_per_epoch) or steps_per_epoch <= 0:
        return None
    if any(isinstance(s.scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau) for s in schedulers):
        return None
    shadow_optimizer, shadow_schedulers = _shadow_copy(optimizer, [s.scheduler for s in schedulers])
    sums = [0.0] * len(shadow_optimizer.param_groups)
    epoch_length = max(1, round(steps_per_epoch))
    with warnings.catch_warnings():
        # "lr_scheduler.step() before optimizer.step()": the shadow optimizer never steps, by design.
        warnings.simplefilter("ignore")
        for step in range(total_steps):
            for i, group in enumerate(shadow_optimizer.param_groups):
                lr = group["lr"]
                sums[i] += float(lr.item() if isinstance(lr, Tensor) else lr)
            for spec, shadow in zip(schedulers, shadow_schedulers):
                if spec.interval == "step":
                    due = (step + 1) % spec.frequency == 0
                else:
                    due = (step + 1) % epoch_length == 0 and ((step + 1) // epoch_length) % spec.frequency == 0
                if due:
                    shadow.step()  # type: ignore[attr-defined]
    return sums


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
