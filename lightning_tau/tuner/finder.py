"""``TimescaleFinder``: tune ``tau_epoch`` on a random fraction of the training set, then train big.

Each ``(tau_epoch, seed)`` is one trial of a shared Optuna study and a fresh Lightning fit with
:class:`~lightning_tau.TimescaleCallback`; the full run keeps the best ``tau_epoch``, not the best weight decay.

More: docs/finder.rst; the module map of tuner/: docs/architecture.rst.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import pickle
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, NoReturn, overload

import lightning.pytorch as pl
import torch
from lightning.pytorch.utilities import rank_zero_info, rank_zero_only
from lightning.pytorch.utilities.exceptions import SIGTERMException
from optuna.pruners import BasePruner
from optuna.storages import BaseStorage
from torch.utils.data import DataLoader

from lightning_tau._constants import Goal
from lightning_tau.tuner.analysis.axis_result import AxisResult
from lightning_tau.tuner.axis_runner import (
    SeedStaging,
    StudyPoint,
    axis_intro,
    axis_points,
    axis_result,
    grid_round,
    held_beta2_cost,
    held_beta2_round,
    lowest_point_tau,
    seed_look,
    seed_stages,
    staged_level,
    undetermined_rules,
)
from lightning_tau.tuner.analysis.curve import DEFAULT_TAU_EPOCHS, PRUNER_NAMES
from lightning_tau.tuner.finder_settings import FinderSettings
from lightning_tau.tuner.analysis.grid_extension import DEFAULT_MAX_GRID_EXTENSIONS, AddedPoint
from lightning_tau.tuner.pruning import make_pruner
from lightning_tau.tuner.analysis.finder_result import FinderResult
from lightning_tau.tuner.axes import Axis
from lightning_tau.tuner.checks import (
    PrunerName,
    Reduce,
    SettingError,
    model_factory,
    resolve_data,
)
from lightning_tau.tuner.study import (
    BETA2_ATTR,
    STALE_SECONDS,
    GridStudy,
    quiet_optuna,
    set_user_attr,
    stop_reason,
)
from lightning_tau.tuner.study_key import open_studies
from lightning_tau.tuner.trial import ModelCopies, subset_dataloader
from lightning_tau.tuner.grid_runner import FitProgress, work_study
from lightning_tau.tuner.workers import (
    UNGUARDED_EXIT,
    Workers,
    cores,
    importing_main,
    sigint_once,
    sigint_raises,
    sigterm_raises,
    start_server,
    threads_line,
    torch_threads,
    unguarded_call,
    unguarded_script,
    worker_environ,
)

__all__ = ["PRUNER_NAMES", "SettingError", "TimescaleFinder", "make_pruner", "subset_dataloader"]

#: The exit status of a sweep stopped by SIGTERM (128 + 15, as a shell reports a process that signal ended).
SIGTERM_EXIT = 143

#: The name of the finder's worker processes (numbered from 1).
WORKER_NAME = "tau-finder-worker"


def _setting(name: str) -> Any:
    """A read-only attribute of the finder that is its settings' ``name`` (:class:`FinderSettings`)."""
    return property(
        lambda finder: getattr(finder.settings, name), doc=f"``settings.{name}`` (:class:`FinderSettings`)."
    )


