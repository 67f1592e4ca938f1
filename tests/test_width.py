"""muP width multipliers and the fixed-λ pitfall (lightning_tau/width.py): real mup shapes, no training.

Fast: `make mutation` runs these against width.py's mutants, so the messages are checked whole and the tolerances
from both sides. The fits through the callback are in tests/test_mup.py.
"""

from __future__ import annotations

import math

import mup
import pytest
import torch
from torch import nn

from lightning_tau.width import (
    FixedLambdaPitfall,
    GroupRate,
    find_fixed_lambda_pitfall,
    format_fixed_lambda_pitfall,
    group_width_problem,
    has_infshape,
    param_width_mult,
)

LR, WD = 1e-3, 0.1


class MLP(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.inp = nn.Linear(4, width)
        self.hidden = nn.Linear(width, width)
        self.out = mup.MuReadout(width, 2)


def mup_mlp(width: int = 32) -> MLP:
    model = MLP(width)
    mup.set_base_shapes(model, MLP(8), delta=MLP(16))
    return model


def test_mults_come_from_mup_infshape() -> None:
    net = mup_mlp()
    assert has_infshape(net.hidden.weight) and not has_infshape(nn.Parameter(torch.zeros(2)))
    assert (param_width_mult(net.hidden.weight), param_width_mult(net.inp.weight)) == (4.0, 1.0)
    assert isinstance(param_width_mult(net.hidden.weight), float)


def test_group_width_problem_names_what_missing() -> None:
    net = mup_mlp()
    plain = nn.Parameter(torch.zeros(2))
    assert group_width_problem({"params": [plain], "width_mult": 4}) is None
    assert group_width_problem({"params": [net.hidden.weight]}) is None
    assert group_width_problem({"params": []}) is None and group_width_problem({}) is None
    assert group_width_problem({"params": [plain]}) == (
        "it has no `width_mult` key and its parameters carry no mup `infshape`"
    )
    assert group_width_problem({"params": [net.hidden.weight, plain]}) == (
        "it has no `width_mult` key and 1 of its 2 parameters carry no mup `infshape`"
    )
    assert group_width_problem({"params": [net.hidden.weight, net.inp.weight, net.inp.bias]}) == (
        "its parameters have different width multipliers (1, 4): one group, one s (`mup.MuAdamW` and"
        " `build_param_groups(mup=True)` split groups by s)"
    )


def test_pitfall_against_median_of_base_groups() -> None:
    groups = [
        GroupRate("base1", LR, WD, None),
        GroupRate("base2", LR, 2 * WD, 1.0),
        GroupRate("base3", LR, 9 * WD, 1 + 1e-12),  # s within 1e-9 of 1 is a base group
        GroupRate("diverging", math.inf, WD, None),  # non-finite rate: left out of the median
        GroupRate("huge", 1e200, 1e200, None),  # lr * wd overflows: left out too
        GroupRate("hidden", 2 * LR / 4, WD, 4.0),  # lr / s with the base groups' median rate (2 * LR * WD)
        GroupRate("nodecay", LR / 4, 0.0, 4.0),
        GroupRate("frozen", 0.0, WD, 4.0),
        GroupRate("mup_rule", 2 * LR / 4, 4 * WD, 4.0),
    ]
    (pitfall,) = find_fixed_lambda_pitfall(groups)
    assert pitfall == FixedLambdaPitfall("hidden", 4.0, 2 * LR / 4, WD, pytest.approx(2 * LR * WD))
    assert pitfall.lr_times_weight_decay == pytest.approx(LR * WD / 2)
    assert pitfall.corrected_weight_decay == pytest.approx(4 * WD)
    assert find_fixed_lambda_pitfall(groups[:4]) == []  # nothing width-scaled


def test_pitfall_tolerance_from_both_sides() -> None:
    groups = [GroupRate("base", LR, WD, 1.0), GroupRate("hidden", 1.04 * LR / 4, WD, 4.0)]
    assert [p.name for p in find_fixed_lambda_pitfall(groups)] == ["hidden"]  # 4% off, default rel_tol 5%
    assert find_fixed_lambda_pitfall(groups, rel_tol=0.03) == []
    assert [p.name for p in find_fixed_lambda_pitfall(groups, rel_tol=0.041)] == ["hidden"]
    assert find_fixed_lambda_pitfall([groups[0], GroupRate("hidden", 1.1 * LR / 4, WD, 4.0)]) == []  # 10% off
    below = [GroupRate("base", LR, WD, 1.0), GroupRate("hidden", LR / 4 / 1.04, WD, 4.0)]  # 4% off the other way
    assert [p.name for p in find_fixed_lambda_pitfall(below)] == ["hidden"]
    assert find_fixed_lambda_pitfall(below, rel_tol=0.03) == []


def test_pitfall_at_exact_tolerance_and_halfway_between_readings() -> None:
    # lr * wd exactly (1 + rel_tol) / s times the base rate: still "about" (log(1.5) == log1p(0.5) in floats)
    at_tolerance = [GroupRate("base", 1.0, 1.0, 1.0), GroupRate("hidden", 0.375, 1.0, 4.0)]
    assert [p.name for p in find_fixed_lambda_pitfall(at_tolerance, rel_tol=0.5)] == ["hidden"]
    # s = 4 and lr * wd half the base rate: as far from the fixed-λ reading as from the muP one, so not reported
    halfway = [GroupRate("base", 1.0, 1.0, 1.0), GroupRate("hidden", 0.5, 1.0, 4.0)]
    assert find_fixed_lambda_pitfall(halfway, rel_tol=1.5) == []


def test_pitfall_without_base_groups_needs_two_multipliers_all_fit() -> None:
    fixed = [GroupRate("a", LR / 2, WD, 2.0), GroupRate("b", LR / 4, WD, 4.0), GroupRate("c", LR / 8, WD, 8)]
    found = find_fixed_lambda_pitfall(fixed)
    assert [(p.name, p.width_mult, p.base_lr_times_weight_decay) for p in found] == [
        ("a", 2.0, pytest.approx(LR * WD)),
        ("b", 4.0, pytest.approx(LR * WD)),
        ("c", 8.0, pytest.approx(LR * WD)),
    ]
    assert find_fixed_lambda_pitfall([*fixed, GroupRate("d", LR / 16, 16 * WD, 16.0)]) == []  # one does not fit
    # the reference is the first group's own s * lr * wd (here the weight decays differ between groups)
    mixed = [GroupRate("a", LR / 2, WD, 2.0), GroupRate("b", LR / 8, 2 * WD, 4.0)]
    assert [p.name for p in find_fixed_lambda_pitfall(mixed)] == ["a", "b"]
    assert find_fixed_lambda_pitfall([GroupRate("a", LR / 2, WD, 2.0), GroupRate("b", LR / 2, WD, 2.0)]) == []


def test_pitfall_message_with_and_without_written_values() -> None:
    pitfalls = [
        FixedLambdaPitfall("hidden", 4.0, 2.5e-4, 0.1, 1e-4),
        FixedLambdaPitfall("out", 2.0, 5e-4, 0.1, 2e-4),
        FixedLambdaPitfall("mid", 3.0, 5e-4, 0.1, 9e-4),  # the base rate shown is the median, 0.0002
    ]
    head = (
        "fixed-λ muP pitfall: these param groups had their lr divided by the width multiplier s but kept the base"
        " weight decay (as mup's `decoupled_wd=True` and nanoGPT-mup groups do), so their EMA timescale tau_iter ="
        " 1/(lr*weight_decay) was s times the base groups' (base lr*weight_decay=0.0002): "
    )
    rule = ". The muP rule for AdamW is lr / s *and* weight_decay * s (Wang & Aitchison 2025); "
    assert format_fixed_lambda_pitfall(pitfalls) == (
        "`TimescaleCallback`: "
        + head
        + "'hidden' (s=4, lr*weight_decay=2.5e-05, weight_decay 0.1 (muP rule: 0.4)), 'out' (s=2,"
        " lr*weight_decay=5e-05, weight_decay 0.1 (muP rule: 0.4)), 'mid' (s=3, lr*weight_decay=5e-05, weight_decay"
        " 0.1 (muP rule: 1.8))" + rule + "set each listed group's weight decay to the value shown."
    )
    assert format_fixed_lambda_pitfall(pitfalls, written=[0.4, 0.2, 0.3], who="apply_timescale") == (
        "`apply_timescale`: "
        + head
        + "'hidden' (s=4, lr*weight_decay=2.5e-05, weight_decay 0.1 -> 0.4), 'out' (s=2, lr*weight_decay=5e-05,"
        " weight_decay 0.1 -> 0.2), 'mid' (s=3, lr*weight_decay=5e-05, weight_decay 0.1 -> 0.3)"
        + rule
        + "the weight decay after the arrow is what was written, so every decaying group now has the same tau_iter."
    )
    assert format_fixed_lambda_pitfall([]) == ""
