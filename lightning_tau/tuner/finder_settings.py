"""``FinderSettings``: every argument of :class:`~lightning_tau.tuner.finder.TimescaleFinder`, checked once, frozen.

The finder holds it as ``finder.settings``; the modules below the finder take it, never the finder.

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Literal

from optuna.pruners import BasePruner
from optuna.storages import BaseStorage

from lightning_tau import _checks
from lightning_tau._constants import GOALS, Goal
from lightning_tau.errors import TimescaleError
from lightning_tau.tuner.pruning import make_pruner, pruner_setting
from lightning_tau.tuner.checks import (
    DEFAULT_FRACTION,
    Reduce,
    check_axis,
    check_batch_sizes,
    check_beta2,
    check_fractions,
    check_grid,
    check_grid_extensions,
    check_lr_scaling,
    check_pruner,
    check_root_dir,
    check_seed_count,
    check_storage,
    check_tolerance,
    check_trainer_kwargs,
    check_widths,
)
from lightning_tau.tuner.axes import Axis

__all__ = ["FinderSettings"]

#: the fields that follow from the finder's arguments rather than hold one
_DERIVED = ("auto_seeds", "epochs", "pruner_setting", "base_tau_epochs", "held_beta2_tau")


@dataclasses.dataclass(frozen=True)
class FinderSettings:
    """The checked arguments of :class:`~lightning_tau.tuner.finder.TimescaleFinder` (see it for each one's
    meaning), with what follows from them: ``epochs`` (``trainer_kwargs["max_epochs"]``), ``auto_seeds``, the
    Optuna ``pruner`` and its ``pruner_setting``. Build it with :meth:`build`, which checks every argument.

    ``finder.settings`` holds the arguments as given and is never replaced: a fit trains each of its rounds with
    a copy (``dataclasses.replace``) holding that round's ``seeds`` (``seeds="auto"``'s stage) and ``tau_epochs``
    (the points the grid extension added), which the modules below the finder take.

    Example:
        >>> from lightning_tau import TimescaleFinder
        >>> s = TimescaleFinder(tau_epochs=(2, 8, 32), trainer_kwargs={"max_epochs": 10}).settings
        >>> s.tau_epochs, s.seeds, s.fraction, s.epochs, s.axis.name
        ((2.0, 8.0, 32.0), (0, 1, 2), 0.25, 10, 'fraction')
        >>> size = TimescaleFinder(axis="dataset_size", fractions=(0.1, 0.5), trainer_kwargs={"max_epochs": 10})
        >>> size.settings.fraction
        0.5
    """

    #: the axis, resolved from the string given (:func:`~lightning_tau.tuner.axes.resolve_axis`)
    axis: Axis
    fraction: float
    #: ``axis="width"``: the widths ``make_model`` is called with, increasing
    widths: tuple[int, ...] | None
    #: ``axis="dataset_size"``: the fractions of the training set, increasing
    fractions: tuple[float, ...] | None
    #: ``axis="batch_size"``: the global batch sizes, increasing
    batch_sizes: tuple[int, ...] | None
    #: ``axis="batch_size"``: the lr across the batch sizes, ``"none"``, ``"sqrt"`` or ``"linear"`` (``lr ∝ B^m``)
    lr_scaling: str
    #: ``axis="batch_size"``: Adam's ``β₂`` at every ``B``, ``"fixed"`` (the optimizer's), ``"held"`` (its window
    #: held in samples: ``β₂ ** (B / B_0)``) or ``"both"`` (the sweep at the optimizer's; then the largest batch's
    #: best ``tau_epoch`` with it held too, each choice's paired cost in the result)
    beta2: str
    #: the grid: as given (``finder.settings``); in a round's copy, with the points the grid extension added
    #: (:mod:`lightning_tau.tuner.analysis.grid_extension`)
    tau_epochs: tuple[float, ...]
    #: the seeds of the sweep; with ``seeds="auto"``: the first stage's ``0, 1, 2`` (``finder.settings``), in a
    #: round's copy the stage being trained, ``0 .. n - 1`` (the seeds a fit used: its result's ``staging``)
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
    #: ``beta2="both"``, in the copy for its last round only: the ``tau_epoch`` the largest batch trains with ``β₂``
    #: held in samples (:func:`~lightning_tau.tuner.axis_runner.held_beta2_round`), else ``None``
    held_beta2_tau: float | None = None

    @classmethod
    def arguments(cls) -> tuple[str, ...]:
        """The names of ``TimescaleFinder``'s arguments, which :meth:`build` takes: every field but those that follow
        from them (``auto_seeds``, ``epochs``, ``pruner_setting``, ``base_tau_epochs``).

        Example:
            >>> len(FinderSettings.arguments()), FinderSettings.arguments()[:3]
            (28, ('axis', 'fraction', 'widths'))
        """
        return tuple(field.name for field in dataclasses.fields(cls) if field.name not in _DERIVED)

    @classmethod
    def build(cls, **arguments: Any) -> FinderSettings:
        """The settings of ``TimescaleFinder(...)``: every one of its :meth:`arguments` by name, as
        ``TimescaleFinder.__init__`` passes them (its signature holds their defaults; for the settings of some
        arguments and the defaults of the rest, build the finder: ``TimescaleFinder(...).settings``), each checked in
        this order: the axis and what it uses, the fraction, the grid and seeds, the metric, the trainer, and where
        the study lives and who trains it.

        Raises:
            TypeError: an argument missing or one ``TimescaleFinder`` does not take.
            ValueError: the first bad argument, naming it and its value, and saying what to use.
        """
        names = cls.arguments()
        missing, unknown = [n for n in names if n not in arguments], sorted(set(arguments) - set(names))
        if missing or unknown:
            raise TypeError(
                f"`FinderSettings.build` takes every argument of `TimescaleFinder` by name: missing {missing},"
                f" unknown {unknown}. Build the finder (`TimescaleFinder(...).settings`) for its defaults."
            )
        a = arguments
        axis, fraction, pruner = a["axis"], a["fraction"], a["pruner"]
        axis_, widths_, fractions_, level = _axis_step(
            axis, fraction, a["widths"], a["fractions"], a["level"], pruner, a["batch_sizes"]
        )
        axis_, batch_sizes_ = _batch_step(axis_, a["batch_sizes"], a["lr_scaling"])
        fraction = _fraction_step(fraction, fractions_)
        tau_epochs_, (seeds_, auto_seeds, most), tolerance_, extensions = (
            check_grid(a["tau_epochs"]),
            check_seed_count(a["seeds"], a["max_seeds"], axis_),
            check_tolerance(a["tolerance"], axis_),
            check_grid_extensions(a["max_grid_extensions"]),
        )
        monitor, mode, reduce = _metric_step(a["monitor"], a["mode"], a["reduce"])
        trainer, epochs, pruner_, setting = _trainer_step(a["trainer_kwargs"], pruner)
        if axis_.batch_per_point and trainer.get("accumulate_grad_batches", 1) != 1:
            accumulate = trainer["accumulate_grad_batches"]
            raise TimescaleError(
                f"`TimescaleFinder(trainer_kwargs={{'accumulate_grad_batches': {accumulate!r}}})`"
                f" is not used with axis={axis_.name!r}: the axis sets each run's batch (or its accumulation) from"
                " `batch_sizes`. Leave `accumulate_grad_batches` out."
            )
        places = _study_step(
            a["root_dir"], a["subset_seed"], a["window"], a["storage"], a["study_name"], a["workers"], a["threads"],
            a["stale_after"],
        )
        return cls(
            axis=axis_,
            fraction=fraction,
            widths=widths_,
            fractions=fractions_,
            batch_sizes=batch_sizes_,
            lr_scaling=axis_.lr_scaling if axis_.batch_per_point else str(a["lr_scaling"]),
            beta2=check_beta2(a["beta2"], axis_),
            tau_epochs=tau_epochs_,
            seeds=seeds_,
            auto_seeds=auto_seeds,
            max_seeds=most,
            monitor=monitor,
            mode=mode,
            reduce=reduce,
            trainer_kwargs=trainer,
            epochs=epochs,
            progress=bool(a["progress"]),
            verbose=bool(a["verbose"]),
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
            >>> from lightning_tau import TimescaleFinder
            >>> TimescaleFinder(tau_epochs=(2, 8), seeds=(0, 1), trainer_kwargs={"max_epochs": 1}).settings.grid_order()
            [(2.0, 0), (2.0, 1), (8.0, 0), (8.0, 1)]
        """
        if self.pruner is not None:
            return [(tau, seed) for seed in self.seeds for tau in self.tau_epochs]
        return [(tau, seed) for tau in self.tau_epochs for seed in self.seeds]


