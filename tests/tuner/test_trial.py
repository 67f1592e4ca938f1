"""``lightning_tau.tuner.trial``: what one finder trial runs on. ``subset_dataloader`` keeps a fixed random subset of
the training set with the loader's own settings, and refuses, in one line, a loader it cannot rebuild or a subset with
no sample. (A trial's training, its record and its model copies are tested through the finder:
``tests/test_finder*.py``.)"""

from __future__ import annotations

import os
from pathlib import Path
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


class _Tiny:
    """A linear model on 64 samples, 8 batches an epoch (imported lazily: Lightning)."""

    @staticmethod
    def make() -> Any:
        import lightning.pytorch as pl

        class Tiny(pl.LightningModule):
            def __init__(self) -> None:
                super().__init__()
                self.net = torch.nn.Linear(4, 1)

            def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
                return torch.nn.functional.mse_loss(self.net(batch[0]), batch[1])

            def validation_step(self, batch: Any, batch_idx: int) -> None:
                self.log("val_loss", torch.nn.functional.mse_loss(self.net(batch[0]), batch[1]))

            def configure_optimizers(self) -> torch.optim.Optimizer:
                return torch.optim.AdamW(self.parameters(), lr=1e-2)

        return Tiny()


@pytest.mark.slow
def test_run_trial_stops_at_next_batch_once_interrupted_says_so(tmp_path: Any) -> None:
    # a worker's SIGINT whose KeyboardInterrupt never reached the fit: the fit ends at the next batch as a Ctrl-C does
    import lightning.pytorch as pl

    from lightning_tau.tuner.trial import run_trial

    class Steps(pl.Callback):
        def __init__(self) -> None:
            self.done = 0

        def on_train_batch_end(self, *args: Any) -> None:
            self.done += 1

    steps = Steps()
    x = torch.randn(64, 4)
    data = TensorDataset(x, x.sum(dim=1, keepdim=True))
    with pytest.raises(KeyboardInterrupt):
        run_trial(
            _Tiny.make,
            DataLoader(data, batch_size=8),
            DataLoader(data, batch_size=64),
            tau_epoch=1.0,
            seed=0,
            monitor="val_loss",
            trainer_kwargs={"max_epochs": 50, "callbacks": [steps], "enable_progress_bar": False},
            log_dir=tmp_path,
            log_name="trial",
            interrupted=lambda: steps.done >= 3,
        )
    assert steps.done == 3


@pytest.mark.slow
def test_finder_refuses_multi_device_trials_in_one_line_before_any_step(tmp_path: Any) -> None:
    # a ddp_spawn fit's result never came back to the finder, which trained the grid point again, for ever
    import subprocess
    import sys

    code = f"""
import torch
from torch.utils.data import DataLoader, TensorDataset
from lightning_tau import TimescaleFinder
from lightning_tau.errors import TimescaleError
from test_trial import _Tiny
x = torch.randn(64, 4)
data = TensorDataset(x, x.sum(dim=1, keepdim=True))
finder = TimescaleFinder(tau_epochs=(1, 4), seeds=(0,), fraction=1.0, root_dir={str(tmp_path)!r}, progress=False,
    trainer_kwargs={{"max_epochs": 1, "accelerator": "cpu", "devices": 2, "strategy": "ddp_spawn"}})
try:
    finder.fit(_Tiny.make, train_dataloaders=DataLoader(data, batch_size=8), val_dataloaders=DataLoader(data))
except TimescaleError as err:
    print("refused:", err)
print("trained:", finder.trained_runs)
"""
    here = str(Path(__file__).parent)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=240, env={**os.environ, "PYTHONPATH": here}
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stderr[-2000:]
    assert lines[0].startswith(
        "refused: `TimescaleFinder(trainer_kwargs={'accelerator': 'cpu', 'devices': 2, 'strategy': 'ddp_spawn'})`: each"
        " trial would train on 2 processes"
    ), lines
    assert "devices=1" in lines[0] and lines[1] == "trained: 0"
