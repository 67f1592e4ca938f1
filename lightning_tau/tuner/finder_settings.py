"""``FinderSettings``: every argument of :class:`~lightning_tau.tuner.finder.TimescaleFinder`, checked once, frozen.

:meth:`FinderSettings.build` runs the checks of the finder's constructor in named steps (the axis, the grid and
seeds, the metric, the trainer, where the study lives), each through the argument checks of
:mod:`lightning_tau.tuner.checks`; the finder holds the result as ``finder.settings``, and the modules that work
for it (:mod:`~lightning_tau.tuner.collect`, :mod:`~lightning_tau.tuner.axis_runner`,
:mod:`~lightning_tau.tuner.study_key`) take these settings, never the finder: nothing below the finder imports it.
Not to be confused with :mod:`lightning_tau.tuner.checks` (the checks of single arguments) or with a study's
stored settings (:func:`~lightning_tau.tuner.study_key.study_settings`, what keys a study). The module map:
``docs/architecture.rst``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from optuna.pruners import BasePruner
from optuna.storages import BaseStorage

from lightning_tau import _checks
from lightning_tau._constants import GOALS, Goal
from lightning_tau.tuner.analysis.curve import DEFAULT_TAU_EPOCHS
from lightning_tau.tuner.analysis.grid_extension import DEFAULT_MAX_GRID_EXTENSIONS
from lightning_tau.tuner.pruning import make_pruner, pruner_setting
from lightning_tau.tuner.checks import (
    DEFAULT_FRACTION,
    PrunerName,
    Reduce,
    check_axis,
    check_fractions,
    check_grid,
    check_grid_extensions,
    check_pruner,
    check_root_dir,
    check_seed_count,
    check_storage,
    check_tolerance,
    check_trainer_kwargs,
    check_widths,
)
from lightning_tau.tuner.axes import Axis
from lightning_tau.tuner.study import STALE_SECONDS

__all__ = ["FinderSettings"]


@dataclasses.dataclass(frozen=True)
class FinderSettings:
    """The checked arguments of :class:`~lightning_tau.tuner.finder.TimescaleFinder` (see it for each one's
    meaning), with what follows from them: ``epochs`` (``trainer_kwargs["max_epochs"]``), ``auto_seeds``, the
    Optuna ``pruner`` and its ``pruner_setting``. Build it with :meth:`build`, which checks every argument.

    Example:
        >>> s = FinderSettings.build(tau_epochs=(2, 8, 32), trainer_kwargs={"max_epochs": 10})
        >>> s.tau_epochs, s.seeds, s.fraction, s.epochs, s.axis.name
        ((2.0, 8.0, 32.0), (0, 1, 2), 0.25, 10, 'fraction')
        >>> FinderSettings.build(axis="dataset_size", fractions=(0.1, 0.5), trainer_kwargs={"max_epochs": 10}).fraction
        0.5
    """

    #: the axis, resolved from the string given (:func:`~lightning_tau.tuner.axes.resolve_axis`)
    axis: Axis
    fraction: float
    #: ``axis="width"``: the widths ``make_model`` is called with, increasing
    widths: tuple[int, ...] | None
    #: ``axis="dataset_size"``: the fractions of the training set, increasing
    fractions: tuple[float, ...] | None
    #: the grid of the round being trained: ``base_tau_epochs`` and the points the grid extension added
    #: (:mod:`lightning_tau.tuner.analysis.grid_extension`)
    tau_epochs: tuple[float, ...]
    #: the seeds of the sweep (with ``seeds="auto"``: of the stage being trained, ``0 .. n - 1``)
    seeds: tuple[int, ...]
    #: whether ``seeds="auto"``: seeds added in stages up to ``max_seeds`` until every published rule is decided
    auto_seeds: bool
    max_seeds: int
    monitor: str
    mode: Goal
    reduce: Reduce
    trainer_kwargs: dict[str, Any]
    epochs: int
    root_dir: Path
    subset_seed: int
    window: int
    progress: bool
    verbose: bool
    storage: str | Path | BaseStorage | None
    study_name: str | None
    workers: int
    #: torch threads in each process that trains trials: a number, or ``"auto"`` (``cores // workers``)
    threads: int | Literal["auto"]
    stale_after: float
    level: float
    #: along an axis: the factor by which the best value may move over the axis's range and still follow a
    #: published rule (:mod:`lightning_tau.tuner.analysis.rules`)
    tolerance: float
    #: the Optuna pruner the trials report to (``None``: no pruning)
    pruner: BasePruner | None
    #: the pruner as the study's settings hold it: its name, or an instance's class and attributes
    pruner_setting: Any
    #: the most steps the grid grows by at each end where an optimum sits on it (0: the grid as given)
    max_grid_extensions: int
    #: the grid as given: what keys the studies (the points added go into the same studies)
    base_tau_epochs: tuple[float, ...]

    @classmethod
    def build(
        cls,
        fraction: float | None = None,
        tau_epochs: Sequence[float] = DEFAULT_TAU_EPOCHS,
        seeds: Sequence[int] | Literal["auto"] | None = None,
        monitor: str = "val_loss",
        mode: Goal = "min",
        reduce: Reduce = "last",
        trainer_kwargs: Mapping[str, Any] | None = None,
        root_dir: str | Path = "tau_runs/find",
        subset_seed: int = 0,
        window: int = 1,
        progress: bool = True,
        verbose: bool = True,
        storage: str | Path | BaseStorage | None = None,
        study_name: str | None = None,
        workers: int = 1,
        threads: int | Literal["auto"] = 1,
        stale_after: float = STALE_SECONDS,
        axis: str | Axis = "fraction",
        widths: Sequence[int] | None = None,
        fractions: Sequence[float] | None = None,
        level: float = 0.95,
        pruner: PrunerName | BasePruner | None = None,
        tolerance: float | None = None,
        max_seeds: int | None = None,
        max_grid_extensions: int = DEFAULT_MAX_GRID_EXTENSIONS,
    ) -> FinderSettings:
        """The settings of ``TimescaleFinder(...)`` with these arguments (the same names and defaults), each checked
        in this order: the axis and what it uses, the fraction, the grid and seeds, the metric, the trainer, and
        where the study lives and who trains it.

        Raises:
            ValueError: the first bad argument, naming it and its value, and saying what to use.
        """
        axis_, widths_, fractions_, level = _axis_step(axis, fraction, widths, fractions, level, pruner)
        fraction = _fraction_step(fraction, fractions_)
        tau_epochs_, (seeds_, auto_seeds, most), tolerance_, extensions = (
            check_grid(tau_epochs),
            check_seed_count(seeds, max_seeds, axis_),
            check_tolerance(tolerance, axis_),
            check_grid_extensions(max_grid_extensions),
        )
        monitor, mode, reduce = _metric_step(monitor, mode, reduce)
        trainer, epochs, pruner_, setting = _trainer_step(trainer_kwargs, pruner)
        places = _study_step(root_dir, subset_seed, window, storage, study_name, workers, threads, stale_after)
        return cls(
            axis=axis_,
            fraction=fraction,
            widths=widths_,
            fractions=fractions_,
            tau_epochs=tau_epochs_,
            seeds=seeds_,
            auto_seeds=auto_seeds,
            max_seeds=most,
            monitor=monitor,
            mode=mode,
            reduce=reduce,
            trainer_kwargs=trainer,
            epochs=epochs,
            progress=bool(progress),
            verbose=bool(verbose),
            level=level,
            tolerance=tolerance_,
            pruner=pruner_,
            pruner_setting=setting,
            max_grid_extensions=extensions,
            base_tau_epochs=tau_epochs_,
            **places,
        )

    @property
    def accumulate(self) -> int:
        """``accumulate_grad_batches`` of every run (1 unless ``trainer_kwargs`` sets it)."""
        return int(self.trainer_kwargs.get("accumulate_grad_batches", 1))

    def grid_order(self) -> list[tuple[float, int]]:
        """The grid in the order its trials are enqueued: ``tau_epoch`` by ``tau_epoch``; with a pruner, seed by
        seed (every ``tau_epoch`` of the first seed first), so that the pruner compares a run with the other
        ``tau_epoch`` values early and a pruned ``tau_epoch``'s other seeds are not trained at all.

        Example:
            >>> FinderSettings.build(tau_epochs=(2, 8), seeds=(0, 1), trainer_kwargs={"max_epochs": 1}).grid_order()
            [(2.0, 0), (2.0, 1), (8.0, 0), (8.0, 1)]
        """
        if self.pruner is not None:
            return [(tau, seed) for seed in self.seeds for tau in self.tau_epochs]
        return [(tau, seed) for tau in self.tau_epochs for seed in self.seeds]


# --- the checking steps of FinderSettings.build, in its order ----------------------------------------------------


def _axis_step(
    axis: Any, fraction: Any, widths: Any, fractions: Any, level: Any, pruner: Any
) -> tuple[Axis, tuple[int, ...] | None, tuple[float, ...] | None, float]:
    """The axis and what it uses: ``(axis, widths, fractions, level)``; the pruner is only for the fraction axis."""
    along = check_axis(axis, fraction, widths, fractions)  # each points argument given only along its own axis
    checked_widths = check_widths(widths) if widths is not None else None
    checked_fractions = check_fractions(fractions) if fractions is not None else None
    level = _checks.in_range(
        "TimescaleFinder", "level", level, "use the exponent interval's level in (0, 1), e.g. 0.95.", low=0, high=1
    )
    check_pruner(pruner, along)
    return along, checked_widths, checked_fractions, level


def _fraction_step(fraction: Any, fractions: tuple[float, ...] | None) -> float:
    """The share of the training set a run trains on: the largest of ``fractions`` along ``axis="dataset_size"``."""
    if fraction is None:
        fraction = fractions[-1] if fractions is not None else DEFAULT_FRACTION
    return _checks.in_range(
        "TimescaleFinder",
        "fraction",
        fraction,
        "use a number in (0, 1], the share of the training set each run trains on (e.g. 0.25).",
        low=0,
        high=1,
        high_closed=True,
    )


def _metric_step(monitor: Any, mode: Any, reduce: Any) -> tuple[str, Goal, Reduce]:
    """The metric the runs are compared by, which way is better, and how a run's values are reduced."""
    return (
        _checks.non_empty("TimescaleFinder", "monitor", monitor, "use the name of a logged validation metric."),
        _checks.choice("TimescaleFinder", "mode", mode, GOALS),
        _checks.choice("TimescaleFinder", "reduce", reduce, ("last", "best")),
    )


