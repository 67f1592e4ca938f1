"""Optimizer inspection and the schedule look-ahead (torch only)."""

from __future__ import annotations

import pytest
import torch

from lightning_tau.decide import GroupTimescale
from lightning_tau.optim import decay_kind, group_lr, group_names, group_width_mult, reference_lr
from lightning_tau.schedule import ScheduledStep, optimizer_remaining, planned_lr_sums, planned_timescales


def params() -> list[torch.nn.Parameter]:
    return list(torch.nn.Linear(3, 3).parameters())


class MyAdamW(torch.optim.AdamW):
    pass


class MyOptimizer(torch.optim.Optimizer):
    """Not an optimizer the package knows (tests/test_optimizer_families.py covers the families in full)."""


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda p: torch.optim.AdamW(p), "decoupled"),
        (lambda p: MyAdamW(p, weight_decay=0.0), "decoupled"),
        (lambda p: torch.optim.Adam(p, weight_decay=0.1, decoupled_weight_decay=True), "decoupled"),
        (lambda p: torch.optim.Adam(p, weight_decay=0.1), "coupled"),
        (lambda p: torch.optim.SGD(p, lr=0.1, weight_decay=0.1), "coupled"),
        (lambda p: torch.optim.RMSprop(p, weight_decay=1e-4), "coupled"),
        (lambda p: torch.optim.Adam(p), "none"),
        (lambda p: torch.optim.NAdam(p, weight_decay=0.1, decoupled_weight_decay=True), "decoupled"),
        (lambda p: torch.optim.Adagrad(p, weight_decay=0.1), "coupled"),
        (lambda p: MyOptimizer(p, {"lr": 0.1, "weight_decay": 0.1}), "unknown"),
        (lambda p: MyOptimizer(p, {"lr": 0.1, "weight_decay": 0.0}), "none"),
    ],
)
def test_decay_kind(make, kind: str) -> None:
    assert decay_kind(make(params())) == kind


def test_mup_adamw_decoupled() -> None:
    mup = pytest.importorskip("mup", reason="mup is an optional extra: pip install lightning-tau[mup]")
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), mup.MuReadout(8, 2))
    mup.set_base_shapes(model, None)
    assert decay_kind(mup.MuAdamW(model.parameters(), lr=1e-3, weight_decay=0.1)) == "decoupled"


def test_reference_lr_prefers_max_lr_then_initial_lr() -> None:
    assert reference_lr({"lr": 0.1}) == 0.1
    assert reference_lr({"lr": 0.01, "initial_lr": 0.1}) == 0.1
    assert reference_lr({"lr": 0.01, "initial_lr": 0.004, "max_lr": 0.1}) == 0.1
    assert group_lr({"lr": torch.tensor(0.5)}) == 0.5  # torch allows tensor learning rates


def test_width_mult_from_group_key_or_mup() -> None:
    assert group_width_mult({"params": [], "width_mult": 2}) == 2.0
    mup = pytest.importorskip("mup", reason="mup is an optional extra: pip install lightning-tau[mup]")

    def model(width: int) -> torch.nn.Module:
        return torch.nn.Sequential(torch.nn.Linear(4, width), torch.nn.Linear(width, width), mup.MuReadout(width, 2))

    wide = model(32)
    mup.set_base_shapes(wide, model(8))
    hidden = wide[1].weight  # both dimensions scale: a matrix-like parameter
    assert group_width_mult({"params": [hidden, wide[1].bias]}) == 4.0
    assert group_width_mult({"params": [wide[1].bias]}) is None  # vector-like: no multiplier


def test_group_names_with_several_optimizers() -> None:
    a = torch.optim.AdamW([{"params": params(), "name": "body"}, {"params": params()}])
    b = torch.optim.SGD(params(), lr=0.1)
    assert group_names([a, b]) == [["optimizer0/body", "optimizer0/pg2"], ["optimizer1/pg1"]]