class TimescaleFinder:
    """Find ``tau_epoch`` on a random subset of the training set and give the full run's weight decay.

    For every ``tau_epoch`` in the grid and every seed, :meth:`fit` trains a fresh model for ``max_epochs`` on a
    fixed random subset holding ``fraction`` of the training set, with ``TimescaleCallback(tau_epoch=tau_epoch)``
    setting the weight decay from the subset's ``N``. It reads the validation metric ``monitor`` after every
    validation and compares runs by its value after the last epoch (``reduce="last"``, the default: what the full
    run ends with) or by its best value over the epochs (``reduce="best"``). The suggestion is the vertex of a
    parabola in ``log(tau_epoch)`` fitted to the seed-mean curve around its best grid point
    (:func:`~lightning_tau.tuner.analysis.curve.smoothed_optimum`).

    The runs are the trials of an Optuna study (``storage``, ``study_name``): every process that calls :meth:`fit`
    on the same study takes trials nobody has finished, a finished trial is never trained again, a trial whose
    worker died is handed to another, and every process computes the same answer from the study.

    Args:
        fraction: share of the training set each run trains on, in ``(0, 1]`` (default 0.25); the subset holds
            ``round(fraction * N)`` samples, fixed by ``subset_seed``. Not with ``axis="dataset_size"``.
        tau_epochs: the ``tau_epoch`` grid (positive, distinct; log-spaced is best, e.g.
            :func:`~lightning_tau.tuner.analysis.curve.log_grid`).
        seeds: seeds per ``tau_epoch`` (model initialization and batch order); the curve is their mean. When not
            given: ``(0, 1, 2)``, and ``(0, 1, 2, 3, 4)`` along the width and dataset-size axes (an exponent interval
            over 3 seeds is erratic). Along an axis, ``"auto"``: seeds in stages (3, then 5, 8, 12, ... up to
            ``max_seeds``, :func:`~lightning_tau.tuner.analysis.scaling.seed_stages`), each stage adding its new seeds' trials
            to the same studies; after each, the exponent interval decides every published rule at ``tolerance``,
            and the finder stops at the first stage where none is undetermined, or where every rule left undetermined
            is so only by the shape part of the interval (more seeds would not decide it; the grid's midpoints may,
            see ``max_grid_extensions``), or at ``max_seeds``. Each look's
            interval is at :func:`~lightning_tau.tuner.analysis.scaling.staged_level` (wider than ``level``: adding seeds
            until a decision is optional stopping). :attr:`staging` then says how many seeds it used and why it
            stopped, and the output says so.
        monitor: the logged validation metric to compare (e.g. ``"val_loss"``, ``"val/loss"``).
        mode: ``"min"`` if lower ``monitor`` is better, ``"max"`` if higher is.
        reduce: ``"last"`` (the value after the last epoch) or ``"best"`` (the best value over epochs).
        trainer_kwargs: ``Trainer`` arguments for every run; ``max_epochs`` is required (the same epochs as the
            full run). The finder sets ``logger`` and ``default_root_dir`` itself and refuses ``max_steps``,
            ``limit_train_batches``, ... (see the error). Defaults it adds unless given: no checkpointing, no
            progress bar, no model summary, no sanity validation. ``callbacks`` given here are shared by every run.
        root_dir: where the default study journal (``study.journal``) and TensorBoard logs (``tb/``) go.
        subset_seed: seed of the permutation that picks the subset.
        window: grid points on each side of the best one that the parabola is fitted to.
        progress: show a progress bar (one tick per epoch) across the runs this process trains.
        verbose: print what is reused, trained, handed on and waited for, and at the end the curve, the
            suggestion and its uncertainty (:meth:`FinderResult.table`) (rank zero only).
        storage: where the study lives: ``None`` (the journal file ``root_dir/study.journal``), a journal file
            path, an Optuna database URL (``postgresql+psycopg2://user:password@host/db``; the password is never
            printed) or an Optuna storage object. See ``docs/finder.rst`` for which to use where.
        study_name: the study; by default ``tau_finder_`` and a hash of the sweep's settings, so the same
            settings join the same study and other settings start another. A named study opened with other
            settings is an error naming the difference.
        workers: processes that train trials at once on this machine: this one and ``workers - 1`` worker processes,
            each with ``threads`` torch threads (the model and the data must pickle: a class or an instance, not a
            lambda). On Linux the workers are forks of a
            server that has imported torch and Lightning, started when the finder is built, so they start training
            at once; elsewhere they are spawned (:mod:`lightning_tau.tuner.workers`). Capped, with a note, at the
            machine's cores and at the trials left to train.
        threads: torch threads in each process that trains trials (this one's are restored after :meth:`fit`): 1
            by default, because a small model's trials train about as fast on one thread and a busy machine slows
            more threads 5-30x (``benchmarks/bench_threads.py``); use ``workers`` for the other cores. ``"auto"``:
            ``cores // workers``, at most what torch was set to.
        stale_after: seconds without a sign of life (written every 30 s) after which a trial running on another
            machine of a journal-file study is handed to another worker (same machine: as soon as its process is
            gone; database storages: Optuna's heartbeat).
        axis: ``"fraction"`` (the default: one sweep on one subset, as above), ``"width"`` (the sweep at every
            width of ``widths``: how the best weight decay moves with width under μP, see :meth:`fit`),
            ``"dataset_size"`` (the sweep on a subset of every fraction of ``fractions``: whether the best
            ``tau_epoch`` moves with ``N``; ``"dataset-size"`` too) or ``"batch_size"`` (the sweep at every global
            batch of ``batch_sizes``: how the best ``tau_epoch`` moves with ``B``; ``"batch-size"`` too). Each gives an
            :class:`~lightning_tau.tuner.analysis.axis_result.AxisResult`. Resolved once: ``finder.axis`` is the
            :class:`~lightning_tau.tuner.axes.Axis` object (:mod:`lightning_tau.tuner.axes`), ``finder.axis.name``
            its name.
        widths: ``axis="width"``: at least 2 increasing positive integers, e.g. ``(64, 128, 256)``.
        fractions: ``axis="dataset_size"``: at least 2 increasing fractions in ``(0, 1]``, e.g. ``(0.1, 0.25, 0.5)``.
        batch_sizes: ``axis="batch_size"`` (``"batch-size"`` too): at least 2 increasing global batch sizes, e.g.
            ``(32, 64, 128)``. Every batch size trains the grid on one subset (``fraction``) for the same epochs, so
            fewer steps at a larger batch. The batch is set as Lightning's ``BatchSizeFinder`` sets it where the model
            has a ``batch_size`` attribute or hparam (set on each trial's model, whose training loader the finder
            rebuilds at that batch), else by gradient accumulation (``accumulate_grad_batches = B / loader batch``,
            refused unless a whole number); the table says which.
        lr_scaling: ``axis="batch_size"``: the lr across the batch sizes, ``"none"`` (the user's lr at every ``B``),
            ``"sqrt"`` or ``"linear"``: the model's ``lr`` or ``learning_rate`` attribute or hparam times
            ``(B / B_0) ** m`` (``m`` = 1/2 or 1, ``B_0`` the smallest batch). The batch rules' exponents depend on
            ``m`` (``../THEORY.md`` §13).
        beta2: ``axis="batch_size"``: Adam's ``β₂`` at every batch, ``"fixed"`` (the optimizer's, the default),
            ``"held"``: its window held in samples (Marek et al. 2025), every Adam-like group's ``β₂`` raised to
            ``B / B_0`` at train start, or ``"both"``: the sweep at the optimizer's ``β₂``, then the largest batch's
            best grid ``tau_epoch`` trained again with it held (the same seeds, a study of its own), the result's
            ``beta2_cost`` giving each choice's paired cost. Held or both, a ``β₂`` that held at the largest batch
            would leave ``(0, 1)`` is refused in one line before any trial trains a step.
        level: the level of the axes' exponent interval (with ``seeds="auto"``: each look's is
            ``staged_level(level, looks)``).
        tolerance: along an axis: the factor by which the best ``λ_base`` or ``tau_epoch`` may move over the axis's
            range and still follow a published rule (a number above 1; default
            :data:`~lightning_tau.tuner.analysis.rules.DEFAULT_TOLERANCE`, 1.25, see :mod:`lightning_tau.tuner.analysis.rules` for why).
            A rule holds when the whole interval lies within it, is excluded when it lies wholly outside. Not used on
            the fraction axis, which decides no rule: giving it there is an error.
        max_seeds: with ``seeds="auto"``: the most seeds it trains (default 12, at least 3).
        max_grid_extensions: the most steps the grid grows by at each end (default 3; 0: the grid as given, nothing
            added). Where the best ``tau_epoch`` of an axis point is the grid's first or last, :meth:`fit` adds one
            step at that end (the given grid's log step there) at every axis point and trains it, round after round,
            until the optimum is inside the grid, or the next point would be under two optimizer steps of the
            smallest subset, or the top is a plateau (a ``tau_epoch`` longer than the run where the loss is flat
            within one seed s.d.: no decay, not an edge). Along an axis, it also adds the steps that bring a
            published rule's ``tau_epoch`` at the largest point onto the grid, so that rule's cost is measured, and,
            once, the midpoints around every point's best when only the shape part of the interval leaves a rule
            undetermined (more seeds cannot decide it). The points go into the same studies, so a rerun trains
            nothing; the result lists them with why (``grid_added``, :mod:`lightning_tau.tuner.analysis.grid_extension`).
        pruner: stop hopeless ``tau_epoch`` runs early (``axis="fraction"`` only): ``None`` (the default: every run
            trains ``max_epochs``), ``"median"``, ``"successive_halving"``, ``"hyperband"`` (Optuna's pruners with
            settings for the finder's grid, see :func:`make_pruner`) or any ``optuna.pruners.BasePruner``. The runs
            then go seed by seed (every ``tau_epoch`` of the first seed, then the next). The pruner judges each
            ``tau_epoch`` by its first seed's run, which reports ``monitor`` to its trial after every validation and
            stops when the pruner says so (the trial ends PRUNED): it is compared with the first seed's runs at the
            other ``tau_epoch`` values, the same initialization and batch order. The other seeds of a ``tau_epoch``
            it kept train in full; those of a pruned one are pruned untrained, since the curve pairs every seed at
            every point. The curve, the suggestion and its range use the ``tau_epoch`` values whose every seed
            completed; the pruned ones are listed as such (:attr:`FinderResult.pruned`).

    Attributes:
        settings: the checked arguments as given (:class:`~lightning_tau.tuner.finder_settings.FinderSettings`),
            never replaced by :meth:`fit`; the finder's ``axis``, ``tau_epochs``, ``seeds``, ``study_name`` and
            ``pruner`` read them (the others: ``finder.settings.<name>``). With ``seeds="auto"``, ``seeds`` is the
            first stage's; the seeds a fit used are in its result's ``staging``.
        staging: with ``seeds="auto"``, after :meth:`fit`: how many seeds it used and why it stopped.
        trained_runs: trials this process trained in the last :meth:`fit`.
        reused_runs: trials that were complete in the study when the last :meth:`fit` started.
        pending_runs: trials still training elsewhere when the last :meth:`fit` returned (``wait=False`` only).
        total_runs: the trials of the last :meth:`fit`'s grid, with the seeds and points it added (every axis
            point's).
        study: the study the last :meth:`fit` used (name and printable storage); along an axis, the first point's.
        studies: along an axis: the study of every point, in axis order.

    Raises:
        ValueError: at construction for a bad argument, naming it and its value; in :meth:`fit` for data, a
            model or a storage the finder cannot use, before any training.

    Example:
        >>> TimescaleFinder(fraction=0.25, tau_epochs=(2, 8, 32), trainer_kwargs={"max_epochs": 10}).tau_epochs
        (2.0, 8.0, 32.0)
        >>> TimescaleFinder(fraction=1.5, trainer_kwargs={"max_epochs": 10})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleFinder(fraction=1.5)` is not valid: use a number in (0, 1], ...
        >>> TimescaleFinder(axis="width", widths=(64, 128, 256), trainer_kwargs={"max_epochs": 10}).settings.widths
        (64, 128, 256)
        >>> TimescaleFinder(axis="width", widths=(128, 64), trainer_kwargs={"max_epochs": 10})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleFinder(widths=[128, 64])` is not valid: 64 follows 128; give ...
    """

    def __init__(
        self,
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
        batch_sizes: Sequence[int] | None = None,
        lr_scaling: Literal["none", "sqrt", "linear"] = "none",
        beta2: Literal["fixed", "held", "both"] = "fixed",
        level: float = 0.95,
        pruner: PrunerName | BasePruner | None = None,
        tolerance: float | None = None,
        max_seeds: int | None = None,
        max_grid_extensions: int = DEFAULT_MAX_GRID_EXTENSIONS,
    ) -> None:
        # the arguments by name, as given: checked into the settings, and sent to a worker process to build its own
        self._arguments: dict[str, Any] = dict(
            fraction=fraction,
            tau_epochs=tau_epochs,
            seeds=seeds,
            monitor=monitor,
            mode=mode,
            reduce=reduce,
            trainer_kwargs=trainer_kwargs,
            root_dir=root_dir,
            subset_seed=subset_seed,
            window=window,
            progress=progress,
            verbose=verbose,
            storage=storage,
            study_name=study_name,
            workers=workers,
            threads=threads,
            stale_after=stale_after,
            axis=axis,
            widths=widths,
            fractions=fractions,
            batch_sizes=batch_sizes,
            lr_scaling=lr_scaling,
            beta2=beta2,
            level=level,
            pruner=pruner,
            tolerance=tolerance,
            max_seeds=max_seeds,
            max_grid_extensions=max_grid_extensions,
        )
        self.settings: FinderSettings = FinderSettings.build(**self._arguments)
        # the workers' server imports torch and Lightning while the caller sets up (not from a worker importing the
        # user's script: it cannot start processes, and fit stops it)
        if min(self.settings.workers, cores()) > 1 and not importing_main():
            start_server()
        self._worker_round: FinderSettings | None = None  # a worker process's finder: the round it was sent
        self._fit = _FitState(self.settings)  # replaced at every fit start

    # the settings the documentation reads as the finder's attributes; the others: `finder.settings.<name>`
    axis = _setting("axis")
    tau_epochs = _setting("tau_epochs")
    seeds = _setting("seeds")
    study_name = _setting("study_name")
    pruner = _setting("pruner")

    # the last fit's state (documented above, under Attributes)
    @property
    def staging(self) -> SeedStaging | None:
        """With ``seeds="auto"``, after :meth:`fit`: how many seeds it used and why it stopped."""
        return self._fit.staging

    @property
    def trained_runs(self) -> int:
        """Trials this process trained in the last :meth:`fit`."""
        return self._fit.trained_runs

    @property
    def reused_runs(self) -> int:
        """Trials that were complete in the study when the last :meth:`fit` (each of its rounds) started."""
        return self._fit.reused_runs

    @property
    def pending_runs(self) -> int:
        """Trials still training elsewhere when the last :meth:`fit` returned (``wait=False`` only)."""
        return self._fit.pending_runs

    @property
    def total_runs(self) -> int:
        """The trials of the last :meth:`fit`'s grid (of its last round: every axis point, seed and ``tau_epoch``)."""
        return self._fit.total_runs

    @property
    def study(self) -> GridStudy | None:
        """The study the last :meth:`fit` used (name and printable storage); along an axis, the first point's."""
        return self._fit.study

    @property
    def studies(self) -> list[GridStudy]:
        """Along an axis: the study of every point the last :meth:`fit` used, in axis order (then, with
        ``beta2="both"``, the largest batch's study with ``β₂`` held)."""
        return self._fit.studies

    @overload
    def fit(
        self,
        model: pl.LightningModule | Callable[[], pl.LightningModule],
        datamodule: pl.LightningDataModule | None = None,
        train_dataloaders: DataLoader | None = None,
        val_dataloaders: DataLoader | Sequence[DataLoader] | None = None,
        *,
        wait: Literal[True] = True,
    ) -> FinderResult | AxisResult: ...

    @overload
    def fit(
        self,
        model: pl.LightningModule | Callable[[], pl.LightningModule],
        datamodule: pl.LightningDataModule | None = None,
        train_dataloaders: DataLoader | None = None,
        val_dataloaders: DataLoader | Sequence[DataLoader] | None = None,
        *,
        wait: bool,
    ) -> FinderResult | AxisResult | None: ...

    def fit(
        self,
        model: pl.LightningModule | Callable[[], pl.LightningModule],
        datamodule: pl.LightningDataModule | None = None,
        train_dataloaders: DataLoader | None = None,
        val_dataloaders: DataLoader | Sequence[DataLoader] | None = None,
        *,
        wait: bool = True,
    ) -> FinderResult | AxisResult | None:
        """Train the study's trials nobody has finished, wait for the rest, and return the :class:`FinderResult`
        (along ``axis="width"`` or ``"dataset_size"``: the :class:`~lightning_tau.tuner.analysis.axis_result.AxisResult`).

        Along ``axis="width"``, ``model`` is ``make_model``, called with each width (after
        ``seed_everything(seed)``) to make a μP ``LightningModule``: mup's ``set_base_shapes`` with ``MuAdamW``, or
        ``build_param_groups(..., width_mult=...)``. Every trial trains one ``(width, tau_epoch, seed)`` with
        ``TimescaleCallback(tau_epoch=tau_epoch, width_exponent=1)``: at a fixed base learning rate that is a sweep
        of ``λ_base``, the same grid at every width. Each axis point is a study of its own in the same storage
        (named ``<study_name>_width=64``, ..., or after its settings), so workers, reuse and dead-worker hand-over
        are as below. Before any training, the finder builds the model at every width and refuses a
        ``make_model`` that ignores ``width`` (the same parameter shapes at the smallest and largest width) and a
        model that is not μP (every decaying weight at ``s = 1`` at the largest width; read from mup's
        ``infshape`` or, without it, from the ``width_mult`` keys of the groups ``configure_optimizers`` builds,
        when it can be called without a trainer).

        Args:
            model: a ``LightningModule`` instance (every trial trains a copy of it whose modules re-run their
                ``reset_parameters()`` after ``seed_everything(seed)``, so each seed has its own initialization
                (:class:`~lightning_tau.tuner.trial.ModelCopies`; an instance whose initialization cannot be re-run
                that way is refused before any training); the study is keyed by its class, hparams and parameter
                shapes, not its weights, so a rerun with a new unseeded instance reuses the trials), or something
                that makes a fresh one, called after ``seed_everything(seed)`` for every trial (the class,
                ``functools.partial(MyModel, width=256)``, or a ``lambda`` when ``workers=1``). Its
                ``configure_optimizers`` must build an AdamW-family optimizer with a positive ``weight_decay`` on
                the groups that decay.
            datamodule: a ``LightningDataModule``; the finder calls ``prepare_data()`` and ``setup("fit")`` once
                and uses its ``train_dataloader()`` and ``val_dataloader()`` (its other hooks are not used).
            train_dataloaders: or the full training ``DataLoader`` (one, plain, with ``batch_size``).
            val_dataloaders: and the validation loader(s); required with ``train_dataloaders``.
            wait: wait until every trial is complete (some may train in other processes). ``False``: return
                ``None`` as soon as no trial is left for this process (and its workers) to take, with
                ``pending_runs`` saying how many still train elsewhere.

        Raises:
            TypeError: ``model`` is neither a ``LightningModule`` nor makes one.
            SettingError: a ``tau_epochs`` point the callback cannot set on this data (one optimizer step or
                less, or beyond a float), or a ``fraction`` that leaves no full batch.
            ValueError: data given both or neither way, no validation data, a loader the finder cannot subset,
                a storage that cannot be opened or a study with other settings, a model with no decaying AdamW
                group, or (after the first validation) a ``monitor`` no run logs. A journal file that fills the
                disk mid-run raises :class:`~lightning_tau.tuner.study.storage.JournalWriteError` naming it.
        """
        settings, worker = self.settings, self._worker_round is not None
        if importing_main():  # a worker importing the user's script, whose code runs the finder again at import
            _stop_unguarded_worker(settings.workers)
        # the same script seen from this process, before any trial trains: this call is made by the script's
        # top-level code where every import runs it, so each worker would start it again as it imports the script
        if settings.workers > 1 and not worker and unguarded_call(sys._getframe(1)):
            raise SystemExit(unguarded_script(settings.workers))
        # this fit's state, fresh: nothing of an earlier fit carries into it; its first round trains the grid as given
        # (a worker: the round it was sent)
        fit = self._fit = _FitState(self._worker_round or settings)
        factory, copies = model_factory(model, settings.axis)
        full_train, val = resolve_data(datamodule, train_dataloaders, val_dataloaders)
        points = axis_points(fit.round_settings, factory, full_train, copies)  # one on the fraction axis
        dataset_size = len(full_train.dataset)  # type: ignore[arg-type]

        def intro(studies: Sequence[GridStudy]) -> str:  # the seeds of the stage now
            return axis_intro(fit.round_settings, points, studies, dataset_size)

        # rounds: round 0 trains the grid as given; after each, the grid extension may add points and seeds="auto"
        # a stage of seeds (one look per stage), both into the same studies (their key holds the grid as given and
        # "auto"), so a rerun replays the same rounds from the study's records and trains nothing
        auto = settings.auto_seeds and not worker  # a worker trains the stage and the grid it was sent
        stages = seed_stages(settings.max_seeds) if auto else [len(fit.round_settings.seeds)]
        level = staged_level(settings.level, len(stages)) if settings.auto_seeds else settings.level
        lowest = lowest_point_tau(fit.round_settings, points)
        added: list[AddedPoint] = []
        looked, at_round = 1, 0
        while True:
            if auto:
                fit.round_settings = dataclasses.replace(fit.round_settings, seeds=tuple(range(stages[looked - 1])))
            # checked before the studies are opened: nothing written for a model that cannot travel (an instance
            # travels as itself: the same study)
            payload = self._worker_payload(model, full_train, val, fit.round_settings) if settings.workers > 1 else None
            answer = "result" if settings.axis.scaling else "suggestion"
            records = self._run(points, val, payload, wait=wait, intro=intro, answer=answer)
            if records is None:
                return None
            studies = fit.studies or [fit.study]
            result = axis_result(fit.round_settings, points, records, studies, full_train, self._log, level=level)
            new = self._grid_points(result, lowest, at_round, midpoints=not auto or fit.staging is not None)
            if not new and auto and fit.staging is None:
                fit.staging = seed_look(result, settings.tolerance, stages, looked, level)  # type: ignore[arg-type]
                if fit.staging is None:
                    undetermined = ", ".join(undetermined_rules(result, settings.tolerance))  # type: ignore[arg-type]
                    self._log(
                        f"{stages[looked - 1]} seeds: {undetermined} undetermined at tolerance x{settings.tolerance:g};"
                        f" adding seeds up to {stages[looked]}."
                    )
                    looked += 1
                    continue
                new = self._grid_points(result, lowest, at_round, midpoints=True)
            if not new:
                break
            added += new
            at_round += 1
            grid = sorted({*fit.round_settings.tau_epochs, *(p.tau_epoch for p in new)})
            fit.round_settings = dataclasses.replace(fit.round_settings, tau_epochs=tuple(grid))
        if fit.staging is not None and isinstance(result, AxisResult):
            result = dataclasses.replace(result, staging=fit.staging)  # in its table and JSON
        if added:
            result = dataclasses.replace(result, grid_added=tuple(added))  # in its table and JSON
        if settings.beta2 == "both" and isinstance(result, AxisResult):  # β₂'s decision, on the largest batch
            held = self._held_beta2(result, model, factory, copies, full_train, val, wait=wait)
            if held is None:
                return None
            result = held
        if settings.verbose and rank_zero_only.rank == 0:
            print(result.table())
        return result

    def _run(
        self,
        points: Sequence[StudyPoint],
        val: Any,
        payload: bytes | None,
        *,
        wait: bool,
        intro: Callable[[Sequence[GridStudy]], str],
        answer: str,
        extra: bool = False,
    ) -> list[dict[tuple[float, int], dict[str, Any]]] | None:
        """Open every point's study, train the trials nobody has finished with this process and its workers (the
        free trials of every point first, so no process idles while another point has some), and return each
        study's records; ``None`` when this is a worker, or when some trials are still not complete (``wait=False``),
        ``log`` then saying so and what ``answer`` waits on them. ``extra``: a round in studies of its own after the
        sweep's (``beta2="both"``'s held round): its studies go after the sweep's in ``studies`` and its trials add
        to the fit's counts."""
        fit, settings = self._fit, self.settings
        grid = fit.round_settings.grid_order()
        log = self._log
        # SIGTERM anywhere in here (waiting on a trial elsewhere, between trials) ends the sweep as inside a fit; a
        # Ctrl-C raises KeyboardInterrupt once (inside a fit too: `run_trial`), a second one lets the hand-back finish
        with quiet_optuna(), sigterm_raises(lambda: SIGTERMException(SIGTERM_EXIT)), sigint_raises():
            studies = open_studies(fit.round_settings, points, grid, log)
            if extra:  # after the sweep's, whose study stays `finder.study`
                fit.studies = [*fit.studies, *studies]
            else:
                fit.study = studies[0]
                if settings.axis.scaling:
                    fit.studies = studies
                if settings.axis.batch_per_point and self._worker_round is None:
                    for study in studies:  # what this sweep asks (its settings say "fixed" for "both"): for a reopen
                        set_user_attr(study.study, BETA2_ATTR, settings.beta2)
            before = sum(len(study.records()) for study in studies)  # complete when this round started
            # over the fit's rounds: a later round's new trials' only (the earlier rounds' grid was complete when it
            # ended); `total_runs` is the last round's grid until this one's replaces it (an extra round's adds)
            fit.reused_runs += before - (0 if extra else fit.total_runs)
            total = len(grid) * len(studies)
            fit.total_runs = total + (fit.total_runs if extra else 0)
            fit.pending_runs = 0
            workers = self._workers_for(total - before)
            log(
                f"{intro(studies)}; {before} done before"
                + (f", {workers} workers on this machine." if workers > 1 else ".")
            )
            procs = self._start_workers(payload, workers) if payload is not None and workers > 1 else None
            threads = torch.get_num_threads()
            # one line for every point's runs in this call, weighted by each point's samples per epoch
            sizes = [len(p.train.dataset) for p in points]  # type: ignore[arg-type]
            progress = FitProgress(fit.round_settings, studies, sizes)
            try:
                per_process = torch_threads(settings.threads, threads, workers)
                torch.set_num_threads(per_process)
                if before < total:
                    log(threads_line(settings.threads, per_process, workers))
                if len(studies) > 1:  # every point's free trials first, then wait
                    for study, point in zip(studies, points):
                        self._work(study, point, val, progress, wait=False)
                for study, point in zip(studies, points):
                    self._work(study, point, val, progress, wait=wait, workers=procs)
            except BaseException as err:
                if procs is not None and isinstance(err, SIGTERMException):  # each worker hands its trial back
                    procs.terminate()
                elif procs is not None and isinstance(err, KeyboardInterrupt):  # Ctrl-C to this process alone too
                    procs.interrupt()
                elif procs is not None:  # an error: start no worker that would not hear of it
                    procs.stop()
                for study in studies:  # the trials this process held: to the next worker at once
                    study.release(stop_reason(err))
                if isinstance(err, SIGTERMException) and err.code is None:
                    # Lightning's SIGTERM ends a fit with a code-less SystemExit (exit 0, as if the sweep had
                    # finished): exit as a SIGTERM'd process does; the trial is FAIL, so a rerun trains it again
                    raise SIGTERMException(SIGTERM_EXIT) from None
                raise
            finally:
                progress.close()
                torch.set_num_threads(threads)
                if procs is not None:
                    procs.join()
            if procs is not None and procs.unguarded():  # the workers cannot import the script without starting it
                raise SystemExit(unguarded_script(settings.workers))
            for problem in procs.problems() if procs is not None else []:
                log(problem)
            records = [study.records() for study in studies]
            fit.pending_runs = sum(len(grid) - len(r) for r in records)
        if self._worker_round is not None:
            return None
        if fit.pending_runs:
            elsewhere = sum(len(study.running_elsewhere()) for study in studies)
            log(
                f"no trial left to take; {fit.pending_runs} of {total} not complete ({elsewhere} training"
                f" elsewhere). Call again when they finish for the {answer}."
            )
            return None
        return records

    def _held_beta2(
        self,
        result: AxisResult,
        model: Any,
        factory: Callable[[], Any],
        copies: ModelCopies | None,
        full_train: DataLoader,
        val: Any,
        *,
        wait: bool,
    ) -> AxisResult | None:
        """``beta2="both"``, after the sweep: the largest batch's best grid ``tau_epoch`` trained again with ``β₂``
        held in samples (:func:`~lightning_tau.tuner.axis_runner.held_beta2_round`: its own study, the same seeds,
        through the same runner and workers as every round), and ``result`` with each choice's paired cost; ``None``
        as :meth:`_run` returns it (``wait=False`` with trials still training elsewhere)."""
        fit = self._fit
        sweep = fit.round_settings
        held = held_beta2_round(sweep, result.results[-1].grid_tau_epoch)
        points = axis_points(held, factory, full_train, copies)
        dataset_size = len(full_train.dataset)  # type: ignore[arg-type]
        fit.round_settings = held  # what `_run` and its workers train
        try:
            payload = self._worker_payload(model, full_train, val, held) if self.settings.workers > 1 else None
            records = self._run(
                points,
                val,
                payload,
                wait=wait,
                intro=lambda studies: axis_intro(held, points, studies, dataset_size),
                answer="β₂ comparison",
                extra=True,
            )
        finally:
            fit.round_settings = sweep
        return None if records is None else held_beta2_cost(held, result, records[0])

    def _log(self, message: str) -> None:
        if self.settings.verbose:
            rank_zero_info(f"TimescaleFinder: {message}")

    def _work(
        self,
        study: GridStudy,
        point: StudyPoint,
        val: Any,
        progress: FitProgress,
        *,
        wait: bool,
        workers: Workers | None = None,
    ) -> None:
        """Take and train ``study``'s trials in this process (:func:`~lightning_tau.tuner.grid_runner.work_study`)."""
        fit = self._fit

        def trained() -> None:
            fit.trained_runs += 1

        work_study(
            study,
            fit.round_settings,
            point,
            val,
            wait=wait,
            log=self._log,
            trained=trained,
            warned=fit.warned,
            progress=progress,
            show_warnings=self._worker_round is None,
            workers=workers,
        )

    def _grid_points(
        self, result: FinderResult | AxisResult, lowest: float, at_round: int, *, midpoints: bool
    ) -> tuple[AddedPoint, ...]:
        """The points the grid extension adds after round ``at_round``
        (:func:`~lightning_tau.tuner.axis_runner.grid_round`), logged with why, and why an edge or a rule was left as
        it is; none for a worker (it trains what it was sent)."""
        if self._worker_round is not None:
            return ()
        plan = grid_round(self._fit.round_settings, result, lowest=lowest, at_round=at_round, midpoints=midpoints)
        for line in plan.held:
            self._log(f"grid: {line}.")
        if plan.added:
            points = ", ".join(f"{p.tau_epoch:.3g} ({p.reason})" for p in plan.added)
            self._log(f"grid: adding tau_epoch {points} at every axis point.")
        return plan.added

    def _workers_for(self, left: int) -> int:
        """The worker processes to run: ``workers``, capped at this machine's cores and at the trials left to train
        (more only split the cores into slower trials, or wait with nothing to do); a note says when capped, unless
        nothing is left to train (a rerun: no worker is started, and none was to be)."""
        asked = self.settings.workers
        workers = max(1, min(asked, cores(), left))
        if workers < asked and left > 0:
            why = "the number of trials left to train" if workers == max(1, left) else "this machine's cores"
            self._log(f"workers={asked} capped at {workers} ({why}).")
        return workers

    def _worker_payload(
        self, model_factory: Callable[[], Any], full_train: DataLoader, val: Any, round_settings: FinderSettings
    ) -> bytes:
        """What a worker process gets: the finder's arguments, the model, the data, and the seeds and the grid of the
        round it trains (``round_settings``: seeds="auto"'s stage, the grid extension's points)."""
        kwargs = {**self._arguments, "workers": 1, "progress": False, "verbose": False}
        try:
            grid: dict[str, Any] = {"seeds": round_settings.seeds, "tau_epochs": round_settings.tau_epochs}
            if round_settings.held_beta2_tau is not None:  # beta2="both"'s held round
                grid["held_beta2_tau"] = round_settings.held_beta2_tau
            return pickle.dumps((kwargs, model_factory, full_train, val, grid))
        except Exception as err:
            raise ValueError(
                f"`TimescaleFinder(workers={self.settings.workers})` sends the model and the data to its worker"
                f" processes, but they do not pickle ({type(err).__name__}: {err}). Pass the model class or an"
                " instance (not a lambda), data that pickles, or workers=1 and start the command once per worker"
                " instead."
            ) from None

    def _start_workers(self, payload: bytes, workers: int) -> Workers:
        """``workers - 1`` worker processes, started in the background while this process trains."""
        threads = torch_threads(self.settings.threads, torch.get_num_threads(), workers)
        return Workers(_worker_main, (threads, dict(os.environ)), workers - 1, WORKER_NAME, payload=payload)


