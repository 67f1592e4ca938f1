"""A real 2-process DDP fit on CPU (gloo): every rank writes the same closed-form value; rank zero reports."""

from __future__ import annotations

import json

import pytest
from axes_models import BATCH, LR, N, PlantedAccumulatedModel, PlantedData
from ddp_harness import run_script

from lightning_tau.tuner.finder import TimescaleFinder

SCRIPT = """
import json, sys
import torch
import lightning.pytorch as pl
from tiny_model import TinyModel, make_loader
from ddp_harness import end_process_group
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
    end_process_group()
"""


@pytest.mark.slow
def test_two_processes_write_same_closed_form(tmp_path) -> None:
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
from tiny_model import TinyModel, make_loader
from ddp_harness import end_process_group
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
    end_process_group()
"""


@pytest.mark.slow
def test_ddp_with_accumulation_schedule_holds_tau_epoch_at_every_step(tmp_path) -> None:
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


ZERO_CHANGES = """
import json, sys
import torch
import lightning.pytorch as pl
from lightning.pytorch.callbacks import GradientAccumulationScheduler
from torch.distributed.optim import ZeroRedundancyOptimizer
from tiny_model import TinyModel, make_loader
from ddp_harness import end_process_group
from runs import Unfreeze
from lightning_tau import TimescaleCallback
from lightning_tau.optim import unwrap_optimizer


class StepLog(pl.Callback):
    # Per step of ZeRO's shard optimizer (the one that steps), from its post-hook: the epoch and (lr, wd) per group.
    def on_train_start(self, trainer, pl_module):
        self.rows = []
        unwrap_optimizer(trainer.optimizers[0]).register_step_post_hook(
            lambda opt, a, k: self.rows.append([trainer.current_epoch, [[g["lr"], g["weight_decay"]]
                                                                        for g in opt.param_groups]]))


def zero(params):
    return ZeroRedundancyOptimizer(params, optimizer_class=torch.optim.AdamW, lr=1e-2, weight_decay=0.1)


class Growing(TinyModel):
    # 100, 200, 300 samples in epochs 0, 1, 2 (reloaded every epoch): 5, 10, 15 batches per rank
    def train_dataloader(self):
        return make_loader(n=100 * (self.trainer.current_epoch + 1), batch_size=10)


def fit(model, epochs, *callbacks, **kwargs):
    log = StepLog()
    trainer = pl.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=epochs, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                         callbacks=[TimescaleCallback(tau_epoch=5.0, verbose=False), *callbacks, log], **kwargs)
    trainer.fit(model, None if isinstance(model, Growing) else make_loader(n=100, batch_size=10))
    return log.rows, trainer.global_rank


if __name__ == "__main__":
    result = {}
    result["accumulation"], rank = fit(TinyModel(lambda m: zero(m.parameters())), 2,
                                       GradientAccumulationScheduler({1: 2}))
    result["reload"], _ = fit(Growing(lambda m: zero(m.parameters())), 3, reload_dataloaders_every_n_epochs=1)
    result["added"], _ = fit(TinyModel(lambda m: zero([p for p in m.parameters() if p.requires_grad])), 2,
                             Unfreeze(weight_decay=0.3))
    with open(f"zero{rank}.json", "w") as f:
        json.dump(result, f)
    end_process_group()
