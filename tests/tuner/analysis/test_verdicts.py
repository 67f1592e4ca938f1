"""The verdicts (lightning_tau/tuner/analysis/verdicts.py): each rule decided at a tolerance, the rule followed, the words."""

from __future__ import annotations

import math

import pytest

from lightning_tau.tuner.analysis.rule_costs import RuleCost
from lightning_tau.tuner.analysis.rules import half_width
from lightning_tau.tuner.analysis.scaling import ScalingFit
from lightning_tau.tuner.axes import SIZE_RULES, WIDTH_RULES
from lightning_tau.tuner.analysis.verdicts import (
    RuleVerdict,
    advice,
    cost_text,
    judge,
    rule_to_follow,
    shape_undetermined,
    signed,
    size_verdict,
    width_verdict,
)

SIZES = [150.0, 450.0, 1350.0]  # a x9 range: the band is log(1.25) / log(9) = 0.1016 either side
DELTA = math.log(1.25) / math.log(9)


def hand_fit(exponent, ci, reason=None, scales=SIZES):
    return ScalingFit(exponent, ci, reason, 0.95, [], [], [], 0.0, False, [], scales=list(scales))


def cost(mean, ci=None, reason=None, x_rule=8.0, same_point=False):
    return RuleCost(x_rule, 8.0, mean, ci, 0.95, reason, (), same_point)


def test_judge_decides_every_rule_against_own_band():
    rules = judge("dataset_size", hand_fit(-0.5, (-0.55, -0.45)))
    assert [r.name for r in rules] == [r.name for r in SIZE_RULES]
    assert [r.decision for r in rules] == ["excluded", "holds", "excluded"]
    assert [r.band for r in rules] == [pytest.approx((e - DELTA, e + DELTA)) for e in (0.0, -0.5, -1.0)]
    assert all(r.band[0] < r.exponent < r.band[1] for r in rules)
    assert [r.source for r in rules] == [r.source for r in SIZE_RULES] and rules[0].says == SIZE_RULES[0].says
    assert all(r.tolerance == 1.25 and r.loss_cost is None and r.loss_cost_reason == "not measured" for r in rules)
    assert [r.name for r in judge("width", hand_fit(0.0, (-0.01, 0.01)))] == [r.name for r in WIDTH_RULES]


@pytest.mark.parametrize("side", [-1, 1])
def test_judge_holds_inside_band_on_either_side_and_excludes_beyond(side):
    # an interval ending just inside one side of Fan et al.'s band holds; just past it, straddles; wholly past, excluded
    edge = -0.5 + side * DELTA
    inside = (edge - side * 0.05, edge - side * 0.001)
    straddling = (edge - side * 0.05, edge + side * 0.001)
    beyond = (edge + side * 0.001, edge + side * 0.05)
    decision = {
        name: judge("width", hand_fit(sum(ci) / 2, tuple(sorted(ci))))[1].decision
        for name, ci in (("inside", inside), ("straddling", straddling), ("beyond", beyond))
    }
    assert decision == {"inside": "holds", "straddling": "undetermined", "beyond": "excluded"}


def test_judge_small_drift_excludes_zero_still_holds():
    # the held-out width task: the best λ_base moved x1.16 over an 8x range, a tight interval excluding 0
    fit = hand_fit(0.07, (0.05, 0.09), scales=[64, 512])
    assert not fit.ci[0] <= 0 <= fit.ci[1]
    assert judge("width", fit)[0].decision == "holds"
    # a finer or coarser grid does not enter: only the tolerance and the range of scales do
    assert judge("width", fit, tolerance=1.05)[0].decision == "excluded"


def test_judge_tolerance_widens_band():
    fit = hand_fit(0.15, (0.11, 0.2))
    assert judge("dataset_size", fit)[0].decision == "excluded"  # 9^0.2 = 1.55 > 1.25
    assert judge("dataset_size", fit, tolerance=1.6)[0].decision == "holds"  # 9^0.2 = 1.55 < 1.6
    assert judge("dataset_size", fit, tolerance=1.6)[0].band == pytest.approx(
        (-half_width(1.6, SIZES),) * 1 + (half_width(1.6, SIZES),)
    )


def test_judge_without_interval_leaves_every_rule_undetermined():
    rules = judge("dataset_size", hand_fit(0.0, None, "1 seed: an interval needs at least 2"))
    assert [r.decision for r in rules] == ["undetermined"] * 3


