"""μP width transfer (Wang & Aitchison 2025, Sec. 4.2): fixed weight decay vs weight decay ∝ width.

μP (the ``mup`` package: ``set_base_shapes``, ``MuReadout``, ``MuAdamW``) gives hidden weight matrices of a model
``s`` times wider than the base the learning rate ``lr / s``. With a *fixed* weight decay ``λ`` their AdamW
timescale ``tau_iter = 1 / (lr * λ)`` grows ``s``-fold, so wide models remember their initialization longer and
the tuned ``lr`` stops transferring. Holding ``tau_iter`` instead needs ``λ ∝ s``; ``TimescaleCallback`` gives
exactly that, because it computes every param group's weight decay from that group's own learning rate.

This script trains the same μP MLP at several widths under both rules and prints, for the hidden matrices, the
width multiplier ``s``, the learning rate, the weight decay, the resulting ``tau_iter`` and the validation loss.

- ``fixed``: every decaying group gets ``λ_base`` (what newer mup's ``MuAdamW(decoupled_wd=True)`` and
  nanoGPT-mup do).
- ``tau``: ``TimescaleCallback(tau_epoch=...)`` sets ``λ = 1 / (lr_group * tau_iter)``; mup 1.0.0's own
  ``MuAdamW`` (``decoupled_wd`` absent) already multiplies ``λ`` by ``s`` and the callback agrees with it.

Run::

    python examples/mup_width_transfer.py                # widths 64, 256, 1024 x 3 learning rates, minutes
    python examples/mup_width_transfer.py --fast         # two widths, one lr, seconds
    python examples/mup_width_transfer.py --widths 64 128 256 512 --lrs 3e-4 1e-3 3e-3 1e-2
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from typing import Literal

import lightning.pytorch as pl
import torch
from mup import MuAdamW, MuReadout, set_base_shapes
from quickstart import make_data  # the sibling example's synthetic task
from torch import nn
from torch.utils.data import DataLoader

import lightning_tau
from lightning_tau import TimescaleCallback, tau_iter

Rule = Literal["fixed", "tau"]


class MuMLP(pl.LightningModule):
    """Input layer -> two hidden ``width x width`` layers -> ``MuReadout``; trained with mup's ``MuAdamW``."""

    def __init__(
        self, width: int, *, dim: int = 20, classes: int = 4, lr: float = 3e-3, weight_decay: float = 0.1
    ) -> None:
        super().__init__()
        self.lr, self.weight_decay = lr, weight_decay
        self.rule: Rule = "tau"
        self.body = nn.Sequential(
            nn.Linear(dim, width),
            nn.ReLU(),
            nn.Linear(width, width),
            nn.ReLU(),
            nn.Linear(width, width),
            nn.ReLU(),
        )
        self.readout = MuReadout(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.readout(self.body(x))

    def training_step(self, batch: Sequence[torch.Tensor], batch_idx: int) -> torch.Tensor:
        x, y = batch
        return nn.functional.cross_entropy(self(x), y)

    def validation_step(self, batch: Sequence[torch.Tensor], batch_idx: int) -> None:
        x, y = batch
        self.log("val_loss", nn.functional.cross_entropy(self(x), y))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        matrices = [p for p in self.parameters() if p.ndim >= 2]
        vectors = [p for p in self.parameters() if p.ndim < 2]
        # mup 1.0.0: hidden (ninf == 2) groups get lr / s and weight_decay * s
        optimizer = MuAdamW(
            [{"params": matrices, "weight_decay": self.weight_decay}, {"params": vectors, "weight_decay": 0.0}],
            lr=self.lr,
        )
        if self.rule == "fixed":
            for group in optimizer.param_groups:
                if group["weight_decay"] > 0:
                    group["weight_decay"] = self.weight_decay  # undo mup's x s: the same λ at every width
        return optimizer


def build(width: int, base_width: int, **kwargs: float) -> MuMLP:
    """A ``MuMLP`` of ``width`` with mup base shapes taken from the ``base_width`` model."""
    model = MuMLP(width, **kwargs)
    set_base_shapes(model, MuMLP(base_width), delta=MuMLP(2 * base_width))
    return model


def hidden_group(optimizer: torch.optim.Optimizer) -> dict:
    """The param group holding the hidden ``width x width`` matrices (the one mup gave ``lr / s``)."""
    for group in optimizer.param_groups:
        if group["weight_decay"] > 0 and all(p.infshape.ninf() == 2 for p in group["params"]):
            return group
    raise RuntimeError("no hidden-matrix param group found")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--base-width", type=int, default=64)
    parser.add_argument("--lrs", type=float, nargs="+", default=[1e-3, 3e-3, 1e-2], help="base learning rates")
    parser.add_argument("--weight-decay", type=float, default=5.0, help="λ_base, tuned at the base width")
    parser.add_argument("--dataset-size", type=int, default=4096)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--max-epochs", type=int, default=8)
    parser.add_argument("--rules", nargs="+", choices=["fixed", "tau"], default=["fixed", "tau"])
    parser.add_argument("--accelerator", default="auto")
    parser.add_argument("--fast", action="store_true", help="tiny run for tests: widths 32 and 128, one lr, 1 epoch")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.fast:
        args.widths, args.base_width, args.lrs = [32, 128], 32, [3e-3]
        args.dataset_size, args.max_epochs = 512, 1

    # One fit per table row: Lightning's per-fit banners ("GPU available", "TPU available", its tips, "`Trainer.fit`
    # stopped") are INFO logs of the "lightning.pytorch" logger and would land between the rows. Warnings still show.
    logging.getLogger("lightning.pytorch").setLevel(logging.WARNING)
    train_data, val_data = make_data(args.dataset_size, seed=args.seed), make_data(2048, seed=10_000)
    print(f"base width {args.base_width}, λ_base={args.weight_decay:g}, N={args.dataset_size}, B={args.batch_size}")
    header = ("rule", "lr_base", "width", "s", "hidden lr", "hidden wd", "tau_iter", "val_loss")
    print(" ".join(f"{h:>{w}}" for h, w in zip(header, (5, 8, 6, 5, 10, 10, 9, 9))))
    for rule in args.rules:
        for lr in args.lrs:
            # the tuned base run fixes tau_epoch; the tau rule holds it at every width
            tau_epoch = lightning_tau.tau_epoch(lr, args.weight_decay, args.dataset_size, args.batch_size)
            for width in args.widths:
                pl.seed_everything(args.seed, verbose=False)
                model = build(width, args.base_width, lr=lr, weight_decay=args.weight_decay)
                model.rule = rule
                callbacks = [TimescaleCallback(tau_epoch=tau_epoch, verbose=False)] if rule == "tau" else []
                trainer = pl.Trainer(
                    accelerator=args.accelerator,
                    devices=1,
                    max_epochs=args.max_epochs,
                    callbacks=callbacks,
                    logger=False,
                    enable_checkpointing=False,
                    enable_progress_bar=False,
                    enable_model_summary=False,
                )
                trainer.fit(
                    model,
                    DataLoader(train_data, batch_size=args.batch_size, shuffle=True),
                    DataLoader(val_data, batch_size=1024),
                )
                group = hidden_group(trainer.optimizers[0])
                s = group["params"][0].infshape.width_mult()
                hidden_tau_iter = tau_iter(group["lr"], group["weight_decay"])
                print(
                    f"{rule:>5} {lr:>8.3g} {width:>6} {s:>5g} {group['lr']:>10.4g} {group['weight_decay']:>10.4g}"
                    f" {hidden_tau_iter:>9.4g} {float(trainer.callback_metrics['val_loss']):>9.4f}"
                )
    print("Under 'tau' the hidden tau_iter is the same at every width; under 'fixed' it grows with s.")


if __name__ == "__main__":
    main()