"""


@pytest.mark.slow
def test_zero_redundancy_optimizer_keeps_every_mid_fit_re_decision(tmp_path) -> None:
    # ZeRO syncs its shard optimizer's groups back over its own after each step: a re-decision written into the
    # wrapper alone inside the shard's step pre-hook was lost (4.0 kept throughout). 100 samples / 2 ranks / 10 per
    # batch = 5 batches per rank; tau_epoch 5 at lr 0.01 is wd 1 / (0.01 * 5 * M).
    proc = run_script(ZERO_CHANGES, tmp_path)  # fails on a rank's exit status, SIGABRT included
    # C++ std::terminate at exit (a gloo thread alive then): the trainers' cycles must not keep the group alive
    assert "end_process_group:" not in proc.stderr and "terminate called" not in proc.stderr, proc.stderr

    def wd(m, lr=1e-2):
        return pytest.approx(1 / (lr * 5.0 * m), rel=1e-9)

    for rank in (0, 1):
        result = json.loads((tmp_path / f"zero{rank}.json").read_text())
        # GradientAccumulationScheduler({1: 2}): M = 5, then ceil(5 / 2) = 3 (4.0 -> 6.667)
        rows = result["accumulation"]
        assert [e for e, _ in rows] == [0] * 5 + [1] * 3, rank
        assert [groups[0][1] for _, groups in rows] == [wd(5)] * 5 + [wd(3)] * 3, rank
        # reloaded dataloaders, N 100 -> 200 -> 300: M = 5, 10, 15 (4.0 -> 2.0 -> 1.333)
        rows = result["reload"]
        assert [e for e, _ in rows] == [0] * 5 + [1] * 10 + [2] * 15, rank
        assert [groups[0][1] for _, groups in rows] == [wd(5)] * 5 + [wd(10)] * 10 + [wd(15)] * 15, rank
        # a group added at epoch 1 at lr 0.005 and weight decay 0.3: 8.0 from its first step
        rows = result["added"]
        assert [(e, len(groups)) for e, groups in rows] == [(0, 1)] * 5 + [(1, 2)] * 5, rank
        assert [groups[0][1] for _, groups in rows] == [wd(5)] * 10, rank
        assert [groups[1] for e, groups in rows if e == 1] == [[0.005, wd(5, lr=0.005)]] * 5, rank


HELD_IN_A_CYCLE = """
import sys
import torch
import torch.distributed as dist
from torch.distributed.optim import ZeroRedundancyOptimizer
from ddp_harness import end_process_group, gloo_threads


class Holder:
    pass


def fit():
    # Like Lightning's trainer: a reference cycle that holds a DDP model and a ZeRO optimizer, which hold the group.
    dist.init_process_group("gloo")
    h = Holder()
    h.me = h
    h.model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    h.opt = ZeroRedundancyOptimizer(h.model.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-2)
    h.model(torch.ones(3, 4)).sum().backward()
    h.opt.step()
    return h


if __name__ == "__main__":
    held = fit()
    if sys.argv[1] == "drop":
        del held  # the cycle alone still holds the group
    print("before:", gloo_threads())
    end_process_group()
    print("after:", gloo_threads())
"""


@pytest.mark.slow
def test_end_process_group_ends_gloo_threads_cycle_holds(tmp_path) -> None:
    # ZeRO's abort at exit (issue 29, finding 10): gloo's worker threads, kept alive by the trainer's cycles past
    # destroy_process_group, can take the GIL while the interpreter finalizes -> SIGABRT. They must be gone before.
    proc = run_script(HELD_IN_A_CYCLE, tmp_path, "drop")
    assert proc.stdout.count("before: ['gloo_tcp_loop', 'pt_gloo_runloop', 'pt_gloo_runloop']") == 2, proc.stdout
    assert proc.stdout.count("after: []") == 2, proc.stdout
    assert "end_process_group:" not in proc.stderr and "terminate called" not in proc.stderr, proc.stderr


@pytest.mark.slow
def test_end_process_group_exits_at_once_group_still_held(tmp_path) -> None:
    # Threads that cannot be joined must not meet a finalizing interpreter: the process ends without finalizing.
    proc = run_script(HELD_IN_A_CYCLE, tmp_path, "keep")
    assert "after:" not in proc.stdout, proc.stdout
    note = "end_process_group: gloo threads ['gloo_tcp_loop', 'pt_gloo_runloop', 'pt_gloo_runloop'] still alive"
    assert proc.stderr.count(note) == 2, proc.stderr


BATCH_RULE = """
import json, sys
import torch
import lightning.pytorch as pl
from lightning.pytorch.callbacks import GradientAccumulationScheduler
from tiny_model import TinyModel, make_loader
from ddp_harness import end_process_group
from step_log import StepLog
from lightning_tau import TimescaleCallback


def make(m):
    return torch.optim.AdamW([{"params": [m.hidden.weight], "lr": 1e-2, "weight_decay": 0.1},
                              {"params": [m.head.weight], "lr": 5e-3, "weight_decay": 0.1},
                              {"params": [m.hidden.bias, m.head.bias, m.norm.weight, m.norm.bias],
                               "weight_decay": 0.0}], lr=1e-2)


def fit(exponent):
    timescale = TimescaleCallback(tau_epoch=4.0, batch_exponent=exponent, reference_batch_size=8)
    log = StepLog(timescale)
    trainer = pl.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=2, accumulate_grad_batches=2,
                         logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, callbacks=[timescale, log])
    trainer.fit(TinyModel(make), make_loader(n=240, batch_size=5))
    return log.rows, trainer.global_rank


