"""lightning_tau.couplings: each coupling's rate against its closed form, the window recursion against the direct
sum, and the β window held in epochs."""

from __future__ import annotations

import math

import pytest

from lightning_tau import timescale
from lightning_tau.couplings import (
    COUPLINGS,
    Ledger,
    beta_for_epochs,
    decay_at,
    ema_window_steps,
    plan,
    rate_at,
    window_direct,
)

LR = 1e-3
STEPS = 500


def warmup_cosine(steps: int = STEPS, warmup: int = 50, floor: float = 0.1) -> list[float]:
    out = []
    for t in range(steps):
        if t < warmup:
            out.append(LR * (t + 1) / warmup)
        else:
            progress = (t - warmup) / (steps - warmup)
            out.append(LR * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))))
    return out


def one_cycle(steps: int = STEPS) -> list[float]:
    peak = steps // 3
    return [LR * (0.04 + 0.96 * t / peak) if t < peak else LR * (1 - (t - peak) / (steps - peak)) for t in range(steps)]


SCHEDULES = {
    "constant": [LR] * STEPS,
    "warmup_cosine": warmup_cosine(),
    "one_cycle": one_cycle(),  # ends at 0: decay to zero
    "linear_to_zero": [LR * (1 - t / STEPS) for t in range(STEPS)],
}
POWER = {"constant": 1, "per_step": 0, "lr_ratio": 2, "lr_squared": 3}
DECAY_POWER = {"constant": 0, "per_step": -1, "lr_ratio": 1, "lr_squared": 2}


@pytest.mark.parametrize("coupling", COUPLINGS)
@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
def test_rate_at_every_step_couplings_closed_form(coupling, schedule):
    tau = 120.0
    for lr in SCHEDULES[schedule]:
        expected = (lr / LR) ** POWER[coupling] / tau if lr > 0 else 0.0
        assert rate_at(coupling, tau, lr, LR) == pytest.approx(expected, rel=1e-12, abs=1e-300)
        # the decay the coupling writes, times the step's lr, is that rate
        wd_ref = 1.0 / (LR * tau)
        if lr > 0:
            assert decay_at(coupling, wd_ref, lr, LR) == pytest.approx(wd_ref * (lr / LR) ** DECAY_POWER[coupling])
            assert lr * decay_at(coupling, wd_ref, lr, LR) == pytest.approx(expected, rel=1e-12)


def test_every_coupling_holds_target_at_reference_lr():
    assert {c: rate_at(c, 250.0, LR, LR) for c in COUPLINGS} == {c: 1 / 250.0 for c in COUPLINGS}


@pytest.mark.parametrize("coupling", COUPLINGS)
@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
def test_window_recursion_matches_direct_sum_over_500_steps(coupling, schedule):
    lrs = SCHEDULES[schedule]
    rates = [rate_at(coupling, 80.0, lr, LR) for lr in lrs]
    ledger = Ledger()
    for t, (lr, rate) in enumerate(zip(lrs, rates)):
        ledger.step(lr, rate)
        if t in (0, 1, 17, 250, STEPS - 1):  # at logging steps along the run, not only at the end
            assert ledger.window_steps == pytest.approx(window_direct(lrs[: t + 1], rates[: t + 1]), rel=1e-9)
    assert ledger.steps == STEPS


def test_ledger_init_memory_and_timescales_match_timescale_module():
    lrs = SCHEDULES["warmup_cosine"]
    wd = 4.0
    ledger = Ledger()
    for lr in lrs:
        ledger.step(lr, lr * wd)
    assert ledger.init_memory == pytest.approx(timescale.init_memory(lrs, wd), rel=1e-9)
    assert ledger.timescales_elapsed == pytest.approx(timescale.timescales_elapsed(lrs, wd), rel=1e-12)


def test_window_by_hand_and_step_decays_everything():
    ledger = Ledger()
    assert math.isnan(ledger.window_steps)
    ledger.step(1.0, 0.5)  # one update, age 0
    assert ledger.window_steps == 0.0
    ledger.step(2.0, 0.5)  # weights 0.5 (age 1) and 2 (age 0)
    assert ledger.window_steps == pytest.approx(0.5 / 2.5)
    ledger.step(1.0, 1.5)  # lr * wd >= 1: nothing before survives
    assert (ledger.window_steps, ledger.init_memory) == (0.0, 0.0)


def test_plan_reports_schedules_timescales_and_epoch_shares():
    lrs = SCHEDULES["one_cycle"]
    p = plan("constant", lrs, lr_ref=LR, tau_iter=100.0, steps_per_epoch=100)
    assert (p.tau_start, p.tau_middle) == pytest.approx((100.0 / 0.04, 100.0 * LR / lrs[250]))
    assert p.tau_end == pytest.approx(100.0 / (lrs[-1] / LR))
    assert p.timescales == pytest.approx(math.fsum(lrs) / LR / 100.0)
    assert len(p.epoch_shares) == 5 and sum(p.epoch_shares) == pytest.approx(1.0)
    ledger = Ledger()
    for lr in lrs:
        ledger.step(lr, rate_at("constant", 100.0, lr, LR))
    assert p.window_epochs == pytest.approx(ledger.window_steps / 100)
    # the direct shares: each update's weight in the final weights, summed per epoch
    weights = []
    for t in range(STEPS):
        c = lrs[t]
        for k in range(t + 1, STEPS):
            c *= 1 - rate_at("constant", 100.0, lrs[k], LR)
        weights.append(c)
    direct = [sum(weights[e * 100 : (e + 1) * 100]) / sum(weights) for e in range(5)]
    assert p.epoch_shares == pytest.approx(direct, rel=1e-9)


