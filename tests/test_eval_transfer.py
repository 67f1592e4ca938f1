"""``benchmarks/eval_transfer.py``, the held-out transfer benchmark: its quick run on one case writes a JSON whose
coverage, regrets and goals follow from the runs it records (recomputed here from the reference curves), and its
pure helpers and cases do what their docstrings say."""

from __future__ import annotations

import doctest
import importlib.util
import json
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

from lightning_tau.tuner.analysis.curve import smoothed_optimum
from lightning_tau.tuner.analysis.rule_costs import read_curve

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str) -> ModuleType:
    """The benchmark module ``name`` from ``benchmarks/``, imported by path (it is not a package)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_benchmark_doctests_pass() -> None:
    for name in ("_transfer_cases", "eval_transfer"):
        result = doctest.testmod(_load(name))
        assert result.failed == 0 and result.attempted > 0, name


def test_cases_cover_what_benchmark_promises() -> None:
    cases = _load("_transfer_cases").CASES
    assert len(cases) >= 8
    kinds = {c.spec.kind for c in cases.values()}
    assert kinds == {"classify", "regress", "mixture"}
    assert {c.norm for c in cases.values()} == {"none", "layer"}
    assert {c.axis for c in cases.values()} == {"dataset_size", "width"}
    for case in cases.values():
        largest = case.scales[-1]
        assert case.targets[0] == 2 * largest and 4 * largest <= case.targets[1] <= 8 * largest, case.name


def test_prediction_at_full_n_full_tau_epoch_and_carries_interval() -> None:
    """Size axis: the prediction is the package's own (``AxisResult.predict``): at the finder's own full N
    ``full_tau_epoch`` and ``full_tau_epoch_range``; at another N the callback's tau_epoch carried there, with an
    interval at least as wide as the exponent's ends carried there (it adds the anchor's range and lack of fit)."""
    from axis_results import size_result  # noqa: PLC0415

    bench = _load("eval_transfer")
    result = size_result()
    n_ref = result.results[-1].subset_size
    assert bench.prediction(result, result.results[-1].dataset_size) == pytest.approx(
        (result.full_tau_epoch, *result.full_tau_epoch_range)
    )
    tau, low, high = bench.prediction(result, 3 * n_ref)
    predicted = result.predict(3 * n_ref)
    assert (tau, low, high) == (predicted.tau_epoch, predicted.low, predicted.high)
    assert tau == pytest.approx(result.tau_epoch * 3.0**result.exponent_used)
    exponent_only = sorted(result.tau_epoch * 3.0**e for e in result.exponent_ci)
    assert low <= exponent_only[0] and exponent_only[1] <= high
    assert bench.wang_aitchison_tau(result, 3 * n_ref) == result.tau_epoch


def test_width_taus_smallest_widths_best_carried_by_exponent() -> None:
    """Width axis: the callback's (tau_epoch, width_exponent) at a target width, in the reference's terms
    (width_exponent=1), is the smallest width's best tau_epoch times (width / smallest) ** -exponent_used; Wang &
    Aitchison keep the smallest width's; the interval is ``AxisResult.predict``'s, at least as wide as the exponent's
    ends carried there."""
    from axis_results import width_result  # noqa: PLC0415

    bench = _load("eval_transfer")
    result = width_result()
    first, e = result.results[0].tau_epoch, result.exponent_used
    assert e != 0
    assert bench.callback_tau(result, 512) == pytest.approx(first * (512 / 64) ** -e)
    assert bench.wang_aitchison_tau(result, 512) == pytest.approx(first * result.base_width_mult**e)
    tau, low, high = bench.prediction(result, 512)
    predicted = result.predict(512)
    assert (tau, low, high) == (predicted.tau_epoch, predicted.low, predicted.high)
    exponent_only = sorted(first * 8.0**-x for x in result.exponent_ci)
    assert low <= exponent_only[0] * (1 + 1e-9) and exponent_only[1] <= high * (1 + 1e-9)


@pytest.mark.slow
def test_quick_run_writes_rows_computed_from_runs(tmp_path: Path) -> None:
    bench = _load("eval_transfer")
    report = bench.main(["--quick", "--cases", "cls", "--workers", "1", "--out", str(tmp_path)])
    saved = json.loads((tmp_path / "eval_transfer.json").read_text())
    assert saved["goals"] == report["goals"] and len(saved["rows"]) == 2
    assert [r["target"] for r in saved["rows"]] == list(bench._quick(bench.CASES["cls"]).targets)
    seeds = saved["settings"]["seeds"]
    for row in saved["rows"]:
        taus = [p["tau_epoch"] for p in row["reference"]]
        means = [p["mean"] for p in row["reference"]]
        assert all(len(p["values"]) == len(seeds) for p in row["reference"])
        best = smoothed_optimum(taus, means)
        assert row["realized"] == pytest.approx(best.tau_epoch)
        interval = row["interval"]
        assert row["covered"] == (interval is not None and interval[0] <= row["realized"] <= interval[1])
        assert row["seed_sd"] == pytest.approx(row["reference"][best.grid_index]["std"])
        for name in ("callback", "wang_aitchison", "grid_best"):
            regret = row["regret"][name]
            assert taus[0] <= regret["tau_epoch"] <= taus[-1]  # the reference grid covers every rule
            expected = [
                read_curve(taus, [p["values"][j] for p in row["reference"]], regret["tau_epoch"], best=best.grid_index)
                - read_curve(taus, [p["values"][j] for p in row["reference"]], best.tau_epoch, best=best.grid_index)
                for j in range(len(seeds))
            ]
            assert regret["per_seed"] == pytest.approx(expected, abs=1e-12)
            assert regret["mean"] == pytest.approx(sum(expected) / len(expected))
            assert regret["in_sd"] == pytest.approx(regret["mean"] / row["seed_sd"])
            low, high = regret["ci95"]
            assert low <= regret["mean"] <= high
        assert row["regret"]["grid_best"]["tau_epoch"] == row["realized_grid"]
        regret = row["regret"]
        diffs = [a - b for a, b in zip(regret["callback"]["per_seed"], regret["wang_aitchison"]["per_seed"])]
        assert row["callback_minus_wa"]["mean"] == pytest.approx(sum(diffs) / len(diffs))
        assert row["callback_worse_than_wa"] == (row["callback_minus_wa"]["ci95"][0] > 0)
    rows = saved["rows"]
    covered = sum(r["covered"] for r in rows) / len(rows)
    within = sum(r["regret"]["callback"]["in_sd"] <= 1 for r in rows) / len(rows)
    values = [g["value"] for g in saved["goals"]]
    assert values == [covered, sum(r["callback_worse_than_wa"] for r in rows), within]
    assert [g["passed"] for g in saved["goals"]] == [covered >= 0.8, values[1] == 0, within >= 0.8]
    assert all(math.isfinite(t) for t in saved["cases"][0]["power_law"]["optima"])
    assert "| case |" in bench.format_report(saved)
    # a rerun trains nothing: every study is complete, and the numbers are the same
    again = bench.main(["--quick", "--cases", "cls", "--workers", "1", "--out", str(tmp_path)])
    assert again["rows"] == json.loads(json.dumps(report["rows"]))
