"""``TimescaleCallback``: set AdamW's weight decay from a target EMA timescale.

A thin adapter: it gathers ``N``, ``B`` and each param group's reference learning rate from the Trainer, then
writes the weight decay :mod:`lightning_tau.timescale` computes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities import rank_zero_warn
from torch.utils.hooks import RemovableHandle
from typing_extensions import override

from lightning_tau import _checks, timescale
from lightning_tau._constants import WriteMode
from lightning_tau._trainer import RunShapeReader
from lightning_tau.apply import check_size, resolve_coupling, write_coupled
from lightning_tau.callback_beta2 import check_adam_groups, check_beta2_epochs, hold_beta2
from lightning_tau.callback_decision import Decision, decide_and_write, decoupled_groups, keep_plans
from lightning_tau.callback_report import follow, plan_run, report_change, report_start
from lightning_tau.changes import miscounted_steps_warning, resume_changes
from lightning_tau.couplings import Coupling, Plan
from lightning_tau.decide import GroupTimescale, RunShape, step_writes
from lightning_tau.diagnostics.monitor import TimescaleMonitor
from lightning_tau.optim import unwrap_optimizer
from lightning_tau.optimizer_steps import StepCounter, check_optimizer_indices, check_steps_per_epoch
from lightning_tau.summary import describe_target, two_callbacks_message
from lightning_tau.target import Target, check_batch_rule, check_size_rule, check_target, check_width_exponent
from lightning_tau.token_budget import check_power_law, check_token_budget, power_law_num_params, power_law_tau_iter
from lightning_tau.transfer import TunedRun
from lightning_tau.width import FixedLambdaPitfall

__all__ = ["TimescaleCallback"]


class TimescaleCallback(Callback):
    r"""Set every AdamW param group's ``weight_decay`` so AdamW's EMA averages over ``tau_epoch`` epochs.

    AdamW's weights are an exponential moving average of recent updates with timescale
    ``tau_iter = 1 / (lr * weight_decay)`` optimizer steps, or ``tau_epoch = tau_iter / M`` epochs of ``M``
    optimizer steps (Wang & Aitchison, ICML 2025). The optimal ``tau_epoch`` stays roughly constant as the dataset
    and model grow, so this callback fixes it and derives the weight decay per param group:

    .. math:: \lambda = \frac{1}{\eta \, M \, \tau_{epoch}} \quad (= \frac{B}{\eta N \tau_{epoch}}
        \text{ when } M = N / B)

    At train start (after any checkpoint is restored) it reads ``M`` and each group's reference lr
    (:doc:`/howto/schedulers`) and writes ``weight_decay`` into every group with a positive one in every
    decoupled-decay optimizer (:doc:`/howto/optimizers`; muP groups: :doc:`/mup`). Before each epoch's first step it
    re-decides when ``M``, the accumulation or a reference lr changed (:doc:`/howto/callback`).

    Args:
        tau_epoch: target timescale in epochs. Exactly one of ``tau_epoch`` and ``tau_iter`` is required.
        tau_iter: target timescale in optimizer steps (more than one).
        dataset_size: ``N`` (samples or tokens per epoch, a positive whole number); with it ``M = N / B``.
            Required for an ``IterableDataset`` without a length.
        batch_size: global ``B`` (per-device x devices x accumulation, same unit as ``N``, a positive whole
            number); overrides what is read, and ``M = N / B``.
        coupling: how the weight decay follows the lr schedule (:doc:`/couplings`), the target held at each group's
            reference lr ``η_ref``: ``"constant"`` (default) writes ``λ_ref = 1 / (η_ref · tau_iter)`` once;
            ``"per_step"``, ``"lr_ratio"`` (AdamC) and ``"lr_squared"`` rewrite it before every optimizer step.
        mode: the older name of ``coupling`` (``"constant"``, ``"per_step"``); both only when they agree.
        skip_unsupported_optimizers: by default an optimizer with coupled L2 decay (plain ``Adam`` with
            ``weight_decay > 0``, ``SGD``, ...) or one not known to decay decoupled is an error (the EMA view needs
            decoupled decay; :func:`lightning_tau.register_decay_kind` declares your own). ``True`` leaves such
            optimizers untouched with a warning instead.
        verbose: print the pre-flight summary on rank zero.
        token_budget: single-epoch LLM pre-training: the run's training tokens ``D``, instead of ``tau_epoch`` or
            ``tau_iter``. The timescale is ``tau = a * (D / num_params) ** b`` of the planned optimizer steps, the
            power law of Bergsma et al. 2025 (:mod:`lightning_tau.token_budget`). Needs a finite ``max_steps`` or
            ``max_epochs``.
        num_params: the parameter count for tokens per parameter; default: the LightningModule's trainable
            parameters, counted at fit start. Pass your own (e.g. non-embedding) count to match another convention.
        power_law_coefficient: ``a`` of the power law (default 1.084, Bergsma et al. 2025).
        power_law_exponent: ``b`` of the power law (default -0.527).
        width_exponent: ``alpha``: every decaying group holds ``tau_iter * S ** (1 - alpha)``, ``S`` the model's muP
            width multiplier, so a hidden group gets ``lambda ∝ S ** alpha`` (:doc:`/mup`). ``1`` (default): Wang &
            Aitchison; Fan et al. 2025 ``0.5``; or a mapping from group name to ``alpha`` (others keep 1).
        size_exponent: ``e`` of ``tau_epoch ∝ N ** e`` (the finder's dataset-size axis): hold ``tau_epoch * (N /
            reference_dataset_size) ** e`` at the run's ``N``, re-decided when ``N`` changes (:doc:`/howto/callback`).
            ``0`` (default): Wang & Aitchison; ``-0.5`` the 1/2 rules; ``-1`` a fixed weight decay. In [-2, 2]; a
            nonzero one needs ``reference_dataset_size`` (a positive whole number) and a ``tau_epoch`` target.
        batch_exponent: ``e`` of ``tau_epoch ∝ B ** e`` (the finder's batch-size axis): times ``(B /
            reference_batch_size) ** e`` at the run's global ``B``, re-decided when ``B`` changes (accumulation
            schedules, ``BatchSizeFinder``). ``0`` (default) holds ``tau_epoch`` (``λ ∝ B``); ``1`` a fixed ``λ``.
            Checked as ``size_exponent``; ``reference_batch_size``: the ``B`` the ``tau_epoch`` was measured at.
        decay_vectors: ``True`` silences the warning, once before training, that a decaying group holds 1-D
            parameters (biases, norm weights: :doc:`/howto/callback`); it never changes the values written.
        steps_per_epoch: manual optimization: ``{optimizer_index: M}``, the steps that optimizer really takes per
            epoch when not stepped once per batch; without it each optimizer's steps are counted, with a warning
            where they differ from the ``M`` assumed (:doc:`/howto/callback`).
        beta2_epochs: hold Adam's ``β₂`` window at this many epochs, as ``tau_epoch`` holds AdamW's: at each decision
            write ``β₂ = 1 - 1 / (beta2_epochs · M)`` into every Adam-like group (one with a ``betas`` pair) of the
            optimizers it manages (:doc:`/couplings`). ``None`` (default) leaves ``betas`` alone.
        monitor: the EMA diagnostics (:doc:`/howto/dashboards`): ``True`` (default) a default ``TimescaleMonitor``, a
            configured one, or ``False``; one with the same ``prefix`` in the Trainer logs instead.

    Raises:
        ValueError: at construction for a bad argument; at fit start for a run it cannot manage or a timescale of
            one optimizer step or less (:doc:`/howto/callback`); always before the step that would use the value.

    Example:
        >>> import lightning.pytorch as pl
        >>> from lightning_tau import TimescaleCallback
        >>> trainer = pl.Trainer(max_epochs=50, callbacks=[TimescaleCallback(tau_epoch=5.0)], logger=False)
        >>> TimescaleCallback(tau_epoch=5.0, tau_iter=100)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleCallback` takes exactly one of `tau_epoch`, `tau_iter` and ...
    """

    def __init__(
        self,
        tau_epoch: float | None = None,
        *,
        tau_iter: float | None = None,
        dataset_size: int | None = None,
        batch_size: int | None = None,
        mode: WriteMode | None = None,
        coupling: Coupling | None = None,
        skip_unsupported_optimizers: bool = False,
        verbose: bool = True,
        token_budget: float | None = None,
        num_params: int | None = None,
        power_law_coefficient: float = timescale.POWER_LINES_COEFFICIENT,
        power_law_exponent: float = timescale.POWER_LINES_EXPONENT,
        width_exponent: float | dict[str, float] = 1.0,
        size_exponent: float = 0.0,
        reference_dataset_size: int | None = None,
        batch_exponent: float = 0.0,
        reference_batch_size: int | None = None,
        decay_vectors: bool = False,
        steps_per_epoch: dict[int, float] | None = None,
        monitor: bool | TimescaleMonitor = True,
        beta2_epochs: float | None = None,
    ) -> None:
        #: The diagnostics this callback logs itself (``None`` with ``monitor=False``).
        self.monitor: TimescaleMonitor | None = _checked_monitor(monitor)
        self.token_budget = check_token_budget(token_budget, tau_epoch=tau_epoch, tau_iter=tau_iter)
        self.num_params = None if num_params is None else check_size("TimescaleCallback", "num_params", num_params)
        self.power_law_coefficient, self.power_law_exponent = check_power_law(power_law_coefficient, power_law_exponent)
        self.tau_epoch, self.tau_iter = check_target(tau_epoch, tau_iter, token_budget=token_budget)
        self.size_exponent, self.reference_dataset_size = check_size_rule(
            size_exponent, reference_dataset_size, tau_iter=tau_iter, token_budget=token_budget
        )
        self.batch_exponent, self.reference_batch_size = check_batch_rule(
            batch_exponent, reference_batch_size, tau_iter=tau_iter, token_budget=token_budget
        )
        self.dataset_size = (
            None if dataset_size is None else check_size("TimescaleCallback", "dataset_size", dataset_size)
        )
        self.batch_size = None if batch_size is None else check_size("TimescaleCallback", "batch_size", batch_size)
        #: How the weight decay follows the lr schedule (``coupling``, else ``mode``, else ``"constant"``).
        self.coupling: Coupling = resolve_coupling("TimescaleCallback", mode, coupling)
        #: How it is written: once per decision (``"constant"``) or before every step (every other coupling).
        self.mode: WriteMode = "constant" if self.coupling == "constant" else "per_step"
        self.skip_unsupported_optimizers = _checks.flag(
            "TimescaleCallback", "skip_unsupported_optimizers", skip_unsupported_optimizers
        )
        self.verbose = _checks.flag("TimescaleCallback", "verbose", verbose)
        self.decay_vectors = _checks.flag("TimescaleCallback", "decay_vectors", decay_vectors)
        self.width_exponent = check_width_exponent(width_exponent)
        self.steps_per_epoch = check_steps_per_epoch(steps_per_epoch)
        self.beta2_epochs = check_beta2_epochs(beta2_epochs)
        # what one fit holds, its last decision among it: replaced at every fit start
        self._fit = _Fit(RunShapeReader(dataset_size=self.dataset_size, batch_size=self.batch_size))
        self._restored: dict[str, Any] | None = None  # the checkpoint's callback state (loaded before fit start)
        self._state_key: str | None = None

    @property
    def shape(self) -> RunShape | None:
        """The run's shape at the last decision (``None`` before train start)."""
        return None if self._fit.decision is None else self._fit.decision.shape

    @property
    def groups(self) -> list[GroupTimescale]:
        """The last decision per param group (empty before train start)."""
        return [] if self._fit.decision is None else self._fit.decision.groups

    @property
    def resolved_tau_iter(self) -> float | None:
        """The run's ``tau_iter`` at the last decision (``None`` before train start)."""
        return None if self._fit.decision is None else self._fit.decision.tau_iter

    @property
    def resolved_tau_epoch(self) -> float | None:
        """``resolved_tau_iter / M`` (``None`` before train start or when ``M`` is unknown)."""
        m = self.resolved_steps_per_epoch
        return None if self._fit.decision is None or not m else self._fit.decision.tau_iter / m

    @property
    def held_tau_epoch(self) -> float | None:
        """The ``tau_epoch`` held at the run's current ``N`` and ``B`` (``tau_epoch`` at both exponents 0; ``None``
        before train start or for a target in steps)."""
        return None if self._fit.decision is None else self._fit.decision.tau_epoch

    @property
    def resolved_num_params(self) -> float | None:
        """The parameter count of a ``token_budget`` target, fixed at fit start (``None`` without one)."""
        return self._fit.num_params

    @property
    def beta2(self) -> dict[tuple[int, int], float]:
        """The ``β₂`` written per ``(optimizer, group)`` at the last decision (``beta2_epochs`` given)."""
        return self._fit.beta2

    @property
    def plans(self) -> dict[tuple[int, int], Plan]:
        """The plan of each managed group ``(optimizer, group)`` under the coupling, from the last decision to the end
        of the run (:class:`~lightning_tau.couplings.Plan`; groups whose schedule cannot be looked ahead: none)."""
        return self._fit.plans

    @property
    def fixed_lambda_pitfalls(self) -> list[FixedLambdaPitfall]:
        """The muP groups whose ``configure_optimizers`` kept λ fixed across widths, found at train start."""
        return self._fit.fixed_lambda_pitfalls

    @property
    def _optimizer_m(self) -> dict[int, float]:
        """Optimizer index -> the ``M`` it was decided with, where not the run's (``lightning-tau plan`` reads it)."""
        return {} if self._fit.decision is None else self._fit.decision.optimizer_steps_per_epoch

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

        With a nonzero ``size_exponent`` (the dataset-size exponent measured, or a rule's) the tuned run's ``N`` is
        the ``reference_dataset_size`` unless you give another, so the big run holds
        ``tau_epoch x (N_big / N_tuned) ** size_exponent``.

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
        if kwargs.get("size_exponent", 0.0) != 0.0 and kwargs.get("reference_dataset_size") is None:
            kwargs["reference_dataset_size"] = tuned.dataset_size  # the N the tuned tau_epoch was measured at
        if kwargs.get("batch_exponent", 0.0) != 0.0 and kwargs.get("reference_batch_size") is None:
            kwargs["reference_batch_size"] = tuned.batch_size  # the B it was measured at
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
                two_callbacks_message([describe_target(c.tau_epoch, c.tau_iter, c.token_budget) for c in others])
            )
        self._remove_step_hooks()
        fit = self._fit = _Fit(RunShapeReader(dataset_size=self.dataset_size, batch_size=self.batch_size))
        fit.steps.restore(self._restored)  # a checkpoint's callback state is loaded before fit start
        check_optimizer_indices(self.steps_per_epoch, len(trainer.optimizers))
        prefixes = {cb.prefix for cb in trainer.callbacks if isinstance(cb, TimescaleMonitor)}  # type: ignore[attr-defined]
        # a monitor of the Trainer's with the same prefix logs the same keys: this callback's own stands down
        fit.own_monitor = None if self.monitor is None or self.monitor.prefix in prefixes else self.monitor
        if self.token_budget is not None:
            counted = sum(p.numel() for p in pl_module.parameters() if p.requires_grad)
            fit.num_params = power_law_num_params(self.token_budget, self.num_params, counted)
        fit.managed_optimizers, fit.weight_decay_before = decoupled_groups(
            trainer.optimizers, skip_unsupported=self.skip_unsupported_optimizers, warn=rank_zero_warn
        )
        check_adam_groups(trainer.optimizers, fit.managed_optimizers, self.beta2_epochs)
        if fit.own_monitor is not None:
            fit.own_monitor.on_fit_start(trainer, pl_module)

    @override
    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Read the run's shape, decide each managed group's ``weight_decay``, write it and print the summary."""
        self._fit.steps.resume(trainer.current_epoch)
        self._decide(trainer)
        self._hook_optimizers(trainer)
        if self._fit.own_monitor is not None:
            self._fit.own_monitor.on_train_start(trainer, pl_module)

    def _hook_optimizers(self, trainer: pl.Trainer) -> None:
        """Register this callback's step pre-hook on every optimizer (on the one that steps, inside any wrapper), so
        it runs however the loop steps it (automatic or manual optimization, ``use_pl_optimizer=False`` included).
        Hooks of an earlier fit are removed first: a second fit or a resume never writes twice."""
        self._remove_step_hooks()
        self._fit.step_hooks = [
            unwrap_optimizer(optimizer).register_step_pre_hook(
                functools.partial(self._before_optimizer_step, trainer, i)
            )
            for i, optimizer in enumerate(trainer.optimizers)
        ]

    def _remove_step_hooks(self) -> None:
        for handle in self._fit.step_hooks:
            handle.remove()
        self._fit.step_hooks = []

    def _before_optimizer_step(
        self, trainer: pl.Trainer, index: int, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any
    ) -> None:
        """Before every optimizer step: re-decide when :meth:`_Fit.stale`; under every coupling but ``"constant"``
        write this step's decay into ``optimizer`` (the one that steps: its groups are read)."""
        fit, stepped = self._fit, trainer.optimizers[index]
        if fit.stale(trainer.current_epoch, len(stepped.param_groups), id(stepped), trainer.accumulate_grad_batches):
            self._decide(trainer)
        if not trainer.lightning_module.automatic_optimization:  # count its real steps (see `steps_per_epoch`)
            fit.steps.step(index)
        if self.coupling != "constant":
            write_coupled(optimizer, self.coupling, fit.step_writes.get(id(stepped), ()))

    @override
    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Start counting the epoch's steps (Lightning does not call this for an epoch resumed inside)."""
        self._fit.steps.start_epoch(trainer.current_epoch)

    @override
    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        self._fit.steps.end_batch()
        if self._fit.own_monitor is not None:
            self._fit.own_monitor.on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)

    @override
    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Manual optimization: compare each optimizer's steps this epoch with the ``M`` it was decided with."""
        decision = self._fit.decision
        if pl_module.automatic_optimization or decision is None:
            return
        wrong = self._fit.steps.end_epoch(
            self._fit.managed_optimizers,
            planned=trainer.num_training_batches,
            stopped=trainer.should_stop,
            optimizer_m=decision.optimizer_steps_per_epoch,
            steps_per_epoch=decision.shape.steps_per_epoch,
        )
        for i, counted, used in wrong:
            rank_zero_warn(miscounted_steps_warning(i, counted, trainer.current_epoch, self._fit.steps.batches, used))

    @override
    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._remove_step_hooks()
        if self._fit.own_monitor is not None:
            self._fit.own_monitor.on_train_end(trainer, pl_module)

    @override
    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:
        self._remove_step_hooks()  # a failed fit calls no `on_train_end` and no `teardown`

    @override
    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self._remove_step_hooks()
        if self._fit.own_monitor is not None:
            self._fit.own_monitor.teardown(trainer, pl_module, stage)

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
            "coupling": self.coupling,
            "weight_decay": {g.name: g.weight_decay for g in self.groups},
            **self._fit.steps.state_dict(),  # manual optimization: "measured_steps" and "epoch_counts"
            "monitor": None if self.monitor is None else self.monitor.state_dict(),
        }

    @override
    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._restored = dict(state_dict)
        if self.monitor is not None and state_dict.get("monitor"):
            self.monitor.load_state_dict(state_dict["monitor"])

    # --- read -> decide -> apply -> report ------------------------------------------------------------------

    def _target(self) -> Target:
        """The target as given; a ``token_budget``'s ``tau_iter`` as the power law picked it at train start."""
        return Target(
            tau_epoch=self.tau_epoch,
            tau_iter=self.tau_iter if self.token_budget is None else self.resolved_tau_iter,
            width_exponent=self.width_exponent,
            size_exponent=self.size_exponent,
            reference_dataset_size=self.reference_dataset_size,
            batch_exponent=self.batch_exponent,
            reference_batch_size=self.reference_batch_size,
        )

    def _decide(self, trainer: pl.Trainer) -> None:
        """The one path for the start and for every change: read the shape, decide and write, then report."""
        fit, old = self._fit, self._fit.decision
        power_law = None
        if self.token_budget is not None and old is None:  # the power law's tau_iter is fixed at train start
            assert fit.num_params is not None
            power_law = functools.partial(
                power_law_tau_iter,
                self.token_budget,
                fit.num_params,
                coefficient=self.power_law_coefficient,
                exponent=self.power_law_exponent,
                planned_steps=trainer.estimated_stepping_batches,
            )
        target = self._target()
        decision = decide_and_write(
            trainer.optimizers,
            fit.shapes.read(trainer),
            target,
            power_law=power_law,
            managed_optimizers=fit.managed_optimizers,
            weight_decay_before=fit.weight_decay_before if old is None else old.weight_decay_before,
            pinned_lrs={} if old is None else old.pinned_lrs,
            scheduled={id(getattr(c.scheduler, "optimizer", None)) for c in trainer.lr_scheduler_configs},
            measured=fit.steps.measured,
            declared_steps_per_epoch=self.steps_per_epoch,
            epoch=None if old is None else trainer.current_epoch,
        )
        keep_plans(old, decision)  # the look-ahead is re-run only when something changed (see `report_change`)
        fit.decision, fit.decided_epoch = decision, trainer.current_epoch
        fit.step_writes = {id(trainer.optimizers[i]): w for i, w in step_writes(decision.groups).items()}
        fit.group_counts = {id(o): len(o.param_groups) for o in trainer.optimizers}
        fit.beta2 = hold_beta2(trainer.optimizers, decision, fit.managed_optimizers, self.beta2_epochs)
        monitors = [cb for cb in trainer.callbacks if isinstance(cb, TimescaleMonitor)]  # type: ignore[attr-defined]
        follow(monitors + ([fit.own_monitor] if fit.own_monitor is not None else []), fit.shapes, decision, target)
        if old is None:
            fit.plans, fit.fixed_lambda_pitfalls = report_start(
                trainer,
                decision,
                target,
                resume=resume_changes(self._restored, decision.shape, decision.tau_iter) if self._restored else [],
                decay_vectors=self.decay_vectors,
                summary=self.verbose,
                coupling=self.coupling,
                managed_optimizers=fit.managed_optimizers,
                beta2_epochs=self.beta2_epochs,
                sample_unit="tokens" if self.token_budget is not None else "samples or tokens",
            )
        elif report_change(trainer, old, decision, target):
            fit.plans = plan_run(trainer, decision, self.coupling)[1]


@dataclass
class _Fit:
    """What one fit holds: created with the callback and replaced at every fit start, so nothing of a fit carries
    into the next (a checkpoint's state comes through ``load_state_dict`` instead)."""

    shapes: RunShapeReader  # reads the run's shape at each decision; the run's monitors share it
    steps: StepCounter = field(default_factory=StepCounter)  # manual optimization: each optimizer's steps, counted
    own_monitor: TimescaleMonitor | None = None  # the callback's own monitor, unless the Trainer has one
    managed_optimizers: set[int] = field(default_factory=set)  # indices of the optimizers this callback manages
    weight_decay_before: dict[tuple[int, int], float] = field(default_factory=dict)  # the user's own, at fit start
    num_params: float | None = None  # a token budget's parameter count
    decision: Decision | None = None  # the last one (its `weight_decay_before` and `pinned_lrs` go to the next)
    decided_epoch: int | None = None
    # id(optimizer) -> (group index, weight decay at the reference lr, reference lr), for the per-step writes
    step_writes: dict[int, list[tuple[int, float, float]]] = field(default_factory=dict)
    group_counts: dict[int, int] = field(default_factory=dict)  # id(optimizer) -> len(param_groups) when decided
    step_hooks: list[RemovableHandle] = field(default_factory=list)  # the step pre-hooks of the fit in progress
    beta2: dict[tuple[int, int], float] = field(default_factory=dict)
    plans: dict[tuple[int, int], Plan] = field(default_factory=dict)
    fixed_lambda_pitfalls: list[FixedLambdaPitfall] = field(default_factory=list)

    def stale(self, epoch: int, groups: int, optimizer_id: int, accumulation: int) -> bool:
        """Whether a step must re-decide first: at an epoch's first step, when a group was added, or when the
        accumulation is not the one decided with (``GradientAccumulationScheduler({0: 2})`` sets epoch 0's after the
        train-start decision)."""
        return (
            epoch != self.decided_epoch
            or groups != self.group_counts.get(optimizer_id)
            or (self.decision is not None and accumulation != self.decision.shape.accumulation)
        )


def _checked_monitor(monitor: object) -> TimescaleMonitor | None:
    """``TimescaleCallback(monitor=...)``: a default ``TimescaleMonitor`` for ``True``, ``None`` for ``False``, the
    user's own as given."""
    if not isinstance(monitor, (bool, TimescaleMonitor)):
        raise _checks.invalid(
            "TimescaleCallback",
            "monitor",
            monitor,
            "use True (log the EMA diagnostics with a default `TimescaleMonitor`), False (log nothing), or a"
            " configured `TimescaleMonitor(...)`.",
        )
    if monitor is not True:
        return monitor or None
    default = TimescaleMonitor()
    default._quiet_without_logger = True  # logging is the default here, not something the user asked for
    return default
