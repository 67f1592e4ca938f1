"""``TimescaleCallback``: set AdamW's weight decay from a target EMA timescale.

A thin adapter: it gathers ``N``, ``B`` and each param group's reference learning rate from the Trainer, then
writes the weight decay :mod:`lightning_tau.timescale` computes.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities import rank_zero_info, rank_zero_warn
from torch.utils.hooks import RemovableHandle
from typing_extensions import override

from lightning_tau import _checks, timescale
from lightning_tau._constants import WRITE_MODES, WriteMode
from lightning_tau._trainer import read_run_shape
from lightning_tau.apply import check_size, gather_groups, write_per_step, write_weight_decays
from lightning_tau.decide import (
    NO_MUP,
    GroupTimescale,
    RunShape,
    check_width_exponent,
    decide_groups,
    resolve_tau_iter,
    shape_changes,
    uses_mup,
)
from lightning_tau.diagnostics.monitor import TimescaleMonitor
from lightning_tau.optim import decay_kind, reference_lr, unsupported_message, unwrap_optimizer
from lightning_tau.schedule import ScheduledStep, planned_lr_sums
from lightning_tau.summary import format_summary
from lightning_tau.transfer import TunedRun
from lightning_tau.width import FixedLambdaPitfall, GroupRate, find_fixed_lambda_pitfall, format_fixed_lambda_pitfall

__all__ = ["TimescaleCallback"]


class TimescaleCallback(Callback):
    r"""Set every AdamW param group's ``weight_decay`` so AdamW's EMA averages over ``tau_epoch`` epochs.

    AdamW's weights are an exponential moving average of recent updates with timescale
    ``tau_iter = 1 / (lr * weight_decay)`` optimizer steps, or ``tau_epoch = tau_iter / M`` epochs of ``M``
    optimizer steps (Wang & Aitchison, ICML 2025). The optimal ``tau_epoch`` stays roughly constant as the dataset
    and model grow, so this callback fixes it and derives the weight decay per param group:

    .. math:: \lambda = \frac{1}{\eta \, M \, \tau_{epoch}} \quad (= \frac{B}{\eta N \tau_{epoch}}
        \text{ when } M = N / B)

    **An epoch is the Trainer's own**: ``M`` is the number of optimizer steps the fit loop really runs in an epoch
    on each rank, ``ceil(trainer.num_training_batches / accumulate_grad_batches)``: the batches it draws after
    ``limit_train_batches``, the distributed sampler and the ``CombinedLoader`` mode, divided by the
    accumulation in force, counting the step Lightning takes on an epoch's last, incomplete accumulation window.
    With ``dataset_size`` or ``batch_size`` given, ``M = N / B`` instead. Two train loaders of 100 and 20 samples
    at batch 10 draw 10 batches per epoch in ``max_size_cycle`` mode (the short one cycles) and 2 in
    ``min_size`` mode, so ``tau_epoch=5`` is 50 or 10 optimizer steps.

    When training starts (``on_train_start``: after the dataloaders are set up and any checkpoint is restored,
    before the first optimizer step) it reads the run's shape (``M``; ``N`` and ``B`` for the summary: summed
    dataset lengths, per-device batch x ``trainer.world_size`` x ``trainer.accumulate_grad_batches``) and each
    group's reference learning rate (``max_lr`` for ``OneCycleLR``, else ``initial_lr``, which every torch
    scheduler records, else ``lr``: ``tau`` is defined at the base lr, as in the paper, not at a warm-up value),
    and writes ``weight_decay`` into every param group of every decoupled-decay optimizer (``AdamW`` and its
    subclasses, ``Adam``/``NAdam``/``RAdam(decoupled_weight_decay=True)``, ``Muon``, mup's ``MuAdamW``,
    bitsandbytes, torchao and lion-pytorch optimizers, anything declared with
    :func:`~lightning_tau.register_decay_kind`) whose ``weight_decay`` is positive.
    Groups set to ``0`` (biases, norms) stay ``0``. Each group uses its own lr, so muP groups with
    ``lr / width_mult`` get ``weight_decay x width_mult`` automatically.

    **The run may change under it**, and the timescale holds: before the first optimizer step of every epoch it
    reads the shape again and re-decides when ``M`` (a ``GradientAccumulationScheduler``, dataloaders reloaded
    with ``reload_dataloaders_every_n_epochs``), the accumulation or a group's reference lr changed, saying once
    on rank zero what changed. A param group added mid-fit (``BaseFinetuning`` unfreezing a backbone) is managed
    from its first step with its own lr when its ``weight_decay`` is positive (an O(1) length check per step).

    ``N`` and ``B`` may both be counted in tokens (language models) instead of samples; only their ratio, the
    steps per epoch, matters.

    Args:
        tau_epoch: target timescale in epochs. Exactly one of ``tau_epoch`` and ``tau_iter`` is required.
        tau_iter: target timescale in optimizer steps (more than one).
        dataset_size: ``N`` (samples or tokens per epoch, a positive whole number); with it ``M = N / B``.
            Required for an ``IterableDataset`` without a length.
        batch_size: global ``B`` (per-device x devices x accumulation, same unit as ``N``, a positive whole
            number); overrides what is read, and ``M = N / B``.
        mode: ``"constant"`` (default) writes the weight decay once and leaves it while the scheduler moves the lr,
            as the paper does. ``"per_step"`` rewrites it before every optimizer step so
            ``lr_t * weight_decay_t = 1 / tau_iter`` holds at every step (steps with ``lr_t = 0`` keep the last
            value; they decay nothing either way). The write is a torch step pre-hook on the optimizer, so it
            holds however the optimizer is stepped, manual optimization with ``use_pl_optimizer=False`` included.
        skip_unsupported_optimizers: by default an optimizer with coupled L2 decay (plain ``Adam`` with
            ``weight_decay > 0``, ``SGD``, ...) or one not known to decay decoupled is an error, because the EMA
            view needs decoupled decay (declare your own optimizer with
            :func:`lightning_tau.register_decay_kind`). Set ``True`` to leave such optimizers untouched with a
            warning instead.
        verbose: print the pre-flight summary on rank zero.
        token_budget: single-epoch LLM pre-training: the run's training tokens ``D``. Instead of ``tau_epoch``
            or ``tau_iter``, pick the timescale from tokens per parameter with the Bergsma et al. 2025 power law
            (:func:`lightning_tau.timescale.power_lines_tau_epoch`), ``tau = a * (D / num_params) ** b``, a
            fraction of the run: ``tau_iter = tau * planned optimizer steps`` (the run is one epoch of ``D``
            tokens, ``D / B`` steps). Needs a finite ``max_steps`` or ``max_epochs``.
        num_params: the parameter count for tokens per parameter; default: the LightningModule's trainable
            parameters, counted at fit start. Pass your own (e.g. non-embedding) count to match another convention.
        power_law_coefficient: ``a`` of the power law (default 1.084, Bergsma et al. 2025).
        power_law_exponent: ``b`` of the power law (default -0.527).
        width_exponent: how weight decay scales with the muP width multiplier ``s`` of a group, ``lambda ∝ s ** alpha``
            at fixed ``tau_epoch``. ``1`` (default) is Wang & Aitchison's rule, ``lambda = s * lambda_base``, which
            every group's own lr gives (each group holds ``tau_iter``); Fan et al. 2025 argue for ``0.5``; ``0`` is
            direct muP with ``lambda`` fixed across widths. Another ``alpha`` multiplies a group's weight decay by
            ``s ** (alpha - 1)`` (its ``tau_iter`` becomes ``s ** (1 - alpha)`` times the run's); groups at
            ``s = 1`` are unaffected. ``s`` is the group's ``width_mult`` key or mup's ``p.infshape`` (every
            parameter annotated, one multiplier per group); a decaying group whose ``s`` cannot be read is an error
            at train start. A mapping from group name to ``alpha`` (e.g. ``{"hidden": 0.5}``) sets it per group;
            groups it does not name keep 1, and a name the run does not have is an error at train start.
        decay_vectors: the callback warns once, before training, when a decaying group holds 1-D parameters
            (biases, norm weights), which usually should not decay (pass ``self.parameters()`` to AdamW and they
            do); ``True`` says you mean it and silences the warning. It never changes the values written.
        steps_per_epoch: manual optimization: ``{optimizer_index: M}``, the steps that optimizer really takes per
            epoch, when it is not stepped once per batch (a GAN generator stepped every second batch). Without
            it each optimizer is assumed to step once per batch until its steps are counted: in manual
            optimization the callback counts every optimizer's steps over each full epoch and, where they differ
            from the ``M`` it assumed, warns (that epoch's ``tau_epoch`` was off by the ratio) and re-decides from
            the count at the next epoch's first step.
        monitor: the EMA diagnostics this callback logs through ``trainer.loggers`` (per group ``tau_iter``,
            ``tau_epoch`` and their targets, weight magnitudes, the predicted equilibrium norm; TensorBoard
            dashboards and HParams): ``True`` (default) a :class:`~lightning_tau.TimescaleMonitor` with its
            defaults, a configured ``TimescaleMonitor(...)``, or ``False`` for none. When the Trainer already has a
            ``TimescaleMonitor`` with the same ``prefix``, that one logs instead, so no key is logged twice.

    Raises:
        ValueError: at construction for a bad argument; at fit start for a second ``TimescaleCallback`` in the
            Trainer, an optimizer with coupled decay, no param group to manage, an epoch length that cannot be
            read, a ``width_exponent`` that cannot be applied, or a timescale of one optimizer step or less
            (``lr * weight_decay >= 1``; the message names the smallest valid ``tau_epoch``). Always before the
            optimizer step that would use the value.

    Example:
        >>> import lightning.pytorch as pl
        >>> from lightning_tau import TimescaleCallback
        >>> trainer = pl.Trainer(max_epochs=50, callbacks=[TimescaleCallback(tau_epoch=5.0)], logger=False)
        >>> TimescaleCallback(tau_epoch=5.0, tau_iter=100)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: `TimescaleCallback` takes exactly one of `tau_epoch`, `tau_iter` and `token_budget`, ...
    """

    def __init__(
        self,
        tau_epoch: float | None = None,
        *,
        tau_iter: float | None = None,
        dataset_size: int | None = None,
        batch_size: int | None = None,
        mode: WriteMode = "constant",
        skip_unsupported_optimizers: bool = False,
        verbose: bool = True,
        token_budget: float | None = None,
        num_params: int | None = None,
        power_law_coefficient: float = timescale.POWER_LINES_COEFFICIENT,
        power_law_exponent: float = timescale.POWER_LINES_EXPONENT,
        width_exponent: float | dict[str, float] = 1.0,
        decay_vectors: bool = False,
        steps_per_epoch: dict[int, float] | None = None,
        monitor: bool | TimescaleMonitor = True,
    ) -> None:
        if not isinstance(monitor, (bool, TimescaleMonitor)):
            raise _checks.invalid(
                "TimescaleCallback",
                "monitor",
                monitor,
                "use True (log the EMA diagnostics with a default `TimescaleMonitor`), False (log nothing), or a"
                " configured `TimescaleMonitor(...)`.",
            )
        #: The diagnostics this callback logs itself (``None`` with ``monitor=False``).
        self.monitor: TimescaleMonitor | None = TimescaleMonitor() if monitor is True else (monitor or None)
        self._own_monitor: TimescaleMonitor | None = None  # `self.monitor`, unless the Trainer has its own
        if monitor is True:
            self.monitor._quiet_without_logger = True  # logging is the default here, not something the user asked for
        if token_budget is not None and (tau_epoch is not None or tau_iter is not None):
            raise ValueError(
                f"`TimescaleCallback(token_budget={token_budget!r})` picks the timescale from the power law; do not"
                f" also pass tau_epoch={tau_epoch!r} or tau_iter={tau_iter!r}. Give exactly one of the three."
            )
        self.token_budget = None if token_budget is None else _checked("token_budget", token_budget)
        self.num_params = None if num_params is None else check_size("TimescaleCallback", "num_params", num_params)
        self.power_law_coefficient = _checked("power_law_coefficient", power_law_coefficient)
        self.power_law_exponent = _checks.finite_number(
            "TimescaleCallback",
            "power_law_exponent",
            power_law_exponent,
            f"use a finite number (default {timescale.POWER_LINES_EXPONENT}).",
        )
        self.resolved_num_params: float | None = None
        self.fixed_lambda_pitfalls: list[FixedLambdaPitfall] = []
        if token_budget is None and (tau_epoch is None) == (tau_iter is None):
            raise ValueError(
                "`TimescaleCallback` takes exactly one of `tau_epoch`, `tau_iter` and `token_budget`,"
                f" got tau_epoch={tau_epoch!r} and tau_iter={tau_iter!r}."
            )
        self.tau_epoch = None if tau_epoch is None else _checked("tau_epoch", tau_epoch)
        self.tau_iter = None if tau_iter is None else _checked("tau_iter", tau_iter)
        if self.tau_iter is not None and self.tau_iter <= 1:
            raise _checks.invalid(
                "TimescaleCallback",
                "tau_iter",
                tau_iter,
                "a timescale of one optimizer step or less makes `lr * weight_decay >= 1`, which zeroes or flips the"
                " weights every step. Use `tau_iter > 1`.",
            )
        self.dataset_size = (
            None if dataset_size is None else check_size("TimescaleCallback", "dataset_size", dataset_size)
        )
        self.batch_size = None if batch_size is None else check_size("TimescaleCallback", "batch_size", batch_size)
        self.mode: WriteMode = _checks.choice("TimescaleCallback", "mode", mode, WRITE_MODES)
        self.skip_unsupported_optimizers = _checks.flag(
            "TimescaleCallback", "skip_unsupported_optimizers", skip_unsupported_optimizers
        )
        self.verbose = _checks.flag("TimescaleCallback", "verbose", verbose)
        self.decay_vectors = _checks.flag("TimescaleCallback", "decay_vectors", decay_vectors)
        self.width_exponent = check_width_exponent(width_exponent)
        self.steps_per_epoch = _checked_steps_per_epoch(steps_per_epoch)

        # decided at train start, and again whenever the run changes
        self.shape: RunShape | None = None
        self.groups: list[GroupTimescale] = []
        self.resolved_tau_iter: float | None = None
        self.resolved_tau_epoch: float | None = None
        self._before: dict[tuple[int, int], float] = {}  # the user's own weight decay per (optimizer, group)
        self._decoupled: set[int] = set()  # indices of the optimizers this callback manages
        self._pinned_lr: dict[tuple[int, int], float] = {}
        # id(optimizer) -> (tau_iter, indices of managed groups holding it), for the per-step writes
        self._managed: dict[int, list[tuple[float, list[int]]]] = {}
        self._optimizer_m: dict[int, float] = {}  # optimizer index -> the M it was decided with, where not the run's
        self._counts: dict[int, int] = {}  # manual optimization: optimizer index -> steps taken this epoch
        self._batches_in_epoch = 0
        self._counted_epoch: int | None = None  # the epoch `_counts` and `_batches_in_epoch` are of
        self._resumed_counts: dict[str, Any] | None = None  # a checkpoint's partial epoch count, until continued
        self._measured: dict[int, tuple[int, int]] = {}  # optimizer index -> (steps, batches) of its last full epoch
        self._group_counts: dict[int, int] = {}  # id(optimizer) -> len(param_groups) when last decided
        self._decided_epoch: int | None = None
        self._step_hooks: list[RemovableHandle] = []  # the step pre-hooks of the fit in progress
        self._restored: dict[str, Any] | None = None
        self._state_key: str | None = None

    @property
    def resolved_dataset_size(self) -> float | None:
        """``N`` of the run's current shape (``None`` before train start or when unknown)."""
        return None if self.shape is None else self.shape.dataset_size

    @property
    def resolved_batch_size(self) -> float | None:
        """``B`` of the run's current shape (``None`` before train start or when unknown)."""
        return None if self.shape is None else self.shape.global_batch_size

    @property
    def resolved_steps_per_epoch(self) -> float | None:
        """``M`` of the run's current shape: optimizer steps per epoch (``None`` before train start or unknown)."""
        return None if self.shape is None else self.shape.steps_per_epoch

    @classmethod
    def from_tuned_run(cls, tuned: TunedRun, **kwargs: Any) -> TimescaleCallback:
        """A callback that keeps the timescale of a tuned run: ``tau_epoch = B / (lr * weight_decay * N)``.

        Tune small, train big: give the small run's base ``lr``, ``weight_decay``, ``N`` and global ``B``; the
        callback reads the big run's ``N``, ``B`` and per-group lr at train start and writes each group's weight
        decay at the same ``tau_epoch`` (muP groups with ``lr / s`` get ``weight_decay * s``).

        Args:
            tuned: the tuned run (its ``width`` is not needed here: each group's own lr carries the muP rule).
            **kwargs: any other ``TimescaleCallback`` argument except ``tau_epoch``, ``tau_iter`` and
                ``token_budget`` (``dataset_size`` and ``batch_size`` here are the *target* run's overrides).

        Example:
            >>> from lightning_tau.transfer import TunedRun
            >>> cb = TimescaleCallback.from_tuned_run(TunedRun(lr=1e-3, weight_decay=0.1, dataset_size=50_000,
            ...                                                batch_size=100))
            >>> cb.tau_epoch
            20.0
        """
        if not isinstance(tuned, TunedRun):
            raise ValueError(
                f"`TimescaleCallback.from_tuned_run(tuned={tuned!r})` needs a `lightning_tau.transfer.TunedRun`,"
                " for example `TunedRun(lr=1e-3, weight_decay=0.1, dataset_size=50_000, batch_size=100)`."
            )
        clash = sorted({"tau_epoch", "tau_iter", "token_budget"} & kwargs.keys())
        if clash:
            raise ValueError(
                f"`TimescaleCallback.from_tuned_run` derives the timescale from the tuned run; do not pass {clash}."
            )
        return cls(tau_epoch=tuned.tau_epoch, **kwargs)

    @property
    def state_key(self) -> str:
        # Lightning reads this around every hook call (to name the profiler section): build it once
        if self._state_key is None:
            self._state_key = self._generate_state_key(
                tau_epoch=self.tau_epoch, tau_iter=self.tau_iter, token_budget=self.token_budget
            )
        return self._state_key

    @override
    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Check the optimizers and note each group's ``weight_decay`` as ``configure_optimizers`` set it.

        Runs before a checkpoint's optimizer state is restored, so the values noted are the user's own.
        """
        others = [cb for cb in trainer.callbacks if isinstance(cb, TimescaleCallback)]  # type: ignore[attr-defined]
        if len(others) > 1:
            raise ValueError(
                f"This Trainer has {len(others)} `TimescaleCallback`s ("
                + ", ".join(_describe(cb) for cb in others)
                + "). Each rewrites the same param groups' weight decay, so the last one would silently win. Keep"
                " one (a `TimescaleMonitor` next to it is fine, for diagnostics alone)."
            )
        self._before, self._decoupled, self._pinned_lr = {}, set(), {}
        self.shape, self._decided_epoch = None, None
        self._optimizer_m, self._counts, self._batches_in_epoch = {}, {}, 0
        # a resumed run keeps what its epochs counted (the checkpoint's callback state is loaded before fit start)
        measured = (self._restored or {}).get("measured_steps") or {}
        self._measured = {int(i): (int(v[0]), int(v[1])) for i, v in measured.items()}
        # ...and the count of the epoch it stopped in, continued when training resumes inside it (`on_train_start`)
        self._resumed_counts = (self._restored or {}).get("epoch_counts") or None
        if self.steps_per_epoch is not None:
            bad = sorted(i for i in self.steps_per_epoch if i >= len(trainer.optimizers))
            if bad:
                raise ValueError(
                    f"`TimescaleCallback(steps_per_epoch={self.steps_per_epoch!r})` names optimizer index(es) {bad},"
                    f" but the LightningModule has {len(trainer.optimizers)} optimizer(s) (indices from 0, in the"
                    " order `configure_optimizers` returns them)."
                )
        self._own_monitor = self.monitor
        if self.monitor is not None and any(
            isinstance(cb, TimescaleMonitor) and cb.prefix == self.monitor.prefix
            for cb in trainer.callbacks  # type: ignore[attr-defined]
        ):
            self._own_monitor = None  # the Trainer's own monitor logs the same keys
        if self.token_budget is not None:
            counted = sum(p.numel() for p in pl_module.parameters() if p.requires_grad)
            if self.num_params is None and counted == 0:
                raise ValueError(
                    f"`TimescaleCallback(token_budget={self.token_budget!r})` divides the tokens by the model's"
                    " trainable parameters, but the LightningModule has none. Unfreeze some parameters, or pass"
                    " `num_params=...` with the count to use."
                )
            self.resolved_num_params = float(self.num_params or counted)
        supported = 0
        for i, optimizer in enumerate(trainer.optimizers):
            kind = decay_kind(optimizer)
            if kind in ("coupled", "unknown"):
                if not self.skip_unsupported_optimizers:
                    raise ValueError(unsupported_message(optimizer, i))
                why = "coupled (L2)" if kind == "coupled" else "not known to be decoupled (see `register_decay_kind`)"
                rank_zero_warn(
                    f"`TimescaleCallback(skip_unsupported_optimizers=True)` leaves optimizer {i}"
                    f" ({type(optimizer).__name__}) alone: its weight decay is {why}."
                )
                continue
            if kind != "decoupled":
                continue
            self._decoupled.add(i)
            for j, group in enumerate(optimizer.param_groups):
                wd = float(group.get("weight_decay", 0.0))
                self._before[(i, j)] = wd
                supported += wd > 0
        if supported == 0:
            raise ValueError(
                "`TimescaleCallback` found no AdamW param group with `weight_decay > 0` to manage (optimizers:"
                f" {[type(o).__name__ for o in trainer.optimizers]}). Use `torch.optim.AdamW` and give the"
                " groups that should decay a positive `weight_decay` (any value: the callback replaces it)."
            )
        if self._own_monitor is not None:
            self._own_monitor.on_fit_start(trainer, pl_module)

    @override
    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Read the run's shape, decide each managed group's ``weight_decay``, write it and print the summary."""
        self._continue_counts(trainer)
        self.shape = None
        self._decide(trainer)
        self._hook_optimizers(trainer)
        if self._own_monitor is not None:
            self._own_monitor.on_train_start(trainer, pl_module)

    def _continue_counts(self, trainer: pl.Trainer) -> None:
        """A run resumed inside an epoch continues the checkpoint's step count of that epoch, so that the epoch
        is still counted whole (manual optimization); the checkpoint's loop state is restored by now."""
        resumed, self._resumed_counts = self._resumed_counts, None
        if resumed and resumed.get("epoch") == trainer.current_epoch:
            self._counts = {int(i): int(n) for i, n in (resumed.get("steps") or {}).items()}
            self._batches_in_epoch = int(resumed.get("batches", 0))
            self._counted_epoch = trainer.current_epoch

    def _hook_optimizers(self, trainer: pl.Trainer) -> None:
        """Register this callback's step pre-hook on every optimizer (on the one that steps, inside any wrapper).

        A torch hook on the optimizer itself runs however the loop steps it: automatic optimization, manual
        optimization through ``self.optimizers()`` or with ``use_pl_optimizer=False``. Hooks left from an earlier
        fit are removed first, so a second fit or a resume never writes twice.
        """
        self._remove_step_hooks()
        self._step_hooks = [
            unwrap_optimizer(optimizer).register_step_pre_hook(
                functools.partial(self._before_optimizer_step, trainer, i)
            )
            for i, optimizer in enumerate(trainer.optimizers)
        ]

    def _remove_step_hooks(self) -> None:
        for handle in self._step_hooks:
            handle.remove()
        self._step_hooks = []

    def _before_optimizer_step(
        self, trainer: pl.Trainer, index: int, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any
    ) -> None:
        """Before every optimizer step: re-decide at an epoch's first step or when a group was added; in
        ``"per_step"`` mode write this step's decay into ``optimizer`` (the one that steps: its groups are read)."""
        stepped = trainer.optimizers[index]
        if trainer.current_epoch != self._decided_epoch or len(stepped.param_groups) != self._group_counts.get(
            id(stepped)
        ):
            self._decide(trainer)
        if not trainer.lightning_module.automatic_optimization:  # count its real steps (see `steps_per_epoch`)
            self._counts[index] = self._counts.get(index, 0) + 1
        if self.mode == "per_step":
            for tau_iter, indices in self._managed.get(id(stepped), ()):
                write_per_step(optimizer, indices, tau_iter)

    @override
    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Start counting the epoch's steps (Lightning does not call this for an epoch resumed inside)."""
        self._counts, self._batches_in_epoch = {}, 0
        self._counted_epoch = trainer.current_epoch

    @override
    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        self._batches_in_epoch += 1
        if self._own_monitor is not None:
            self._own_monitor.on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)

    @override
    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Manual optimization: compare each optimizer's steps this epoch with the ``M`` it was decided with."""
        if pl_module.automatic_optimization or self.shape is None:
            return
        planned = trainer.num_training_batches
        full = self._batches_in_epoch > 0 and (
            self._batches_in_epoch == planned if math.isfinite(planned) else not trainer.should_stop
        )
        if not full:  # cut short (max_steps, a stop): the count says nothing about an epoch
            return
        for i in sorted(self._decoupled):
            used = self._optimizer_m.get(i, self.shape.steps_per_epoch)
            counted = self._counts.get(i, 0)
            if counted == 0:
                continue
            if counted != self._batches_in_epoch or i in self._measured or i in self._optimizer_m:
                self._measured[i] = (counted, self._batches_in_epoch)
            if used is not None and not math.isclose(counted, used, rel_tol=1e-9):
                rank_zero_warn(
                    f"`TimescaleCallback`: optimizer {i} took {counted} steps in epoch {trainer.current_epoch}"
                    f" ({self._batches_in_epoch} batches), but its weight decay assumed M={used:g} steps per epoch,"
                    f" so its tau_epoch there was {used / counted:.4g} times the target. From the next epoch its M"
                    " is the count (counted again every epoch). Pass"
                    f" `TimescaleCallback(steps_per_epoch={{{i}: {counted}}})` to have it right from the first step."
                )

    @override
    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._remove_step_hooks()
        if self._own_monitor is not None:
            self._own_monitor.on_train_end(trainer, pl_module)

    @override
    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:
        self._remove_step_hooks()  # a failed fit calls no `on_train_end` and no `teardown`

    @override
    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self._remove_step_hooks()
        if self._own_monitor is not None:
            self._own_monitor.teardown(trainer, pl_module, stage)

    @override
    def state_dict(self) -> dict[str, Any]:
        return {
            "tau_iter": self.resolved_tau_iter,
            "tau_epoch": self.resolved_tau_epoch,
            "steps_per_epoch": self.resolved_steps_per_epoch,
            "dataset_size": self.resolved_dataset_size,
            "global_batch_size": self.resolved_batch_size,
            "world_size": None if self.shape is None else self.shape.world_size,
            "mode": self.mode,
            "weight_decay": {g.name: g.weight_decay for g in self.groups},
            # manual optimization: optimizer index -> [steps, batches] of its last full epoch, counted
            "measured_steps": {str(i): list(v) for i, v in self._measured.items()},
            # ...and the count of the epoch in progress, so a resume inside it still counts a whole epoch
            "epoch_counts": {
                "epoch": self._counted_epoch,
                "batches": self._batches_in_epoch,
                "steps": {str(i): n for i, n in self._counts.items()},
            },
            "monitor": None if self.monitor is None else self.monitor.state_dict(),
        }

    @override
    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._restored = dict(state_dict)
        if self.monitor is not None and state_dict.get("monitor"):
            self.monitor.load_state_dict(state_dict["monitor"])

    # --- read -> decide -> apply -> report ------------------------------------------------------------------

    def _decide(self, trainer: pl.Trainer) -> None:
        """The one path for the start and for every change: read the shape, decide, write, report."""
        first = self.shape is None
        shape = read_run_shape(trainer, dataset_size=self.dataset_size, batch_size=self.batch_size)
        tau_iter, tau_note = self._target_tau_iter(trainer, shape, first)
        inputs = gather_groups(
            trainer.optimizers,
            weight_decay_before=self._before,
            managed_optimizers=self._decoupled,
            reference_lrs=self._pin_reference_lrs(trainer),
        )
        for g in inputs:  # a group added since: its value now is the user's own
            self._before.setdefault((g.optimizer_index, g.group_index), g.weight_decay_before)
        optimizer_m = self._optimizer_steps_per_epoch(trainer, shape)
        tau_iters = self._optimizer_tau_iters(trainer, shape, optimizer_m, tau_iter, first)
        try:
            groups = decide_groups(inputs, tau_iters, width_exponent=self.width_exponent)
        except ValueError as err:
            raise ValueError(f"`TimescaleCallback`: {err}") from None
        write_weight_decays(trainer.optimizers, groups)
        previous = {(g.optimizer_index, g.group_index): g for g in self.groups}
        for g in groups:  # the look-ahead is re-run only when something changed (see `_report_change`)
            old = previous.get((g.optimizer_index, g.group_index))
            if old is not None and old.weight_decay == g.weight_decay:
                g.planned_timescales = old.planned_timescales
        old_shape, old_groups, old_tau_iter = self.shape, self.groups, self.resolved_tau_iter
        self.shape, self.groups, self.resolved_tau_iter = shape, groups, tau_iter
        self.resolved_tau_epoch = tau_iter / shape.steps_per_epoch if shape.steps_per_epoch else None
        self._optimizer_m = optimizer_m
        self._managed = {}
        for g in groups:
            if g.decays:
                assert g.tau_iter is not None
                held = self._managed.setdefault(id(trainer.optimizers[g.optimizer_index]), [])
                same = [indices for tau, indices in held if tau == g.tau_iter]
                if same:
                    same[0].append(g.group_index)
                else:
                    held.append((g.tau_iter, [g.group_index]))
        self._group_counts = {id(o): len(o.param_groups) for o in trainer.optimizers}
        self._decided_epoch = trainer.current_epoch
        target_epoch = self.tau_epoch if self.tau_epoch is not None else self.resolved_tau_epoch
        targets = _group_targets(groups, tau_iters, self.tau_epoch, optimizer_m, shape.steps_per_epoch)
        for monitor in self._monitors(trainer):  # one shape, and each group's own target, for the monitor
            monitor.set_run_shape(
                shape,
                tau_iter=tau_iter,
                tau_epoch=target_epoch,
                group_targets=targets,
                optimizer_steps_per_epoch=optimizer_m,
            )
        if first:
            self._check_resume()
            if (
                self.width_exponent not in (1.0, {})
                and not uses_mup(inputs)
                and any(g.managed and g.width_problem == NO_MUP for g in inputs)
            ):
                rank_zero_warn(
                    f"`TimescaleCallback(width_exponent={self.width_exponent!r})` has no effect: no param group has a"
                    " muP width multiplier other than 1 (no `width_mult` key, no mup `infshape`), so every group"
                    " keeps the timescale. Leave width_exponent out, or call `mup.set_base_shapes` on a μP model."
                )
            self._report_width(trainer)
            self._report_vectors(trainer)
            self._report(trainer, [n for n in (tau_note, self._width_note(), self._manual_note(trainer)) if n])
        else:
            assert old_shape is not None and old_tau_iter is not None
            self._report_change(trainer, old_shape, old_groups, old_tau_iter)

    def _monitors(self, trainer: pl.Trainer) -> list[TimescaleMonitor]:
        """The monitors of this run: this callback's own, and any ``TimescaleMonitor`` in the Trainer."""
        found = [cb for cb in trainer.callbacks if isinstance(cb, TimescaleMonitor)]  # type: ignore[attr-defined]
        return found + ([self._own_monitor] if self._own_monitor is not None else [])

    def _target_tau_iter(self, trainer: pl.Trainer, shape: RunShape, first: bool) -> tuple[float, str | None]:
        """``tau_iter`` for this shape: ``tau_epoch * M``, the given ``tau_iter``, or the power law (fixed at start)."""
        if self.token_budget is not None:
            if first or self.resolved_tau_iter is None:
                return self._resolve_power_law(trainer)
            return self.resolved_tau_iter, None
        if self.tau_epoch is not None and shape.steps_per_epoch is None and shape.problems:
            raise ValueError(" ".join(shape.problems))
        try:
            steps = resolve_tau_iter(
                tau_epoch=self.tau_epoch, tau_iter=self.tau_iter, steps_per_epoch=shape.steps_per_epoch
            )
        except ValueError as err:
            when = "" if first else f" at epoch {trainer.current_epoch} ({' '.join(shape.sources)})"
            raise ValueError(f"`TimescaleCallback`{when}: {err}") from None
        return steps, None

    def _optimizer_steps_per_epoch(self, trainer: pl.Trainer, shape: RunShape) -> dict[int, float]:
        """``M`` per optimizer index where it is not the run's: counted over the last full epoch (manual
        optimization), else declared in ``steps_per_epoch``."""
        out: dict[int, float] = {}
        for i in range(len(trainer.optimizers)):
            if i in self._measured:
                steps, batches = self._measured[i]
                m = shape.steps_per_epoch
                out[i] = float(steps) if m is None or m == batches else steps * m / batches  # the ratio holds
            elif self.steps_per_epoch is not None and i in self.steps_per_epoch:
                out[i] = self.steps_per_epoch[i]
        return out

    def _optimizer_tau_iters(
        self, trainer: pl.Trainer, shape: RunShape, optimizer_m: dict[int, float], tau_iter: float, first: bool
    ) -> float | dict[int, float]:
        """The run's ``tau_iter``, or one per optimizer when an optimizer takes its own number of steps per epoch
        (``tau_epoch`` is held in each optimizer's own steps; ``tau_iter`` and the power law are in steps already)."""
        if not optimizer_m or self.tau_epoch is None:
            return tau_iter
        out: dict[int, float] = {}
        for i in range(len(trainer.optimizers)):
            if i not in optimizer_m:
                out[i] = tau_iter
                continue
            try:
                out[i] = resolve_tau_iter(tau_epoch=self.tau_epoch, steps_per_epoch=optimizer_m[i])
            except ValueError as err:
                when = "" if first else f" at epoch {trainer.current_epoch}"
                raise ValueError(f"`TimescaleCallback`{when}, optimizer {i}: {err}") from None
        return out

    def _width_note(self) -> str | None:
        """A summary line for a width exponent other than 1 (the table's tau_iter column shows each group's)."""
        if self.width_exponent == 1.0 or not self.width_exponent:
            return None
        scaled = [g for g in self.groups if g.decays and g.width_exponent != 1.0 and (g.width_mult or 1.0) != 1.0]
        rule = (
            f"width_exponent={self.width_exponent:g}"
            if isinstance(self.width_exponent, float)
            else f"width_exponent={self.width_exponent!r}"
        )
        if not scaled:
            return f"{rule}: no decaying group has a width multiplier other than 1, so it changes nothing."
        return (
            f"{rule}: weight decay ∝ s^alpha across widths, so a group at width multiplier s holds"
            " tau_iter x s^(1 - alpha): "
            + ", ".join(f"{g.name} (s={g.width_mult:g}, alpha={g.width_exponent:g})" for g in scaled)
            + "."
        )

    def _manual_note(self, trainer: pl.Trainer) -> str | None:
        """Manual optimization: say what ``M`` each optimizer is assumed to take until its steps are counted."""
        module = trainer.lightning_module
        if module.automatic_optimization or self.shape is None or self.tau_epoch is None:
            return None
        m = self.shape.steps_per_epoch
        declared = ", ".join(f"optimizer {i}: M={v:g}" for i, v in sorted(self._optimizer_m.items()))
        return (
            "Manual optimization: tau_epoch is held in each optimizer's own steps per epoch; "
            + (f"{declared} as declared, the others " if declared else "each optimizer ")
            + f"assumed to step once per batch (M={_fmt(m)}) until an epoch's steps are counted (warned and"
            " re-decided at the next epoch if they differ)."
        )

    def _report_vectors(self, trainer: pl.Trainer) -> None:
        """Warn once when a decaying group holds 1-D parameters (biases, norm weights) and the user did not say so."""
        if self.decay_vectors:
            return
        names = {id(p): n for n, p in trainer.lightning_module.named_parameters()}
        parts = []
        for g in self.groups:
            if not g.decays:
                continue
            group = trainer.optimizers[g.optimizer_index].param_groups[g.group_index]
            vectors = [p for p in group["params"] if p.ndim <= 1]
            if vectors:
                shown = [names.get(id(p), f"<{tuple(p.shape)} tensor>") for p in vectors[:_LISTED]]
                more = f" and {len(vectors) - _LISTED} more" if len(vectors) > _LISTED else ""
                parts.append(
                    f"{g.name!r} ({len(vectors)} of {len(group['params'])}: {', '.join(shown)}{more}; weight decay"
                    f" {g.weight_decay:.4g})"
                )
        if parts:
            rank_zero_warn(
                "`TimescaleCallback`: these decaying param groups hold 1-D parameters (biases, norm weights), which"
                " get the same weight decay as the matrices and are pulled toward zero: "
                + "; ".join(parts)
                + ". Usually they should not decay: give them a group with `weight_decay=0`, e.g."
                " `torch.optim.AdamW(lightning_tau.build_param_groups(model, weight_decay=0.1), lr=...)` (biases and"
                " norms in `no_decay`). If you mean to decay them, pass `TimescaleCallback(decay_vectors=True)`."
            )

    def _pin_reference_lrs(self, trainer: pl.Trainer) -> dict[tuple[int, int], float]:
        """Reference lrs to hold fixed: a group with no ``initial_lr``/``max_lr`` under a scheduler that moves its
        ``lr`` (``ReduceLROnPlateau``) keeps the lr it had when first seen, so the schedule is not undone."""
        scheduled = {id(getattr(c.scheduler, "optimizer", None)) for c in trainer.lr_scheduler_configs}
        for i, optimizer in enumerate(trainer.optimizers):
            if id(optimizer) not in scheduled:
                continue
            for j, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group and "max_lr" not in group:
                    self._pinned_lr.setdefault((i, j), reference_lr(group))
        return self._pinned_lr

    def _resolve_power_law(self, trainer: pl.Trainer) -> tuple[float, str]:
        """``tau`` from tokens per parameter (Bergsma et al. 2025), as a fraction of the planned run."""
        assert self.token_budget is not None and self.resolved_num_params is not None
        tokens_per_param = self.token_budget / self.resolved_num_params
        tau = timescale.power_lines_tau_epoch(
            tokens_per_param, coefficient=self.power_law_coefficient, exponent=self.power_law_exponent
        )
        planned = trainer.estimated_stepping_batches
        if not math.isfinite(planned) or planned <= 0:
            raise ValueError(
                f"`TimescaleCallback(token_budget={self.token_budget!r})` sets tau_iter = tau * planned optimizer"
                f" steps, but the Trainer plans {planned!r} steps. Set `max_steps` (or a finite `max_epochs`)."
            )
        tau_iter = tau * float(planned)
        if tau_iter <= 1:
            raise ValueError(
                f"`TimescaleCallback(token_budget={self.token_budget!r})`: the power law gives tau = {tau:.4g} of"
                f" {planned:,.0f} planned steps = {tau_iter:.4g} steps, one optimizer step or less, which zeroes or"
                " flips the weights every step. Plan a longer run, or set `tau_iter` yourself."
            )
        return tau_iter, (
            f"tau from the power law: D={self.token_budget:,.0f} tokens / {self.resolved_num_params:,.0f} params ="
            f" {tokens_per_param:.4g} tokens per parameter -> tau = {self.power_law_coefficient:g} *"
            f" TPP^{self.power_law_exponent:g} = {tau:.4g} of the run ({planned:,.0f} planned steps)."
        )

    def _report_width(self, trainer: pl.Trainer) -> None:
        """Warn about fixed-λ muP groups (what ``configure_optimizers`` set vs. what was written); log ``s``."""
        rates = [GroupRate(g.name, g.reference_lr, g.weight_decay_before, g.width_mult) for g in self.groups]
        # a group with another width exponent follows the rule the user chose, not the one the pitfall checks
        self.fixed_lambda_pitfalls = find_fixed_lambda_pitfall(
            [r for r, g in zip(rates, self.groups) if g.decays and g.width_exponent == 1.0]
        )
        if self.fixed_lambda_pitfalls:
            written = {g.name: g.weight_decay for g in self.groups}
            rank_zero_warn(
                format_fixed_lambda_pitfall(
                    self.fixed_lambda_pitfalls, written=[written[p.name] for p in self.fixed_lambda_pitfalls]
                )
            )
        mults = {f"timescale/width_mult/{g.name}": g.width_mult for g in self.groups if g.width_mult is not None}
        if mults and trainer.is_global_zero:  # at train start; a monitor logs them again at its (later) logging steps
            for logger in trainer.loggers:
                logger.log_metrics(mults, step=trainer.global_step)

    def _check_resume(self) -> None:
        """On resume, warn when the run's shape changed since the checkpoint (the new values win)."""
        old = self._restored
        if not old or self.shape is None:
            return
        changes = [
            f"{key} {old.get(key)!r} -> {new!r}"
            for key, new in (
                ("dataset_size", self.shape.dataset_size),
                ("world_size", self.shape.world_size),
                ("global_batch_size", self.shape.global_batch_size),
                ("steps_per_epoch", self.shape.steps_per_epoch),
                ("tau_iter", self.resolved_tau_iter),
            )
            if old.get(key) is not None and new is not None and not math.isclose(old[key], new, rel_tol=1e-12)
        ]
        if changes:
            rank_zero_warn(
                "`TimescaleCallback` resumed a run whose shape changed since the checkpoint: "
                + ", ".join(changes)
                + ". Weight decay is recomputed for the new values."
            )

    def _report_change(
        self, trainer: pl.Trainer, old_shape: RunShape, old_groups: list[GroupTimescale], old_tau_iter: float
    ) -> None:
        """Say once, on rank zero, what changed mid-fit and the weight decay now in force (nothing if nothing did)."""
        assert self.shape is not None and self.resolved_tau_iter is not None
        parts = shape_changes(old_shape, self.shape)
        if not math.isclose(old_tau_iter, self.resolved_tau_iter, rel_tol=1e-12):
            parts.append(f"tau_iter {old_tau_iter:.4g} -> {self.resolved_tau_iter:.4g} steps")
        previous = {(g.optimizer_index, g.group_index): g for g in old_groups}
        for g in self.groups:
            old = previous.get((g.optimizer_index, g.group_index))
            if old is None:
                how = f"managed at lr {g.reference_lr:.4g}" if g.decays else "not managed"
                wd = f"{g.weight_decay_before:.4g} -> {g.weight_decay:.4g}" if g.decays else f"{g.weight_decay:.4g}"
                parts.append(f"new param group {g.name!r} ({how}): weight decay {wd}")
            elif g.decays and not math.isclose(old.weight_decay, g.weight_decay, rel_tol=1e-12):
                if not math.isclose(old.reference_lr, g.reference_lr, rel_tol=1e-12):
                    parts.append(f"{g.name} reference lr {old.reference_lr:.4g} -> {g.reference_lr:.4g}")
                parts.append(f"{g.name} weight decay {old.weight_decay:.4g} -> {g.weight_decay:.4g}")
        if parts:
            self._plan(trainer)
            held = (
                f"tau_epoch={self.tau_epoch:g}"
                if self.tau_epoch is not None
                else f"tau_iter={self.resolved_tau_iter:.4g}"
            )
            when = f"at epoch {trainer.current_epoch}, step {trainer.global_step}"
            rank_zero_info(f"`TimescaleCallback` {when}: {'; '.join(parts)} ({held} held).")

    def _plan(self, trainer: pl.Trainer) -> float | None:
        """Estimate each managed group's ``sum_t lr_t * weight_decay`` over the steps left; return them."""
        remaining = self._remaining_steps(trainer)
        if remaining is None:
            return None
        assert self.resolved_tau_iter is not None
        run_m = self.resolved_steps_per_epoch
        if self.mode == "per_step":
            for g in self.groups:
                if g.decays:
                    assert g.tau_iter is not None
                    g.planned_timescales = self._optimizer_remaining(g.optimizer_index, remaining) / g.tau_iter
            return remaining
        for i, optimizer in enumerate(trainer.optimizers):
            specs = [
                ScheduledStep(c.scheduler, c.interval, c.frequency)
                for c in trainer.lr_scheduler_configs
                if getattr(c.scheduler, "optimizer", None) is optimizer
            ]
            steps_i = self._optimizer_remaining(i, remaining)
            m_i = self._optimizer_m.get(i, run_m) or float("nan")
            sums = planned_lr_sums(optimizer, specs, steps_i, m_i) if specs else None
            for g in self.groups:
                if g.optimizer_index != i or not g.decays:
                    continue
                lr_sum = sums[g.group_index] if sums is not None else (None if specs else steps_i * g.reference_lr)
                g.planned_timescales = None if lr_sum is None else lr_sum * g.weight_decay
        return remaining

    def _optimizer_remaining(self, index: int, remaining: int) -> int:
        """The run's remaining steps in optimizer ``index``'s own steps (it may take fewer per epoch)."""
        m, m_i = self.resolved_steps_per_epoch, self._optimizer_m.get(index)
        return remaining if m_i is None or not m else round(remaining * m_i / m)

    def _remaining_steps(self, trainer: pl.Trainer) -> int | None:
        """Optimizer steps left: the nearer of ``max_steps`` and ``max_epochs`` epochs of ``M`` (``None``: endless).

        Counted from the run's own epoch length, so a resume on a different dataset plans the right number.
        """
        bounds = []
        if trainer.max_steps is not None and trainer.max_steps >= 0:
            bounds.append(trainer.max_steps - trainer.global_step)
        max_epochs, m = trainer.max_epochs, self.resolved_steps_per_epoch
        if max_epochs is not None and max_epochs >= 0 and m is not None:
            bounds.append(math.ceil((max_epochs - trainer.current_epoch) * m))
        return max(0, min(bounds)) if bounds else None

    def _report(self, trainer: pl.Trainer, notes: list[str]) -> None:
        assert self.resolved_tau_iter is not None and self.shape is not None
        planned_steps = self._plan(trainer)
        short = [g for g in self.groups if g.decays and g.planned_timescales is not None and g.planned_timescales < 1]
        if short:
            rank_zero_warn(
                "`TimescaleCallback`: the run covers less than one EMA timescale for "
                + ", ".join(f"{g.name} ({g.planned_timescales:.2f})" for g in short)
                + ", so weight decay barely acts and the weights mostly remember their initialization. Train"
                " longer or use a smaller `tau_epoch`."
            )
        if self.verbose:
            rank_zero_info(
                format_summary(
                    self.groups,
                    tau_iter=self.resolved_tau_iter,
                    tau_epoch=self.resolved_tau_epoch,
                    shape=self.shape,
                    planned_steps=planned_steps,
                    notes=notes,
                    optimizer_steps_per_epoch=self._optimizer_m,
                )
            )


_LISTED = 6  # 1-D parameters named per group in the warning


def _group_targets(
    groups: list[GroupTimescale],
    tau_iters: float | dict[int, float],
    tau_epoch: float | None,
    optimizer_m: dict[int, float],
    run_m: float | None,
) -> dict[tuple[int, int], tuple[float, float | None]]:
    """``(tau_iter, tau_epoch)`` each managed group holds, for the monitor: its width's ``tau_iter``, and
    ``tau_epoch`` in its own optimizer's steps per epoch (the given ``tau_epoch`` exactly at the base width)."""
    out: dict[tuple[int, int], tuple[float, float | None]] = {}
    for g in groups:
        if not g.decays or g.tau_iter is None:
            continue
        if tau_epoch is not None:
            held = tau_iters[g.optimizer_index] if isinstance(tau_iters, dict) else tau_iters
            epochs: float | None = tau_epoch * (g.tau_iter / held)  # times s ** (1 - alpha)
        else:
            m = optimizer_m.get(g.optimizer_index, run_m)
            epochs = g.tau_iter / m if m else None
        out[(g.optimizer_index, g.group_index)] = (g.tau_iter, epochs)
    return out


def _describe(callback: TimescaleCallback) -> str:
    for name in ("tau_epoch", "tau_iter", "token_budget"):
        value = getattr(callback, name)
        if value is not None:
            return f"{name}={value:g}"
    return "?"


def _fmt(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"


def _checked_steps_per_epoch(value: Any) -> dict[int, float] | None:
    """``steps_per_epoch``: ``None`` or a mapping from optimizer index (int >= 0) to a positive finite number."""
    if value is None:
        return None
    hint = (
        "use a mapping from optimizer index to the optimizer steps it takes per epoch, e.g. `{1: 50}` for a second"
        " optimizer stepped every other batch of 100 (manual optimization)."
    )
    if not isinstance(value, dict):
        raise _checks.invalid("TimescaleCallback", "steps_per_epoch", value, hint)
    try:
        return {
            _checks.integer("TimescaleCallback", "steps_per_epoch", i, hint, minimum=0): _checks.positive_number(
                "TimescaleCallback", "steps_per_epoch", m, hint
            )
            for i, m in value.items()
        }
    except ValueError:  # the message shows the whole mapping, not the one bad key or value
        raise _checks.invalid("TimescaleCallback", "steps_per_epoch", value, hint) from None


def _checked(name: str, value: float) -> float:
    """A positive finite number, with the callback's name in the message."""
    return _checks.positive_number("TimescaleCallback", name, value, f"`{name}` must be a positive finite number.")
