"""What every optimizer step of a fit ran with, for the DDP scripts of ``tests/test_callback_ddp.py`` (each rank
imports it: the harness puts this folder on the path)."""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl


class StepLog(pl.Callback):
    """Per optimizer step, from its post-hook: what the step ran with (epoch, accumulation, world size, each group's
    lr and weight decay) and what ``timescale`` (a ``TimescaleCallback``) says it read (B, N, the held tau_epoch)."""

    def __init__(self, timescale: Any) -> None:
        self.timescale, self.rows = timescale, []

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        cb = self.timescale
        trainer.optimizers[0].register_step_post_hook(lambda opt, a, k: self.rows.append({
            "epoch": trainer.current_epoch, "accumulation": trainer.accumulate_grad_batches,
            "world_size": trainer.world_size, "groups": [[g["lr"], g["weight_decay"]] for g in opt.param_groups],
            "B": cb.resolved_batch_size, "N": cb.resolved_dataset_size, "held": cb.held_tau_epoch}))
