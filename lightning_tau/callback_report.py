"""How ``TimescaleCallback`` reports each decision: at train start the plan, the warnings and the pre-flight summary
(:func:`report_start`), mid-fit the line saying what changed (:func:`report_change`), at every decision the
monitors' targets (:func:`follow`). The text comes from the pure modules; the callback decides *when*.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.utilities import rank_zero_info, rank_zero_warn

from lightning_tau._trainer import RunShapeReader, model_ema_windows, plan_timescales
from lightning_tau.apply import adam_beta2s
from lightning_tau.callback_decision import Decision
from lightning_tau.callback_window import ema_windows
from lightning_tau.changes import change_line, change_parts
from lightning_tau.couplings import Coupling, Plan
from lightning_tau.decide import group_targets
from lightning_tau.diagnostics.monitor import TimescaleMonitor
from lightning_tau.summary import batch_note, size_note, start_summary, start_warnings
from lightning_tau.target import Target
from lightning_tau.width import FixedLambdaPitfall

__all__ = ["above_the_bar", "follow", "plan_run", "report_change", "report_start"]


@contextlib.contextmanager
def above_the_bar(trainer: pl.Trainer) -> Iterator[None]:
    """What is written inside lands on lines of its own above a progress bar that is drawing (at train start a
    ``TQDMProgressBar`` listed before the callback has drawn its bar, and a ``RichProgressBar``'s live display runs
    from the sanity check on): tqdm's bars are cleared first and drawn again after (``tqdm.external_write_mode``),
    and rich's live display prints each line whole, for the terminal to wrap, not broken at rich's width."""
    from tqdm import tqdm

    console = _rich_console(trainer.progress_bar_callback)
    soft = console.soft_wrap if console is not None else False
    try:
        if console is not None:  # rich's redirected stdout/stderr print through this console, above the live display
            console.soft_wrap = True
        with tqdm.external_write_mode(file=sys.stderr):
            yield
    finally:
        if console is not None:
            console.soft_wrap = soft


def _rich_console(bar: Any) -> Any:
    """A ``RichProgressBar``'s console while its live display runs (``None`` for any other bar, or none)."""
    progress = getattr(bar, "progress", None)
    console = getattr(progress, "console", None)
    live = getattr(progress, "live", None)
    if console is None or not hasattr(console, "soft_wrap") or not getattr(live, "is_started", False):
        return None
    return console


def report_change(trainer: pl.Trainer, old: Decision, new: Decision, target: Target) -> bool:
    """Say once, on rank zero, what changed mid-fit between two decisions and the weight decay now in force; return
    whether anything did (nothing is said when nothing did)."""
    parts = change_parts(old.shape, new.shape, old.tau_iter, new.tau_iter, old.groups, new.groups)
    if parts:
        rank_zero_info(
            change_line(
                parts,
                tau_epoch=new.tau_epoch,
                tau_iter=new.tau_iter,
                size_scaling=target.scaling_text(new.shape.dataset_size, new.shape.global_batch_size),
                epoch=trainer.current_epoch,
                step=trainer.global_step,
            )
        )
    return bool(parts)


def plan_run(
    trainer: pl.Trainer, decision: Decision, coupling: Coupling
) -> tuple[int | None, dict[tuple[int, int], Plan]]:
    """Plan each managed group's timescales under ``coupling`` over the optimizer steps left
    (:func:`~lightning_tau._trainer.plan_timescales`); return those steps and each group's plan."""
    return plan_timescales(
        trainer,
        decision.groups,
        steps_per_epoch=decision.shape.steps_per_epoch,
        optimizer_m=decision.optimizer_steps_per_epoch,
        coupling=coupling,
    )


