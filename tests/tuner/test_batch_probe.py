"""``lightning_tau.tuner.batch_probe``: how the batch-size axis sets a point's batch (the model's ``batch_size``, else
accumulation), finds the lr to scale, rebuilds the loader, and holds ``β₂`` in samples (a real one-step fit)."""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from lightning_tau.errors import TimescaleError
from lightning_tau.tuner.batch_probe import (
    ACCUMULATION,
    ATTRIBUTE,
    BatchedModel,
    HeldBeta2,
    batch_setting,
    lr_attribute,
    rebatched,
)


class _Net(pl.LightningModule):
    def __init__(self, lr: float = 0.01, beta2: float = 0.999, **extra: Any) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(2, 1)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        return self.layer(batch[0]).pow(2).mean()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, betas=(0.9, self.hparams.beta2))


def _loader(batch_size: int = 4, shuffle: bool = True) -> DataLoader:
    return DataLoader(TensorDataset(torch.randn(16, 2)), batch_size=batch_size, shuffle=shuffle)


def test_set_on_model_where_it_has_batch_size_else_accumulated() -> None:
    assert batch_setting(_Net(batch_size=4), 4, (8, 12)) == ATTRIBUTE  # an hparam, as BatchSizeFinder reads it
    assert batch_setting(_Net(), 4, (8, 16)) == ACCUMULATION
    with pytest.raises(TimescaleError) as err:
        batch_setting(_Net(), 4, (8, 10))
    assert str(err.value).startswith(
        "`TimescaleFinder(batch_sizes=[8, 10])`: 10 is not a whole multiple of the train loader's batch_size 4"
    )
    assert "\n" not in str(err.value)


def test_lr_found_as_lightnings_lr_finder_finds_it_else_one_line() -> None:
    assert lr_attribute(_Net(), "sqrt") == "lr"

    class NoLr(pl.LightningModule):
        pass

    with pytest.raises(TimescaleError, match=r"^`TimescaleFinder\(lr_scaling='sqrt'\)` needs the model's learning"):
        lr_attribute(NoLr(), "sqrt")


def test_point_model_gets_batch_and_scaled_lr() -> None:
    model = BatchedModel(lambda: _Net(lr=0.01, batch_size=4), 16, "lr", 2.0)()
    assert model.hparams.batch_size == 16 and model.hparams.lr == pytest.approx(0.02)
    same = BatchedModel(_Net, None, None, 1.0)()
    assert "batch_size" not in same.hparams and same.hparams.lr == 0.01


def test_rebatched_loader_keeps_data_and_shuffling_at_new_batch() -> None:
    loader = rebatched(_loader(4), 8)
    assert loader.batch_size == 8 and len(loader) == 2 and isinstance(loader.sampler, torch.utils.data.RandomSampler)
    assert isinstance(rebatched(_loader(4, shuffle=False), 8).sampler, torch.utils.data.SequentialSampler)


def _fit(model: pl.LightningModule, ratio: float, tmp_path: Any) -> pl.Trainer:
    trainer = pl.Trainer(
        max_steps=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[HeldBeta2(ratio)],
        default_root_dir=tmp_path,
    )
    trainer.fit(model, train_dataloaders=_loader())
    return trainer


@pytest.mark.slow
def test_held_beta2_raises_it_to_batch_ratio_at_train_start(tmp_path: Any) -> None:
    trainer = _fit(_Net(beta2=0.99), 4.0, tmp_path)
    assert trainer.optimizers[0].param_groups[0]["betas"] == (0.9, pytest.approx(0.99**4))


@pytest.mark.slow
def test_held_beta2_leaves_zero_to_one_one_line(tmp_path: Any) -> None:
    with pytest.raises(TimescaleError) as err:
        _fit(_Net(beta2=1e-200), 2.0, tmp_path)
    assert str(err.value).startswith(
        "`TimescaleFinder(beta2='held')`: the optimizer's β₂ = 1e-200 held in samples at 2 times the smallest batch is"
        " 0.0, which Adam cannot use"
    )
    assert "\n" not in str(err.value)
