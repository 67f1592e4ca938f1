"""The pre-flight table ``TimescaleCallback`` prints at fit start (pure formatting, no Lightning)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lightning_tau import timescale
from lightning_tau._table import table_lines
from lightning_tau.decide import GroupTimescale, RunShape

__all__ = ["GroupTimescale", "format_summary"]


def format_summary(
    groups: Sequence[GroupTimescale],
    *,
    tau_iter: float,
    tau_epoch: float | None,
    shape: RunShape,
    planned_steps: float | None,
    notes: Sequence[str] = (),
    optimizer_steps_per_epoch: Mapping[int, float] | None = None,
) -> str:
    """Render the pre-flight summary as a fixed-width table.

    A group's ``tau_epoch`` is its ``tau_iter`` over its optimizer's steps per epoch: ``optimizer_steps_per_epoch``
    where an optimizer takes its own number (manual optimization), else the run's ``M``.

    Example:
        >>> g = GroupTimescale("pg1", 0, 0, 1000, 1e-3, 0.01, 2.0, True, planned_timescales=1.0)
        >>> shape = RunShape(100, 1000, 10, sources=("M = 100 optimizer steps per epoch: 100 batches per rank.",))
        >>> print(format_summary([g], tau_iter=500.0, tau_epoch=5.0, shape=shape,
        ...                      planned_steps=500))  # doctest: +NORMALIZE_WHITESPACE
        TimescaleCallback: tau_epoch=5 (tau_iter=500 steps), M=100 steps/epoch, N=1,000, B=10
          | Group | Params | Width mult | Ref lr | Weight decay    | tau_iter | tau_epoch | Timescales planned
        ---------------------------------------------------------------------------------------------------
        0 | pg1   | 1.0 K  | -          | 0.001  | 0.01 -> 2       | 500      | 5         | 1
        Planned: 500 optimizer steps.
        M = 100 optimizer steps per epoch: 100 batches per rank.
    """
    head = f"TimescaleCallback: tau_epoch={_num(tau_epoch)} (tau_iter={_num(tau_iter)} steps)"
    steps_per_epoch = shape.steps_per_epoch
    if steps_per_epoch is not None:
        head += f", M={_num(steps_per_epoch)} steps/epoch"
    if shape.dataset_size is not None:
        head += f", N={shape.dataset_size:,.0f}"
    if shape.global_batch_size is not None:
        head += f", B={shape.global_batch_size:,.0f}"
    columns = ["", "Group", "Params", "Width mult", "Ref lr", "Weight decay", "tau_iter", "tau_epoch"]
    columns.append("Timescales planned")
    rows = []
    own_m = optimizer_steps_per_epoch or {}
    for i, g in enumerate(groups):
        if g.decays:
            wd = f"{_num(g.weight_decay_before)} -> {_num(g.weight_decay)}"
            g_tau_iter = _num(timescale.tau_iter(g.reference_lr, g.weight_decay))
            m = own_m.get(g.optimizer_index, steps_per_epoch)
            g_tau_epoch = _num(timescale.tau_iter(g.reference_lr, g.weight_decay) / m) if m else "-"
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
    out.extend(shape.sources)
    out.extend(notes)
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
