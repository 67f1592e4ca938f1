"""One finder trial: a Lightning fit of a fresh model on the fixed subset, and the record it leaves.

With a pruner it stops when Optuna says to prune (:class:`PruningCallback`).

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import contextlib
import copy
import math
import numbers
import re
import signal
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import TensorBoardLogger
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler, Subset
from typing_extensions import override

from lightning_tau.callback import TimescaleCallback
from lightning_tau.errors import TimescaleError

__all__ = [
    "ModelCopies",
    "MonitorError",
    "PruningCallback",
    "check_record",
    "configured_optimizers",
    "fresh_callback",
    "has_run_state",
    "pruned_record",
    "reinitialize",
    "run_trial",
    "subset_dataloader",
    "warn_once",
]

#: A parameter of an instance with at least this many entries whose RMS differs from a fresh ``reset_parameters()``
#: one by more than ``INIT_RMS_FACTOR`` (either way) was initialized otherwise (zeros, its own scale, loaded weights):
#: :class:`ModelCopies` refuses it rather than replace it. Smaller ones are skipped: their RMS is too noisy to tell.
MIN_NUMEL_COMPARED = 32
INIT_RMS_FACTOR = 2.0

#: Bumped when a trial record's layout changes, so older records are retrained rather than misread.
RECORD_FORMAT = 2


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
    return loader_like(loader, Subset(loader.dataset, indices), batch_size=loader.batch_size, shuffle=shuffle)



def loader_like(loader: DataLoader, dataset: Any, *, batch_size: int | None, shuffle: bool) -> DataLoader:
    """A ``DataLoader`` over ``dataset`` at ``batch_size`` with every other setting of ``loader`` (workers, collate,
    pinning, generator, ...): the finder's subset loaders and the batch axis's rebatched ones."""
    return DataLoader(
        dataset,
        batch_size=batch_size,
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


def configured_optimizers(model: pl.LightningModule) -> list[Any] | None:
    """The optimizers a model's ``configure_optimizers`` builds, called before any trainer (the finder's probes:
    the width axis's μP multipliers, the batch axis's ``β₂``), from any of the forms Lightning takes (one, a list,
    a dict with ``"optimizer"``, a wrapped one); ``None`` where it cannot be called so (it reads ``self.trainer``)."""
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
    return optimizers


class ModelCopies:
    """Makes every trial's model from a ``LightningModule`` instance: a copy whose parameters are initialized
    afresh under the trial's seed (picklable).

    Each trial seeds the random number generators (``seed_everything(seed)``) and calls this: the copy's modules
    then re-run their ``reset_parameters()`` (torch's ``nn.Linear``, ``nn.Conv*``, ``nn.Embedding``,
    ``nn.LayerNorm``, ...; ``_reset_parameters()`` for ``nn.MultiheadAttention`` and ``nn.Transformer``), children
    before their parents as in ``__init__``, so every seed starts from its own initialization, drawn as the class
    draws it, and the same seed gives the same weights. Without that, every seed would start from the instance's
    weights and the seeds would differ in batch order only: an interval over seeds would hold batch-order noise alone.

    The instance is checked when this is made, before any training, and refused (``TypeError``, one line saying to
    pass the class or a factory) where its initialization cannot be re-run this way: a parameter no
    ``reset_parameters`` sets (one registered on a module that has none), mup's base shapes (``infshape``, from
    ``set_base_shapes``, whose μP initialization ``reset_parameters`` would undo), a parameter whose RMS differs from
    what its ``reset_parameters()`` draws by more than ``INIT_RMS_FACTOR`` (an initialization of the model's own, or
    loaded weights, which a fresh initialization would lose), or an instance that cannot be copied. Buffers are
    copied as they are (a norm's running statistics are reset by its ``reset_parameters``).

    Raises:
        TypeError: the instance is refused (see above); the message names the parameter or attribute.

    Example:
        >>> net = pl.LightningModule()
        >>> net.layer = torch.nn.Linear(2, 2)
        >>> copies = ModelCopies(net)
        >>> _ = pl.seed_everything(0, verbose=False)
        >>> first = copies()
        >>> _ = pl.seed_everything(1, verbose=False)
        >>> second = copies()
        >>> _ = pl.seed_everything(0, verbose=False)
        >>> again = copies()
        >>> torch.equal(first.layer.weight, second.layer.weight), torch.equal(first.layer.weight, again.layer.weight)
        (False, True)
        >>> net.scale = torch.nn.Parameter(torch.ones(2))  # on a module without reset_parameters
        >>> ModelCopies(net)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: `TimescaleFinder.fit(model=LightningModule(...))` is not valid: its parameter `scale` is not set...
    """

    def __init__(self, model: pl.LightningModule) -> None:
        self.model = _deepcopy_module(model)
        problem = _not_reinitializable(self.model)
        if problem is not None:
            raise TypeError(
                f"`TimescaleFinder.fit(model={type(model).__name__}(...))` is not valid: {problem}, and the finder"
                " starts every seed's model from its own seeded initialization (so that the seeds differ in their"
                " initial weights, not only in batch order): pass the class or a factory instead (`fit(MyModel, ...)`,"
                " `fit(functools.partial(MyModel, width=256), ...)`), which builds a fresh model after each seed."
            )

    def __call__(self) -> pl.LightningModule:
        copied = _deepcopy_module(self.model)
        reinitialize(copied)
        return copied


def reinitialize(model: torch.nn.Module) -> None:
    """Re-run ``reset_parameters()`` (or torch's private ``_reset_parameters()``, as ``nn.MultiheadAttention`` and
    ``nn.Transformer`` name it) of every module of ``model`` that has one, children before their parents (a
    parent's own initialization, run last in its ``__init__``, wins), under the current random state.

    Example:
        >>> layer = torch.nn.Linear(3, 3)
        >>> _ = torch.manual_seed(0); reinitialize(layer); first = layer.weight.clone()
        >>> _ = torch.manual_seed(0); reinitialize(layer); torch.equal(first, layer.weight)
        True
    """
    for module in reversed(list(model.modules())):  # `modules()` is pre-order: reversed, a child comes first
        reset = _reset_method(module)
        if reset is not None:
            reset()


def _reset_method(module: torch.nn.Module) -> Callable[[], Any] | None:
    for name in ("reset_parameters", "_reset_parameters"):
        method = getattr(module, name, None)
        if callable(method):
            return method  # type: ignore[no-any-return]
    return None


def _not_reinitializable(model: torch.nn.Module) -> str | None:
    """Why ``model``'s initialization cannot be re-run by :func:`reinitialize` (in words), or ``None``: a parameter
    with mup's ``infshape``, a reset that fails, or a parameter no reset sets (filled with NaN, then reset: one that
    still holds a NaN was not set)."""
    for name, param in model.named_parameters():
        if hasattr(param, "infshape"):
            return (
                f"its parameter `{name}` has mup's base shapes (`set_base_shapes`), whose μP initialization"
                " `reset_parameters()` would undo"
            )
    probe = _deepcopy_module(model)  # type: ignore[arg-type]
    with torch.no_grad():
        for param in probe.parameters():
            param.fill_(math.nan)
    try:
        with torch.random.fork_rng(devices=[]):  # the caller's random state is left as it was
            torch.manual_seed(0)
            reinitialize(probe)
    except Exception as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        return f"re-running its modules' `reset_parameters()` fails ({type(err).__name__}: {first})"
    given = dict(model.named_parameters())
    for name, param in probe.named_parameters():
        if torch.isnan(param).any():
            owner = name.rpartition(".")[0]
            where = f"`{owner}` ({type(probe.get_submodule(owner)).__name__})" if owner else "the model itself"
            return (
                f"its parameter `{name}` is not set by any `reset_parameters()` ({where} has none that sets it), so"
                " it cannot be initialized afresh for each seed"
            )
        ours, theirs = _rms(param), _rms(given[name])
        if param.numel() >= MIN_NUMEL_COMPARED and not ours / INIT_RMS_FACTOR <= theirs <= ours * INIT_RMS_FACTOR:
            return (
                f"its parameter `{name}` is not initialized as `reset_parameters()` initializes it (RMS {theirs:.3g}"
                f" against {ours:.3g}: an initialization of its own, or loaded weights?), which a fresh"
                " initialization per seed would lose"
            )
    return None


def _rms(tensor: torch.Tensor) -> float:
    return float(tensor.detach().float().pow(2).mean().sqrt()) if tensor.numel() else 0.0


def _deepcopy_module(model: pl.LightningModule) -> pl.LightningModule:
    """``copy.deepcopy(model)`` with each parameter's own attributes (mup's ``infshape``) carried to its copy."""
    try:
        copied = copy.deepcopy(model)
    except Exception as err:  # deepcopy falls back on pickling: TypeError, PicklingError, RuntimeError, ...
        raise TypeError(_not_copyable(model, err)) from None
    pairs = zip(model.named_parameters(remove_duplicate=False), copied.named_parameters(remove_duplicate=False))
    for (_, source), (_, target) in pairs:
        for key, value in vars(source).items():
            if not hasattr(target, key):
                setattr(target, key, copy.deepcopy(value))
    return copied


def _not_copyable(model: pl.LightningModule, err: Exception) -> str:
    """The one-line error for an instance ``deepcopy`` fails on, naming the first attribute that fails alone."""
    culprit = ""
    for prefix, module in model.named_modules():
        for key, value in vars(module).items():
            if key == "_modules":  # the submodules come next in `named_modules`, each on its own
                continue
            try:
                copy.deepcopy(value)
            except Exception:
                name = f"{prefix}.{key}" if prefix else key
                culprit = f" its attribute `{name}` ({type(value).__module__}.{type(value).__qualname__}) cannot be"
                break
        if culprit:
            break
    what = culprit or " it cannot be"
    why = str(err).splitlines()[0] if str(err) else type(err).__name__
    return (
        f"`TimescaleFinder.fit(model={type(model).__name__}(...))` is not valid:{what} copied ({why}), and the finder"
        " trains a fresh copy of an instance in every trial: pass the class or a factory instead (`fit(MyModel,"
        " ...)`, `fit(functools.partial(MyModel, width=256), ...)`), which makes a fresh model for every trial."
    )


def run_trial(
    model_factory: Callable[[], pl.LightningModule],
    train: DataLoader,
    val: Any,
    *,
    tau_epoch: float,
    seed: int,
    monitor: str,
    trainer_kwargs: dict[str, Any],
    log_dir: Path,
    log_name: str,
    bar: Any = None,
    trial: Any = None,
    interrupted: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """Train one ``(tau_epoch, seed)`` on ``train`` and return its record.

    ``seed_everything(seed)`` first, then ``model_factory()``; ``TimescaleCallback(tau_epoch=tau_epoch)`` sets the
    weight decay; TensorBoard logs go to ``log_dir/log_name`` (a folder of this trial's own). With ``trial`` (an
    ``optuna.Trial`` whose study has a pruner), :class:`PruningCallback` reports ``monitor`` to it after every
    validation and stops the fit when the pruner says so. ``interrupted()`` true at a batch's start ends the fit as a
    Ctrl-C does (a worker's SIGINT whose ``KeyboardInterrupt`` never reached the fit).

    Returns:
        ``{"format", "steps", "epochs_run", "dataset_size_seen", "global_batch_size", "world_size", "groups",
        "metrics"}``: ``groups`` maps each param group to its ``lr``, final ``weight_decay`` and ``decays``;
        ``metrics`` holds the scalar metrics after every validation. ``groups`` also holds each group's μP
        ``width_mult`` (``None``: 1 or unknown). A pruned run's record also holds ``"pruned": {"after_epoch": k}``.
    """
    pl.seed_everything(seed, verbose=False)
    model = model_factory()
    callback = TimescaleCallback(tau_epoch=tau_epoch, verbose=False)
    recorder = _RunRecorder(monitor, bar, callback)
    logger = TensorBoardLogger(save_dir=str(log_dir), name="", version=log_name, default_hp_metric=False)
    kwargs = dict(trainer_kwargs)
    user_callbacks = [fresh_callback(c) if has_run_state(c) else c for c in kwargs.pop("callbacks", None) or []]
    pruning = [PruningCallback(trial, monitor)] if trial is not None else []
    kwargs.setdefault("log_every_n_steps", max(1, len(train) // int(kwargs.get("accumulate_grad_batches", 1))))
    interrupted_fit = _Interrupted(interrupted)
    trainer = pl.Trainer(
        logger=logger,
        default_root_dir=str(log_dir),
        callbacks=[callback, recorder, *pruning, *user_callbacks, interrupted_fit],
        **kwargs,
    )
    _one_process(trainer.world_size, trainer_kwargs)
    with interrupted_fit.raised():
        trainer.fit(model, train_dataloaders=train, val_dataloaders=val)
    record = {
        "format": RECORD_FORMAT,
        "steps": int(trainer.global_step),
        "epochs_run": int(trainer.current_epoch),
        "dataset_size_seen": recorder.dataset_size,
        "global_batch_size": recorder.global_batch_size,
        "world_size": int(trainer.world_size),
        "groups": recorder.groups,
        "metrics": recorder.history,
    }
    if pruning and pruning[0].pruned_after is not None:
        record["pruned"] = {"after_epoch": pruning[0].pruned_after}
    return record


def has_run_state(callback: Any) -> bool:
    """Whether ``callback`` has run state of its own: the state Lightning checkpoints (a non-empty ``state_dict()``:
    ``EarlyStopping``, ``ModelCheckpoint``, ``Timer``, ``BaseFinetuning``, ...). Each trial starts such a callback
    from a fresh copy (:func:`fresh_callback`), as a new ``Trainer`` would: an ``EarlyStopping`` that carried its best
    score and patience count from one run into the next would stop every later run early. A callback without (an
    observer, a logger of your own) is shared by the trials of a process, so it can gather what they do.

    Example:
        >>> from lightning.pytorch.callbacks import EarlyStopping, LearningRateMonitor
        >>> has_run_state(EarlyStopping("val_loss")), has_run_state(LearningRateMonitor())
        (True, False)
    """
    try:
        return bool(callback.state_dict())
    except Exception:  # a state that cannot be read before training: copy it to be safe
        return True


def fresh_callback(callback: Any) -> Any:
    """A copy of one of ``trainer_kwargs``' callbacks with run state (:func:`has_run_state`).

    Example:
        >>> from lightning.pytorch.callbacks import EarlyStopping
        >>> stopping = EarlyStopping("val_loss", patience=2)
        >>> fresh = fresh_callback(stopping)
        >>> fresh is stopping, fresh.patience, fresh.wait_count
        (False, 2, 0)
    """
    try:
        return copy.deepcopy(callback)
    except Exception as err:  # deepcopy falls back on pickling: TypeError, PicklingError, RuntimeError, ...
        raise ValueError(
            f"`TimescaleFinder(trainer_kwargs={{'callbacks': [{type(callback).__name__}(...)]}})`: every run starts"
            f" a callback with run state (a non-empty `state_dict()`) from a fresh copy, so that no run starts from"
            f" another's state, but this one cannot be copied ({type(err).__name__}: {err}). Pass a callback that can"
            " be copied."
        ) from None


def pruned_record(seed: int, after_epoch: int) -> dict[str, Any]:
    """The record of a trial not trained because the run of ``seed`` at the same ``tau_epoch`` was pruned after
    ``after_epoch`` epochs (the finder's curve needs every seed of a ``tau_epoch``, so the others would be wasted).

    Example:
        >>> pruned_record(0, 5)["pruned"], check_record(pruned_record(0, 5))
        ({'after_epoch': 0, 'with_seed': 0, 'seed_after_epoch': 5}, None)
    """
    return {
        "format": RECORD_FORMAT,
        "steps": 0,
        "epochs_run": 0,
        "metrics": [],
        "pruned": {"after_epoch": 0, "with_seed": seed, "seed_after_epoch": after_epoch},
    }


def check_record(record: Any) -> str | None:
    """What is wrong with a stored trial record, or ``None`` if :func:`run_trial` could have written it.

    A pruned trial's record (``"pruned"``) may lack what a trial not trained cannot know (``N``, ``B``, groups).

    Example:
        >>> check_record(None)
        'it is NoneType, not a record'
        >>> check_record({"format": 2, "steps": 4})
        "it has no 'epochs_run'"
        >>> check_record({"format": 2, "steps": 0, "epochs_run": 0, "metrics": [], "pruned": {"after_epoch": -1}})
        "its 'pruned' is {'after_epoch': -1}, not {'after_epoch': count}"
    """
    if not isinstance(record, dict):
        return f"it is {type(record).__name__}, not a record"
    if record.get("format") != RECORD_FORMAT:
        return f"its format is {record.get('format')!r}, not {RECORD_FORMAT}"
    if "pruned" in record:
        pruned = record["pruned"]
        if not isinstance(pruned, dict) or not _is_count(pruned.get("after_epoch")):
            return f"its 'pruned' is {pruned!r}, not {{'after_epoch': count}}"
        if "groups" not in record:  # not trained: a sibling seed was pruned
            for key in ("steps", "epochs_run"):
                if not _is_count(record.get(key)):
                    return f"its {key!r} is {record.get(key)!r}, not a count"
            return None if record.get("metrics") == [] else "its metrics are not an empty list"
    for key in ("steps", "epochs_run", "dataset_size_seen", "global_batch_size", "world_size"):
        if key not in record:
            return f"it has no {key!r}"
        if isinstance(record[key], bool) or not isinstance(record[key], int) or record[key] < 0:
            return f"its {key!r} is {record[key]!r}, not a count"
    if record["world_size"] < 1 or record["global_batch_size"] < 1:
        return "its world size or batch size is 0"
    groups = record.get("groups")
    if not isinstance(groups, dict) or not groups:
        return "it has no param groups"
    for name, group in groups.items():
        if (
            not isinstance(group, dict)
            or not isinstance(group.get("decays"), bool)
            or not all(_is_number(group.get(k)) for k in ("lr", "weight_decay"))
        ):
            return f"its param group {name!r} is not {{'lr': number, 'weight_decay': number, 'decays': bool}}"
    metrics = record.get("metrics")
    if not isinstance(metrics, list) or not all(
        isinstance(m, dict) and all(isinstance(k, str) and _is_number(v) for k, v in m.items()) for m in metrics
    ):
        return "its metrics are not a list of {name: number}"
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class MonitorError(TimescaleError):
    """``monitor`` is not among the metrics the model logged at its first validation (``trainer.callback_metrics``);
    raised there, before the rest of the grid trains. ``monitor`` and ``logged`` (the names it did log) say which,
    so the command line can name its ``--monitor``.

    Example:
        >>> err = MonitorError("val_los", ["val_loss"])
        >>> str(err).startswith("`TimescaleFinder(monitor='val_los')`: the model logged no such metric")
        True
        >>> str(err).endswith("it logged ['val_loss']. Pass one of those as `monitor`.")
        True
        >>> isinstance(err, ValueError), err.monitor, err.logged
        (True, 'val_los', ['val_loss'])
    """

    def __init__(self, monitor: str, logged: list[str]) -> None:
        self.monitor, self.logged = monitor, logged
        super().__init__(
            f"`TimescaleFinder(monitor={monitor!r})`: the model logged no such metric at validation; it logged"
            f" {logged}. Pass one of those as `monitor`."
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
        if self.monitor not in metrics:  # at the first trial's first validation, before the rest of the grid
            raise MonitorError(self.monitor, sorted(metrics))
        self.history.append(metrics)

    @override
    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.bar.update(1)

    @override
    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        for g in self.callback.groups:
            self.groups[g.name] = {
                "lr": g.reference_lr,
                "weight_decay": g.weight_decay,
                "decays": g.decays,
                "width_mult": g.width_mult,  # the μP s the callback read (None: 1 or unknown)
            }


def _one_process(world_size: int, trainer_kwargs: Mapping[str, Any]) -> None:
    """A trial trains in this process on one device and is read here: a Trainer of ``world_size > 1`` (``devices``,
    ``num_nodes``) is refused in one line before its fit (a spawned fit's result never came back, and the finder
    trained the grid point again and again).

    Example:
        >>> _one_process(1, {"devices": 1})
        >>> _one_process(2, {"devices": 2, "strategy": "ddp_spawn"})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleFinder(trainer_kwargs={'devices': 2, ...})`: each trial would ...
    """
    if world_size <= 1:
        return
    given = {k: trainer_kwargs[k] for k in ("accelerator", "devices", "num_nodes", "strategy") if k in trainer_kwargs}
    raise TimescaleError(
        f"`TimescaleFinder(trainer_kwargs={given!r})`: each trial would train on {world_size} processes, but the"
        " finder trains a trial in one process on one device and reads its result there. Give devices=1 and spread"
        " the trials over processes with `workers=` (or several commands on one study); TimescaleCallback then applies"
        " the result on any number of devices (it reads the global batch)."
    )


class _Interrupted(Callback):
    """A Ctrl-C inside the fit, given back as the ``KeyboardInterrupt`` it was.

    Lightning (2.x, ``trainer/call.py``'s ``_call_and_handle_interrupt``) catches a ``KeyboardInterrupt`` raised in
    a fit, sets SIGINT ignored, calls the callbacks' ``on_exception``, tears the fit down and ends with
    ``sys.exit(1)``: the finder would see an error (exit 1, the trial FAIL with ``SystemExit: 1``), not a Ctrl-C.
    This callback notes the interrupt in ``on_exception``; :meth:`raised`, around the fit, turns the ``SystemExit``
    that follows back into ``KeyboardInterrupt`` (the trial is then handed back as interrupted and the command
    exits 130) and puts back the SIGINT handler the fit started with. ``pending()`` true at a training batch's start
    raises that ``KeyboardInterrupt`` there (a SIGINT seen whose own never reached the fit)."""

    def __init__(self, pending: Callable[[], bool] | None = None) -> None:
        self.interrupt: KeyboardInterrupt | None = None
        self.pending = pending

    @override
    def on_train_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        if self.pending is not None and self.pending():
            raise KeyboardInterrupt

    @override
    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:
        if isinstance(exception, KeyboardInterrupt):
            self.interrupt = exception

    @contextlib.contextmanager
    def raised(self) -> Iterator[None]:
        main = threading.current_thread() is threading.main_thread()
        handler = signal.getsignal(signal.SIGINT) if main else None
        try:
            yield
        except SystemExit:
            if self.interrupt is None:
                raise
            raise KeyboardInterrupt from None
        finally:
            if main and handler is not None and signal.getsignal(signal.SIGINT) is not handler:
                signal.signal(signal.SIGINT, handler)


class PruningCallback(Callback):
    """Reports ``monitor`` to an Optuna trial after every validation (``trial.report(value, epoch)``, the epoch
    counted from 0) and stops the fit when ``trial.should_prune()``.

    Like optuna-integration's ``PyTorchLightningPruningCallback``, but it stops the fit with
    ``trainer.should_stop`` instead of raising ``optuna.TrialPruned`` out of ``trainer.fit``: the run ends as a
    normal fit, its record is kept and the finder tells the trial PRUNED. ``trial`` is anything with Optuna's
    ``report`` and ``should_prune`` (this module imports no Optuna).

    Attributes:
        pruned_after: the epochs trained when the pruner stopped the run (``None``: not stopped).
    """

    def __init__(self, trial: Any, monitor: str) -> None:
        self.trial = trial
        self.monitor = monitor
        self.pruned_after: int | None = None
        self.reported: set[int] = set()

    @override
    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking or self.pruned_after is not None:
            return
        value = trainer.callback_metrics.get(self.monitor)
        if value is None:  # the recorder, which runs first, raises for a metric no run logs
            return
        epoch = int(trainer.current_epoch)
        if epoch in self.reported:
            return  # a second validation in the same epoch (val_check_interval < 1): each epoch is reported once
        self.reported.add(epoch)
        self.trial.report(float(value), epoch)
        if self.trial.should_prune():
            self.pruned_after = epoch + 1
            trainer.should_stop = True


@contextlib.contextmanager
def warn_once(
    shown: set[tuple[type, str]],
    show: bool = True,
    writing: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext,
) -> Iterator[None]:
    """Show each warning the block raises only if ``shown`` does not hold one like it yet, the same but for its
    numbers (a finder's trials all warn alike, each with its own weight decay: the user hears it once per fit);
    ``show=False`` (a worker process; the main one trains too) shows none. The warnings are shown after the block,
    inside ``writing()`` (a progress bar's ``external_write_mode``: cleared first, drawn again below them)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    fresh = []
    for w in caught:
        key = (w.category, re.sub(r"\d[\d.e+-]*", "#", str(w.message)))  # each trial's own numbers aside
        if key not in shown:
            shown.add(key)
            fresh.append(w)
    if show and fresh:
        with writing():
            for w in fresh:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
