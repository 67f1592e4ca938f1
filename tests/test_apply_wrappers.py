"""The optimizer wrappers of torch's distributed package and of Lightning are judged by the optimizer inside.

Each wrapper is built for real (a one-process gloo group where it needs one), its AdamW is recognised as
decoupled, and :func:`lightning_tau.apply_timescale` reaches the groups the inner optimizer steps with: a
zero-gradient step multiplies every weight by exactly ``1 - lr_t * wd_t = 1 - 1 / tau_iter`` at every step while a
scheduler moves the lr. Then a real 2-process DDP fit with ``ZeroRedundancyOptimizer`` through the callback.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
from ddp_harness import run_script
from lightning.pytorch.core.optimizer import LightningOptimizer
from torch.distributed.algorithms.model_averaging.averagers import PeriodicModelAverager
from torch.distributed.optim import PostLocalSGDOptimizer, ZeroRedundancyOptimizer
from torch.distributed.optim.named_optimizer import _NamedOptimizer

from lightning_tau import apply_timescale
from lightning_tau.diagnostics import TimescaleTracker
from lightning_tau.optim import decay_kind, unit_rms_updates, unwrap_optimizer

LR, TAU_ITER = 0.1, 20.0


@pytest.fixture
def process_group(tmp_path: Path) -> Iterator[None]:
    """A one-process gloo group (ZeroRedundancyOptimizer and the model averager need one), destroyed after."""
    dist.init_process_group("gloo", store=dist.FileStore(str(tmp_path / "store"), 1), rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def sharded_optimizer(net: torch.nn.Module) -> torch.optim.Optimizer:
    from torch.distributed._shard.sharded_optim import ShardedOptimizer

    return ShardedOptimizer(dict(net.named_parameters()), torch.optim.AdamW, lr=LR, weight_decay=0.1)


WRAPPERS: dict[str, Callable[[torch.nn.Module], torch.optim.Optimizer]] = {
    # `.optim`: the optimizer of this rank's shard; its groups are synced from the wrapper's before each step
    "ZeroRedundancyOptimizer": lambda net: ZeroRedundancyOptimizer(
        net.parameters(), optimizer_class=torch.optim.AdamW, lr=LR, weight_decay=0.1
    ),
    # `.optim`, with the wrapper's own step hooks never set up (it does not call `Optimizer.__init__`)
    "PostLocalSGDOptimizer": lambda net: PostLocalSGDOptimizer(
        torch.optim.AdamW(net.parameters(), lr=LR, weight_decay=0.1), PeriodicModelAverager(period=2, warmup_steps=0)
    ),
    "_NamedOptimizer": lambda net: _NamedOptimizer(
        dict(net.named_parameters()), torch.optim.AdamW, lr=LR, weight_decay=0.1
    ),  # `._optimizer`
    "ShardedOptimizer": sharded_optimizer,  # `._optim`
}


@pytest.mark.parametrize("mode", ["constant", "per_step"])
@pytest.mark.parametrize("name", sorted(WRAPPERS))
def test_timescale_through_torch_distributed_wrapper(name: str, mode: str, process_group: None) -> None:
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 3)
    wrapper = WRAPPERS[name](net)
    inner = unwrap_optimizer(wrapper)
    assert type(inner) is torch.optim.AdamW and inner is not wrapper
    assert decay_kind(wrapper) == "decoupled" and unit_rms_updates(wrapper)
    applied = apply_timescale(wrapper, tau_iter=TAU_ITER, mode=mode)
    tracker = TimescaleTracker(wrapper)  # hooks the optimizer inside too, after apply_timescale's pre-hook
    assert applied.weight_decay == {"pg1": pytest.approx(1 / (LR * TAU_ITER), rel=1e-12)}
    # per_step: the lr moves every step, and the decay follows it; constant: the lr stays at the reference lr
    sched = torch.optim.lr_scheduler.ExponentialLR(wrapper, gamma=0.8 if mode == "per_step" else 1.0)
    used: list[float] = []
    inner.register_step_post_hook(
        lambda o, a, k: used.append(o.param_groups[0]["lr"] * o.param_groups[0]["weight_decay"])
    )
    for step in range(4):
        before = [p.detach().clone() for p in net.parameters()]
        for p in net.parameters():
            p.grad = torch.zeros_like(p)  # AdamW's update is 0: the step is the decay alone
        wrapper.step()
        sched.step()
        assert used[step] == pytest.approx(1 / TAU_ITER, rel=1e-12), (step, used)
        for p, b in zip(net.parameters(), before):
            torch.testing.assert_close(p.detach(), b * (1 - 1 / TAU_ITER), rtol=1e-6, atol=0)
    assert tracker.steps == 4
    assert tracker.init_memory == {"pg1": pytest.approx((1 - 1 / TAU_ITER) ** 4, rel=1e-12)}
    tracker.remove()
    applied.remove()


@pytest.mark.parametrize("coupling", ["lr_ratio", "lr_squared"])
@pytest.mark.parametrize("name", sorted(WRAPPERS))
def test_each_coupling_reaches_optimizer_inside_wrapper(name: str, coupling: str, process_group: None) -> None:
    """Under a falling lr the inner optimizer steps with ``λ_t = λ_ref (η_t / η_ref) ** k`` (k = 1, 2), and a
    zero-gradient step multiplies every weight by ``1 - η_t λ_t``."""
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 3)
    wrapper = WRAPPERS[name](net)
    inner = unwrap_optimizer(wrapper)
    sched = torch.optim.lr_scheduler.ExponentialLR(wrapper, gamma=0.8)
    apply_timescale(wrapper, tau_iter=TAU_ITER, coupling=coupling)
    power = {"lr_ratio": 1, "lr_squared": 2}[coupling]
    used: list[tuple[float, float]] = []
    inner.register_step_post_hook(
        lambda o, a, k: used.append((o.param_groups[0]["lr"], o.param_groups[0]["weight_decay"]))
    )
    for step in range(4):
        before = [p.detach().clone() for p in net.parameters()]
        for p in net.parameters():
            p.grad = torch.zeros_like(p)
        wrapper.step()
        sched.step()
        lr, wd = used[step]
        assert lr == pytest.approx(LR * 0.8**step, rel=1e-12)
        assert wd == pytest.approx((lr / LR) ** power / (LR * TAU_ITER), rel=1e-12), (step, used)
        for p, b in zip(net.parameters(), before):
            torch.testing.assert_close(p.detach(), b * (1 - lr * wd), rtol=1e-6, atol=0)


@pytest.mark.parametrize("mode", ["constant", "per_step"])
def test_zero_redundancy_optimizer_group_added_later_managed_at_every_step(mode: str, process_group: None) -> None:
    # ZeRO copies its shard optimizer's groups back over its own after every step: a decision written into the
    # wrapper alone, inside the shard's step pre-hook, would be lost (the added group kept its own 0.3)
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    wrapper = ZeroRedundancyOptimizer(net[0].parameters(), optimizer_class=torch.optim.AdamW, lr=LR, weight_decay=0.1)
    applied = apply_timescale(wrapper, tau_iter=TAU_ITER, mode=mode)
    used: list[list[float]] = []
    unwrap_optimizer(wrapper).register_step_post_hook(
        lambda o, a, k: used.append([g["lr"] * g["weight_decay"] * TAU_ITER for g in o.param_groups])
    )
    for step in range(4):
        if step == 1:
            wrapper.add_param_group({"params": list(net[1].parameters()), "lr": LR / 4, "weight_decay": 0.3})
        net(torch.randn(5, 4)).square().mean().backward()
        wrapper.step()
        wrapper.zero_grad()
    assert used[0] == [pytest.approx(1.0, rel=1e-12)]
    assert used[1:] == [[pytest.approx(1.0, rel=1e-12)] * 2] * 3  # the added group from its first step on
    assert [g["weight_decay"] for g in wrapper.param_groups] == pytest.approx(
        [1 / (LR * TAU_ITER), 4 / (LR * TAU_ITER)]
    )
    applied.remove()


def test_lightning_optimizer_judged_by_optimizer_inside() -> None:
    inner = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters())
    assert unwrap_optimizer(LightningOptimizer(inner)) is inner
    assert decay_kind(LightningOptimizer(inner)) == "decoupled"


ZERO_FIT = """
import json
import sys
import torch
import lightning.pytorch as pl
from torch.distributed.optim import ZeroRedundancyOptimizer
from tiny_model import TinyModel, make_loader
from ddp_harness import end_process_group
from lightning_tau import TimescaleCallback
from lightning_tau.optim import unwrap_optimizer


