"""The callback's decision in one call (lightning_tau/callback_decision.py), on plain torch optimizers."""

from __future__ import annotations

import pytest
import torch

from lightning_tau.callback_decision import Decision, decide_and_write, decoupled_groups, keep_plans
from lightning_tau.decide import GroupTimescale, RunShape
from lightning_tau.target import Target


def test_decide_and_write_changes_no_argument_and_returns_what_next_decision_needs() -> None:
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


def test_decoupled_groups_refuses_adamw_whose_groups_all_have_zero_weight_decay() -> None:
    net = torch.nn.Linear(2, 2)
    none_decay = torch.optim.AdamW([{"params": [net.weight]}, {"params": [net.bias]}], weight_decay=0.0)
    with pytest.raises(ValueError, match=r"^`TimescaleCallback` found no AdamW param group with `weight_decay > 0`"):
        decoupled_groups([none_decay], skip_unsupported=False, warn=pytest.fail)
    one_decays = torch.optim.AdamW(
        [{"params": [net.weight], "weight_decay": 0.1}, {"params": [net.bias]}], weight_decay=0.0
    )
    assert decoupled_groups([one_decays], skip_unsupported=False, warn=pytest.fail) == ({0}, {(0, 0): 0.1, (0, 1): 0.0})


def test_under_reduce_lr_on_plateau_reference_lr_stays_first_seen() -> None:
    # the plateau scheduler lowers `lr` and sets no `initial_lr`: a later decision keeps the lr pinned at the first
    # one as the reference, so the decay is not raised to undo the lowered lr
    opt = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters(), lr=1e-3, weight_decay=0.1)
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.1, patience=0)
    args = dict(managed_optimizers={0}, scheduled={id(opt)}, measured={}, declared_steps_per_epoch=None)
    first = decide_and_write([opt], RunShape(100), Target(tau_epoch=5.0), weight_decay_before={}, pinned_lrs={}, **args)
    for loss in (1.0, 2.0):  # no improvement: the lr drops tenfold
        plateau.step(loss)
    assert opt.param_groups[0]["lr"] == pytest.approx(1e-4)
    again = decide_and_write(
        [opt],
        RunShape(100),
        Target(tau_epoch=5.0),
        weight_decay_before=first.weight_decay_before,
        pinned_lrs=first.pinned_lrs,
        **args,
    )
    assert first.pinned_lrs == again.pinned_lrs == {(0, 0): 1e-3}
    assert opt.param_groups[0]["weight_decay"] == pytest.approx(2.0)  # 1 / (1e-3 x 500), not 1 / (1e-4 x 500)


def test_decoupled_groups_refuses_or_skips_with_reason_optimizers_it_cannot_manage() -> None:
    class Unknown(torch.optim.Optimizer):  # no decay kind registered for it
        def __init__(self, params) -> None:
            super().__init__(params, {"lr": 0.1, "weight_decay": 0.1})

    net = torch.nn.Linear(2, 2)
    adam = torch.optim.Adam(net.parameters(), weight_decay=0.1)  # coupled (L2)
    with pytest.raises(ValueError, match=r"^`TimescaleCallback` needs decoupled weight decay, but optimizer 0 \(torch"):
        decoupled_groups([adam], skip_unsupported=False, warn=pytest.fail)
    said: list[str] = []
    optimizers = [adam, Unknown(net.parameters()), torch.optim.AdamW(net.parameters())]
    managed = decoupled_groups(optimizers, skip_unsupported=True, warn=said.append)
    assert managed == ({2}, {(2, 0): 0.01})  # AdamW's default weight decay
    assert said == [
        "`TimescaleCallback(skip_unsupported_optimizers=True)` leaves optimizer 0 (Adam) alone: its weight decay is"
        " coupled (L2).",
        "`TimescaleCallback(skip_unsupported_optimizers=True)` leaves optimizer 1 (Unknown) alone: its weight decay is"
        " not known to be decoupled (see `register_decay_kind`).",
    ]


