"""Theorem 1 of Wang & Aitchison (2025), checked exactly through Lightning and ``TimescaleCallback``.

For a scale-invariant network, AdamW runs with ``(lr, wd, sigma, eps)`` and ``(lr / c, c * wd, sigma / c, c * eps)``
from the same init noise follow ``w' = w / c`` exactly, so their outputs are identical. The two runs below are
configured only by the same ``tau_epoch`` (the callback writes ``wd' = c * wd`` from ``lr' = lr / c``). With
``c`` a power of two every scaling is exact in floating point, so in float64 the runs agree to the last bit;
the tolerance allows only for summation order. The same pair with a fixed weight decay does not agree.
"""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl
import pytest
import torch
from tiny_model import quiet_trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_tau import TimescaleCallback

C = 4.0  # power of two
LR, SIGMA, EPS = 1e-2, 0.5, 1e-8
TAU_EPOCH = 2.0
N, B, EPOCHS = 64, 8, 4  # 32 optimizer steps; tau_iter = 16 steps, so 2 timescales elapse
FIXED_WD = 1 / (LR * TAU_EPOCH * N / B)  # the first run's weight decay, 6.25


def normalize(h: torch.Tensor) -> torch.Tensor:
    """Batch normalization without affine parameters and without eps (eps would break exact scale invariance)."""
    h = h - h.mean(dim=0, keepdim=True)
    return h / h.pow(2).mean(dim=0, keepdim=True).sqrt()


class ScaleInvariantNet(pl.LightningModule):
    """x -> W1 -> norm -> relu -> W2 -> norm (over the logits): ``net(x; w) = net(x; w / c)``."""

    def __init__(self, lr: float, sigma: float, eps: float, weight_decay: float) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        xi1 = torch.randn(16, 4, generator=g, dtype=torch.float64)
        xi2 = torch.randn(3, 16, generator=g, dtype=torch.float64)
        self.w1 = nn.Parameter(sigma * xi1)  # w_0 = sigma * xi, the same xi for both runs
        self.w2 = nn.Parameter(sigma * xi2)
        self.init = (self.w1.detach().clone(), self.w2.detach().clone())
        self.lr, self.eps, self.weight_decay = lr, eps, weight_decay
        self.outputs: list[torch.Tensor] = []
        self.weights: list[tuple[torch.Tensor, torch.Tensor]] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return normalize(normalize(x @ self.w1.T).relu() @ self.w2.T)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        out = self(x)
        self.outputs.append(out.detach().clone())
        return nn.functional.cross_entropy(out, y)

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        self.weights.append((self.w1.detach().clone(), self.w2.detach().clone()))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=self.lr, eps=self.eps, weight_decay=self.weight_decay)


def loader() -> DataLoader:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(N, 4, generator=g, dtype=torch.float64)
    y = (x[:, 0] + x[:, 1] > 0).long() + (x[:, 2] > 0.5).long()
    return DataLoader(TensorDataset(x, y), batch_size=B, shuffle=False)


def run(lr: float, sigma: float, eps: float, callback: bool, weight_decay: float = 1.0) -> ScaleInvariantNet:
    model = ScaleInvariantNet(lr, sigma, eps, weight_decay)
    callbacks = [TimescaleCallback(tau_epoch=TAU_EPOCH, verbose=False)] if callback else []
    quiet_trainer(max_epochs=EPOCHS, callbacks=callbacks).fit(model, loader())
    return model


def max_deviations(a: ScaleInvariantNet, b: ScaleInvariantNet) -> tuple[float, float]:
    """Largest output difference and largest ``|w' * c - w|`` over every step."""
    assert len(a.outputs) == len(b.outputs) == N // B * EPOCHS
    outputs = max((oa - ob).abs().max().item() for oa, ob in zip(a.outputs, b.outputs))
    weights = max((wb * C - wa).abs().max().item() for sa, sb in zip(a.weights, b.weights) for wa, wb in zip(sa, sb))
    return outputs, weights


@pytest.mark.slow
def test_same_tau_epoch_gives_identical_trajectories_up_to_scale() -> None:
    base = run(LR, SIGMA, EPS, callback=True)
    scaled = run(LR / C, SIGMA / C, C * EPS, callback=True)
    # the callback alone made wd' = c * wd (same lr * wd = 1 / tau_iter)
    wd = base.trainer.optimizers[0].param_groups[0]["weight_decay"]
    wd_scaled = scaled.trainer.optimizers[0].param_groups[0]["weight_decay"]
    assert wd == pytest.approx(FIXED_WD, rel=1e-15)
    assert wd_scaled == C * wd
    outputs, weights = max_deviations(base, scaled)
    assert outputs <= 1e-12, outputs  # measured: 0.0 (bit-identical)
    assert weights <= 1e-12, weights  # w' = w / c, measured: 0.0
    # not vacuous: the weights moved far from their init, and the outputs changed over training
    assert (base.w1.detach() - base.init[0]).abs().max().item() > 0.1
    assert (base.outputs[-1] - base.outputs[0]).abs().max().item() > 0.1


@pytest.mark.slow
def test_same_pair_with_fixed_weight_decay_not_agree() -> None:
    base = run(LR, SIGMA, EPS, callback=False, weight_decay=FIXED_WD)
    scaled = run(LR / C, SIGMA / C, C * EPS, callback=False, weight_decay=FIXED_WD)
    outputs, weights = max_deviations(base, scaled)
    assert outputs > 1e-2, outputs
    assert weights > 1e-2, weights
