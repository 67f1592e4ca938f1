"""The finder axes' result (lightning_tau/tuner/analysis/axis_result.py, its data in axis_data.py) without training: build, the
numbers, the callback, the JSON.

Hand-made sweeps (tests/helpers/axis_results.py: parabolas in log tau_epoch, each seed's vertex a little off the
point's) so every number is known. These run under `make mutation` against axes.py's and axis_data.py's mutants, so
the messages and the JSON are checked whole. The fits are in tests/tuner/test_finder_axes.py; the table in
tests/tuner/analysis/test_axis_table.py; the figure in tests/tuner/analysis/test_axis_figure.py.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from axis_results import LAMBDA_BASE, TAUS, size_result, sweep, width_result
from finder_results import finder_result

from lightning_tau import TimescaleCallback, _checks
from lightning_tau._numbers import exponent
from lightning_tau.tuner.analysis import rules, verdicts
from lightning_tau.tuner.analysis.axis_result import AxisResult
from lightning_tau.tuner.analysis.finder_result import CurvePoint, FinderResult
from lightning_tau.tuner.analysis.rule_costs import rule_cost
from lightning_tau.tuner.analysis.scaling import fit_scaling


def raises_exactly(message: str) -> pytest.RaisesContext[ValueError]:
    return pytest.raises(ValueError, match=f"^{re.escape(message)}$")


def test_axes_build_messages() -> None:
    points = [sweep(6.0, (1, 1)), sweep(8.0, (1, 1))]
    with raises_exactly("`AxisResult(axis='depth')` is not supported. Use 'width', 'dataset_size' or 'batch_size'."):
        AxisResult.build("depth", [1, 2], points)  # type: ignore[arg-type]
    with raises_exactly(
        "`AxisResult` needs one result per axis point and at least 2 points, got 3 values and 2 results."
    ):
        AxisResult.build("dataset_size", [0.1, 0.5, 1.0], points)
    with raises_exactly(
        "`AxisResult` needs one result per axis point and at least 2 points, got 1 values and 1 results."
    ):
        AxisResult.build("dataset_size", [1.0], points[:1])
    same_grid = "`AxisResult`: every axis point must sweep the same tau_epoch grid with the same seeds."
    other_seeds = sweep(8.0, (1, 1, 1))
    with raises_exactly(same_grid):
        AxisResult.build("dataset_size", [0.5, 1.0], [points[0], other_seeds])
    shorter = FinderResult(**{**points[1].__dict__, "curve": points[1].curve[:-1]})
    with raises_exactly(same_grid):
        AxisResult.build("dataset_size", [0.5, 1.0], [points[0], shorter])
    need = "`AxisResult(axis='width')` needs `lambda_base`, one per tau_epoch of the grid."
    with raises_exactly(need):
        AxisResult.build("width", [64, 128], points)
    with raises_exactly(need):
        AxisResult.build("width", [64, 128], points, lambda_base=LAMBDA_BASE[:-1])


def test_axes_width_build_reverses_grid_into_lambda_base() -> None:
    result = width_result()
    assert (result.axis, result.x_name, result.values, result.scales) == (
        "width",
        "lambda_base",
        [64, 128, 256],
        [64.0, 128.0, 256.0],
    )
    assert all(type(v) is int for v in result.values)
    assert result.xs == LAMBDA_BASE[::-1]
    curves = [[p.values for p in r.curve][::-1] for r in result.results]
    assert result.fit == fit_scaling([64, 128, 256], LAMBDA_BASE[::-1], curves)
    assert result.exponent == result.fit.exponent == pytest.approx(-0.50115, abs=1e-5)
    assert result.exponent_ci == result.fit.ci == pytest.approx((-0.58882, -0.41348), abs=1e-5)
    assert result.ci_reason is None
    assert result.width_exponent == pytest.approx(1 + result.exponent, rel=1e-15)
    # Fan et al. holds (band +-0.161 over a x4 range): the callback follows its exponent -1/2, not the measured one
    assert [r.decision for r in result.rules] == ["excluded", "holds", "excluded"]
    assert result.rule_used.name == "Fan et al." and result.exponent_used == -0.5
    # the best tau_epoch at the smallest width, carried by the rule to s = 1 from s = 0.5
    assert result.tau_epoch == pytest.approx(result.results[0].tau_epoch * 0.5**-0.5, rel=1e-15)
    assert result.tau_epoch == pytest.approx(8.61070, abs=1e-5) and result.full_tau_epoch == result.tau_epoch
    low, high = result.full_tau_epoch_range  # the prediction interval at μP's base width, 64 / 0.5 = 128
    assert result.full_scale == 128.0 and (low, high) == (result.predict(128).low, result.predict(128).high)
    exponent_only = sorted(result.results[0].tau_epoch * 0.5**e for e in result.fit.ci)
    assert low < exponent_only[0] < result.tau_epoch < exponent_only[1] < high  # the exponent's interval and more
    assert (result.cost, result.full_cost) == (450, 1500)
    assert result.note() is None
    assert [result.x_of_tau(t) for t in TAUS] == LAMBDA_BASE
    assert [result._point_name(i) for i in range(3)] == ["width 64", "width 128", "width 256"]
    at_one = AxisResult.build("width", [64, 128, 256], result.results, lambda_base=LAMBDA_BASE)
    assert at_one.base_width_mult == 1.0 and at_one.tau_epoch == result.results[0].tau_epoch


def test_axes_build_passes_level_and_window_on() -> None:
    result = width_result(level=0.5, window=2)
    curves = [[p.values for p in r.curve][::-1] for r in result.results]
    assert result.fit == fit_scaling([64, 128, 256], LAMBDA_BASE[::-1], curves, level=0.5, window=2)
    assert result.fit.level == 0.5 and result.fit.ci != width_result().fit.ci


def test_axes_dataset_size_build_and_numbers() -> None:
    result = size_result()
    assert (result.axis, result.x_name, result.values, result.scales, result.xs) == (
        "dataset_size",
        "tau_epoch",
        [0.25, 1.0],
        [250.0, 1000.0],
        TAUS,
    )
    assert all(type(v) is float for v in result.values)
    assert result.width_exponent is None
    assert result.tau_epoch == result.results[-1].tau_epoch != result.results[0].tau_epoch
    assert (result.cost, result.full_cost) == (300, 2000)  # the full sweep once, not per point
    assert [result.x_of_tau(t) for t in TAUS] == TAUS
    assert [result._point_name(i) for i in range(2)] == ["N=250", "N=1000"]
    assert result.note() == result.fit.note()  # the fit's caution (tuner/analysis/scaling.py), passed on


def test_axes_callback_follows_rule_holds() -> None:
    width = width_result()
    assert width.callback_kwargs() == {"tau_epoch": width.tau_epoch, "width_exponent": 0.5}  # Fan et al.'s α
    assert width.width_exponent == pytest.approx(0.49885, abs=1e-5)  # the measured α, not used
    callback = width.callback(verbose=False)
    assert (callback.tau_epoch, callback.width_exponent, callback.verbose) == (width.tau_epoch, 0.5, False)
    assert width.callback(width_exponent=1.0).width_exponent == 1.0  # a setting given wins
    # the size axis hands the callback the exponent and its reference N (TimescaleCallback(size_exponent=...,
    # reference_dataset_size=...) is another change's: only the settings are checked here)
    size = size_result()
    assert size.rule_used is None  # Wang & Aitchison undetermined: the measured exponent
    assert size.callback_kwargs() == {
        "tau_epoch": size.results[-1].tau_epoch,
        "size_exponent": size.exponent,
        "reference_dataset_size": 1000,
    }


def test_axes_callback_uses_measured_exponent_no_rule_holds() -> None:
    # best tau_epoch 6, 7, 8: the best λ_base falls as width^-0.21, which no rule's band (+-0.16) holds
    points = [sweep(6.0, (1, 1.02, 0.98)), sweep(7.0, (1, 0.98, 1.02)), sweep(8.0, (1, 1.01, 0.99))]
    result = AxisResult.build("width", [64, 128, 256], points, lambda_base=LAMBDA_BASE)
    assert [r.decision for r in result.rules] == ["excluded", "excluded", "excluded"]
    assert result.rule_used is None and result.exponent_used == result.exponent
    assert result.callback_kwargs()["width_exponent"] == 1 + result.exponent
    assert (
        "Full run: TimescaleCallback(tau_epoch=6, width_exponent=0.79): no published rule holds, so the measured α"
        " (95% prediction interval 5.71 to 8 at μP's base width 64)." in (result.table())
    )


def test_axes_dataset_size_extrapolates_to_full_n() -> None:
    points = [sweep(5.0, (1, 1.1, 0.95), size=250, fraction=0.25), sweep(5.5, (1, 0.9, 1.05), size=500, fraction=0.5)]
    result = AxisResult.build("dataset_size", [0.25, 0.5], points)
    e, (lo, hi) = result.exponent, result.fit.ci
    assert result.callback_kwargs() == {
        "tau_epoch": points[-1].tau_epoch,
        "size_exponent": e,
        "reference_dataset_size": 500,
    }
    # the callback's arithmetic at the full N = 1000: tau_epoch (N / N_ref)^e, and the interval's ends
    assert result.full_tau_epoch == pytest.approx(points[-1].tau_epoch * 2**e, rel=1e-12)
    # the prediction interval there holds the exponent's interval's ends and the anchor's own range (2 scales: no
    # lack of fit to measure)
    prediction = result.predict(1000)
    assert result.full_tau_epoch_range == (prediction.low, prediction.high)
    assert prediction.tau_epoch == pytest.approx(result.full_tau_epoch, rel=1e-12) and prediction.extrapolation == 2
    low, high = result.full_tau_epoch_range
    assert low < points[-1].tau_epoch * 2**lo < result.full_tau_epoch < points[-1].tau_epoch * 2**hi < high
    assert prediction.parts["lack_of_fit"] == 0.0 and "2 scales give no lack-of-fit information" in prediction.notes
    lines = result.table().splitlines()
    assert (
        "Full run: TimescaleCallback(tau_epoch=5.4, size_exponent=0.09, reference_dataset_size=500): no rule holds"
        " yet, so the measured exponent; at the full N = 1000 that is tau_epoch 5.74 (95% prediction interval 3.02 to"
        " 12.5, x2 beyond the measured range)."
    ) in lines
    assert (
        "  The prediction interval holds the exponent's interval and the seeds' range of the best at N=500, both"
        " grown with the distance, and the lack of fit of one power law. 2 scales give no lack-of-fit information:"
        " the interval assumes one power law across and beyond them."
    ) in lines


def test_axes_dataset_size_callback_follows_rule_holds() -> None:
    # the best tau_epoch moves x1.04 over N = 100 to 800: Wang & Aitchison holds (band +-0.107), exponent +0.019
    points = [sweep(5.0, (1, 1.02, 0.98), size=100, fraction=0.125), sweep(5.2, (1, 0.99, 1.01), size=800)]
    result = AxisResult.build("dataset_size", [0.125, 1.0], points)
    assert [r.decision for r in result.rules] == ["holds", "excluded", "excluded"]
    assert result.exponent == pytest.approx(0.019, abs=0.002)
    assert result.callback_kwargs() == {
        "tau_epoch": points[-1].tau_epoch,
        "size_exponent": 0.0,
        "reference_dataset_size": 800,
    }
    assert result.full_tau_epoch == points[-1].tau_epoch  # held from N = 800 to the full 1000
    assert (
        "Full run: TimescaleCallback(tau_epoch=5.2, size_exponent=0, reference_dataset_size=800): Wang & Aitchison"
        " holds, so its exponent 0 rather than the measured +0.02; at the full N = 1000 that is tau_epoch 5.2 (95%"
        " prediction interval 3.94 to 5.35, x1.25 beyond the measured range)."
    ) in result.table().splitlines()
    # the callback itself: it holds tau_epoch x (N / 800)^0, and a measured exponent reaches it the same way
    callback = result.callback(verbose=False)
    assert isinstance(callback, TimescaleCallback)
    assert (callback.tau_epoch, callback.size_exponent, callback.reference_dataset_size) == (
        points[-1].tau_epoch,
        0.0,
        800,
    )
    measured = AxisResult.build(
        "dataset_size",
        [0.25, 0.5],
        [sweep(5.0, (1, 1.1, 0.95), size=250, fraction=0.25), sweep(5.5, (1, 0.9, 1.05), size=500, fraction=0.5)],
    ).callback(verbose=False)
    assert measured.size_exponent == pytest.approx(0.089, abs=0.001) and measured.reference_dataset_size == 500


def test_axes_tolerance_stored_checked_and_decides() -> None:
    assert width_result().tolerance == 1.25
    wide = width_result(tolerance=3.0)  # band log 3 / log 4 = 0.79 either side: the bands overlap
    assert wide.tolerance == 3.0 and [r.tolerance for r in wide.rules] == [3.0] * 3
    assert wide.fit.tolerance == 3.0  # the fit's grid-vs-estimate note uses it too
    assert [r.decision for r in wide.rules] == ["holds", "holds", "holds"]
    assert wide.rule_used.name == "Fan et al."  # the nearest to the estimate -0.50 of the three that hold
    assert "Wang & Aitchison, Fan et al. and Qiu et al. all hold (their bands overlap over this range)" in wide.verdict
    for bad in (1, 0.5, "x"):
        with raises_exactly(f"`AxisResult(tolerance={bad!r})` is not valid: use a factor above 1, e.g. 1.25."):
            width_result(tolerance=bad)


def test_axes_rule_costs_taken_at_largest_scale() -> None:
    result = width_result()
    largest = [p.values for p in result.results[-1].curve][::-1]  # grid x seeds, λ_base increasing
    for rule, r in zip(result.rules, (0.0, -0.5, -1.0)):
        expected = rule_cost(
            result.xs, largest, x_from=result.fit.optima[0], x_best=result.fit.optima[-1], scale_ratio=4.0, exponent=r
        )
        assert (rule.exponent, rule.x_rule, rule.loss_cost, rule.loss_cost_ci) == (
            r,
            expected.x_rule,
            pytest.approx(expected.mean),
            pytest.approx(expected.ci),
        )
    # carrying width 64's best λ_base (1.64) unchanged to width 256, whose best is 0.82, costs about 0.6 there
    assert result.rules[0].x_rule == pytest.approx(1.6424, abs=1e-4) == result.fit.optima[0]
    assert result.rules[0].loss_cost == pytest.approx(0.5974, abs=1e-4)
    assert abs(result.rules[1].loss_cost) < 1e-3  # Fan et al. lands on width 256's best


def test_axes_edge_warning_repeated_where_callback_built() -> None:
    # best tau_epoch 40 at N=1000: beyond the grid's last point 32
    points = [sweep(5.0, (1, 1.1, 0.95), size=250, fraction=0.25), sweep(40.0, (1, 0.9, 1.05))]
    result = AxisResult.build("dataset_size", [0.25, 1.0], points)
    assert result.results[-1].at_edge and not result.results[0].at_edge
    # 2-epoch runs: the top, 32, is already longer than the run, where decay does little (not an edge to widen)
    warning = (
        "at N=1000, the best tau_epoch is the grid's largest (32), already longer than the run's 2 epochs, where"
        " weight decay does little: the best may lie above it, toward no decay at all; more seeds would tell whether"
        " the top is flat (a plateau)."
    )
    assert result.edge_warning() == warning and result.to_json()["edge_warning"] == warning
    assert f"Warning: {warning}" in result.table().splitlines()
    assert width_result().edge_warning() is None and size_result().edge_warning() is None
    # the width axis builds its callback from the smallest width's best: here tau_epoch 2, the grid's first point
    points = [sweep(1.5, (1, 1.1, 0.95)), sweep(3.0, (1, 0.9, 1.05))]
    width = AxisResult.build("width", [64, 128], points, lambda_base=LAMBDA_BASE)
    warning = (
        "the best tau_epoch at width 64 (2) is at the edge of the grid, so the callback's tau_epoch comes from an edge"
        " value and the best may lie beyond it: widen the grid before trusting it."
    )
    assert width.edge_warning() == warning
    with pytest.warns(UserWarning, match=f"^{re.escape(f'`AxisResult.callback()`: {warning}')}$"):
        assert width.callback(verbose=False).tau_epoch == width.tau_epoch


def test_axes_to_json_and_save_json(tmp_path: Path) -> None:
    result = width_result()
    fit = result.fit
    data = result.to_json()
    assert data == {
        "axis": "width",
        "values": [64, 128, 256],
        "scales": [64.0, 128.0, 256.0],
        "x_name": "lambda_base",
        "xs": LAMBDA_BASE[::-1],
        "exponent": fit.exponent,
        "exponent_ci": list(fit.ci),
        "ci_reason": None,
        "level": 0.95,
        "curve_exponent": fit.curve_exponent,
        "width_exponent": 1 + fit.exponent,
        "tolerance": 1.25,
        "rules": [r.to_json() for r in result.rules],
        "rule_used": "Fan et al.",
        "exponent_used": -0.5,
        "verdict": result.verdict,
        "note": None,
        "optima": fit.optima,
        "grid_optima": [1.25, 1.25, 0.625],
        "per_seed_grid_optima": [[1.25] * 3, [1.25] * 3, [0.625] * 3],
        "grid_exponent": fit.grid_exponent,
        "sign_disagrees": False,
        "interior": [
            {"interior": t.interior, "level": 0.05, "p_lower": t.p_lower, "p_upper": t.p_upper, "reason": t.reason}
            for t in fit.interior
        ],
        "tau_epoch": result.tau_epoch,
        "full_tau_epoch": result.tau_epoch,
        "full_tau_epoch_range": list(result.full_tau_epoch_range),
        "prediction": result.predict(128).to_json(),
        "local_exponent": pytest.approx(math.log(fit.optima[2] / fit.optima[1]) / math.log(2), rel=1e-12),
        "interval_parts": {"seeds": list(fit.interval_parts["seeds"]), "shape": list(fit.interval_parts["shape"])},
        "shape_undetermined": [],
        "unbacked": None,
        "flat_range": list(result.flat_range()),
        "plateau": None,
        "callback": {"tau_epoch": result.tau_epoch, "width_exponent": 0.5},
        "edge_warning": None,
        "base_width_mult": 0.5,
        "cost": 450,
        "full_cost": 1500,
        "staging": None,
        "grid_added": [],
        "results": [r.to_json() for r in result.results],
    }
    assert [t["interior"] for t in data["interior"]] == [False, True, True]
    fan = data["rules"][1]  # the rule as data: exact numbers (the table rounds them)
    assert (fan["name"], fan["exponent"], fan["decision"], fan["source"]) == (
        "Fan et al.",
        -0.5,
        "holds",
        "arXiv 2510.15262",
    )
    assert fan["loss_cost"] == result.rules[1].loss_cost and fan["loss_cost_ci"] == list(result.rules[1].loss_cost_ci)
    assert [r["decision"] for r in data["rules"]] == ["excluded", "holds", "excluded"]
    size = size_result().to_json()
    assert (size["width_exponent"], size["note"], size["x_name"]) == (None, size_result().note(), "tau_epoch")
    assert size["callback"] == size_result().callback_kwargs() and size["rule_used"] is None
    assert size["rules"][2]["loss_cost"] is None and "below the grid" in size["rules"][2]["loss_cost_reason"]
    one_seed = AxisResult.build("dataset_size", [0.5, 1.0], [sweep(5.0, (1,), size=500), sweep(6.0, (1,))]).to_json()
    assert one_seed["exponent_ci"] is None
    assert one_seed["ci_reason"] == "1 seed: an interval needs at least 2 (a spread across seeds)"
    path = result.save_json(tmp_path / "sub" / "axis.json")
    assert path == tmp_path / "sub" / "axis.json"
    assert json.loads(path.read_text()) == json.loads(json.dumps(data))


def test_axes_to_json_writes_null_for_non_finite_exponent() -> None:
    result = size_result()
    broken = AxisResult(**{**result.__dict__, "fit": type(result.fit)(**{**result.fit.__dict__, "exponent": math.nan})})
    data = broken.to_json()
    assert (data["exponent"], data["grid_exponent"]) == (None, result.fit.grid_exponent)
    width = width_result()
    broken = AxisResult(**{**width.__dict__, "fit": type(width.fit)(**{**width.fit.__dict__, "exponent": math.inf})})
    assert (broken.to_json()["exponent"], broken.to_json()["width_exponent"]) == (None, None)


def test_axes_half_rules_hold_in_plural_and_set_callback() -> None:
    # the best tau_epoch halves from N = 250 to 1000: exponent -1/2, the 1/2 rules hold (band +-0.16)
    points = [sweep(8.0, (1, 1.02, 0.98), size=250, fraction=0.25), sweep(4.0, (1, 0.99, 1.01))]
    result = AxisResult.build("dataset_size", [0.25, 1.0], points)
    assert [r.decision for r in result.rules] == ["excluded", "holds", "excluded"]
    assert result.callback_kwargs()["size_exponent"] == -0.5
    full_run = next(line for line in result.table().splitlines() if line.startswith("Full run:"))
    assert "): the 1/2 rules hold, so its exponent -0.5 rather than the measured" in full_run


def test_axes_callback_applies_no_unbacked_exponent() -> None:
    # one seed: the measured exponent has no interval, so the callback follows the paper's rule and says why
    size = AxisResult.build("dataset_size", [0.5, 1.0], [sweep(5.0, (1,), size=500), sweep(6.0, (1,))])
    assert size.fit.ci is None and size.exponent != 0 and size.exponent_used == 0.0
    assert size.unbacked == f"the measured exponent {exponent(size.exponent)} has no interval ({size.fit.ci_reason})"
    assert size.callback_kwargs()["size_exponent"] == 0.0
    message = (
        f"`AxisResult.callback()`: {size.unbacked}, so the callback follows the paper's rule, Wang & Aitchison"
        " (size_exponent=0), not the measured exponent."
    )
    with pytest.warns(UserWarning, match=f"^{re.escape(message)}$"):
        assert size.callback(verbose=False).size_exponent == 0.0
    assert size.to_json()["unbacked"] == size.unbacked and size.to_json()["callback"]["size_exponent"] == 0.0
    # the width axis: unequal seed counts leave no interval; width_exponent 1, the paper's α
    width = AxisResult.build("width", [64, 128], [sweep(6.0, (1,)), sweep(9.0, (1,))], lambda_base=LAMBDA_BASE)
    assert width.unbacked is not None and width.callback_kwargs()["width_exponent"] == 1.0
    with pytest.warns(UserWarning, match="Wang & Aitchison \\(width_exponent=1\\)"):
        assert width.callback(verbose=False).width_exponent == 1.0
    assert width_result().unbacked is None  # a rule holds: nothing to say


def test_axes_snap_to_rule_whose_exponent_interval_excludes_says_cost() -> None:
    # the best tau_epoch moves x1.1 over N = 100 to 800: the interval excludes 0 itself but lies in its band (±0.107)
    points = [sweep(5.0, (1, 1.01, 0.99), size=100, fraction=0.125), sweep(5.5, (1, 0.995, 1.005), size=800)]
    result = AxisResult.build("dataset_size", [0.125, 1.0], points)
    lo, hi = result.fit.ci
    assert 0 < lo < hi < result.rules[0].band[1]
    assert result.snap_excludes is result.rule_used and result.rule_used.name == "Wang & Aitchison"
    wa = result.rules[0]
    from lightning_tau.tuner.analysis.verdicts import cost_text, signed

    assert (
        f"  Wang & Aitchison's band holds the interval [{signed(lo)}, {signed(hi)}], which excludes its exponent 0"
        f" itself: following it over the measured range, from N=100 to N=800, costs"
        f" {cost_text(wa.loss_cost, wa.loss_cost_ci)} val_loss."
    ) in result.table().splitlines()
    assert width_result().snap_excludes is None  # Fan et al.'s -1/2 lies inside the interval


def test_axes_plateau_of_callbacks_point_and_no_widen_grid() -> None:
    # N=1000's loss falls to a floor from tau_epoch 8 on, flat within one seed s.d. (0.02), 2 epochs per run
    flat = [0.5, 0.3, 0.201, 0.2005, 0.2]
    curve = [
        CurvePoint(t, [m + d for d in (-0.02, 0.0, 0.02)], [0, 1, 2], {"decay": 1.0}, [10] * 3)
        for t, m in zip(TAUS, flat)
    ]
    top = finder_result(curve, lr={"decay": 0.01}, fraction=1.0, subset_size=1000, batch_size=100, epochs=2)
    assert top.plateau == 8.0 and top.tau_epoch == 8.0 and top.at_edge
    result = AxisResult.build("dataset_size", [0.25, 1.0], [sweep(5.0, (1, 1.1, 0.95), size=250, fraction=0.25), top])
    assert result.plateau == 8.0 and result.tau_epoch == 8.0 and result.callback_kwargs()["tau_epoch"] == 8.0
    assert result.edge_warning() is None and "widen" not in result.table()
    assert result.ci_reason == (
        "the best at scale 1000 is a plateau (any tau_epoch >= 8 is as good): its optimum is not a point, so the"
        " exponent has no interval"
    )
    assert (
        "Plateau at N=1000: weight decay has no measurable effect on this model at this run length; any tau_epoch >= 8"
        " is as good (the callback uses 8)."
    ) in result.table().splitlines()
    data = result.to_json()
    assert data["plateau"] == 8.0 and [r["plateau"] for r in data["results"]] == [None, 8.0]


def test_axes_tolerance_checked_once_and_half_width_computed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # AxisResult.build is the public entry that takes `tolerance`: it checks it; fit_scaling, judge and half_width
    # take it checked. The half-width δ is computed once there; the rules' bands, the table, the note and the JSON
    # read it
    checked, computed = [], []
    in_range, formula = _checks.in_range, rules.half_width

    def counted_check(owner: str, name: str, value: Any, *args: Any, **kwargs: Any) -> float:
        if name == "tolerance":
            checked.append(owner)
        return in_range(owner, name, value, *args, **kwargs)

    def counted_half_width(tolerance: float, scales: Any) -> float:
        computed.append(tolerance)
        return formula(tolerance, scales)

    monkeypatch.setattr(_checks, "in_range", counted_check)
    monkeypatch.setattr(rules, "half_width", counted_half_width)
    monkeypatch.setattr(verdicts, "half_width", counted_half_width)
    result = width_result(tolerance=1.5)
    result.table(), result.note(), json.dumps(result.to_json())
    assert checked == ["AxisResult"] and computed == [1.5]
    delta = math.log(1.5) / math.log(256 / 64)
    assert result.half_width == pytest.approx(delta)
    for rule in result.rules:
        assert rule.band == pytest.approx((rule.exponent - delta, rule.exponent + delta))
    assert f"an exponent within ±{delta:.2f} of the rule's" in result.table()
