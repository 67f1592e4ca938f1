"""TimescaleMonitor on a real 2-process DDP fit (gloo, CPU): each key logged once, from rank zero, no collective."""

from __future__ import annotations

import json

import pytest
from ddp_harness import run_script

SCRIPT = """
import json, sys
import torch
import torch.distributed as dist
from tiny_model import TinyModel, make_loader, quiet_trainer
from ddp_harness import end_process_group
from loggers import MemoryLogger
from lightning_tau.diagnostics import TimescaleMonitor

calls = {"collectives": 0}
for name in ("all_reduce", "all_gather", "all_gather_into_tensor", "reduce", "broadcast"):
    original = getattr(dist, name)
    def counted(*args, _original=original, **kwargs):
        calls["collectives"] += 1
        return _original(*args, **kwargs)
    setattr(dist, name, counted)


class CountingMonitor(TimescaleMonitor):
    # Counts collectives issued inside the monitor's per-step hooks.
    inside = 0
    hook_calls = 0
    def _after_optimizer_step(self, *args):  # the per-step optimizer post-hook
        before = calls["collectives"]; super()._after_optimizer_step(*args)
        CountingMonitor.inside += calls["collectives"] - before
        CountingMonitor.hook_calls += 1
    def on_train_batch_end(self, *args):
        before = calls["collectives"]; super().on_train_batch_end(*args)
        CountingMonitor.inside += calls["collectives"] - before


logger = MemoryLogger()  # no rank-zero guard of its own: whatever any rank sends is recorded
monitor = CountingMonitor(2)
trainer = quiet_trainer(accelerator="cpu", devices=2, strategy="ddp", logger=logger, callbacks=[monitor])
trainer.fit(TinyModel(), make_loader(120, 10))
rank = trainer.global_rank
timescale = [r for r in logger.records if any(k.startswith("timescale/") for k in r["keys"])]
state = monitor.state_dict()
with open(sys.argv[1] + f".{rank}", "w") as f:
    json.dump({"records": timescale, "inside": CountingMonitor.inside, "hook_calls": CountingMonitor.hook_calls,
               "state": state,
               "world": trainer.world_size}, f)
end_process_group()
"""


@pytest.mark.slow
def test_logs_each_key_once_from_rank_zero(tmp_path):
    out = tmp_path / "result.json"
    run_script(SCRIPT, tmp_path, str(out))
    rank0 = json.loads((tmp_path / "result.json.0").read_text())
    rank1 = json.loads((tmp_path / "result.json.1").read_text())
    assert rank0["world"] == 2
    # 120 samples / (10 per device x 2 devices) = 6 steps per rank; logged at steps 2, 4, 6
    assert [r["step"] for r in rank0["records"]] == [2, 4, 6]
    for record in rank0["records"]:
        assert len(record["keys"]) == len(set(record["keys"])) == 13  # GROUP_KEYS of test_monitor.py
        assert "timescale/tau_epoch/pg1" in record["keys"]
    assert rank1["records"] == []  # rank 1 sends nothing to the loggers
    assert rank0["hook_calls"] == rank1["hook_calls"] == 6  # the per-step hook ran on every step, on both ranks
    assert rank0["inside"] == rank1["inside"] == 0  # ...and issued no collective, nor did the logging hook
    # both ranks keep the same O(groups) state, so either can be checkpointed
    assert rank0["state"] == rank1["state"]
    assert rank0["state"]["init_memory"]["pg1"] == pytest.approx((1 - 1e-2 * 0.1) ** 6, rel=1e-9)
