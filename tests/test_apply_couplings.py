"""Every coupling writes its closed form ``λ_t = couplings.decay_at(coupling, λ_ref, η_t, η_ref)`` at every step.

``TimescaleCallback(coupling=...)`` and :func:`lightning_tau.apply_timescale` write it from the step pre-hook; a step
post-hook reads what each step used, under warm-up + cosine (``LambdaLR`` and ``SequentialLR``), ``OneCycleLR``, a
constant lr and a linear decay to zero. The reference ``η_ref`` is the group's base lr (``max_lr`` under OneCycle),
``λ_ref = 1 / (η_ref tau_iter)``, and a step at ``η_t = 0`` keeps the decay in force (it moves nothing).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import pytest
import torch
from tiny_model import TinyModel, make_loader, quiet_trainer

from lightning_tau import TimescaleCallback, apply_timescale
from lightning_tau.couplings import COUPLINGS, decay_at, plan

TAU_ITER, LR, STEPS = 40.0, 1e-2, 24
pytestmark = pytest.mark.filterwarnings("ignore:.*less than one EMA timescale")
Schedule = Callable[[torch.optim.Optimizer], torch.optim.lr_scheduler.LRScheduler]


def warmup_cosine(opt: torch.optim.Optimizer) -> torch.optim.lr_scheduler.LRScheduler:
    # the first step runs at lr 0: its decay is left as is
    warm = 4
    return torch.optim.lr_scheduler.LambdaLR(
        opt,
        lambda t: t / warm if t < warm else 0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * (t - warm) / (STEPS - warm))),
    )


def sequential(opt: torch.optim.Optimizer) -> torch.optim.lr_scheduler.LRScheduler:
    warm = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=4)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=STEPS - 4, eta_min=LR * 0.05)
    return torch.optim.lr_scheduler.SequentialLR(opt, [warm, cosine], milestones=[4])


def one_cycle(opt: torch.optim.Optimizer) -> torch.optim.lr_scheduler.LRScheduler:
    return torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=LR, total_steps=STEPS)


def constant(opt: torch.optim.Optimizer) -> torch.optim.lr_scheduler.LRScheduler:
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda t: 1.0)


def to_zero(opt: torch.optim.Optimizer) -> torch.optim.lr_scheduler.LRScheduler:
    # linear decay reaching 0 two steps before the end: the last steps run at lr 0
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda t: max(0.0, 1 - t / (STEPS - 3)))


SCHEDULES: dict[str, Schedule] = {
    "warmup_cosine": warmup_cosine,
    "sequential": sequential,
    "one_cycle": one_cycle,
    "constant": constant,
    "to_zero": to_zero,
}


#: λ_t / λ_ref as a function of η_t / η_ref, written out here independently of `couplings.decay_at`
CLOSED_FORM: dict[str, Callable[[float], float]] = {
    "constant": lambda ratio: 1.0,
    "per_step": lambda ratio: 1 / ratio,
    "lr_ratio": lambda ratio: ratio,
    "lr_squared": lambda ratio: ratio**2,
}


def assert_closed_form(coupling: str, used: list[tuple[float, float]], lr_ref: float) -> None:
    """Every step's decay is the coupling's closed form at that step's lr; at lr 0 the one in force stays."""
    assert len(used) == STEPS
    weight_decay_ref = 1 / (lr_ref * TAU_ITER)
    in_force = weight_decay_ref  # what the decision wrote before the first step
    for step, (lr, wd) in enumerate(used):
        if lr > 0:
            in_force = weight_decay_ref * CLOSED_FORM[coupling](lr / lr_ref)
            assert decay_at(coupling, weight_decay_ref, lr, lr_ref) == pytest.approx(in_force, rel=1e-12)  # type: ignore[arg-type]
        assert wd == pytest.approx(in_force, rel=1e-12, abs=0), (coupling, step, lr, wd)


def post_hook_log(optimizer: torch.optim.Optimizer) -> list[tuple[float, float]]:
    used: list[tuple[float, float]] = []
    optimizer.register_step_post_hook(
        lambda o, a, k: used.append((float(o.param_groups[0]["lr"]), float(o.param_groups[0]["weight_decay"])))
    )
    return used


@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
@pytest.mark.parametrize("coupling", COUPLINGS)
def test_timescale_writes_each_couplings_closed_form_at_every_step(coupling: str, schedule: str) -> None:
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 3)
    opt = torch.optim.AdamW(net.parameters(), lr=LR, weight_decay=0.1)
    sched = SCHEDULES[schedule](opt)  # first: the reference lr is the group's `initial_lr` / `max_lr`
    applied = apply_timescale(opt, tau_iter=TAU_ITER, coupling=coupling)
    assert applied.coupling == coupling and applied.groups[0].reference_lr == LR
    used = post_hook_log(opt)
    for _ in range(STEPS):
        net(torch.randn(2, 4)).sum().backward()
        opt.step()
        sched.step()
    distinct = len({lr for lr, _ in used})
    assert distinct == 1 if schedule == "constant" else distinct > STEPS // 2  # the lr moves (or stays)
    assert_closed_form(coupling, used, LR)
    if schedule in ("warmup_cosine", "to_zero"):
        assert any(lr == 0 for lr, _ in used)  # the lr-0 rule is exercised


def scheduled_model(schedule: Schedule) -> TinyModel:
    """A model whose one AdamW group (its matrices) the schedule drives; ``model.used`` logs every step."""

    def make(m: torch.nn.Module) -> Any:
        opt = torch.optim.AdamW([p for p in m.parameters() if p.ndim > 1], lr=LR, weight_decay=0.1)
        model.used = post_hook_log(opt)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": schedule(opt), "interval": "step"}}

    model = TinyModel(make)
    return model


