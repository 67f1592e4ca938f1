"""A small character-level GPT trained through ``LightningCLI``, with ``N`` and ``B`` counted in tokens.

The text ships with Python: the standard library's own ``.py`` files, read from ``os.path.dirname(os.__file__)``
(nothing is downloaded). Each byte is a token (vocabulary 256). One epoch is one pass over the training tokens,
cut into non-overlapping windows of ``block_size`` tokens.

For language models the natural units are tokens: ``N`` = training tokens per epoch and ``B`` = tokens per
optimizer step (``batch_size x block_size x devices x accumulation``). The ``TauCLI`` below adds
``TimescaleCallback`` as the ``--timescale`` group and *links* its ``dataset_size`` and ``batch_size`` to the
DataModule, so both are passed in tokens and the pre-flight summary shows token counts. (Only ``N / B``, the steps
per epoch, enters the weight decay, so counting windows would give the same value; tokens make the numbers
comparable across block sizes and with the "Power Lines" fits, which use tokens.)

The learning rate warms up linearly and then follows a cosine to 10%; the callback defines ``tau`` at the peak
(``initial_lr``) learning rate, as the paper does.

Run::

    python examples/char_gpt.py fit                                   # defaults below, minutes on a CPU
    python examples/char_gpt.py fit --trainer.max_steps 30 --data.max_tokens 100000 --model.n_embd 32
    python examples/char_gpt.py fit --timescale.tau_epoch 0.25 --trainer.max_epochs 2
    python examples/char_gpt.py fit --print_config                    # the full YAML, to save and edit

On a GPU it runs unchanged (``--trainer.accelerator auto`` is the default).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

import lightning.pytorch as pl
import torch
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI
from lightning.pytorch.utilities import rank_zero_only
from torch import nn
from torch.utils.data import DataLoader, Dataset

from lightning_tau import TimescaleCallback


class TokenWindows(Dataset):
    """Non-overlapping ``block_size`` windows of a byte string: ``(x, y)`` with ``y`` shifted by one token."""

    def __init__(self, tokens: torch.Tensor, block_size: int) -> None:
        self.tokens, self.block_size = tokens, block_size

    def __len__(self) -> int:
        return (len(self.tokens) - 1) // self.block_size

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        start = i * self.block_size
        chunk = self.tokens[start : start + self.block_size + 1].long()
        return chunk[:-1], chunk[1:]


class StdlibText(pl.LightningDataModule):
    """The first ``max_tokens`` bytes of the standard library's ``.py`` files (sorted by name); 90% train, 10% val.

    Args:
        block_size: tokens per training sequence.
        batch_size: sequences per device per step.
        max_tokens: bytes to read in all (the top-level standard library holds about 5 MB of ``.py`` files).
        val_fraction: share of the tokens held out, taken from the end.
    """

    def __init__(
        self, block_size: int = 64, batch_size: int = 32, max_tokens: int = 1_000_000, val_fraction: float = 0.1
    ) -> None:
        super().__init__()
        if max_tokens < 10 * (block_size + 1):
            raise ValueError(
                f"`StdlibText(max_tokens={max_tokens})` is too small for block_size={block_size}:"
                f" read at least {10 * (block_size + 1)} tokens."
            )
        self.block_size, self.batch_size, self.max_tokens, self.val_fraction = (
            block_size,
            batch_size,
            max_tokens,
            val_fraction,
        )

    @cached_property
    def tokens(self) -> torch.Tensor:
        root = Path(os.path.dirname(os.__file__))
        data = bytearray()
        for path in sorted(p for p in root.glob("*.py") if p.is_file()):
            data += path.read_bytes()
            if len(data) >= self.max_tokens:
                break
        return torch.frombuffer(data[: self.max_tokens], dtype=torch.uint8)

    @property
    def split(self) -> int:
        return int(len(self.tokens) * (1 - self.val_fraction))

    @property
    def train_dataset(self) -> TokenWindows:
        return TokenWindows(self.tokens[: self.split], self.block_size)

    @property
    def tokens_per_epoch(self) -> int:
        """``N`` in tokens: the tokens one epoch trains on (whole windows only)."""
        return len(self.train_dataset) * self.block_size

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_dataset, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(TokenWindows(self.tokens[self.split :], self.block_size), batch_size=self.batch_size)


class Block(nn.Module):
    """Pre-LayerNorm transformer block: causal self-attention and a 4x MLP."""

    def __init__(self, n_embd: int, n_head: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.attn = nn.MultiheadAttention(n_embd, n_head, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=1)
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class CharGPT(pl.LightningModule):
    """A GPT over bytes. Matrices decay; biases, LayerNorms and the position embedding do not.

    Args:
        block_size: context length (linked from ``--data.block_size``).
        n_layer: transformer blocks.
        n_head: attention heads.
        n_embd: embedding width.
        lr: peak learning rate.
        warmup_fraction: share of the planned steps spent warming up linearly from 0.
    """

    def __init__(
        self,
        block_size: int = 64,
        n_layer: int = 2,
        n_head: int = 4,
        n_embd: int = 64,
        lr: float = 3e-3,
        warmup_fraction: float = 0.1,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.tok = nn.Embedding(256, n_embd)
        self.pos = nn.Parameter(torch.zeros(block_size, n_embd))
        self.blocks = nn.Sequential(*(Block(n_embd, n_head) for _ in range(n_layer)))
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, 256, bias=False)
        self.losses: list[float] = []

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tok(idx) + self.pos[: idx.shape[1]]
        return self.head(self.ln_f(self.blocks(x)))

    def _loss(self, batch: Sequence[torch.Tensor]) -> torch.Tensor:
        x, y = batch
        return nn.functional.cross_entropy(self(x).flatten(0, 1), y.flatten())

    def training_step(self, batch: Sequence[torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss = self._loss(batch)
        self.log("train_loss", loss, prog_bar=True)
        self.losses.append(loss.item())
        return loss

    def validation_step(self, batch: Sequence[torch.Tensor], batch_idx: int) -> None:
        self.log("val_loss", self._loss(batch), prog_bar=True)

    def configure_optimizers(self) -> dict:
        decay = [p for n, p in self.named_parameters() if p.ndim >= 2 and n != "pos"]
        no_decay = [p for n, p in self.named_parameters() if p.ndim < 2 or n == "pos"]
        optimizer = torch.optim.AdamW(
            [
                {"params": decay, "weight_decay": 0.1, "name": "matrices"},  # 0.1 is replaced by the callback
                {"params": no_decay, "weight_decay": 0.0, "name": "no_decay"},
            ],
            lr=self.hparams.lr,
            betas=(0.9, 0.95),
        )
        total = max(1, int(self.trainer.estimated_stepping_batches))
        warmup = max(1, int(self.hparams.warmup_fraction * total))

        def lr_factor(step: int) -> float:
            if step < warmup:
                return (step + 1) / warmup
            progress = min(1.0, (step - warmup) / max(1, total - warmup))
            return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    @rank_zero_only
    def on_fit_end(self) -> None:
        group = self.trainer.optimizers[0].param_groups[0]
        k = max(1, min(10, len(self.losses) // 4))
        first, last = sum(self.losses[:k]) / k, sum(self.losses[-k:]) / k
        print(f"weight_decay (matrices): {group['weight_decay']:.6g} at peak lr {group['initial_lr']:g}")
        print(f"train_loss: first {k} steps {first:.4f} -> last {k} steps {last:.4f} over {len(self.losses)} steps")


def global_tokens_per_step(batch_size: int, block_size: int, devices: object, accumulate_grad_batches: int) -> int:
    """``B`` in tokens: ``batch_size x block_size x devices x accumulate_grad_batches``."""
    if isinstance(devices, (list, tuple)):
        count = len(devices)
    elif isinstance(devices, int) or (isinstance(devices, str) and devices.isdigit()):
        count = int(devices)
    else:
        raise ValueError(
            f"`char_gpt.py` needs the number of devices to count tokens per step, got --trainer.devices={devices!r}."
            " Pass an integer or a list of device ids."
        )
    if count < 1:
        raise ValueError(f"`--trainer.devices={devices!r}` must name at least one device.")
    return batch_size * block_size * count * accumulate_grad_batches


class TauCLI(LightningCLI):
    """``LightningCLI`` with ``TimescaleCallback`` as ``--timescale.*`` and ``N``, ``B`` linked in tokens."""

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.add_lightning_class_args(TimescaleCallback, "timescale")
        # One epoch, as in LLM pre-training. tau_epoch=0.4 is `power_lines_tau_epoch(tokens_per_parameter)` for
        # the default sizes (900K training tokens, 136K parameters: about 7 tokens per parameter).
        parser.set_defaults({"timescale.tau_epoch": 0.4, "trainer.devices": 1, "trainer.max_epochs": 1})
        parser.link_arguments("data.block_size", "model.block_size")
        parser.link_arguments(
            ("data.batch_size", "data.block_size", "trainer.devices", "trainer.accumulate_grad_batches"),
            "timescale.batch_size",
            compute_fn=global_tokens_per_step,
        )
        parser.link_arguments(
            "data", "timescale.dataset_size", compute_fn=lambda data: data.tokens_per_epoch, apply_on="instantiate"
        )


def main(args: Sequence[str] | None = None) -> None:
    TauCLI(CharGPT, StdlibText, seed_everything_default=0, save_config_kwargs={"overwrite": True}, args=args)


if __name__ == "__main__":
    main()
