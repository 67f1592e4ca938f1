"""``lightning_tau.tuner.analysis.axis_table``: an axis result's table, checked whole on hand-made sweeps (the width and the
dataset-size axis, and one without an interval, with a diverged run and without a full cost). These run under
`make mutation` against axis_table.py's mutants."""

from __future__ import annotations

import math

import pytest

from axis_results import size_result, sweep, width_result

from lightning_tau.tuner.analysis.axis_result import AxisResult
from lightning_tau.tuner.analysis.finder_result import CurvePoint, FinderResult


def test_width_table_whole() -> None:
    result = width_result()
    assert result.table() == "\n".join(
        [
            "Timescale finder, width axis: 3 widths (64, 128, 256) x 5 tau_epochs x 3 seeds on 1000 of 1000 training"
            " samples (fraction 1), 2 epochs each; final val_loss (min), seed mean +- std:",
            "  tau_epoch | lambda_base | width 64          | width 128         | width 256",
            "  2         | 5           | 1.343 +- 0.1642   | 2.143 +- 0.2721   | 3.369 +- 0.1431",
            "  4         | 2.5         | 0.2802 +- 0.1011  | 0.6442 +- 0.1747  | 1.343 +- 0.1183",
            "  8         | 1.25        | 0.1782 +- 0.1214* | 0.1059 +- 0.1042* | 0.2784 +- 0.1029",
            "  16        | 0.625       | 1.037 +- 0.2014   | 0.5284 +- 0.1227  | 0.1742 +- 0.1011*",
            "  32        | 0.312       | 2.857 +- 0.296    | 1.912 +- 0.2076   | 1.031 +- 0.1136",
            "  (* best on the grid)",
            "Best lambda_base per width:",
            "  point     | smoothed | grid (seed mean) | grid per seed       | do the seeds tell the grid's best from"
            " its neighbours?",
            "  width 64  | 1.64     | 1.25             | 1.25, 1.25, 1.25    | no: they cannot tell it from 2.5 (p ="
            " 0.11)",
            "  width 128 | 1.2      | 1.25             | 1.25, 1.25, 1.25    | yes, from both 0.625 and 2.5 (p ="
            " 0.011, 0.0067)",
            "  width 256 | 0.82     | 0.625            | 0.625, 0.625, 0.625 | yes, from both 0.312 and 1.25 (p ="
            " 0.00035, 0.022)",
            "  (p: the chance of differences this consistent across seeds if the two were equally good; the seeds"
            " tell them apart below 0.05)",
            "Exponent of best lambda_base on width: -0.50, 95% interval [-0.59, -0.41] (the estimate is its centre);"
            " the grid optima give -0.50; between the last two (width 128 and width 256) the optima move as -0.55.",
            "  The interval's parts: the seeds' [-0.59, -0.41] (shrinks with more seeds) and the curve's shape [-0.50,"
            " -0.50] (the smoothers' spread: more seeds do not shrink it; grid points nearer the optimum do).",
            *([str(result.note())] if result.note() else []),  # the fit's caution (tuner/analysis/scaling.py)
            "Published rules at tolerance x1.25 (a rule holds when the best λ_base stays within x1.25 of it over"
            " widths 64 to 256, i.e. an exponent within ±0.16 of the rule's):",
            "  rule             | exponent | α   | decision | cost over the measured range: at width 256 if followed"
            " from width 64 (how much worse val_loss is; mean, 95% interval over seeds)",
            "  Wang & Aitchison | 0        | 1   | excluded | +0.60 [+0.50, +0.69]",
            "  Fan et al.       | -0.5     | 0.5 | holds    | +0.0000 [-0.0002, +0.0002]",
            "  Qiu et al.       | -1       | 0   | excluded | +0.48 [+0.38, +0.58]",
            "Verdict: Wang & Aitchison (α = 1: λ ∝ s, tau_iter held; exponent 0) is excluded: over widths 64 to 256"
            " the best λ_base moves by a factor of 0.442 to 0.564, more than x1.25 of the rule's factor of 1 away;"
            " following it from width 64 to width 256 costs +0.60 [+0.50, +0.69] val_loss. Fan et al. (α = 1/2: λ ∝"
            " √s; exponent -1/2) holds: over widths 64 to 256 the best λ_base moves by a factor of 0.442 to 0.564,"
            " within x1.25 of the rule's factor of 0.5; following it from width 64 to width 256 costs +0.0000"
            " [-0.0002, +0.0002] val_loss. Qiu et al. (α = 0: the same λ at every width under μP's lr / s;"
            " exponent -1) is excluded: over widths 64 to 256 the best λ_base moves by a factor of 0.442 to 0.564,"
            " more than x1.25 of the rule's factor of 0.25 away; following it from width 64 to width 256 costs"
            " +0.48 [+0.38, +0.58] val_loss. Follow Fan et al.: result.callback() uses width_exponent = 1/2 (α).",
            "Full run: TimescaleCallback(tau_epoch=8.61, width_exponent=0.5): Fan et al. holds, so its α = 0.5, as"
            " measured (95% prediction interval 5.5 to 11.8 at μP's base width 128).",
            "At width 256 the choice barely matters: moving tau_epoch x1.25 from its best costs less than one seed"
            " s.d.; tau_epoch 8.88 to 16.7 is within one seed s.d. of the best there.",
            "Cost: 450 optimizer steps, 30% of the 1,500 the same sweeps take on the full data.",
        ]
    )