@dataclasses.dataclass
class _FitState:
    """What one :meth:`TimescaleFinder.fit` holds: created with the finder and replaced at every fit start, so
    nothing of a fit carries into the next (as the callback's per-fit state is one ``_Fit``). The finder's
    ``staging``, ``trained_runs``, ``reused_runs``, ``pending_runs``, ``total_runs``, ``study`` and ``studies`` read
    it; ``finder.settings`` stays as given."""

    #: the settings of the round being trained: the finder's, with seeds="auto"'s stage (``0 .. n - 1``) and the
    #: points the grid extension added (a worker's finder: the round it was sent); the modules below take these
    round_settings: FinderSettings
    staging: SeedStaging | None = None  # seeds="auto": the seeds used and why it stopped, once decided
    trained_runs: int = 0  # trials this process trained, over the fit's rounds
    reused_runs: int = 0  # trials complete when each round started (a later round's new ones only)
    pending_runs: int = 0  # trials of the last round not complete when it ended (wait=False)
    total_runs: int = 0  # the trials of the last round's grid, every axis point
    study: GridStudy | None = None  # the first point's
    studies: list[GridStudy] = dataclasses.field(default_factory=list)  # every point's, along an axis
    warned: set[tuple[type, str]] = dataclasses.field(default_factory=set)  # warnings shown: each once per fit


