"""``TimescaleCallback``: set AdamW's weight decay from a target EMA timescale.

A thin adapter: it gathers ``N``, ``B`` and each param group's reference learning rate from the Trainer, then
writes the weight decay :mod:`lightning_tau.timescale` computes.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities import rank_zero_info, rank_zero_warn
from typing_extensions import override

from lightning_tau import timescale
from lightning_tau._trainer import read_dataset_size, read_global_batch_size
from lightning_tau.optim import decay_kind, group_lr, group_names, group_width_mult, reference_lr
from lightning_tau.schedule import ScheduledStep, planned_lr_sums
from lightning_tau.summary import GroupTimescale, format_summary
from lightning_tau.transfer import TunedRun
from lightning_tau.width import FixedLambdaPitfall, GroupRate, find_fixed_lambda_pitfall, format_fixed_lambda_pitfall

__all__ = ["TimescaleCallback"]

Mode = Literal["constant", "per_step"]


class TimescaleCallback(Callback):
    r"""Set every AdamW param group's ``weight_decay`` so AdamW's EMA averages over ``tau_epoch`` epochs.

    AdamW's weights are an exponential moving average of recent updates with timescale
    ``tau_iter = 1 / (lr * weight_decay)`` optimizer steps, or ``tau_epoch = tau_iter * B / N`` epochs
    (Wang & Aitchison, ICML 2025). The optimal ``tau_epoch`` stays roughly constant as the dataset and model
    grow, so this callback fixes it and derives the weight decay per param group:

    .. math:: \lambda = \frac{B}{\eta N \tau_{epoch}}

    When training starts (``on_train_start``, after the train dataloaders are set up and any checkpoint is
    restored, before the first optimizer step) it reads

    - ``N``: ``dataset_size`` if given, else the summed length of the train datasets the Trainer uses (fewer
      samples when ``limit_train_batches`` shortens the epoch);
    - ``B``: ``batch_size`` if given, else per-device batch size x ``trainer.world_size`` x
      ``trainer.accumulate_grad_batches``; with several train dataloaders their batch sizes are summed;
    - ``lr``: each group's reference learning rate: ``max_lr`` (``OneCycleLR``), else ``initial_lr`` (any torch
      scheduler), else ``lr``: ``tau`` is defined at the base lr, as in the paper, not at a warm-up value;

    and writes ``weight_decay`` into every param group of every AdamW-family optimizer (``AdamW`` and its
    subclasses, ``Adam(decoupled_weight_decay=True)``, mup's ``MuAdamW``) whose ``weight_decay`` is positive.
    Groups set to ``0`` (biases, norms) stay ``0``. Each group uses its own lr, so muP groups with
    ``lr / width_mult`` get ``weight_decay x width_mult`` automatically.

    ``N`` and ``B`` may both be counted in tokens (language models) instead of samples; only their ratio, the
    steps per epoch, matters.

    Args:
        tau_epoch: target timescale in epochs. Exactly one of ``tau_epoch`` and ``tau_iter`` is required.
        tau_iter: target timescale in optimizer steps.
        dataset_size: ``N`` (samples or tokens per epoch); overrides what is read from the dataloaders.
            Required for an ``IterableDataset`` without a length.
        batch_size: global ``B`` (per-device x devices x accumulation, same unit as ``N``); overrides what is read.
        mode: ``"constant"`` (default) writes the weight decay once and leaves it while the scheduler moves the lr,
            as the paper does. ``"per_step"`` rewrites it before every optimizer step so
            ``lr_t * weight_decay_t = 1 / tau_iter`` holds at every step (steps with ``lr_t = 0`` keep the last
            value; they decay nothing either way).
        skip_unsupported_optimizers: by default an optimizer with coupled L2 decay (plain ``Adam`` with
            ``weight_decay > 0``, ``SGD``, ...) is an error, because the EMA view needs decoupled decay. Set
            ``True`` to leave such optimizers untouched with a warning instead.
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

    Raises:
        ValueError: at construction for a bad argument; at fit start for an optimizer with coupled decay, no
            param group to manage, or an ``N`` or ``B`` that cannot be read. Always before any weight changes.

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
        mode: Mode = "constant",
        skip_unsupported_optimizers: bool = False,
        verbose: bool = True,
        token_budget: float | None = None,
        num_params: int | None = None,
        power_law_coefficient: float = timescale.POWER_LINES_COEFFICIENT,
        power_law_exponent: float = timescale.POWER_LINES_EXPONENT,
    ) -> None:
        if token_budget is not None and (tau_epoch is not None or tau_iter is not None):
            raise ValueError(
                f"`TimescaleCallback(token_budget={token_budget!r})` picks the timescale from the power law; do not"
                f" also pass tau_epoch={tau_epoch!r} or tau_iter={tau_iter!r}. Give exactly one of the three."
            )
        self.token_budget = None if token_budget is None else _checked("token_budget", token_budget)
        self.num_params = None if num_params is None else _checked("num_params", num_params)
        self.power_law_coefficient = _checked("power_law_coefficient", power_law_coefficient)
        if isinstance(power_law_exponent, bool) or not math.isfinite(power_law_exponent):
            raise ValueError(
                f"`TimescaleCallback(power_law_exponent={power_law_exponent!r})` is not valid: use a finite number"
                f" (default {timescale.POWER_LINES_EXPONENT})."
            )
        self.power_law_exponent = float(power_law_exponent)
        self.resolved_num_params: float | None = None
        self.fixed_lambda_pitfalls: list[FixedLambdaPitfall] = []
        if token_budget is None and (tau_epoch is None) == (tau_iter is None):
            raise ValueError(
                "`TimescaleCallback` takes exactly one of `tau_epoch`, `tau_iter` and `token_budget`,"
                f" got tau_epoch={tau_epoch!r} and tau_iter={tau_iter!r}."
            )
        self.tau_epoch = None if tau_epoch is None else _checked("tau_epoch", tau_epoch)
        self.tau_iter = None if tau_iter is None else _checked("tau_iter", tau_iter)
        self.dataset_size = None if dataset_size is None else _checked("dataset_size", dataset_size)
        self.batch_size = None if batch_size is None else _checked("batch_size", batch_size)
        if mode not in ("constant", "per_step"):
            raise ValueError(f"`TimescaleCallback(mode={mode!r})` is not supported. Use 'constant' or 'per_step'.")
        self.mode: Mode = mode
        self.skip_unsupported_optimizers = skip_unsupported_optimizers
        self.verbose = verbose

        # resolved at train start
        self.groups: list[GroupTimescale] = []
        self.resolved_tau_iter: float | None = None
        self.resolved_tau_epoch: float | None = None
        self.resolved_dataset_size: float | None = None
        self.resolved_batch_size: float | None = None
        self._before: dict[tuple[int, int], float] = {}
        self._managed: dict[int, list[int]] = {}  # id(optimizer) -> indices of managed groups
        self._restored: dict[str, Any] | None = None
        self._world_size: int | None = None
        self._state_key: str | None = None

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
        self._before = {}
        if self.token_budget is not None:
            self.resolved_num_params = self.num_params or float(
                sum(p.numel() for p in pl_module.parameters() if p.requires_grad)
            )
        supported = 0
        for i, optimizer in enumerate(trainer.optimizers):
            kind = decay_kind(optimizer)
            if kind == "coupled":
                if not self.skip_unsupported_optimizers:
                    raise ValueError(
                        f"`TimescaleCallback` needs decoupled weight decay, but optimizer {i}"
                        f" ({type(optimizer).__name__}) adds `weight_decay` to the gradient (L2). AdamW's EMA"
                        " view does not hold there. Use `torch.optim.AdamW` (or"
                        " `Adam(decoupled_weight_decay=True)`), or pass"
                        " `TimescaleCallback(skip_unsupported_optimizers=True)` to leave this optimizer alone."
                    )
                rank_zero_warn(
                    f"`TimescaleCallback` leaves optimizer {i} ({type(optimizer).__name__}) alone: its weight"
                    " decay is coupled (L2), not AdamW's decoupled decay."
                )
                continue
            if kind != "decoupled":
                continue
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

    @override
    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Resolve ``N``, ``B`` and ``tau_iter`` and write each managed group's ``weight_decay``."""
        self._world_size = trainer.world_size
        sources = self._resolve_shape(trainer)
        self._check_resume()
        self.groups, self._managed = [], {}
        names = group_names(trainer.optimizers)
        for i, optimizer in enumerate(trainer.optimizers):
            for j, group in enumerate(optimizer.param_groups):
                before = self._before.get((i, j))
                managed = before is not None and before > 0
                ref_lr = reference_lr(group)
                if managed:
                    if not (ref_lr > 0 and math.isfinite(ref_lr)):
                        raise ValueError(
                            f"`TimescaleCallback` cannot set a timescale for param group {names[i][j]!r}: its"
                            f" reference learning rate is {ref_lr!r}. Give it a positive lr, or"
                            " `weight_decay=0` to leave it out."
                        )
                    group["weight_decay"] = timescale.weight_decay_for_tau_iter(ref_lr, self.resolved_tau_iter)
                    self._managed.setdefault(id(optimizer), []).append(j)
                self.groups.append(
                    GroupTimescale(
                        name=names[i][j],
                        optimizer_index=i,
                        group_index=j,
                        num_params=sum(p.numel() for p in group["params"]),
                        reference_lr=ref_lr,
                        weight_decay_before=float(group.get("weight_decay", 0.0)) if before is None else before,
                        weight_decay=float(group.get("weight_decay", 0.0)),
                        decays=managed,
                        width_mult=group_width_mult(group),
                    )
                )
        self._report_width(trainer)
        if self.mode == "per_step":
            for optimizer in trainer.optimizers:
                self._write_per_step(optimizer)
        planned_steps = self._plan(trainer)
        self._report(planned_steps, sources)

    @override
    def on_before_optimizer_step(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, optimizer: torch.optim.Optimizer
    ) -> None:
        """In ``"per_step"`` mode, hold ``lr_t * weight_decay_t = 1 / tau_iter`` for the step about to run."""
        if self.mode == "per_step":
            self._write_per_step(optimizer)

    @override
    def state_dict(self) -> dict[str, Any]:
        return {
            "tau_iter": self.resolved_tau_iter,
            "tau_epoch": self.resolved_tau_epoch,
            "dataset_size": self.resolved_dataset_size,
            "global_batch_size": self.resolved_batch_size,
            "world_size": self._world_size,
            "mode": self.mode,
            "weight_decay": {g.name: g.weight_decay for g in self.groups},
        }

    @override
    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._restored = dict(state_dict)

    # --- helpers -------------------------------------------------------------------------------------------

    def _resolve_shape(self, trainer: pl.Trainer) -> list[str]:
        """Fill ``resolved_*``: ``N`` and ``B`` (read unless given) and both timescales."""
        sources = []
        need_shape = self.tau_iter is None and self.token_budget is None
        n: float | None = self.dataset_size
        b: float | None = self.batch_size
        try:
            if n is None:
                n, source = read_dataset_size(trainer)
                sources.append(f"N from the {source}.")
            if b is None:
                b, source = read_global_batch_size(trainer)
                sources.append(f"B = {source}.")
        except ValueError:
            if need_shape:
                raise
            # with `tau_iter` given, N and B only label the summary
            n = b = None
        self.resolved_dataset_size, self.resolved_batch_size = n, b
        if self.token_budget is not None:
            sources.append(self._resolve_power_law(trainer))
        elif self.tau_iter is not None:
            self.resolved_tau_iter = self.tau_iter
            self.resolved_tau_epoch = (
                timescale.tau_epoch_from_tau_iter(self.tau_iter, n, b) if n is not None and b is not None else None
            )
        else:
            assert self.tau_epoch is not None and n is not None and b is not None
            self.resolved_tau_epoch = self.tau_epoch
            self.resolved_tau_iter = timescale.tau_iter_from_tau_epoch(self.tau_epoch, n, b)
        return sources

    def _resolve_power_law(self, trainer: pl.Trainer) -> str:
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
        self.resolved_tau_iter = tau * float(planned)
        n, b = self.resolved_dataset_size, self.resolved_batch_size
        self.resolved_tau_epoch = (
            timescale.tau_epoch_from_tau_iter(self.resolved_tau_iter, n, b) if n is not None and b is not None else None
        )
        return (
            f"tau from the power law: D={self.token_budget:,.0f} tokens / {self.resolved_num_params:,.0f} params ="
            f" {tokens_per_param:.4g} tokens per parameter -> tau = {self.power_law_coefficient:g} *"
            f" TPP^{self.power_law_exponent:g} = {tau:.4g} of the run ({planned:,.0f} planned steps)."
        )

    def _report_width(self, trainer: pl.Trainer) -> None:
        """Warn about fixed-λ muP groups (what ``configure_optimizers`` set vs. what was written); log ``s``."""
        rates = [GroupRate(g.name, g.reference_lr, g.weight_decay_before, g.width_mult) for g in self.groups]
        self.fixed_lambda_pitfalls = find_fixed_lambda_pitfall([r for r, g in zip(rates, self.groups) if g.decays])
        if self.fixed_lambda_pitfalls:
            written = {g.name: g.weight_decay for g in self.groups}
            rank_zero_warn(
                format_fixed_lambda_pitfall(
                    self.fixed_lambda_pitfalls, written=[written[p.name] for p in self.fixed_lambda_pitfalls]
                )
            )
        mults = {f"timescale/width_mult/{g.name}": g.width_mult for g in self.groups if g.width_mult is not None}
        if mults and trainer.is_global_zero:
            for logger in trainer.loggers:
                logger.log_metrics(mults, step=trainer.global_step)

    def _check_resume(self) -> None:
        """On resume, warn when the run's shape changed since the checkpoint (the new values win)."""
        old = self._restored
        if not old:
            return
        changes = [
            f"{key} {old.get(key)!r} -> {new!r}"
            for key, new in (
                ("dataset_size", self.resolved_dataset_size),
                ("world_size", self._world_size),
                ("global_batch_size", self.resolved_batch_size),
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

    def _write_per_step(self, optimizer: torch.optim.Optimizer) -> None:
        assert self.resolved_tau_iter is not None
        for j in self._managed.get(id(optimizer), ()):
            group = optimizer.param_groups[j]
            lr = group_lr(group)
            if lr > 0:  # timescale.weight_decay_for_tau_iter, inlined: this runs before every optimizer step
                group["weight_decay"] = 1.0 / (lr * self.resolved_tau_iter)

    def _plan(self, trainer: pl.Trainer) -> float | None:
        """Estimate each managed group's ``sum_t lr_t * weight_decay`` over the planned steps."""
        planned = trainer.estimated_stepping_batches
        if not math.isfinite(planned) or planned < 0:  # endless, or an iterable dataset without `max_steps`
            return None
        remaining = max(0, int(planned) - trainer.global_step)
        assert self.resolved_tau_iter is not None
        if self.mode == "per_step":
            for g in self.groups:
                if g.decays:
                    g.planned_timescales = remaining / self.resolved_tau_iter
            return planned
        steps_per_epoch = trainer.num_training_batches / trainer.accumulate_grad_batches
        for i, optimizer in enumerate(trainer.optimizers):
            specs = [
                ScheduledStep(c.scheduler, c.interval, c.frequency)
                for c in trainer.lr_scheduler_configs
                if getattr(c.scheduler, "optimizer", None) is optimizer
            ]
            sums = planned_lr_sums(optimizer, specs, remaining, steps_per_epoch) if specs else None
            for g in self.groups:
                if g.optimizer_index != i or not g.decays:
                    continue
                lr_sum = sums[g.group_index] if sums is not None else (None if specs else remaining * g.reference_lr)
                g.planned_timescales = None if lr_sum is None else lr_sum * g.weight_decay
        return planned

    def _report(self, planned_steps: float | None, sources: list[str]) -> None:
        assert self.resolved_tau_iter is not None
        if self.resolved_tau_iter < 1:
            rank_zero_warn(
                f"`TimescaleCallback`: tau_iter={self.resolved_tau_iter:.3g} is below one optimizer step, so"
                " `lr * weight_decay > 1` and every step shrinks the weights past zero. Use a larger `tau_epoch`"
                " (or `tau_iter`)."
            )
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
                    dataset_size=self.resolved_dataset_size,
                    global_batch_size=self.resolved_batch_size,
                    planned_steps=planned_steps,
                    sources=sources,
                )
            )


def _checked(name: str, value: float) -> float:
    """Validate a constructor argument eagerly, with the callback's name in the message."""
    try:
        return timescale.check_positive(name, value)
    except ValueError:
        raise ValueError(
            f"`TimescaleCallback({name}={value!r})` is not valid: `{name}` must be a positive finite number."
        ) from None