def test_dataset_size_table_whole() -> None:
    result = size_result()
    assert result.table() == "\n".join(
        [
            "Timescale finder, dataset_size axis: 2 fractions of 1000 training samples (0.25, 1: N=250, 1000) x 5"
            " tau_epochs x 3 seeds, 2 epochs each; final val_loss (min), seed mean +- std:",
            "  tau_epoch | N=250              | N=1000",
            "  2         | 0.9704 +- 0.1432   | 1.09 +- 0.2096",
            "  4         | 0.1602 +- 0.09668* | 0.1939 +- 0.1241*",
            "  8         | 0.311 +- 0.1395    | 0.259 +- 0.1034",
            "  16        | 1.423 +- 0.2255    | 1.285 +- 0.1728",
            "  32        | 3.495 +- 0.3218    | 3.272 +- 0.27",
            "  (* best on the grid)",
            "Best tau_epoch per size:",
            "  point  | smoothed | grid (seed mean) | grid per seed | do the seeds tell the grid's best from its"
            " neighbours?",
            "  N=250  | 5.07     | 4                | 4, 4, 4       | no: they cannot tell it from 8 (p = 0.063)",
            "  N=1000 | 5.4      | 4                | 4, 4, 8       | no: they cannot tell it from 8 (p = 0.21)",
            "  (p: the chance of differences this consistent across seeds if the two were equally good; the seeds"
            " tell them apart below 0.05)",
            "Exponent of best tau_epoch on N: +0.04, 95% interval [-0.23, +0.32] (the estimate is its centre); the"
            " grid optima give 0.",
            "  The interval's parts: the seeds' [-0.23, +0.32] (shrinks with more seeds) and the curve's shape [+0.04,"
            " +0.04] (the smoothers' spread: more seeds do not shrink it; grid points nearer the optimum do).",
            *([str(result.note())] if result.note() else []),  # the fit's caution (tuner/analysis/scaling.py)
            "Published rules at tolerance x1.25 (a rule holds when the best tau_epoch stays within x1.25 of it over N"
            " = 250 to 1000, i.e. an exponent within ±0.16 of the rule's):",
            "  rule             | exponent | decision     | cost over the measured range: at N=1000 if followed from"
            " N=250 (how much worse val_loss is; mean, 95% interval over seeds)",
            "  Wang & Aitchison | 0        | undetermined | +0.00 [-0.02, +0.03]",
            "  the 1/2 rules    | -0.5     | excluded     | +0.6 [+0.3, +0.9]",
            "  fixed λ          | -1       | excluded     | not measured: the rule puts tau_epoch at 1.27, below the"
            " grid (from 2)",
            "Verdict: Wang & Aitchison (tau_epoch constant, so λ ∝ 1/N; exponent 0) is undetermined: over N = 250 to"
            " 1000 the best tau_epoch moves by a factor of 0.727 to 1.56, reaching both within and beyond x1.25 of"
            " the rule's factor of 1 (more seeds would decide it); following it from N = 250 to N = 1000 costs +0.00"
            " [-0.02, +0.03] val_loss. The 1/2 rules (tau_epoch ∝ 1/√N, so λ ∝ 1/√N; exponent -1/2) are excluded:"
            " over N = 250 to 1000 the best tau_epoch moves by a factor of 0.727 to 1.56, more than x1.25 of the"
            " rule's factor of 0.5 away; following it from N = 250 to N = 1000 costs +0.6 [+0.3, +0.9] val_loss."
            " Fixed λ (the same λ at every N, so tau_epoch ∝ 1/N; exponent -1) is excluded: over N = 250 to 1000 the"
            " best tau_epoch moves by a factor of 0.727 to 1.56, more than x1.25 of the rule's factor of 0.25 away;"
            " what following it costs is not measured: the rule puts tau_epoch at 1.27, below the grid (from 2). No"
            " rule holds yet: more seeds (or a wider range of N) would decide it; meanwhile result.callback() uses"
            " the measured size_exponent = +0.04.",
            "Full run: TimescaleCallback(tau_epoch=5.4, size_exponent=0.04, reference_dataset_size=1000): no rule"
            " holds yet, so the measured exponent; at the full N = 1000 (the largest fraction) that is tau_epoch 5.4"
            " as found (95% prediction interval 4 to 8).",
            "At N=1000 the choice barely matters: moving tau_epoch x1.25 from its best costs less than one seed s.d.;"
            " tau_epoch 3.81 to 7.67 is within one seed s.d. of the best there.",
            "Cost: 300 optimizer steps for the sweeps at the 2 sizes, 15% of one sweep at the full N (2,000 steps),"
            " which would give the best tau_epoch at one N but not how it moves with N.",
        ]
    )


