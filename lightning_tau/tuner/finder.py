"""``TimescaleFinder``: tune ``tau_epoch`` on a random fraction of the training set, then train big.

The optimal ``tau_epoch`` stays about the same as the dataset grows (Wang & Aitchison, ICML 2025, Sec. 4.1), so a
sweep of ``tau_epoch`` on a random subset of ``fraction * N`` samples, trained for the same number of epochs, finds
the ``tau_epoch`` for the full run at about ``fraction`` of the cost of the same sweep on all the data. The full
run's weight decay is then ``B / (lr * N * tau_epoch)`` with the full ``N``. Keeping the subset's best *weight
decay* instead would make the full run's timescale ``1 / fraction`` times too short.

Each run is a fresh Lightning fit with :class:`~lightning_tau.TimescaleCallback` and is stored as a small JSON file
(``root_dir/runs/<tau_epoch>_<seed>.json``, next to its TensorBoard logs in ``root_dir/tb``); a later ``fit`` with
the same settings reads it back instead of training it again. The pure parts (grid, smoothing, result) live in
:mod:`lightning_tau.tuner.curve`.
"""

from __future__ import annotations

import json
import math
import numbers
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import TensorBoardLogger
from lightning.pytorch.utilities import rank_zero_info, rank_zero_only
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler, Subset
from typing_extensions import override

from lightning_tau._quiet import quiet_sweep
from lightning_tau.callback import TimescaleCallback
from lightning_tau.tuner.curve import DEFAULT_TAU_EPOCHS, CurvePoint, FinderResult, Mode

__all__ = ["TimescaleFinder", "subset_dataloader"]

Reduce = Literal["last", "best"]

#: Bumped when the run files' layout changes, so older files are retrained rather than misread.
RUN_FORMAT = 1

#: Trainer arguments the finder sets itself or that would break "same epochs on a real subset".
_FORBIDDEN_TRAINER_KWARGS = {
    "logger": "the finder logs every run to TensorBoard under `root_dir/tb` itself",
    "default_root_dir": "use `TimescaleFinder(root_dir=...)`",
    "max_steps": "the finder trains for `max_epochs`, the same number of epochs as the full run",
    "max_time": "every run must train for `max_epochs`",
    "limit_train_batches": "the finder subsets the dataset itself (`fraction`), so that N shrinks",
    "overfit_batches": "the finder subsets the dataset itself (`fraction`)",
    "fast_dev_run": "a finder run must train for `max_epochs`",
}


def subset_dataloader(loader: DataLoader, fraction: float, seed: int = 0) -> DataLoader:
    """A copy of ``loader`` over a fixed random ``Subset`` of ``round(fraction * len(dataset))`` of its samples.

    The subset is the first ``round(fraction * N)`` indices of a permutation seeded with ``seed`` (in dataset
    order). Batch size, shuffling, ``collate_fn``, workers, ``drop_last``, ... are those of ``loader``.

    Raises:
        TypeError: ``loader`` is not a plain ``torch.utils.data.DataLoader`` (a subclass may need arguments the
            finder cannot know).
        ValueError: ``loader`` uses a custom sampler or batch sampler, its dataset has no length, or the subset
            would be empty.

    Example:
        >>> from torch.utils.data import TensorDataset
        >>> full = DataLoader(TensorDataset(torch.arange(100.0)), batch_size=8, shuffle=True)
        >>> part = subset_dataloader(full, 0.25, seed=0)
        >>> len(part.dataset), part.batch_size, type(part.sampler).__name__
        (25, 8, 'RandomSampler')
    """
    if type(loader) is not DataLoader:
        raise TypeError(
            f"`TimescaleFinder` needs a plain `torch.utils.data.DataLoader` for training, got"
            f" {type(loader).__name__!r}: it rebuilds the loader over a subset of the dataset."
        )
    try:
        size = len(loader.dataset)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(
            f"`TimescaleFinder` cannot subset the train dataset {type(loader.dataset).__name__!r}: it has no length"
            " (an `IterableDataset`?). Give it a map-style dataset."
        ) from None
    if loader.batch_size is None:
        raise ValueError(
            "`TimescaleFinder` cannot subset a train DataLoader built with a custom `batch_sampler`: build it with"
            " `batch_size=` (and `shuffle=`) instead."
        )
    if isinstance(loader.sampler, RandomSampler) and not loader.sampler.replacement:
        shuffle = True
    elif isinstance(loader.sampler, SequentialSampler):
        shuffle = False
    else:
        raise ValueError(
            f"`TimescaleFinder` cannot subset a train DataLoader with a custom sampler"
            f" ({type(loader.sampler).__name__}): build it with `shuffle=True` or `shuffle=False`."
        )
    keep = round(fraction * size)
    if keep < 1:
        raise ValueError(
            f"`TimescaleFinder(fraction={fraction!r})` keeps no sample of the {size} in the training set:"
            " use a larger fraction."
        )
    order = torch.randperm(size, generator=torch.Generator().manual_seed(seed))[:keep]
    indices = sorted(order.tolist())
    return DataLoader(
        Subset(loader.dataset, indices),
        batch_size=loader.batch_size,
        shuffle=shuffle,
        num_workers=loader.num_workers,
        collate_fn=loader.collate_fn,
        pin_memory=loader.pin_memory,
        drop_last=loader.drop_last,
        timeout=loader.timeout,
        worker_init_fn=loader.worker_init_fn,
        multiprocessing_context=loader.multiprocessing_context,
        generator=loader.generator,
        prefetch_factor=loader.prefetch_factor if loader.num_workers > 0 else None,
        persistent_workers=loader.persistent_workers,
        pin_memory_device=loader.pin_memory_device,
    )