# --- the checking steps of FinderSettings.build, in its order ----------------------------------------------------


def _axis_step(
    axis: Any, fraction: Any, widths: Any, fractions: Any, level: Any, pruner: Any, batch_sizes: Any = None
) -> tuple[Axis, tuple[int, ...] | None, tuple[float, ...] | None, float]:
    """The axis and what it uses: ``(axis, widths, fractions, level)``; the pruner is only for the fraction axis."""
    # each points argument given only along its own axis
    along = check_axis(axis, fraction, widths, fractions, batch_sizes)
    checked_widths = check_widths(widths) if widths is not None else None
    checked_fractions = check_fractions(fractions) if fractions is not None else None
    level = _checks.in_range(
        "TimescaleFinder", "level", level, "use the exponent interval's level in (0, 1), e.g. 0.95.", low=0, high=1
    )
    check_pruner(pruner, along)
    return along, checked_widths, checked_fractions, level


def _batch_step(along: Axis, batch_sizes: Any, lr_scaling: Any) -> tuple[Axis, tuple[int, ...] | None]:
    """The batch-size axis's ``batch_sizes`` and ``lr_scaling``: the axis object of that scaling (its rules depend on
    it; another axis is returned as it is, ``lr_scaling`` left at ``"none"``)."""
    along = check_lr_scaling(lr_scaling, along)
    return along, check_batch_sizes(batch_sizes) if batch_sizes is not None else None


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
