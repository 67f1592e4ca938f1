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

import hashlib
import json
import math
import multiprocessing
import numbers
import os
import pickle
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, overload

import lightning.pytorch as pl
import torch
from lightning.pytorch.utilities import rank_zero_info, rank_zero_only
from optuna.storages import BaseStorage
from torch.utils.data import DataLoader, RandomSampler

from lightning_tau._quiet import quiet_sweep
from lightning_tau.callback import TimescaleCallback
from lightning_tau.tuner.curve import DEFAULT_TAU_EPOCHS, CurvePoint, FinderResult, Mode
from lightning_tau.tuner.study import STALE_SECONDS, GridStudy, quiet_optuna
from lightning_tau.tuner.trial import ModelCopies, run_trial, subset_dataloader

__all__ = ["TimescaleFinder", "subset_dataloader"]

Reduce = Literal["last", "best"]

#: Seconds between looks at the study while waiting for trials that train elsewhere.
POLL_SECONDS = 1.0

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
        fraction: share of the training set each run trains on, in ``(0, 1]``; the subset holds
            ``round(fraction * N)`` samples, fixed by ``subset_seed``.
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
        verbose: print what is reused, trained, handed on and waited for (rank zero only).
        storage: where the study lives: ``None`` (the journal file ``root_dir/study.journal``), a journal file
            path, an Optuna database URL (``postgresql+psycopg2://user:password@host/db``; the password is never
            printed) or an Optuna storage object. See ``docs/finder.rst`` for which to use where.
        study_name: the study; by default ``tau_finder_`` and a hash of the sweep's settings, so the same
            settings join the same study and other settings start another. A named study opened with other
            settings is an error naming the difference.
        workers: processes that train trials at once on this machine: this one and ``workers - 1`` started with
            ``multiprocessing``'s spawn, each with ``cores // workers`` torch threads (the model and the data must
            pickle: a class or an instance, not a lambda).
        stale_after: seconds without a sign of life (written every 30 s) after which a trial running on another
            machine of a journal-file study is handed to another worker (same machine: as soon as its process is
            gone; database storages: Optuna's heartbeat).

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
    """

    def __init__(
        self,
        fraction: float = 0.25,
        tau_epochs: Sequence[float] = DEFAULT_TAU_EPOCHS,
        seeds: Sequence[int] = (0, 1, 2),
        monitor: str = "val_loss",
        mode: Mode = "min",
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
    ) -> None:
        self._init_kwargs = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        if (
            isinstance(fraction, bool)
            or not isinstance(fraction, numbers.Real)
            or not (0 < float(fraction) <= 1)
            or math.isnan(float(fraction))
        ):
            raise ValueError(
                f"`TimescaleFinder(fraction={fraction!r})` is not valid: use a number in (0, 1], the share of the"
                " training set each run trains on (e.g. 0.25)."
            )
        self.fraction = float(fraction)
        self.tau_epochs = _check_grid(tau_epochs)
        self.seeds = _check_seeds(seeds)
        if not isinstance(monitor, str) or not monitor:
            raise ValueError(
                f"`TimescaleFinder(monitor={monitor!r})` is not valid: use the name of a logged validation metric."
            )
        self.monitor = monitor
        if mode not in ("min", "max"):
            raise ValueError(f"`TimescaleFinder(mode={mode!r})` is not supported. Use 'min' or 'max'.")
        self.mode: Mode = mode
        if reduce not in ("last", "best"):
            raise ValueError(f"`TimescaleFinder(reduce={reduce!r})` is not supported. Use 'last' or 'best'.")
        self.reduce: Reduce = reduce
        self.trainer_kwargs = _check_trainer_kwargs(trainer_kwargs)
        self.epochs: int = self.trainer_kwargs["max_epochs"]
        if not isinstance(root_dir, (str, Path)) or not str(root_dir):
            raise ValueError(f"`TimescaleFinder(root_dir={root_dir!r})` is not valid: use a directory path.")
        self.root_dir = Path(root_dir)
        if isinstance(subset_seed, bool) or not isinstance(subset_seed, int):
            raise ValueError(f"`TimescaleFinder(subset_seed={subset_seed!r})` is not valid: use an integer.")
        self.subset_seed = subset_seed
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"`TimescaleFinder(window={window!r})` is not valid: use an integer >= 1.")
        self.window = window
        self.progress = bool(progress)
        self.verbose = bool(verbose)
        if storage is not None and not isinstance(storage, (str, Path, BaseStorage)) or storage == "":
            raise ValueError(
                f"`TimescaleFinder(storage={storage!r})` is not valid: use a journal file path, an Optuna storage URL"
                " (e.g. postgresql+psycopg2://user:password@host/db) or an Optuna storage."
            )
        self.storage = storage
        if study_name is not None and (not isinstance(study_name, str) or not study_name.strip()):
            raise ValueError(f"`TimescaleFinder(study_name={study_name!r})` is not valid: use a non-empty name.")
        self.study_name = study_name
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"`TimescaleFinder(workers={workers!r})` is not valid: use a positive integer.")
        self.workers = workers
        if (
            isinstance(stale_after, bool)
            or not isinstance(stale_after, numbers.Real)
            or not (math.isfinite(stale_after) and stale_after > 0)
        ):
            raise ValueError(
                f"`TimescaleFinder(stale_after={stale_after!r})` is not valid: use a positive number of seconds."
            )
        self.stale_after = float(stale_after)
        #: trials this process trained in the last :meth:`fit`
        self.trained_runs = 0
        #: trials that were complete in the study when the last :meth:`fit` started
        self.reused_runs = 0
        #: trials still training elsewhere when the last :meth:`fit` returned (``wait=False`` only)
        self.pending_runs = 0
        #: the study the last :meth:`fit` used (name and printable storage)
        self.study: GridStudy | None = None
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
    ) -> FinderResult: ...

    @overload
    def fit(
        self,
        model: pl.LightningModule | Callable[[], pl.LightningModule],
        datamodule: pl.LightningDataModule | None = None,
        train_dataloaders: DataLoader | None = None,
        val_dataloaders: DataLoader | Sequence[DataLoader] | None = None,
        *,
        wait: bool,
    ) -> FinderResult | None: ...

    def fit(
        self,
        model: pl.LightningModule | Callable[[], pl.LightningModule],
        datamodule: pl.LightningDataModule | None = None,
        train_dataloaders: DataLoader | None = None,
        val_dataloaders: DataLoader | Sequence[DataLoader] | None = None,
        *,
        wait: bool = True,
    ) -> FinderResult | None:
        """Train the study's trials nobody has finished, wait for the rest, and return the :class:`FinderResult`.

        Args:
            model: a ``LightningModule`` instance (every trial trains a fresh copy of its initial weights; seeds
                then change only the batch order), or something that makes a fresh one, called after
                ``seed_everything(seed)`` for every trial (the class, ``functools.partial(MyModel, width=256)``,
                or a ``lambda`` when ``workers=1``). Its ``configure_optimizers`` must build an AdamW-family
                optimizer with a positive ``weight_decay`` on the groups that decay.
            datamodule: a ``LightningDataModule``; the finder calls ``prepare_data()`` and ``setup("fit")`` once
                and uses its ``train_dataloader()`` and ``val_dataloader()`` (its other hooks are not used).
            train_dataloaders: or the full training ``DataLoader`` (one, plain, with ``batch_size``).
            val_dataloaders: and the validation loader(s); required with ``train_dataloaders``.
            wait: wait until every trial is complete (some may train in other processes). ``False``: return
                ``None`` as soon as no trial is left for this process (and its workers) to take, with
                ``pending_runs`` saying how many still train elsewhere.

        Raises:
            TypeError: ``model`` is neither a ``LightningModule`` nor makes one.
            ValueError: data given both or neither way, no validation data, a loader the finder cannot subset,
                a storage that cannot be opened or a study with other settings, a model with no decaying AdamW
                group, or (after the first validation) a ``monitor`` no run logs.
        """
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
            raise ValueError(
                f"`TimescaleFinder(fraction={self.fraction!r})`: the subset of {len(train.dataset)} samples"  # type: ignore[arg-type]
                f" gives no full batch of {train.batch_size} (drop_last=True). Use a larger fraction."
            )
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
        if self.workers > 1:
            payload = self._worker_payload(model_factory, full_train, val)

        grid = [(tau, seed) for tau in self.tau_epochs for seed in self.seeds]
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
            )
            self.study = study
            self.trained_runs, self.pending_runs = 0, 0
            self.reused_runs = len(study.records())
            log(
                f"study {name!r} in {study.shown}: {len(grid)} trials ({len(self.tau_epochs)} tau_epochs x"
                f" {len(self.seeds)} seeds) on {subset_size} of {dataset_size} training samples for {self.epochs}"
                f" epochs; {self.reused_runs} done before"
                + (f", {self.workers} workers on this machine." if self.workers > 1 else ".")
            )
            procs = self._start_workers(payload) if payload is not None else []
            threads = torch.get_num_threads()
            try:
                if procs:
                    torch.set_num_threads(max(1, _cores() // self.workers))
                self._work(study, model_factory, train, val, wait=wait, workers=procs)
            finally:
                torch.set_num_threads(threads)
                for proc in procs:
                    proc.join()
            for proc in procs:
                if proc.exitcode != 0:
                    log(f"worker process {proc.pid} ended with exit code {proc.exitcode}.")
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
        return self._result(records, full_train, dataset_size, subset_size)

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
        workers: Sequence[Any] = (),
    ) -> None:
        """Take and train trials until none is left to take; with ``wait``, then until the grid is complete."""
        from tqdm.auto import tqdm

        bar = None
        told_waiting: set[int] = set()
        try:
            while True:
                study.reclaim()
                study.enqueue_missing()
                taken = study.take()
                if taken is not None:
                    trial, (tau, seed) = taken
                    if bar is None:
                        left = len(study.grid) - len(study.records())
                        bar = tqdm(
                            total=max(1, left) * self.epochs,
                            unit="epoch",
                            desc="tau finder",
                            disable=not self.progress or rank_zero_only.rank != 0,
                        )
                    bar.set_postfix_str(f"tau_epoch={tau:g} seed={seed}")
                    with study.working_on(trial), quiet_sweep():
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
                        )
                    if study.finish(trial, record, self._tell_value(record, study)):
                        self.trained_runs += 1
                    continue
                if len(study.records()) == len(study.grid):
                    return
                if not wait:
                    if any(proc.is_alive() for proc in workers):  # this command's own workers: theirs is ours
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
        if not values:
            return worst
        if self.reduce == "last":
            value = values[-1]
        else:
            finite = [v for v in values if math.isfinite(v)]
            value = (min(finite) if self.mode == "min" else max(finite)) if finite else math.nan
        return value if math.isfinite(value) else worst

    def _worker_payload(self, model_factory: Callable[[], Any], full_train: DataLoader, val: Any) -> bytes:
        kwargs = {**self._init_kwargs, "workers": 1, "progress": False, "verbose": False}
        threads = max(1, _cores() // self.workers)
        try:
            return pickle.dumps((kwargs, model_factory, full_train, val, threads))
        except Exception as err:
            raise ValueError(
                f"`TimescaleFinder(workers={self.workers})` sends the model and the data to its worker processes,"
                f" but they do not pickle ({type(err).__name__}: {err}). Pass the model class or an instance (not a"
                " lambda), data that pickles, or workers=1 and start the command once per worker instead."
            ) from None

    def _start_workers(self, payload: bytes) -> list[Any]:
        context = multiprocessing.get_context("spawn")
        procs = [
            context.Process(target=_worker_main, args=(payload,), name=f"tau-finder-worker-{i}")
            for i in range(1, self.workers)
        ]
        for proc in procs:
            proc.start()
        return procs

    def _settings(
        self,
        model: pl.LightningModule,
        dataset_size: int,
        subset_size: int,
        train: DataLoader,
        copies: ModelCopies | None,
    ) -> dict[str, Any]:
        """What must match for two processes to share a study (JSON round-tripped, so it compares equal to a stored
        one): the grid, the subset, the model, the Trainer settings."""
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
                "hparams": _jsonable(dict(getattr(model, "hparams", {}))),
                "num_params": sum(p.numel() for p in model.parameters()),
                "initial_weights": copies.digest() if copies is not None else "seeded factory",
            },
            "trainer": _jsonable(kwargs),
            "callbacks": [type(c).__qualname__ for c in self.trainer_kwargs.get("callbacks", None) or []],
        }
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
        values = [float(entry.get(self.monitor, math.nan)) for entry in history]
        if self.reduce == "last":
            return values[-1]
        finite = [v for v in values if math.isfinite(v)]
        if not finite:
            return math.nan
        return min(finite) if self.mode == "min" else max(finite)

    def _result(
        self,
        records: dict[tuple[float, int], dict[str, Any]],
        full_train: DataLoader,
        dataset_size: int,
        subset_size: int,
    ) -> FinderResult:
        curve = []
        for tau in self.tau_epochs:
            runs = [records[(tau, seed)] for seed in self.seeds]
            curve.append(
                CurvePoint(
                    tau_epoch=tau,
                    values=[self._value(r, tau, seed) for r, seed in zip(runs, self.seeds)],
                    seeds=list(self.seeds),
                    weight_decay={name: g["weight_decay"] for name, g in runs[0]["groups"].items() if g["decays"]},
                    steps=[int(r["steps"]) for r in runs],
                )
            )
        first = records[(self.tau_epochs[0], self.seeds[0])]
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
            full_cost=len(curve) * len(self.seeds) * self.epochs * full_steps_per_epoch,
            steps_per_epoch=full_steps_per_epoch,
            window=self.window,
        )


# --- helpers ---------------------------------------------------------------------------------------------------


def _tau_name(tau: float) -> str:
    return f"{tau:.6g}"


def _check_grid(tau_epochs: Sequence[float]) -> tuple[float, ...]:
    if isinstance(tau_epochs, (str, bytes)) or not isinstance(tau_epochs, Sequence) or not tau_epochs:
        raise ValueError(
            f"`TimescaleFinder(tau_epochs={tau_epochs!r})` is not valid: use a non-empty sequence of positive"
            " numbers (epochs), e.g. (2, 4, 8, 16, 32, 64, 128)."
        )
    for tau in tau_epochs:
        if isinstance(tau, bool) or not isinstance(tau, numbers.Real) or not (math.isfinite(tau) and tau > 0):
            raise ValueError(
                f"`TimescaleFinder(tau_epochs={list(tau_epochs)!r})` is not valid: {tau!r} is not a positive finite"
                " number of epochs."
            )
    grid = tuple(sorted(float(t) for t in tau_epochs))
    names = [_tau_name(t) for t in grid]
    if len(set(names)) != len(names):
        raise ValueError(
            f"`TimescaleFinder(tau_epochs={list(tau_epochs)!r})` repeats a value (to 6 significant digits):"
            " give each tau_epoch once."
        )
    return grid


def _check_seeds(seeds: Sequence[int]) -> tuple[int, ...]:
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence) or not seeds:
        raise ValueError(f"`TimescaleFinder(seeds={seeds!r})` is not valid: use a non-empty sequence of integers.")
    for seed in seeds:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"`TimescaleFinder(seeds={list(seeds)!r})` is not valid: {seed!r} is not an integer.")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"`TimescaleFinder(seeds={list(seeds)!r})` repeats a seed: give each seed once.")
    return tuple(seeds)


def _check_trainer_kwargs(trainer_kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    if trainer_kwargs is None or not isinstance(trainer_kwargs, Mapping) or "max_epochs" not in trainer_kwargs:
        raise ValueError(
            f"`TimescaleFinder(trainer_kwargs={trainer_kwargs!r})` must be a dict with `max_epochs`: every run trains"
            " for the epochs the full run will, e.g. trainer_kwargs={'max_epochs': 40}."
        )
    epochs = trainer_kwargs["max_epochs"]
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(
            f"`TimescaleFinder(trainer_kwargs={{'max_epochs': {epochs!r}}})` is not valid: use a positive integer."
        )
    for key, why in _FORBIDDEN_TRAINER_KWARGS.items():
        value = trainer_kwargs.get(key)
        if key in trainer_kwargs and not (key == "max_steps" and value in (None, -1)):
            raise ValueError(f"`TimescaleFinder(trainer_kwargs={{{key!r}: {value!r}}})` is not allowed: {why}.")
    accumulate = trainer_kwargs.get("accumulate_grad_batches", 1)
    if isinstance(accumulate, bool) or not isinstance(accumulate, int) or accumulate < 1:
        raise ValueError(
            f"`TimescaleFinder(trainer_kwargs={{'accumulate_grad_batches': {accumulate!r}}})` is not valid: use a"
            " positive integer."
        )
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


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _worker_main(payload: bytes) -> None:
    """A worker process: train the study's trials until none is left to take, then exit."""
    kwargs, model_factory, full_train, val, threads = pickle.loads(payload)
    torch.set_num_threads(threads)
    finder = TimescaleFinder(**kwargs)
    finder._worker_only = True
    try:
        finder.fit(model_factory, train_dataloaders=full_train, val_dataloaders=val, wait=False)
    except Exception as err:
        print(f"TimescaleFinder worker (pid {os.getpid()}): error: {err}", file=sys.stderr)
        sys.exit(1)