def test_plan_per_step_holds_tau_where_lr_moves():
    p = plan("per_step", SCHEDULES["warmup_cosine"], lr_ref=LR, tau_iter=100.0, steps_per_epoch=100)
    assert set(p.tau_iter) == {100.0}
    assert p.timescales == pytest.approx(STEPS / 100.0)


def test_follow_lr_lengthen_window_under_decay_to_zero():
    lrs = SCHEDULES["linear_to_zero"]
    windows = [plan(c, lrs, LR, 60.0, 100).window_epochs for c in ("per_step", "constant", "lr_ratio", "lr_squared")]
    assert windows == sorted(windows) and windows[0] < windows[-1]


def test_beta_for_epochs_holds_window_in_epochs_batch_changes():
    # a quarter epoch at 4000 steps per epoch, then the batch doubles (2000 steps per epoch)
    small_batch, large_batch = beta_for_epochs(0.25, 4000), beta_for_epochs(0.25, 2000)
    assert ema_window_steps(small_batch) == pytest.approx(1000.0)
    assert ema_window_steps(large_batch) == pytest.approx(500.0)
    assert ema_window_steps(large_batch) / 2000 == pytest.approx(ema_window_steps(small_batch) / 4000)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: rate_at("adamc", 1.0, 1.0, 1.0), r"^`rate_at\(coupling='adamc'\)` is not supported\. Use 'constant'"),
        (lambda: decay_at("", 1.0, 1.0, 1.0), r"^`decay_at\(coupling=''\)` is not supported"),
        (lambda: ema_window_steps(1.0), r"`ema_window_steps\(beta=1.0\)` is not valid: use a number in \[0, 1\)"),
        (
            lambda: beta_for_epochs(0.0001, 100),
            r"^`beta_for_epochs\(epochs=0.0001\)` is not valid: 0.0001 epochs of 100 steps is 0.01 steps, under one;"
            r" use at least 0.01 epochs\.$",
        ),
        (lambda: beta_for_epochs(-1, 100), r"^`beta_for_epochs\(epochs=-1\)` is not valid: use a positive number of"),
        (lambda: beta_for_epochs(1, 0), r"^`beta_for_epochs\(steps_per_epoch=0\)` is not valid: use a positive number"),
        (lambda: plan("constant", [], 1e-3, 10.0, 10), r"`plan\(lrs=\[\]\)` is not valid"),
        (lambda: plan("constant", [1e-3], 0.0, 10.0, 10), r"`plan\(lr_ref=0.0\)` is not valid"),
        (
            lambda: plan("constant", [1e-3], 1e-3, -1.0, 10),
            r"^`plan\(tau_iter=-1.0\)` is not valid: use a positive number of steps\.",
        ),
        (
            lambda: plan("constant", [1e-3], 1e-3, 1.0, 0),
            r"^`plan\(steps_per_epoch=0\)` is not valid: use a positive number\.",
        ),
    ],
)
def test_bad_values_one_line_errors_naming_argument(call, match):
    with pytest.raises(ValueError, match=match) as info:
        call()
    assert "\n" not in str(info.value)


def test_beta_of_zero_one_step_window_and_plan_names_coupling():
    assert ema_window_steps(0.0) == 1.0  # [0, 1): no averaging, each step alone
    p = plan("lr_ratio", [LR, 0.0], lr_ref=LR, tau_iter=10.0, steps_per_epoch=1)
    assert p.coupling == "lr_ratio" and p.tau_iter == [10.0, math.inf]  # a step at lr 0 holds no timescale


def test_plan_window_in_epochs_not_in_timescales():
    # tau_iter 40 steps, epochs of 100: a constant lr at the reference holds updates a mean age of (1 - r) / r = 39
    # steps (the 400 steps reach back e^-10 of the way), 0.39 epochs, not 39 / 40 timescales
    p = plan("constant", [LR] * 400, lr_ref=LR, tau_iter=40.0, steps_per_epoch=100)
    assert p.window_epochs == pytest.approx(0.39, rel=1e-3)
    assert p.timescales == pytest.approx(10.0)


def test_decay_at_lr_zero_keeps_reference_decay_per_step_and_follows_lr_otherwise():
    assert decay_at("per_step", 0.1, 0.0, 1e-3) == 0.1  # the step moves nothing: the callback leaves it as is
    assert decay_at("constant", 0.1, 0.0, 1e-3) == 0.1
    assert decay_at("lr_ratio", 0.1, 0.0, 1e-3) == 0.0 and decay_at("lr_squared", 0.1, 0.0, 1e-3) == 0.0
