"""Runs that change under the callback: a head unfrozen at epoch 1, a two-optimizer GAN-style module, a callback that
records each optimizer's weight decay per step, and the closed-form weight decay they are checked against."""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl
import torch
from tiny_model import TinyModel
from lightning.pytorch.callbacks import BaseFinetuning

TAU, LR = 5.0, 0.01


def closed_form(steps_per_epoch: float, lr: float = LR, tau_epoch: float = TAU) -> float:
    return 1.0 / (lr * tau_epoch * steps_per_epoch)


class Unfreeze(BaseFinetuning):
    """Freeze the head at first; at epoch 1 add it back as a new param group at lr 0.005 (decay from defaults)."""

    def __init__(self, weight_decay: float | None = None) -> None:
        super().__init__()
        self.weight_decay = weight_decay

    def freeze_before_training(self, pl_module: TinyModel) -> None:
        self.freeze(pl_module.head)

    def finetune_function(self, pl_module: TinyModel, epoch: int, optimizer: torch.optim.Optimizer) -> None:
        if epoch == 1:
            params = [p for p in pl_module.head.parameters()]
            for p in params:
                p.requires_grad = True
            group: dict[str, Any] = {"params": params, "lr": 0.005, "name": "head"}
            if self.weight_decay is not None:
                group["weight_decay"] = self.weight_decay
            optimizer.add_param_group(group)


def frozen_aware_adamw(m: TinyModel) -> torch.optim.Optimizer:
    return torch.optim.AdamW([p for p in m.parameters() if p.requires_grad], lr=LR, weight_decay=0.1)


class TwoPlayers(pl.LightningModule):
    """Manual optimization with two AdamW optimizers: the discriminator steps every batch, the generator every
    second batch (10 batches: 10 and 5 steps per epoch). No biases, so no 1-D parameter decays."""

    def __init__(self) -> None:
        super().__init__()
        self.automatic_optimization = False
        self.disc = torch.nn.Linear(4, 2, bias=False)
        self.gen = torch.nn.Linear(4, 4, bias=False)

    def training_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        opt_d, opt_g = self.optimizers()
        loss_d = torch.nn.functional.cross_entropy(self.disc(x), y)
        opt_d.zero_grad()
        self.manual_backward(loss_d)
        opt_d.step()
        if batch_idx % 2 == 1:
            loss_g = -torch.nn.functional.cross_entropy(self.disc(self.gen(x)), y)
            opt_g.zero_grad()
            self.manual_backward(loss_g)
            opt_g.step()

    def configure_optimizers(self) -> list[torch.optim.Optimizer]:
        return [
            torch.optim.AdamW(self.disc.parameters(), lr=LR, weight_decay=0.1),
            torch.optim.AdamW(self.gen.parameters(), lr=LR, weight_decay=0.1),
        ]


class PerOptimizer(pl.Callback):
    """Per optimizer step, from a torch step post-hook: (epoch, optimizer index, weight decay the step used)."""

    def __init__(self) -> None:
        self.steps: list[tuple[int, int, float]] = []

    def on_train_start(self, trainer: pl.Trainer, pl_module: Any) -> None:
        for i, opt in enumerate(trainer.optimizers):
            opt.register_step_post_hook(
                lambda o, args, kwargs, i=i: self.steps.append(
                    (trainer.current_epoch, i, float(o.param_groups[0]["weight_decay"]))
                )
            )

    def of(self, index: int) -> list[tuple[int, float]]:
        return [(epoch, wd) for epoch, i, wd in self.steps if i == index]


class Recorder(pl.Callback):
    """Records every group's (lr, weight_decay) right before each optimizer step (after TimescaleCallback)."""

    def __init__(self) -> None:
        self.steps: list[list[tuple[float, float]]] = []

    def on_before_optimizer_step(self, trainer: pl.Trainer, pl_module: Any, optimizer: Any) -> None:
        self.steps.append([(float(g["lr"]), float(g["weight_decay"])) for g in optimizer.param_groups])


def adamw(lr: float = 1e-2, wd: float = 0.1):
    return lambda m: torch.optim.AdamW(m.parameters(), lr=lr, weight_decay=wd)
