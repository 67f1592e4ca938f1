"""Every recognised decoupled optimizer gets the closed-form weight decay through the callback and `apply_timescale`.

``tests/test_optimizer_families.py`` proves by a zero-gradient step that each optimizer decays decoupled; here each
one runs a real Lightning fit with ``TimescaleCallback`` (the value every optimizer step used, read in a step
post-hook) and a hand-written loop with :func:`lightning_tau.apply_timescale`.
"""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl
import pytest
import torch
from tiny_model import quiet_trainer
from optimizers import DECOUPLED_FACTORIES, matrix_params, zero_grad_step
from torch.utils.data import DataLoader, TensorDataset

from lightning_tau import TimescaleCallback, apply_timescale

TAU_EPOCH, N, B = 5.0, 64, 16  # M = 4 optimizer steps per epoch, tau_iter = 20
PAGED_ON_CPU = "ignore:Paged optimizers are not supported on CPU:UserWarning"
TORCHAO_HASH = "ignore:.*does not implement _stable_hash_for_caching:UserWarning"


def names() -> list[Any]:
    # torchao compiles its step with torch.compile (about 20 s on a cold inductor cache): marked slow, still run in CI
    return [pytest.param(n, marks=pytest.mark.slow) if n.startswith("torchao.") else n for n in DECOUPLED_FACTORIES]


class Matrix(pl.LightningModule):
    """One 64 x 64 weight (no bias): large enough for the 8-bit states, 2-D for Muon, one shape for torchao."""

    def __init__(self, make: Any) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(64, 64, generator=torch.Generator().manual_seed(0)) / 8)
        self.make = make
        self.used: list[tuple[float, float]] = []

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.mse_loss(x @ self.weight, y)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        optimizer = self.make([self.weight])
        optimizer.register_step_post_hook(
            lambda opt, args, kwargs: self.used.append(
                (float(opt.param_groups[0]["lr"]), float(opt.param_groups[0]["weight_decay"]))
            )
        )
        return optimizer


def data() -> DataLoader:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(N, 64, generator=g)
    return DataLoader(TensorDataset(x, x @ torch.randn(64, 64, generator=g) / 8), batch_size=B)


@pytest.mark.filterwarnings(PAGED_ON_CPU)
@pytest.mark.filterwarnings(TORCHAO_HASH)
@pytest.mark.parametrize("name", names())
@pytest.mark.slow
def test_fit_through_callback_writes_closed_form_at_every_step(name: str) -> None:
    model = Matrix(DECOUPLED_FACTORIES[name])
    callback = TimescaleCallback(tau_epoch=TAU_EPOCH, verbose=False, monitor=False)
    quiet_trainer(callbacks=[callback], max_epochs=2).fit(model, data())
    lr = model.used[0][0]
    assert len(model.used) == 8
    assert [wd for _, wd in model.used] == pytest.approx([B / (lr * N * TAU_EPOCH)] * 8, rel=1e-6)
    assert callback.groups[0].decays


@pytest.mark.filterwarnings(PAGED_ON_CPU)
@pytest.mark.filterwarnings(TORCHAO_HASH)
@pytest.mark.parametrize("name", names())
def test_apply_timescale_writes_closed_form_and_step_decays_by_it(name: str) -> None:
    params = matrix_params()[:1]
    optimizer = DECOUPLED_FACTORIES[name](params)
    lr = float(optimizer.param_groups[0]["lr"])
    applied = apply_timescale(optimizer, tau_epoch=TAU_EPOCH, dataset_size=N, batch_size=B)
    expected = B / (lr * N * TAU_EPOCH)
    assert applied.tau_iter == pytest.approx(TAU_EPOCH * N / B)
    assert applied.weight_decay == {"pg1": pytest.approx(expected)}
    before = zero_grad_step(optimizer, params)  # the written value is the one the step decays by
    torch.testing.assert_close(params[0].detach(), before[0] * (1 - lr * expected), rtol=1e-6, atol=0)


