"""The pre-flight table ``TimescaleCallback`` prints at fit start (pure formatting, no Lightning)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lightning_tau import timescale
from lightning_tau._table import table_lines

__all__ = ["GroupTimescale", "format_summary"]


@dataclass
class GroupTimescale:
    """What the callback decided for one param group.

    Attributes:
        name: the group's ``name`` key, else ``pg1``, ``pg2``, ... (``optimizer{i}/`` prefixed with several).
        optimizer_index: index of the optimizer in ``trainer.optimizers``.
        group_index: index of the group in ``optimizer.param_groups``.
        num_params: number of scalar parameters in the group.
        reference_lr: learning rate the timescale is defined at (the scheduler's base or peak lr).
        weight_decay_before: the group's ``weight_decay`` as ``configure_optimizers`` set it.
        weight_decay: the value written (equal to ``weight_decay_before`` for groups left alone).
        decays: whether the callback manages this group (AdamW-family, ``weight_decay_before > 0``).
        width_mult: muP width multiplier, if the parameters or the group carry one.
        planned_timescales: ``sum_t lr_t * weight_decay`` over the planned run, if it could be estimated.
    """

    name: str
    optimizer_index: int
    group_index: int
    num_params: int
    reference_lr: float
    weight_decay_before: float
    weight_decay: float
    decays: bool
    width_mult: float | None = None
    planned_timescales: float | None = None


def format_summary(
    groups: Sequence[GroupTimescale],
    *,
    tau_iter: float,
    tau_epoch: float | None,
    dataset_size: float | None,
    global_batch_size: float | None,
    planned_steps: float | None,
    sources: Sequence[str] = (),
) -> str:
    """Render the pre-flight summary as a fixed-width table.

    Example:
        >>> g = GroupTimescale("pg1", 0, 0, 1000, 1e-3, 0.01, 2.0, True, planned_timescales=1.0)
        >>> print(format_summary([g], tau_iter=500.0, tau_epoch=5.0, dataset_size=1000, global_batch_size=10,
        ...                      planned_steps=500))  # doctest: +NORMALIZE_WHITESPACE
        TimescaleCallback: tau_epoch=5 (tau_iter=500 steps), N=1,000, B=10, M=N/B=100 steps/epoch
          | Group | Params | Width mult | Ref lr | Weight decay    | tau_iter | tau_epoch | Timescales planned
        ---------------------------------------------------------------------------------------------------
        0 | pg1   | 1.0 K  | -          | 0.001  | 0.01 -> 2       | 500      | 5         | 1
        Planned: 500 optimizer steps.
    """
    head = f"TimescaleCallback: tau_epoch={_num(tau_epoch)} (tau_iter={_num(tau_iter)} steps)"
    if dataset_size is not None and global_batch_size is not None:
        head += (
            f", N={dataset_size:,.0f}, B={global_batch_size:,.0f},"
            f" M=N/B={_num(dataset_size / global_batch_size)} steps/epoch"
        )
    columns = ["", "Group", "Params", "Width mult", "Ref lr", "Weight decay", "tau_iter", "tau_epoch"]
    columns.append("Timescales planned")
    rows = []
    for i, g in enumerate(groups):
        if g.decays:
            wd = f"{_num(g.weight_decay_before)} -> {_num(g.weight_decay)}"
            g_tau_iter = _num(timescale.tau_iter(g.reference_lr, g.weight_decay))
            g_tau_epoch = (
                _num(timescale.tau_epoch(g.reference_lr, g.weight_decay, dataset_size, global_batch_size))
                if dataset_size and global_batch_size
                else "-"
            )
        else:
            wd, g_tau_iter, g_tau_epoch = f"{_num(g.weight_decay)} (not managed)", "-", "-"
        rows.append(
            [
                str(i),
                g.name,
                _count(g.num_params),
                _num(g.width_mult),
                _num(g.reference_lr),
                wd,
                g_tau_iter,
                g_tau_epoch,
                _num(g.planned_timescales) if g.decays else "-",
            ]
        )
    out = [head, *table_lines(columns, rows)]
    if planned_steps is not None:
        out.append(f"Planned: {_num(planned_steps)} optimizer steps.")
    out.extend(sources)
    return "\n".join(out)


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}"


def _count(n: int) -> str:
    for unit, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return str(n)