def report_start(
    trainer: pl.Trainer,
    decision: Decision,
    target: Target,
    *,
    resume: Sequence[str],
    decay_vectors: bool,
    summary: bool,
    coupling: Coupling,
    managed_optimizers: set[int],
    beta2_epochs: float | None,
    sample_unit: str,
) -> tuple[dict[tuple[int, int], Plan], list[FixedLambdaPitfall]]:
    """Plan the run (:func:`plan_run`), then say, on rank zero and before training, what was decided and what looks
    wrong; return each group's plan and the fixed-λ muP groups.

    Args:
        trainer: the run.
        decision: the decision at train start.
        target: the target as given.
        resume: what changed since the checkpoint (``changes.resume_changes``).
        decay_vectors: the user said decaying 1-D parameters are meant (no warning).
        summary: print the pre-flight summary (``verbose``), with every EMA window of the run
            (:func:`~lightning_tau.callback_window.ema_windows`).
        coupling: how the weight decay follows the lr schedule.
        managed_optimizers: indices of the optimizers the callback manages (their ``β₂`` windows are listed).
        beta2_epochs: the ``β₂`` window the callback holds, in epochs (``None``: the user's own).
        sample_unit: what ``N`` counts.
    """
    planned_steps, plans = plan_run(trainer, decision, coupling)
    module, shape = trainer.lightning_module, decision.shape
    pitfalls, warnings = start_warnings(
        decision.groups,
        decision.inputs,
        resume=resume,
        width_exponent=target.width_exponent,
        param_groups=None if decay_vectors else [o.param_groups for o in trainer.optimizers],
        names={id(p): n for n, p in module.named_parameters()},
    )
    with above_the_bar(trainer):
        for message in warnings:
            rank_zero_warn(message)
    mults = {f"timescale/width_mult/{g.name}": g.width_mult for g in decision.groups if g.width_mult is not None}
    if mults and trainer.is_global_zero:  # at train start; a monitor logs them again at its (later) logging steps
        for logger in trainer.loggers:
            logger.log_metrics(mults, step=trainer.global_step)
    if summary:
        m = shape.steps_per_epoch
        text = start_summary(
            decision.groups,
            tau_iter=decision.tau_iter,
            tau_epoch=decision.tau_iter / m if m else None,
            shape=shape,
            planned_steps=planned_steps,
            optimizer_steps_per_epoch=decision.optimizer_steps_per_epoch,
            note=decision.note,
            width_exponent=target.width_exponent,
            manual_tau_epoch=None if module.automatic_optimization else decision.tau_epoch,
            size_scaling=size_note(
                target.tau_epoch,
                shape.dataset_size,
                size_exponent=target.size_exponent,
                reference_dataset_size=target.reference_dataset_size,
            ),
            batch_scaling=batch_note(
                target.size_held(shape.dataset_size),
                shape.global_batch_size,
                batch_exponent=target.batch_exponent,
                reference_batch_size=target.reference_batch_size,
            ),
            coupling=coupling,
            plans={
                g.name: plans[(g.optimizer_index, g.group_index)]
                for g in decision.groups
                if (g.optimizer_index, g.group_index) in plans
            },
            windows=ema_windows(
                decision.groups,
                adam_beta2s(trainer.optimizers, managed_optimizers),
                beta2_epochs,
                model_ema_windows(trainer),
            ),
            sample_unit=sample_unit,
        )
        with above_the_bar(trainer):
            rank_zero_info(text)
    return plans, pitfalls


def follow(monitors: Sequence[TimescaleMonitor], shapes: RunShapeReader, decision: Decision, target: Target) -> None:
    """Give each monitor of the run the shape reader, the decision's targets and the size and batch rules."""
    shape, held, m = decision.shape, decision.tau_epoch, decision.optimizer_steps_per_epoch
    targets = group_targets(decision.groups, decision.tau_iters, held, m, shape.steps_per_epoch)
    if held is None and shape.steps_per_epoch:  # a target in steps: the tau_epoch it is at the run's M
        held = decision.tau_iter / shape.steps_per_epoch
    size_rule: dict[str, float] = {}
    if target.size_exponent != 0.0:
        assert target.tau_epoch is not None and target.reference_dataset_size is not None
        size_rule["size_exponent"] = target.size_exponent
        size_rule["reference_dataset_size"] = float(target.reference_dataset_size)
    if target.batch_exponent != 0.0:
        assert target.tau_epoch is not None and target.reference_batch_size is not None
        size_rule["batch_exponent"] = target.batch_exponent
        size_rule["reference_batch_size"] = float(target.reference_batch_size)
    if size_rule:  # the given tau_epoch, at the reference N and B
        assert target.tau_epoch is not None
        size_rule["tau_epoch_at_reference_size"] = target.tau_epoch
    for monitor in monitors:
        monitor.follow(
            shapes,
            tau_iter=decision.tau_iter,
            tau_epoch=held,
            group_targets=targets,
            optimizer_steps_per_epoch=m,
            size_rule=size_rule or None,
        )
