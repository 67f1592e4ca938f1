"""``TimescaleFinder.fit`` and the data it cannot use: a dataset with no length on every axis (one message), and a
subset below the documented minimum of one full batch (refused, naming the argument), before any training."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch
from finder_study import CurveModel, curve_loaders, fit_finder, make_finder
from torch.utils.data import DataLoader, IterableDataset

from lightning_tau.tuner.checks import SettingError


class Stream(IterableDataset):
    def __iter__(self) -> Any:
        g = torch.Generator().manual_seed(0)
        for _ in range(64):
            x = torch.randn(4, generator=g)
            yield x, int(x[0] > 0)


@pytest.mark.parametrize(
    "axis", [{}, {"axis": "dataset_size", "fractions": (0.5, 1.0)}, {"axis": "width", "widths": (4, 8)}]
)
def test_dataset_with_no_length_gets_same_message_on_every_axis(tmp_path: Path, axis: dict[str, Any]) -> None:
    finder = make_finder(tmp_path, **({"fraction": None} if axis else {}), **axis)
    _, val = curve_loaders()
    with pytest.raises(ValueError, match=r"^`TimescaleFinder` cannot subset the train dataset 'Stream': it has no len"):
        finder.fit(CurveModel, train_dataloaders=DataLoader(Stream(), batch_size=16), val_dataloaders=val)
    assert not (tmp_path / "finder").exists()


@pytest.mark.parametrize(
    ("kwargs", "start"),
    [
        (
            {"fraction": 0.01},
            "`TimescaleFinder(fraction=0.01)`: a fraction of 0.01 keeps 1 of the 64 training samples,",
        ),
        ({"fraction": 0.2}, "`TimescaleFinder(fraction=0.2)`: a fraction of 0.2 keeps 13 of the 64 training samples,"),
        (
            {"fraction": None, "axis": "dataset_size", "fractions": (0.1, 1.0)},
            "`TimescaleFinder(fractions=[0.1, 1.0])`: a fraction of 0.1 keeps 6 of the 64",
        ),
    ],
)
def test_subset_smaller_than_one_batch_refused_before_training(
    tmp_path: Path, kwargs: dict[str, Any], start: str
) -> None:
    finder = make_finder(tmp_path, **kwargs)
    with pytest.raises(SettingError) as info:
        fit_finder(finder)
    assert str(info.value).startswith(start) and "fewer than one batch of 16: use a fraction of at least 0.25" in str(
        info.value
    )
    assert info.value.argument == ("fractions" if "fractions" in kwargs else "fraction")
    assert not (tmp_path / "finder").exists()


@pytest.mark.slow
def test_subset_of_exactly_one_batch_trains(tmp_path: Path) -> None:
    finder = make_finder(tmp_path, fraction=0.25, tau_epochs=(2.0, 4.0, 16.0))  # 16 of 64 samples, batch 16
    assert math.isfinite(fit_finder(finder).tau_epoch)


class Diverging(CurveModel):
    def validation_step(self, batch: Any, batch_idx: int) -> None:
        self.log("val_loss", math.nan)


@pytest.mark.slow
def test_every_run_diverged_said_without_internal_names(tmp_path: Path) -> None:
    finder = make_finder(tmp_path, tau_epochs=(1.0, 4.0, 16.0))
    with pytest.raises(ValueError) as info:
        fit_finder(finder, Diverging)
    message = str(info.value)
    assert message.startswith("`TimescaleFinder(monitor='val_loss')`: every run diverged (its val_loss is NaN or")
    assert "smoothed_optimum" not in message and "\n" not in message
