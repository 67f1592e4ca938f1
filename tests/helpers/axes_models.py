"""Models for the finder's axes tests whose validation metric is a known function of what the callback set (real
fits, real param groups), importable by name (for ``--config`` class paths and spawned workers)."""

from __future__ import annotations

import math
from typing import Any

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

from lightning_tau.param_groups import build_param_groups

#: The planted models' base width (``s = width / BASE_WIDTH``), base learning rate and data.
BASE_WIDTH, LR, N, BATCH = 8, 1e-2, 64, 16
#: The planted best ``tau_epoch`` (at the base width: best ``λ_base = 1 / (LR * M * TAU_STAR)``, ``M`` the batches
#: per epoch).
TAU_STAR = 6.0


def _batches() -> tuple[DataLoader, DataLoader]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(N, 4, generator=g)
    data = TensorDataset(x, (x[:, 0] > 0).long())
    return DataLoader(data, batch_size=BATCH, shuffle=True), DataLoader(data, batch_size=N)


class PlantedData(pl.LightningDataModule):
    """64 random points, B=16 (4 steps per epoch), validation on the same points."""

    def train_dataloader(self) -> DataLoader:
        return _batches()[0]

    def val_dataloader(self) -> DataLoader:
        return _batches()[1]


class _Planted(pl.LightningModule):
    def __init__(self, width: int, spread: float) -> None:
        super().__init__()
        self.inp = torch.nn.Linear(4, width)
        self.hidden = torch.nn.Linear(width, width)
        self.head = torch.nn.Linear(width, 2)
        # the seed's own offset of the optimum (in log units): drawn after `seed_everything(seed)`
        self.shift = float(torch.randn(())) * spread

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.cross_entropy(self.head(self.hidden(self.inp(x).relu()).relu()), y)


class PlantedWidthModel(_Planted):
    """μP without mup (``build_param_groups(width_mult=...)``): ``val_loss = 1 + (log λ_base - log λ*)^2`` with
    ``λ* = λ*_0 * s ** exponent * exp(shift)``, ``λ_base`` read from the hidden group's weight decay / ``s``."""

    def __init__(self, width: int = BASE_WIDTH, exponent: float = -0.5, spread: float = 0.1) -> None:
        super().__init__(width, spread)
        self.save_hyperparameters()

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        groups = [g for g in self.trainer.optimizers[0].param_groups if g["weight_decay"] > 0]
        group = max(groups, key=lambda g: g["width_mult"])
        lam_base = group["weight_decay"] / group["width_mult"]
        s = self.hparams.width / BASE_WIDTH
        steps = self.trainer.num_training_batches
        best = 1.0 / (LR * steps * TAU_STAR) * s**self.hparams.exponent * math.exp(self.shift)
        self.log("val_loss", 1.0 + (math.log(lam_base) - math.log(best)) ** 2)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        s = self.hparams.width / BASE_WIDTH
        return torch.optim.AdamW(build_param_groups(self, weight_decay=0.1, lr=LR, width_mult={"hidden": s}), lr=LR)


class NotMupModel(PlantedWidthModel):
    """The same model with plain AdamW groups: every group at ``s = 1``."""

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(build_param_groups(self, weight_decay=0.1, lr=LR), lr=LR)


class PlantedSizeModel(_Planted):
    """``val_loss = 1 + (log tau_epoch - log(TAU_STAR * (N / N0) ** exponent) - shift)^2``, ``tau_epoch`` read
    from the optimizer (``1 / (lr * wd * M)``, ``M`` this run's batches per epoch)."""

    def __init__(self, exponent: float = 0.0, spread: float = 0.1) -> None:
        super().__init__(BASE_WIDTH, spread)
        self.save_hyperparameters()

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        group = next(g for g in self.trainer.optimizers[0].param_groups if g["weight_decay"] > 0)
        steps = self.trainer.num_training_batches
        tau = 1.0 / (group["lr"] * group["weight_decay"] * steps)
        best = TAU_STAR * (steps * BATCH / N) ** self.hparams.exponent * math.exp(self.shift)
        self.log("val_loss", 1.0 + (math.log(tau) - math.log(best)) ** 2)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(build_param_groups(self, weight_decay=0.1), lr=LR)


