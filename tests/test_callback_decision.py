"""The callback's decision in one call (lightning_tau/callback_decision.py), on plain torch optimizers."""

from __future__ import annotations

import pytest
import torch

from lightning_tau.callback_decision import decide_and_write, hold_beta2
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