def test_judge_carries_each_rules_cost():
    costs = [cost(0.001, (-0.002, 0.004)), cost(0.02, (0.01, 0.03), x_rule=4.0), cost(None, None, "off", x_rule=1.0)]
    rules = judge("dataset_size", hand_fit(0.0, (-0.05, 0.05)), costs=costs)
    assert [(r.loss_cost, r.loss_cost_ci, r.loss_cost_reason, r.x_rule) for r in rules] == [
        (0.001, (-0.002, 0.004), None, 8.0),
        (0.02, (0.01, 0.03), None, 4.0),
        (None, None, "off", 1.0),
    ]


def test_judge_refuses_fit_without_scales_and_costs_of_another_length():
    with pytest.raises(ValueError, match=r"^`judge\(fit=\.\.\.\)` is not valid: the fit has no `scales`"):
        judge("width", hand_fit(0.0, (-0.1, 0.1), scales=()))
    with pytest.raises(ValueError, match=r"^`judge\(costs=\.\.\.\)` is not valid: got 1 costs for the 3 rules"):
        judge("width", hand_fit(0.0, (-0.1, 0.1)), costs=[cost(0.0)])


def test_rule_verdict_json_round_trip():
    rules = judge("width", hand_fit(0.0, (-0.05, 0.05)), costs=[cost(0.001, (-0.002, 0.004)), cost(0.5), cost(None)])
    data = [r.to_json() for r in rules]
    assert set(data[0]) == {
        "name", "exponent", "decision", "band", "tolerance", "loss_cost", "loss_cost_ci", "loss_cost_reason",
        "x_rule", "source", "says", "same_point",
    }  # fmt: skip
    assert data[0]["loss_cost_ci"] == [-0.002, 0.004] and data[1]["loss_cost_ci"] is None
    assert [RuleVerdict.from_json(d) for d in data] == rules
    # a summary.json written before `same_point` was kept still reads
    old = {k: v for k, v in data[0].items() if k != "same_point"}
    assert RuleVerdict.from_json(old) == rules[0] and not rules[0].same_point


def test_cost_zero_because_same_grid_point_won_says_so_in_words():
    fit = hand_fit(0.0, (-0.05, 0.05))
    same = cost(0.0, (0.0, 0.0), same_point=True)
    rules = judge("dataset_size", fit, costs=[same, cost(0.012, (0.008, 0.016)), cost(0.2, (0.1, 0.3))])
    assert rules[0].same_point and not rules[1].same_point and rules[0].to_json()["same_point"] is True
    words = "0: the same grid point is best at both ends (no cost within the grid's resolution)"
    assert rules[0].cost_text() == words and "[+0.000, +0.000]" not in size_verdict(fit, rules)
    assert "; following it from N = 150 to N = 1350 costs " + words + "." in size_verdict(fit, rules)
    # a measured zero that is not the same point keeps its interval
    assert judge("dataset_size", fit, costs=[cost(0.0, (0.0, 0.0)), cost(0.0), cost(0.0)])[0].cost_text() == (
        "+0.000 [+0.000, +0.000]"
    )


def test_rule_to_follow_one_holds_or_nearest_of_several():
    # one holds
    assert rule_to_follow(judge("width", hand_fit(-0.5, (-0.55, -0.45))), -0.5).name == "Fan et al."
    # none holds
    assert rule_to_follow(judge("width", hand_fit(-0.25, (-0.3, -0.2))), -0.25) is None
    # over widths 1 to 2 the bands are +-0.32: Wang & Aitchison and Fan et al. both hold; the nearer to the estimate
    short = hand_fit(-0.28, (-0.31, -0.25), scales=[1, 2])
    rules = judge("width", short)
    assert [r.decision for r in rules] == ["holds", "holds", "excluded"]
    assert rule_to_follow(rules, -0.28).name == "Fan et al." and rule_to_follow(rules, -0.22).name == "Wang & Aitchison"


def test_signed_and_cost_text_round_for_people():
    assert [signed(v) for v in (1.44e-16, -1.44e-16, -0.004, 0.456, -1.0)] == [
        "+0.00",
        "+0.00",
        "+0.00",
        "+0.46",
        "-1.00",
    ]
    assert signed(-0.004, 3) == "-0.004"
    assert cost_text(0.012, (0.008, 0.016)) == "+0.012 [+0.008, +0.016]"
    assert cost_text(0.001, (-0.002, 0.004)) == "+0.001 [-0.002, +0.004]"
    assert cost_text(0.31, (0.12, 0.5)) == "+0.3 [+0.1, +0.5]"
    assert cost_text(1.44e-16, (-0.0021, 0.0021)) == "+0.000 [-0.002, +0.002]"
    assert cost_text(0.0123, None) == "+0.012" and cost_text(0.0, None) == "+0.000" and cost_text(12.3, None) == "+12"
    assert cost_text(0.7124599990985511, (0.7124599990985510, 0.7124599990985512)) == "+0.7125 [+0.7125, +0.7125]"
    assert cost_text(None, None, "the rule puts tau_epoch at 512, beyond the grid (up to 128): not measured there") == (
        "not measured: the rule puts tau_epoch at 512, beyond the grid (up to 128)"
    )
    assert cost_text(None, None, None) == cost_text(None, None, "not measured") == "not measured"


