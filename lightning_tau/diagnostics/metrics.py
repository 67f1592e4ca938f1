"""Per-group timescale diagnostics for any torch loop: the one implementation of the formulas the monitor logs.

More: docs/diagnostics.rst, module notes.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils.hooks import RemovableHandle

from lightning_tau import _checks, timescale
from lightning_tau.couplings import Ledger
from lightning_tau.diagnostics.stats import WeightStatsPass, all_reduce_sums, group_sums, magnitudes
from lightning_tau.optim import group_lr, group_names, group_width_mult, unit_rms_updates, unwrap_optimizer

__all__ = ["TimescaleTracker", "group_metrics", "ledger_state", "restored_ledger", "timescale_metrics"]


def group_metrics(
    lr: float,
    weight_decay: float,
    mean_abs: float,
    rms: float,
    *,
    width_mult: float | None = None,
    unit_rms: bool = True,
    steps_per_epoch: float | None = None,
    tau_iter_target: float | None = None,
    tau_epoch_target: float | None = None,
    init_memory: float | None = None,
    timescales_elapsed: float | None = None,
    window_steps: float | None = None,
) -> dict[str, float]:
    r"""One param group's diagnostics, keyed by quantity (no prefix, no group name).

    Always ``lr``, ``weight_decay``, ``weight_mean_abs``, ``weight_rms`` (and ``width_mult`` when given). With
    ``weight_decay > 0`` also ``coherent_bound`` :math:`= 1/\lambda`, ``wd_mean_abs`` :math:`= \lambda\,
    \overline{|w|}` and ``init_memory`` / ``timescales_elapsed`` when given, ``window_epochs`` (the mean age in
    epochs of the updates the weights hold) when ``window_steps`` and ``steps_per_epoch`` are; with ``lr > 0`` as well
    ``tau_iter``
    :math:`= 1/(\eta\lambda)`, ``tau_epoch`` :math:`= \tau_{iter}/M` (with ``steps_per_epoch``), the targets when
    given, and, for an optimizer whose update has RMS about 1 (``unit_rms``), ``rms_equilibrium``
    :math:`= \sqrt{\eta/2\lambda}` and ``rms_ratio`` (measured / predicted RMS).

    Args:
        lr: the learning rate the step used.
        weight_decay: the weight decay the step used.
        mean_abs: the group's mean ``|w|``.
        rms: the group's weight RMS.
        width_mult: muP width multiplier, if known.
        unit_rms: whether the optimizer's update has RMS about 1 per element (see
            :func:`lightning_tau.optim.unit_rms_updates`); ``False`` leaves the equilibrium prediction out.
        steps_per_epoch: ``M``, optimizer steps per epoch, for ``tau_epoch``.
        tau_iter_target: the target timescale in steps, logged beside the instantaneous one.
        tau_epoch_target: the target timescale in epochs.
        init_memory: :math:`\prod_t (1-\eta_t\lambda_t)` so far (see :class:`TimescaleTracker`).
        timescales_elapsed: :math:`\sum_t \eta_t\lambda_t` so far.
        window_steps: the mean age, in steps, of the updates the weights hold
            (:attr:`lightning_tau.couplings.Ledger.window_steps`); logged in epochs as ``window_epochs``.

    Example:
        >>> m = group_metrics(1e-3, 0.5, mean_abs=0.02, rms=0.025, steps_per_epoch=100)
        >>> m["tau_iter"], m["tau_epoch"], m["coherent_bound"], round(m["rms_equilibrium"], 6)
        (2000.0, 20.0, 2.0, 0.031623)
        >>> sorted(group_metrics(1e-3, 0.0, mean_abs=0.02, rms=0.025))
        ['lr', 'weight_decay', 'weight_mean_abs', 'weight_rms']
    """
    values: dict[str, float] = {"lr": lr, "weight_decay": weight_decay, "weight_mean_abs": mean_abs, "weight_rms": rms}
    if width_mult is not None:
        values["width_mult"] = width_mult
    if weight_decay > 0:
        values["coherent_bound"] = timescale.coherent_norm_bound(weight_decay)
        values["wd_mean_abs"] = weight_decay * mean_abs
        if init_memory is not None:
            values["init_memory"] = init_memory
        if timescales_elapsed is not None:
            values["timescales_elapsed"] = timescales_elapsed
        if window_steps is not None and steps_per_epoch and window_steps == window_steps:  # nan before any update
            values["window_epochs"] = window_steps / steps_per_epoch
        if lr > 0:
            values["tau_iter"] = timescale.tau_iter(lr, weight_decay)
            if steps_per_epoch:
                values["tau_epoch"] = values["tau_iter"] / steps_per_epoch
            if tau_iter_target is not None:
                values["tau_iter_target"] = float(tau_iter_target)
            if tau_epoch_target is not None:
                values["tau_epoch_target"] = float(tau_epoch_target)
            if unit_rms:  # Muon, Adafactor: the update's RMS is not ~1, so no prediction
                values["rms_equilibrium"] = timescale.equilibrium_rms(lr, weight_decay)
                values["rms_ratio"] = rms / values["rms_equilibrium"]
    return values


@dataclass
class _Track:
    """What the tracker carries for one param group (O(1) floats)."""

    ledger: Ledger = field(default_factory=Ledger)  # init memory, timescales elapsed and the window
    last_lr: float | None = None  # lr and weight decay the last optimizer step used
    last_weight_decay: float | None = None


class TimescaleTracker:
    r"""Fold every optimizer step's :math:`1 - \eta_t\lambda_t` into each param group's init memory.

    Registers a step post-hook on each optimizer, so it sees exactly the lr and weight decay the step used (after
    a ``mode="per_step"`` pre-hook rewrote the decay, before a scheduler moves the lr); skipped steps (AMP overflow)
    decay nothing and are not counted. Pass it to :func:`timescale_metrics` for the ``init_memory`` and
    ``timescales_elapsed`` keys, and for ``lr`` / ``weight_decay`` as the last step used them. Save
    :meth:`state_dict` with your checkpoint to continue the products after a resume.

    Args:
        optimizers: the optimizer, or the loop's optimizers in order (wrappers such as Fabric's are fine).

    Raises:
        ValueError: ``optimizers`` holds something that is not a ``torch.optim.Optimizer``.

    Example:
        >>> w = torch.nn.Parameter(torch.ones(3))
        >>> opt = torch.optim.AdamW([w], lr=0.1, weight_decay=0.5)
        >>> tracker = TimescaleTracker(opt)
        >>> for _ in range(2):
        ...     w.grad = torch.zeros(3)
        ...     opt.step()
        >>> tracker.steps, tracker.init_memory, tracker.timescales_elapsed
        (2, {'pg1': 0.9025}, {'pg1': 0.1})
        >>> tracker.remove()
    """

    def __init__(self, optimizers: torch.optim.Optimizer | Sequence[torch.optim.Optimizer]) -> None:
        self.optimizers = _as_optimizer_list("TimescaleTracker", optimizers)
        #: Optimizer steps taken by the first optimizer since the tracker was built (or restored).
        self.steps = 0
        self._tracks: dict[tuple[int, int], _Track] = {}
        self._restored: dict[str, Any] = {}
        self._handles: list[RemovableHandle] = [
            # on the optimizer that steps, inside any wrapper (torch's `PostLocalSGDOptimizer` has no hooks of its
            # own), with a closure per index to tell the optimizers apart
            unwrap_optimizer(opt).register_step_post_hook(functools.partial(self._after_step, i))
            for i, opt in enumerate(self.optimizers)
        ]

    def _after_step(self, index: int, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.steps += index == 0
        # the stepping optimizer's own groups hold what the step used (ZeroRedundancyOptimizer copies them back to
        # the wrapper's only after this hook)
        for j, group in enumerate(optimizer.param_groups):
            track = self._track(index, j)
            lr, wd = group_lr(group), float(group.get("weight_decay", 0.0))
            track.last_lr, track.last_weight_decay = lr, wd
            if wd > 0:
                track.ledger.step(lr, lr * wd)

    def _track(self, optimizer_index: int, group_index: int) -> _Track:
        """The state of one group (created on first use, from a restored state dict when it names the group)."""
        key = (optimizer_index, group_index)
        track = self._tracks.get(key)
        if track is None:
            name = group_names(self.optimizers)[optimizer_index][group_index]
            track = self._tracks[key] = _Track(restored_ledger(self._restored, name))
        return track

    def _index_of(self, optimizer: Any) -> int | None:
        """Position of ``optimizer`` (or of a wrapper around the same optimizer) in :attr:`optimizers`."""
        inner = unwrap_optimizer(optimizer)
        for i, opt in enumerate(self.optimizers):
            if opt is optimizer or unwrap_optimizer(opt) is inner:
                return i
        return None

    @property
    def init_memory(self) -> dict[str, float]:
        r""":math:`\prod_t (1-\eta_t\lambda_t)` per group name (1 for groups without decay)."""
        return self._by_name("init_memory")

    @property
    def timescales_elapsed(self) -> dict[str, float]:
        r""":math:`\sum_t \eta_t\lambda_t` per group name."""
        return self._by_name("timescales_elapsed")

    @property
    def window_steps(self) -> dict[str, float]:
        """The mean age, in steps, of the updates each group's weights hold (``nan`` before a decaying step)."""
        return self._by_name("window_steps")

    def _by_name(self, attribute: str) -> dict[str, float]:
        names = group_names(self.optimizers)
        return {
            names[i][j]: getattr(self._track(i, j).ledger, attribute)
            for i, opt in enumerate(self.optimizers)
            for j in range(len(opt.param_groups))
        }

    def state_dict(self) -> dict[str, Any]:
        """The products, the window's sums and the step count, by group name (plain floats)."""
        names = group_names(self.optimizers)
        ledgers = {
            names[i][j]: self._track(i, j).ledger
            for i, opt in enumerate(self.optimizers)
            for j in range(len(opt.param_groups))
        }
        return {**ledger_state(ledgers), "steps": self.steps}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Continue from :meth:`state_dict`; groups it does not name start afresh."""
        self._restored = dict(state_dict)
        self._tracks = {}
        self.steps = int(state_dict.get("steps", 0))

    def remove(self) -> None:
        """Detach the step hooks; the values folded so far stay readable."""
        for handle in self._handles:
            handle.remove()
        self._handles = []


def timescale_metrics(
    optimizers: torch.optim.Optimizer | Sequence[torch.optim.Optimizer],
    *,
    steps_per_epoch: float | None = None,
    tau_iter_target: float | None = None,
    tau_epoch_target: float | None = None,
    tracker: TimescaleTracker | None = None,
    prefix: str = "timescale",
    stats_pass: WeightStatsPass | None = None,
    sharded: bool = False,
) -> dict[str, float]:
    r"""Every param group's timescale diagnostics, under the keys ``TimescaleMonitor`` logs.

    Keys are ``{prefix}/{quantity}/{group}``, with the group's ``name`` (else ``pg1``, ``pg2``, ...;
    ``optimizer{i}/`` in front with several optimizers) and the quantities of :func:`group_metrics`. The weights
    are read in one fused pass with one host sync, so call it at logging steps only. Without a ``tracker`` the
    ``lr`` and ``weight_decay`` are the groups' current values and ``init_memory`` / ``timescales_elapsed`` are
    left out; with one they are the values the last step used, and both products are included.

    Under DDP (replicated parameters) every rank gets the same numbers: call it on rank zero alone, or on all (a
    logger such as Fabric's logs from rank zero). With sharded parameters (FSDP) pass ``sharded=True`` and call it
    on every rank: the sums are all-reduced.

    Args:
        optimizers: the optimizer, or the loop's optimizers in order.
        steps_per_epoch: ``M = N / B``, for the ``tau_epoch`` keys (e.g. ``applied.shape.steps_per_epoch`` from
            :func:`lightning_tau.apply_timescale`).
        tau_iter_target: the target timescale in steps (``applied.tau_iter``), logged beside the instantaneous one.
        tau_epoch_target: the target timescale in epochs.
        tracker: a :class:`TimescaleTracker` on the same optimizers.
        prefix: first component of every key.
        stats_pass: a :class:`~lightning_tau.diagnostics.WeightStatsPass` to reuse its scratch buffer between calls.
        sharded: all-reduce the weight sums over the default process group.

    Returns:
        ``{key: float}``, ready for ``fabric.log_dict`` or ``logger.log_metrics``.

    Raises:
        ValueError: an argument of the wrong type or value, or a ``tracker`` that does not track one of
            ``optimizers``.

    Example:
        >>> net = torch.nn.Linear(4, 4)
        >>> opt = torch.optim.AdamW([{"params": [net.weight], "name": "decay"},
        ...                          {"params": [net.bias], "weight_decay": 0.0, "name": "no_decay"}],
        ...                         lr=1e-3, weight_decay=0.5)
        >>> m = timescale_metrics(opt, steps_per_epoch=100, tau_iter_target=2000.0)
        >>> m["timescale/tau_iter/decay"], m["timescale/tau_epoch/decay"], m["timescale/tau_iter_target/decay"]
        (2000.0, 20.0, 2000.0)
        >>> sorted(k for k in m if k.endswith("/no_decay"))  # doctest: +NORMALIZE_WHITESPACE
        ['timescale/lr/no_decay', 'timescale/weight_decay/no_decay', 'timescale/weight_mean_abs/no_decay',
         'timescale/weight_rms/no_decay']
    """
    opts = _as_optimizer_list("timescale_metrics", optimizers)
    check_prefix("timescale_metrics", prefix)
    for name, value in (
        ("steps_per_epoch", steps_per_epoch),
        ("tau_iter_target", tau_iter_target),
        ("tau_epoch_target", tau_epoch_target),
    ):
        if value is not None:
            _checks.positive_number("timescale_metrics", name, value, "use a positive number, or None.")
    if tracker is not None and not isinstance(tracker, TimescaleTracker):
        raise _checks.invalid("timescale_metrics", "tracker", tracker, "use a `TimescaleTracker`, or None.")
    if stats_pass is not None and not isinstance(stats_pass, WeightStatsPass):
        raise _checks.invalid("timescale_metrics", "stats_pass", stats_pass, "use a `WeightStatsPass`, or None.")
    _checks.flag("timescale_metrics", "sharded", sharded)
    tracked: list[int | None] = [None] * len(opts)
    if tracker is not None:
        tracked = [tracker._index_of(opt) for opt in opts]
        for i, index in enumerate(tracked):
            if index is None:
                raise ValueError(
                    f"`timescale_metrics(tracker=...)` does not track optimizer {i} ({type(opts[i]).__name__}). Build"
                    " the tracker on the same optimizers: `TimescaleTracker([optimizer, ...])`."
                )

    tensors: list[torch.Tensor] = []
    owner: list[int] = []
    where: list[tuple[int, int]] = []
    for i, opt in enumerate(opts):
        for j, group in enumerate(opt.param_groups):
            tensors.extend(group["params"])
            owner.extend([len(where)] * len(group["params"]))
            where.append((i, j))
    sums = (stats_pass or WeightStatsPass())(tensors)
    if sharded:
        all_reduce_sums(sums)
    # the one host sync: the per-tensor sums come to the host, where they are grouped
    rows = group_sums(sums.cpu(), owner, len(where)).tolist()

    names = group_names(opts)
    unit = [unit_rms_updates(opt) for opt in opts]
    metrics: dict[str, float] = {}
    for (i, j), row in zip(where, rows):
        group = opts[i].param_groups[j]
        track = None if tracked[i] is None or tracker is None else tracker._track(tracked[i], j)
        lr = group_lr(group) if track is None or track.last_lr is None else track.last_lr
        wd = float(group.get("weight_decay", 0.0))
        if track is not None and track.last_weight_decay is not None:
            wd = track.last_weight_decay
        mean_abs, rms = magnitudes(row)
        values = group_metrics(
            lr,
            wd,
            mean_abs,
            rms,
            width_mult=group_width_mult(group),
            unit_rms=unit[i],
            steps_per_epoch=steps_per_epoch,
            tau_iter_target=tau_iter_target,
            tau_epoch_target=tau_epoch_target,
            init_memory=None if track is None else track.ledger.init_memory,
            timescales_elapsed=None if track is None else track.ledger.timescales_elapsed,
            window_steps=None if track is None else track.ledger.window_steps,
        )
        metrics.update({f"{prefix}/{key}/{names[i][j]}": value for key, value in values.items()})
    return metrics


def check_prefix(owner: str, prefix: Any) -> str:
    """A key prefix: a non-empty string without a leading or trailing ``/``; ``ValueError`` naming ``owner``."""
    if not isinstance(prefix, str) or not prefix or prefix.startswith("/") or prefix.endswith("/"):
        raise _checks.invalid(owner, "prefix", prefix, "use a non-empty string without a leading or trailing '/'.")
    return prefix


def _as_optimizer_list(owner: str, optimizers: Any) -> list[torch.optim.Optimizer]:
    items = [optimizers] if isinstance(optimizers, torch.optim.Optimizer) else optimizers
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence) or not items:
        raise ValueError(
            f"`{owner}(optimizers={optimizers!r})` is not valid: pass a `torch.optim.Optimizer` or a non-empty list"
            " of them."
        )
    for i, opt in enumerate(items):
        if not isinstance(opt, torch.optim.Optimizer):
            raise ValueError(
                f"`{owner}`: optimizers[{i}] is {type(opt).__name__}, not a `torch.optim.Optimizer`. Pass the"
                " optimizer(s) your loop steps."
            )
    return list(items)


def ledger_state(ledgers: Mapping[str, Ledger]) -> dict[str, dict[str, Any]]:
    """The checkpoint form of each group's :class:`~lightning_tau.couplings.Ledger`, by group name (plain floats).

    Example:
        >>> ledger = Ledger()
        >>> ledger.step(1.0, 0.5)
        >>> ledger_state({"pg1": ledger})
        {'init_memory': {'pg1': 0.5}, 'timescales_elapsed': {'pg1': 0.5}, 'window': {'pg1': [1.0, 0.0]}}
    """
    return {
        "init_memory": {name: ledger.init_memory for name, ledger in ledgers.items()},
        "timescales_elapsed": {name: ledger.timescales_elapsed for name, ledger in ledgers.items()},
        "window": {name: [ledger.held, ledger.age] for name, ledger in ledgers.items()},
    }


def restored_ledger(state: Mapping[str, Any], name: str) -> Ledger:
    """Group ``name``'s :class:`~lightning_tau.couplings.Ledger` from :func:`ledger_state`'s form (a fresh one where
    the state does not name it; a checkpoint from before the window was kept restarts the window only).

    Example:
        >>> restored_ledger({"init_memory": {"pg1": 0.5}, "window": {"pg1": [1.0, 0.0]}}, "pg1")
        Ledger(steps=0, init_memory=0.5, timescales_elapsed=0.0, held=1.0, age=0.0)
    """
    held, age = state.get("window", {}).get(name, (0.0, 0.0))
    return Ledger(
        init_memory=float(state.get("init_memory", {}).get(name, 1.0)),
        timescales_elapsed=float(state.get("timescales_elapsed", {}).get(name, 0.0)),
        held=float(held),
        age=float(age),
    )
