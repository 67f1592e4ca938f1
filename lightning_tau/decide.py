"""Decide each param group's weight decay from the run's shape and a target timescale (pure; no torch, no Lightning).

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from lightning_tau import timescale, width
from lightning_tau.target import WidthExponent, batch_scaled_tau_epoch, size_scaled_tau_epoch
from lightning_tau.width import NO_MUP

__all__ = [
    "GroupInput",
    "GroupTimescale",
    "RunShape",
    "NO_MUP",
    "decide_groups",
    "group_targets",
    "held_tau_epoch",
    "model_width_mult",
    "optimizer_tau_iters",
    "resolve_tau_iter",
    "run_tau_iter",
    "step_writes",
    "uses_mup",
]


@dataclass(frozen=True)
class RunShape:
    """How many optimizer steps an epoch of this run takes, and the facts it came from.

    Attributes:
        steps_per_epoch: ``M``, the optimizer steps one epoch really runs on each rank (``None`` when unknown,
            e.g. an endless ``IterableDataset`` with no ``dataset_size`` given).
        dataset_size: ``N``, samples (or tokens) per epoch summed over the train dataloaders, if known.
        global_batch_size: ``B``, per-device batch x world size x accumulation, if known.
        world_size: processes that train together.
        accumulation: gradient accumulation in force.
        sources: where ``M``, ``N`` and ``B`` came from, one sentence each, for the summary.
        problems: why what is ``None`` could not be read, one sentence each, for the error that needs it.

    Example:
        >>> shape = RunShape(steps_per_epoch=3, dataset_size=100, global_batch_size=40, accumulation=4)
        >>> shape.steps_per_epoch
        3
    """

    steps_per_epoch: float | None
    dataset_size: float | None = None
    global_batch_size: float | None = None
    world_size: int = 1
    accumulation: int = 1
    sources: tuple[str, ...] = field(default=(), compare=False)
    problems: tuple[str, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class GroupInput:
    """One param group as the decision sees it.

    Attributes:
        name: the group's ``name`` key, else ``pg1``, ``pg2``, ... (``optimizer{i}/`` prefixed with several).
        optimizer_index: index of the optimizer in the run's list of optimizers.
        group_index: index of the group in ``optimizer.param_groups``.
        num_params: scalar parameters in the group.
        reference_lr: learning rate the timescale is defined at (the schedule's base or peak lr).
        weight_decay_before: the group's ``weight_decay`` as the user configured it.
        managed: whether to set this group's decay (decoupled optimizer and ``weight_decay_before > 0``).
        width_mult: muP width multiplier, if the parameters or the group carry one (``None``: 1, or unknown).
        width_problem: why the group has no single width multiplier (no ``width_mult`` key and no mup ``infshape``
            on every parameter, or parameters of several multipliers); ``None`` when ``width_mult`` (or 1) is it.
            Only a width exponent other than 1 needs the multiplier.
    """

    name: str
    optimizer_index: int
    group_index: int
    num_params: int
    reference_lr: float
    weight_decay_before: float
    managed: bool
    width_mult: float | None = None
    width_problem: str | None = None


@dataclass
class GroupTimescale:
    """What was decided for one param group.

    Attributes:
        name: the group's ``name`` key, else ``pg1``, ``pg2``, ... (``optimizer{i}/`` prefixed with several).
        optimizer_index: index of the optimizer in ``trainer.optimizers``.
        group_index: index of the group in ``optimizer.param_groups``.
        num_params: number of scalar parameters in the group.
        reference_lr: learning rate the timescale is defined at (the scheduler's base or peak lr).
        weight_decay_before: the group's ``weight_decay`` as ``configure_optimizers`` set it.
        weight_decay: the value to write (equal to ``weight_decay_before`` for groups left alone).
        managed: whether this callback sets the group's decay (decoupled optimizer, ``weight_decay_before > 0``);
            :attr:`decays` is its older name.
        width_mult: muP width multiplier, if the parameters or the group carry one.
        planned_timescales: ``sum_t lr_t * weight_decay`` from this decision to the end of the planned run, if it
            could be estimated.
        tau_iter: the timescale this group holds, in its optimizer's steps (``None`` for groups left alone): the
            run's ``tau_iter``, times ``S ** (1 - width_exponent)`` in a muP model of width multiplier ``S``
            (:func:`model_width_mult`), whatever the group's own ``width_mult``.
        width_exponent: the exponent ``alpha`` this group was decided with (``weight_decay ∝ S ** alpha`` across
            widths for a hidden group, whose lr is ``lr_base / S``).
    """

    name: str
    optimizer_index: int
    group_index: int
    num_params: int
    reference_lr: float
    weight_decay_before: float
    weight_decay: float
    managed: bool
    width_mult: float | None = None
    planned_timescales: float | None = None
    tau_iter: float | None = None
    width_exponent: float = 1.0

    @property
    def decays(self) -> bool:
        """The older name of :attr:`managed`."""
        return self.managed


def resolve_tau_iter(
    *, tau_epoch: float | None = None, tau_iter: float | None = None, steps_per_epoch: float | None = None
) -> float:
    """The target timescale in optimizer steps: ``tau_iter`` as given, or ``tau_epoch * M``.

    Raises:
        ValueError: both or neither target given; ``tau_epoch`` without a known ``M``; or a ``tau_iter`` of one
            step or less, where ``lr * weight_decay >= 1`` makes every step flip or zero the weights. The message
            names the smallest valid value for this run.

    Example:
        >>> resolve_tau_iter(tau_epoch=5.0, steps_per_epoch=3)
        15.0
        >>> resolve_tau_iter(tau_epoch=0.2, steps_per_epoch=3)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: `tau_epoch=0.2` is 0.6 optimizer steps at M=3 steps per epoch, ... Use `tau_epoch` above 0.3333 ...
    """
    if (tau_epoch is None) == (tau_iter is None):
        raise ValueError(f"Give exactly one of `tau_epoch` and `tau_iter`, got {tau_epoch=!r} and {tau_iter=!r}.")
    if tau_iter is not None:
        steps = timescale.check_positive("tau_iter", tau_iter)
        if steps <= 1:
            raise ValueError(_too_short(f"`tau_iter={tau_iter!r}` optimizer steps", steps) + " Use `tau_iter > 1`.")
        return steps
    assert tau_epoch is not None
    epochs = timescale.check_positive("tau_epoch", tau_epoch)
    if steps_per_epoch is None:
        raise ValueError(
            f"`tau_epoch={tau_epoch!r}` needs the optimizer steps per epoch, which this run does not tell (an"
            " endless train dataloader?). Pass `dataset_size` and `batch_size` (M = dataset_size / batch_size),"
            " or give the target as `tau_iter` in optimizer steps."
        )
    m = timescale.check_positive("steps_per_epoch", steps_per_epoch)
    steps = epochs * m
    if steps <= 1:
        raise ValueError(
            _too_short(f"`tau_epoch={tau_epoch!r}` is {steps:.4g} optimizer steps at M={m:.4g} steps per epoch,", steps)
            + f" Use `tau_epoch` above {1 / m:.4g} (one optimizer step); good values are usually several epochs."
        )
    return steps


def decide_groups(
    groups: Sequence[GroupInput], tau_iter: float | Mapping[int, float], *, width_exponent: WidthExponent = 1.0
) -> list[GroupTimescale]:
    r"""Each managed group's weight decay for ``tau_iter``: ``1 / (reference_lr * tau_iter)``; others unchanged.

    Each group uses its own reference lr, so muP groups at ``lr / s`` get ``weight_decay * s``: with
    ``width_exponent=1`` (the default, Wang & Aitchison's Eq. improved_mup) every group holds the same ``tau_iter``.
    Another exponent ``alpha`` scales *every* decaying group's timescale by ``S ** (1 - alpha)``, ``S`` the model's
    width multiplier (:func:`model_width_mult`: the largest muP multiplier among the run's groups, 1 without one):

    .. math:: \lambda_{group} = \frac{S^{\alpha - 1}}{\eta_{group} \, \tau_{iter}}
        \quad (= S^{\alpha} \lambda_{base} \text{ for a hidden group, } \eta_{group} = \eta_{base} / S;
        \ S^{\alpha - 1} \lambda_{base} \text{ for a group at } \eta_{base})

    That is what the finder's width axis measures: it trains each width at ``width_exponent=1``, where sweeping
    ``tau_epoch`` moves every decaying group's ``λ_base`` together, so the exponent it reports (``alpha = 1 + e``)
    moves every group the same way; it is also Qiu et al.'s independent decay ``∝ 1/width`` (``η λ ∝ S^(alpha - 1)``
    for every parameter) at ``alpha = 0``. A group at ``s = 1`` (biases, norms, embeddings, mup's ``MuReadout``) moves
    with the model. In a model at ``S = 1`` the exponent changes nothing.

    Args:
        groups: every param group of the run.
        tau_iter: the target timescale in optimizer steps, one for every optimizer or one per optimizer index
            (optimizers stepped a different number of times per epoch hold the same ``tau_epoch``).
        width_exponent: ``alpha``, one number for every group or a mapping from group name to ``alpha`` (groups it
            does not name keep 1), each at the model's ``S``. See :func:`check_width_exponent`.

    Raises:
        ValueError: a managed group whose reference lr is not positive and finite; a ``width_exponent`` mapping
            that names a group the run does not have; a group with ``alpha != 1`` whose width multiplier cannot be
            read (``width_problem``), or a multiplier that is not positive and finite; or a group timescale of one
            step or less.

    Example:
        >>> groups = [GroupInput("hidden", 0, 0, 64, 1e-3 / 4, 0.1, True, width_mult=4.0),
        ...           GroupInput("embed", 0, 1, 64, 1e-3, 0.1, True, width_mult=1.0),
        ...           GroupInput("bias", 0, 2, 8, 1e-3, 0.0, False)]
        >>> [(g.name, round(g.weight_decay, 6)) for g in decide_groups(groups, tau_iter=500.0)]
        [('hidden', 8.0), ('embed', 2.0), ('bias', 0.0)]
        >>> # lambda ∝ sqrt(S) (Fan et al. 2025) in a model at S = 4: every decaying group's tau_iter x 2
        >>> [(g.name, round(g.weight_decay, 6)) for g in decide_groups(groups, 500.0, width_exponent=0.5)]
        [('hidden', 4.0), ('embed', 1.0), ('bias', 0.0)]
    """
    exponents = _group_exponents(groups, width_exponent)
    mup = uses_mup(groups)  # without it every group is at s = 1, unannotated ones too: the exponent changes nothing
    model_s: float | None = None  # S, read once when a group needs it
    decided = []
    for g in groups:
        weight_decay = g.weight_decay_before
        alpha = exponents.get(g.name, 1.0)
        group_tau_iter = None
        if g.managed:
            if not (g.reference_lr > 0 and math.isfinite(g.reference_lr)):
                raise ValueError(
                    f"Cannot set a timescale for param group {g.name!r}: its reference learning rate is"
                    f" {g.reference_lr!r}. Give it a positive lr, or `weight_decay=0` to leave it out."
                )
            group_tau_iter = tau_iter if isinstance(tau_iter, (int, float)) else tau_iter[g.optimizer_index]
            if alpha != 1.0 and (mup or g.width_problem != NO_MUP):
                model_s = model_width_mult(groups) if model_s is None else model_s
                group_tau_iter = _width_scaled_tau_iter(g, group_tau_iter, alpha, model_s)
            weight_decay = timescale.weight_decay_for_tau_iter(g.reference_lr, group_tau_iter)
        decided.append(
            GroupTimescale(
                name=g.name,
                optimizer_index=g.optimizer_index,
                group_index=g.group_index,
                num_params=g.num_params,
                reference_lr=g.reference_lr,
                weight_decay_before=g.weight_decay_before,
                weight_decay=weight_decay,
                managed=g.managed,
                width_mult=g.width_mult,
                tau_iter=group_tau_iter,
                width_exponent=alpha,
            )
        )
    return decided


def uses_mup(groups: Sequence[GroupInput]) -> bool:
    """Whether any group of the run has a width multiplier: a ``width_mult`` other than 1, or a parameter mup
    annotated. Without one every group is at ``s = 1``, where a ``width_exponent`` has no effect (and no group
    needs to declare ``width_mult: 1``).

    Example:
        >>> plain = GroupInput("decay", 0, 0, 64, 1e-3, 0.1, True, width_problem=NO_MUP)
        >>> uses_mup([plain]), uses_mup([plain, GroupInput("hidden", 0, 1, 64, 1e-3, 0.1, True, width_mult=4.0)])
        (False, True)
    """
    return any((g.width_mult or 1.0) != 1.0 for g in groups) or any(
        g.width_problem is not None and g.width_problem != NO_MUP for g in groups
    )


def model_width_mult(groups: Sequence[GroupInput] | Sequence[GroupTimescale]) -> float:
    """``S``, the model's muP width multiplier: the largest ``width_mult`` other than 1 among ``groups``; 1 when no
    group has one (:func:`lightning_tau.width.model_width_mult`, the one definition the transfer table shares).

    Raises:
        ValueError: a group whose multiplier is not positive and finite (named).

    Example:
        >>> model_width_mult([GroupInput("embed", 0, 0, 8, 1e-3, 0.1, True, width_mult=1.0),
        ...                   GroupInput("hidden", 0, 1, 64, 2.5e-4, 0.1, True, width_mult=4.0)])
        4.0
    """
    return width.model_width_mult((g.name, g.width_mult) for g in groups)


def held_tau_epoch(
    shape: RunShape,
    tau_epoch: float | None,
    *,
    size_exponent: float,
    reference_dataset_size: float | None,
    epoch: int | None = None,
    batch_exponent: float = 0.0,
    reference_batch_size: float | None = None,
) -> float | None:
    """The ``tau_epoch`` to hold for this run's shape: :func:`size_scaled_tau_epoch` at the shape's ``N``, times
    ``(B / reference_batch_size) ** batch_exponent`` at its global ``B`` (:func:`batch_scaled_tau_epoch`).

    ``None`` for a target in steps. Re-decided from each shape, so a reloaded dataloader of a new size, or a new
    accumulation (``GradientAccumulationScheduler``) or batch size, gets the ``tau_epoch`` of its ``N`` and ``B``.

    Raises:
        ValueError: a nonzero ``size_exponent`` (``batch_exponent``) on a run whose ``N`` (``B``) cannot be read
            (why, and what to pass).

    Example:
        >>> held_tau_epoch(RunShape(50, 50_000), 8.0, size_exponent=-0.5, reference_dataset_size=12_500)
        4.0
        >>> held_tau_epoch(RunShape(50, 50_000, 256), 8.0, size_exponent=0.0, reference_dataset_size=None,
        ...                batch_exponent=1.0, reference_batch_size=128)
        16.0
        >>> held_tau_epoch(RunShape(50, problems=("No N.",)), 8.0, size_exponent=-0.5,
        ...                reference_dataset_size=1)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: `TimescaleCallback(size_exponent=-0.5)` needs the run's dataset size N: No N. Pass ...
    """
    if tau_epoch is None:
        return tau_epoch
    when = "" if epoch is None else f" at epoch {epoch}"
    why = " ".join(shape.problems) or "it could not be read."
    held = tau_epoch
    if size_exponent != 0.0:
        if shape.dataset_size is None:
            raise ValueError(
                f"`TimescaleCallback(size_exponent={size_exponent:g})`{when} needs the run's dataset size N: {why}"
                " Pass `TimescaleCallback(dataset_size=...)` (in the unit of reference_dataset_size)."
            )
        held = size_scaled_tau_epoch(
            held, shape.dataset_size, size_exponent=size_exponent, reference_dataset_size=reference_dataset_size
        )
    if batch_exponent != 0.0:
        if shape.global_batch_size is None:
            hint = "" if "batch_size=" in why else " Pass `TimescaleCallback(batch_size=...)` (the global B)."
            raise ValueError(
                f"`TimescaleCallback(batch_exponent={batch_exponent:g})`{when} needs the run's global batch size B:"
                f" {why}{hint}"
            )
        held = batch_scaled_tau_epoch(
            held, shape.global_batch_size, batch_exponent=batch_exponent, reference_batch_size=reference_batch_size
        )
    return held


def _group_exponents(groups: Sequence[GroupInput], width_exponent: WidthExponent) -> dict[str, float]:
    """``alpha`` per group name; a mapping naming a group the run does not have is an error."""
    if not isinstance(width_exponent, Mapping):
        return {g.name: float(width_exponent) for g in groups}
    known = [g.name for g in groups]
    unknown = sorted(set(width_exponent) - set(known))
    if unknown:
        raise ValueError(
            f"`width_exponent` names param group(s) {unknown} that this run does not have. Its groups are {known}"
            " (a group's `name` key, else pg1, pg2, ...; `optimizer{i}/` prefixed with several optimizers)."
        )
    return {name: float(alpha) for name, alpha in width_exponent.items()}


def _width_scaled_tau_iter(g: GroupInput, tau_iter: float, alpha: float, model_s: float) -> float:
    """``tau_iter * S ** (1 - alpha)`` for the model's width multiplier ``S``; an error when the group's own
    multiplier is unknown (``S`` is the largest of the groups', so one unread could be it)."""
    if g.width_problem is not None:
        raise ValueError(
            f"`width_exponent={alpha:g}` for param group {g.name!r} needs its muP width multiplier s, but"
            f" {g.width_problem}. Call `mup.set_base_shapes` on the model, put a `width_mult` key on the group (1"
            " for a group whose lr does not scale with width; `build_param_groups` does both), or give the group"
            " exponent 1 with"
            f" `width_exponent={{..., {g.name!r}: 1.0}}`."
        )
    if model_s == 1.0:
        return tau_iter
    scaled = tau_iter * model_s ** (1.0 - alpha)
    if scaled <= 1:
        raise ValueError(
            _too_short(
                f"`width_exponent={alpha:g}` gives param group {g.name!r} (model S={model_s:g}) a timescale of"
                f" {scaled:.4g} steps,",
                scaled,
            )
            + " Use a longer target timescale or an exponent nearer 1."
        )
    return scaled


def run_tau_iter(
    shape: RunShape, *, tau_epoch: float | None, tau_iter: float | None, epoch: int | None = None
) -> float:
    """The run's ``tau_iter`` for ``shape`` as ``TimescaleCallback`` decides it: :func:`resolve_tau_iter`, with
    the reason ``M`` could not be read when a ``tau_epoch`` needs it, and the callback named in the message.

    Args:
        shape: the run's shape.
        tau_epoch: the target in epochs, or ``None``.
        tau_iter: the target in optimizer steps, or ``None``.
        epoch: the epoch of a decision mid-fit (named in the message, with where ``M`` came from); ``None`` at
            train start.

    Example:
        >>> run_tau_iter(RunShape(100), tau_epoch=5.0, tau_iter=None)
        500.0
        >>> run_tau_iter(RunShape(1, sources=("M = 1.",)), tau_epoch=0.5, tau_iter=None, epoch=3)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: `TimescaleCallback` at epoch 3 (M = 1.): `tau_epoch=0.5` is 0.5 optimizer steps at M=1 ...
    """
    if tau_epoch is not None and shape.steps_per_epoch is None and shape.problems:
        raise ValueError(" ".join(shape.problems))
    try:
        return resolve_tau_iter(tau_epoch=tau_epoch, tau_iter=tau_iter, steps_per_epoch=shape.steps_per_epoch)
    except ValueError as err:
        when = "" if epoch is None else f" at epoch {epoch} ({' '.join(shape.sources)})"
        raise ValueError(f"`TimescaleCallback`{when}: {err}") from None


def optimizer_tau_iters(
    num_optimizers: int,
    tau_iter: float,
    *,
    tau_epoch: float | None,
    optimizer_m: Mapping[int, float],
    epoch: int | None = None,
) -> float | dict[int, float]:
    """The run's ``tau_iter``, or one per optimizer index when an optimizer takes its own number of steps per epoch
    (``tau_epoch`` is held in each optimizer's own steps; a ``tau_iter`` target is in steps already).

    Args:
        num_optimizers: how many optimizers the run has.
        tau_iter: the run's ``tau_iter``.
        tau_epoch: the target in epochs (``None``: the target is ``tau_iter``).
        optimizer_m: optimizer index -> its own ``M``
            (:func:`~lightning_tau.optimizer_steps.optimizer_steps_per_epoch`).
        epoch: the epoch of a decision mid-fit, for the message; ``None`` at train start.

    Example:
        >>> optimizer_tau_iters(2, 500.0, tau_epoch=5.0, optimizer_m={1: 50})
        {0: 500.0, 1: 250.0}
        >>> optimizer_tau_iters(2, 500.0, tau_epoch=None, optimizer_m={1: 50})
        500.0
    """
    if not optimizer_m or tau_epoch is None:
        return tau_iter
    out: dict[int, float] = {}
    for i in range(num_optimizers):
        if i not in optimizer_m:
            out[i] = tau_iter
            continue
        try:
            out[i] = resolve_tau_iter(tau_epoch=tau_epoch, steps_per_epoch=optimizer_m[i])
        except ValueError as err:
            when = "" if epoch is None else f" at epoch {epoch}"
            raise ValueError(f"`TimescaleCallback`{when}, optimizer {i}: {err}") from None
    return out


def group_targets(
    groups: Sequence[GroupTimescale],
    tau_iters: float | Mapping[int, float],
    tau_epoch: float | None,
    optimizer_m: Mapping[int, float],
    steps_per_epoch: float | None,
) -> dict[tuple[int, int], tuple[float, float | None]]:
    """``(tau_iter, tau_epoch)`` each managed group holds, for the monitor: its width's ``tau_iter``, and
    ``tau_epoch`` in its own optimizer's steps per epoch (the given ``tau_epoch`` exactly at the base width).

    Args:
        groups: the decision per param group.
        tau_iters: the ``tau_iter`` each optimizer holds (:func:`optimizer_tau_iters`).
        tau_epoch: the target in epochs, or ``None`` for a target in steps.
        optimizer_m: optimizer index -> its own ``M`` where not the run's.
        steps_per_epoch: the run's ``M`` (``None``: unknown).

    Example:
        >>> g = GroupTimescale("hidden", 0, 0, 64, 1e-3, 0.1, 1.0, True, width_mult=4.0, tau_iter=1000.0)
        >>> group_targets([g], 500.0, 5.0, {}, 100)
        {(0, 0): (1000.0, 10.0)}
        >>> group_targets([g], 500.0, None, {0: 50}, 100)
        {(0, 0): (1000.0, 20.0)}
    """
    out: dict[tuple[int, int], tuple[float, float | None]] = {}
    for g in groups:
        if not g.managed or g.tau_iter is None:
            continue
        if tau_epoch is not None:
            held = tau_iters[g.optimizer_index] if isinstance(tau_iters, Mapping) else tau_iters
            epochs: float | None = tau_epoch * (g.tau_iter / held)  # times S ** (1 - alpha)
        else:
            m = optimizer_m.get(g.optimizer_index, steps_per_epoch)
            epochs = g.tau_iter / m if m else None
        out[(g.optimizer_index, g.group_index)] = (g.tau_iter, epochs)
    return out


def step_writes(groups: Sequence[GroupTimescale]) -> dict[int, list[tuple[int, float, float]]]:
    """Optimizer index -> ``(group index, weight decay at the reference lr, reference lr)`` of each managed group:
    what the step pre-hook needs to write a coupling's ``λ_t`` (``couplings.decay_at``) before every step.

    Example:
        >>> gs = [GroupTimescale(n, 0, j, 1, lr, wd, wd, d, tau_iter=500.0 if d else None)
        ...       for j, (n, d, lr, wd) in enumerate([("a", True, 1e-3, 2.0), ("b", False, 1e-3, 0.0),
        ...                                           ("c", True, 5e-4, 4.0)])]
        >>> step_writes(gs)
        {0: [(0, 2.0, 0.001), (2, 4.0, 0.0005)]}
    """
    out: dict[int, list[tuple[int, float, float]]] = {}
    for g in groups:
        if g.managed:
            out.setdefault(g.optimizer_index, []).append((g.group_index, g.weight_decay, g.reference_lr))
    return out


def _too_short(what: str, steps: float) -> str:
    return (
        f"{what} so `lr * weight_decay = {1 / steps:.4g}` (>= 1): every step would shrink the weights to zero or past"
        " it, and training diverges."
    )
