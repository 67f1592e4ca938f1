"""The μP models of the width tests: an MLP with a hidden width, mup's base shapes set on it, its LightningModule, and
the optimizers (hand-written μP groups as in nanoGPT-muP, mup's ``MuAdamW``)."""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl
import mup
import torch
from torch import nn

LR, WD, TAU_EPOCH = 1e-2, 0.1, 2.0


BASE_WIDTH = 8


class MLP(nn.Module):
    """input (vector-like) -> hidden (matrix-like) -> MuReadout (vector-like, scales its own output)."""

    def __init__(self, width: int, readout: bool = True) -> None:
        super().__init__()
        self.inp = nn.Linear(4, width)
        self.norm = nn.LayerNorm(width)
        self.hidden = nn.Linear(width, width)
        self.out = mup.MuReadout(width, 2) if readout else nn.Linear(width, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.hidden(self.norm(self.inp(x)).relu()).relu())


def mup_mlp(width: int) -> MLP:
    model = MLP(width)
    mup.set_base_shapes(model, MLP(BASE_WIDTH), delta=MLP(2 * BASE_WIDTH))
    return model


class Module(pl.LightningModule):
    def __init__(self, net: nn.Module, make_optimizer: Any) -> None:
        super().__init__()
        self.net = net
        self.make_optimizer = make_optimizer

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self) -> Any:
        return self.make_optimizer(self.net)


def nanogpt_mup_groups(net: nn.Module, s: float = 4.0) -> torch.optim.Optimizer:
    """nanoGPT-mup's ``configure_optimizers``: hidden weights ``lr / s``, every decaying group the same wd."""
    return torch.optim.AdamW(
        [
            {"params": [net.hidden.weight], "lr": LR / s, "weight_decay": WD, "width_mult": s, "name": "mup_decay"},
            {"params": [net.inp.weight, net.out.weight], "weight_decay": WD, "name": "decay"},
            {"params": [p for n, p in net.named_parameters() if p.ndim == 1], "weight_decay": 0.0, "name": "nodecay"},
        ],
        lr=LR,
    )


def mu_adamw(net: nn.Module) -> torch.optim.Optimizer:
    return mup.MuAdamW(net.parameters(), lr=LR, weight_decay=WD)
