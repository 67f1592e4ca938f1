"""``lightning_tau.tuner.trial``: what one finder trial runs on. ``subset_dataloader`` keeps a fixed random subset of
the training set with the loader's own settings, and refuses, in one line, a loader it cannot rebuild or a subset with
no sample. (A trial's training, its record and its model copies are tested through the finder:
``tests/test_finder*.py``.)"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader, Subset, TensorDataset

from lightning_tau.tuner.trial import subset_dataloader

N_TRAIN, BATCH = 120, 16


def _data(n: int = N_TRAIN, seed: int = 0) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    return TensorDataset(x, (x[:, 0] + 0.3 * x[:, 1] > 0).long())


def test_subset_dataloader_fixed_random_subset_with_loader_settings() -> None:
    full = DataLoader(_data(), batch_size=BATCH, shuffle=True, drop_last=True, collate_fn=None)
    part = subset_dataloader(full, 0.3, seed=3)
    assert isinstance(part.dataset, Subset) and part.dataset.dataset is full.dataset
    assert len(part.dataset) == round(0.3 * N_TRAIN) == 36
    assert part.batch_size == BATCH and part.drop_last and len(part) == 36 // BATCH
    assert isinstance(part.sampler, torch.utils.data.RandomSampler)
    assert part.dataset.indices == subset_dataloader(full, 0.3, seed=3).dataset.indices  # fixed by the seed
    assert part.dataset.indices != subset_dataloader(full, 0.3, seed=4).dataset.indices
    assert len(set(part.dataset.indices)) == 36
    sequential = subset_dataloader(DataLoader(_data(), batch_size=BATCH), 1.0)
    assert isinstance(sequential.sampler, torch.utils.data.SequentialSampler) and len(sequential.dataset) == N_TRAIN


@pytest.mark.parametrize(
    ("loader", "error", "match"),
    [
        (DataLoader(_data(), batch_sampler=[[0, 1], [2, 3]]), ValueError, "custom `batch_sampler`"),
        (
            DataLoader(_data(), batch_size=4, sampler=torch.utils.data.SubsetRandomSampler(range(10))),
            ValueError,
            "custom sampler",
        ),
        (type("MyLoader", (DataLoader,), {})(_data(), batch_size=4), TypeError, "plain `torch.utils.data.DataLoader`"),
    ],
)
def test_subset_dataloader_refuses_loaders_it_cannot_rebuild(loader: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        subset_dataloader(loader, 0.5)


def test_subset_dataloader_refuses_empty_subset() -> None:
    with pytest.raises(ValueError, match=r"fraction=0.001\)` keeps no sample of the 120"):
        subset_dataloader(DataLoader(_data(), batch_size=4), 0.001)