def test_table_without_interval_nan_values_or_full_cost() -> None:
    diverged = sweep(6.0, (1,), size=500, full_cost=0)
    first = diverged.curve[0]
    diverged = FinderResult(
        **{**diverged.__dict__, "curve": [CurvePoint(first.tau_epoch, [math.nan], [0]), *diverged.curve[1:]]}
    )
    lines = AxisResult.build("dataset_size", [0.5, 1.0], [diverged, sweep(8.0, (1,), full_cost=0)]).table()
    lines = lines.splitlines()
    assert lines[2] == "  2         | nan +- 0      | 1.922 +- 0"
    at = next(i for i, line in enumerate(lines) if line.startswith("Exponent"))
    assert lines[at] == (
        "Exponent of best tau_epoch on N: +0.21, no interval: 1 seed: an interval needs at least 2 (a spread across"
        " seeds); the seed-mean curves' optima give +0.42; the grid optima give 0."
    )
    assert lines[-3:-1] == [
        "Verdict: Following each rule from N = 500 to N = 1000 costs (val_loss): Wang & Aitchison +0.083; the 1/2 rules"
        " +0.40; fixed λ +1.1. No rule is decided without an interval (1 seed: an interval needs at least 2 (a spread"
        " across seeds)): result.callback() follows the paper's rule, Wang & Aitchison (size_exponent = 0), as nothing"
        " here backs the measured size_exponent = +0.21.",
        "Full run: TimescaleCallback(tau_epoch=8, size_exponent=0, reference_dataset_size=1000): the measured exponent"
        " +0.21 has no interval (1 seed: an interval needs at least 2 (a spread across seeds)), so the paper's rule,"
        " Wang & Aitchison's exponent 0; at the full N = 1000 (the largest fraction) that is tau_epoch 8 as found (no"
        " prediction interval).",
    ]
    assert lines[-1] == "Cost: 100 optimizer steps."


def test_says_same_point_cost_in_words_and_rounds_kwargs() -> None:
    import dataclasses

    result = size_result()
    same = dataclasses.replace(result.rules[0], loss_cost=0.0, loss_cost_ci=(0.0, 0.0), same_point=True)
    table = dataclasses.replace(result, rules=[same, *result.rules[1:]]).table()
    row = "  Wang & Aitchison | 0        | undetermined | 0: the same grid point is best at both ends (no cost"
    assert row in table
    assert "[+0.000, +0.000]" not in table and "[+0.00, +0.00]" not in table
    # the measured exponent 0.0451... prints as 0.04 in the callback's kwargs, the same spelling as the exponent line
    assert result.exponent_used == pytest.approx(0.045, abs=0.001)
    assert "TimescaleCallback(tau_epoch=5.4, size_exponent=0.04, reference_dataset_size=1000)" in result.table()
    assert result.to_json()["callback"]["size_exponent"] == result.exponent_used  # the JSON keeps it exact


def test_headers_name_data_of_every_run() -> None:
    width = width_result().table().splitlines()[0]
    assert "x 3 seeds on 1000 of 1000 training samples (fraction 1), 2 epochs each;" in width
    size = size_result().table().splitlines()[0]
    assert "2 fractions of 1000 training samples (0.25, 1: N=250, 1000) x 5 tau_epochs x 3 seeds, 2 epochs each" in size


def test_same_best_point_at_both_sizes_says_so_and_prints_zero() -> None:
    same = AxisResult.build(
        "dataset_size", [0.5, 1.0], [sweep(8.0, (1,), size=500, full_cost=0), sweep(8.0, (1,), full_cost=0)]
    )
    assert same.fit.optima[0] == same.fit.optima[1] == pytest.approx(8.0, abs=1e-9)  # 8 + float noise, at both
    table = same.table()
    assert "  Wang & Aitchison | 0        | undetermined | 0: the same grid point is best at both ends (no cost" in (
        table
    )
    assert "Wang & Aitchison +0.000" not in table and "+0.00" not in table and "-0.00" not in table
    assert "Exponent of best tau_epoch on N: 0, no interval: " in table
    assert "): the measured exponent 0 has no interval (1 seed" in table


def test_beta2_cost_line_after_rules_and_in_json() -> None:
    import dataclasses
    import json

    from lightning_tau.tuner.analysis.beta2_cost import Beta2Cost, beta2_cost

    result = size_result()
    assert "β₂ at B=" not in result.table() and "beta2_cost" not in result.to_json()  # only with beta2="both"
    cost = beta2_cost(
        {0: 1.0, 1: 2.0, 2: 3.0}, {0: 1.012, 1: 2.008, 2: 3.013}, batch_size=256, reference_batch_size=64,
        tau_epoch=8.0, monitor="val_loss",
    )
    lines = dataclasses.replace(result, beta2_cost=cost).table().splitlines()
    at = lines.index(cost.sentence())
    assert lines[at - 1].startswith("  fixed λ") and lines[at + 1].startswith("Verdict: ")
    data = json.loads(json.dumps(dataclasses.replace(result, beta2_cost=cost).to_json()))
    assert Beta2Cost.from_json(data["beta2_cost"]) == cost and data["beta2_cost"]["better"] == "fixed"