def test_size_verdict_whole_sentences_with_costs():
    fit = hand_fit(0.02, (-0.05, 0.09))
    costs = [
        cost(0.001, (-0.002, 0.004)),
        cost(0.012, (0.008, 0.016)),
        cost(None, None, "the rule puts tau_epoch at 0.89, below the grid (from 2): not measured there"),
    ]
    rules = judge("dataset_size", fit, costs=costs)
    assert size_verdict(fit, rules, monitor="val_loss") == (
        "Wang & Aitchison (tau_epoch constant, so λ ∝ 1/N; exponent 0) holds: over N = 150 to 1350 the best tau_epoch"
        " moves by a factor of 0.896 to 1.22, within x1.25 of the rule's factor of 1; following it from N = 150 to"
        " N = 1350 costs +0.001 [-0.002, +0.004] val_loss."
        " The 1/2 rules (tau_epoch ∝ 1/√N, so λ ∝ 1/√N; exponent -1/2) are excluded: over N = 150 to 1350 the best"
        " tau_epoch moves by a factor of 0.896 to 1.22, more than x1.25 of the rule's factor of 0.333 away; following"
        " it from N = 150 to N = 1350 costs +0.012 [+0.008, +0.016] val_loss."
        " Fixed λ (the same λ at every N, so tau_epoch ∝ 1/N; exponent -1) is excluded: over N = 150 to 1350 the best"
        " tau_epoch moves by a factor of 0.896 to 1.22, more than x1.25 of the rule's factor of 0.111 away; what"
        " following it costs is not measured: the rule puts tau_epoch at 0.89, below the grid (from 2)."
        " Follow Wang & Aitchison: result.callback() keeps the largest fraction's best tau_epoch at every N"
        " (size_exponent = 0)."
    )
    assert size_verdict(fit) == size_verdict(fit, judge("dataset_size", fit), monitor="loss")


def test_size_verdict_undetermined_says_more_seeds_would_decide_it():
    verdict = size_verdict(hand_fit(-0.1, (-0.3, 0.1)))
    assert verdict.startswith(
        "Wang & Aitchison (tau_epoch constant, so λ ∝ 1/N; exponent 0) is undetermined: over N = 150 to 1350 the best"
        " tau_epoch moves by a factor of 0.517 to 1.25, reaching both within and beyond x1.25 of the rule's factor of 1"
        " (more seeds would decide it)."
    )
    assert " The 1/2 rules (tau_epoch ∝ 1/√N, so λ ∝ 1/√N; exponent -1/2) are excluded: " in verdict
    assert verdict.endswith(
        "No rule holds yet: more seeds (or a wider range of N) would decide it; meanwhile result.callback() uses the"
        " measured size_exponent = -0.10."
    )
    assert "excludes 0" not in verdict and "grid step" not in verdict


def test_verdict_without_interval_says_why_once_with_costs():
    fit = hand_fit(0.3, None, "1 seed: an interval needs at least 2")
    rules = judge("dataset_size", fit, costs=[cost(0.01), cost(0.2), cost(None, None, "beyond the grid")])
    assert size_verdict(fit, rules, monitor="val_loss") == (
        "Following each rule from N = 150 to N = 1350 costs (val_loss): Wang & Aitchison +0.010; the 1/2 rules +0.20;"
        " fixed λ not measured: beyond the grid. No rule is decided without an interval (1 seed: an interval needs at"
        " least 2): result.callback() follows the paper's rule, Wang & Aitchison (size_exponent = 0), as nothing here"
        " backs the measured size_exponent = +0.30."
    )
    assert size_verdict(fit) == (
        "No rule is decided without an interval (1 seed: an interval needs at least 2): result.callback() follows the"
        " paper's rule, Wang & Aitchison (size_exponent = 0), as nothing here backs the measured size_exponent = +0.30."
    )
    assert width_verdict(fit).endswith(
        "result.callback() follows the paper's rule, Wang & Aitchison (width_exponent = 1), as nothing here backs the"
        " measured width_exponent = 1.3 (exponent +0.30)."
    )


