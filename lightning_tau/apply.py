"""Gather param groups, write decided weight decays, and :func:`apply_timescale` for loops beyond the Trainer.

Imports torch only (no Lightning): plain PyTorch loops and Lightning Fabric call :func:`apply_timescale`;
``TimescaleCallback`` calls the same :func:`gather_groups` and :func:`write_weight_decays` with the shape it
reads from the Trainer (through :func:`lightning_tau.callback_decision.decide_and_write`), so every loop decides
through :mod:`lightning_tau.decide`.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils.hooks import RemovableHandle

from lightning_tau import _checks, couplings, timescale
from lightning_tau._constants import WRITE_MODES, WriteMode
from lightning_tau.couplings import COUPLINGS, Coupling
from lightning_tau.decide import (
    GroupInput,
    GroupTimescale,
    RunShape,
    decide_groups,
    held_tau_epoch,
    resolve_tau_iter,
    step_writes,
)
from lightning_tau.errors import TimescaleError
from lightning_tau.optim import (
    decay_kind,
    group_lr,
    group_names,
    group_width_mult,
    param_group_layers,
    reference_lr,
    unsupported_message,
    unwrap_optimizer,
)
from lightning_tau.target import Target, check_batch_rule, check_size_rule
from lightning_tau.width import group_width_problem

__all__ = [
    "AppliedTimescale",
    "adam_beta2s",
    "apply_timescale",
    "gather_groups",
    "resolve_coupling",
    "write_beta2",
    "write_coupled",
    "write_weight_decays",
]


def gather_groups(
    optimizers: Sequence[torch.optim.Optimizer],
    *,
    weight_decay_before: Mapping[tuple[int, int], float],
    managed_optimizers: set[int],
    reference_lrs: Mapping[tuple[int, int], float] | None = None,
) -> list[GroupInput]:
    """Every param group of ``optimizers`` as a :class:`~lightning_tau.decide.GroupInput`.

    Args:
        optimizers: the run's optimizers, in order.
        weight_decay_before: the user's own ``weight_decay`` per ``(optimizer, group)`` index; a group missing
            here is read as it stands (a group added since).
        managed_optimizers: indices of the optimizers with decoupled decay; their groups with positive decay are
            managed.
        reference_lrs: pinned reference lrs per ``(optimizer, group)``, overriding :func:`reference_lr`.
    """
    names = group_names(optimizers)
    pinned = reference_lrs or {}
    out = []
    for i, optimizer in enumerate(optimizers):
        for j, group in enumerate(optimizer.param_groups):
            before = weight_decay_before.get((i, j))
            if before is None:
                before = float(group.get("weight_decay", 0.0))
            out.append(
                GroupInput(
                    name=names[i][j],
                    optimizer_index=i,
                    group_index=j,
                    num_params=sum(p.numel() for p in group["params"]),
                    reference_lr=pinned.get((i, j), reference_lr(group)),
                    weight_decay_before=before,
                    managed=i in managed_optimizers and before > 0,
                    width_mult=group_width_mult(group),
                    width_problem=group_width_problem(group),
                )
            )
    return out


def write_weight_decays(optimizers: Sequence[torch.optim.Optimizer], groups: Sequence[GroupTimescale]) -> None:
    """Write each managed group's decided ``weight_decay`` into its optimizer, and into the optimizer inside any
    wrapper that keeps groups of its own (torch's ``ZeroRedundancyOptimizer`` syncs its shard optimizer's groups back
    over its own after each step, so a value written into the wrapper alone during a step would be lost)."""
    for g in groups:
        if g.managed:
            for param_groups in param_group_layers(optimizers[g.optimizer_index]):
                param_groups[g.group_index]["weight_decay"] = g.weight_decay


def write_coupled(
    optimizer: torch.optim.Optimizer, coupling: Coupling, writes: Sequence[tuple[int, float, float]]
) -> None:
    """Write ``λ_t = couplings.decay_at(coupling, weight_decay_ref, lr_t, lr_ref)`` into each group of ``writes``
    (``(group index, weight decay at the reference lr, reference lr)``) for the step about to run, at the group's lr
    now. A group at ``lr_t = 0`` keeps its decay: the step moves nothing.

    Example:
        >>> opt = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters(), lr=5e-4)
        >>> write_coupled(opt, "lr_ratio", [(0, 0.1, 1e-3)])
        >>> opt.param_groups[0]["weight_decay"]
        0.05
    """
    for j, weight_decay_ref, lr_ref in writes:
        group = optimizer.param_groups[j]
        lr = group_lr(group)
        if lr > 0:
            group["weight_decay"] = couplings.decay_at(coupling, weight_decay_ref, lr, lr_ref)


def adam_beta2s(optimizers: Sequence[torch.optim.Optimizer], managed: set[int]) -> dict[tuple[int, int], float]:
    """``β₂`` of every Adam-like group (a ``betas`` pair) of the ``managed`` optimizers, by ``(optimizer, group)``.

    Example:
        >>> opt = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters(), betas=(0.9, 0.95))
        >>> adam_beta2s([opt], {0})
        {(0, 0): 0.95}
    """
    out: dict[tuple[int, int], float] = {}
    for i in sorted(managed):
        for j, group in enumerate(optimizers[i].param_groups):
            betas = group.get("betas")
            if isinstance(betas, (tuple, list)) and len(betas) == 2:
                out[(i, j)] = float(betas[1])
    return out


def write_beta2(optimizers: Sequence[torch.optim.Optimizer], beta2: Mapping[tuple[int, int], float]) -> None:
    """Write ``β₂`` into each ``(optimizer, group)`` of ``beta2`` (``β₁`` kept), and into the optimizer inside any
    wrapper that keeps groups of its own (as :func:`write_weight_decays`).

    Example:
        >>> opt = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters(), betas=(0.9, 0.95))
        >>> write_beta2([opt], {(0, 0): 0.999})
        >>> opt.param_groups[0]["betas"]
        (0.9, 0.999)
    """
    for (i, j), value in beta2.items():
        for param_groups in param_group_layers(optimizers[i]):
            beta1 = param_groups[j]["betas"][0]
            param_groups[j]["betas"] = (beta1, value)


def resolve_coupling(owner: str, mode: object, coupling: object) -> Coupling:
    """The coupling of ``owner(mode=..., coupling=...)``: ``coupling``, else ``mode`` (its older name, with two of
    the values), else ``"constant"``; both given and different is an error.

    Example:
        >>> resolve_coupling("apply_timescale", None, None), resolve_coupling("apply_timescale", "per_step", None)
        ('constant', 'per_step')
        >>> resolve_coupling("apply_timescale", "per_step", "lr_ratio")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `apply_timescale(mode='per_step', coupling='lr_ratio')` disagree: ...
    """
    if mode is not None:
        _checks.choice(owner, "mode", mode, WRITE_MODES)
    if coupling is None:
        return "constant" if mode is None else mode  # type: ignore[return-value]
    chosen: Coupling = _checks.choice(owner, "coupling", coupling, COUPLINGS)  # type: ignore[arg-type]
    if mode is not None and mode != chosen:
        raise TimescaleError(
            f"`{owner}(mode={mode!r}, coupling={chosen!r})` disagree: `mode` is the older name of `coupling`;"
            f" give only `coupling={chosen!r}`."
        )
    return chosen


@dataclass
class AppliedTimescale:
    """What :func:`apply_timescale` wrote, and the step pre-hook it registered to keep it.

    The hook runs before every ``optimizer.step()``: it manages a param group added since with
    ``optimizer.add_param_group`` (when its ``weight_decay`` is positive) from that group's first step, and under
    every coupling but ``"constant"`` rewrites each managed group's decay for the step's lr
    (:func:`lightning_tau.couplings.decay_at`). ``groups`` and ``weight_decay`` include the groups added since.

    Attributes:
        tau_iter: the target timescale in optimizer steps.
        shape: ``M``, ``N`` and ``B`` as given.
        groups: the decision per param group (see :class:`~lightning_tau.decide.GroupTimescale`).
        tau_epoch: the ``tau_epoch`` held: the given one, times ``(N / reference_dataset_size) ** size_exponent``
            and ``(B / reference_batch_size) ** batch_exponent`` under those rules (``None`` for a ``tau_iter``
            target).
        coupling: how the decay follows the lr schedule (:mod:`lightning_tau.couplings`); ``tau_iter`` is held at
            each group's reference lr.
    """

    tau_iter: float
    shape: RunShape
    groups: list[GroupTimescale]
    tau_epoch: float | None = None
    coupling: Coupling = "constant"
    _optimizer: Any = field(default=None, repr=False, compare=False)
    # (group index, weight decay at the reference lr, reference lr) of each managed group
    _writes: list[tuple[int, float, float]] = field(default_factory=list, repr=False, compare=False)
    _handle: RemovableHandle | None = field(default=None, repr=False, compare=False)

    @property
    def weight_decay(self) -> dict[str, float]:
        """The weight decay written per group name (groups left alone keep theirs)."""
        return {g.name: g.weight_decay for g in self.groups}

    def remove(self) -> None:
        """Detach the step pre-hook; the weight decay last written stays, and groups added later are left alone."""
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

    def _before_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        """The step pre-hook: decide any group added since (an O(1) length check), then the per-step write."""
        if len(self._optimizer.param_groups) != len(self.groups):
            self._decide_added_groups()
        if self.coupling != "constant":  # `optimizer` steps (inside any wrapper): its groups are what it reads
            write_coupled(optimizer, self.coupling, self._writes)

    def _decide_added_groups(self) -> None:
        """Decide the groups added since through the same path; the groups decided before keep their values."""
        known = {g.group_index: g for g in self.groups}
        inputs = gather_groups(
            [self._optimizer],
            weight_decay_before={(0, j): g.weight_decay_before for j, g in known.items()},
            managed_optimizers={0},
            reference_lrs={(0, j): g.reference_lr for j, g in known.items()},
        )
        try:
            groups = decide_groups(inputs, self.tau_iter)
        except ValueError as err:
            raise TimescaleError(f"`apply_timescale`, for a param group added with `add_param_group`: {err}") from None
        write_weight_decays([self._optimizer], [g for g in groups if g.group_index not in known])
        self.groups = groups
        self._writes = step_writes(groups).get(0, [])


def apply_timescale(
    optimizer: torch.optim.Optimizer,
    *,
    tau_epoch: float | None = None,
    tau_iter: float | None = None,
    dataset_size: int | None = None,
    batch_size: int | None = None,
    mode: WriteMode | None = None,
    size_exponent: float = 0.0,
    reference_dataset_size: int | None = None,
    coupling: Coupling | None = None,
    batch_exponent: float = 0.0,
    reference_batch_size: int | None = None,
) -> AppliedTimescale:
    r"""Set ``optimizer``'s weight decay so its EMA averages over ``tau_epoch`` epochs (or ``tau_iter`` steps).

    The same rule as ``TimescaleCallback``, for loops beyond the Trainer (plain PyTorch, Lightning Fabric):
    every group with ``weight_decay > 0`` gets :math:`\lambda = 1 / (\eta_{ref} \tau_{iter})` with its own
    reference lr (``max_lr``, else ``initial_lr``, else ``lr``: create the lr scheduler first), and
    ``tau_iter = tau_epoch * dataset_size / batch_size``. Groups at ``0`` stay ``0``. A step pre-hook on the
    optimizer that steps (inside any wrapper) manages a group added later with ``add_param_group`` from its first
    step, as ``TimescaleCallback`` does; under a ``coupling`` other than ``"constant"`` it also rewrites the decay
    before every ``optimizer.step()`` for that step's lr (``"per_step"``: ``lr_t * weight_decay_t = 1 / tau_iter``
    at every step; :doc:`/couplings`). Call ``.remove()`` on the
    result to detach the hook. With a ``size_exponent`` (the finder's dataset-size axis) the ``tau_epoch`` held is
    ``tau_epoch * (dataset_size / reference_dataset_size) ** size_exponent``, and with a ``batch_exponent`` (the
    batch-size axis) times ``(batch_size / reference_batch_size) ** batch_exponent``; call again when
    ``dataset_size`` or ``batch_size`` changes.

    Args:
        optimizer: a torch optimizer with decoupled weight decay (``AdamW``, ``Lion``, ``Muon``, ...).
        tau_epoch: target timescale in epochs (needs ``dataset_size`` and ``batch_size``).
        tau_iter: target timescale in optimizer steps (instead of ``tau_epoch``).
        dataset_size: ``N``, samples (or tokens) per epoch.
        batch_size: global ``B`` per optimizer step: per-device batch x devices x accumulation, same unit as ``N``.
            Each of these four numbers may also be a one-element tensor or numpy number (read as the number).
        mode: the older name of ``coupling``, with its first two values: ``"constant"`` or ``"per_step"``.
        size_exponent: ``e`` of ``tau_epoch ∝ N ** e`` (0, the default, holds ``tau_epoch`` at every ``N``; -0.5
            the 1/2 rules; -1 a fixed weight decay), a finite number in [-2, 2]. Nonzero, it needs
            ``reference_dataset_size`` and a ``tau_epoch`` target.
        reference_dataset_size: the ``N`` (same unit as ``dataset_size``) at which ``tau_epoch`` was measured.
        coupling: how ``weight_decay`` follows the lr schedule, ``tau_iter`` held at each group's reference lr
            ``η_ref``: ``"constant"`` (default: written once), ``"per_step"`` (``λ_t = λ_ref η_ref / η_t``),
            ``"lr_ratio"`` (``λ_ref η_t / η_ref``: AdamC) or ``"lr_squared"`` (``λ_ref (η_t / η_ref)²``).
            Giving ``mode`` too is allowed only when the two agree.
        batch_exponent: ``e`` of ``tau_epoch ∝ B ** e`` (0, the default, holds ``tau_epoch`` at every ``B``; 1 a
            fixed weight decay at a fixed lr), a finite number in [-2, 2]. Nonzero, it needs ``reference_batch_size``
            and a ``tau_epoch`` target.
        reference_batch_size: the global ``B`` (same unit as ``batch_size``) at which ``tau_epoch`` was measured.

    Returns:
        :class:`AppliedTimescale` with ``tau_iter``, the ``tau_epoch`` held, the decision per group and
        ``weight_decay`` by group name.

    Raises:
        ValueError: a bad argument, an optimizer whose decay is not known to be decoupled, no group to manage,
            or a timescale of one step or less.

    Example:
        >>> net = torch.nn.Linear(4, 4)
        >>> opt = torch.optim.AdamW([{"params": [net.weight]}, {"params": [net.bias], "weight_decay": 0.0}],
        ...                         lr=1e-3, weight_decay=0.1)
        >>> applied = apply_timescale(opt, tau_epoch=5.0, dataset_size=50_000, batch_size=100)
        >>> applied.tau_iter, applied.weight_decay
        (2500.0, {'pg1': 0.4, 'pg2': 0.0})
        >>> # tau_epoch 8 measured at N = 12,500, carried to 50,000 by the 1/2 rules: 8 x 4^-0.5 = 4 epochs
        >>> applied.remove()
        >>> applied = apply_timescale(opt, tau_epoch=8.0, dataset_size=50_000, batch_size=100, size_exponent=-0.5,
        ...                           reference_dataset_size=12_500)
        >>> applied.tau_epoch, applied.tau_iter, applied.weight_decay["pg1"]
        (4.0, 2000.0, 0.5)
        >>> # tau_epoch 8 measured at B = 50, at B = 100 under tau_epoch ∝ B^1 (a fixed lambda): 16 epochs
        >>> applied.remove()
        >>> applied = apply_timescale(opt, tau_epoch=8.0, dataset_size=50_000, batch_size=100, batch_exponent=1,
        ...                           reference_batch_size=50)
        >>> applied.tau_epoch, applied.tau_iter, applied.weight_decay["pg1"]
        (16.0, 8000.0, 0.125)
    """
    chosen = resolve_coupling("apply_timescale", mode, coupling)
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TimescaleError(f"`apply_timescale(optimizer={optimizer!r})` needs a `torch.optim.Optimizer`.")
    if (tau_epoch is None) == (tau_iter is None):
        raise TimescaleError(
            f"`apply_timescale` takes exactly one of `tau_epoch` and `tau_iter`, got {tau_epoch=!r} and {tau_iter=!r}."
        )
    tau_epoch = None if tau_epoch is None else check_number("apply_timescale", "tau_epoch", tau_epoch)
    tau_iter = None if tau_iter is None else check_number("apply_timescale", "tau_iter", tau_iter)
    n = None if dataset_size is None else check_size("apply_timescale", "dataset_size", dataset_size)
    b = None if batch_size is None else check_size("apply_timescale", "batch_size", batch_size)
    exponent, reference = check_size_rule(
        scalar(size_exponent), scalar(reference_dataset_size), owner="apply_timescale", tau_iter=tau_iter
    )
    batch_rule = check_batch_rule(
        scalar(batch_exponent), scalar(reference_batch_size), owner="apply_timescale", tau_iter=tau_iter
    )
    if tau_epoch is not None and (n is None or b is None):
        raise TimescaleError(
            f"`apply_timescale(tau_epoch={tau_epoch!r})` needs `dataset_size` and `batch_size` (got"
            f" {dataset_size!r} and {batch_size!r}) to count an epoch in optimizer steps; or pass `tau_iter`."
        )
    shape = RunShape(steps_per_epoch=None if n is None or b is None else n / b, dataset_size=n, global_batch_size=b)
    target = Target(tau_epoch, tau_iter, 1.0, exponent, reference, *batch_rule)
    held = held_tau_epoch(
        shape,
        tau_epoch,
        size_exponent=exponent,
        reference_dataset_size=reference,
        batch_exponent=target.batch_exponent,
        reference_batch_size=target.reference_batch_size,
    )
    try:
        steps = resolve_tau_iter(tau_epoch=held, tau_iter=tau_iter, steps_per_epoch=shape.steps_per_epoch)
    except ValueError as err:
        scaled = target.scaling_text(n, b)
        held_here = "" if scaled is None else f" (The tau_epoch held at this {target.scaled_by()}: {scaled}.)"
        raise TimescaleError(f"`apply_timescale`: {err}{held_here}") from None
    kind = decay_kind(optimizer)
    if kind not in ("decoupled", "none"):
        raise TimescaleError(unsupported_message(optimizer, 0, caller="apply_timescale", can_skip=False))
    inputs = gather_groups([optimizer], weight_decay_before={}, managed_optimizers={0})
    if not any(g.managed for g in inputs):
        raise TimescaleError(
            f"`apply_timescale` found no param group with `weight_decay > 0` in {type(optimizer).__name__}. Give the"
            " groups that should decay a positive `weight_decay` (any value: it is replaced)."
        )
    groups = decide_groups(inputs, steps)
    write_weight_decays([optimizer], groups)
    applied = AppliedTimescale(
        tau_iter=steps,
        shape=shape,
        groups=groups,
        tau_epoch=held,
        coupling=chosen,
        _optimizer=optimizer,
        _writes=step_writes(groups).get(0, []),
    )
    # on the optimizer that really steps: a wrapper's own hooks may never run (torch's `PostLocalSGDOptimizer`)
    applied._handle = unwrap_optimizer(optimizer).register_step_pre_hook(applied._before_step)
    return applied


def scalar(value: Any) -> Any:
    """A one-element tensor or numpy array/number as the Python number it holds; anything else as given.

    Example:
        >>> scalar(torch.tensor(5.0)), scalar(torch.tensor([3])), scalar(2.5)
        (5.0, 3, 2.5)
        >>> scalar(torch.ones(2)).shape
        torch.Size([2])
    """
    if isinstance(value, torch.Tensor):
        return value.item() if value.numel() == 1 else value
    if type(value).__module__ == "numpy" and getattr(value, "size", None) == 1:
        return value.item()
    return value


def _shown(value: Any) -> str:
    """``repr(value)`` on one line: a tensor or array of several numbers by its type and shape."""
    shape = getattr(value, "shape", None)
    if shape is not None and scalar(value) is value:
        return f"<{type(value).__name__} of shape {tuple(shape)}>"
    return repr(value)


def check_number(owner: str, name: str, value: Any) -> float:
    """A positive finite number (``tau_epoch``, ``tau_iter``) as a float; ``ValueError`` naming it.

    Example:
        >>> check_number("apply_timescale", "tau_epoch", torch.tensor(5.0))
        5.0
        >>> check_number("apply_timescale", "tau_epoch", torch.tensor([5.0, 6.0]))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `apply_timescale(tau_epoch=<Tensor of shape (2,)>)` is not valid: ...
    """
    number = scalar(value)
    if not isinstance(number, numbers.Real):  # a tensor or array of several numbers
        number = None
    hint = f"`{name}` must be a positive finite number (or a one-element tensor holding one)."
    return _checks.positive_number(owner, name, number, hint, shown=_shown(value))


def check_size(owner: str, name: str, value: Any) -> int:
    """A size (``dataset_size``, ``batch_size``, ``num_params``) as a positive int; ``ValueError`` naming it.

    A one-element tensor or numpy number counts as the number it holds.

    Example:
        >>> check_size("apply_timescale", "batch_size", torch.tensor(64))
        64
    """
    number = scalar(value)
    ok = not isinstance(number, bool) and isinstance(number, numbers.Real) and timescale.is_positive_integer(number)
    if not ok:
        raise _checks.invalid(owner, name, value, f"`{name}` must be a positive whole number.", shown=_shown(value))
    return int(number)