def test_all_zero_refusal_says_what_to_do() -> None:
    zero = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters(), weight_decay=0.0)
    with pytest.raises(ValueError) as info:
        decoupled_groups([zero], skip_unsupported=False, warn=pytest.fail)
    assert str(info.value) == (
        "`TimescaleCallback` found no AdamW param group with `weight_decay > 0` to manage (optimizers: ['AdamW'])."
        " Use `torch.optim.AdamW` and give the groups that should decay a positive `weight_decay` (any value: the"
        " callback replaces it)."
    )


def test_decide_and_write_holds_tau_epoch_at_this_b_under_batch_rule_and_says_so_it_cannot() -> None:
    opt = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters(), lr=1e-3)
    held = _decide(opt, Target(tau_epoch=4.0, batch_exponent=1.0, reference_batch_size=2))
    assert (held.tau_epoch, held.tau_iter) == (8.0, 800.0)  # 4 x (4 / 2)^1 epochs of 100 steps
    assert opt.param_groups[0]["weight_decay"] == pytest.approx(1 / (1e-3 * 800.0))
    with pytest.raises(ValueError, match=r"\(The tau_epoch held at this B: tau_epoch 0.001 x \(4/2\)\^-1 = 0.0005"):
        _decide(opt, Target(tau_epoch=1e-3, batch_exponent=-1.0, reference_batch_size=2))
    rules = dict(size_exponent=-0.5, reference_dataset_size=100, batch_exponent=1, reference_batch_size=2)
    both = Target(tau_epoch=1e-3, **rules)
    with pytest.raises(ValueError, match=r"held at this N and B: tau_epoch 0.001 x \(400/100\)\^-0.5 = 0.0005; tau_"):
        _decide(opt, both)


def _decide(opt: torch.optim.Optimizer, target: Target, scheduled: set[int] | None = None):
    return decide_and_write(
        [opt],
        RunShape(100, dataset_size=400, global_batch_size=4),
        target,
        managed_optimizers={0},
        weight_decay_before={},
        pinned_lrs={},
        scheduled=scheduled or set(),
        measured={},
        declared_steps_per_epoch=None,
    )


def test_decide_and_write_holds_tau_epoch_at_this_n_under_size_rule_and_says_so_it_cannot() -> None:
    opt = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters(), lr=1e-3)
    held = _decide(opt, Target(tau_epoch=4.0, size_exponent=-0.5, reference_dataset_size=100))
    assert (held.tau_epoch, held.tau_iter) == (2.0, 200.0)  # 4 x (400 / 100)^-0.5 epochs of 100 steps
    assert [(g.optimizer_index, g.group_index) for g in held.inputs] == [(0, 0)]
    with pytest.raises(ValueError, match=r"\(The tau_epoch held at this N: tau_epoch 0.001 x \(400/100\)\^-0.5 = 0"):
        _decide(opt, Target(tau_epoch=1e-3, size_exponent=-0.5, reference_dataset_size=100))
    with pytest.raises(ValueError, match=r"one optimizer step\); good values are usually several epochs\.$"):
        _decide(opt, Target(tau_epoch=1e-3))  # no size rule: nothing added


def test_scheduler_sets_initial_lr_not_pinned() -> None:
    opt = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters(), lr=1e-3)
    torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=10)  # sets each group's initial_lr
    assert _decide(opt, Target(tau_epoch=5.0), scheduled={id(opt)}).pinned_lrs == {}


def test_keep_plans_carries_look_ahead_only_where_weight_decay_unchanged() -> None:
    def decision(*decays: float) -> Decision:
        groups = [
            GroupTimescale(f"pg{j + 1}", 0, j, 4, 1e-3, 0.1, wd, True, planned_timescales=None if wd < 0 else 9.0)
            for j, wd in enumerate(decays)
        ]
        return Decision(RunShape(100), 500.0, None, [], groups, {}, 500.0)

    old = decision(2.0, 1.0)
    old.groups[0].planned_timescales, old.groups[1].planned_timescales = 3.5, 7.0
    new = decision(2.0, 0.5, 4.0)  # group 0 unchanged, group 1 moved, group 2 added since
    for g in new.groups:
        g.planned_timescales = None
    keep_plans(old, new)
    assert [g.planned_timescales for g in new.groups] == [3.5, None, None]
    keep_plans(None, new)  # the first decision: nothing to carry
    assert [g.planned_timescales for g in new.groups] == [3.5, None, None]