def test_width_verdict_whole_sentences():
    fit = hand_fit(-0.49, (-0.55, -0.43), scales=[64, 128, 256])  # the band is log(1.25) / log(4) = 0.161
    assert width_verdict(fit) == (
        "Wang & Aitchison (α = 1: λ ∝ s, tau_iter held; exponent 0) is excluded: over widths 64 to 256 the best λ_base"
        " moves by a factor of 0.467 to 0.551, more than x1.25 of the rule's factor of 1 away."
        " Fan et al. (α = 1/2: λ ∝ √s; exponent -1/2) holds: over widths 64 to 256 the best λ_base moves by a factor of"
        " 0.467 to 0.551, within x1.25 of the rule's factor of 0.5."
        " Qiu et al. (α = 0: the same λ at every width under μP's lr / s; exponent -1) is excluded: over widths 64 to"
        " 256 the best λ_base moves by a factor of 0.467 to 0.551, more than x1.25 of the rule's factor of 0.25 away."
        " Follow Fan et al.: result.callback() uses width_exponent = 1/2 (α)."
    )


def test_verdict_exponents_print_to_two_decimals_and_zero_near_zero():
    tiny = hand_fit(-0.000760685, None, "1 seed: an interval needs at least 2")
    assert size_verdict(tiny).endswith("as nothing here backs the measured size_exponent = 0.")
    assert width_verdict(tiny).endswith("backs the measured width_exponent = 1 (exponent 0).")
    noisy = hand_fit(-0.251234, (-0.3, -0.2))
    assert advice("width", noisy, judge("width", noisy)).endswith(
        "uses the measured width_exponent = 0.75 (exponent -0.25)."
    )


def test_advice_follows_one_rule_several_or_measured_exponent():
    one = hand_fit(0.01, (-0.02, 0.04), scales=[64, 512])
    assert advice("width", one, judge("width", one)) == (
        "Follow Wang & Aitchison: result.callback() uses width_exponent = 1 (α)."
    )
    short = hand_fit(-0.28, (-0.31, -0.25), scales=[1, 2])
    assert advice("width", short, judge("width", short)) == (
        "Wang & Aitchison and Fan et al. both hold (their bands overlap over this range): follow Fan et al., the"
        " nearest to the estimate -0.28: result.callback() uses width_exponent = 1/2 (α)."
    )
    half = hand_fit(-0.5, (-0.55, -0.45))
    assert advice("dataset_size", half, judge("dataset_size", half)) == (
        "Follow the 1/2 rules: result.callback() carries the largest fraction's best tau_epoch to the full N as"
        " (N / N_ref)^-1/2."
    )
    none = hand_fit(-0.25, (-0.3, -0.2))
    assert advice("width", none, judge("width", none)) == (
        "None of the published rules holds: result.callback() uses the measured width_exponent = 0.75 (exponent -0.25)."
    )
    assert advice("dataset_size", none, judge("dataset_size", none)) == (
        "None of the published rules holds: result.callback() uses the measured size_exponent = -0.25."
    )


def test_undetermined_by_shape_alone_asks_for_points_nearer_optimum_not_seeds():
    # the shape part alone [+0.00, +0.20] crosses Wang & Aitchison's band edge +0.1016: seeds cannot decide it
    fit = ScalingFit(0.1, (-0.05, 0.25), None, 0.95, [], [], [], 0.0, False, [], scales=SIZES,
                     interval_parts={"seeds": (0.05, 0.15), "shape": (0.0, 0.2)})
    rules = judge("dataset_size", fit)
    assert [r.decision for r in rules] == ["undetermined", "excluded", "excluded"]
    assert shape_undetermined(fit, rules) == ["Wang & Aitchison"]
    verdict = size_verdict(fit, rules)
    assert "more seeds would decide it" not in verdict and "(more seeds" not in verdict
    assert (
        "reaching both within and beyond x1.25 of the rule's factor of 1 (the curve's shape alone reaches both, so more"
        " seeds would not decide it: grid points nearer the optimum would)." in verdict
    )
    assert advice("dataset_size", fit, rules) == (
        "No rule holds yet: grid points nearer the optimum (not more seeds: the curve's shape alone leaves it open)"
        " would decide it; meanwhile result.callback() uses the measured size_exponent = +0.10."
    )
    # a shape part inside the band: seeds can decide it, and the words say so
    seeds_fit = ScalingFit(0.1, (-0.05, 0.25), None, 0.95, [], [], [], 0.0, False, [], scales=SIZES,
                           interval_parts={"seeds": (-0.05, 0.25), "shape": (0.09, 0.09)})
    assert shape_undetermined(seeds_fit, judge("dataset_size", seeds_fit)) == []
    assert "(more seeds would decide it)" in size_verdict(seeds_fit)
    assert shape_undetermined(hand_fit(0.3, None, "1 seed"), judge("dataset_size", hand_fit(0.3, None, "1 seed"))) == []