def fit_scheduled(exponent):
    timescale = TimescaleCallback(tau_epoch=4.0, batch_exponent=exponent, reference_batch_size=8)
    log = StepLog(timescale)
    trainer = pl.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=2, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                         callbacks=[timescale, GradientAccumulationScheduler({0: 2, 1: 4}), log])
    trainer.fit(TinyModel(make), make_loader(n=240, batch_size=5))
    return log.rows, trainer.global_rank


if __name__ == "__main__":
    result = {}
    for exponent in (1.0, -0.5):
        result[f"fixed {exponent:g}"], rank = fit(exponent)
        result[f"scheduled {exponent:g}"], rank = fit_scheduled(exponent)
    with open(f"batch{rank}.json", "w") as f:
        json.dump(result, f)
    end_process_group()
"""


@pytest.mark.slow
def test_ddp_batch_exponent_holds_tau_epoch_at_global_batch(tmp_path) -> None:
    # B is the GLOBAL batch: 5 per device x 2 ranks x accumulation (2, then 4 under the scheduler), not the per-device
    # 5. N = 240 = len(dataset) (as the DDP tests above: the sampler splits it, 120 a rank = 24 batches of 5), so
    # N / B is whole: 12 steps per epoch at accumulation 2, 6 at 4. At each step of each rank, every decayed group's
    # wd = B / (lr N tau_epoch (B / B_ref)^e), with B_ref = 8 != B.
    proc = run_script(BATCH_RULE, tmp_path)
    assert "end_process_group:" not in proc.stderr and "terminate called" not in proc.stderr, proc.stderr
    b, n, tau, ref = 5, 240, 4.0, 8

    def expected(accumulations):
        return [(e, a, 2 * a * b) for e, a in enumerate(accumulations) for _ in range(n // (2 * a * b))]

    for rank in (0, 1):
        result = json.loads((tmp_path / f"batch{rank}.json").read_text())
        for exponent in (1.0, -0.5):
            for run, accumulations in ((f"fixed {exponent:g}", (2, 2)), (f"scheduled {exponent:g}", (2, 4))):
                rows = result[run]
                steps = expected(accumulations)
                assert [(r["epoch"], r["accumulation"]) for r in rows] == [(e, a) for e, a, _ in steps], (rank, run)
                for row, (_, _, big_b) in zip(rows, steps):
                    held = tau * (big_b / ref) ** exponent
                    assert row["world_size"] == 2, (rank, run)
                    assert (row["B"], row["N"]) == (big_b, n), (rank, run, row)  # global B, not the per-device 5
                    assert row["held"] == pytest.approx(held, rel=1e-12), (rank, run, row)
                    (lr0, wd0), (lr1, wd1), (_, wd2) = row["groups"]
                    assert (lr0, lr1, wd2) == (1e-2, 5e-3, 0.0), (rank, run, row)
                    assert wd0 == pytest.approx(big_b / (lr0 * n * held), rel=1e-9), (rank, run, row)
                    assert wd1 == pytest.approx(big_b / (lr1 * n * held), rel=1e-9), (rank, run, row)
    output = proc.stdout + proc.stderr  # said on rank zero only
    assert output.count("B = 5 per device x 2 device(s) x 2 accumulation.") == 2, output
    assert "Held at this B: tau_epoch 4 x (20/8)^1 = 10 (batch_exponent=1:" in output
    assert "Held at this B: tau_epoch 4 x (20/8)^-0.5 = 2.53 (batch_exponent=-0.5:" in output
    # the scheduled fits start at the Trainer's accumulation 1; the scheduler's 2 is taken at epoch 0's first step
    assert output.count("at epoch 0, step 0: steps per epoch 24 -> 12; global batch 10 -> 20; accumulation 1 -> 2") == 2
    assert output.count("at epoch 1, step 12: steps per epoch 12 -> 6; global batch 20 -> 40; accumulation 2 -> 4") == 2
    assert "(tau_epoch 4 x (40/8)^1 = 20 held)" in output and "(tau_epoch 4 x (40/8)^-0.5 = 1.789 held)" in output


FOUND_BATCH_RULE = """
import json, sys
import lightning.pytorch as pl
from axes_models import PlantedAccumulatedModel
from tiny_model import make_loader
from ddp_harness import end_process_group
from step_log import StepLog
from lightning_tau import TimescaleCallback


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        timescale = TimescaleCallback(**json.load(f))  # the finder's callback, as its arguments
    log = StepLog(timescale)
    trainer = pl.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=1, accumulate_grad_batches=3,
                         logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, callbacks=[timescale, log])
    trainer.fit(PlantedAccumulatedModel(), make_loader(n=240, batch_size=5))
    with open(f"found{trainer.global_rank}.json", "w") as f:
        json.dump(log.rows, f)
    end_process_group()