class PlantedAccumulatedModel(_Planted):
    """The batch axis's planted model, with an ``lr`` hparam and no ``batch_size`` (so the finder accumulates):
    ``val_loss = 1 + (log tau_epoch - log(TAU_STAR * (B / BATCH) ** exponent))^2``, ``tau_epoch`` read from the
    optimizer (``1 / (lr * wd * M)``, ``M`` this run's optimizer steps per epoch) and ``B`` the global batch it
    trained at; it also logs what it trained with: the loader's batch, the Trainer's accumulation and the group's lr
    and ``β₂``."""

    def __init__(self, exponent: float = 0.5, lr: float = LR) -> None:
        super().__init__(BASE_WIDTH, 0.0)
        self.save_hyperparameters()
        self.seen_batch = 0

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        self.seen_batch = int(batch[0].shape[0])
        return super().training_step(batch, batch_idx)

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        group = next(g for g in self.trainer.optimizers[0].param_groups if g["weight_decay"] > 0)
        accumulate = self.trainer.accumulate_grad_batches
        steps = math.ceil(self.trainer.num_training_batches / accumulate)
        tau = 1.0 / (group["lr"] * group["weight_decay"] * steps)
        best = TAU_STAR * (self.seen_batch * accumulate / BATCH) ** self.hparams.exponent
        self.log("val_loss", 1.0 + (math.log(tau) - math.log(best)) ** 2 + self.beta2_loss(group))
        self.log_dict(
            {
                "seen_batch": float(self.seen_batch),
                "accumulate": float(accumulate),
                "lr_used": group["lr"],
                "beta2_used": float(group["betas"][1]),
            }
        )

    def beta2_loss(self, group: dict[str, Any]) -> float:
        """What ``β₂`` adds to ``val_loss``: nothing here (:class:`PlantedBeta2Model` adds some)."""
        return 0.0

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(build_param_groups(self, weight_decay=0.1), lr=self.hparams.lr)


class PlantedBatchModel(PlantedAccumulatedModel):
    """:class:`PlantedAccumulatedModel` with a ``batch_size`` hparam (as Lightning's ``BatchSizeFinder`` reads it),
    so the finder sets the batch there and rebuilds the loader; it logs the ``batch_size`` it was given too."""

    def __init__(self, exponent: float = 0.5, lr: float = LR, batch_size: int = BATCH) -> None:
        super().__init__(exponent, lr)
        self.save_hyperparameters()

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        super().validation_step(batch, batch_idx)
        self.log("model_batch_size", float(self.hparams.batch_size))


#: What a unit of ``1 - β₂`` adds to :class:`PlantedBeta2Model`'s ``val_loss``.
BETA2_WEIGHT = 100.0


class PlantedBeta2Model(PlantedBatchModel):
    """:class:`PlantedBatchModel` whose ``val_loss`` also grows with Adam's ``1 - β₂`` (``BETA2_WEIGHT`` per unit) and
    carries the seed's own offset (``spread``, drawn after ``seed_everything(seed)``): held in samples at ``B`` from
    ``B_0`` (``β₂ ** (B / B_0)``), ``β₂`` costs ``BETA2_WEIGHT * (β₂ - β₂ ** (B / B_0))`` on every seed, paired,
    however far apart the seeds' offsets. ``beta2``: the optimizer's ``β₂``."""

    def __init__(
        self, exponent: float = 0.5, lr: float = LR, batch_size: int = BATCH, beta2: float = 0.999,
        spread: float = 0.3,
    ) -> None:
        super().__init__(exponent, lr, batch_size)
        self.save_hyperparameters()
        self.offset = float(torch.randn(())) * spread

    def beta2_loss(self, group: dict[str, Any]) -> float:
        return BETA2_WEIGHT * (1.0 - float(group["betas"][1])) + self.offset

    def configure_optimizers(self) -> torch.optim.Optimizer:
        groups = build_param_groups(self, weight_decay=0.1)
        return torch.optim.AdamW(groups, lr=self.hparams.lr, betas=(0.9, self.hparams.beta2))
