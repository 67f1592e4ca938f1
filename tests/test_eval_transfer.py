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
    assert {c.axis for c in cases.values()} == {"dataset_size", "width", "batch_size"}
    assert {c.lr_scaling for c in cases.values() if c.axis == "batch_size"} == {"none", "sqrt"}
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


M = {"none": 0.0, "sqrt": 0.5, "linear": 1.0}  # lr ∝ B^m, written out here rather than read from the package


@pytest.mark.parametrize("axis, m", [("batch_size", 0.0), ("batch_size_lr_sqrt", 0.5), ("batch_size_lr_linear", 1.0)])
def test_batch_rules_carry_smallest_batch_best(axis: str, m: float) -> None:
    """Batch axis: from the smallest batch's best tau_epoch (B_0 = 16), at B = 256 the callback holds it times
    16 ** exponent_used, Wang & Aitchison keep it, fixed λ carries it by 16 ** (1 - m); the interval is
    ``AxisResult.predict``'s."""
    from axis_results import size_result, sweep  # noqa: PLC0415

    from lightning_tau.tuner.analysis.axis_result import AxisResult  # noqa: PLC0415

    bench = _load("eval_transfer")
    points = [sweep(6.0, (1, 1.1, 0.95)), sweep(8.5, (1, 0.9, 1.05)), sweep(12.0, (1, 1.05, 1.0))]
    result = AxisResult.build(axis, [16, 32, 64], points)
    first, e = result.results[0].tau_epoch, result.exponent_used
    assert result.callback_kwargs()["reference_batch_size"] == 16 and e != 0
    taus = bench.rule_taus(result, 256)
    expected = {"callback": first * 16**e, "wang_aitchison": first, "fixed_lambda": first * 16 ** (1 - m)}
    assert taus == pytest.approx(expected)
    predicted = result.predict(256)
    assert bench.prediction(result, 256) == (predicted.tau_epoch, predicted.low, predicted.high)
    assert "fixed_lambda" not in bench.rule_taus(size_result(), 4000)  # a rule of the batch axis only


def test_batch_reference_trains_at_target_batch_and_scaled_lr() -> None:
    """A batch case's reference at a target B: the model's batch_size and the loader at B, the lr times
    (B / B_0) ** m, on the finder's training set; the finder's model at the smallest batch and the case's lr."""
    cases = [c for c in _load("_transfer_cases").CASES.values() if c.axis == "batch_size"]
    assert len(cases) >= 2
    for case in cases:
        finder_model, finder_data = case.finder_model()(), case.finder_data()
        assert (finder_model.batch_size, finder_model.lr, finder_data.batch_size) == (case.scales[0], case.lr, 16)
        for target in case.targets:
            model, data = case.reference_model(target)(), case.reference_data(target)
            assert model.batch_size == data.batch_size == target, case.name
            assert model.lr == pytest.approx(case.lr * (target / case.scales[0]) ** M[case.lr_scaling]), case.name
            assert data.train_size == finder_data.train_size == case.train_size
            assert case.steps(target) == case.epochs * math.ceil(case.train_size / target)


def _check_rows(bench: ModuleType, saved: dict) -> None:
    """Every row's coverage, regrets and goals recomputed from the reference curves the JSON records."""
    seeds = saved["settings"]["seeds"]
    for row in saved["rows"]:
        taus = [p["tau_epoch"] for p in row["reference"]]
        assert all(a < b * (1 - 1e-6) for a, b in zip(taus, taus[1:]))  # each point once, increasing
        means = [p["mean"] for p in row["reference"]]
        assert all(len(p["values"]) == len(seeds) for p in row["reference"])
        best = smoothed_optimum(taus, means)
        assert row["realized"] == pytest.approx(best.tau_epoch)
        interval = row["interval"]
        assert row["covered"] == (interval is not None and interval[0] <= row["realized"] <= interval[1])
        assert row["seed_sd"] == pytest.approx(row["reference"][best.grid_index]["std"])
        for name, regret in row["regret"].items():
            if name == "fixed_lambda" and regret["mean"] is None:  # --quick's grid need not reach it
                assert not taus[0] <= regret["tau_epoch"] <= taus[-1] and regret["reason"]
                continue
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


@pytest.mark.slow
def test_quick_run_writes_rows_computed_from_runs(tmp_path: Path) -> None:
    bench = _load("eval_transfer")
    report = bench.main(["--quick", "--cases", "cls", "--workers", "1", "--out", str(tmp_path)])
    saved = json.loads((tmp_path / "eval_transfer.json").read_text())
    assert saved["goals"] == report["goals"] and len(saved["rows"]) == 2
    assert [r["target"] for r in saved["rows"]] == list(bench._quick(bench.CASES["cls"]).targets)
    _check_rows(bench, saved)
    # a rerun trains nothing: every study is complete, and the numbers are the same
    again = bench.main(["--quick", "--cases", "cls", "--workers", "1", "--out", str(tmp_path)])
    assert again["rows"] == json.loads(json.dumps(report["rows"]))


@pytest.mark.slow
def test_quick_batch_case_trains_each_batch_and_rule(tmp_path: Path) -> None:
    """A batch case's quick run: the finder trained every measured batch and each reference its target batch, as the
    finder recorded them (loader batch, steps, samples, lr ∝ √B from the smallest batch's), and the rules'
    tau_epochs are the callback's, constant, and ∝ B^(1 - 1/2) from the smallest batch's best."""
    bench = _load("eval_transfer")
    bench.main(["--quick", "--cases", "batch-cls-sqrt", "--workers", "1", "--out", str(tmp_path)])
    saved = json.loads((tmp_path / "eval_transfer.json").read_text())
    case = bench._quick(bench.CASES["batch-cls-sqrt"])
    assert [r["target"] for r in saved["rows"]] == list(case.targets) == [2 * case.scales[-1], 4 * case.scales[-1]]
    _check_rows(bench, saved)
    finder = saved["cases"][0]["finder"]
    b0, lr0 = case.scales[0], finder["trained_at"][0]["lr"]["decay"]
    assert lr0 == pytest.approx(case.lr)
    for b, trained in zip(case.scales, finder["trained_at"]):
        assert trained["batch_size"] == b and trained["subset_size"] == case.train_size
        assert trained["steps"] == [case.epochs * math.ceil(case.train_size / b)]
        assert trained["lr"]["decay"] == pytest.approx(lr0 * (b / b0) ** 0.5)
    callback = finder["callback"]
    assert callback["reference_batch_size"] == b0
    for row in saved["rows"]:
        target, trained = row["target"], row["reference_trained_at"]
        assert trained["batch_size"] == target and trained["subset_size"] == case.train_size
        assert trained["steps"] == [case.epochs * math.ceil(case.train_size / target)]
        assert trained["lr"]["decay"] == pytest.approx(lr0 * (target / b0) ** 0.5)
        taus = {name: r["tau_epoch"] for name, r in row["regret"].items()}
        tau0 = callback["tau_epoch"]
        assert taus["callback"] == pytest.approx(tau0 * (target / b0) ** callback["batch_exponent"])
        assert taus["wang_aitchison"] == pytest.approx(tau0)
        assert taus["fixed_lambda"] == pytest.approx(tau0 * (target / b0) ** 0.5)
    assert "| batch-cls-sqrt | batch_size |" in bench.format_report(saved)
