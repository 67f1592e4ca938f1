"""The finder's arguments: :class:`SettingError` and the checks ``TimescaleFinder`` runs on what it is given.

They run when the finder is built and, for the data, the model and the grid against the subset, when ``fit`` starts,
before any training.

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Checkpoint
from optuna.pruners import BasePruner
from optuna.storages import BaseStorage
from torch.utils.data import DataLoader

from lightning_tau import _checks
from lightning_tau.callback import TimescaleCallback
from lightning_tau.errors import TimescaleError
from lightning_tau.tuner.analysis.curve import PRUNER_NAMES
from lightning_tau.tuner.analysis.grid_args import MAX_SEED, check_grid, check_grid_extensions, check_seeds, tau_name
from lightning_tau.tuner.analysis.rules import DEFAULT_TOLERANCE
from lightning_tau.tuner.axes import AXES, BATCH_SIZE, DATASET_SIZE, FRACTION, LR_SCALINGS, WIDTH, Axis, resolve_axis
from lightning_tau.tuner.trial import ModelCopies, fresh_callback, has_run_state

__all__ = [
    "DEFAULT_AXIS_SEEDS",
    "DEFAULT_FRACTION",
    "DEFAULT_MAX_SEEDS",
    "DEFAULT_SEEDS",
    "FORBIDDEN_TRAINER_KWARGS",
    "MAX_SEED",
    "MIN_AUTO_SEEDS",
    "Axis",
    "PrunerName",
    "Reduce",
    "SettingError",
    "check_axis",
    "check_batch_sizes",
    "check_beta2",
    "check_fractions",
    "check_grid",
    "check_grid_extensions",
    "check_lr_scaling",
    "check_pruner",
    "check_root_dir",
    "check_seed_count",
    "check_seeds",
    "check_storage",
    "check_subset",
    "check_subset_size",
    "check_timescales",
    "check_tolerance",
    "check_trainer_kwargs",
    "check_widths",
    "made_model",
    "model_factory",
    "resolve_data",
    "tau_name",
]

Reduce = Literal["last", "best"]
#: The pruners ``TimescaleFinder(pruner=...)`` names (see :func:`~lightning_tau.tuner.pruning.make_pruner`).
PrunerName = Literal["median", "successive_halving", "hyperband"]

#: The subset's share of the training set when ``fraction`` is not given (``axis="fraction"`` or ``"width"``).
DEFAULT_FRACTION = 0.25
#: The seeds when ``seeds`` is not given: the fraction axis's sweep.
DEFAULT_SEEDS = (0, 1, 2)
#: The seeds when ``seeds`` is not given along the width and dataset-size axes: an interval over 3 seeds is erratic
#: (widths 0.12 to 0.63 on one task), so at least 5.
DEFAULT_AXIS_SEEDS = (0, 1, 2, 3, 4)
#: ``seeds="auto"``: the first stage's seed count, and the default ``max_seeds``.
MIN_AUTO_SEEDS = 3
DEFAULT_MAX_SEEDS = 12


class SettingError(TimescaleError):
    """A finder argument that the data makes invalid, found by :meth:`TimescaleFinder.fit` before any training.

    Attributes:
        argument: the ``TimescaleFinder`` argument at fault (``"tau_epochs"``, ``"fraction"``).
    """

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(message)
        self.argument = argument


FORBIDDEN_TRAINER_KWARGS = {
    "logger": "the finder logs every trial to TensorBoard under `root_dir/tb` itself",
    "default_root_dir": "use `TimescaleFinder(root_dir=...)`",
    "max_steps": "the finder trains for `max_epochs`, the same number of epochs as the full run",
    "max_time": "every trial must train for `max_epochs`",
    "limit_train_batches": "the finder subsets the dataset itself (`fraction`), so that N shrinks",
    "overfit_batches": "the finder subsets the dataset itself (`fraction`)",
    "fast_dev_run": "a finder trial must train for `max_epochs`",
}


def _scaling_axes() -> str:
    """The axes that decide published rules, as the errors name them: ``'width', 'dataset_size' or 'batch_size'``."""
    names = [repr(a.name) for a in AXES.values() if a.scaling]
    return ", ".join(names[:-1]) + " or " + names[-1]


def check_seed_count(seeds: Any, max_seeds: Any, axis: Axis | str) -> tuple[tuple[int, ...], bool, int]:
    """``seeds`` and ``max_seeds`` along ``axis``: ``(the seeds of the first look, whether seeds="auto",
    max_seeds)``.

    ``None`` gives :data:`DEFAULT_SEEDS` (the fraction axis) or :data:`DEFAULT_AXIS_SEEDS` (width, dataset size);
    ``"auto"`` (width and dataset size only) starts with the first stage's seeds ``0, 1, 2`` and goes up to
    ``max_seeds`` (default :data:`DEFAULT_MAX_SEEDS`), which is only used with it.

    Example:
        >>> check_seed_count(None, None, WIDTH)
        ((0, 1, 2, 3, 4), False, 5)
        >>> check_seed_count("auto", 8, DATASET_SIZE)
        ((0, 1, 2), True, 8)
        >>> check_seed_count("auto", None, FRACTION)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleFinder(seeds='auto')` is only used with axis='width', ...
    """
    axis = resolve_axis(axis)
    auto = isinstance(seeds, str) and seeds == "auto"
    if auto and not axis.scaling:
        raise TimescaleError(
            f"`TimescaleFinder(seeds='auto')` is only used with axis={_scaling_axes()} (axis is {axis.name!r}):"
            " it adds seeds until the axis's published rules are decided. Give the seeds, e.g. seeds=(0, 1, 2)."
        )
    if max_seeds is not None and not auto:
        raise TimescaleError(
            f"`TimescaleFinder(max_seeds={max_seeds!r})` is only used with seeds='auto' (seeds is {seeds!r}):"
            " pass seeds='auto', or leave `max_seeds` out."
        )
    if auto:
        first = MIN_AUTO_SEEDS
        hint = f"use an integer >= {first} (the first stage trains {first} seeds), e.g. {DEFAULT_MAX_SEEDS}."
        most = _checks.integer(
            "TimescaleFinder", "max_seeds", DEFAULT_MAX_SEEDS if max_seeds is None else max_seeds, hint, minimum=first
        )
        if most > MAX_SEED:
            raise _checks.invalid("TimescaleFinder", "max_seeds", max_seeds, hint)
        return tuple(range(first)), True, most
    if seeds is None:
        seeds = DEFAULT_AXIS_SEEDS if axis.scaling else DEFAULT_SEEDS
    checked = check_seeds(seeds)
    return checked, False, len(checked)


def check_tolerance(tolerance: Any, axis: Axis | str) -> float:
    """A ``tolerance`` argument: a factor above 1 (``None``: :data:`~lightning_tau.tuner.analysis.rules.DEFAULT_TOLERANCE`),
    used along the width and dataset-size axes only (the fraction axis decides no published rule).

    Example:
        >>> check_tolerance(None, FRACTION), check_tolerance(1.5, WIDTH)
        (1.25, 1.5)
        >>> check_tolerance(1.0, WIDTH)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleFinder(tolerance=1.0)` is not valid: use a factor above 1 ...
    """
    if tolerance is None:
        return DEFAULT_TOLERANCE
    axis = resolve_axis(axis)
    if not axis.scaling:
        raise TimescaleError(
            f"`TimescaleFinder(tolerance={tolerance!r})` is only used with axis={_scaling_axes()} (axis is"
            f" {axis.name!r}): it decides the published rules along an axis. Leave `tolerance` out."
        )
    return _checks.in_range(
        "TimescaleFinder",
        "tolerance",
        tolerance,
        "use a factor above 1 (how far the best value may move over the axis's range and still follow a rule),"
        f" e.g. {DEFAULT_TOLERANCE:g}.",
        low=1,
        high=math.inf,
    )


def check_axis(axis: Any, fraction: Any, widths: Any, fractions: Any, batch_sizes: Any = None) -> Axis:
    """An ``axis`` argument, any spelling of one (:func:`~lightning_tau.tuner.axes.resolve_axis`), as its
    :class:`~lightning_tau.tuner.axes.Axis`; and that ``widths`` / ``fractions`` / ``fraction`` are given where it
    uses them.

    Example:
        >>> check_axis("dataset-size", None, None, (0.1, 0.5)) is DATASET_SIZE
        True
    """
    along = resolve_axis(axis)
    given = {"widths": widths, "fractions": fractions, "batch_sizes": batch_sizes}
    for argument, value in given.items():  # a points argument of another axis
        owner = next(a for a in AXES.values() if a.values_argument == argument)
        if value is not None and along is not owner:
            raise TimescaleError(
                f"`TimescaleFinder({argument}={value!r})` is only used with axis={owner.name!r} (axis is"
                f" {along.name!r}): pass axis={owner.name!r}, or {owner.values_elsewhere}."
            )
    if along.values_argument is not None and given[along.values_argument] is None:
        raise TimescaleError(
            f"`TimescaleFinder(axis={along.name!r})` needs `{along.values_argument}`:"
            f" {along.values_needed}."
        )
    if along.subsets_per_point and fraction is not None:
        raise TimescaleError(
            f"`TimescaleFinder(fraction={fraction!r})` is not used with axis={along.name!r}: the runs train on each of"
            " `fractions`. Leave `fraction` out."
        )
    return along


def check_batch_sizes(batch_sizes: Any) -> tuple[int, ...]:
    """A ``batch_sizes`` argument: at least 2 increasing positive integer global batch sizes.

    Example:
        >>> check_batch_sizes([32, 64])
        (32, 64)
        >>> check_batch_sizes([64, 0])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleFinder(batch_sizes=[64, 0])` is not valid: 0 is not ...
    """
    if isinstance(batch_sizes, (str, bytes)) or not isinstance(batch_sizes, Sequence) or len(batch_sizes) < 2:
        raise _checks.invalid(
            "TimescaleFinder",
            "batch_sizes",
            batch_sizes,
            "give at least 2 increasing positive integer global batch sizes, e.g. (32, 64, 128): the exponent is a"
            " slope across batch sizes.",
        )
    shown = repr(list(batch_sizes))
    for b in batch_sizes:
        if isinstance(b, bool) or not isinstance(b, numbers.Integral) or b < 1:
            raise _checks.invalid(
                "TimescaleFinder", "batch_sizes", batch_sizes, f"{b!r} is not a positive integer batch size.",
                shown=shown,
            )
    _check_increasing("batch_sizes", batch_sizes, "(32, 64, 128)", shown)
    return tuple(int(b) for b in batch_sizes)


def check_lr_scaling(lr_scaling: Any, axis: Axis) -> Axis:
    """An ``lr_scaling`` argument (``"none"``, ``"sqrt"`` or ``"linear"``: ``lr ∝ B^m`` across the batch sizes), used
    along the batch-size axis only; returns the axis object of that scaling (its rules depend on it).

    Example:
        >>> check_lr_scaling("sqrt", BATCH_SIZE).lr_exponent
        0.5
        >>> check_lr_scaling("sqrt", WIDTH)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleFinder(lr_scaling='sqrt')` is only used with ...
    """
    scaled = _checks.choice("TimescaleFinder", "lr_scaling", lr_scaling, tuple(LR_SCALINGS))
    if not axis.batch_per_point:
        if scaled == "none":
            return axis
        raise TimescaleError(
            f"`TimescaleFinder(lr_scaling={lr_scaling!r})` is only used with axis={BATCH_SIZE.name!r} (axis is"
            f" {axis.name!r}): it scales the lr across the batch sizes. Leave `lr_scaling` out."
        )
    return BATCH_SIZE.with_lr_scaling(scaled)


def check_beta2(beta2: Any, axis: Axis) -> str:
    """A ``beta2`` argument: ``"fixed"`` (the optimizer's ``β₂`` at every batch), ``"held"`` (its window held in
    samples, ``β₂ ** (B / B_0)``) or ``"both"`` (the sweep fixed, then the largest batch's best ``tau_epoch`` held
    too), ``"held"`` and ``"both"`` along the batch-size axis only.

    Example:
        >>> check_beta2("held", BATCH_SIZE), check_beta2("both", BATCH_SIZE), check_beta2("fixed", WIDTH)
        ('held', 'both', 'fixed')
    """
    held = _checks.choice("TimescaleFinder", "beta2", beta2, ("fixed", "held", "both"))
    if held != "fixed" and not axis.batch_per_point:
        raise TimescaleError(
            f"`TimescaleFinder(beta2={beta2!r})` is only used with axis={BATCH_SIZE.name!r} (axis is {axis.name!r}):"
            " it holds Adam's β₂ window in samples across the batch sizes. Leave `beta2` out."
        )
    return held


def check_widths(widths: Any) -> tuple[int, ...]:
    """A ``widths`` argument: at least 2 increasing positive integers."""
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
    _check_increasing("widths", widths, "(64, 128, 256)", shown)
    return tuple(int(w) for w in widths)


def check_fractions(fractions: Any) -> tuple[float, ...]:
    """A ``fractions`` argument: at least 2 increasing fractions in ``(0, 1]``."""
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
    _check_increasing("fractions", fractions, "(0.1, 0.25, 0.5)", shown)
    return tuple(float(f) for f in fractions)


def _check_increasing(name: str, values: Sequence[Any], example: str, shown: str) -> None:
    """The axis points ``values`` (``widths`` or ``fractions``) increasing, each once."""
    for a, b in zip(values, values[1:]):
        if b <= a:
            hint = f"{b!r} follows {a!r}; give the {name} increasing, each once, e.g. {example}."
            raise _checks.invalid("TimescaleFinder", name, values, hint, shown=shown)


def check_trainer_kwargs(trainer_kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """A ``trainer_kwargs`` argument, with the defaults the finder adds unless given (no checkpointing, ...)."""
    if trainer_kwargs is None or not isinstance(trainer_kwargs, Mapping) or "max_epochs" not in trainer_kwargs:
        raise TimescaleError(
            f"`TimescaleFinder(trainer_kwargs={trainer_kwargs!r})` must be a dict with `max_epochs`: every run trains"
            " for the epochs the full run will, e.g. trainer_kwargs={'max_epochs': 40}."
        )
    epochs = trainer_kwargs["max_epochs"]
    _checks.positive_int("TimescaleFinder", "trainer_kwargs", epochs, shown=f"{{'max_epochs': {epochs!r}}}")
    for key, why in FORBIDDEN_TRAINER_KWARGS.items():
        value = trainer_kwargs.get(key)
        if key in trainer_kwargs and not (key == "max_steps" and value in (None, -1)):
            raise TimescaleError(f"`TimescaleFinder(trainer_kwargs={{{key!r}: {value!r}}})` is not allowed: {why}.")
    accumulate = trainer_kwargs.get("accumulate_grad_batches", 1)
    shown = f"{{'accumulate_grad_batches': {accumulate!r}}}"
    _checks.positive_int("TimescaleFinder", "trainer_kwargs", accumulate, shown=shown)
    callbacks = list(trainer_kwargs.get("callbacks", None) or [])
    for callback in callbacks:
        if isinstance(callback, TimescaleCallback):
            raise TimescaleError(
                "`TimescaleFinder(trainer_kwargs={'callbacks': [TimescaleCallback(...)]})` is not allowed: the finder"
                " adds a TimescaleCallback with each run's tau_epoch itself."
            )
    checkpoints = [c for c in callbacks if isinstance(c, Checkpoint)]
    for checkpoint in checkpoints:
        if getattr(checkpoint, "dirpath", None) is not None:
            raise TimescaleError(
                f"`TimescaleFinder(trainer_kwargs={{'callbacks': [{type(checkpoint).__name__}(dirpath="
                f"{str(checkpoint.dirpath)!r})]}})`: every run would write its checkpoints into that one folder, over"
                " each other's; leave `dirpath` out: each run's checkpoints then go into its own TensorBoard folder."
            )
    kwargs = {
        "enable_checkpointing": bool(checkpoints),  # a given ModelCheckpoint needs it on; none: nothing saved
        "enable_progress_bar": False,
        "enable_model_summary": False,
        "num_sanity_val_steps": 0,
    }
    kwargs.update(trainer_kwargs)
    if "callbacks" in trainer_kwargs:  # a callback with run state kept as it is now: each trial copies it
        kwargs["callbacks"] = [fresh_callback(c) if has_run_state(c) else c for c in callbacks]
    return kwargs


def check_pruner(pruner: Any, axis: Axis | str) -> None:
    """A ``pruner`` argument: ``None``, one of :data:`PRUNER_NAMES` or an Optuna pruner, with ``axis="fraction"``."""
    if pruner is None:
        return
    if not isinstance(pruner, BasePruner) and pruner not in PRUNER_NAMES:
        raise TimescaleError(
            f"`TimescaleFinder(pruner={pruner!r})` is not valid: use None (no pruning),"
            f" {', '.join(map(repr, PRUNER_NAMES))} or an `optuna.pruners.BasePruner` instance."
        )
    axis = resolve_axis(axis)
    if axis.scaling:
        pruned = " or ".join(repr(a.name) for a in AXES.values() if not a.scaling)
        raise TimescaleError(
            f"`TimescaleFinder(pruner={pruner!r})` is only used with axis={pruned} (axis is {axis.name!r}): leave"
            " `pruner` out along an axis."
        )


def check_root_dir(root_dir: Any) -> Path:
    """A ``root_dir`` argument: a non-empty directory path."""
    if not isinstance(root_dir, (str, Path)) or not str(root_dir):
        raise _checks.invalid("TimescaleFinder", "root_dir", root_dir, "use a directory path.")
    return Path(root_dir)


def check_storage(storage: Any) -> str | Path | BaseStorage | None:
    """A ``storage`` argument: ``None``, a journal file path, an Optuna storage URL or an Optuna storage."""
    if storage is not None and not isinstance(storage, (str, Path, BaseStorage)) or storage == "":
        raise _checks.invalid(
            "TimescaleFinder",
            "storage",
            storage,
            "use a journal file path, an Optuna storage URL (e.g. postgresql+psycopg2://user:password@host/db) or"
            " an Optuna storage.",
        )
    return storage  # type: ignore[no-any-return]


def model_factory(model: Any, axis: Axis) -> tuple[Callable[..., pl.LightningModule], ModelCopies | None]:
    """``fit``'s ``model`` as what makes each trial's model, and the :class:`ModelCopies` it is when ``model`` is an
    instance (``None``: a factory, called per seed). Along an axis whose points are models (``axis="width"``) it is
    ``make_model`` itself."""
    if axis.model_per_point:
        if isinstance(model, torch.nn.Module) or not callable(model):
            raise TypeError(
                f"`TimescaleFinder(axis={axis.name!r}).fit(model=...)` needs `make_model`, a callable that takes the"
                f" {axis.value_key} and returns a μP LightningModule (e.g. the model class), got"
                f" {type(model).__name__!r}."
            )
        return model, None
    if isinstance(model, pl.LightningModule):
        copies = ModelCopies(model)
        return copies, copies
    if isinstance(model, torch.nn.Module) or not callable(model):
        raise TypeError(
            f"`TimescaleFinder.fit(model=...)` needs a LightningModule, or something that makes a fresh one for"
            f" every run (the model class, or `lambda: MyModel(...)`), got {type(model).__name__!r}."
        )
    return model, None


def made_model(factory: Callable[[], Any]) -> pl.LightningModule:
    """``factory()``, checked to be a ``LightningModule``."""
    probe = factory()
    if not isinstance(probe, pl.LightningModule):
        raise TypeError(f"`TimescaleFinder.fit(model=...)` must make a LightningModule, got {type(probe).__name__!r}.")
    return probe


def check_subset_size(full_train: DataLoader, fraction: float, argument: str, value: Any) -> None:
    """The subset ``fraction`` of ``full_train`` holds at least one full batch (``batch_size`` samples), the finder's
    documented minimum: a smaller one trains every epoch on one partial batch (one sample, for ``fraction=0.01`` of
    100), a curve of noise said nowhere. Else a :class:`SettingError` naming ``argument=value``, the finder argument
    that made it. A dataset with no length is left to :func:`~lightning_tau.tuner.trial.subset_dataloader`'s message,
    a loader with ``drop_last=True`` to :func:`check_subset`'s.

    Example:
        >>> from torch.utils.data import TensorDataset
        >>> full = DataLoader(TensorDataset(torch.zeros(100)), batch_size=8)
        >>> check_subset_size(full, 0.08, "fraction", 0.08)
        >>> check_subset_size(full, 0.01, "fraction", 0.01)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.tuner.checks.SettingError: `TimescaleFinder(fraction=0.01)`: a fraction of 0.01 keeps 1 ...
    """
    if full_train.drop_last:  # no full batch leaves no batch at all: :func:`check_subset` says so
        return
    try:
        size = len(full_train.dataset)  # type: ignore[arg-type]
    except TypeError:
        return
    batch = full_train.batch_size or 1
    keep = round(fraction * size)
    least = math.ceil(batch / size * 1e4) / 1e4 if size else 1.0
    if size > 0 and keep < batch:
        raise SettingError(
            argument,
            f"`TimescaleFinder({argument}={value!r})`: a fraction of {fraction:g} keeps {keep} of the {size} training"
            f" samples, fewer than one batch of {batch}: use a fraction of at least {least:g}"
            " (a subset holds at least one full batch).",
        )


def check_timescales(tau_epochs: Sequence[float], train: DataLoader, accumulate: int) -> None:
    """Every grid point as the callback will take it: ``tau_epoch * M`` optimizer steps, more than one and finite
    (``M``: the subset's steps per epoch on one device)."""
    steps = math.ceil(len(train) / accumulate)
    for tau in tau_epochs:
        tau_iter = tau * steps
        if math.isfinite(tau_iter) and tau_iter > 1:
            continue
        bound = f"above {1 / steps:.4g} (one step)" if tau_iter <= 1 else f"below {sys.float_info.max / steps:.4g}"
        raise SettingError(
            "tau_epochs",
            f"`TimescaleFinder(tau_epochs={list(tau_epochs)!r})` is not valid: tau_epoch={tau:g} is"
            f" {tau_iter:.4g} optimizer steps at M={steps} steps per epoch of the subset, which TimescaleCallback"
            f" cannot set. Use tau_epochs {bound}; good values are usually several epochs.",
        )


def check_subset(train: DataLoader, argument: str, value: Any, tau_epochs: Sequence[float], accumulate: int) -> None:
    """A subset's loader: at least one full batch (else a :class:`SettingError` naming ``argument=value``, the
    finder argument that made it), and every ``tau_epoch`` of the grid settable on it (:func:`check_timescales`)."""
    if len(train) == 0:
        raise SettingError(
            argument,
            f"`TimescaleFinder({argument}={value!r})`: the subset of {len(train.dataset)} samples"  # type: ignore[arg-type]
            f" gives no full batch of {train.batch_size} (drop_last=True). Use a larger fraction.",
        )
    check_timescales(tau_epochs, train, accumulate)


def resolve_data(
    datamodule: pl.LightningDataModule | None,
    train_dataloaders: DataLoader | None,
    val_dataloaders: Any,
) -> tuple[DataLoader, Any]:
    """``fit``'s data as ``(the full training loader, the validation loader(s))``: a datamodule's (set up here) or
    the loaders given."""
    if datamodule is not None and (train_dataloaders is not None or val_dataloaders is not None):
        raise TimescaleError(
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
        raise TimescaleError("`TimescaleFinder.fit` needs training data: pass `datamodule` or `train_dataloaders`.")
    if isinstance(train_dataloaders, (list, tuple, dict)):
        raise TimescaleError(
            "`TimescaleFinder.fit(train_dataloaders=...)` takes one training DataLoader, got a"
            f" {type(train_dataloaders).__name__} of them."
        )
    if val_dataloaders is None or (isinstance(val_dataloaders, (list, tuple)) and not val_dataloaders):
        raise TimescaleError(
            "`TimescaleFinder.fit` needs validation data to compare the runs: pass `val_dataloaders`, or a"
            " datamodule with a `val_dataloader()`."
        )
    return train_dataloaders, val_dataloaders