# --- helpers ---------------------------------------------------------------------------------------------------


def _stop_unguarded_worker(workers: int) -> NoReturn:
    """End this process, which started a fit while importing its starting process's main module: with
    :data:`~lightning_tau.tuner.workers.UNGUARDED_EXIT`, which the finder's own workers leave for the main process to
    report in one line (another library's worker says it itself). ``os._exit``: a forkserver's child ends with 1
    whatever it raises, printing the traceback."""
    if not multiprocessing.current_process().name.startswith(WORKER_NAME):
        print(unguarded_script(workers), file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(UNGUARDED_EXIT)


def _worker_main(payload: bytes | Any, threads: int, environ: Mapping[str, str]) -> None:
    """A worker process: train the study's trials until none is left to take, then exit. ``payload``: the pickled
    finder settings, model and data, or the pipe they come through (:class:`~lightning_tau.tuner.workers.Workers`).

    The worker starts with SIGINT held (:func:`~lightning_tau.tuner.workers.start_server`: a Ctrl-C while it
    started is pending, not a traceback); it lets it through here, where a Ctrl-C ends it with 130 and nothing
    printed (the main process says what to do), and ignores SIGINT and SIGTERM once its trials are handed back or
    done, so that a signal while it exits cannot end it with a traceback."""
    code: int | str | None = 0
    try:
        sigint_once()  # the terminal's Ctrl-C and the main process's forwarded one: one KeyboardInterrupt
        if hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        worker_environ(environ)  # the starting process's, as spawn gives it (a fork has its server's)
        if not isinstance(payload, bytes):
            payload = payload.recv_bytes()
        kwargs, model_factory, full_train, val, grid = pickle.loads(payload)
        torch.set_num_threads(threads)
        finder = TimescaleFinder(**kwargs)
        sent = dataclasses.replace(finder.settings, **grid)  # the seeds and grid of the round sent
        held = sent.held_beta2_tau
        finder._worker_round = sent if held is None else held_beta2_round(sent, held)
        finder.fit(model_factory, train_dataloaders=full_train, val_dataloaders=val, wait=False)
    except Exception as err:
        print(f"TimescaleFinder worker (pid {os.getpid()}): error: {err}", file=sys.stderr)
        code = 1
    except KeyboardInterrupt:  # Ctrl-C reaches every process of the command: the main one says what to do
        code = 130
    except SystemExit as err:  # SIGTERM (143), handed back
        code = err.code
    finally:  # ignored, not blocked: a blocked mask holds a signal from this thread only, not from the others
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)