class TimescaleFinder:
    """Find ``tau_epoch`` on a random subset of the training set and give the full run's weight decay.

    For every ``tau_epoch`` in the grid and every seed, :meth:`fit` trains a fresh model (``model_factory()``,
    called after ``seed_everything(seed)``) for ``max_epochs`` on a fixed random subset holding ``fraction`` of
    the training set, with ``TimescaleCallback(tau_epoch=tau_epoch)`` setting the weight decay from the subset's
    ``N``. It reads the validation metric ``monitor`` after every validation and compares runs by its value
    after the last epoch (``reduce="last"``, the default: what the full run ends with) or by its best value over
    the epochs (``reduce="best"``). The suggestion is the vertex of a parabola in ``log(tau_epoch)`` fitted to the
    seed-mean curve around its best grid point (:func:`~lightning_tau.tuner.curve.smoothed_optimum`).

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
        root_dir: where run files (``runs/<tau_epoch>_<seed>.json``) and TensorBoard logs (``tb/``) go.
        subset_seed: seed of the permutation that picks the subset.
        window: grid points on each side of the best one that the parabola is fitted to.
        progress: show a progress bar (one tick per epoch) across the runs.
        verbose: print what is reused and trained (rank zero only).

    Raises:
        ValueError: at construction for a bad argument, naming it and its value; in :meth:`fit` for data or a
            model the finder cannot use, before any training.

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
    ) -> None:
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
        #: runs :meth:`fit` trained (not reused) in its last call
        self.trained_runs = 0

    def run_path(self, tau_epoch: float, seed: int) -> Path:
        """The JSON file of one run: ``root_dir/runs/<tau_epoch>_<seed>.json``.

        Example:
            >>> TimescaleFinder(root_dir="out", trainer_kwargs={"max_epochs": 1}).run_path(8.0, 1).as_posix()
            'out/runs/8_1.json'
        """
        return self.root_dir / "runs" / f"{_tau_name(tau_epoch)}_{seed}.json"

    def fit(
        self,
        model_factory: Callable[[], pl.LightningModule],
        datamodule: pl.LightningDataModule | None = None,
        train_dataloaders: DataLoader | None = None,
        val_dataloaders: DataLoader | Sequence[DataLoader] | None = None,
    ) -> FinderResult:
        """Train (or reuse) every ``(tau_epoch, seed)`` run on the subset and return the :class:`FinderResult`.

        Args:
            model_factory: called with no argument for every run, after ``seed_everything(seed)``; returns a
                fresh ``LightningModule`` whose ``configure_optimizers`` builds an AdamW-family optimizer with a
                positive ``weight_decay`` on the groups that decay (e.g. the model class itself, or
                ``lambda: MyModel(width=256)``).
            datamodule: a ``LightningDataModule``; the finder calls ``prepare_data()`` and ``setup("fit")`` once
                and uses its ``train_dataloader()`` and ``val_dataloader()`` (its other hooks are not used).
            train_dataloaders: or the full training ``DataLoader`` (one, plain, with ``batch_size``).
            val_dataloaders: and the validation loader(s); required with ``train_dataloaders``.

        Raises:
            TypeError: ``model_factory`` is a model instance rather than something that makes one, or makes
                something other than a ``LightningModule``.
            ValueError: data given both or neither way, no validation data, a loader the finder cannot subset,
                a model with no decaying AdamW group, or (after the first validation) a ``monitor`` no run logs.
        """
        if isinstance(model_factory, torch.nn.Module) or not callable(model_factory):
            raise TypeError(
                f"`TimescaleFinder.fit(model_factory=...)` needs something that makes a fresh model for every run"
                f" (the model class, or `lambda: MyModel(...)`), got {type(model_factory).__name__!r}."
            )
        full_train, val = _resolve_data(datamodule, train_dataloaders, val_dataloaders)
        train = subset_dataloader(full_train, self.fraction, self.subset_seed)
        if len(train) == 0:
            raise ValueError(
                f"`TimescaleFinder(fraction={self.fraction!r})`: the subset of {len(train.dataset)} samples"  # type: ignore[arg-type]
                f" gives no full batch of {train.batch_size} (drop_last=True). Use a larger fraction."
            )
        dataset_size = len(full_train.dataset)  # type: ignore[arg-type]
        subset_size = len(train.dataset)  # type: ignore[arg-type]
        model = model_factory()
        if not isinstance(model, pl.LightningModule):
            raise TypeError(
                f"`TimescaleFinder.fit(model_factory=...)` must return a LightningModule, got {type(model).__name__!r}."
            )
        settings = self._settings(model, dataset_size, subset_size, train)
        del model

        runs = [(tau, seed) for tau in self.tau_epochs for seed in self.seeds]
        records: dict[tuple[float, int], dict[str, Any]] = {}
        for tau, seed in runs:
            record = self._load(tau, seed, settings)
            if record is not None:
                records[(tau, seed)] = record
        todo = [run for run in runs if run not in records]
        if self.verbose:
            rank_zero_info(
                f"TimescaleFinder: {len(runs)} runs ({len(self.tau_epochs)} tau_epochs x {len(self.seeds)} seeds) on"
                f" {subset_size} of {dataset_size} training samples for {self.epochs} epochs; reusing"
                f" {len(runs) - len(todo)} from {self.root_dir / 'runs'}, training {len(todo)}."
            )
        self.trained_runs = 0
        if todo:
            from tqdm.auto import tqdm

            bar = tqdm(
                total=len(todo) * self.epochs,
                unit="epoch",
                desc="tau finder",
                disable=not self.progress or rank_zero_only.rank != 0,
            )
            try:
                with quiet_sweep():
                    for tau, seed in todo:
                        bar.set_postfix_str(f"tau_epoch={tau:g} seed={seed}")
                        records[(tau, seed)] = self._train_one(model_factory, train, val, tau, seed, settings, bar)
                        self.trained_runs += 1
            finally:
                bar.close()
        return self._result(records, full_train, dataset_size, subset_size)

    # --- one run ---------------------------------------------------------------------------------------------

    def _train_one(
        self,
        model_factory: Callable[[], pl.LightningModule],
        train: DataLoader,
        val: Any,
        tau: float,
        seed: int,
        settings: dict[str, Any],
        bar: Any,
    ) -> dict[str, Any]:
        pl.seed_everything(seed, verbose=False)
        model = model_factory()
        callback = TimescaleCallback(tau_epoch=tau, verbose=False)
        recorder = _RunRecorder(self.monitor, bar, callback)
        version = f"tau_epoch={_tau_name(tau)}_seed{seed}"
        tb_dir = self.root_dir / "tb" / version
        if tb_dir.exists():  # a run retrained under new settings: do not mix its old curves in
            shutil.rmtree(tb_dir)
        logger = TensorBoardLogger(save_dir=str(self.root_dir), name="tb", version=version, default_hp_metric=False)
        kwargs = dict(self.trainer_kwargs)
        user_callbacks = list(kwargs.pop("callbacks", None) or [])
        kwargs.setdefault("log_every_n_steps", max(1, len(train) // int(kwargs.get("accumulate_grad_batches", 1))))
        trainer = pl.Trainer(
            logger=logger,
            default_root_dir=str(self.root_dir),
            callbacks=[callback, recorder, *user_callbacks],
            **kwargs,
        )
        trainer.fit(model, train_dataloaders=train, val_dataloaders=val)
        record = {
            "format": RUN_FORMAT,
            "settings": {**settings, "tau_epoch": tau, "seed": seed},
            "steps": int(trainer.global_step),
            "epochs_run": int(trainer.current_epoch),
            "dataset_size_seen": recorder.dataset_size,
            "global_batch_size": recorder.global_batch_size,
            "world_size": int(trainer.world_size),
            "groups": recorder.groups,
            "metrics": recorder.history,
        }
        path = self.run_path(tau, seed)
        if trainer.is_global_zero:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record, indent=1, allow_nan=True) + "\n")
        return record

    def _settings(
        self, model: pl.LightningModule, dataset_size: int, subset_size: int, train: DataLoader
    ) -> dict[str, Any]:
        """What must match for a stored run to be reused (JSON round-tripped, so it compares equal to a loaded one)."""
        kwargs = {k: v for k, v in self.trainer_kwargs.items() if k != "callbacks"}
        settings = {
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
            },
            "trainer": _jsonable(kwargs),
            "callbacks": [type(c).__qualname__ for c in self.trainer_kwargs.get("callbacks", None) or []],
        }
        return json.loads(json.dumps(settings))

    def _load(self, tau: float, seed: int, settings: dict[str, Any]) -> dict[str, Any] | None:
        path = self.run_path(tau, seed)
        if not path.is_file():
            return None
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        expected = {**settings, "tau_epoch": tau, "seed": seed}
        if record.get("format") != RUN_FORMAT or record.get("settings") != expected:
            if self.verbose:
                rank_zero_info(f"TimescaleFinder: {path} was run with other settings; training it again.")
            return None
        return record

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


class _RunRecorder(Callback):
    """Records what one finder run saw: ``N``, ``B`` and each param group's lr and final weight decay, as the run's
    ``TimescaleCallback`` read and decided them, and every validation's scalar metrics (raising at the first
    validation that lacks ``monitor``); ticks the bar per epoch."""

    def __init__(self, monitor: str, bar: Any, callback: TimescaleCallback) -> None:
        self.monitor = monitor
        self.bar = bar
        self.callback = callback
        self.dataset_size: int | None = None
        self.global_batch_size: int | None = None
        self.groups: dict[str, dict[str, Any]] = {}
        self.history: list[dict[str, float]] = []

    @override
    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        shape = self.callback.shape  # decided in the callback's own `on_train_start`, which runs first
        assert shape is not None and shape.dataset_size is not None and shape.global_batch_size is not None
        self.dataset_size, self.global_batch_size = int(shape.dataset_size), int(shape.global_batch_size)

    @override
    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking:
            return
        metrics = {}
        for key, value in trainer.callback_metrics.items():
            if isinstance(value, torch.Tensor) and value.numel() == 1:
                metrics[key] = float(value.item())
            elif isinstance(value, (int, float)):
                metrics[key] = float(value)
        if self.monitor not in metrics:
            raise ValueError(
                f"`TimescaleFinder(monitor={self.monitor!r})`: the model logged no such metric at validation; it"
                f" logged {sorted(metrics)}. Pass one of those as `monitor`."
            )
        self.history.append(metrics)

    @override
    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.bar.update(1)

    @override
    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        for g in self.callback.groups:
            self.groups[g.name] = {"lr": g.reference_lr, "weight_decay": g.weight_decay, "decays": g.decays}


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
    return repr(value)