class StepLog(pl.Callback):
    # What each step of the optimizer that steps (ZeRO's local AdamW) used, from its post-hook.
    def on_train_start(self, trainer, pl_module):
        self.rows = []
        unwrap_optimizer(trainer.optimizers[0]).register_step_post_hook(
            lambda opt, a, k: self.rows.append([g["lr"] for g in opt.param_groups[:1]]
                                               + [g["lr"] * g["weight_decay"] for g in opt.param_groups]))

    def on_train_end(self, trainer, pl_module):
        with open(f"steps{trainer.global_rank}.json", "w") as f:
            json.dump({"rows": self.rows, "type": type(trainer.optimizers[0]).__name__}, f)


def make(m):
    opt = ZeroRedundancyOptimizer([{"params": [m.hidden.weight, m.head.weight], "weight_decay": 0.1},
                                   {"params": [m.hidden.bias, m.head.bias, m.norm.weight, m.norm.bias],
                                    "weight_decay": 0.0}], optimizer_class=torch.optim.AdamW, lr=1e-2)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=6, eta_min=1e-3)
    return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


if __name__ == "__main__":
    trainer = pl.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=1, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                         callbacks=[TimescaleCallback(tau_iter=40.0, coupling=sys.argv[1], verbose=False), StepLog()])
    trainer.fit(TinyModel(make), make_loader(n=120, batch_size=10))
    end_process_group()
"""


@pytest.mark.slow
@pytest.mark.parametrize(("coupling", "power"), [("per_step", 0), ("lr_ratio", 2)])
def test_zero_redundancy_optimizer_under_ddp_holds_timescale_at_every_step(
    tmp_path: Path, coupling: str, power: int
) -> None:
    """The rate each step used is the coupling's ``(lr_t / lr_ref) ** k / tau_iter`` (k = 0 per_step, 2 lr_ratio)."""
    run_script(ZERO_FIT, tmp_path, coupling)
    for rank in (0, 1):
        result: dict[str, Any] = json.loads((tmp_path / f"steps{rank}.json").read_text())
        assert result["type"] == "ZeroRedundancyOptimizer"
        assert len(result["rows"]) == 6  # 120 samples / (10 per device x 2 devices)
        assert len({round(lr, 12) for lr, _, _ in result["rows"]}) == 6  # the lr moves every step
        for lr, decaying, undecayed in result["rows"]:
            assert decaying == pytest.approx((lr / 1e-2) ** power / 40.0, rel=1e-12)
            assert undecayed == 0.0
