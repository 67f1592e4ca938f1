"""The finder's answer: the :class:`FinderResult` it computes from a complete grid's records, stored on the study.

Every process that finishes a study computes the same answer from its records (:func:`finder_result`) and stores it
on the study as user attributes, with what it was computed with, for ``optuna-dashboard`` (:func:`store_answer`).
Both read the finder's :class:`~lightning_tau.tuner.finder_settings.FinderSettings`, not the finder.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from torch.utils.data import DataLoader

from lightning_tau._constants import Goal
from lightning_tau.tuner.analysis.curve import reduce_metric
from lightning_tau.tuner.finder_settings import FinderSettings
from lightning_tau.tuner.analysis.finder_result import CurvePoint, FinderResult, PrunedPoint
from lightning_tau.tuner.checks import Reduce
from lightning_tau.tuner.study import GridStudy, set_user_attr

__all__ = ["finder_result", "finite", "last_value", "run_value", "store_answer", "tell_value"]


def finder_result(
    settings: FinderSettings,
    records: dict[tuple[float, int], dict[str, Any]],
    full_train: DataLoader,
    dataset_size: int,
    subset_size: int,
) -> FinderResult:
    """The :class:`FinderResult` of the finder with ``settings`` from a complete grid's ``records``, for the full
    run on ``full_train``: the curve of the ``tau_epoch`` values whose every seed completed, the pruned
    ones listed apart."""
    curve, pruned = [], []
    for tau in settings.tau_epochs:
        runs = [records[(tau, seed)] for seed in settings.seeds]
        trained = [r for r in runs if "groups" in r]
        weight_decay = (
            {name: g["weight_decay"] for name, g in trained[0]["groups"].items() if g["decays"]} if trained else {}
        )
        if any("pruned" in r for r in runs):
            pruned.append(
                PrunedPoint(
                    tau_epoch=tau,
                    seeds=list(settings.seeds),
                    pruned_after=[r["pruned"]["after_epoch"] if "pruned" in r else None for r in runs],
                    last_values=[last_value(r, settings.monitor) for r in runs],
                    weight_decay=weight_decay,
                    steps=[int(r["steps"]) for r in runs],
                )
            )
            continue
        curve.append(
            CurvePoint(
                tau_epoch=tau,
                values=[
                    run_value(r, tau, seed, settings.monitor, settings.reduce, settings.mode)
                    for r, seed in zip(runs, settings.seeds)
                ],
                seeds=list(settings.seeds),
                weight_decay=weight_decay,
                steps=[int(r["steps"]) for r in runs],
            )
        )
    if not curve:
        raise ValueError(
            f"`TimescaleFinder(pruner={settings.pruner_setting!r})` pruned every tau_epoch of the grid"
            f" {list(settings.tau_epochs)!r}: there is no curve to suggest from. Use a gentler pruner (e.g. more"
            " warm-up epochs or start-up trials) or pruner=None."
        )
    if not any(math.isfinite(math.fsum(point.values)) for point in curve):  # the seed mean is finite nowhere
        raise ValueError(
            f"`TimescaleFinder(monitor={settings.monitor!r})`: every run diverged (its {settings.monitor} is NaN or"
            f" infinite at every tau_epoch of {[p.tau_epoch for p in curve]!r}), so there is no curve to suggest"
            " from. Lower the learning rate, or try larger tau_epochs (less weight decay)."
        )
    first = next(r for r in records.values() if "groups" in r)
    lrs = {name: g["lr"] for name, g in first["groups"].items() if g["decays"]}
    if not lrs:
        raise ValueError(
            "`TimescaleFinder`: the model has no AdamW param group with a positive weight decay, so there is no"
            " weight decay to tune. Give the groups that should decay a positive `weight_decay` in"
            " `configure_optimizers` (TimescaleCallback replaces the value)."
        )
    world = int(first["world_size"])
    accumulate = int(settings.trainer_kwargs.get("accumulate_grad_batches", 1))
    full_steps_per_epoch = math.ceil(math.ceil(len(full_train) / world) / accumulate)
    return FinderResult.from_curve(
        curve,
        lr=lrs,
        monitor=settings.monitor,
        mode=settings.mode,
        reduce=settings.reduce,
        fraction=settings.fraction,
        dataset_size=dataset_size,
        subset_size=subset_size,
        batch_size=int(first["global_batch_size"]),
        epochs=settings.epochs,
        full_cost=len(settings.tau_epochs) * len(settings.seeds) * settings.epochs * full_steps_per_epoch,
        steps_per_epoch=full_steps_per_epoch,
        window=settings.window,
        pruned=pruned,
    )


def run_value(record: Mapping[str, Any], tau: float, seed: int, monitor: str, reduce: Reduce, mode: Goal) -> float:
    """A run's value on the curve: its ``monitor`` values reduced (:func:`~lightning_tau.tuner.analysis.curve.reduce_metric`);
    an error naming the run when it never validated or logged no ``monitor``."""
    history = record["metrics"]
    if not history:
        raise ValueError(
            f"`TimescaleFinder`: the run tau_epoch={tau:g}, seed={seed} never validated. Check"
            " `check_val_every_n_epoch` / `val_check_interval` in `trainer_kwargs`."
        )
    if not any(monitor in entry for entry in history):
        raise ValueError(
            f"`TimescaleFinder(monitor={monitor!r})`: the run tau_epoch={tau:g}, seed={seed} logged no"
            f" such metric; it logged {sorted(history[-1])}. Pass one of those as `monitor`."
        )
    return reduce_metric([float(entry.get(monitor, math.nan)) for entry in history], reduce, mode)


def last_value(record: Mapping[str, Any], monitor: str) -> float:
    """The last value of ``monitor`` a run logged (``nan``: none, a run not trained)."""
    values = [float(m[monitor]) for m in record["metrics"] if monitor in m]
    return values[-1] if values else math.nan


def store_answer(study: GridStudy, result: FinderResult, settings: FinderSettings, log: Callable[[str], None]) -> None:
    """Put the finder's answer on the study as user attributes (``optuna-dashboard`` shows them): the curve, the
    suggestion, its range and the verdict, and what the answer was computed with (``monitor``, ``mode``, ...)."""
    answer = {
        "suggested_tau_epoch": result.tau_epoch,
        "tau_epoch_range": list(result.tau_epoch_range),
        "verdict": result.verdict,
        "weight_decay": dict(result.weight_decay),
        "curve": [{"tau_epoch": p.tau_epoch, "mean": finite(p.mean), "std": finite(p.std)} for p in result.curve],
        "pruned_tau_epochs": [p.tau_epoch for p in result.pruned],
        "pruned_trials": sum(e is not None for p in result.pruned for e in p.pruned_after),
        "finder": {
            "monitor": settings.monitor,
            "mode": settings.mode,
            "reduce": settings.reduce,
            "window": settings.window,
            "pruner": settings.pruner_setting,
            "max_grid_extensions": settings.max_grid_extensions,
        },
    }
    try:
        for key, value in answer.items():
            set_user_attr(study.study, key, value)
    except Exception as err:  # a read-only or unreachable storage: the answer is still returned and printed
        log(f"could not store the answer on the study ({type(err).__name__}).")


def finite(value: float) -> float | None:
    """``value``, or ``None`` for JSON where it is not finite."""
    return value if math.isfinite(value) else None


def tell_value(record: Mapping[str, Any], monitor: str, reduce: Reduce, mode: Goal, minimize: bool) -> float:
    r"""A trial's Optuna value (for dashboards; the answer is computed from the records): the reduced metric, or the
    worst value (``inf`` where the study minimizes) for a run that diverged."""
    values = [float(m[monitor]) for m in record["metrics"] if monitor in m]
    worst = math.inf if minimize else -math.inf
    value = reduce_metric(values, reduce, mode)
    return value if math.isfinite(value) else worst
