"""The callback's decision in one call (lightning_tau/callback_decision.py), on plain torch optimizers."""

from __future__ import annotations

import math

import pytest
import torch

from lightning_tau.callback_decision import MAX_BETA2_STEPS, Decision, checked_beta2, decide_and_write, hold_beta2
from lightning_tau.decide import RunShape
from lightning_tau.target import Target


def test_decide_and_write_changes_no_argument_and_returns_what_the_next_decision_needs() -> None:
    net = torch.nn.Linear(2, 2)
    opt = torch.optim.AdamW(
        [{"params": [net.weight]}, {"params": [net.bias], "weight_decay": 0.05}], lr=1e-3, weight_decay=0.1
    )
    before = {(0, 0): 0.1}  # the group at index 1 was added since
    pinned: dict[tuple[int, int], float] = {}
    decision = decide_and_write(
        [opt],
        RunShape(100),
        Target(tau_epoch=5.0),
        managed_optimizers={0},
        weight_decay_before=before,
        pinned_lrs=pinned,
        scheduled={id(opt)},  # a scheduler with no `initial_lr` (ReduceLROnPlateau): each reference lr is pinned
        measured={},
        declared_steps_per_epoch=None,
    )
    assert before == {(0, 0): 0.1} and pinned == {}
    assert decision.weight_decay_before == {(0, 0): 0.1, (0, 1): 0.05}
    assert decision.pinned_lrs == {(0, 0): 1e-3, (0, 1): 1e-3}
    assert decision.tau_iter == 500.0
    assert [group["weight_decay"] for group in opt.param_groups] == pytest.approx([2.0, 2.0])  # 1 / (1e-3 x 500)


def test_hold_beta2_writes_each_adam_groups_beta2_for_its_optimizers_own_m() -> None:
    first, second = (torch.optim.AdamW(torch.nn.Linear(2, 2).parameters()) for _ in range(2))
    decision = decide_and_write(
        [first, second],
        RunShape(100),
        Target(tau_epoch=5.0),
        managed_optimizers={0, 1},
        weight_decay_before={},
        pinned_lrs={},
        scheduled=set(),
        measured={},
        declared_steps_per_epoch={1: 50},
    )
    assert hold_beta2([first, second], decision, {0, 1}, beta2_epochs=10.0) == {(0, 0): 0.999, (1, 0): 0.998}
    assert [o.param_groups[0]["betas"] for o in (first, second)] == [(0.9, 0.999), (0.9, 0.998)]


def test_checked_beta2_takes_windows_over_one_step_up_to_where_beta2_rounds_to_one() -> None:
    assert checked_beta2(2.0, 1.0) == 0.5
    assert checked_beta2(MAX_BETA2_STEPS, 1.0) == 1 - 2**-53  # the longest window the message names
    assert checked_beta2(math.nextafter(2.0**54, 0), 1.0) == 1 - 2**-53  # past it, still below 1 (held as 2^53)
    with pytest.raises(ValueError, match=r"^`TimescaleCallback\(beta2_epochs=1.8014398509481984e\+16\)` is 1.801e\+16"
                       r" optimizer steps at M=1 steps per epoch, so β₂ = 1 - 1/\(beta2_epochs·M\) rounds to 1 in"
                       r" float64: .* at most 9.007e\+15 at this M \(2\^53 steps"):
        checked_beta2(2.0**54, 1.0)
    assert checked_beta2(math.nextafter(1.0, 2), 1.0) > 0  # just over one step
    with pytest.raises(ValueError, match=r"^`TimescaleCallback\(beta2_epochs=0.5\)`, optimizer 1 is 1 optimizer steps"
                       r" at M=2 steps per epoch, so β₂ = 1 - 1/\(beta2_epochs·M\) = 0 \(<= 0: no average at all\)\."
                       r" Use `beta2_epochs` above 0.5 at this M \(one optimizer step\)\.$"):
        checked_beta2(0.5, 2.0, where=", optimizer 1")


def test_hold_beta2_checks_every_group_before_writing_any_and_names_the_epoch_mid_fit() -> None:
    first, second = (torch.optim.AdamW(torch.nn.Linear(2, 2).parameters(), betas=(0.9, 0.99)) for _ in range(2))
    # optimizer 1 steps 4 times an epoch (declared), the run's M is 100: 0.2 epochs is 20 steps, then 0.8
    shape = RunShape(100, sources=("M = 100 batches.",))
    decision = Decision(shape, 500.0, None, [], [], {1: 4.0}, 500.0, epoch=3)
    with pytest.raises(ValueError, match=r"^`TimescaleCallback\(beta2_epochs=0.2\)` at epoch 3 \(M = 100 batches.\),"
                       r" optimizer 1 is 0.8 optimizer steps at M=4 steps per epoch"):
        hold_beta2([first, second], decision, {0, 1}, beta2_epochs=0.2)
    assert [o.param_groups[0]["betas"] for o in (first, second)] == [(0.9, 0.99), (0.9, 0.99)]  # nothing written
