"""The finder axes' result (lightning_tau/tuner/axes.py) without training: build, the numbers, the JSON, the table.

Hand-made sweeps (parabolas in log tau_epoch, each seed's vertex a little off the point's) so every number is known.
These run under `make mutation` against axes.py's mutants, so the messages, the JSON and the table are checked
whole. The fits are in tests/test_finder_axes.py; the figure in tests/test_axes_figure.py.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from lightning_tau.tuner.axes import AxisResult
from lightning_tau.tuner.result import CurvePoint, FinderResult
from lightning_tau.tuner.stats import fit_scaling

TAUS = [2.0, 4.0, 8.0, 16.0, 32.0]
LR, M = 0.01, 10.0  # steps per epoch: N / B = 1000 / 100
LAMBDA_BASE = [1 / (LR * M * t) for t in TAUS]  # 5, 2.5, 1.25, 0.625, 0.3125


def sweep(
    best: float, shifts: tuple[float, ...], size: int = 1000, full_cost: int = 500, fraction: float = 1.0
) -> FinderResult:
    """Seed ``s``: ``log(t / (best * shifts[s]))^2 + 0.1 s`` on ``TAUS``; 10 steps per run."""
    curve = [
        CurvePoint(
            t,
            [math.log(t / (best * f)) ** 2 + 0.1 * s for s, f in enumerate(shifts)],
            list(range(len(shifts))),
            {"decay": 1 / (LR * M * t)},
            [10] * len(shifts),
        )
        for t in TAUS
    ]
    return FinderResult.from_curve(
        curve,
        lr={"decay": LR},
        monitor="val_loss",
        mode="min",
        reduce="last",
        fraction=fraction,
        dataset_size=1000,
        subset_size=size,
        batch_size=100,
        epochs=2,
        full_cost=full_cost,
    )


def width_result(**kwargs) -> AxisResult:
    """Best tau_epoch 6, 8.5, 12 at widths 64, 128, 256: best lambda_base falls as width^-1/2."""
    points = [sweep(6.0, (1, 1.1, 0.95)), sweep(8.5, (1, 0.9, 1.05)), sweep(12.0, (1, 1.05, 1.0))]
    return AxisResult.build("width", [64, 128, 256], points, lambda_base=LAMBDA_BASE, base_width_mult=0.5, **kwargs)


def size_result(full_cost: int = 2000) -> AxisResult:
    """Best tau_epoch about 5 at N=250 and 5.5 at N=1000."""
    points = [
        sweep(5.0, (1, 1.1, 0.95), size=250, full_cost=full_cost, fraction=0.25),
        sweep(5.5, (1, 0.9, 1.05), full_cost=full_cost),
    ]
    return AxisResult.build("dataset_size", [0.25, 1], points)


def raises_exactly(message: str) -> pytest.RaisesContext[ValueError]:
    return pytest.raises(ValueError, match=f"^{re.escape(message)}$")


def test_axes_build_messages() -> None:
    points = [sweep(6.0, (1, 1)), sweep(8.0, (1, 1))]
    with raises_exactly("`AxisResult(axis='depth')` is not supported. Use 'width' or 'dataset_size'."):
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


def test_axes_width_build_reverses_the_grid_into_lambda_base() -> None:
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
    # the best tau_epoch at the smallest width, carried along the line to s = 1 from s = 0.5
    assert result.tau_epoch == pytest.approx(result.results[0].tau_epoch * 0.5**result.exponent, rel=1e-15)
    assert result.tau_epoch == pytest.approx(8.61755, abs=1e-5)
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


def test_axes_dataset_size_build_and_its_numbers() -> None:
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
    assert result.note() == result.fit.note() is not None


def test_axes_callback_gets_the_tau_epoch_and_the_width_exponent() -> None:
    width = width_result()
    callback = width.callback(verbose=False)
    assert (callback.tau_epoch, callback.width_exponent, callback.verbose) == (
        width.tau_epoch,
        width.width_exponent,
        False,
    )
    assert width.callback(width_exponent=1.0).width_exponent == 1.0
    size = size_result().callback()
    assert (size.tau_epoch, size.width_exponent) == (size_result().tau_epoch, 1.0)


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
        "width_exponent": 1 + fit.exponent,
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
        "base_width_mult": 0.5,
        "cost": 450,
        "full_cost": 1500,
        "results": [r.to_json() for r in result.results],
    }
    assert [t["interior"] for t in data["interior"]] == [False, True, True]
    size = size_result().to_json()
    assert (size["width_exponent"], size["note"], size["x_name"]) == (None, size_result().note(), "tau_epoch")
    one_seed = AxisResult.build("dataset_size", [0.5, 1.0], [sweep(5.0, (1,), size=500), sweep(6.0, (1,))]).to_json()
    assert one_seed["exponent_ci"] is None
    assert one_seed["ci_reason"] == "1 seed: an interval needs at least 2 (a spread across seeds)"
    path = result.save_json(tmp_path / "sub" / "axis.json")
    assert path == tmp_path / "sub" / "axis.json"
    assert json.loads(path.read_text()) == json.loads(json.dumps(data))


def test_axes_to_json_writes_null_for_a_non_finite_exponent() -> None:
    result = size_result()
    broken = AxisResult(**{**result.__dict__, "fit": type(result.fit)(**{**result.fit.__dict__, "exponent": math.nan})})
    data = broken.to_json()
    assert (data["exponent"], data["grid_exponent"]) == (None, result.fit.grid_exponent)
    width = width_result()
    broken = AxisResult(**{**width.__dict__, "fit": type(width.fit)(**{**width.fit.__dict__, "exponent": math.inf})})
    assert (broken.to_json()["exponent"], broken.to_json()["width_exponent"]) == (None, None)


def test_axes_width_table_whole() -> None:
    assert width_result().table() == "\n".join(
        [
            "Timescale finder, width axis: 3 widths (64, 128, 256) x 5 tau_epochs x 3 seeds, 2 epochs; final val_loss"
            " (min), seed mean +- std:",
            "  tau_epoch | lambda_base | width 64          | width 128         | width 256",
            "  2         | 5           | 1.343 +- 0.1642   | 2.143 +- 0.2721   | 3.369 +- 0.1431",
            "  4         | 2.5         | 0.2802 +- 0.1011  | 0.6442 +- 0.1747  | 1.343 +- 0.1183",
            "  8         | 1.25        | 0.1782 +- 0.1214* | 0.1059 +- 0.1042* | 0.2784 +- 0.1029",
            "  16        | 0.625       | 1.037 +- 0.2014   | 0.5284 +- 0.1227  | 0.1742 +- 0.1011*",
            "  32        | 0.312       | 2.857 +- 0.296    | 1.912 +- 0.2076   | 1.031 +- 0.1136",
            "  (* best on the grid)",
            "Best lambda_base per width:",
            "  point     | smoothed | grid (seed mean) | grid per seed       | paired test at 0.05",
            "  width 64  | 1.64     | 1.25             | 1.25, 1.25, 1.25    | not interior (does not beat the upper"
            " neighbour (paired, p=0.11))",
            "  width 128 | 1.2      | 1.25             | 1.25, 1.25, 1.25    | interior (beats both neighbours (paired,"
            " p<0.05))",
            "  width 256 | 0.82     | 0.625            | 0.625, 0.625, 0.625 | interior (beats both neighbours (paired,"
            " p<0.05))",
            "Exponent of best lambda_base on width: -0.501 (95% interval [-0.59, -0.41]); on the grid optima -0.500.",
            "Verdict: The 95 % interval [-0.59, -0.41] of the exponent admits Fan et al. (-1/2, α = 1/2) and excludes"
            " Wang & Aitchison (0, α = 1) and Qiu et al. (-1, α = 0).",
            "Measured width_exponent = 1 + exponent = 0.499. Full run: TimescaleCallback(tau_epoch=8.62,"
            " width_exponent=0.499).",
            "Cost: 450 optimizer steps, 30% of the 1,500 the same sweeps take on the full data.",
        ]
    )


def test_axes_dataset_size_table_whole() -> None:
    assert size_result().table() == "\n".join(
        [
            "Timescale finder, dataset_size axis: 2 fractions (0.25, 1: N=250, 1000) x 5 tau_epochs x 3 seeds,"
            " 2 epochs; final val_loss (min), seed mean +- std:",
            "  tau_epoch | N=250              | N=1000",
            "  2         | 0.9704 +- 0.1432   | 1.09 +- 0.2096",
            "  4         | 0.1602 +- 0.09668* | 0.1939 +- 0.1241*",
            "  8         | 0.311 +- 0.1395    | 0.259 +- 0.1034",
            "  16        | 1.423 +- 0.2255    | 1.285 +- 0.1728",
            "  32        | 3.495 +- 0.3218    | 3.272 +- 0.27",
            "  (* best on the grid)",
            "Best tau_epoch per size:",
            "  point  | smoothed | grid (seed mean) | grid per seed | paired test at 0.05",
            "  N=250  | 5.07     | 4                | 4, 4, 4       | not interior (does not beat the upper neighbour"
            " (paired, p=0.063))",
            "  N=1000 | 5.4      | 4                | 4, 4, 8       | not interior (does not beat the upper neighbour"
            " (paired, p=0.21))",
            "Exponent of best tau_epoch on N: +0.045 (95% interval [-0.23, +0.32]); on the grid optima +0.000.",
            "The best grid point is 4 at every scale: the exponent +0.04 comes from the smoothed optimum moving within"
            " one grid cell.",
            "Verdict: 'Tune on a fraction, train on all' holds for this model: the 95 % interval [-0.23, +0.32] of the"
            " exponent of the best tau_epoch in N admits 0, and over N = 250 to 1000 the best tau_epoch moves by a"
            " factor of 1.06 (0.727 to 1.56 within the interval, inside one grid step of x2).",
            "Full run: TimescaleCallback(tau_epoch=5.4) (the best tau_epoch at the largest fraction, 1).",
            "Cost: 300 optimizer steps, 15% of the 2,000 the same sweep takes on the full data.",
        ]
    )


def test_axes_table_without_an_interval_nan_values_or_a_full_cost() -> None:
    diverged = sweep(6.0, (1,), size=500, full_cost=0)
    first = diverged.curve[0]
    diverged = FinderResult(
        **{**diverged.__dict__, "curve": [CurvePoint(first.tau_epoch, [math.nan], [0]), *diverged.curve[1:]]}
    )
    lines = AxisResult.build("dataset_size", [0.5, 1.0], [diverged, sweep(8.0, (1,), full_cost=0)]).table()
    lines = lines.splitlines()
    assert lines[2] == "  2         | nan +- 0      | 1.922 +- 0"
    assert lines[-5:-3] == [
        "Exponent of best tau_epoch on N: +0.415 (no interval: 1 seed: an interval needs at least 2 (a spread across"
        " seeds)); on the grid optima +0.000.",
        "The best grid point is 8 at every scale: the exponent +0.42 comes from the smoothed optimum moving within one"
        " grid cell.",
    ]
    assert lines[-1] == "Cost: 100 optimizer steps."