"""


@pytest.mark.slow
def test_batch_axis_rule_found_applied_at_ddp_global_batch(tmp_path) -> None:
    # The finder's batch axis measures at the GLOBAL B: one process, the loader's batch 16 accumulated to B = 16, 32,
    # 64 (PlantedAccumulatedModel has no `batch_size`), its best tau_epoch planted at 6 (B / 16)^0.5.
    sizes = (16, 32, 64)
    finder = TimescaleFinder(
        axis="batch_size",
        batch_sizes=sizes,
        tau_epochs=(3.0, 6.0, 12.0, 24.0),
        seeds=(0, 1),
        fraction=1.0,
        trainer_kwargs={"max_epochs": 1, "accelerator": "cpu", "devices": 1},
        root_dir=tmp_path / "find",
        progress=False,
        verbose=False,
    )
    result = finder.fit(PlantedAccumulatedModel, datamodule=PlantedData())
    assert finder.trained_runs == len(sizes) * 4 * 2
    for b, study in zip(sizes, finder.studies):
        records = study.records().values()
        assert len(records) == 4 * 2
        for record in records:
            seen = record["metrics"][-1]
            assert (record["global_batch_size"], record["world_size"]) == (b, 1)  # what the axis measured: B
            assert (seen["seen_batch"], seen["accumulate"]) == (BATCH, b // BATCH)  # as loader 16 x accumulation
            assert record["steps"] == N // b
    assert result.scales == [16.0, 32.0, 64.0] and result.exponent == pytest.approx(0.5, abs=0.02)
    assert result.tau_epoch == pytest.approx(6.0, rel=1e-6)  # the smallest batch's best, the planted 6
    assert result.unbacked is None and result.rule_used is None  # neither rule (0, 1): the measured exponent is used

    # ... and the callback it gives holds tau_epoch at a DDP run's GLOBAL B = 5 per device x 2 ranks x 3 accumulation
    # = 30: not a measured B, nor the per-device 5, nor 15 on one rank. N = 240 (120 a rank = 24 batches of 5): 8 steps.
    callback = result.callback(verbose=False)
    kwargs = {
        "tau_epoch": callback.tau_epoch,
        "batch_exponent": callback.batch_exponent,
        "reference_batch_size": callback.reference_batch_size,
    }
    assert kwargs == {"tau_epoch": result.tau_epoch, "batch_exponent": result.exponent_used, "reference_batch_size": 16}
    (tmp_path / "callback.json").write_text(json.dumps(kwargs))
    proc = run_script(FOUND_BATCH_RULE, tmp_path, "callback.json")
    assert "end_process_group:" not in proc.stderr and "terminate called" not in proc.stderr, proc.stderr
    big_b, n = 30, 240
    held = result.tau_epoch * (big_b / 16) ** result.exponent_used
    assert result.predict(big_b).tau_epoch == pytest.approx(held, rel=1e-12)  # what the result predicts at B = 30
    for rank in (0, 1):
        rows = json.loads((tmp_path / f"found{rank}.json").read_text())
        assert len(rows) == n // big_b, rank
        for row in rows:
            assert (row["world_size"], row["accumulation"]) == (2, 3), (rank, row)
            (lr, wd), (_, no_decay) = row["groups"]
            assert lr == LR and no_decay == 0.0, (rank, row)
            assert wd == pytest.approx(big_b / (lr * n * held), rel=1e-9), (rank, row)  # B = 5 or 15: another wd
            assert row["held"] == pytest.approx(held, rel=1e-12), (rank, row)
            assert (row["B"], row["N"]) == (big_b, n), (rank, row)
    output = proc.stdout + proc.stderr  # said on rank zero only
    assert output.count("B = 5 per device x 2 device(s) x 3 accumulation.") == 1, output
