"""The tiny classification LightningModule most tests fit, its data and a quiet one-epoch CPU trainer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader, TensorDataset


class TinyModel(pl.LightningModule):
    """Linear -> LayerNorm -> Linear classifier; `make_optimizer(module)` returns what `configure_optimizers` does."""

    def __init__(self, make_optimizer: Callable[[TinyModel], Any] | None = None, hidden: int = 8) -> None:
        super().__init__()
        self.hidden = torch.nn.Linear(4, hidden)
        self.norm = torch.nn.LayerNorm(hidden)
        self.head = torch.nn.Linear(hidden, 2)
        self.make_optimizer = make_optimizer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(self.hidden(x)).relu())

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self) -> Any:
        if self.make_optimizer is not None:
            return self.make_optimizer(self)
        return torch.optim.AdamW(self.parameters(), lr=1e-2, weight_decay=0.1)


def make_dataset(n: int = 120, seed: int = 0) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    return TensorDataset(x, (x[:, 0] > 0).long())


def make_loader(n: int = 120, batch_size: int = 10, **kwargs: Any) -> DataLoader:
    return DataLoader(make_dataset(n), batch_size=batch_size, **kwargs)


def quiet_trainer(**kwargs: Any) -> pl.Trainer:
    defaults: dict[str, Any] = dict(
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        max_epochs=1,
    )
    defaults.update(kwargs)
    return pl.Trainer(**defaults)