def test_group_names_unique_groups_share_name() -> None:
    # mup's MuAdamW copies a group's `name` onto every group it splits it into: one key per group all the same
    a = torch.optim.AdamW([{"params": params(), "name": "all"}, {"params": params(), "name": "all"}])
    b = torch.optim.AdamW([{"params": params(), "name": "pg2"}, {"params": params()}, {"params": params()}])
    assert group_names([a]) == [["all/pg1", "all/pg2"]]
    assert group_names([b]) == [["pg2/pg1", "pg2/pg2", "pg3"]]  # a given name clashing with a default one
    assert group_names([a, b])[0] == ["optimizer0/all/pg1", "optimizer0/all/pg2"]


def test_planned_lr_sums_follows_schedule_without_touching_optimizer() -> None:
    opt = torch.optim.AdamW(params(), lr=1.0)
    sched = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.5, total_iters=2)
    # lrs over 4 steps: 0.5, 0.75, 1, 1
    assert planned_lr_sums(opt, [ScheduledStep(sched)], 4, steps_per_epoch=4) == [pytest.approx(3.25)]
    assert opt.param_groups[0]["lr"] == 0.5 and sched.last_epoch == 0  # untouched
    # an epoch-interval scheduler steps every `steps_per_epoch` steps: lrs 1, 1, 0.1, 0.1, 0.01
    opt2 = torch.optim.AdamW(params(), lr=1.0)
    step = torch.optim.lr_scheduler.StepLR(opt2, step_size=1, gamma=0.1)
    sums = planned_lr_sums(opt2, [ScheduledStep(step, "epoch")], 5, steps_per_epoch=2)
    assert sums == [pytest.approx(2.21)]


def test_planned_lr_sums_gives_up_where_it_cannot_know() -> None:
    opt = torch.optim.AdamW(params())
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
    assert planned_lr_sums(opt, [ScheduledStep(plateau, "epoch")], 10, steps_per_epoch=2) is None
    assert planned_lr_sums(opt, [], 10, steps_per_epoch=float("inf")) is None


def test_planned_lr_sums_copies_no_parameter_data() -> None:
    big = torch.nn.Parameter(torch.zeros(1000, 1000))
    opt = torch.optim.AdamW([big], lr=1.0)
    big.grad = torch.ones_like(big)
    opt.step()  # creates exp_avg and exp_avg_sq, as a resumed optimizer has them
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    from lightning_tau.schedule import _shadow_copy

    shadow, _ = _shadow_copy(opt, [sched])
    assert shadow.param_groups[0]["params"][0].numel() == 0
    assert all(v.numel() == 0 for s in shadow.state.values() for v in s.values() if torch.is_tensor(v))


def _halving(**kwargs: object) -> tuple[torch.optim.Optimizer, ScheduledStep]:
    opt = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters(), lr=1.0)
    return opt, ScheduledStep(torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5), **kwargs)


def test_planned_lr_sums_steps_each_scheduler_it_due() -> None:
    opt, every_third_step = _halving(interval="step", frequency=3)
    assert planned_lr_sums(opt, [every_third_step], total_steps=6, steps_per_epoch=100) == [3 * 1.0 + 3 * 0.5]
    # every 2nd epoch of 3 steps: due after steps 6 and 12
    opt, every_other_epoch = _halving(interval="epoch", frequency=2)
    assert planned_lr_sums(opt, [every_other_epoch], total_steps=12, steps_per_epoch=3) == [6 * 1.0 + 6 * 0.5]
    # epochs of one step (and of less than one, rounded up to one) step every time
    for steps_per_epoch in (1, 0.4):
        opt, every_epoch = _halving(interval="epoch")
        assert planned_lr_sums(opt, [every_epoch], total_steps=3, steps_per_epoch=steps_per_epoch) == [1.75]
    opt, every_other_epoch = _halving(interval="epoch", frequency=2)  # epochs of one step: due after steps 2 and 4
    assert planned_lr_sums(opt, [every_other_epoch], total_steps=4, steps_per_epoch=1) == [1.0 + 1.0 + 0.5 + 0.5]


def test_planned_lr_sums_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    opt, sched = _halving()
    assert planned_lr_sums(opt, [sched], total_steps=2, steps_per_epoch=0) is None
    assert planned_lr_sums(opt, [sched], total_steps=2, steps_per_epoch=float("inf")) is None
    monkeypatch.setattr("lightning_tau.schedule.MAX_SIMULATED_STEPS", 3)
    assert planned_lr_sums(opt, [sched], total_steps=3, steps_per_epoch=10) == [1.75]
    assert planned_lr_sums(opt, [sched], total_steps=4, steps_per_epoch=10) is None


