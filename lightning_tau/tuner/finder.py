"""``TimescaleFinder``: tune ``tau_epoch`` on a random fraction of the training set, then train big.

The optimal ``tau_epoch`` stays about the same as the dataset grows (Wang & Aitchison, ICML 2025, Sec. 4.1), so a
sweep of ``tau_epoch`` on a random subset of ``fraction * N`` samples, trained for the same number of epochs, finds
the ``tau_epoch`` for the full run at about ``fraction`` of the cost of the same sweep on all the data. The full
run's weight decay is then ``B / (lr * N * tau_epoch)`` with the full ``N``. Keeping the subset's best *weight
decay* instead would make the full run's timescale ``1 / fraction`` times too short.

Each ``(tau_epoch, seed)`` is one trial of an Optuna study (:mod:`lightning_tau.tuner.study`), by default in the
journal file ``root_dir/study.journal``: any number of processes, on one machine or many, that open the same study
share its grid, and a later ``fit`` with the same settings trains nothing. Each trial is a fresh Lightning fit with
:class:`~lightning_tau.TimescaleCallback` (:mod:`lightning_tau.tuner.trial`), logging to TensorBoard in a folder of
its own under ``root_dir/tb``. The pure parts (grid, smoothing, result) live in :mod:`lightning_tau.tuner.curve`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import math
import numbers
import os
import pickle
import re
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, overload

import lightning.pytorch as pl
import torch
from lightning.pytorch.utilities import rank_zero_info, rank_zero_only
from optuna.pruners import BasePruner
from optuna.storages import BaseStorage
from torch.utils.data import DataLoader, RandomSampler

from lightning_tau import _checks
from lightning_tau._constants import GOALS, Goal
from lightning_tau._quiet import quiet_sweep
from lightning_tau.callback import TimescaleCallback
from lightning_tau.tuner.axes import AxisResult
from lightning_tau.tuner.curve import DEFAULT_TAU_EPOCHS, PRUNER_NAMES, reduce_metric
from lightning_tau.tuner.liveness import STALE_SECONDS
from lightning_tau.tuner.result import CurvePoint, FinderResult, PrunedPoint
from lightning_tau.tuner.study import GridStudy, quiet_optuna
from lightning_tau.tuner.trial import ModelCopies, pruned_record, run_trial, subset_dataloader
from lightning_tau.tuner.workers import Workers, start_server, worker_environ

__all__ = ["PRUNER_NAMES", "SettingError", "TimescaleFinder", "make_pruner", "subset_dataloader"]

Reduce = Literal["last", "best"]
Axis = Literal["fraction", "width", "dataset_size"]
#: The pruners ``TimescaleFinder(pruner=...)`` names (see :func:`make_pruner`).
PrunerName = Literal["median", "successive_halving", "hyperband"]

#: The subset's share of the training set when ``fraction`` is not given (``axis="fraction"`` or ``"width"``).
DEFAULT_FRACTION = 0.25

#: Seconds between looks at the study while waiting for trials that train elsewhere.
POLL_SECONDS = 1.0
#: The largest seed ``seed_everything`` (numpy) accepts.
MAX_SEED = 2**32 - 1


class SettingError(ValueError):
    """A finder argument that the data makes invalid, found by :meth:`TimescaleFinder.fit` before any training.

    Attributes:
        argument: the ``TimescaleFinder`` argument at fault (``"tau_epochs"``, ``"fraction"``).
    """

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(message)
        self.argument = argument


#: Trainer arguments the finder sets itself or that would break "same epochs on a real subset".
_FORBIDDEN_TRAINER_KWARGS = {
    "logger": "the finder logs every trial to TensorBoard under `root_dir/tb` itself",
    "default_root_dir": "use `TimescaleFinder(root_dir=...)`",
    "max_steps": "the finder trains for `max_epochs`, the same number of epochs as the full run",
    "max_time": "every trial must train for `max_epochs`",
    "limit_train_batches": "the finder subsets the dataset itself (`fraction`), so that N shrinks",
    "overfit_batches": "the finder subsets the dataset itself (`fraction`)",
    "fast_dev_run": "a finder trial must train for `max_epochs`",
}


class TimescaleFinder:
    """Find ``tau_epoch`` on a random subset of the training set and give the full run's weight decay.

    For every ``tau_epoch`` in the grid and every seed, :meth:`fit` trains a fresh model for ``max_epochs`` on a
    fixed random subset holding ``fraction`` of the training set, with ``TimescaleCallback(tau_epoch=tau_epoch)``
    setting the weight decay from the subset's ``N``. It reads the validation metric ``monitor`` after every
    validation and compares runs by its value after the last epoch (``reduce="last"``, the default: what the full
    run ends with) or by its best value over the epochs (``reduce="best"``). The suggestion is the vertex of a
    parabola in ``log(tau_epoch)`` fitted to the seed-mean curve around its best grid point
    (:func:`~lightning_tau.tuner.curve.smoothed_optimum`).

    The runs are the trials of an Optuna study (``storage``, ``study_name``): every process that calls :meth:`fit`
    on the same study takes trials nobody has finished, a finished trial is never trained again, a trial whose
    worker died is handed to another, and every process computes the same answer from the study.

    Args:
        fraction: share of the training set each run trains on, in ``(0, 1]`` (default 0.25); the subset holds
            ``round(fraction * N)`` samples, fixed by ``subset_seed``. Not with ``axis="dataset_size"``.
        tau_epochs: the ``tau_epoch`` grid (positive, distinct; log-spaced is best, e.g.
            :func:`~lightning_tau.tuner.curve.log_grid`).
        seeds: seeds per ``tau_epoch`` (model initialization and batch order); the curve is their mean.
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
            each with ``cores // workers`` torch threads, or fewer if torch was set to fewer before :meth:`fit` (the
            model and the data must pickle: a class or an instance, not a lambda). On Linux the workers are forks of a
            server that has imported torch and Lightning, started when the finder is built, so they start training
            at once; elsewhere they are spawned (:mod:`lightning_tau.tuner.workers`). Capped, with a note, at the
            machine's cores and at the trials left to train.
        stale_after: seconds without a sign of life (written every 30 s) after which a trial running on another
            machine of a journal-file study is handed to another worker (same machine: as soon as its process is
            gone; database storages: Optuna's heartbeat).
        axis: ``"fraction"`` (the default: one sweep on one subset, as above), ``"width"`` (the sweep at every
            width of ``widths``: how the best weight decay moves with width under μP, see :meth:`fit`) or
            ``"dataset_size"`` (the sweep on a subset of every fraction of ``fractions``: whether the best
            ``tau_epoch`` moves with ``N``). Both give an :class:`~lightning_tau.tuner.axes.AxisResult`.
        widths: ``axis="width"``: at least 2 increasing positive integers, e.g. ``(64, 128, 256)``.
        fractions: ``axis="dataset_size"``: at least 2 increasing fractions in ``(0, 1]``, e.g. ``(0.1, 0.25, 0.5)``.
        level: the level of the axes' exponent interval.
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

    Raises:
        ValueError: at construction for a bad argument, naming it and its value; in :meth:`fit` for data, a
            model or a storage the finder cannot use, before any training.

    Example:
        >>> TimescaleFinder(fraction=0.25, tau_epochs=(2, 8, 32), trainer_kwargs={"max_epochs": 10}).tau_epochs
        (2.0, 8.0, 32.0)
        >>> TimescaleFinder(fraction=1.5, trainer_kwargs={"max_epochs": 10})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: `TimescaleFinder(fraction=1.5)` is not valid: use a number in (0, 1], ...
        >>> TimescaleFinder(axis="width", widths=(64, 128, 256), trainer_kwargs={"max_epochs": 10}).widths
        (64, 128, 256)
        >>> TimescaleFinder(axis="width", widths=(128, 64), trainer_kwargs={"max_epochs": 10})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: `TimescaleFinder(widths=[128, 64])` is not valid: 64 follows 128; give the widths increasing, ...
    """

    def __init__(
        self,
        fraction: float | None = None,
        tau_epochs: Sequence[float] = DEFAULT_TAU_EPOCHS,
        seeds: Sequence[int] = (0, 1, 2),
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
        stale_after: float = STALE_SECONDS,
        axis: Axis = "fraction",
        widths: Sequence[int] | None = None,
        fractions: Sequence[float] | None = None,
        level: float = 0.95,
        pruner: PrunerName | BasePruner | None = None,
    ) -> None:
        self._init_kwargs = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        self.axis: Axis = _check_axis(axis, fraction, widths, fractions)
        #: ``axis="width"``: the widths ``make_model`` is called with, increasing
        self.widths: tuple[int, ...] | None = _check_widths(widths) if axis == "width" else None
        #: ``axis="dataset_size"``: the fractions of the training set, increasing
        self.fractions: tuple[float, ...] | None = _check_fractions(fractions) if axis == "dataset_size" else None
        self.level = _checks.in_range(
            "TimescaleFinder", "level", level, "use the exponent interval's level in (0, 1), e.g. 0.95.", low=0, high=1
        )
        _check_pruner(pruner, axis)
        if fraction is None:
            fraction = self.fractions[-1] if self.fractions is not None else DEFAULT_FRACTION
        self.fraction = _checks.in_range(
            "TimescaleFinder",
            "fraction",
            fraction,
            "use a number in (0, 1], the share of the training set each run trains on (e.g. 0.25).",
            low=0,
            high=1,
            high_closed=True,
        )
        self.tau_epochs = _check_grid(tau_epochs)
        self.seeds = _check_seeds(seeds)
        self.monitor = _checks.non_empty(
            "TimescaleFinder", "monitor", monitor, "use the name of a logged validation metric."
        )
        self.mode: Goal = _checks.choice("TimescaleFinder", "mode", mode, GOALS)
        self.reduce: Reduce = _checks.choice("TimescaleFinder", "reduce", reduce, ("last", "best"))
        self.trainer_kwargs = _check_trainer_kwargs(trainer_kwargs)
        self.epochs: int = self.trainer_kwargs["max_epochs"]
        #: the Optuna pruner the trials report to (``None``: no pruning)
        self.pruner: BasePruner | None = make_pruner(pruner, self.epochs) if isinstance(pruner, str) else pruner
        self._pruner_setting = _pruner_setting(pruner)
        if not isinstance(root_dir, (str, Path)) or not str(root_dir):
            raise _checks.invalid("TimescaleFinder", "root_dir", root_dir, "use a directory path.")
        self.root_dir = Path(root_dir)
        self.subset_seed = _checks.integer("TimescaleFinder", "subset_seed", subset_seed)
        self.window = _checks.positive_int("TimescaleFinder", "window", window, "use an integer >= 1.")
        self.progress = bool(progress)
        self.verbose = bool(verbose)
        if storage is not None and not isinstance(storage, (str, Path, BaseStorage)) or storage == "":
            raise _checks.invalid(
                "TimescaleFinder",
                "storage",
                storage,
                "use a journal file path, an Optuna storage URL (e.g. postgresql+psycopg2://user:password@host/db) or"
                " an Optuna storage.",
            )
        self.storage = storage
        if study_name is not None:
            _checks.non_empty("TimescaleFinder", "study_name", study_name, "use a non-empty name.")
        self.study_name = study_name
        self.workers = _checks.positive_int("TimescaleFinder", "workers", workers)
        if min(self.workers, _cores()) > 1:  # the workers' server imports torch and Lightning while the caller sets up
            start_server()
        self.stale_after = _checks.positive_number(
            "TimescaleFinder", "stale_after", stale_after, "use a positive number of seconds."
        )
        #: trials this process trained in the last :meth:`fit`
        self.trained_runs = 0
        #: trials that were complete in the study when the last :meth:`fit` started
        self.reused_runs = 0
        #: trials still training elsewhere when the last :meth:`fit` returned (``wait=False`` only)
        self.pending_runs = 0
        #: the study the last :meth:`fit` used (name and printable storage); along an axis, the first point's
        self.study: GridStudy | None = None
        #: along an axis: the study of every point, in axis order
        self.studies: list[GridStudy] = []
        self._worker_only = False

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
        (along ``axis="width"`` or ``"dataset_size"``: the :class:`~lightning_tau.tuner.axes.AxisResult`).

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
            model: a ``LightningModule`` instance (every trial trains a fresh copy of its initial weights; seeds
                then change only the batch order; the study is keyed by its class, hparams and parameter shapes,
                not its weights, so a rerun with a new unseeded instance reuses the trials), or something that
                makes a fresh one, called after ``seed_everything(seed)`` for every trial (the class,
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
                disk mid-run raises :class:`~lightning_tau.tuner.study.JournalWriteError` naming it.
        """
        if self.axis != "fraction":
            return self._fit_axis(model, datamodule, train_dataloaders, val_dataloaders, wait=wait)
        copies: ModelCopies | None = None
        if isinstance(model, pl.LightningModule):
            copies = ModelCopies(model)
            model_factory: Callable[[], pl.LightningModule] = copies
        elif isinstance(model, torch.nn.Module) or not callable(model):
            raise TypeError(
                f"`TimescaleFinder.fit(model=...)` needs a LightningModule, or something that makes a fresh one for"
                f" every run (the model class, or `lambda: MyModel(...)`), got {type(model).__name__!r}."
            )
        else:
            model_factory = model
        full_train, val = _resolve_data(datamodule, train_dataloaders, val_dataloaders)
        train = subset_dataloader(full_train, self.fraction, self.subset_seed)
        if len(train) == 0:
            raise SettingError(
                "fraction",
                f"`TimescaleFinder(fraction={self.fraction!r})`: the subset of {len(train.dataset)} samples"  # type: ignore[arg-type]
                f" gives no full batch of {train.batch_size} (drop_last=True). Use a larger fraction.",
            )
        self._check_timescales(train)
        dataset_size = len(full_train.dataset)  # type: ignore[arg-type]
        subset_size = len(train.dataset)  # type: ignore[arg-type]
        probe = model_factory()
        if not isinstance(probe, pl.LightningModule):
            raise TypeError(
                f"`TimescaleFinder.fit(model=...)` must make a LightningModule, got {type(probe).__name__!r}."
            )
        settings = self._settings(probe, dataset_size, subset_size, train, copies)
        del probe
        payload = None
        if self.workers > 1:  # checked before the study is opened: nothing written for a model that cannot travel
            payload = self._worker_payload(model_factory, full_train, val)

        grid = self._grid_order()
        name = (
            self.study_name
            or "tau_finder_" + hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]
        )
        log = self._log
        with quiet_optuna():
            study = GridStudy.open(
                self.storage,
                self.root_dir,
                name,
                settings,
                grid,
                direction="minimize" if self.mode == "min" else "maximize",
                stale_after=self.stale_after,
                log=log,
                pruner=self.pruner,
            )
            self.study = study
            self.trained_runs, self.pending_runs = 0, 0
            self.reused_runs = len(study.records())
            workers = self._workers_for(len(grid) - self.reused_runs)
            log(
                f"study {name!r} in {study.shown}: {len(grid)} trials ({len(self.tau_epochs)} tau_epochs x"
                f" {len(self.seeds)} seeds) on {subset_size} of {dataset_size} training samples for {self.epochs}"
                f" epochs; {self.reused_runs} done before"
                + (f", {workers} workers on this machine." if workers > 1 else ".")
            )
            procs = self._start_workers(payload, workers) if payload is not None and workers > 1 else None
            threads = torch.get_num_threads()
            try:
                torch.set_num_threads(self._trial_threads(threads, workers))
                if self.reused_runs < len(grid):
                    log(
                        f"torch threads per process: {self._trial_threads(threads, workers)} ({_cores()} cores //"
                        f" {workers} {'worker' if workers == 1 else 'workers'}, at most the {threads} torch"
                        " was set to; torch.set_num_threads(n) before fit for fewer)."
                    )
                self._work(study, model_factory, train, val, wait=wait, workers=procs)
            except BaseException:
                if procs is not None:  # Ctrl-C or an error: start no worker that would not hear of it
                    procs.stop()
                raise
            finally:
                torch.set_num_threads(threads)
                if procs is not None:
                    procs.join()
            self._log_workers(procs)
            records = study.records()
            self.pending_runs = len(grid) - len(records)
        if self._worker_only:
            return None
        if self.pending_runs:
            elsewhere = len(study.running_elsewhere())
            log(
                f"no trial left to take; {self.pending_runs} of {len(grid)} not complete ({elsewhere} training"
                " elsewhere). Call again when they finish for the suggestion."
            )
            return None
        result = self._result(records, full_train, dataset_size, subset_size)
        _store_result(study, result, self)
        if self.verbose and rank_zero_only.rank == 0:
            print(result.table())
        return result

    def _grid_order(self) -> list[tuple[float, int]]:
        """The grid in the order its trials are enqueued: ``tau_epoch`` by ``tau_epoch``; with a pruner, seed by
        seed (every ``tau_epoch`` of the first seed first), so that the pruner compares a run with the other
        ``tau_epoch`` values early and a pruned ``tau_epoch``'s other seeds are not trained at all."""
        if self.pruner is not None:
            return [(tau, seed) for seed in self.seeds for tau in self.tau_epochs]
        return [(tau, seed) for tau in self.tau_epochs for seed in self.seeds]

    def _trial_threads(self, current: int, workers: int) -> int:
        """Torch threads for each process training trials: ``cores // workers``, at most ``current``, at least 1."""
        return max(1, min(current, _cores() // workers))

    def _check_timescales(self, train: DataLoader) -> None:
        """Every grid point as the callback will take it: ``tau_epoch * M`` optimizer steps, more than one and finite
        (``M``: the subset's steps per epoch on one device)."""
        accumulate = int(self.trainer_kwargs.get("accumulate_grad_batches", 1))
        steps = math.ceil(len(train) / accumulate)
        for tau in self.tau_epochs:
            tau_iter = tau * steps
            if math.isfinite(tau_iter) and tau_iter > 1:
                continue
            bound = f"above {1 / steps:.4g} (one step)" if tau_iter <= 1 else f"below {sys.float_info.max / steps:.4g}"
            raise SettingError(
                "tau_epochs",
                f"`TimescaleFinder(tau_epochs={list(self.tau_epochs)!r})` is not valid: tau_epoch={tau:g} is"
                f" {tau_iter:.4g} optimizer steps at M={steps} steps per epoch of the subset, which TimescaleCallback"
                f" cannot set. Use tau_epochs {bound}; good values are usually several epochs.",
            )

    # --- the width and dataset-size axes ---------------------------------------------------------------------

    def _fit_axis(
        self,
        model: Any,
        datamodule: pl.LightningDataModule | None,
        train_dataloaders: DataLoader | None,
        val_dataloaders: Any,
        *,
        wait: bool,
    ) -> AxisResult | None:
        """:meth:`fit` along ``axis``: one study per axis point (the point's settings name it), all in the same
        storage; this process and its workers take the trials of every point in turn."""
        copies: ModelCopies | None = None
        if self.axis == "width":
            if isinstance(model, torch.nn.Module) or not callable(model):
                raise TypeError(
                    "`TimescaleFinder(axis='width').fit(model=...)` needs `make_model`, a callable that takes the"
                    f" width and returns a μP LightningModule (e.g. the model class), got {type(model).__name__!r}."
                )
        elif isinstance(model, pl.LightningModule):
            copies = ModelCopies(model)
        elif isinstance(model, torch.nn.Module) or not callable(model):
            raise TypeError(
                f"`TimescaleFinder.fit(model=...)` needs a LightningModule, or something that makes a fresh one for"
                f" every run (the model class, or `lambda: MyModel(...)`), got {type(model).__name__!r}."
            )
        full_train, val = _resolve_data(datamodule, train_dataloaders, val_dataloaders)
        dataset_size = len(full_train.dataset)  # type: ignore[arg-type]
        # (value, model factory, training subset, study settings) per axis point
        points: list[tuple[float, Callable[[], pl.LightningModule], DataLoader, dict[str, Any]]] = []
        if self.axis == "width":
            assert self.widths is not None
            train = subset_dataloader(full_train, self.fraction, self.subset_seed)
            self._check_subset(train, self.fraction)
            probes = {w: _probe_width(model, w) for w in self.widths}
            self._check_mup(probes)
            for w, probe in probes.items():
                settings = self._settings(probe, dataset_size, len(train.dataset), train, None)  # type: ignore[arg-type]
                settings["axis"] = {"axis": "width", "width": w}
                points.append((w, functools.partial(model, w), train, settings))
            del probes
        else:
            assert self.fractions is not None
            factory: Callable[[], pl.LightningModule] = copies if copies is not None else model
            probe = factory()
            if not isinstance(probe, pl.LightningModule):
                raise TypeError(
                    f"`TimescaleFinder.fit(model=...)` must make a LightningModule, got {type(probe).__name__!r}."
                )
            for f in self.fractions:
                train = subset_dataloader(full_train, f, self.subset_seed)
                self._check_subset(train, f)
                settings = self._settings(probe, dataset_size, len(train.dataset), train, copies)  # type: ignore[arg-type]
                settings["fraction"] = f
                settings["axis"] = {"axis": "dataset_size", "fraction": f}
                points.append((f, factory, train, settings))
            del probe
        payload = self._worker_payload(model, full_train, val) if self.workers > 1 else None

        grid = [(tau, seed) for tau in self.tau_epochs for seed in self.seeds]
        log = self._log
        studies: list[GridStudy] = []
        with quiet_optuna():
            for value, _, _, settings in points:
                if self.study_name:
                    name = f"{self.study_name}_{self.axis}={value:g}"
                else:
                    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]
                    name = f"tau_finder_{digest}_{self.axis}={value:g}"
                studies.append(
                    GridStudy.open(
                        self.storage,
                        self.root_dir,
                        name,
                        settings,
                        grid,
                        direction="minimize" if self.mode == "min" else "maximize",
                        stale_after=self.stale_after,
                        log=log,
                    )
                )
            self.study = studies[0]
            self.studies = studies
            self.trained_runs, self.pending_runs = 0, 0
            self.reused_runs = sum(len(study.records()) for study in studies)
            what = (
                f"widths {', '.join(str(w) for w in self.widths or ())}"
                if self.axis == "width"
                else f"fractions {', '.join(f'{f:g}' for f in self.fractions or ())} of {dataset_size} samples"
            )
            workers = self._workers_for(len(grid) * len(studies) - self.reused_runs)
            log(
                f"{self.axis} axis: {len(studies)} studies in {studies[0].shown} ({what}), {len(grid)} trials each"
                f" ({len(self.tau_epochs)} tau_epochs x {len(self.seeds)} seeds) for {self.epochs} epochs;"
                f" {self.reused_runs} done before" + (f", {workers} workers on this machine." if workers > 1 else ".")
            )
            procs = self._start_workers(payload, workers) if payload is not None and workers > 1 else None
            threads = torch.get_num_threads()
            try:
                torch.set_num_threads(self._trial_threads(threads, workers))
                if self.reused_runs < len(grid) * len(studies):
                    log(
                        f"torch threads per process: {self._trial_threads(threads, workers)} ({_cores()} cores //"
                        f" {workers} {'worker' if workers == 1 else 'workers'}, at most the {threads} torch"
                        " was set to; torch.set_num_threads(n) before fit for fewer)."
                    )
                # every point's free trials first (so no process idles while another point has some), then wait
                for study, (_, factory_, train, _) in zip(studies, points):
                    self._work(study, factory_, train, val, wait=False)
                for study, (_, factory_, train, _) in zip(studies, points):
                    self._work(study, factory_, train, val, wait=wait, workers=procs)
            except BaseException:
                if procs is not None:  # Ctrl-C or an error: start no worker that would not hear of it
                    procs.stop()
                raise
            finally:
                torch.set_num_threads(threads)
                if procs is not None:
                    procs.join()
            self._log_workers(procs)
            records = [study.records() for study in studies]
            self.pending_runs = sum(len(grid) - len(r) for r in records)
        if self._worker_only:
            return None
        if self.pending_runs:
            elsewhere = sum(len(study.running_elsewhere()) for study in studies)
            log(
                f"no trial left to take; {self.pending_runs} of {len(grid) * len(studies)} not complete ({elsewhere}"
                " training elsewhere). Call again when they finish for the result."
            )
            return None
        results = []
        for (value, _, train, _), point_records, study in zip(points, records, studies):
            result = self._result(point_records, full_train, dataset_size, len(train.dataset))  # type: ignore[arg-type]
            if self.axis == "dataset_size":
                result = dataclasses.replace(result, fraction=float(value))
            _store_result(study, result, self)  # each point's answer, and what it was computed with, on its study
            results.append(result)
        if self.axis == "width":
            lambda_base = [_record_lambda_base(records[-1][(tau, self.seeds[0])])[0] for tau in self.tau_epochs]
            base_mult = _record_lambda_base(records[0][(self.tau_epochs[0], self.seeds[0])])[1]
            axis_result = AxisResult.build(
                "width",
                [p[0] for p in points],
                results,
                lambda_base=lambda_base,
                base_width_mult=base_mult,
                level=self.level,
                window=self.window,
            )
        else:
            axis_result = AxisResult.build(
                "dataset_size", [p[0] for p in points], results, level=self.level, window=self.window
            )
        if self.verbose and rank_zero_only.rank == 0:
            print(axis_result.table())
        return axis_result

    def _check_subset(self, train: DataLoader, fraction: float) -> None:
        """An axis point's subset: at least one full batch, and every ``tau_epoch`` of the grid settable on it."""
        if len(train) == 0:
            name = "fraction" if self.axis != "dataset_size" else "fractions"
            value = fraction if self.axis != "dataset_size" else list(self.fractions or ())
            raise SettingError(
                name,
                f"`TimescaleFinder({name}={value!r})`: the subset of {len(train.dataset)} samples"  # type: ignore[arg-type]
                f" gives no full batch of {train.batch_size} (drop_last=True). Use a larger fraction.",
            )
        self._check_timescales(train)

    def _check_mup(self, probes: Mapping[int, pl.LightningModule]) -> None:
        """Bad width-axis models, before any training: one that ignores ``width``, or one that is not μP."""
        widths = list(probes)
        first, last = probes[widths[0]], probes[widths[-1]]
        shapes = [tuple(p.shape) for p in first.parameters()]
        if shapes == [tuple(p.shape) for p in last.parameters()]:
            raise ValueError(
                f"`TimescaleFinder(widths={widths!r})`: make_model({widths[0]}) and make_model({widths[-1]}) build"
                " parameters of the same shapes: `make_model` ignores its `width` argument. Pass it on to the"
                " model (e.g. `lambda width: MyModel(width=width)`)."
            )
        readouts = [type(m).__name__ for m in last.modules() if type(m).__name__ in ("MuReadout", "MuSharedReadout")]
        if readouts and not any(getattr(p, "infshape", None) is not None for p in last.parameters()):
            raise ValueError(
                f"`TimescaleFinder(axis='width')`: make_model({widths[-1]}) has a mup {readouts[0]} but its parameters"
                " carry no `infshape`. Did you forget to call `mup.set_base_shapes(model, base_model)` in make_model?"
            )
        mults = _width_mults(last)
        if mults is not None and all(math.isclose(m, 1.0) for m in mults):
            raise ValueError(
                f"`TimescaleFinder(axis='width')`: make_model({widths[-1]}) is not μP: every decaying weight has"
                " width multiplier s = 1 (no mup `infshape` with s != 1, no param group with a `width_mult` other"
                " than 1). Call `mup.set_base_shapes(model, base_model)` in make_model and use `mup.MuAdamW`, or"
                " `build_param_groups(..., width_mult=...)`."
            )

    def _log(self, message: str) -> None:
        if self.verbose:
            rank_zero_info(f"TimescaleFinder: {message}")

    # --- the trials ------------------------------------------------------------------------------------------

    def _work(
        self,
        study: GridStudy,
        model_factory: Callable[[], pl.LightningModule],
        train: DataLoader,
        val: Any,
        *,
        wait: bool,
        workers: Workers | None = None,
    ) -> None:
        """Take and train trials until none is left to take; with ``wait``, then until the grid is complete."""
        from tqdm.auto import tqdm

        bar = None
        counted: set[tuple[float, int]] = set()  # grid points whose epochs the bar holds
        warned: set[tuple[type, str]] = set()  # warnings shown in this fit: each once, not once per trial
        told_waiting: set[int] = set()
        try:
            while True:
                study.reclaim()
                study.enqueue_missing()
                if bar is not None:  # trials other processes (this fit's workers too) finished: their epochs
                    finished = study.records()
                    done = set(finished) - counted
                    bar.update(sum(int(finished[key].get("epochs_run", self.epochs)) for key in done))
                    counted |= done
                taken = study.take()
                if taken is not None:
                    trial, (tau, seed) = taken
                    sibling = _pruned_sibling(study.records(), tau, seed) if self.pruner is not None else None
                    if sibling is not None:  # a tau_epoch with a pruned seed has no place on the paired curve
                        study.finish(trial, pruned_record(*sibling), math.nan)
                        counted.add((tau, seed))
                        continue
                    if bar is None:
                        counted = set(study.records())
                        left = len(study.grid) - len(counted)
                        bar = tqdm(
                            total=max(1, left) * self.epochs,
                            unit="epoch",
                            desc="tau finder",
                            disable=not self.progress or rank_zero_only.rank != 0,
                        )
                    bar.set_postfix_str(f"tau_epoch={tau:g} seed={seed}")
                    with study.working_on(trial), _once(warned, show=not self._worker_only), quiet_sweep():
                        record = run_trial(
                            model_factory,
                            train,
                            val,
                            tau_epoch=tau,
                            seed=seed,
                            monitor=self.monitor,
                            trainer_kwargs=self.trainer_kwargs,
                            log_dir=self.root_dir / "tb" / study.study.study_name,
                            log_name=f"tau_epoch={_tau_name(tau)}_seed{seed}_trial{trial.number}",
                            bar=bar,
                            # the pruner judges a tau_epoch by its first seed's run (against the first seed's runs
                            # at the other tau_epochs); the other seeds of a tau_epoch it kept train in full
                            trial=trial if self.pruner is not None and seed == self.seeds[0] else None,
                        )
                    if study.finish(trial, record, self._tell_value(record, study)):
                        self.trained_runs += 1
                    counted.add((tau, seed))  # its epochs ticked as it trained
                    continue
                if len(study.records()) == len(study.grid):
                    return
                if not wait:
                    if workers is not None and workers.alive():  # this command's own workers: theirs is ours
                        time.sleep(POLL_SECONDS)
                        continue
                    return
                running = study.running_elsewhere()
                new = [t for t in running if t.number not in told_waiting]
                if new:
                    told_waiting.update(t.number for t in new)
                    where = ", ".join(
                        f"#{t.number} on {t.user_attrs.get('worker', {}).get('host', '?')}"
                        f" pid {t.user_attrs.get('worker', {}).get('pid', '?')}"
                        for t in new[:4]
                    )
                    self._log(f"waiting for {len(running)} trials training elsewhere ({where}).")
                time.sleep(POLL_SECONDS)
        finally:
            if bar is not None:
                bar.total = bar.n
                bar.close()

    def _tell_value(self, record: dict[str, Any], study: GridStudy) -> float:
        """The trial's Optuna value (for dashboards; the answer is computed from the records): the reduced metric,
        or the worst value for a run that diverged."""
        values = [float(m[self.monitor]) for m in record["metrics"] if self.monitor in m]
        worst = math.inf if study.study.direction.name == "MINIMIZE" else -math.inf
        value = reduce_metric(values, self.reduce, self.mode)
        return value if math.isfinite(value) else worst

    def _workers_for(self, left: int) -> int:
        """The worker processes to run: ``workers``, capped at this machine's cores and at the trials left to train
        (more only split the cores into slower trials, or wait with nothing to do); a note says when capped."""
        cores = _cores()
        workers = max(1, min(self.workers, cores, left))
        if workers < self.workers:
            why = "the number of trials left to train" if workers == max(1, left) else "this machine's cores"
            self._log(f"workers={self.workers} capped at {workers} ({why}).")
        return workers

    def _worker_payload(self, model_factory: Callable[[], Any], full_train: DataLoader, val: Any) -> bytes:
        kwargs = {**self._init_kwargs, "workers": 1, "progress": False, "verbose": False}
        try:
            return pickle.dumps((kwargs, model_factory, full_train, val))
        except Exception as err:
            raise ValueError(
                f"`TimescaleFinder(workers={self.workers})` sends the model and the data to its worker processes,"
                f" but they do not pickle ({type(err).__name__}: {err}). Pass the model class or an instance (not a"
                " lambda), data that pickles, or workers=1 and start the command once per worker instead."
            ) from None

    def _start_workers(self, payload: bytes, workers: int) -> Workers:
        """``workers - 1`` worker processes, started in the background while this process trains."""
        threads = self._trial_threads(torch.get_num_threads(), workers)
        return Workers(_worker_main, (payload, threads, dict(os.environ)), workers - 1, "tau-finder-worker")

    def _log_workers(self, procs: Workers | None) -> None:
        """Say which workers could not start or ended badly (their trials are handed on or trained here)."""
        if procs is None:
            return
        for error in procs.errors:
            self._log(f"{error}; trained without it.")
        for pid, code in procs.exit_codes():
            if code != 0:
                self._log(f"worker process {pid} ended with exit code {code}.")

    def _settings(
        self,
        model: pl.LightningModule,
        dataset_size: int,
        subset_size: int,
        train: DataLoader,
        copies: ModelCopies | None,
    ) -> dict[str, Any]:
        """What must match for two processes to share a study (JSON round-tripped, so it compares equal to a stored
        one): the grid, the subset, the model, the Trainer settings.

        The model is its class, hparams and parameter names and shapes, and whether the trials copy an instance or
        call a factory per seed: not an instance's initial weights, so that a rerun of a script that builds its
        model unseeded (``MyModel()``) reuses the trials it trained before. Two instances of the same class, hparams
        and shapes therefore share a study; the trials train copies of the weights of whichever instance took them.
        """
        kwargs = {k: v for k, v in self.trainer_kwargs.items() if k != "callbacks"}
        settings = {
            "tau_epochs": list(self.tau_epochs),
            "seeds": list(self.seeds),
            "epochs": self.epochs,
            "fraction": self.fraction,
            "subset_seed": self.subset_seed,
            "dataset_size": dataset_size,
            "subset_size": subset_size,
            "batch_size": train.batch_size,
            "shuffle": isinstance(train.sampler, RandomSampler),
            "drop_last": train.drop_last,
            "model": {
                "class": f"{type(model).__module__}.{type(model).__qualname__}",
                # without LightningCLI's own `_class_path` / `_instantiator`: a model built from a config is the
                # same model as one built in Python with the same arguments
                "hparams": _jsonable({k: v for k, v in dict(getattr(model, "hparams", {})).items() if k[:1] != "_"}),
                "num_params": sum(p.numel() for p in model.parameters()),
                "parameters": _shapes_digest(model),
                "init": "copies of an instance" if copies is not None else "a factory called per seed",
            },
            "trainer": _jsonable(kwargs),
            "callbacks": [type(c).__qualname__ for c in self.trainer_kwargs.get("callbacks", None) or []],
        }
        if self._pruner_setting is not None:  # only with one: the studies of unpruned sweeps keep their names
            settings["pruner"] = self._pruner_setting
        return json.loads(json.dumps(settings))

    # --- the result ------------------------------------------------------------------------------------------

    def _value(self, record: dict[str, Any], tau: float, seed: int) -> float:
        history = record["metrics"]
        if not history:
            raise ValueError(
                f"`TimescaleFinder`: the run tau_epoch={tau:g}, seed={seed} never validated. Check"
                " `check_val_every_n_epoch` / `val_check_interval` in `trainer_kwargs`."
            )
        if not any(self.monitor in entry for entry in history):
            raise ValueError(
                f"`TimescaleFinder(monitor={self.monitor!r})`: the run tau_epoch={tau:g}, seed={seed} logged no"
                f" such metric; it logged {sorted(history[-1])}. Pass one of those as `monitor`."
            )
        return reduce_metric([float(entry.get(self.monitor, math.nan)) for entry in history], self.reduce, self.mode)

    def _result(
        self,
        records: dict[tuple[float, int], dict[str, Any]],
        full_train: DataLoader,
        dataset_size: int,
        subset_size: int,
    ) -> FinderResult:
        curve, pruned = [], []
        for tau in self.tau_epochs:
            runs = [records[(tau, seed)] for seed in self.seeds]
            trained = [r for r in runs if "groups" in r]
            weight_decay = (
                {name: g["weight_decay"] for name, g in trained[0]["groups"].items() if g["decays"]} if trained else {}
            )
            if any("pruned" in r for r in runs):
                pruned.append(
                    PrunedPoint(
                        tau_epoch=tau,
                        seeds=list(self.seeds),
                        pruned_after=[r["pruned"]["after_epoch"] if "pruned" in r else None for r in runs],
                        last_values=[self._last(r) for r in runs],
                        weight_decay=weight_decay,
                        steps=[int(r["steps"]) for r in runs],
                    )
                )
                continue
            curve.append(
                CurvePoint(
                    tau_epoch=tau,
                    values=[self._value(r, tau, seed) for r, seed in zip(runs, self.seeds)],
                    seeds=list(self.seeds),
                    weight_decay=weight_decay,
                    steps=[int(r["steps"]) for r in runs],
                )
            )
        if not curve:
            raise ValueError(
                f"`TimescaleFinder(pruner={self._pruner_setting!r})` pruned every tau_epoch of the grid"
                f" {list(self.tau_epochs)!r}: there is no curve to suggest from. Use a gentler pruner (e.g. more"
                " warm-up epochs or start-up trials) or pruner=None."
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
        accumulate = int(self.trainer_kwargs.get("accumulate_grad_batches", 1))
        full_steps_per_epoch = math.ceil(math.ceil(len(full_train) / world) / accumulate)
        return FinderResult.from_curve(
            curve,
            lr=lrs,
            monitor=self.monitor,
            mode=self.mode,
            reduce=self.reduce,
            fraction=self.fraction,
            dataset_size=dataset_size,
            subset_size=subset_size,
            batch_size=int(first["global_batch_size"]),
            epochs=self.epochs,
            full_cost=len(self.tau_epochs) * len(self.seeds) * self.epochs * full_steps_per_epoch,
            steps_per_epoch=full_steps_per_epoch,
            window=self.window,
            pruned=pruned,
        )

    def _last(self, record: dict[str, Any]) -> float:
        """The last value of ``monitor`` a run logged (``nan``: none, a run not trained)."""
        values = [float(m[self.monitor]) for m in record["metrics"] if self.monitor in m]
        return values[-1] if values else math.nan


# --- helpers ---------------------------------------------------------------------------------------------------


def _tau_name(tau: float) -> str:
    return f"{tau:.6g}"


def _check_grid(tau_epochs: Sequence[float]) -> tuple[float, ...]:
    if isinstance(tau_epochs, (str, bytes)) or not isinstance(tau_epochs, Sequence) or not tau_epochs:
        raise _checks.invalid(
            "TimescaleFinder",
            "tau_epochs",
            tau_epochs,
            "use a non-empty sequence of positive numbers (epochs), e.g. (2, 4, 8, 16, 32, 64, 128).",
        )
    for tau in tau_epochs:
        _checks.positive_number(
            "TimescaleFinder",
            "tau_epochs",
            tau,
            f"{tau!r} is not a positive finite number of epochs.",
            shown=repr(list(tau_epochs)),
        )
    grid = tuple(sorted(float(t) for t in tau_epochs))
    names = [_tau_name(t) for t in grid]
    if len(set(names)) != len(names):
        raise ValueError(
            f"`TimescaleFinder(tau_epochs={list(tau_epochs)!r})` repeats a value (to 6 significant digits):"
            " give each tau_epoch once."
        )
    return grid


def make_pruner(name: PrunerName, epochs: int) -> BasePruner:
    """The Optuna pruner ``TimescaleFinder(pruner=name)`` uses for runs of ``epochs`` epochs (it judges the first
    seed's runs, which go first, ``tau_epoch`` by ``tau_epoch``).

    - ``"median"``: ``MedianPruner(n_startup_trials=3, n_warmup_steps=epochs // 8)``: a run is stopped at an epoch
      after the first eighth when its best value so far is worse than the median of the finished runs' values at
      that epoch, once 3 runs have finished (the first seed's 3 smallest ``tau_epoch`` values never are).
    - ``"successive_halving"``: ``SuccessiveHalvingPruner(min_resource=max(1, epochs // 8), reduction_factor=3)``.
    - ``"hyperband"``: ``HyperbandPruner(min_resource=max(1, epochs // 8), max_resource=epochs,
      reduction_factor=3)``.

    Chosen on the digits task of ``benchmarks/eval_finder.py`` (``benchmarks/README.md``).

    Example:
        >>> type(make_pruner("median", epochs=40)).__name__
        'MedianPruner'
    """
    from optuna.pruners import HyperbandPruner, MedianPruner, SuccessiveHalvingPruner

    if name == "median":
        return MedianPruner(n_startup_trials=3, n_warmup_steps=epochs // 8)
    if name == "successive_halving":
        return SuccessiveHalvingPruner(min_resource=max(1, epochs // 8), reduction_factor=3)
    if name == "hyperband":
        return HyperbandPruner(min_resource=max(1, epochs // 8), max_resource=epochs, reduction_factor=3)
    raise ValueError(f"`make_pruner(name={name!r})` is not valid: use one of {', '.join(map(repr, PRUNER_NAMES))}.")


def _check_pruner(pruner: Any, axis: Any) -> None:
    """A ``pruner`` argument: ``None``, one of :data:`PRUNER_NAMES` or an Optuna pruner, with ``axis="fraction"``."""
    if pruner is None:
        return
    if not isinstance(pruner, BasePruner) and pruner not in PRUNER_NAMES:
        raise ValueError(
            f"`TimescaleFinder(pruner={pruner!r})` is not valid: use None (no pruning),"
            f" {', '.join(map(repr, PRUNER_NAMES))} or an `optuna.pruners.BasePruner` instance."
        )
    if axis != "fraction":
        raise ValueError(
            f"`TimescaleFinder(pruner={pruner!r})` is only used with axis='fraction' (axis is {axis!r}): leave"
            " `pruner` out along an axis."
        )


def _pruner_setting(pruner: Any) -> Any:
    """The pruner as the study's settings hold it: its name, or an instance's class and attributes."""
    if pruner is None or isinstance(pruner, str):
        return pruner
    return _jsonable({"class": f"{type(pruner).__module__}.{type(pruner).__qualname__}", **vars(pruner)})


def _pruned_sibling(
    records: Mapping[tuple[float, int], Mapping[str, Any]], tau: float, seed: int
) -> tuple[int, int] | None:
    """``(seed, epochs)`` of a trained run at ``tau`` that was pruned (``None``: none was)."""
    for (other_tau, other_seed), record in sorted(records.items()):
        if other_tau == tau and other_seed != seed and "pruned" in record and "groups" in record:
            return other_seed, int(record["pruned"]["after_epoch"])
    return None


def _check_seeds(seeds: Sequence[int]) -> tuple[int, ...]:
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence) or not seeds:
        raise _checks.invalid("TimescaleFinder", "seeds", seeds, "use a non-empty sequence of integers.")
    for seed in seeds:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise _checks.invalid(
                "TimescaleFinder", "seeds", seeds, f"{seed!r} is not an integer.", shown=repr(list(seeds))
            )
        if not 0 <= seed <= MAX_SEED:
            raise _checks.invalid(
                "TimescaleFinder",
                "seeds",
                seeds,
                f"{seed} is not a seed numpy accepts; use integers from 0 to {MAX_SEED}.",
                shown=repr(list(seeds)),
            )
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"`TimescaleFinder(seeds={list(seeds)!r})` repeats a seed: give each seed once.")
    return tuple(seeds)


def _check_axis(axis: Any, fraction: Any, widths: Any, fractions: Any) -> Axis:
    _checks.choice(
        "TimescaleFinder",
        "axis",
        axis,
        ("fraction", "width", "dataset_size"),
        "Use 'fraction' (one sweep on a subset), 'width' (with `widths`) or 'dataset_size' (with `fractions`).",
    )
    if widths is not None and axis != "width":
        raise ValueError(
            f"`TimescaleFinder(widths={widths!r})` is only used with axis='width' (axis is {axis!r}): pass"
            " axis='width', or leave `widths` out."
        )
    if fractions is not None and axis != "dataset_size":
        raise ValueError(
            f"`TimescaleFinder(fractions={fractions!r})` is only used with axis='dataset_size' (axis is {axis!r}):"
            " pass axis='dataset_size', or `fraction=` for one subset."
        )
    if axis == "width" and widths is None:
        raise ValueError(
            "`TimescaleFinder(axis='width')` needs `widths`: at least 2 increasing widths, e.g. widths=(64, 128, 256)."
        )
    if axis == "dataset_size" and fractions is None:
        raise ValueError(
            "`TimescaleFinder(axis='dataset_size')` needs `fractions`: at least 2 increasing fractions of the training"
            " set, e.g. fractions=(0.1, 0.25, 0.5)."
        )
    if axis == "dataset_size" and fraction is not None:
        raise ValueError(
            f"`TimescaleFinder(fraction={fraction!r})` is not used with axis='dataset_size': the runs train on each of"
            " `fractions`. Leave `fraction` out."
        )
    return axis  # type: ignore[no-any-return]


def _check_widths(widths: Any) -> tuple[int, ...]:
    if isinstance(widths, (str, bytes)) or not isinstance(widths, Sequence) or len(widths) < 2:
        raise _checks.invalid(
            "TimescaleFinder",
            "widths",
            widths,
            "give at least 2 increasing positive integer widths, e.g. (64, 128, 256): the exponent is a slope across"
            " widths.",
        )
    shown = repr(list(widths))
    for w in widths:
        if isinstance(w, bool) or not isinstance(w, numbers.Integral) or w < 1:
            raise _checks.invalid(
                "TimescaleFinder", "widths", widths, f"{w!r} is not a positive integer width.", shown=shown
            )
    for a, b in zip(widths, widths[1:]):
        if b <= a:
            raise _checks.invalid(
                "TimescaleFinder",
                "widths",
                widths,
                f"{b!r} follows {a!r}; give the widths increasing, each once, e.g. (64, 128, 256).",
                shown=shown,
            )
    return tuple(int(w) for w in widths)


def _check_fractions(fractions: Any) -> tuple[float, ...]:
    if isinstance(fractions, (str, bytes)) or not isinstance(fractions, Sequence) or len(fractions) < 2:
        raise _checks.invalid(
            "TimescaleFinder",
            "fractions",
            fractions,
            "give at least 2 increasing fractions in (0, 1], e.g. (0.1, 0.25, 0.5): the exponent is a slope across"
            " dataset sizes.",
        )
    shown = repr(list(fractions))
    for f in fractions:
        hint = f"{f!r} is not a number in (0, 1]."
        _checks.in_range("TimescaleFinder", "fractions", f, hint, low=0, high=1, high_closed=True, shown=shown)
    for a, b in zip(fractions, fractions[1:]):
        if b <= a:
            raise _checks.invalid(
                "TimescaleFinder",
                "fractions",
                fractions,
                f"{b!r} follows {a!r}; give the fractions increasing, each once, e.g. (0.1, 0.25, 0.5).",
                shown=shown,
            )
    return tuple(float(f) for f in fractions)


def _probe_width(make_model: Callable[[int], Any], width: int) -> pl.LightningModule:
    """``make_model(width)``, checked to be a LightningModule."""
    try:
        probe = make_model(width)
    except Exception as err:
        raise ValueError(
            f"`TimescaleFinder(axis='width')`: make_model({width}) raised {type(err).__name__}: {err}. `fit` needs"
            " a callable that takes the width and returns a μP LightningModule (e.g. the model class, if its"
            " `__init__` takes `width` and calls `mup.set_base_shapes`)."
        ) from None
    if not isinstance(probe, pl.LightningModule):
        raise TypeError(
            f"`TimescaleFinder(axis='width')`: make_model({width}) must return a LightningModule, got"
            f" {type(probe).__name__!r}."
        )
    return probe


def _width_mults(model: pl.LightningModule) -> list[float] | None:
    """The μP width multipliers ``s`` of ``model``'s decaying weights: mup's ``p.infshape`` (matrix-like ones), or
    the ``width_mult`` keys of the param groups ``configure_optimizers`` builds; ``None`` when neither can be read
    (no ``infshape`` and ``configure_optimizers`` needs a trainer)."""
    from lightning_tau.width import has_infshape, param_width_mult

    params = [p for p in model.parameters() if p.ndim >= 2]
    if any(has_infshape(p) for p in params):
        return [param_width_mult(p) for p in params if has_infshape(p)]
    try:
        out = model.configure_optimizers()
    except Exception:  # e.g. it reads `self.trainer`, which a probe has not got
        return None
    optimizers: list[Any] = []

    def gather(item: Any) -> None:
        if isinstance(item, torch.optim.Optimizer):
            optimizers.append(item)
        elif isinstance(item, Mapping) and "optimizer" in item:
            gather(item["optimizer"])
        elif isinstance(item, (list, tuple)):
            for sub in item:
                gather(sub)
        elif hasattr(item, "param_groups"):  # a wrapped optimizer
            optimizers.append(item)

    gather(out)
    return [
        float(g["width_mult"])
        for o in optimizers
        for g in o.param_groups
        if g.get("weight_decay", 0) > 0 and g.get("width_mult") is not None
    ]


def _record_lambda_base(record: Mapping[str, Any]) -> tuple[float, float]:
    """``(λ_base, s)`` of a width-axis trial: the weight decay the callback wrote into the decaying group with the
    largest width multiplier ``s``, divided by ``s`` (with ``width_exponent=1`` every group's is ``s λ_base``)."""
    decaying = [g for g in record["groups"].values() if g["decays"]]
    group = max(decaying, key=lambda g: float(g.get("width_mult") or 1.0))
    s = float(group.get("width_mult") or 1.0)
    return float(group["weight_decay"]) / s, s


def _check_trainer_kwargs(trainer_kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    if trainer_kwargs is None or not isinstance(trainer_kwargs, Mapping) or "max_epochs" not in trainer_kwargs:
        raise ValueError(
            f"`TimescaleFinder(trainer_kwargs={trainer_kwargs!r})` must be a dict with `max_epochs`: every run trains"
            " for the epochs the full run will, e.g. trainer_kwargs={'max_epochs': 40}."
        )
    epochs = trainer_kwargs["max_epochs"]
    _checks.positive_int("TimescaleFinder", "trainer_kwargs", epochs, shown=f"{{'max_epochs': {epochs!r}}}")
    for key, why in _FORBIDDEN_TRAINER_KWARGS.items():
        value = trainer_kwargs.get(key)
        if key in trainer_kwargs and not (key == "max_steps" and value in (None, -1)):
            raise ValueError(f"`TimescaleFinder(trainer_kwargs={{{key!r}: {value!r}}})` is not allowed: {why}.")
    accumulate = trainer_kwargs.get("accumulate_grad_batches", 1)
    shown = f"{{'accumulate_grad_batches': {accumulate!r}}}"
    _checks.positive_int("TimescaleFinder", "trainer_kwargs", accumulate, shown=shown)
    for callback in trainer_kwargs.get("callbacks", None) or []:
        if isinstance(callback, TimescaleCallback):
            raise ValueError(
                "`TimescaleFinder(trainer_kwargs={'callbacks': [TimescaleCallback(...)]})` is not allowed: the finder"
                " adds a TimescaleCallback with each run's tau_epoch itself."
            )
    kwargs = {
        "enable_checkpointing": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
        "num_sanity_val_steps": 0,
    }
    kwargs.update(trainer_kwargs)
    return kwargs


def _resolve_data(
    datamodule: pl.LightningDataModule | None,
    train_dataloaders: DataLoader | None,
    val_dataloaders: Any,
) -> tuple[DataLoader, Any]:
    if datamodule is not None and (train_dataloaders is not None or val_dataloaders is not None):
        raise ValueError(
            "`TimescaleFinder.fit` takes a `datamodule` or `train_dataloaders` and `val_dataloaders`, not both."
        )
    if datamodule is not None:
        if not isinstance(datamodule, pl.LightningDataModule):
            raise TypeError(
                "`TimescaleFinder.fit(datamodule=...)` must be a LightningDataModule, got"
                f" {type(datamodule).__name__!r}."
            )
        datamodule.prepare_data()
        datamodule.setup("fit")
        train_dataloaders, val_dataloaders = datamodule.train_dataloader(), datamodule.val_dataloader()
    if train_dataloaders is None:
        raise ValueError("`TimescaleFinder.fit` needs training data: pass `datamodule` or `train_dataloaders`.")
    if isinstance(train_dataloaders, (list, tuple, dict)):
        raise ValueError(
            "`TimescaleFinder.fit(train_dataloaders=...)` takes one training DataLoader, got a"
            f" {type(train_dataloaders).__name__} of them."
        )
    if val_dataloaders is None or (isinstance(val_dataloaders, (list, tuple)) and not val_dataloaders):
        raise ValueError(
            "`TimescaleFinder.fit` needs validation data to compare the runs: pass `val_dataloaders`, or a"
            " datamodule with a `val_dataloader()`."
        )
    return train_dataloaders, val_dataloaders


def _jsonable(value: Any) -> Any:
    """``value`` as JSON-ready data: containers recursively, numbers and strings as they are, the rest as repr."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))  # the same in every process


@contextlib.contextmanager
def _once(shown: set[tuple[type, str]], show: bool = True) -> Iterator[None]:
    """Show each warning the block raises only if ``shown`` does not hold one like it yet, the same but for its
    numbers (a finder's trials all warn alike, each with its own weight decay: the user hears it once per fit);
    ``show=False`` (a worker process; the main one trains too) shows none."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for w in caught:
        key = (w.category, re.sub(r"\d[\d.e+-]*", "#", str(w.message)))  # each trial's own numbers aside
        if key in shown:
            continue
        shown.add(key)
        if show:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _store_result(study: GridStudy, result: FinderResult, finder: TimescaleFinder) -> None:
    """Put the finder's answer on the study as user attributes (``optuna-dashboard`` shows them): the curve, the
    suggestion, its range and the verdict, and what the answer was computed with (``monitor``, ``mode``, ...)."""
    answer = {
        "suggested_tau_epoch": result.tau_epoch,
        "tau_epoch_range": list(result.tau_epoch_range),
        "verdict": result.verdict,
        "weight_decay": dict(result.weight_decay),
        "curve": [{"tau_epoch": p.tau_epoch, "mean": _finite(p.mean), "std": _finite(p.std)} for p in result.curve],
        "pruned_tau_epochs": [p.tau_epoch for p in result.pruned],
        "pruned_trials": sum(e is not None for p in result.pruned for e in p.pruned_after),
        "finder": {
            "monitor": finder.monitor,
            "mode": finder.mode,
            "reduce": finder.reduce,
            "window": finder.window,
            "pruner": finder._pruner_setting,
        },
    }
    try:
        for key, value in answer.items():
            if study.study.user_attrs.get(key) != value:
                study.study.set_user_attr(key, value)
    except Exception as err:  # a read-only or unreachable storage: the answer is still returned and printed
        finder._log(f"could not store the answer on the study ({type(err).__name__}).")


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _shapes_digest(model: torch.nn.Module) -> str:
    """A short hash of the model's parameter and buffer names, shapes and dtypes (not their values)."""
    h = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        h.update(f"{name}:{tuple(tensor.shape)}:{tensor.dtype};".encode())
    return h.hexdigest()[:16]


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _worker_main(payload: bytes, threads: int, environ: Mapping[str, str]) -> None:
    """A worker process: train the study's trials until none is left to take, then exit."""
    worker_environ(environ)  # the starting process's, as spawn gives it (a fork has its server's)
    kwargs, model_factory, full_train, val = pickle.loads(payload)
    torch.set_num_threads(threads)
    finder = TimescaleFinder(**kwargs)
    finder._worker_only = True
    try:
        finder.fit(model_factory, train_dataloaders=full_train, val_dataloaders=val, wait=False)
    except Exception as err:
        print(f"TimescaleFinder worker (pid {os.getpid()}): error: {err}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:  # Ctrl-C reaches every process of the command: the main one says what to do
        sys.exit(130)
