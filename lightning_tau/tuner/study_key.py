"""The finder's study key: the settings that must match for two processes to share a study, and its name.

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader, RandomSampler

from lightning_tau.tuner.finder_settings import FinderSettings
from lightning_tau.tuner.pruning import jsonable
from lightning_tau.tuner.study import GridStudy
from lightning_tau.tuner.trial import ModelCopies

__all__ = ["StudyPoint", "jsonable", "open_studies", "shapes_digest", "study_name", "study_settings"]


class StudyPoint(NamedTuple):
    """One study of a fit: the fraction axis has one, the width and dataset-size axes one per point."""

    #: the axis value (a width or a fraction; on the fraction axis, ``fraction``)
    value: float
    #: what makes each trial's model
    factory: Callable[[], pl.LightningModule]
    #: the training subset's loader
    train: DataLoader
    #: the study's settings (:func:`study_settings`)
    settings: dict[str, Any]
    #: the ``Trainer`` arguments of this point's trials where they differ from the finder's (the batch-size axis's
    #: gradient accumulation), else ``None``
    trainer_kwargs: dict[str, Any] | None = None
    #: how the batch-size axis set this point's batch (``"the model's batch_size"`` or ``"gradient accumulation"``)
    batch_setting: str = ""
    #: the study name's ending where it is not the axis point's ``_<axis>=<value>`` (``beta2="both"``'s held round:
    #: ``_beta2=held_batch_size=256``, which ``--study NAME`` does not take for a point of the axis), else ``None``
    study_suffix: str | None = None


def study_settings(
    settings: FinderSettings,
    model: pl.LightningModule,
    dataset_size: int,
    subset_size: int,
    train: DataLoader,
    copies: ModelCopies | None,
) -> dict[str, Any]:
    """What must match for two processes to share a study (JSON round-tripped, so it compares equal to a stored
    one): the grid, the subset, the model, the Trainer settings of the sweep of ``settings`` on a subset of
    ``subset_size`` of the ``dataset_size`` training samples.

    The model is its class, hparams and parameter names and shapes, and whether the trials initialize an instance
    afresh per seed (:class:`~lightning_tau.tuner.trial.ModelCopies`) or call a factory per seed: not an instance's
    weights, which no trial uses, so a rerun of a script that builds its model unseeded (``MyModel()``) reuses the
    trials it trained before.

    The grid is the one given (``base_tau_epochs``): the points the grid extension adds
    (:mod:`lightning_tau.tuner.analysis.grid_extension`) go into the same study, as a later stage's seeds do. The seeds are
    the list given, or ``"auto"`` for ``seeds="auto"``: every stage of an automatic seed count opens the same study
    and adds its new seeds' trials to it (the grid a process works on is its own, so earlier stages' trials are
    reused, not trained again).
    """
    kwargs = {k: v for k, v in settings.trainer_kwargs.items() if k != "callbacks"}
    key = {
        "tau_epochs": list(settings.base_tau_epochs),
        "seeds": "auto" if settings.auto_seeds else list(settings.seeds),
        "epochs": settings.epochs,
        "fraction": settings.fraction,
        "subset_seed": settings.subset_seed,
        "dataset_size": dataset_size,
        "subset_size": subset_size,
        "batch_size": train.batch_size,
        "shuffle": isinstance(train.sampler, RandomSampler),
        "drop_last": train.drop_last,
        "model": {
            "class": class_name(type(model)),
            # without LightningCLI's own `_class_path` / `_instantiator`: a model built from a config is the
            # same model as one built in Python with the same arguments
            "hparams": jsonable({k: v for k, v in dict(getattr(model, "hparams", {})).items() if k[:1] != "_"}),
            "num_params": sum(p.numel() for p in model.parameters()),
            "parameters": shapes_digest(model),
            "init": "an instance initialized afresh per seed" if copies is not None else "a factory called per seed",
        },
        "trainer": jsonable(kwargs),
        "callbacks": [type(c).__qualname__ for c in settings.trainer_kwargs.get("callbacks", None) or []],
    }
    if settings.pruner_setting is not None:  # only with one: the studies of unpruned sweeps keep their names
        key["pruner"] = settings.pruner_setting
    return json.loads(json.dumps(key))


def study_name(settings: Mapping[str, Any], given: str | None, point: str = "") -> str:
    """A study's name: ``given`` (the finder's ``study_name``) or ``tau_finder_`` and a hash of ``settings``, then
    ``point`` (``"_width=64"``: an axis point's study).

    Example:
        >>> study_name({"seeds": [0]}, "mine", "_width=64")
        'mine_width=64'
        >>> study_name({"seeds": [0]}, None) == study_name({"seeds": [0]}, None) != study_name({"seeds": [1]}, None)
        True
    """
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]
    return (given or f"tau_finder_{digest}") + point


def class_name(cls: type) -> str:
    """``module.qualname`` of ``cls``, the same in every process of a sweep: a worker process imports the script
    that started the sweep as ``__mp_main__`` (multiprocessing's way), so a class the script defines is named as
    ``__main__``'s there too; otherwise the worker would key another study and train the grid again.

    Example:
        >>> class Net: ...
        >>> Net.__module__ = "__mp_main__"
        >>> class_name(Net), class_name(int)
        ('__main__.Net', 'builtins.int')
    """
    module = "__main__" if cls.__module__ == "__mp_main__" else cls.__module__
    return f"{module}.{cls.__qualname__}"


def shapes_digest(model: torch.nn.Module) -> str:
    """A short hash of the model's parameter and buffer names, shapes and dtypes (not their values)."""
    h = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        h.update(f"{name}:{tuple(tensor.shape)}:{tensor.dtype};".encode())
    return h.hexdigest()[:16]


def open_studies(
    settings: FinderSettings,
    points: Sequence[StudyPoint],
    grid: Sequence[tuple[float, int]],
    log: Callable[[str], None],
) -> list[GridStudy]:
    """The study of each of ``points`` in the storage of ``settings`` (the finder's): named after its
    ``study_name`` or the point's settings (:func:`study_name`), with ``_<axis>=<value>`` after it along a width or
    dataset-size axis."""
    return [
        GridStudy.open(
            settings.storage,
            settings.root_dir,
            study_name(
                point.settings,
                settings.study_name,
                point.study_suffix
                if point.study_suffix is not None
                else f"_{settings.axis.name}={point.value:g}" if settings.axis.scaling else "",
            ),
            point.settings,
            grid,
            direction="minimize" if settings.mode == "min" else "maximize",
            stale_after=settings.stale_after,
            log=log,
            pruner=settings.pruner,
            seeds_grow=settings.auto_seeds,
        )
        for point in points
    ]
