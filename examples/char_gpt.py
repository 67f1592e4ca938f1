"""A small byte-level GPT trained through ``LightningCLI``, with ``N`` and ``B`` counted in tokens.

The model and data are the package's text task (:mod:`lightning_tau.demos.text`, the one ``lightning-tau demo
--task text`` sweeps): :class:`~lightning_tau.demos.text.ByteGPT` on a
:class:`~lightning_tau.demos.text.TextDataModule` of the standard library's own ``.py`` files, read from the
running Python (nothing is downloaded). Each byte is a token (vocabulary 256). Every tenth file is held out for
validation; one epoch is one pass over the training bytes, cut into non-overlapping windows of ``block_size``
tokens, in whole batches.

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

from collections.abc import Sequence
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI
from lightning.pytorch.utilities import rank_zero_only

from lightning_tau import TimescaleCallback
from lightning_tau.demos.text import Block, ByteGPT, TextDataModule

__all__ = ["Block", "ByteGPT", "TauCLI", "TextDataModule", "TrainReport", "global_tokens_per_step", "main"]


class TrainReport(Callback):
    """Print the weight decay the ``decay`` group trained with and how far the training loss fell."""

    def __init__(self) -> None:
        self.losses: list[float] = []

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, *args: Any) -> None:
        self.losses.append(float(outputs["loss"]))

    @rank_zero_only
    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        group = next(g for g in trainer.optimizers[0].param_groups if g["name"] == "decay")
        k = max(1, min(10, len(self.losses) // 4))
        first, last = sum(self.losses[:k]) / k, sum(self.losses[-k:]) / k
        print(f"weight_decay (decay): {group['weight_decay']:.6g} at peak lr {group['initial_lr']:g}")
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
        parser.add_lightning_class_args(TrainReport, "report")
        # One epoch, as in LLM pre-training. tau_epoch=0.4 is `power_lines_tau_epoch(tokens_per_parameter)` for
        # the default sizes (1M training tokens, 136K parameters: about 7 tokens per parameter).
        parser.set_defaults(
            {
                "timescale.tau_epoch": 0.4,
                "trainer.devices": 1,
                "trainer.max_epochs": 1,
                "model.warmup_fraction": 0.1,
            }
        )
        parser.link_arguments("data.block_size", "model.block_size")
        parser.link_arguments(
            ("data.batch_size", "data.block_size", "trainer.devices", "trainer.accumulate_grad_batches"),
            "timescale.batch_size",
            compute_fn=global_tokens_per_step,
        )
        parser.link_arguments(
            "data", "timescale.dataset_size", compute_fn=lambda data: data.dataset_size, apply_on="instantiate"
        )


def main(args: Sequence[str] | None = None) -> None:
    TauCLI(ByteGPT, TextDataModule, seed_everything_default=0, save_config_kwargs={"overwrite": True}, args=args)


if __name__ == "__main__":
    main()
