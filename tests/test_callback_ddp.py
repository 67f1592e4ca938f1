"""A real 2-process DDP fit on CPU (gloo): every rank writes the same closed-form value; rank zero reports."""

from __future__ import annotations

import json

import pytest
from ddp_harness import run_script

SCRIPT = """
import json, sys
import torch
import lightning.pytorch as pl
from conftest import TinyModel, make_loader
from lightning_tau import TimescaleCallback


class Record(pl.Callback):
    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        if trainer.global_step == 0:
            with open(f"rank{trainer.global_rank}.json", "w") as f:
                json.dump({"world_size": trainer.world_size,
                           "groups": [[g["lr"], g["weight_decay"]] for g in optimizer.param_groups]}, f)


def make(m):
    return torch.optim.AdamW([{"params": [m.hidden.weight, m.head.weight], "weight_decay": 0.1},
                              {"params": [m.hidden.bias, m.head.bias, m.norm.weight, m.norm.bias],
                               "weight_decay": 0.0}], lr=1e-2)


if __name__ == "__main__":
    trainer = pl.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=2, accumulate_grad_batches=2,
                         logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, callbacks=[TimescaleCallback(tau_epoch=2.0), Record()])
    trainer.fit(TinyModel(make), make_loader(n=120, batch_size=10))
"""


@pytest.mark.slow
def test_ddp_two_processes_write_the_same_closed_form(tmp_path) -> None:
    proc = run_script(SCRIPT, tmp_path)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    expected = (10 * 2 * 2) / (1e-2 * 120 * 2.0)  # B = 10 per device x 2 devices x 2 accumulation
    for rank in ranks:
        assert rank["world_size"] == 2
        assert rank["groups"][0][1] == pytest.approx(expected)
        assert rank["groups"][1][1] == 0.0
    output = proc.stdout + proc.stderr
    assert output.count("TimescaleCallback: tau_epoch=2") == 1, output  # rank zero only
    assert "B = 10 per device x 2 device(s) x 2 accumulation." in output


SCHEDULED = """
import json
import torch
import lightning.pytorch as pl
from lightning.pytorch.callbacks import GradientAccumulationScheduler
from conftest import TinyModel, make_loader
from lightning_tau import TimescaleCallback


class StepLog(pl.Callback):
    def on_train_start(self, trainer, pl_module):
        self.rows = []
        trainer.optimizers[0].register_step_post_hook(
            lambda opt, a, k: self.rows.append([trainer.current_epoch, opt.param_groups[0]["weight_decay"]]))

    def on_train_end(self, trainer, pl_module):
        with open(f"steps{trainer.global_rank}.json", "w") as f:
            json.dump(self.rows, f)


if __name__ == "__main__":
    trainer = pl.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=3, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                         callbacks=[TimescaleCallback(tau_epoch=5.0), GradientAccumulationScheduler({1: 4}),
                                    StepLog()])
    model = TinyModel(lambda m: torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1))
    trainer.fit(model, make_loader(n=200, batch_size=10))
"""


@pytest.mark.slow
def test_ddp_with_an_accumulation_schedule_holds_tau_epoch_at_every_step(tmp_path) -> None:
    # 200 samples / 2 ranks / batch 10 = 10 batches per rank: 10 steps in epoch 0, ceil(10 / 4) = 3 after
    proc = run_script(SCHEDULED, tmp_path)
    for rank in (0, 1):
        rows = json.loads((tmp_path / f"steps{rank}.json").read_text())
        assert [epoch for epoch, _ in rows] == [0] * 10 + [1] * 3 + [2] * 3
        for epoch, wd in rows:
            assert wd == pytest.approx(1 / (1e-2 * 5.0 * (10 if epoch == 0 else 3)))
    output = proc.stdout + proc.stderr
    assert output.count("`TimescaleCallback` at epoch 1") == 1, output  # said once, on rank zero
    assert "steps per epoch 10 -> 3" in output and "accumulation 1 -> 4" in output
