"""Quick start: fix AdamW's EMA timescale in epochs and let ``TimescaleCallback`` set the weight decay.

A small MLP learns a synthetic classification task (generated here, nothing downloaded). The only lines that
concern lightning_tau are the import and ``callbacks=[TimescaleCallback(tau_epoch=...)]``: the callback reads
the optimizer steps per epoch ``M`` (here ``N / B``: dataset size over batch size) from the Trainer and writes
``weight_decay = B / (lr * N * tau_epoch)`` into AdamW before the first step. The same line logs the EMA view
(``tau_iter`` against its target, the weight RMS against its predicted equilibrium) to the Trainer's default
TensorBoard logger; open it with the ``tensorboard --logdir`` command the script prints.

Run::

    python examples/quickstart.py                  # about a minute on a laptop CPU
    python examples/quickstart.py --fast           # a few seconds
    python examples/quickstart.py --tau-epoch 2 --max-epochs 20

It runs unchanged on a GPU (``accelerator="auto"``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import lightning.pytorch as pl
import torch
from lightning.pytorch.loggers import TensorBoardLogger
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_tau import TimescaleCallback, weight_decay_for_tau_epoch


def make_data(n: int, dim: int = 20, classes: int = 4, seed: int = 0, label_noise: float = 0.0) -> TensorDataset:
    """``n`` Gaussian inputs labelled by a fixed random two-layer teacher network (same teacher for every ``n``).

    ``label_noise`` replaces that fraction of the labels by uniformly random classes (training sets only: noisy
    labels make overfitting, and so regularization, matter on a small task).
    """
    if not 0.0 <= label_noise <= 1.0:
        raise ValueError(f"`label_noise` must be a fraction in [0, 1], got {label_noise!r}.")
    teacher = torch.Generator().manual_seed(1234)
    w1 = torch.randn(dim, 64, generator=teacher) / dim**0.5
    w2 = torch.randn(64, classes, generator=teacher) / 8.0
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, dim, generator=g)
    y = ((x @ w1).relu() @ w2).argmax(dim=1)
    noisy = torch.rand(n, generator=g) < label_noise
    y[noisy] = torch.randint(0, classes, (int(noisy.sum()),), generator=g)
    return TensorDataset(x, y)


class MLP(pl.LightningModule):
    """A two-hidden-layer MLP trained with AdamW; biases and LayerNorm gains get no weight decay."""

    def __init__(self, dim: int = 20, width: int = 128, classes: int = 4, lr: float = 3e-3) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(
            nn.Linear(dim, width),
            nn.LayerNorm(width),
            nn.ReLU(),
            nn.Linear(width, width),
            nn.LayerNorm(width),
            nn.ReLU(),
            nn.Linear(width, classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch: Sequence[torch.Tensor], batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = nn.functional.cross_entropy(self(x), y)
        self.log("train_loss", loss, on_step=False, on_epoch=True, sync_dist=True)
        return loss

    def validation_step(self, batch: Sequence[torch.Tensor], batch_idx: int) -> None:
        x, y = batch
        logits = self(x)
        self.log("val_loss", nn.functional.cross_entropy(logits, y))
        self.log("val_acc", (logits.argmax(1) == y).float().mean())

    def configure_optimizers(self) -> torch.optim.Optimizer:
        decay = [p for p in self.parameters() if p.ndim >= 2]
        no_decay = [p for p in self.parameters() if p.ndim < 2]
        return torch.optim.AdamW(
            [
                # any positive weight_decay marks the group as managed: the callback replaces the value
                {"params": decay, "weight_decay": 0.01, "name": "weights"},
                {"params": no_decay, "weight_decay": 0.0, "name": "biases_and_norms"},
            ],
            lr=self.hparams.lr,
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset-size", type=int, default=8192, help="training samples N")
    parser.add_argument("--batch-size", type=int, default=128, help="batch size B")
    parser.add_argument("--max-epochs", type=int, default=20)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--tau-epoch", type=float, default=4.0, help="EMA timescale in epochs")
    parser.add_argument("--accelerator", default="auto")
    parser.add_argument("--fast", action="store_true", help="tiny run for tests: N=1024, 4 epochs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--logdir", default="lightning_logs", help="where TensorBoard logs go")
    args = parser.parse_args(argv)
    if args.fast:
        args.dataset_size, args.max_epochs = 1024, 4

    pl.seed_everything(args.seed, verbose=False)
    train = DataLoader(make_data(args.dataset_size, seed=args.seed), batch_size=args.batch_size, shuffle=True)
    val = DataLoader(make_data(2048, seed=10_000 + args.seed), batch_size=512)
    model = MLP(lr=args.lr)

    callback = TimescaleCallback(tau_epoch=args.tau_epoch)
    trainer = pl.Trainer(
        accelerator=args.accelerator,
        devices=1,
        max_epochs=args.max_epochs,
        callbacks=[callback],
        logger=TensorBoardLogger(args.logdir, name="quickstart", default_hp_metric=False),
        log_every_n_steps=10,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    first = trainer.validate(model, val, verbose=False)[0]
    trainer.fit(model, train, val)
    last = trainer.callback_metrics

    written = trainer.optimizers[0].param_groups[0]["weight_decay"]
    closed_form = weight_decay_for_tau_epoch(args.lr, args.tau_epoch, args.dataset_size, args.batch_size)
    print(f"tau_epoch: {args.tau_epoch:g}  N: {args.dataset_size}  B: {args.batch_size}  lr: {args.lr:g}")
    print(f"weight_decay written: {written:.6g}")
    print(f"closed form B/(lr*N*tau_epoch): {closed_form:.6g}")
    print(f"val_loss: {first['val_loss']:.4f} -> {float(last['val_loss']):.4f}")
    print(f"val_acc: {first['val_acc']:.3f} -> {float(last['val_acc']):.3f}")
    print(f"TensorBoard: tensorboard --logdir {trainer.logger.log_dir}")


if __name__ == "__main__":
    main()