def test_optimizer_remaining_counts_runs_steps_in_optimizers_own() -> None:
    assert optimizer_remaining(1000, 100, 50.0) == 500
    assert optimizer_remaining(1000, 100, 150.0) == 1500
    assert optimizer_remaining(10, 4, 1.0) == 2  # 2.5 rounds to even
    assert optimizer_remaining(11, 4, 1.0) == 3  # 2.75 rounds up
    assert optimizer_remaining(1000, 100, None) == 1000  # the run's own M
    assert optimizer_remaining(1000, None, 50.0) == 1000  # unknown M: nothing to scale by
    assert optimizer_remaining(1000, 0, 50.0) == 1000


def _decision(optimizer: int, index: int, *, lr: float = 0.5, wd: float = 0.1, decays: bool = True) -> GroupTimescale:
    return GroupTimescale(f"g{optimizer}{index}", optimizer, index, 1, lr, 0.3, wd, decays, tau_iter=20.0)


def test_planned_timescales_per_step_remaining_steps_over_each_groups_tau_iter() -> None:
    groups = [_decision(0, 0), _decision(0, 1, decays=False), _decision(1, 0)]
    planned = planned_timescales(
        groups, [], [], 100, steps_per_epoch=10.0, optimizer_m={1: 5.0}, per_step=True
    )  # optimizers and schedulers are not read in per-step mode
    assert planned == {(0, 0): 100 / 20.0, (1, 0): 50 / 20.0}


def test_planned_timescales_sum_each_optimizers_schedule() -> None:
    unscheduled = torch.optim.AdamW([{"params": params(), "lr": 0.5}, {"params": params(), "lr": 0.5}])
    scheduled, halving = _halving(interval="epoch")
    groups = [_decision(0, 0), _decision(0, 1, decays=False), _decision(1, 0, lr=1.0, wd=0.2)]
    planned = planned_timescales(
        groups,
        [unscheduled, scheduled],
        [[], [halving]],
        4,
        steps_per_epoch=2.0,
        optimizer_m={1: 1.0},  # optimizer 1 steps once per 2 batches: 2 steps left, a new epoch each
        per_step=False,
    )
    # optimizer 0 at its reference lr: 4 steps x 0.5 x 0.1; optimizer 1: (1 + 0.5) x 0.2
    assert planned == {(0, 0): pytest.approx(4 * 0.5 * 0.1), (1, 0): pytest.approx(1.5 * 0.2)}


def test_planned_timescales_unknown_where_schedule_cannot_be_simulated() -> None:
    opt = torch.optim.AdamW(params(), lr=1.0)
    plateau = ScheduledStep(torch.optim.lr_scheduler.ReduceLROnPlateau(opt), "epoch")
    groups = [_decision(0, 0)]
    assert planned_timescales(groups, [opt], [[plateau]], 10, steps_per_epoch=5.0, optimizer_m={}, per_step=False) == {
        (0, 0): None
    }
    opt, halving = _halving(interval="epoch")  # an epoch-interval scheduler with an unknown epoch length
    assert planned_timescales(groups, [opt], [[halving]], 10, steps_per_epoch=None, optimizer_m={}, per_step=False) == {
        (0, 0): None
    }


def test_planned_timescales_use_runs_epoch_length_for_optimizer_without_own() -> None:
    """An epoch-interval scheduler steps every ``M`` optimizer steps; an optimizer with no ``M`` of its own takes the
    run's (2 here): 4 steps left are 2 at lr 1 and 2 at lr 0.5."""
    scheduled, halving = _halving(interval="epoch")
    planned = planned_timescales(
        [_decision(0, 0, lr=1.0, wd=0.2)],
        [scheduled],
        [[halving]],
        4,
        steps_per_epoch=2.0,
        optimizer_m={},
        per_step=False,
    )
    assert planned == {(0, 0): pytest.approx((1 + 1 + 0.5 + 0.5) * 0.2)}
