"""The per-step write is a torch step pre-hook on the optimizer: it holds however the loop steps the optimizer.

``TimescaleCallback(mode="per_step")`` and :func:`lightning_tau.apply_timescale` share one write
(:func:`lightning_tau.apply.write_coupled`) run from a step pre-hook, so manual optimization stepping the raw
optimizer is covered, each step gets exactly one write, and a param group added with ``add_param_group`` is
managed from its first step. Every value is read at every step from a step post-hook (what the step used).
"""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl
import pytest
import torch
from tiny_model import TinyModel, make_loader, quiet_trainer

from lightning_tau import TimescaleCallback, apply_timescale

TAU_ITER, LR = 50.0, 1e-2


class CountingGroup(dict):
    """A param group that counts how often its ``weight_decay`` is written (torch keeps the dict it is given)."""

    writes = 0

    def __setitem__(self, key: str, value: Any) -> None:
        if key == "weight_decay":
            self.writes += 1
        super().__setitem__(key, value)


def cosine_adamw(m: torch.nn.Module, total: int) -> dict[str, Any]:
    groups = [CountingGroup(params=list(m.parameters()), weight_decay=0.1)]
    opt = torch.optim.AdamW(groups, lr=LR)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total, eta_min=LR * 0.05)
    return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


class StepLog(pl.Callback):
    """Per optimizer step, from a post-hook: ``(lr, weight_decay, writes since the last step)`` of group 0."""

    def __init__(self) -> None:
        self.steps: list[tuple[float, float, int]] = []
        self._handles: list[Any] = []
        self._seen = 0

    def on_train_start(self, trainer: pl.Trainer, pl_module: Any) -> None:
        self._seen = getattr(trainer.optimizers[0].param_groups[0], "writes", 0)
        self._handles = [opt.register_step_post_hook(self._post) for opt in trainer.optimizers]

    def _post(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        group = optimizer.param_groups[0]
        writes = getattr(group, "writes", 0)
        self.steps.append((float(group["lr"]), float(group["weight_decay"]), writes - self._seen))
        self._seen = writes

    def on_train_end(self, trainer: pl.Trainer, pl_module: Any) -> None:
        for handle in self._handles:
            handle.remove()


class RawManualModel(TinyModel):
    """Manual optimization that steps the raw torch optimizer, bypassing Lightning's optimizer wrapper."""

    def __init__(self, make_optimizer: Any) -> None:
        super().__init__(make_optimizer)
        self.automatic_optimization = False

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        opt = self.optimizers(use_pl_optimizer=False)
        assert type(opt) is torch.optim.AdamW  # the raw optimizer: Lightning's hooks do not run around its step
        sched = self.lr_schedulers()
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self(x), y)
        opt.zero_grad()
        self.manual_backward(loss)
        opt.step()
        sched.step()
        return loss


def assert_every_step_holds(log: StepLog, count: int) -> None:
    assert len(log.steps) == count
    assert len({round(lr, 12) for lr, _, _ in log.steps}) == count  # the lr moves every step
    for step, (lr, wd, _) in enumerate(log.steps):
        assert lr * wd == pytest.approx(1 / TAU_ITER, rel=1e-12), (step, lr, wd)


@pytest.mark.slow
def test_per_step_holds_at_every_step_of_manual_optimization_with_raw_optimizer() -> None:
    log, cb = StepLog(), TimescaleCallback(tau_iter=TAU_ITER, mode="per_step", verbose=False)
    trainer = quiet_trainer(callbacks=[log, cb], max_epochs=2)
    trainer.fit(RawManualModel(lambda m: cosine_adamw(m, total=24)), make_loader(n=120, batch_size=10))
    assert_every_step_holds(log, 24)  # 12 steps per epoch, two epochs
    # one per-step write per step, however it is stepped; an epoch's first step also sees the decision (re-)written
    # at train start and at the epoch's start, which must come before that step's own write
    assert [writes for _, _, writes in log.steps] == [2] + [1] * 11 + [2] + [1] * 11


@pytest.mark.slow
def test_per_step_writes_once_per_automatic_step_and_second_fit_adds_no_hook() -> None:
    class SameOptimizer(TinyModel):  # hands the same optimizer to every fit: a hook left behind would write twice
        def configure_optimizers(self) -> Any:
            if not hasattr(self, "_config"):
                self._config = cosine_adamw(self, total=24)
            return self._config

    model, cb = SameOptimizer(), TimescaleCallback(tau_iter=TAU_ITER, mode="per_step", verbose=False)
    for fit in range(2):
        log = StepLog()
        quiet_trainer(callbacks=[log, cb], max_steps=12).fit(model, make_loader(n=120, batch_size=10))
        assert_every_step_holds(log, 12)
        # the first step also sees the decision written at train start, then one write per step
        assert [writes for _, _, writes in log.steps] == [2] + [1] * 11, fit
    opt = model._config["optimizer"]
    before = opt.param_groups[0]["weight_decay"]
    opt.step()  # after the fit: no hook of the callback is left on the optimizer
    assert opt.param_groups[0]["weight_decay"] == before