@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
@pytest.mark.parametrize("coupling", COUPLINGS)
@pytest.mark.slow
def test_callback_writes_each_couplings_closed_form_at_every_step(coupling: str, schedule: str) -> None:
    model = scheduled_model(SCHEDULES[schedule])
    cb = TimescaleCallback(tau_iter=TAU_ITER, coupling=coupling, verbose=False, monitor=False)
    quiet_trainer(callbacks=[cb], max_steps=STEPS, max_epochs=-1).fit(model, make_loader(n=120, batch_size=10))
    assert cb.coupling == coupling and cb.groups[0].reference_lr == LR
    assert_closed_form(coupling, model.used, LR)


@pytest.mark.parametrize(("mode", "coupling"), [("per_step", None), ("per_step", "per_step"), (None, "per_step")])
def test_mode_per_step_per_step_coupling(mode: str | None, coupling: str | None) -> None:
    cb = TimescaleCallback(tau_iter=TAU_ITER, mode=mode, coupling=coupling)  # type: ignore[arg-type]
    assert (cb.coupling, cb.mode) == ("per_step", "per_step")


def test_default_constant_coupling() -> None:
    cb = TimescaleCallback(tau_iter=TAU_ITER)
    assert (cb.coupling, cb.mode) == ("constant", "constant")
    assert TimescaleCallback(tau_iter=TAU_ITER, coupling="lr_ratio").mode == "per_step"  # written every step


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"coupling": "adamc"}, r"^`TimescaleCallback\(coupling='adamc'\)` is not supported\. Use 'constant', "),
        ({"coupling": 1}, r"^`TimescaleCallback\(coupling=1\)` is not supported"),
        ({"mode": "lr_ratio"}, r"^`TimescaleCallback\(mode='lr_ratio'\)` is not supported\. Use 'constant' or"),
        (
            {"mode": "per_step", "coupling": "lr_ratio"},
            r"^`TimescaleCallback\(mode='per_step', coupling='lr_ratio'\)` disagree: `mode` is the older name of"
            r" `coupling`; give only `coupling='lr_ratio'`\.$",
        ),
        ({"mode": "constant", "coupling": "per_step"}, r"disagree"),
    ],
)
def test_bad_couplings_one_line_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        TimescaleCallback(tau_iter=TAU_ITER, **kwargs)
    assert "\n" not in str(info.value)
    net = torch.nn.Linear(2, 2)
    opt = torch.optim.AdamW(net.parameters(), lr=LR, weight_decay=0.1)
    with pytest.raises(ValueError, match=message.replace("TimescaleCallback", "apply_timescale")):
        apply_timescale(opt, tau_iter=TAU_ITER, **kwargs)
    assert opt.param_groups[0]["weight_decay"] == 0.1  # refused before anything was written


@pytest.mark.parametrize("coupling", COUPLINGS)
@pytest.mark.slow
def test_callbacks_plan_plan_of_lrs_run_used(coupling: str) -> None:
    """The pre-flight look-ahead of the run's own scheduler gives the plan of the lrs the steps really used."""
    model = scheduled_model(warmup_cosine)
    cb = TimescaleCallback(tau_iter=TAU_ITER, coupling=coupling, verbose=False, monitor=False)
    quiet_trainer(callbacks=[cb], max_steps=STEPS, max_epochs=-1).fit(model, make_loader(n=120, batch_size=10))
    used_lrs = [lr for lr, _ in model.used]
    expected = plan(coupling, used_lrs, lr_ref=LR, tau_iter=TAU_ITER, steps_per_epoch=12)  # type: ignore[arg-type]
    assert cb.plans[(0, 0)] == expected
    assert cb.groups[0].planned_timescales == expected.timescales


@pytest.mark.slow
def test_pre_flight_shows_plan_and_every_ema_window(caplog: pytest.LogCaptureFixture) -> None:
    def make(m: torch.nn.Module) -> Any:
        opt = torch.optim.AdamW([p for p in m.parameters() if p.ndim > 1], lr=LR, weight_decay=0.1, betas=(0.9, 0.99))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": one_cycle(opt), "interval": "step"}}

    from lightning.pytorch.callbacks import EMAWeightAveraging

    cb = TimescaleCallback(tau_iter=TAU_ITER, coupling="lr_squared", monitor=False)
    ema = EMAWeightAveraging(decay=0.95, update_every_n_steps=2)
    with caplog.at_level("INFO"):
        quiet_trainer(callbacks=[cb, ema], max_steps=STEPS, max_epochs=-1).fit(TinyModel(make), make_loader(n=120))
    said = caplog.text
    p = cb.plans[(0, 0)]
    row = (
        f"  pg1   | {p.tau_start:.4g} | {p.tau_middle:.4g} | {p.tau_end:.4g} | {p.timescales:.4g} |"
        f" {p.init_memory:.2g} | {p.window_epochs:.3g}"
    )
    assert "Plan under coupling='lr_squared' and the run's lr schedule" in said
    assert re.sub(r" +", " ", row) in re.sub(r" +", " ", said)
    assert p.tau_start > 1e3 * TAU_ITER and p.tau_end > p.tau_middle  # OneCycle starts and ends far below max_lr
    lines = {line.split("|")[0].strip(): [c.strip() for c in line.split("|")[1:]] for line in said.splitlines()}
    # M = 12 steps per epoch, B = 10
    assert lines["AdamW tau (pg1)"] == ["40", "3.333", "400", ""]
    assert lines["Adam beta2 (pg1)"] == ["100", "8.333", "1,000", "betas[1]=0.99"]
    assert lines["model EMA (EMAWeightAveraging)"] == ["40", "3.333", "400", "avg_fn's decay=0.95, every 2 steps"]
