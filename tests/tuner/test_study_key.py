"""``lightning_tau.tuner.study_key``: what must match for two processes to share a study, the study's name, and the
studies a finder opens (no model is trained here; ``tests/tuner/test_finder_study.py`` trains through them)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import optuna
import pytest
import torch
from finder_study import make_finder
from lightning.pytorch.callbacks import EarlyStopping, LearningRateMonitor
from torch.utils.data import DataLoader, TensorDataset

from lightning_tau.tuner.axis_runner import StudyPoint
from lightning_tau.tuner.finder import TimescaleFinder
from lightning_tau.tuner.study_key import jsonable, open_studies, shapes_digest, study_name, study_settings
from lightning_tau.tuner.trial import ModelCopies


class Net(pl.LightningModule):
    def __init__(self, width: int = 3, act: str = "relu", scale: float = 1.0, **extra: Any) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(torch.nn.Linear(4, width), torch.nn.BatchNorm1d(width))


def _loader(**kwargs: Any) -> DataLoader:
    return DataLoader(TensorDataset(torch.zeros(10, 4)), **kwargs)


def _settings(finder: TimescaleFinder, model: pl.LightningModule, **kwargs: Any) -> dict[str, Any]:
    """``study_settings`` of ``finder`` over ``model`` on 5 of 10 samples (the keyword arguments change the rest)."""
    args: dict[str, Any] = {"dataset_size": 10, "subset_size": 5, "train": _loader(batch_size=2), "copies": None}
    args.update(kwargs)
    return study_settings(
        finder.settings, model, args["dataset_size"], args["subset_size"], args["train"], args["copies"]
    )


def test_settings_grid_subset_model_and_trainer(tmp_path: Path) -> None:
    finder = make_finder(
        tmp_path,
        tau_epochs=(1.0, 4.0, 16.0),
        seeds=(0, 3),
        subset_seed=7,
        trainer_kwargs={"max_epochs": 2, "accelerator": "cpu", "callbacks": [EarlyStopping("val_loss")]},
    )
    model = Net(width=3, act="gelu", scale=math.inf, _class_path="x.Net", _instantiator="y")
    settings = _settings(finder, model, train=_loader(batch_size=2, shuffle=True, drop_last=True))
    assert settings == {
        "tau_epochs": [1.0, 4.0, 16.0],
        "seeds": [0, 3],
        "epochs": 2,
        "fraction": 0.5,
        "subset_seed": 7,
        "dataset_size": 10,
        "subset_size": 5,
        "batch_size": 2,
        "shuffle": True,
        "drop_last": True,
        "model": {
            "class": f"{__name__}.Net",
            # LightningCLI's own `_class_path` and `_instantiator` are left out; inf is kept as its repr
            "hparams": {"width": 3, "act": "gelu", "scale": "inf"},
            "num_params": 4 * 3 + 3 + 3 + 3,  # the linear layer's weight and bias, the norm's weight and bias
            "parameters": shapes_digest(model),
            "init": "a factory called per seed",
        },
        # the finder's own Trainer settings, then the caller's, without the callbacks (listed by class below)
        "trainer": {
            "enable_checkpointing": False,
            "enable_progress_bar": False,
            "enable_model_summary": False,
            "num_sanity_val_steps": 0,
            "max_epochs": 2,
            "accelerator": "cpu",
        },
        "callbacks": ["EarlyStopping"],
    }
    assert json.loads(json.dumps(settings)) == settings  # what a study stores compares equal to it


def test_points_grid_extension_adds_keep_study_key_of_grid_given(tmp_path: Path) -> None:
    finder = make_finder(tmp_path, tau_epochs=(4.0, 16.0), seeds=(0,))
    given = _settings(finder, Net())
    finder.settings = dataclasses.replace(finder.settings, tau_epochs=(1.0, 2.0, 4.0, 16.0))  # two points added
    assert _settings(finder, Net()) == given and given["tau_epochs"] == [4.0, 16.0]


def test_settings_say_auto_seeds_order_init_and_pruner(tmp_path: Path) -> None:
    model = Net()
    plain = _settings(make_finder(tmp_path), model, train=_loader(batch_size=5))
    assert (plain["seeds"], plain["batch_size"], plain["shuffle"], plain["drop_last"]) == ([0], 5, False, False)
    assert plain["callbacks"] == [] and "pruner" not in plain  # the unpruned sweeps' studies keep their names
    auto = _settings(make_finder(tmp_path, seeds="auto", axis="width", fraction=None, widths=(8, 16)), model)
    assert auto["seeds"] == "auto"
    copies = _settings(make_finder(tmp_path), model, copies=ModelCopies(model))
    assert copies["model"]["init"] == "an instance initialized afresh per seed"
    pruned = _settings(make_finder(tmp_path, pruner="median", trainer_kwargs={"max_epochs": 8}), model)
    assert pruned["pruner"] == "median"
    both = _settings(make_finder(tmp_path, trainer_kwargs={"max_epochs": 1, "callbacks": None}), model)
    assert both["callbacks"] == [] and "callbacks" not in both["trainer"]
    monitor = make_finder(tmp_path, trainer_kwargs={"max_epochs": 1, "callbacks": [LearningRateMonitor()]})
    assert _settings(monitor, model)["callbacks"] == ["LearningRateMonitor"]


def test_model_without_hparams_keys_class_and_shapes_only(tmp_path: Path) -> None:
    class Bare(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(2, 2, bias=False)

    model = Bare()
    assert _settings(make_finder(tmp_path), model)["model"] == {
        "class": f"{__name__}.test_model_without_hparams_keys_class_and_shapes_only.<locals>.Bare",
        "hparams": {},
        "num_params": 4,
        "parameters": shapes_digest(model),
        "init": "a factory called per seed",
    }


def test_shapes_digest_keys_names_shapes_and_dtypes_not_values() -> None:
    torch.manual_seed(0)
    first = Net()
    torch.manual_seed(1)
    second = Net()
    assert not torch.equal(first.net[0].weight, second.net[0].weight)
    digest = shapes_digest(first)
    assert digest == shapes_digest(second) and len(digest) == 16 and int(digest, 16) >= 0
    expected = hashlib.sha256(
        b"".join(f"{n}:{tuple(t.shape)}:{t.dtype};".encode() for n, t in first.state_dict().items())
    ).hexdigest()[:16]
    assert digest == expected  # a stored study's key: it must not change between versions
    assert shapes_digest(Net(width=4)) != digest  # a shape
    assert shapes_digest(Net().double()) != digest  # a dtype
    renamed = Net()
    renamed.other = renamed.net
    del renamed.net
    assert shapes_digest(renamed) != digest  # a name
    no_buffers = Net()
    no_buffers.net[1].track_running_stats = False
    no_buffers.net[1].running_mean = None
    assert shapes_digest(no_buffers) != digest  # a buffer


def test_name_given_or_hash_of_sorted_settings() -> None:
    settings = {"seeds": [0], "b": {"y": 1, "x": 2}}
    name = study_name(settings, None)
    assert name == "tau_finder_" + hashlib.sha256(b'{"b": {"x": 2, "y": 1}, "seeds": [0]}').hexdigest()[:12]
    assert study_name({"b": {"x": 2, "y": 1}, "seeds": [0]}, None) == name  # key order does not matter
    assert study_name(settings, None, "_width=64") == name + "_width=64"
    assert study_name(settings, "", "_width=64") == name + "_width=64"  # an empty name is no name
    assert study_name(settings, "mine") == "mine"
    assert study_name({"seeds": [0], "b": {"y": 1, "x": 3}}, None) != name


class Thing:
    pass


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        (True, True),
        (3, 3),
        ("s", "s"),
        (0.25, 0.25),
        (math.inf, "inf"),
        (-math.inf, "-inf"),
        (math.nan, "nan"),
        ((1, [2.0, (None,)]), [1, [2.0, [None]]]),
        ({1: {"a": (math.inf,)}, "b": []}, {"1": {"a": ["inf"]}, "b": []}),
        (torch.float32, "torch.float32"),
        ({3, 4} - {4}, "{3}"),
    ],
)
def test_jsonable_keeps_json_values_and_names_rest(value: Any, expected: Any) -> None:
    assert jsonable(value) == expected
    json.dumps(jsonable(value), allow_nan=False)


def test_jsonable_names_objects_same_in_every_process() -> None:
    thing = Thing()
    assert " at 0x" in repr(thing)
    assert jsonable(thing) == f"<{__name__}.Thing object>"  # no address
    assert jsonable([thing, {"k": thing}]) == [f"<{__name__}.Thing object>", {"k": f"<{__name__}.Thing object>"}]
    Thing.__module__ = "__mp_main__"  # as a worker process imports the starting script
    try:
        assert jsonable(thing) == "<__main__.Thing object>"
    finally:
        Thing.__module__ = __name__
    assert jsonable("at 0x1f") == "at 0x1f"  # a string is kept as it is

    class Upper:
        def __repr__(self) -> str:
            return "<Upper at 0x7FAB12>"

    assert jsonable(Upper()) == "<Upper>"  # an address printed in capitals too


def _point(settings: dict[str, Any], value: float = 0.5) -> StudyPoint:
    return StudyPoint(value, Net, _loader(batch_size=2), settings)


GRID = [(1.0, 0), (4.0, 0)]


def test_open_studies_names_each_points_study_in_finders_storage(tmp_path: Path) -> None:
    logged: list[str] = []
    finder = make_finder(tmp_path, tau_epochs=(1.0, 4.0), stale_after=123.0)
    (study,) = open_studies(finder.settings, [_point({"k": 1})], GRID, logged.append)
    assert study.study.study_name == study_name({"k": 1}, None)
    assert study.study.direction == optuna.study.StudyDirection.MINIMIZE
    assert study.grid == GRID and study.stale_after == 123.0 and study.seeds_grow is False
    assert (tmp_path / "finder" / "study.journal").exists()
    named = make_finder(
        tmp_path, study_name="mine", mode="max", seeds="auto", axis="width", fraction=None, widths=(8, 16)
    )
    (study,) = open_studies(named.settings, [_point({"k": 2}, 8)], GRID, logged.append)
    assert study.study.study_name == "mine_width=8"
    assert study.study.direction == optuna.study.StudyDirection.MAXIMIZE
    assert study.seeds_grow is True
    assert study.study.user_attrs["lightning_tau"]["settings"] == {"k": 2}
    assert logged == []


def test_open_studies_along_axis_names_each_points_study_after_value(tmp_path: Path) -> None:
    storage = tmp_path / "shared.journal"
    finder = make_finder(tmp_path, axis="dataset_size", fraction=None, fractions=(0.25, 0.5), storage=storage)
    studies = open_studies(finder.settings, [_point({"k": 1}, 0.25), _point({"k": 2}, 0.5)], GRID, print)
    base = study_name({"k": 1}, None)
    assert [s.study.study_name for s in studies] == [
        f"{base}_dataset_size=0.25",
        f"{study_name({'k': 2}, None)}_dataset_size=0.5",
    ]
    named = make_finder(
        tmp_path, axis="dataset_size", fraction=None, fractions=(0.25, 0.5), study_name="s", storage=storage
    )
    studies = open_studies(named.settings, [_point({"k": 1}, 0.25), _point({"k": 2}, 0.5)], GRID, print)
    assert [s.study.study_name for s in studies] == ["s_dataset_size=0.25", "s_dataset_size=0.5"]
    pruned = make_finder(tmp_path, pruner="median", study_name="p", trainer_kwargs={"max_epochs": 8})
    (study,) = open_studies(pruned.settings, [_point({"k": 3})], GRID, print)
    assert isinstance(study.study.pruner, optuna.pruners.MedianPruner)


def test_open_studies_uses_finders_storage_and_log(tmp_path: Path) -> None:
    storage = tmp_path / "shared.journal"
    storage.write_bytes(b'{"op_co')  # a write cut short: opening the study moves it aside, and says so
    logged: list[str] = []
    finder = make_finder(tmp_path, storage=storage)
    (study,) = open_studies(finder.settings, [_point({"k": 1})], GRID, logged.append)
    assert storage.read_bytes().startswith(b'{"op_code":0,') and not (tmp_path / "finder" / "study.journal").exists()
    assert len(logged) == 1 and logged[0].startswith(f"the journal {storage} ended in a half-written line")
    storage.write_bytes(storage.read_bytes() + b'{"op_co')
    study.study.set_user_attr("x", 1)  # the study's later writes log through it too
    assert len(logged) == 2
