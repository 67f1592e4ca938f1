"""The finder's study key: the settings that must match for two processes to share a study, and its name.

Two processes share a study when their :func:`study_settings` match (the grid, the subset, the model, the Trainer
settings: not the model's initial weights); without a ``study_name``, a hash of them names it (:func:`study_name`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader, RandomSampler

from lightning_tau.tuner.study import GridStudy
from lightning_tau.tuner.trial import ModelCopies

if TYPE_CHECKING:
    from lightning_tau.tuner.axis_fit import StudyPoint
    from lightning_tau.tuner.finder import TimescaleFinder

__all__ = ["jsonable", "open_studies", "shapes_digest", "study_name", "study_settings"]


def study_settings(
    finder: TimescaleFinder,
    model: pl.LightningModule,
    dataset_size: int,
    subset_size: int,
    train: DataLoader,
    copies: ModelCopies | None,
) -> dict[str, Any]:
    """What must match for two processes to share a study (JSON round-tripped, so it compares equal to a stored
    one): the grid, the subset, the model, the Trainer settings of ``finder``'s sweep on a subset of ``subset_size``
    of the ``dataset_size`` training samples.

    The model is its class, hparams and parameter names and shapes, and whether the trials initialize an instance
    afresh per seed (:class:`~lightning_tau.tuner.trial.ModelCopies`) or call a factory per seed: not an instance's
    weights, which no trial uses, so a rerun of a script that builds its model unseeded (``MyModel()``) reuses the
    trials it trained before.

    The seeds are the list given, or ``"auto"`` for ``seeds="auto"``: every stage of an automatic seed count opens
    the same study and adds its new seeds' trials to it (the grid a process works on is its own, so earlier stages'
    trials are reused, not trained again).
    """
    kwargs = {k: v for k, v in finder.trainer_kwargs.items() if k != "callbacks"}
    settings = {
        "tau_epochs": list(finder.tau_epochs),
        "seeds": "auto" if finder.auto_seeds else list(finder.seeds),
        "epochs": finder.epochs,
        "fraction": finder.fraction,
        "subset_seed": finder.subset_seed,
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
        "callbacks": [type(c).__qualname__ for c in finder.trainer_kwargs.get("callbacks", None) or []],
    }
    if finder.pruner_setting is not None:  # only with one: the studies of unpruned sweeps keep their names
        settings["pruner"] = finder.pruner_setting
    return json.loads(json.dumps(settings))


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


def jsonable(value: Any) -> Any:
    """``value`` as JSON-ready data: containers recursively, numbers and strings as they are, the rest as repr."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    # the same in every process: no address, and the starting script's objects named as its own (`__main__`)
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value)).replace("__mp_main__.", "__main__.")


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
    finder: TimescaleFinder, points: Sequence[StudyPoint], grid: Sequence[tuple[float, int]], log: Callable[[str], None]
) -> list[GridStudy]:
    """The study of each of ``finder``'s points, in its storage: named after ``finder.study_name`` or the point's
    settings (:func:`study_name`), with ``_<axis>=<value>`` after it along a width or dataset-size axis."""
    return [
        GridStudy.open(
            finder.storage,
            finder.root_dir,
            study_name(
                point.settings,
                finder.study_name,
                "" if finder.axis == "fraction" else f"_{finder.axis}={point.value:g}",
            ),
            point.settings,
            grid,
            direction="minimize" if finder.mode == "min" else "maximize",
            stale_after=finder.stale_after,
            log=log,
            pruner=finder.pruner,
            seeds_grow=finder.auto_seeds,
        )
        for point in points
    ]
