"""``TimescaleMonitor``: log AdamW's EMA timescale, weight magnitudes and their predicted equilibrium.

Like Lightning's ``LearningRateMonitor``: per param group, at the Trainer's ``log_every_n_steps``, through
``trainer.loggers``. The per-step work is a few floats per group; the weights are read only at logging steps, in
one fused pass (:mod:`lightning_tau.diagnostics.stats`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import TensorBoardLogger
from lightning.pytorch.strategies import FSDPStrategy, ModelParallelStrategy
from lightning.pytorch.utilities import rank_zero_info, rank_zero_warn
from lightning.pytorch.utilities.exceptions import MisconfigurationException
from typing_extensions import override

from lightning_tau import _checks, timescale
from lightning_tau._trainer import RunShapeReader
from lightning_tau.couplings import Ledger
from lightning_tau.decide import RunShape
from lightning_tau.diagnostics import dashboards
from lightning_tau.diagnostics.metrics import check_prefix, group_metrics, ledger_state, restored_ledger
from lightning_tau.diagnostics.stats import (
    DEFAULT_CHUNK_NUMEL,
    WeightStatsPass,
    all_reduce_sums,
    group_sums,
    magnitudes,
)
from lightning_tau.optim import group_lr, group_names, group_width_mult, reference_lr, unit_rms_updates

__all__ = ["TimescaleMonitor"]


@dataclass
class _GroupState:
    """What the monitor carries for one param group between logging steps (O(1) floats)."""

    name: str
    optimizer_index: int
    group_index: int
    width_mult: float | None
    unit_rms_updates: bool = True  # the optimizer's update has RMS ~1 (Adam-like), so sqrt(lr / 2 wd) applies
    ledger: Ledger = field(default_factory=Ledger)  # init memory, timescales elapsed and the window, step by step
    hparams: dict[str, float] | None = None  # reference lr and weight decay at the first optimizer step
    last_lr: float | None = None  # lr and weight decay the last optimizer step used (the logged values)
    last_weight_decay: float | None = None


class TimescaleMonitor(Callback):
    r"""Log each param group's EMA timescale, weight magnitude and the magnitude AdamW's EMA view predicts.

    Every ``logging_interval`` optimizer steps (default: the Trainer's ``log_every_n_steps``) it logs, per param
    group ``g`` (the group's ``name``, else ``pg1``, ``pg2``, ... as ``LearningRateMonitor`` names them; groups
    sharing a ``name`` get their index after it, ``all/pg1``, ``all/pg2``), under ``{prefix}/{quantity}/{g}``:
    ``lr``, ``weight_decay``, the instantaneous ``tau_iter``
    :math:`= 1/(\eta_t\lambda_t)` and ``tau_epoch`` (when ``N`` and ``B`` are known), which grow as the lr
    decays, next to the group's own targets ``tau_iter_target`` and ``tau_epoch_target`` when a
    :class:`~lightning_tau.TimescaleCallback` manages it, ``width_mult`` (muP), ``weight_mean_abs``, ``weight_rms``,
    the predictions ``rms_equilibrium`` :math:`= \sqrt{\eta_t / 2\lambda_t}` and ``coherent_bound``
    :math:`= 1/\lambda_t`, ``rms_ratio`` (measured / predicted RMS), ``wd_mean_abs`` :math:`= \lambda_t\,
    \overline{|w|}`, ``init_memory`` :math:`= \prod_t (1-\eta_t\lambda_t)`, ``timescales_elapsed``
    :math:`= \sum_t \eta_t\lambda_t` and ``window_epochs``, the mean age in epochs of the updates the weights hold
    (:class:`~lightning_tau.couplings.Ledger`, folded in O(1) per step). Groups without weight decay get only ``lr``,
    ``weight_decay`` and the magnitudes. ``docs/diagnostics.rst`` lists every key with its formula.

    With a :class:`~lightning.pytorch.loggers.TensorBoardLogger` it also writes a custom-scalars layout at train
    start and, at train end, an HParams record (timescales, ``N``, ``B``, per-group lr / weight decay / width,
    next to the module's and datamodule's own ``save_hyperparameters``) with the run's final monitored metric,
    else every logged scalar (a run without validation shows its last training loss), else the timescales elapsed:
    the record is always written. TensorBoard shows only a run's first record, so Lightning's own fit-start record
    (written for a module that calls ``save_hyperparameters`` with the logger's default ``hp_metric``) is kept out
    of the event file; its ``hparams.yaml`` is written as before.

    ``N`` and ``B`` come from a :class:`~lightning_tau.TimescaleCallback` in the same Trainer when there is one,
    else from the train dataloaders; when neither works the ``tau_epoch`` keys are left out. The callback also
    pushes, after each decision, what each group holds (``tau_iter * S ** (1 - width_exponent)`` in a muP model)
    and each optimizer's own steps per epoch under manual optimization, so every group's ``tau_epoch`` and targets
    are in its own optimizer's steps. Its place in
    ``callbacks`` does not matter: it reads each step's lr and weight decay in an optimizer step hook, after every
    callback has written them.

    Args:
        logging_interval: log every this many optimizer steps; ``None`` uses ``Trainer(log_every_n_steps=...)``.
        per_tensor: also log ``weight_mean_abs`` and ``weight_rms`` of every parameter tensor, under
            ``{prefix}/weight_rms/{g}/{parameter name}``.
        prefix: first component of every key.
        dashboards: write the TensorBoard custom-scalars layout.
        log_hparams: record hparams at train end (TensorBoard HParams tab; a flat dict for other loggers).
        hparams_metric: the metric shown next to the hparams; ``None`` takes the ``ModelCheckpoint`` or
            ``EarlyStopping`` monitor. When that metric was not logged, every scalar in
            ``trainer.callback_metrics`` is shown instead.
        sharded: whether parameters are sharded across ranks, so the sums must be all-reduced (one collective per
            logging step). ``None`` detects it: FSDP / ModelParallel strategies and DTensor parameters. With
            replicated parameters (DDP) only rank zero reads the weights and no collective is issued.
        chunk_numel: elements per chunk of the CPU statistics pass (its scratch buffer).

    Raises:
        ValueError: at construction, for an argument of the wrong type or value.

    Example:
        >>> import lightning.pytorch as pl
        >>> trainer = pl.Trainer(callbacks=[TimescaleMonitor(logging_interval=10)], logger=False)
        >>> TimescaleMonitor(logging_interval=0)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleMonitor(logging_interval=0)` is not valid: use a positive ...
    """

    def __init__(
        self,
        logging_interval: int | None = None,
        *,
        per_tensor: bool = False,
        prefix: str = "timescale",
        dashboards: bool = True,
        log_hparams: bool = True,
        hparams_metric: str | None = None,
        sharded: bool | None = None,
        chunk_numel: int = DEFAULT_CHUNK_NUMEL,
    ) -> None:
        owner = "TimescaleMonitor"
        if logging_interval is not None:
            hint = "use a positive int, or None for the Trainer's `log_every_n_steps`."
            _checks.positive_int(owner, "logging_interval", logging_interval, hint)
        for name, value in (("per_tensor", per_tensor), ("dashboards", dashboards), ("log_hparams", log_hparams)):
            _checks.flag(owner, name, value)
        if sharded is not None:
            _checks.flag(owner, "sharded", sharded, "use True, False, or None to detect it.")
        check_prefix(owner, prefix)
        if hparams_metric is not None:
            _checks.non_empty(owner, "hparams_metric", hparams_metric, "use a logged metric's name.")
        _checks.positive_int(owner, "chunk_numel", chunk_numel, "use a positive int.")
        self.logging_interval = logging_interval
        self.per_tensor = per_tensor
        self.prefix = prefix
        self.dashboards = dashboards
        self.log_hparams = log_hparams
        self.hparams_metric = hparams_metric
        self.sharded = sharded
        self.chunk_numel = chunk_numel

        self.groups: list[_GroupState] = []
        self.optimizer_steps = 0
        self._stats_pass = WeightStatsPass(chunk_numel)
        self._interval = 1
        self._reduce = False
        self._last_logged_step = -1
        self._optimizer_index: dict[int, int] = {}
        self._param_names: dict[int, str] = {}
        # The run's shape (``M``, ``N``, ``B``; see `run_shape`): a `TimescaleCallback`'s reader, shared after its
        # first decision, else a reader of the monitor's own, read once per epoch.
        self._shapes = RunShapeReader()
        #: The run's timescale (``None``: no target, not logged): pushed by a ``TimescaleCallback`` (the base
        #: width's), or set by hand on a monitor used alone; logged for every decaying group that has no target below.
        self.target_tau_iter: float | None = None
        self.target_tau_epoch: float | None = None
        #: ``(optimizer index, group index) -> (tau_iter, tau_epoch)`` each group a ``TimescaleCallback`` manages
        #: holds (its width's, in its own optimizer's steps); ``None`` when no callback pushed them.
        self.group_targets: dict[tuple[int, int], tuple[float, float | None]] | None = None
        #: Optimizer index -> its steps per epoch where it is not the run's ``M`` (manual optimization), pushed by a
        #: ``TimescaleCallback``: that optimizer's groups' ``tau_epoch`` is in its own steps.
        self.optimizer_steps_per_epoch: dict[int, float] = {}
        #: A ``TimescaleCallback``'s dataset-size and batch-size rules, for the HParams record (``size_exponent``,
        #: ``reference_dataset_size``, ``batch_exponent``, ``reference_batch_size``, ``tau_epoch_at_reference_size``);
        #: ``None`` without one (both exponents 0).
        self.size_rule: dict[str, float] | None = None
        self._optimizers: list[torch.optim.Optimizer] = []
        self._quiet_without_logger = False  # a `TimescaleCallback`'s default monitor says nothing with no logger
        self._group_counts: dict[int, int] = {}
        self._states_of: dict[int, list[_GroupState]] = {}  # optimizer index -> its groups' states (per-step hook)
        self._restored: dict[str, Any] | None = None
        self._hooks: list[Any] = []
        self._deferred: list[TensorBoardLogger] = []  # loggers whose default hp_metric is off for Lightning's write
        # Lightning reads `state_key` around every hook call (to name the profiler section): build it once
        self._state_key = self._generate_state_key(prefix=self.prefix)

    @property
    def state_key(self) -> str:
        return self._state_key

    @property
    def run_shape(self) -> RunShape | None:
        """The run's shape (``M``, ``N``, ``B``): the one a ``TimescaleCallback`` in the same Trainer decided with,
        else read once per epoch (``None`` before, or when the epoch length is unknown)."""
        return self._shapes.shape

    @override
    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Keep Lightning's fit-start hparams record out of TensorBoard's event file, so that the monitor's shows.

        TensorBoard keeps only a run's first hparams record, and Lightning writes one (the module's hparams and
        ``hp_metric``) right after this hook when the module or datamodule called ``save_hyperparameters``. For
        that one write the logger's default ``hp_metric`` is off, so Lightning still records the hparams (its
        ``hparams.yaml``) but writes no event; the monitor's record at train end carries them next to its own.
        """
        self._deferred = []
        if not self.log_hparams:
            return
        for logger in trainer.loggers:
            if isinstance(logger, TensorBoardLogger) and dashboards.lightning_wrote_hparams(logger, trainer):
                dashboards.set_default_hp_metric(logger, False)
                self._deferred.append(logger)

    @override
    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Name the groups, restore the init-memory product from a checkpoint, and write the dashboard layout."""
        self._restore_hp_metric()  # Lightning's fit-start hparams write is done
        self._interval = self.logging_interval or trainer.log_every_n_steps
        restored = self._restored or {}
        self.groups, self._optimizer_index, self._group_counts, self._states_of = [], {}, {}, {}
        self._optimizers = list(trainer.optimizers)
        self._remove_hooks()
        for i, optimizer in enumerate(self._optimizers):
            self._optimizer_index[id(optimizer)] = i
            # A step post-hook sees exactly the lr and weight decay the step used: after any callback's
            # `on_before_optimizer_step` rewrite, before a step-interval scheduler moves the lr. It does not run
            # for steps that are skipped (e.g. AMP overflow), which decay nothing.
            self._hooks.append(optimizer.register_step_post_hook(self._after_optimizer_step))
            self._add_groups(i, restored)
        self.optimizer_steps = int(restored.get("optimizer_steps", 0))
        self._param_names = {id(p): n for n, p in pl_module.named_parameters()}
        self._reduce = self.sharded if self.sharded is not None else _is_sharded(trainer)
        if not self._shapes.decided:
            self._shapes.reset()
        self._last_logged_step = -1
        if not trainer.loggers:
            if self._quiet_without_logger:  # TimescaleCallback's default monitor: nothing asked for, nothing to say
                return
            raise MisconfigurationException(  # as Lightning's LearningRateMonitor does
                "Cannot use `TimescaleMonitor` callback with `Trainer(logger=False)`: it has nowhere to log. Give the"
                " Trainer a logger, or remove the monitor (`TimescaleCallback(monitor=True)`, its default, logs"
                " when there is a logger and stays quiet when there is none)."
            )
        if self.dashboards and trainer.is_global_zero:
            decaying = [
                g.name
                for g in self.groups
                if float(trainer.optimizers[g.optimizer_index].param_groups[g.group_index].get("weight_decay", 0)) > 0
            ]  # a group without decay has no predicted band to chart
            layout = dashboards.custom_scalars_layout(self.prefix, decaying)
            for logger in trainer.loggers:
                if isinstance(logger, TensorBoardLogger):
                    dashboards.write_custom_scalars(logger, layout)

    def _add_groups(self, index: int, restored: dict[str, Any] | None = None) -> None:
        """Start tracking the groups of optimizer ``index`` not tracked yet (all at train start; added ones later)."""
        optimizer = self._optimizers[index]
        names = group_names(self._optimizers)[index]
        for j in range(self._group_counts.get(index, 0), len(optimizer.param_groups)):
            self.groups.append(
                _GroupState(
                    name=names[j],
                    optimizer_index=index,
                    group_index=j,
                    width_mult=group_width_mult(optimizer.param_groups[j]),
                    unit_rms_updates=unit_rms_updates(optimizer),
                    ledger=restored_ledger(restored or {}, names[j]),
                )
            )
        self._group_counts[index] = len(optimizer.param_groups)
        self._states_of[index] = [s for s in self.groups if s.optimizer_index == index]

    def _after_optimizer_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        """Fold the step's ``1 - lr_t * wd_t`` into each group's init memory: O(groups) floats, no tensors."""
        index = self._optimizer_index.get(id(optimizer))
        if index is None:
            return
        self.optimizer_steps += index == 0
        param_groups = optimizer.param_groups
        if len(param_groups) != self._group_counts[index]:  # a group was added mid-fit (e.g. `BaseFinetuning`)
            self._add_groups(index)
        for state in self._states_of[index]:
            group = param_groups[state.group_index]
            lr, wd = group["lr"], group.get("weight_decay", 0.0)
            if type(lr) is not float:  # a tensor lr (or an int): the general reader, off the common path
                lr = group_lr(group)
            if type(wd) is not float:
                wd = float(wd)
            state.last_lr, state.last_weight_decay = lr, wd
            if state.hparams is None:
                state.hparams = {"lr": reference_lr(group), "weight_decay": wd}
            if wd > 0:
                state.ledger.step(lr, lr * wd)

    @override
    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        """At logging steps, read the weights once and log every key."""
        step = trainer.global_step
        if step == 0 or step == self._last_logged_step or step % self._interval != 0:
            return
        self._last_logged_step = step
        if not trainer.loggers or not (self._reduce or trainer.is_global_zero):
            return
        metrics = self._collect(trainer)
        if trainer.is_global_zero:
            for logger in trainer.loggers:
                logger.log_metrics(metrics, step=step)

    @override
    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Record the hparams with the run's final metrics (never empty: see :meth:`_final_metrics`)."""
        self._remove_hooks()
        if not (self.log_hparams and trainer.loggers and trainer.is_global_zero):
            return
        params = self._hparams(trainer)
        metrics = self._final_metrics(trainer)
        # the module's and datamodule's own hparams, as Lightning would have recorded them, in the same record
        lightning_params = dashboards.lightning_hparams(trainer)
        for logger in trainer.loggers:
            if isinstance(logger, TensorBoardLogger):
                dashboards.write_hparams(logger, {**lightning_params, **params}, metrics, trainer.global_step)
            else:
                logger.log_hyperparams(params)

    @override
    def state_dict(self) -> dict[str, Any]:
        return {**ledger_state({g.name: g.ledger for g in self.groups}), "optimizer_steps": self.optimizer_steps}

    @override
    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._restored = dict(state_dict)

    @override
    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self._remove_hooks()  # also when training stopped with an exception
        self._restore_hp_metric()

    # --- helpers -------------------------------------------------------------------------------------------

    def _restore_hp_metric(self) -> None:
        for logger in self._deferred:
            dashboards.set_default_hp_metric(logger, True)
        self._deferred = []

    def _remove_hooks(self) -> None:
        for handle in self._hooks:
            handle.remove()
        self._hooks = []

    def _collect(self, trainer: pl.Trainer) -> dict[str, float]:
        """One statistics pass (plus one all-reduce when sharded) and one host sync; the metrics to log."""
        tensors: list[torch.Tensor] = []
        owner: list[int] = []
        for k, state in enumerate(self.groups):
            params = trainer.optimizers[state.optimizer_index].param_groups[state.group_index]["params"]
            tensors.extend(params)
            owner.extend([k] * len(params))
        sums = self._stats_pass(tensors)
        if self._reduce:
            all_reduce_sums(sums)
        sums = sums.cpu()  # the one host sync of a logging step; the grouping below runs on the host
        table = group_sums(sums, owner, len(self.groups))
        if self.per_tensor:
            table = torch.cat([table, sums])
        rows = table.tolist()
        shape = self._dataset_shape(trainer)
        metrics: dict[str, float] = {}
        for k, state in enumerate(self.groups):
            group = trainer.optimizers[state.optimizer_index].param_groups[state.group_index]
            metrics.update(self._group_metrics(state, group, rows[k], shape))
        if self.per_tensor:
            for t, (tensor, k) in enumerate(zip(tensors, owner)):
                mean_abs, rms = magnitudes(rows[len(self.groups) + t])
                name = self._param_names.get(id(tensor), f"param{t}")
                key = f"{self.groups[k].name}/{name}"
                metrics[dashboards.metric_key(self.prefix, "weight_mean_abs", key)] = mean_abs
                metrics[dashboards.metric_key(self.prefix, "weight_rms", key)] = rms
        return metrics

    def _group_metrics(
        self, state: _GroupState, group: dict[str, Any], row: list[float], shape: RunShape | None
    ) -> dict[str, float]:
        lr = group_lr(group) if state.last_lr is None else state.last_lr
        wd = float(group.get("weight_decay", 0.0)) if state.last_weight_decay is None else state.last_weight_decay
        mean_abs, rms = magnitudes(row)
        # the timescale a `TimescaleCallback` holds for this group (pushed by it) beside the instantaneous one
        if self.group_targets is None:
            tau_iter_target, tau_epoch_target = self.target_tau_iter, self.target_tau_epoch
        else:
            tau_iter_target, tau_epoch_target = self.group_targets.get(
                (state.optimizer_index, state.group_index), (None, None)
            )
        values = group_metrics(
            lr,
            wd,
            mean_abs,
            rms,
            width_mult=state.width_mult,
            unit_rms=state.unit_rms_updates,
            steps_per_epoch=self._steps_per_epoch(state.optimizer_index, shape),
            tau_iter_target=tau_iter_target,
            tau_epoch_target=tau_epoch_target,
            init_memory=state.ledger.init_memory,
            timescales_elapsed=state.ledger.timescales_elapsed,
            window_steps=state.ledger.window_steps,
        )
        return {dashboards.metric_key(self.prefix, key, state.name): value for key, value in values.items()}

    def follow(
        self,
        shapes: RunShapeReader,
        *,
        tau_iter: float | None,
        tau_epoch: float | None,
        group_targets: Mapping[tuple[int, int], tuple[float, float | None]] | None = None,
        optimizer_steps_per_epoch: Mapping[int, float] | None = None,
        size_rule: Mapping[str, float] | None = None,
    ) -> None:
        """Follow a ``TimescaleCallback``'s decisions (it calls this after each): its shape reader and its targets.

        Args:
            shapes: the callback's reader of the run's ``M``, ``N``, ``B``; the monitor reads the shape there.
            tau_iter: the run's target in steps (the base width's), for the HParams record.
            tau_epoch: the run's target in epochs.
            group_targets: ``(optimizer index, group index) -> (tau_iter, tau_epoch)`` of every group the callback
                manages; groups it does not name log no target. ``None`` logs the run's target for every group.
            optimizer_steps_per_epoch: optimizer index -> its ``M`` where it is not ``shape``'s.
            size_rule: the callback's dataset-size and batch-size rules (``size_exponent``,
                ``reference_dataset_size``, ``batch_exponent``, ``reference_batch_size``,
                ``tau_epoch_at_reference_size``: those of the rules in use), recorded in the HParams record under
                ``{prefix}/``; ``tau_epoch`` is then the one held at the run's ``N`` and ``B``. ``None``: both
                exponents 0, nothing recorded.
        """
        self.size_rule = None if size_rule is None else {k: float(v) for k, v in size_rule.items()}
        self._shapes = shapes
        self.target_tau_iter, self.target_tau_epoch = tau_iter, tau_epoch
        self.group_targets = None if group_targets is None else dict(group_targets)
        self.optimizer_steps_per_epoch = dict(optimizer_steps_per_epoch or {})

    def _steps_per_epoch(self, optimizer_index: int, shape: RunShape | None) -> float | None:
        """``M`` of one optimizer: its own where the callback decided it with one, else the run's."""
        return self.optimizer_steps_per_epoch.get(optimizer_index, None if shape is None else shape.steps_per_epoch)

    def _dataset_shape(self, trainer: pl.Trainer) -> RunShape | None:
        """The run's shape as a ``TimescaleCallback`` decided it, else read once per epoch; ``None`` if unknown."""
        first = self._shapes.epoch is None
        shape = self._shapes.current(trainer)
        if shape is None and first:
            rank_zero_info("`TimescaleMonitor`: the epoch length is unknown, so the `tau_epoch` keys are left out.")
        return shape

    def _hparams(self, trainer: pl.Trainer) -> dict[str, Any]:
        p = self.prefix
        shape = self._dataset_shape(trainer)
        params: dict[str, Any] = {}
        if shape is not None:
            for key, value in (
                ("steps_per_epoch", shape.steps_per_epoch),
                ("dataset_size", shape.dataset_size),
                ("global_batch_size", shape.global_batch_size),
            ):
                if value is not None:
                    params[f"{p}/{key}"] = float(value)
        # the targets a `TimescaleCallback` set on the monitor
        if self.target_tau_iter is not None:
            params[f"{p}/tau_iter_target"] = float(self.target_tau_iter)
        if self.target_tau_epoch is not None:
            params[f"{p}/tau_epoch_target"] = float(self.target_tau_epoch)
        for key, value in (self.size_rule or {}).items():  # how tau_epoch_target moved with N
            params[f"{p}/{key}"] = value
        for state in self.groups:
            if state.hparams is None:  # no optimizer step was taken
                group = trainer.optimizers[state.optimizer_index].param_groups[state.group_index]
                state.hparams = {"lr": reference_lr(group), "weight_decay": float(group.get("weight_decay", 0.0))}
            lr, wd = state.hparams["lr"], state.hparams["weight_decay"]
            params[f"{p}/lr/{state.name}"] = lr
            params[f"{p}/weight_decay/{state.name}"] = wd
            if state.width_mult is not None:
                params[f"{p}/width_mult/{state.name}"] = state.width_mult
            if wd > 0 and lr > 0:
                params[f"{p}/tau_iter/{state.name}"] = timescale.tau_iter(lr, wd)
                steps_per_epoch = self._steps_per_epoch(state.optimizer_index, shape)
                if steps_per_epoch:
                    params[f"{p}/tau_epoch/{state.name}"] = timescale.tau_iter(lr, wd) / steps_per_epoch
        return params

    def _final_metrics(self, trainer: pl.Trainer) -> dict[str, float]:
        """The metrics shown next to the hparams, as ``hp/{name}``: never empty while there is a param group.

        The first of these that gives a scalar: ``hparams_metric``; the ``ModelCheckpoint`` / ``EarlyStopping``
        monitor; every scalar in ``trainer.callback_metrics`` (e.g. the last training loss of a run without
        validation); the monitor's own ``timescales_elapsed`` of each group, so the record is never skipped.
        """
        requested: list[str] = []
        if self.hparams_metric is not None:
            requested = [self.hparams_metric]
        else:
            for callback in (trainer.checkpoint_callback, trainer.early_stopping_callback):
                monitor = getattr(callback, "monitor", None)
                if monitor:
                    requested = [monitor]
                    break
        logged = _scalars(trainer.callback_metrics)
        metrics = {f"hp/{name}": logged[name] for name in requested if name in logged}
        if requested and not metrics:
            fallback = f"was not logged (logged: {sorted(logged)}); the hparams are recorded with every logged scalar"
            if self.hparams_metric is not None:  # the user asked for it by name: a typo is worth a warning
                rank_zero_warn(f"`TimescaleMonitor(hparams_metric={self.hparams_metric!r})`: that metric {fallback}.")
            else:  # e.g. `ModelCheckpoint(monitor="val_loss")` in a run without validation
                rank_zero_info(f"`TimescaleMonitor`: the monitored metric {requested[0]!r} {fallback}.")
        if not metrics:
            metrics = {f"hp/{name}": value for name, value in sorted(logged.items())}
        if not metrics:  # nothing logged at all: the monitor's own summary of the run
            metrics = {
                f"hp/{self.prefix}/timescales_elapsed/{g.name}": g.ledger.timescales_elapsed for g in self.groups
            }
        return metrics


def _scalars(metrics: dict[str, Any]) -> dict[str, float]:
    """The one-element entries of ``trainer.callback_metrics`` as floats (one host sync each, at train end)."""
    scalars = {}
    for name, value in metrics.items():
        if isinstance(value, torch.Tensor):
            if value.numel() != 1:
                continue
            value = value.item()
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            scalars[name] = float(value)
    return scalars


def _is_sharded(trainer: pl.Trainer) -> bool:
    """Whether parameters are split across ranks (their sums must be all-reduced), not replicated as in DDP."""
    if isinstance(trainer.strategy, (FSDPStrategy, ModelParallelStrategy)):
        return True
    return any(
        type(p).__name__ == "DTensor" for opt in trainer.optimizers for g in opt.param_groups for p in g["params"]
    )
