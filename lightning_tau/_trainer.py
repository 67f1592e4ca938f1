"""The one reader of a run's shape from a Lightning ``Trainer``: steps per epoch ``M``, ``N``, ``B``.

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping, Sequence
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.utilities.combined_loader import CombinedLoader
from torch.utils.data import DataLoader

from lightning_tau.couplings import COUPLINGS, Coupling, Plan, plan
from lightning_tau.decide import GroupTimescale, RunShape
from lightning_tau.optim import group_lr
from lightning_tau.schedule import MAX_SIMULATED_STEPS, ScheduledStep, optimizer_remaining, planned_lrs

__all__ = [
    "RunShapeReader",
    "model_ema_windows",
    "plan_couplings",
    "plan_timescales",
    "read_dataset_size",
    "read_global_batch_size",
    "read_run_shape",
    "read_steps_per_epoch",
    "remaining_steps",
    "scheduled_steps",
    "train_dataloaders",
]


class RunShapeReader:
    """The owner of one fit's shape (``M``, ``N``, ``B``): what was read, and in which epoch.

    A ``TimescaleCallback`` calls :meth:`read` at each of its decisions (train start, every epoch's first step, a
    change) and shares the reader with the run's monitors, which ask :meth:`current`: they see the shape the
    weight decay was decided with. A reader nobody decides with (a monitor alone) reads once per epoch in
    :meth:`current`, and keeps no shape whose ``M`` is unknown.

    Args:
        dataset_size: ``N`` given by the user (then ``M = N / B``), or ``None`` to read it.
        batch_size: global ``B`` given by the user, or ``None`` to read it.
    """

    def __init__(self, *, dataset_size: float | None = None, batch_size: float | None = None) -> None:
        self.dataset_size = dataset_size
        self.batch_size = batch_size
        #: The shape last read (``None`` before the first read, or when a monitor alone could not read ``M``).
        self.shape: RunShape | None = None
        #: The epoch it was read in (``None``: not read yet in this fit).
        self.epoch: int | None = None
        #: Whether a decision was taken with it (:meth:`read`): then it holds until the next decision.
        self.decided = False

    def reset(self) -> None:
        """Forget the shape (a new fit): the next :meth:`read` or :meth:`current` reads again."""
        self.shape, self.epoch, self.decided = None, None, False

    def read(self, trainer: pl.Trainer) -> RunShape:
        """Read the shape now, for a decision; it is what :meth:`current` gives until the next read."""
        shape = read_run_shape(trainer, dataset_size=self.dataset_size, batch_size=self.batch_size)
        self.shape, self.epoch, self.decided = shape, trainer.current_epoch, True
        return shape

    def current(self, trainer: pl.Trainer) -> RunShape | None:
        """The shape of the last decision; without one, read once per epoch (``None`` when ``M`` is unknown)."""
        if not self.decided and self.epoch != trainer.current_epoch:
            shape = read_run_shape(trainer, dataset_size=self.dataset_size, batch_size=self.batch_size)
            self.shape = shape if shape.steps_per_epoch is not None else None
            self.epoch = trainer.current_epoch
        return self.shape


def remaining_steps(trainer: pl.Trainer, steps_per_epoch: float | None) -> int | None:
    """Optimizer steps left: the nearer of ``max_steps`` and ``max_epochs`` epochs of ``M`` (``None``: endless).

    Counted from the run's own epoch length ``steps_per_epoch``, so a resume on a different dataset plans the
    right number.
    """
    bounds = []
    if trainer.max_steps is not None and trainer.max_steps >= 0:
        bounds.append(trainer.max_steps - trainer.global_step)
    max_epochs = trainer.max_epochs
    if max_epochs is not None and max_epochs >= 0 and steps_per_epoch is not None:
        bounds.append(math.ceil((max_epochs - trainer.current_epoch) * steps_per_epoch))
    return max(0, min(bounds)) if bounds else None


def plan_timescales(
    trainer: pl.Trainer,
    groups: Sequence[GroupTimescale],
    *,
    steps_per_epoch: float | None,
    optimizer_m: Mapping[int, float],
    coupling: Coupling = "constant",
) -> tuple[int | None, dict[tuple[int, int], Plan]]:
    """Set each managed group's ``planned_timescales``, ``sum_t r_t`` under ``coupling`` over the optimizer steps
    the Trainer has left (its schedulers looked ahead, :func:`plan_couplings`); return those steps (``None``: an
    endless run, nothing planned) and each group's :class:`~lightning_tau.couplings.Plan` where the schedule could be
    looked ahead."""
    remaining = remaining_steps(trainer, steps_per_epoch)
    if remaining is None:
        return None, {}
    schedulers = scheduled_steps(trainer)
    plans = plan_couplings(
        groups,
        trainer.optimizers,
        schedulers,
        remaining,
        steps_per_epoch=steps_per_epoch,
        optimizer_m=optimizer_m,
        couplings=(coupling,),
    )
    out: dict[tuple[int, int], Plan] = {}
    for g in groups:
        if not g.managed or g.tau_iter is None:
            continue
        key = (g.optimizer_index, g.group_index)
        if key in plans:
            out[key] = plans[key][coupling]
            g.planned_timescales = out[key].timescales
        elif coupling != "constant" and (coupling == "per_step" or not schedulers[g.optimizer_index]):
            # the rate is 1 / tau_iter at every step (per_step; any coupling at the reference lr)
            steps = optimizer_remaining(remaining, steps_per_epoch, optimizer_m.get(g.optimizer_index))
            g.planned_timescales = steps / g.tau_iter
        elif not schedulers[g.optimizer_index]:
            steps = optimizer_remaining(remaining, steps_per_epoch, optimizer_m.get(g.optimizer_index))
            g.planned_timescales = steps * g.reference_lr * g.weight_decay
        else:
            g.planned_timescales = None
    return remaining, out


def plan_couplings(
    groups: Sequence[GroupTimescale],
    optimizers: Sequence[torch.optim.Optimizer],
    schedulers: Sequence[Sequence[ScheduledStep]],
    remaining: int,
    *,
    steps_per_epoch: float | None,
    optimizer_m: Mapping[int, float],
    couplings: Sequence[Coupling] = COUPLINGS,  # type: ignore[assignment]
) -> dict[tuple[int, int], dict[Coupling, Plan]]:
    """Each managed group's :func:`~lightning_tau.couplings.plan` under each of ``couplings``, over the ``remaining``
    optimizer steps of its schedule (:func:`~lightning_tau.schedule.planned_lrs`; the lr as it stands for an
    optimizer with no scheduler). Groups whose schedule cannot be looked ahead (``ReduceLROnPlateau``, a run
    longer than ``MAX_SIMULATED_STEPS``, an unknown epoch length, no steps left) get no entry.

    Args:
        groups: the decision per param group (its ``reference_lr`` and ``tau_iter`` are the plan's).
        optimizers: the run's optimizers, by index (not modified).
        schedulers: the schedulers driving each optimizer, by optimizer index.
        remaining: optimizer steps left in the run, in the run's ``M`` per epoch.
        steps_per_epoch: the run's ``M`` (``None``: unknown, nothing planned).
        optimizer_m: optimizer index -> its own ``M`` where it is not the run's.
        couplings: the couplings to plan.
    """
    out: dict[tuple[int, int], dict[Coupling, Plan]] = {}
    cache: dict[tuple[Any, ...], Plan] = {}  # groups with the same schedule, lr and timescale share one plan
    for i, optimizer in enumerate(optimizers):
        m_i = optimizer_m.get(i, steps_per_epoch)
        steps_i = optimizer_remaining(remaining, steps_per_epoch, optimizer_m.get(i))
        if not m_i or steps_i <= 0 or steps_i > MAX_SIMULATED_STEPS:
            continue
        if schedulers[i]:
            lrs = planned_lrs(optimizer, schedulers[i], steps_i, m_i)
        else:
            lrs = [[group_lr(group)] * steps_i for group in optimizer.param_groups]
        if lrs is None:
            continue
        for g in groups:
            if g.optimizer_index != i or not g.managed or g.tau_iter is None or g.reference_lr <= 0:
                continue
            lr_key = tuple(lrs[g.group_index])
            plans = {}
            for c in couplings:
                key = (c, lr_key, g.reference_lr, g.tau_iter, m_i)
                if key not in cache:
                    cache[key] = plan(c, lrs[g.group_index], g.reference_lr, g.tau_iter, m_i)
                plans[c] = cache[key]
            out[(i, g.group_index)] = plans
    return out


def model_ema_windows(trainer: pl.Trainer) -> list[tuple[str, float, str]]:
    """``(name, window in optimizer steps, source)`` of every model-EMA callback in the Trainer with a decay.

    A callback with a ``decay`` attribute in ``[0, 1)`` (timm's ``ModelEmaV3`` convention, and any user's EMA
    callback that keeps one), or Lightning's ``EMAWeightAveraging``, which keeps its decay only inside the
    ``avg_fn`` it hands torch's ``AveragedModel`` (``get_ema_avg_fn(decay)``), read from that closure: no public
    attribute holds it. An ``update_every_n_steps`` attribute stretches the window by that factor:
    ``every / (1 - decay)`` steps.
    """
    out = []
    for cb in trainer.callbacks:  # type: ignore[attr-defined]
        decay = getattr(cb, "decay", None)
        source = "decay"
        if decay is None:
            avg_fn = (
                getattr(cb, "_kwargs", {}).get("avg_fn") if isinstance(getattr(cb, "_kwargs", None), dict) else None
            )
            avg_fn = inspect.unwrap(avg_fn) if callable(avg_fn) else None  # under torch.no_grad's wrapper
            cells = getattr(avg_fn, "__closure__", None) or ()
            names = getattr(getattr(avg_fn, "__code__", None), "co_freevars", ())
            decay = dict(zip(names, (c.cell_contents for c in cells))).get("decay")
            source = "avg_fn's decay"
        if isinstance(decay, torch.Tensor) and decay.numel() == 1:
            decay = decay.item()
        if isinstance(decay, bool) or not isinstance(decay, (int, float)) or not 0 <= decay < 1:
            continue
        every = getattr(cb, "update_every_n_steps", 1)
        every = every if isinstance(every, int) and every > 0 else 1
        steps = every / (1.0 - float(decay))
        detail = f"{source}={float(decay):g}" + (f", every {every} steps" if every != 1 else "")
        out.append((type(cb).__name__, steps, detail))
    return out


def scheduled_steps(trainer: pl.Trainer) -> list[list[ScheduledStep]]:
    """The lr schedulers driving each of ``trainer.optimizers`` (by index), with when the loop steps them."""
    return [
        [
            ScheduledStep(c.scheduler, c.interval, c.frequency)
            for c in trainer.lr_scheduler_configs
            if getattr(c.scheduler, "optimizer", None) is optimizer
        ]
        for optimizer in trainer.optimizers
    ]


def read_run_shape(
    trainer: pl.Trainer, *, dataset_size: float | None = None, batch_size: float | None = None
) -> RunShape:
    """The run's shape: optimizer steps per epoch ``M``, ``N``, ``B``, world size and accumulation.

    ``M`` is the Trainer's own epoch: the batches the fit loop draws per epoch on each rank (after
    ``limit_train_batches``, the distributed sampler and the ``CombinedLoader`` mode) divided by the
    accumulation in force, rounded up because Lightning also steps on an epoch's last, incomplete accumulation
    window (10 batches at accumulation 4 are 3 steps). When the user gives ``dataset_size`` or ``batch_size``,
    ``M = N / B`` instead (the other is read), rounded up the same way under accumulation: 100 samples at
    ``B = 40`` (10 per batch, accumulation 4) are 3 steps, not 2.5. ``N`` and ``B`` are read for the summary
    whenever they can be; what cannot be read is ``None``.
    """
    world, accumulate = trainer.world_size, trainer.accumulate_grad_batches
    sources: list[str] = []
    problems: list[str] = []
    n: float | None = dataset_size
    b: float | None = batch_size
    if n is None:
        try:
            n, source = read_dataset_size(trainer)
            sources.append(f"N from the {source}.")
        except ValueError as err:
            n, problems = None, [*problems, str(err)]
    if b is None:
        try:
            b, source = read_global_batch_size(trainer)
            sources.append(f"B = {source}.")
        except ValueError as err:
            b, problems = None, [*problems, str(err)]
    m: float | None = None
    if dataset_size is not None or batch_size is not None:
        if n is not None and b is not None:
            m, source = _steps_from_sizes(trainer, n, b)
            sources.insert(0, source)
    else:
        m, source = read_steps_per_epoch(trainer)
        if m is None and n is not None and b is not None:
            m = n / b
            source = "M = N / B (the Trainer's epoch length is unknown)."
        sources.insert(0, source)
    return RunShape(
        steps_per_epoch=m,
        dataset_size=n,
        global_batch_size=b,
        world_size=world,
        accumulation=accumulate,
        sources=tuple(sources),
        problems=tuple(problems),
    )


def read_steps_per_epoch(trainer: pl.Trainer) -> tuple[float | None, str]:
    """Optimizer steps the fit loop runs in one epoch on each rank, and a sentence saying how it was counted.

    ``ceil(trainer.num_training_batches / trainer.accumulate_grad_batches)`` (Lightning steps on an epoch's last,
    incomplete accumulation window), or the plain ratio under a strategy that accumulates by itself (DeepSpeed);
    ``None`` for an endless epoch.
    """
    batches = trainer.num_training_batches
    accumulate = trainer.accumulate_grad_batches
    if not math.isfinite(batches) or batches <= 0:
        return None, "M unknown: the train dataloader has no length."
    batches = int(batches)
    how = f"{batches} batches per rank"
    if accumulate > 1 and trainer.strategy.handles_gradient_accumulation:
        # e.g. DeepSpeed counts micro-batches across epoch ends itself: no extra step on an incomplete window
        steps: float = batches / accumulate
        how += f" / {accumulate} accumulation (counted by the strategy)"
    else:
        steps = math.ceil(batches / accumulate)
        if accumulate > 1:
            how += f" / {accumulate} accumulation" + (", last window stepped too" if batches % accumulate else "")
    return steps, f"M = {steps:g} optimizer steps per epoch: {how}."


def _steps_from_sizes(trainer: pl.Trainer, n: float, b: float) -> tuple[float, str]:
    """``M = N / B`` from given sizes; under accumulation ``ceil(N / B)``: the last, incomplete window is a step."""
    accumulate = trainer.accumulate_grad_batches
    if accumulate > 1 and not trainer.strategy.handles_gradient_accumulation:
        windows = n / b
        steps = float(math.ceil(windows - 1e-9 * windows))  # N / B = 3.0000000000000004 is 3 windows
        if steps != windows:
            return steps, (
                f"M = ceil(N / B) = {steps:g} (dataset_size / batch_size given; {windows:.4g} accumulation windows of"
                f" {accumulate} batches, and Lightning steps on the last, incomplete one)."
            )
        return steps, "M = N / B (dataset_size / batch_size given)."
    return n / b, "M = N / B (dataset_size / batch_size given)."


def train_dataloaders(trainer: pl.Trainer) -> list[Any]:
    """The train dataloaders the fit loop uses, flattened (one entry per loader, in ``CombinedLoader`` order)."""
    iterables = trainer.train_dataloader
    if iterables is None:
        return []
    return list(CombinedLoader(iterables).flattened)


def read_dataset_size(trainer: pl.Trainer) -> tuple[float, str]:
    """``N``: the samples one epoch of this Trainer draws, summed over its train dataloaders.

    Each loader contributes ``len(loader.dataset)``, or fewer samples when ``limit_train_batches`` cuts the epoch
    short (``batches kept x per-device batch x world size``).

    Raises:
        ValueError: a loader's dataset has no length (an ``IterableDataset``), or there is no train dataloader.
    """
    loaders = train_dataloaders(trainer)
    if not loaders:
        raise ValueError(
            "`TimescaleCallback` found no train dataloader to read the dataset size from."
            " Pass `TimescaleCallback(dataset_size=...)`."
        )
    total = 0.0
    limited = False
    for loader in loaders:
        dataset = getattr(loader, "dataset", None)
        try:
            size = len(dataset)  # type: ignore[arg-type]
        except TypeError:
            raise ValueError(
                f"`TimescaleCallback` cannot read the dataset size: the train dataset {type(dataset).__name__!r}"
                " has no length (an `IterableDataset`?). Pass `TimescaleCallback(dataset_size=...)` with the"
                " number of samples (or tokens, with `batch_size` in tokens too) in one epoch."
            ) from None
        kept = _batches_kept(trainer, loader)
        if kept is not None:
            drawn = kept * _per_device_batch_size(loader) * trainer.world_size
            if drawn < size:
                size, limited = drawn, True
        total += size
    source = "train dataloader" + ("s" if len(loaders) > 1 else "")
    if limited:
        source += f", cut by limit_train_batches={trainer.limit_train_batches}"
    return total, source


def read_global_batch_size(trainer: pl.Trainer) -> tuple[float, str]:
    """``B``: per-device batch size x ``trainer.world_size`` x ``trainer.accumulate_grad_batches``.

    The per-device batch is the loader's ``batch_size``, else its ``batch_sampler.batch_size``; with several
    train loaders their per-device batches are summed (every step draws one batch from each).

    Raises:
        ValueError: a loader's batch size cannot be known.
    """
    loaders = train_dataloaders(trainer)
    if not loaders:
        raise ValueError(
            "`TimescaleCallback` found no train dataloader to read the batch size from."
            " Pass `TimescaleCallback(batch_size=...)` with the global batch size."
        )
    per_device = sum(_per_device_batch_size(loader) for loader in loaders)
    world, accumulate = trainer.world_size, trainer.accumulate_grad_batches
    source = f"{per_device} per device x {world} device(s) x {accumulate} accumulation"
    return float(per_device * world * accumulate), source


def _per_device_batch_size(loader: Any) -> int:
    batch_size = getattr(loader, "batch_size", None)
    if batch_size is None:
        batch_size = getattr(getattr(loader, "batch_sampler", None), "batch_size", None)
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
        kind = type(loader).__name__ if not isinstance(loader, DataLoader) else "DataLoader"
        raise ValueError(
            f"`TimescaleCallback` cannot read the per-device batch size of the train {kind} (got"
            f" {batch_size!r}). Pass `TimescaleCallback(batch_size=...)` with the global batch size"
            " (per-device batch x devices x gradient accumulation)."
        )
    return batch_size


def _batches_kept(trainer: pl.Trainer, loader: Any) -> int | None:
    """Batches per epoch ``limit_train_batches`` keeps of ``loader`` (per device), or ``None`` when unlimited.

    Mirrors Lightning's ``_parse_num_batches``: an int keeps that many batches, a float that fraction.
    """
    limit = trainer.limit_train_batches
    if limit is None:
        return None
    try:
        length = len(loader)
    except TypeError:
        return None
    if isinstance(limit, int):
        return min(length, limit)
    if limit >= 1.0:
        return None
    return int(length * limit)
