"""What changed in a run, and what ``TimescaleCallback`` says about it (pure; no torch, no Lightning).

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from lightning_tau.decide import GroupTimescale, RunShape

__all__ = [
    "change_line",
    "change_parts",
    "miscounted_steps_warning",
    "resume_changes",
    "shape_changes",
]


def shape_changes(old: RunShape, new: RunShape) -> list[str]:
    """What differs between two shapes, as ``"name old -> new"`` phrases (empty when nothing that matters did).

    Example:
        >>> shape_changes(RunShape(10, 100, 10), RunShape(3, 100, 40, accumulation=4))
        ['steps per epoch 10 -> 3', 'global batch 10 -> 40', 'accumulation 1 -> 4']
    """
    out = []
    for label, a, b in (
        ("steps per epoch", old.steps_per_epoch, new.steps_per_epoch),
        ("dataset size", old.dataset_size, new.dataset_size),
        ("global batch", old.global_batch_size, new.global_batch_size),
        ("world size", old.world_size, new.world_size),
        ("accumulation", old.accumulation, new.accumulation),
    ):
        if a != b and not (a is not None and b is not None and math.isclose(a, b, rel_tol=1e-12)):
            out.append(f"{label} {_num(a)} -> {_num(b)}")
    return out


def resume_changes(restored: Mapping[str, float | None], shape: RunShape, tau_iter: float | None) -> list[str]:
    """What differs between a checkpoint's run (its callback state) and the resumed run, as phrases.

    Keys the checkpoint does not hold, or values unknown now, are not compared.

    Example:
        >>> resume_changes({"dataset_size": 100, "world_size": 1, "tau_iter": 500.0},
        ...                RunShape(10, 200, 10, world_size=2), 500.0)
        ['dataset_size 100 -> 200', 'world_size 1 -> 2']
    """
    return [
        f"{key} {restored.get(key)!r} -> {new!r}"
        for key, new in (
            ("dataset_size", shape.dataset_size),
            ("world_size", shape.world_size),
            ("global_batch_size", shape.global_batch_size),
            ("steps_per_epoch", shape.steps_per_epoch),
            ("tau_iter", tau_iter),
        )
        if restored.get(key) is not None and new is not None and not math.isclose(restored[key], new, rel_tol=1e-12)  # type: ignore[arg-type]
    ]


def change_parts(
    old_shape: RunShape,
    shape: RunShape,
    old_tau_iter: float,
    tau_iter: float,
    old_groups: Sequence[GroupTimescale],
    groups: Sequence[GroupTimescale],
) -> list[str]:
    """What changed mid-fit between two decisions, as phrases (empty when nothing that matters did).

    Example:
        >>> old = [GroupTimescale("pg1", 0, 0, 10, 1e-3, 0.1, 2.0, True)]
        >>> new = [GroupTimescale("pg1", 0, 0, 10, 1e-3, 0.1, 0.5, True),
        ...        GroupTimescale("head", 0, 1, 10, 1e-2, 0.1, 0.05, True)]
        >>> change_parts(RunShape(10), RunShape(40), 500.0, 2000.0, old, new)  # doctest: +NORMALIZE_WHITESPACE
        ['steps per epoch 10 -> 40', 'tau_iter 500 -> 2000 steps', 'pg1 weight decay 2 -> 0.5',
         "new param group 'head' (managed at lr 0.01): weight decay 0.1 -> 0.05"]
    """
    parts = shape_changes(old_shape, shape)
    if not math.isclose(old_tau_iter, tau_iter, rel_tol=1e-12):
        parts.append(f"tau_iter {old_tau_iter:.4g} -> {tau_iter:.4g} steps")
    previous = {(g.optimizer_index, g.group_index): g for g in old_groups}
    for g in groups:
        old = previous.get((g.optimizer_index, g.group_index))
        if old is None:
            how = f"managed at lr {g.reference_lr:.4g}" if g.managed else "not managed"
            wd = f"{g.weight_decay_before:.4g} -> {g.weight_decay:.4g}" if g.managed else f"{g.weight_decay:.4g}"
            parts.append(f"new param group {g.name!r} ({how}): weight decay {wd}")
        elif g.managed and not math.isclose(old.weight_decay, g.weight_decay, rel_tol=1e-12):
            if not math.isclose(old.reference_lr, g.reference_lr, rel_tol=1e-12):
                parts.append(f"{g.name} reference lr {old.reference_lr:.4g} -> {g.reference_lr:.4g}")
            parts.append(f"{g.name} weight decay {old.weight_decay:.4g} -> {g.weight_decay:.4g}")
    return parts


def change_line(
    parts: Sequence[str],
    *,
    tau_epoch: float | None,
    tau_iter: float,
    epoch: int,
    step: int,
    size_scaling: str | None = None,
) -> str:
    """The one line the callback prints when the run changed mid-fit (``parts`` from :func:`change_parts`).

    ``tau_epoch`` is the one held; ``size_scaling`` says how a dataset-size exponent gave it at the new ``N``.

    Example:
        >>> change_line(["accumulation 1 -> 4"], tau_epoch=5.0, tau_iter=500.0, epoch=2, step=30)
        '`TimescaleCallback` at epoch 2, step 30: accumulation 1 -> 4 (tau_epoch=5 held).'
        >>> change_line(["dataset size 100 -> 400"], tau_epoch=2.5, tau_iter=100.0, epoch=1, step=10,
        ...             size_scaling="tau_epoch 5 x (400/100)^-0.5 = 2.5")
        '`TimescaleCallback` at epoch 1, step 10: dataset size 100 -> 400 (tau_epoch 5 x (400/100)^-0.5 = 2.5 held).'
    """
    if size_scaling is not None:
        held = size_scaling
    else:
        held = f"tau_epoch={tau_epoch:g}" if tau_epoch is not None else f"tau_iter={tau_iter:.4g}"
    return f"`TimescaleCallback` at epoch {epoch}, step {step}: {'; '.join(parts)} ({held} held)."


def miscounted_steps_warning(index: int, counted: int, epoch: int, batches: int, assumed: float) -> str:
    """Manual optimization: an optimizer took ``counted`` steps in a full epoch, not the ``assumed`` ``M``.

    Example:
        >>> miscounted_steps_warning(1, 50, 0, 100, 100.0)[:92]
        '`TimescaleCallback`: optimizer 1 took 50 steps in epoch 0 (100 batches), but its weight deca'
    """
    return (
        f"`TimescaleCallback`: optimizer {index} took {counted} steps in epoch {epoch}"
        f" ({batches} batches), but its weight decay assumed M={assumed:g} steps per epoch,"
        f" so its tau_epoch there was {assumed / counted:.4g} times the target. From the next epoch its M"
        " is the count (counted again every epoch). Pass"
        f" `TimescaleCallback(steps_per_epoch={{{index}: {counted}}})` to have it right from the first step."
    )


def _num(value: float | None) -> str:
    return "?" if value is None else f"{value:.4g}"