def _trainer_step(trainer_kwargs: Any, pruner: Any) -> tuple[dict[str, Any], int, BasePruner | None, Any]:
    """The runs' ``Trainer`` arguments, their epochs, and the pruner for runs of that many epochs."""
    kwargs = check_trainer_kwargs(trainer_kwargs)
    epochs: int = kwargs["max_epochs"]
    made = make_pruner(pruner, epochs) if isinstance(pruner, str) else pruner
    return kwargs, epochs, made, pruner_setting(pruner)


def _study_step(
    root_dir: Any,
    subset_seed: Any,
    window: Any,
    storage: Any,
    study_name: Any,
    workers: Any,
    threads: Any,
    stale_after: Any,
) -> dict[str, Any]:
    """Where the study and the logs live, the subset's seed, the fit's window, and who trains the trials."""
    root = check_root_dir(root_dir)
    subset_seed = _checks.integer("TimescaleFinder", "subset_seed", subset_seed)
    window = _checks.positive_int("TimescaleFinder", "window", window, "use an integer >= 1.")
    storage = check_storage(storage)
    if study_name is not None:
        _checks.non_empty("TimescaleFinder", "study_name", study_name, "use a non-empty name.")
    workers = _checks.positive_int("TimescaleFinder", "workers", workers)
    if threads != "auto":
        threads = _checks.positive_int(
            "TimescaleFinder", "threads", threads, "use a positive number of torch threads per process, or 'auto'."
        )
    stale_after = _checks.positive_number(
        "TimescaleFinder", "stale_after", stale_after, "use a positive number of seconds."
    )
    return {
        "root_dir": root,
        "subset_seed": subset_seed,
        "window": window,
        "storage": storage,
        "study_name": study_name,
        "workers": workers,
        "threads": threads,
        "stale_after": stale_after,
    }