def test_apply_timescale_per_step_in_hand_written_loop_holds_lr_times_wd() -> None:
    net = torch.nn.Linear(8, 8)
    optimizer = torch.optim.AdamW(
        [{"params": [net.weight]}, {"params": [net.bias], "weight_decay": 0.0}], lr=1e-2, weight_decay=0.1
    )
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=12, eta_min=1e-3)  # scheduler first
    applied = apply_timescale(optimizer, tau_iter=40.0, mode="per_step")
    used: list[tuple[float, float, float]] = []
    optimizer.register_step_post_hook(
        lambda opt, a, k: used.append(
            (opt.param_groups[0]["lr"], opt.param_groups[0]["weight_decay"], opt.param_groups[1]["weight_decay"])
        )
    )
    for _ in range(12):
        net(torch.randn(4, 8)).square().mean().backward()
        optimizer.step()
        optimizer.zero_grad()
        scheduler.step()
    assert len({round(lr, 9) for lr, _, _ in used}) > 6  # the lr really moved
    assert [lr * wd for lr, wd, _ in used] == pytest.approx([1 / 40.0] * 12)
    assert all(wd_bias == 0.0 for _, _, wd_bias in used)
    applied.remove()  # the hook is gone: the next step keeps the last value
    last = optimizer.param_groups[0]["weight_decay"]
    scheduler.step()
    optimizer.step()
    assert optimizer.param_groups[0]["weight_decay"] == last


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"tau_epoch": 5.0}, r"apply_timescale\(tau_epoch=5.0\)` needs `dataset_size` and `batch_size`"),
        ({"tau_epoch": 5.0, "dataset_size": 100, "batch_size": 2.5}, r"batch_size=2.5\)` is not valid"),
        ({"tau_epoch": 0.01, "dataset_size": 100, "batch_size": 10}, r"Use `tau_epoch` above 0.1"),
        ({"tau_iter": 10.0, "mode": "sometimes"}, r"apply_timescale\(mode='sometimes'\)` is not supported"),
        ({"tau_iter": 10.0, "tau_epoch": 1.0}, r"exactly one of `tau_epoch` and `tau_iter`"),
    ],
)
def test_apply_timescale_rejects_bad_arguments_before_writing(kwargs: dict[str, Any], match: str) -> None:
    optimizer = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters(), lr=1e-3, weight_decay=0.1)
    with pytest.raises(ValueError, match=match):
        apply_timescale(optimizer, **kwargs)
    assert optimizer.param_groups[0]["weight_decay"] == 0.1


def test_apply_timescale_refuses_coupled_decay_and_says_what_to_do() -> None:
    optimizer = torch.optim.Adam(torch.nn.Linear(2, 2).parameters(), weight_decay=0.1)
    with pytest.raises(ValueError, match=r"`apply_timescale` needs decoupled.*coupled L2.*use an optimizer with"):
        apply_timescale(optimizer, tau_iter=10.0)


@pytest.mark.slow
def test_callback_refuses_unknown_optimizer_until_it_declared() -> None:
    from lightning_tau import register_decay_kind

    class MyAdamW(torch.optim.Optimizer):  # decays decoupled, but nothing tells the package so
        def __init__(self, params: Any, lr: float = 1e-2, weight_decay: float = 0.1) -> None:
            super().__init__(params, {"lr": lr, "weight_decay": weight_decay})

        @torch.no_grad()
        def step(self, closure: Any = None) -> None:
            if closure is not None:
                with torch.enable_grad():
                    closure()
            for group in self.param_groups:
                for p in group["params"]:
                    p.mul_(1 - group["lr"] * group["weight_decay"])
                    if p.grad is not None:
                        p.add_(p.grad.sign(), alpha=-group["lr"])

    trainer = quiet_trainer(callbacks=[TimescaleCallback(tau_epoch=TAU_EPOCH)], max_epochs=1)
    with pytest.raises(
        ValueError, match=r"not known to decay decoupled.*register_decay_kind\(MyAdamW, \"decoupled\"\)"
    ):
        trainer.fit(Matrix(lambda p: MyAdamW(p)), data())
    register_decay_kind(MyAdamW, "decoupled")
    model = Matrix(lambda p: MyAdamW(p))
    quiet_trainer(callbacks=[TimescaleCallback(tau_epoch=TAU_EPOCH, verbose=False)], max_epochs=1).fit(model, data())
    assert [wd for _, wd in model.used] == pytest.approx([B / (1e-2 * N * TAU_EPOCH)] * 4)
