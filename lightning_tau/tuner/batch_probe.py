"""The batch-size axis's trials: how each point's global batch is set (the model's ``batch_size``, as
``BatchSizeFinder`` sets it, or gradient accumulation) and its model at the scaled lr.

More: docs/finder.rst, "Along the batch size".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities.parsing import lightning_getattr, lightning_hasattr, lightning_setattr
from torch.utils.data import DataLoader, RandomSampler

from lightning_tau.errors import TimescaleError
from lightning_tau.tuner.trial import loader_like

__all__ = ["ATTRIBUTE", "ACCUMULATION", "BatchedModel", "HeldBeta2", "batch_setting", "lr_attribute", "rebatched"]

#: how a point's batch is set: the model's ``batch_size``, or gradient accumulation over the loader's batch
ATTRIBUTE = "the model's batch_size"
ACCUMULATION = "gradient accumulation"


def batch_setting(probe: pl.LightningModule, loader_batch: int, batch_sizes: Sequence[int]) -> str:
    """:data:`ATTRIBUTE` where ``probe`` has a ``batch_size`` attribute or hparam, else :data:`ACCUMULATION`, each
    of ``batch_sizes`` then a whole multiple of ``loader_batch`` (else a one-line error naming it)."""
    if lightning_hasattr(probe, "batch_size"):
        return ATTRIBUTE
    for b in batch_sizes:
        if b % loader_batch:
            raise TimescaleError(
                f"`TimescaleFinder(batch_sizes={list(batch_sizes)!r})`: {b} is not a whole multiple of the train"
                f" loader's batch_size {loader_batch}, and the model has no `batch_size` attribute or hparam to set,"
                " so the batch is set by gradient accumulation: give multiples of the loader's batch, or give the"
                " model a `batch_size` (as Lightning's BatchSizeFinder expects)."
            )
    return ACCUMULATION


def lr_attribute(probe: pl.LightningModule, lr_scaling: str) -> str:
    """The model's lr attribute (``lr`` or ``learning_rate``, as Lightning's ``LearningRateFinder`` looks them up),
    else a one-line error naming ``lr_scaling``."""
    for name in ("lr", "learning_rate"):
        if lightning_hasattr(probe, name):
            return name
    raise TimescaleError(
        f"`TimescaleFinder(lr_scaling={lr_scaling!r})` needs the model's learning rate as an `lr` or `learning_rate`"
        f" attribute or hparam (its {type(probe).__name__!r} has neither) to scale it across the batch sizes: add one"
        " that configure_optimizers reads, or leave `lr_scaling` out."
    )


def rebatched(loader: DataLoader, batch_size: int) -> DataLoader:
    """A copy of the plain ``loader`` (the finder's subset loader) at ``batch_size``."""
    return loader_like(loader, loader.dataset, batch_size=batch_size, shuffle=isinstance(loader.sampler, RandomSampler))


class BatchedModel:
    """Makes a trial's model at one batch-axis point: ``make()``, then its ``batch_size`` set to ``batch_size`` (where
    the batch is set so) and its lr attribute multiplied by ``lr_factor`` (where it is not 1). Pickles when ``make``
    does (a worker process builds its own)."""

    def __init__(
        self, make: Callable[[], Any], batch_size: int | None, lr_name: str | None, lr_factor: float
    ) -> None:
        self.make, self.batch_size, self.lr_name, self.lr_factor = make, batch_size, lr_name, lr_factor

    def __call__(self) -> pl.LightningModule:
        model = self.make()
        if self.batch_size is not None:
            lightning_setattr(model, "batch_size", self.batch_size)
        if self.lr_name is not None and self.lr_factor != 1.0:
            lightning_setattr(model, self.lr_name, lightning_getattr(model, self.lr_name) * self.lr_factor)
        return model


class HeldBeta2(Callback):
    """``beta2="held"``: Adam's ``β₂`` window held in samples (Marek et al. 2025) at a batch ``ratio = B / B_0`` times
    the smallest: at train start every Adam-like group's (one with a ``betas`` pair) ``β₂`` becomes
    ``β₂ ** ratio``, refused in one line where that rounds to 1 or falls to 0 or below."""

    def __init__(self, ratio: float) -> None:
        self.ratio = ratio

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        for optimizer in trainer.optimizers:
            for group in optimizer.param_groups:
                if "betas" not in group:
                    continue
                beta1, beta2 = group["betas"]
                held = float(beta2) ** self.ratio
                if not 0.0 < held < 1.0:
                    raise TimescaleError(
                        f"`TimescaleFinder(beta2='held')`: the optimizer's β₂ = {beta2!r} held in samples at"
                        f" {self.ratio:g} times the smallest batch is {held!r}, which Adam cannot use (it must lie in"
                        " (0, 1)): give a β₂ in (0, 1), or beta2='fixed'."
                    )
                group["betas"] = (beta1, held)