@pytest.mark.slow
def test_failed_fit_leaves_no_hook_on_optimizer() -> None:
    class Fails(TinyModel):
        def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
            if self.global_step == 2:
                raise RuntimeError("boom")
            return super().training_step(batch, batch_idx)

    model = Fails(lambda m: cosine_adamw(m, total=24))
    trainer = quiet_trainer(callbacks=[TimescaleCallback(tau_iter=TAU_ITER, mode="per_step", verbose=False)])
    with pytest.raises(RuntimeError, match="boom"):
        trainer.fit(model, make_loader(n=120, batch_size=10))
    opt = trainer.optimizers[0]
    opt.param_groups[0]["lr"] = 0.5 * LR
    opt.param_groups[0].writes = 0
    opt.step()
    assert opt.param_groups[0].writes == 0


# --- apply_timescale: a group added with `add_param_group` is managed from its first step ---------------------------


def net_and_extra() -> tuple[torch.nn.Linear, torch.nn.Linear]:
    torch.manual_seed(0)
    return torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)


@pytest.mark.parametrize("mode", ["constant", "per_step"])
def test_timescale_manages_group_added_later_from_first_step(mode: str) -> None:
    net, extra = net_and_extra()
    opt = torch.optim.AdamW([{"params": net.parameters(), "name": "net"}], lr=LR, weight_decay=0.1)
    sched = torch.optim.lr_scheduler.LinearLR(opt, start_factor=1.0, end_factor=0.2, total_iters=12)
    applied = apply_timescale(opt, tau_iter=TAU_ITER, mode=mode)
    used: list[list[tuple[str, float, float, float]]] = []
    opt.register_step_post_hook(
        lambda o, a, k: used.append(
            [(g["name"], g["lr"], g["weight_decay"], g.get("initial_lr")) for g in o.param_groups]
        )
    )
    for step in range(12):
        if step == 4:  # unfreeze: a new group at half the lr, with a placeholder decay (replaced) ...
            opt.add_param_group({"params": extra.parameters(), "name": "extra", "lr": LR / 2, "initial_lr": LR / 2})
        if step == 6:  # ... and one that must stay undecayed
            opt.add_param_group({"params": [torch.nn.Parameter(torch.ones(3))], "name": "norm", "weight_decay": 0.0})
        for p in (*net.parameters(), *extra.parameters()):
            p.grad = torch.ones_like(p)
        opt.step()
        sched.step()
    assert [len(groups) for groups in used] == [1] * 4 + [2] * 2 + [3] * 6
    for groups in used:  # at every step, every decaying group holds its timescale
        for name, lr, wd, initial_lr in groups:
            if name == "norm":
                assert wd == 0.0
            else:
                ref = lr if mode == "per_step" else initial_lr
                assert lr * wd == pytest.approx(lr / ref / TAU_ITER, rel=1e-12), (name, lr, wd)
    # the decision at each group's reference lr (per_step rescales it at each step's lr)
    expected = {"net": 1 / (LR * TAU_ITER), "extra": 2 / (LR * TAU_ITER), "norm": 0.0}
    assert applied.weight_decay == pytest.approx(expected, rel=1e-12)
    assert [g.name for g in applied.groups] == ["net", "extra", "norm"]
    assert [g.managed for g in applied.groups] == [True, True, False]
    applied.remove()
    opt.add_param_group({"params": [torch.nn.Parameter(torch.ones(2))], "name": "late", "weight_decay": 0.3})
    opt.step()
    assert opt.param_groups[-1]["weight_decay"] == 0.3  # removed: groups added later are left alone


def test_timescale_refuses_added_group_it_cannot_decide_before_step() -> None:
    net, extra = net_and_extra()
    opt = torch.optim.AdamW(net.parameters(), lr=LR, weight_decay=0.1)
    apply_timescale(opt, tau_iter=TAU_ITER)
    opt.add_param_group({"params": extra.parameters(), "lr": 0.0})
    before = extra.weight.detach().clone()
    extra.weight.grad = torch.ones_like(extra.weight)
    with pytest.raises(ValueError, match=r"`apply_timescale`, for a param group added with `add_param_group`.*'pg2'"):
        opt.step()
    assert torch.equal(extra.weight, before)
