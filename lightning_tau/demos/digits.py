"""The demo's task: scikit-learn's bundled 8x8 digits and a small MLP trained with AdamW.

More: docs/results.rst, module notes.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

from lightning_tau import _checks
from lightning_tau.param_groups import build_param_groups

__all__ = ["COSINE_FINAL_LR_RATIO", "DIGITS_SIZE", "DigitsDataModule", "DigitsMLP", "load_digits_tensors", "main"]

#: Number of images in ``sklearn.datasets.load_digits``.
DIGITS_SIZE = 1797

#: The cosine schedule ends at this fraction of the initial learning rate (as in the paper's main experiments).
COSINE_FINAL_LR_RATIO = 0.1

Norm = Literal["none", "layer"]
Schedule = Literal["constant", "cosine"]


def load_digits_tensors() -> tuple[torch.Tensor, torch.Tensor]:
    """All 1,797 digits as ``(x, y)``: ``x`` float32 of shape ``(1797, 64)`` scaled to ``[0, 1]``, ``y`` int64.

    Raises:
        ImportError: scikit-learn is not installed (it is in the ``demo`` extra).

    Example:
        >>> x, y = load_digits_tensors()
        >>> tuple(x.shape), tuple(y.shape), float(x.max()), int(y.max())
        ((1797, 64), (1797,), 1.0, 9)
    """
    try:
        from sklearn.datasets import load_digits
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "The lightning-tau demo needs scikit-learn for its bundled digits dataset (nothing is downloaded)."
            " Install it with `pip install lightning-tau[demo]`."
        ) from err
    data = load_digits()
    x = torch.as_tensor(data.data, dtype=torch.float32) / 16.0
    y = torch.as_tensor(data.target, dtype=torch.int64)
    return x, y


class BatchedTensors(TensorDataset):
    """A ``TensorDataset`` that a ``DataLoader`` indexes once per batch instead of once per sample."""

    def __getitems__(self, indices: list[int]) -> tuple[torch.Tensor, ...]:
        index = torch.as_tensor(indices)
        return tuple(tensor[index] for tensor in self.tensors)


def as_batch(batch: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    """``collate_fn`` for :class:`BatchedTensors`: its ``__getitems__`` already returns the batch."""
    return batch


class DigitsDataModule(pl.LightningDataModule):
    """Digits with a fixed validation split and a training set of ``train_size`` images.

    Args:
        train_size: training images, at most ``1797 - val_size``. The first ``train_size`` of a fixed shuffle of
            the non-validation images, so training sets are nested as the size grows.
        val_size: held-out images, the same for every ``train_size`` (with the same ``split_seed``).
        batch_size: training batch size (validation runs as one batch).
        split_seed: seed of the shuffle that picks the validation and training images.
        label_noise: fraction of training labels replaced by a uniformly random class (fixed by ``split_seed``);
            validation labels stay clean.

    Example:
        >>> dm = DigitsDataModule(train_size=200, batch_size=32)
        >>> dm.setup("fit")
        >>> len(dm.train_set), len(dm.val_set), len(dm.train_dataloader())
        (200, 397, 7)
        >>> DigitsDataModule(train_size=1500)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `DigitsDataModule(train_size=1500)` is not valid: with val_size=397 at ...
    """

    def __init__(
        self,
        train_size: int = 1400,
        val_size: int = 397,
        batch_size: int = 32,
        split_seed: int = 0,
        label_noise: float = 0.0,
    ) -> None:
        super().__init__()
        owner = "DigitsDataModule"
        for name, value in (("train_size", train_size), ("val_size", val_size), ("batch_size", batch_size)):
            _checks.positive_int(owner, name, value)
        if train_size + val_size > DIGITS_SIZE:
            raise _checks.invalid(
                owner,
                "train_size",
                train_size,
                f"with val_size={val_size} at most {DIGITS_SIZE - val_size} digits of {DIGITS_SIZE} are left for"
                " training: use a smaller train_size or val_size.",
            )
        _checks.integer(owner, "split_seed", split_seed)
        _checks.in_range(owner, "label_noise", label_noise, "use a value in [0, 1).", low=0, high=1, low_closed=True)
        self.train_size = train_size
        self.val_size = val_size
        self.batch_size = batch_size
        self.split_seed = split_seed
        self.label_noise = label_noise
        self.train_set: TensorDataset | None = None
        self.val_set: TensorDataset | None = None

    def setup(self, stage: str) -> None:
        if self.train_set is not None:
            return
        x, y = load_digits_tensors()
        generator = torch.Generator().manual_seed(self.split_seed)
        order = torch.randperm(len(x), generator=generator)
        val_idx = order[: self.val_size]
        train_idx = order[self.val_size : self.val_size + self.train_size]
        y_train = y[train_idx].clone()
        if self.label_noise > 0:
            flip = torch.rand(len(y_train), generator=generator) < self.label_noise
            y_train[flip] = torch.randint(0, 10, (int(flip.sum()),), generator=generator)
        self.train_set = BatchedTensors(x[train_idx], y_train)
        self.val_set = BatchedTensors(x[val_idx], y[val_idx])

    def train_dataloader(self) -> DataLoader:
        assert self.train_set is not None, "call setup() first"
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, collate_fn=as_batch)

    def val_dataloader(self) -> DataLoader:
        assert self.val_set is not None, "call setup() first"
        return DataLoader(self.val_set, batch_size=len(self.val_set), collate_fn=as_batch)


class DigitsMLP(pl.LightningModule):
    """An MLP for 8x8 digits, trained with AdamW.

    With ``norm="layer"`` (the default) a LayerNorm follows every (bias-free) linear layer, the output layer
    included, so the network's output does not change when any weight matrix is rescaled: the scale-invariant
    setting of Wang & Aitchison (Sec. 3.2), where weight decay acts only through AdamW's EMA timescale.
    ``norm="none"`` is a plain MLP.

    Weight matrices go in a param group named ``decay`` with weight decay ``weight_decay``; biases and norm
    parameters go in ``no_decay`` with none (the usual timm / Hugging Face split). Pass a
    :class:`~lightning_tau.TimescaleCallback` to the Trainer and it overwrites ``decay``'s weight decay from
    ``tau_epoch``; ``weight_decay`` here only has to be positive. The learning rate follows ``schedule``:
    constant, or a per-step cosine from ``lr`` to ``0.1 * lr`` over the run (the weight decay stays fixed, as
    in torch and in the paper).

    Logs ``train/loss``, ``val/loss`` (cross-entropy) and ``val/error`` (misclassification rate).

    Args:
        hidden: width of each hidden layer.
        depth: number of hidden layers.
        norm: ``"layer"`` (scale-invariant, see above) or ``"none"``.
        lr: AdamW's (initial) learning rate.
        weight_decay: AdamW weight decay of the ``decay`` group.
        schedule: ``"cosine"`` or ``"constant"`` learning rate.

    Example:
        >>> model = DigitsMLP(hidden=16, depth=1)
        >>> x = torch.randn(4, 64)
        >>> before = model(x)
        >>> with torch.no_grad():
        ...     _ = model.net[0].weight.mul_(3.0)  # rescale a decayed weight matrix
        >>> torch.allclose(model(x), before, atol=1e-4)
        True
        >>> [g["name"] for g in model.configure_optimizers()["optimizer"].param_groups]
        ['decay', 'no_decay']
    """

    def __init__(
        self,
        hidden: int = 128,
        depth: int = 2,
        norm: Norm = "layer",
        lr: float = 3e-3,
        weight_decay: float = 0.01,
        schedule: Schedule = "cosine",
        inputs: int = 64,
        classes: int = 10,
    ) -> None:
        super().__init__()
        owner = "DigitsMLP"
        for name, value in (("hidden", hidden), ("depth", depth), ("inputs", inputs), ("classes", classes)):
            _checks.positive_int(owner, name, value)
        _checks.choice(owner, "norm", norm, ("none", "layer"))
        _checks.choice(owner, "schedule", schedule, ("constant", "cosine"))
        _checks.positive_number(owner, "lr", lr, "use a positive learning rate.")
        _checks.in_range(
            owner, "weight_decay", weight_decay, "use a finite value >= 0.", low=0, high=math.inf, low_closed=True
        )
        self.save_hyperparameters()
        layers: list[torch.nn.Module] = []
        width = inputs
        for _ in range(depth):
            # before a LayerNorm a bias would break scale invariance (the norm's own bias takes its place)
            layers.append(torch.nn.Linear(width, hidden, bias=norm == "none"))
            if norm == "layer":
                layers.append(torch.nn.LayerNorm(hidden))
            layers.append(torch.nn.ReLU())
            width = hidden
        layers.append(torch.nn.Linear(width, classes, bias=norm == "none"))
        if norm == "layer":
            layers.append(torch.nn.LayerNorm(classes))
        self.net = torch.nn.Sequential(*layers)
        self.lr = lr
        self.weight_decay = weight_decay
        self.schedule = schedule

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self(x), y)
        self.log("train/loss", loss, on_step=False, on_epoch=True)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        x, y = batch
        logits = self(x)
        self.log("val/loss", torch.nn.functional.cross_entropy(logits, y))
        predicted = logits.argmax(dim=1)
        if y.is_floating_point():  # class probabilities: the expected error of the predicted class
            error = 1 - y.gather(1, predicted[:, None]).mean()
        else:
            error = (predicted != y).float().mean()
        self.log("val/error", error)

    def configure_optimizers(self) -> dict[str, Any]:
        # weight matrices in "decay", biases and norm parameters in "no_decay"
        optimizer = torch.optim.AdamW(build_param_groups(self, weight_decay=self.weight_decay), lr=self.lr)
        if self.schedule == "constant" or self._trainer is None:
            return {"optimizer": optimizer}
        total_steps = max(1, int(self.trainer.estimated_stepping_batches))
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(
            optimizer, T_max=total_steps, eta_min=self.lr * COSINE_FINAL_LR_RATIO
        )
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


def main(args: Any = None) -> None:
    """Train one run with ``LightningCLI`` (``python -m lightning_tau.demos.digits fit --config FILE``).

    Needs jsonargparse: ``pip install lightning-tau[cli,demo]``.
    """
    from lightning.pytorch.cli import LightningCLI

    LightningCLI(DigitsMLP, DigitsDataModule, args=args)


if __name__ == "__main__":  # pragma: no cover
    main()
