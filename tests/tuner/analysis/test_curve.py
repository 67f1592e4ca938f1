"""The finder's pure parts (lightning_tau/tuner/analysis/curve.py): grid, smoothed optimum, result, its JSON and its table.

No training: these run under `make mutation` against curve.py's mutants (with test_finder.py's pure tests), so the
messages, the JSON and the table are checked whole. The Lightning side is tests/tuner/test_finder.py.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from finder_results import finder_result

from lightning_tau.tuner.analysis.curve import LONG_TIMESCALE, log_grid, plateau, reduce_metric, smoothed_optimum
from lightning_tau.tuner.analysis.finder_result import CurvePoint, FinderResult, PrunedPoint


def raises_exactly(message: str) -> pytest.RaisesContext[ValueError]:
    return pytest.raises(ValueError, match=f"^{re.escape(message)}$")


def result(curve: list[CurvePoint], **kwargs: Any) -> FinderResult:
    return finder_result(curve, **{"lr": {"decay": 1e-3, "other": 2e-3}, "full_cost": 240, **kwargs})


def diverged_neighbour_curve() -> list[CurvePoint]:
    """Best at 8; the point at 32 has a diverged seed (so no parabola); given out of grid order."""
    return [
        CurvePoint(32.0, [0.3, math.nan], [0, 1], {"decay": 0.03125}, [10, 10]),
        CurvePoint(2.0, [0.4, 0.5], [0, 1], {"decay": 0.5}, [10, 10]),
        CurvePoint(8.0, [0.2, 0.3], [0, 1], {"decay": 0.125, "other": 0.0625}, [10, 10]),
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0.0, 1.0, 3), "`log_grid(low=0.0)` is not valid: use a positive finite number."),
        ((True, 2.0, 3), "`log_grid(low=True)` is not valid: use a positive finite number."),
        (("1", 2.0, 3), "`log_grid(low='1')` is not valid: use a positive finite number."),
        ((1.0, math.inf, 3), "`log_grid(high=inf)` is not valid: use a positive finite number."),
        ((1.0, -2.0, 3), "`log_grid(high=-2.0)` is not valid: use a positive finite number."),
        ((10.0, 1.0, 3), "`log_grid(low=10.0, high=1.0)`: `high` must be at least `low`."),
        ((1.0, 2.0, 0), "`log_grid(num=0)` is not valid: use a positive integer."),
        ((1.0, 2.0, True), "`log_grid(num=True)` is not valid: use a positive integer."),
        ((1.0, 2.0, 2.0), "`log_grid(num=2.0)` is not valid: use a positive integer."),
    ],
)
def test_log_grid_messages(args: tuple, message: str) -> None:
    with raises_exactly(message):
        log_grid(*args)


def test_log_grid_values() -> None:
    assert log_grid(1, 1000, 4) == (1.0, 10.0, 100.0, 1000.0)
    assert log_grid(1.0, 2.0, 3) == (1.0, 1.41421356237, 2.0)  # 12 significant digits
    assert log_grid(3.0, 3.0, 2) == (3.0, 3.0) and log_grid(3, 3, 1) == (3.0,)
    assert all(isinstance(v, float) for v in log_grid(1, 4, 3))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(tau_epochs=[1.0, 2.0], values=[1.0]), "`smoothed_optimum` needs one value per grid point, got 2"
         " tau_epochs and 1 values."),
        (dict(tau_epochs=[], values=[]), "`smoothed_optimum` needs one value per grid point, got 0 tau_epochs and 0"
         " values."),
        (dict(tau_epochs=[2.0, 1.0], values=[1, 2]), "`smoothed_optimum(tau_epochs=[2.0, 1.0])` must be positive and"
         " increasing."),
        (dict(tau_epochs=[1.0, 1.0], values=[1, 2]), "`smoothed_optimum(tau_epochs=[1.0, 1.0])` must be positive and"
         " increasing."),
        (dict(tau_epochs=[0.0, 1.0], values=[1, 2]), "`smoothed_optimum(tau_epochs=[0.0, 1.0])` must be positive and"
         " increasing."),
        (dict(tau_epochs=[1.0, math.inf], values=[1, 2]), "`smoothed_optimum(tau_epochs=[1.0, inf])` must be"
         " positive and increasing."),
        (dict(tau_epochs=[1.0, 2.0], values=[math.nan, math.inf]), "`smoothed_optimum`: no value is finite (every run"
         " diverged or none reported the metric)."),
        (dict(tau_epochs=[1.0], values=[1.0], mode="lowest"), "`smoothed_optimum(mode='lowest')` is not supported."
         " Use 'min' or 'max'."),
        (dict(tau_epochs=[1.0], values=[1.0], window=0), "`smoothed_optimum(window=0)` is not valid: use an integer"
         " >= 1."),
        (dict(tau_epochs=[1.0], values=[1.0], window=True), "`smoothed_optimum(window=True)` is not valid: use an"
         " integer >= 1."),
        (dict(tau_epochs=[1.0], values=[1.0], window=1.0), "`smoothed_optimum(window=1.0)` is not valid: use an"
         " integer >= 1."),
    ],
)  # fmt: skip
def test_smoothed_optimum_messages(kwargs: dict[str, Any], message: str) -> None:
    with raises_exactly(message):
        smoothed_optimum(**kwargs)


def test_smoothed_optimum_edges_and_mode_max() -> None:
    assert smoothed_optimum([1.0, 2.0], [0.5, 0.4]) == (2.0, 0.4, 1, True, False)  # two points: no parabola
    assert smoothed_optimum([1.0, 2.0, 4.0], [0.5, 0.3, 0.4], mode="max") == (1.0, 0.5, 0, True, False)
    # a maximum between 1 and 2: the parabola through the three points, metric back in the caller's sign
    opt = smoothed_optimum([1.0, 2.0, 4.0], [0.5, 0.6, 0.4], mode="max")
    assert opt[2:] == (1, False, True)
    assert opt.tau_epoch == pytest.approx(1.7817974362806785) and opt.metric == pytest.approx(0.6041666666666664)
    # a least-squares parabola that opens the wrong way (a W over five points) falls back to the grid point
    assert smoothed_optimum([1.0, 2.0, 4.0, 8.0, 16.0], [0.31, 0.9, 0.3, 0.9, 0.31], window=2) == (
        4.0, 0.3, 2, False, False
    )  # fmt: skip
    # window 2 fits five points; the vertex is clamped to the best point's neighbours
    wide = smoothed_optimum([1.0, 2.0, 4.0, 8.0, 16.0], [0.9, 0.2, 0.21, 0.22, 0.3], window=2)
    assert wide.smoothed and wide.tau_epoch == pytest.approx(4.0)


def test_point_mean_and_std_edge_cases() -> None:
    assert CurvePoint(1.0, [], []).mean == math.inf and CurvePoint(1.0, [], []).std == 0.0
    assert CurvePoint(1.0, [0.25], [0]).std == 0.0 and CurvePoint(1.0, [0.25], [0]).mean == 0.25
    assert math.isnan(CurvePoint(1.0, [0.2, math.inf], [0, 1]).std)
    assert CurvePoint(1.0, [0.2, 0.4, 0.9], [0, 1, 2]).std == pytest.approx(0.36055512754639896)


def test_from_curve_sorts_grid_and_derives_full_runs_weight_decay() -> None:
    r = result(diverged_neighbour_curve())
    assert [p.tau_epoch for p in r.curve] == [2.0, 8.0, 32.0]
    assert (r.tau_epoch, r.grid_tau_epoch, r.at_edge, r.smoothed) == (8.0, 8.0, False, False)
    assert r.weight_decay == {"decay": pytest.approx(6.25), "other": pytest.approx(3.125)}  # 1 / (lr * 8 * 20)
    assert r.subset_weight_decay == {"decay": 0.125, "other": 0.0625} and r.lr == {"decay": 1e-3, "other": 2e-3}
    assert (r.steps_per_epoch, r.cost, r.full_cost, r.cost_fraction) == (20.0, 60, 240, 0.25)
    # an explicit M (a partial last batch) and mode="max"
    r = result(diverged_neighbour_curve(), steps_per_epoch=25, mode="max", full_cost=0)
    assert (r.tau_epoch, r.steps_per_epoch, r.mode) == (2.0, 25.0, "max") and r.at_edge
    assert r.weight_decay["decay"] == pytest.approx(1 / (1e-3 * 2.0 * 25)) and math.isnan(r.cost_fraction)


def test_from_curve_passes_window_on() -> None:
    taus, means = [1.0, 2.0, 4.0, 8.0, 16.0], [0.9, 0.2, 0.21, 0.22, 0.3]
    curve = [CurvePoint(t, [m], [0], {}, [1]) for t, m in zip(taus, means)]
    assert result(curve, window=2).tau_epoch == smoothed_optimum(taus, means, window=2).tau_epoch
    assert result(curve).tau_epoch == smoothed_optimum(taus, means).tau_epoch != result(curve, window=2).tau_epoch


def test_to_json_and_save_json(tmp_path: Path) -> None:
    r = result(diverged_neighbour_curve())
    expected = {
        "tau_epoch": 8.0,
        "grid_tau_epoch": 8.0,
        "at_edge": False,
        "weight_decay": {"decay": 6.25, "other": 3.125},
        "lr": {"decay": 0.001, "other": 0.002},
        "subset_weight_decay": {"decay": 0.125, "other": 0.0625},
        "monitor": "val_loss",
        "mode": "min",
        "reduce": "last",
        "fraction": 0.25,
        "dataset_size": 1000,
        "subset_size": 250,
        "batch_size": 50,
        "epochs": 10,
        "steps_per_epoch": 20.0,
        "cost": 60,
        "full_cost": 240,
        "curve": [
            {"tau_epoch": 2.0, "mean": 0.45, "std": pytest.approx(0.0707106781), "values": [0.4, 0.5],
             "seeds": [0, 1], "weight_decay": {"decay": 0.5}, "steps": [10, 10]},
            {"tau_epoch": 8.0, "mean": 0.25, "std": pytest.approx(0.0707106781), "values": [0.2, 0.3],
             "seeds": [0, 1], "weight_decay": {"decay": 0.125, "other": 0.0625}, "steps": [10, 10]},
            {"tau_epoch": 32.0, "mean": None, "std": None, "values": [0.3, None], "seeds": [0, 1],
             "weight_decay": {"decay": 0.03125}, "steps": [10, 10]},
        ],
        "smoothed": False,
        "tau_epoch_range": [pytest.approx(3.41653681913879), pytest.approx(18.73241922682763)],
        "verdict": "the best tau_epoch lies inside the grid, somewhere from 3.42 to 18.7 (a factor of 5.48)",
        "cost_fraction": 0.25,
        "pruned": [],
        "plateau": None,
        "grid_added": [],
    }  # fmt: skip
    assert r.to_json() == expected
    path = r.save_json(tmp_path / "new" / "runs" / "finder.json")  # parents created
    assert path == tmp_path / "new" / "runs" / "finder.json"
    assert r.save_json(tmp_path / "new" / "runs" / "again.json").exists()  # into a folder that exists
    text = path.read_text()
    assert text.endswith("}\n") and text.startswith('{\n  "tau_epoch": 8.0,')  # indented, one trailing newline
    assert json.loads(text) == expected


def test_save_json_writes_strict_json_only(tmp_path: Path) -> None:
    # a hand-built result without a full cost has cost_fraction nan, which strict JSON cannot hold
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        result(diverged_neighbour_curve(), full_cost=0).save_json(tmp_path / "finder.json")


def test_callback_passes_arguments_on() -> None:
    callback = result(diverged_neighbour_curve()).callback(verbose=False)
    assert (callback.tau_epoch, callback.verbose) == (8.0, False)


def test_table_shows_curve_suggestion_and_cost() -> None:
    assert result(diverged_neighbour_curve()).table() == "\n".join(
        [
            "Timescale finder: 3 tau_epochs x 2 seeds on a 0.25 subset (250 of 1000 samples), 10 epochs, B=50; final"
            " val_loss (lower is better):",
            "  tau_epoch | mean | std    | per seed | subset weight decay       | note",
            "  2         | 0.45 | 0.0707 | 0.4, 0.5 | decay=0.5                 |",
            "  8         | 0.25 | 0.0707 | 0.2, 0.3 | decay=0.125, other=0.0625 | best on grid",
            "  32        | nan  | nan    | 0.3, nan | decay=0.0312              |",
            "Suggested tau_epoch: 8 (the best grid point).",
            "Uncertainty: the 2 seeds cannot tell tau_epoch 3.42 to 18.7 apart from it; a rerun with other seeds may"
            " suggest anything in that range.",
            "Verdict: the best tau_epoch lies inside the grid, somewhere from 3.42 to 18.7 (a factor of 5.48).",
            "Weight decay for the full run (N=1000, B=50, 20 steps per epoch), as TimescaleCallback(tau_epoch=8) will"
            " set it:",
            "  group | lr    | weight decay | naive (subset's best, kept)",
            "  decay | 0.001 | 6.25         | 0.125",
            "  other | 0.002 | 3.12         | 0.0625",  # 3 significant digits in text (3.125 in the JSON)
            "Cost: 60 optimizer steps, 25% of the 240 the same sweep takes on the full data.",
        ]
    )


def test_table_says_how_it_smoothed_and_warns_at_edge() -> None:
    smooth = [CurvePoint(t, [v], [0], {}, [1000]) for t, v in [(2.0, 0.4), (8.0, 0.2), (32.0, 0.3)]]
    lines = result(smooth, reduce="best", full_cost=2000).table().splitlines()
    assert lines[0].endswith("B=50; best val_loss (lower is better):")
    assert lines[0].startswith("Timescale finder: 3 tau_epochs x 1 seed on")
    assert lines[5] == (
        "Suggested tau_epoch: 10.1 (where a smooth curve through the best grid point (8) and its neighbours is lowest)."
    )
    assert lines[-1] == "Cost: 3,000 optimizer steps, 150% of the 2,000 the same sweep takes on the full data."
    empty = FinderResult(**{**result(smooth).__dict__, "curve": []}).table().splitlines()
    assert empty[0].startswith("Timescale finder: 0 tau_epochs x 0 seeds on a 0.25 subset")
    edge = result([CurvePoint(t, [v], [0]) for t, v in [(2.0, 0.1), (8.0, 0.2)]]).table().splitlines()
    assert edge[4:7] == [
        "Suggested tau_epoch: 2 (the best grid point).",
        "Uncertainty: with one seed the noise is unknown, so the range is the best grid point's neighbours, 2 to 8.",
        "Verdict: the best tau_epoch is the grid's smallest (2), so the best may lie below it: widen the grid.",
    ]


def test_optimum_range_uses_exact_t_quantile_beyond_two_degrees_of_freedom() -> None:
    """4 seeds (df 3): the right neighbour's paired t statistic is 2.34, between the Cornish-Fisher approximation of
    the 95% quantile (2.311, which the range used before) and the exact one (2.353); only the exact rule joins it."""
    from lightning_tau.tuner.analysis.curve import optimum_range
    from lightning_tau.tuner.analysis.tdist import t_quantile

    assert t_quantile(0.95, 3) == pytest.approx(2.353363, abs=1e-6)
    gaps = [0.0235, 0.0035, 0.0235, 0.0035]  # mean 0.0135, sd 0.01155: t = 0.0135 / (0.01155 / 2) = 2.338
    values = [[0.5] * 4, [0.3] * 4, [0.2] * 4, [0.2 + g for g in gaps], [0.5] * 4]
    low, high = optimum_range([1.0, 2.0, 4.0, 8.0, 16.0], values, level=0.9)
    assert high == 8.0
    assert low == 4.0  # the best grid point (the smoothed optimum is ~5.2); the left neighbour is far worse


def test_optimum_range_messages_and_single_resample() -> None:
    from lightning_tau.tuner.analysis.curve import optimum_range

    grid = [1.0, 3.0, 9.0, 27.0, 81.0]
    seeds = [[(math.log(t) - math.log(10.0 * k)) ** 2 for k in (0.8, 1.0, 1.25)] for t in grid]
    with raises_exactly("`optimum_range(level=1.0)` is not valid: use a number in (0, 1), e.g. 0.9."):
        optimum_range(grid, seeds, level=1.0)
    with raises_exactly("`optimum_range(resamples=0)` is not valid: use a positive integer."):
        optimum_range(grid, seeds, resamples=0)
    low, high = optimum_range(grid, seeds, resamples=1)  # one draw: no spread, the paired test alone
    assert (low, high) == pytest.approx((9.0, 10.0), rel=1e-9)
    # two draws: their spread, widened by t_{2, 0.95} (the exact numbers of the default seed)
    assert optimum_range(grid, seeds, resamples=2) == pytest.approx((4.712459649086564, 21.220340850957356), rel=1e-9)


def test_optimum_range_needs_same_seeds_and_counts_diverged_run_as_worst() -> None:
    from lightning_tau.tuner.analysis.curve import optimum_range

    for values, counts in (([[0.1, 0.2], [0.3]], "[1, 2]"), ([[], []], "[0]")):
        with raises_exactly(
            f"`optimum_range` needs the same seeds at every grid point, got {counts} values per point."
        ):
            optimum_range([1.0, 2.0], values)
    grid = [1.0, 3.0, 9.0, 27.0, 81.0]
    values = [[0.9, 0.8, 0.85], [0.5, 0.45, 0.55], [0.2, 0.25, 0.22], [0.6, math.nan, 0.5], [0.9, 0.95, 0.85]]
    expected = (8.35029023971053, 9.70026162860753)  # around 9; the diverged point at 27 is the worst, not the best
    assert optimum_range(grid, values) == pytest.approx(expected, rel=1e-9)
    assert optimum_range(grid, [[-v for v in row] for row in values], mode="max") == pytest.approx(expected, rel=1e-9)


def test_reduce_metric_takes_last_value_or_best_finite_one() -> None:
    values = [0.9, 0.4, math.nan, 0.6]
    assert reduce_metric(values, "last", "min") == 0.6
    assert math.isnan(reduce_metric([0.5, math.nan], "last", "min"))  # a run that diverged at the end
    assert reduce_metric(values, "best", "min") == 0.4
    assert reduce_metric(values, "best", "max") == 0.9
    assert reduce_metric([math.inf, 2.0], "best", "max") == 2.0  # not finite is not best
    assert math.isnan(reduce_metric([math.nan, math.inf], "best", "min"))
    assert math.isnan(reduce_metric([], "last", "min")) and math.isnan(reduce_metric([], "best", "min"))


def _pruned_sweep() -> tuple[list[CurvePoint], list[PrunedPoint]]:
    """Best at the curve's top end (32); pruned: 4 below it, 64 and 128 beyond it, given out of grid order."""
    curve = [
        CurvePoint(t, [v, v + 0.01], [0, 1], {"decay": 1.0 / t}, [10, 10])
        for t, v in [(8.0, 0.4), (16.0, 0.3), (32.0, 0.2)]
    ]
    pruned = [
        PrunedPoint(128.0, [0, 1], [3, 0], [0.5, math.nan], {"decay": 1 / 128}, [3, 0]),
        PrunedPoint(4.0, [0, 1], [None, 2], [0.6, 0.7], {"decay": 0.25}, [10, 2]),
        PrunedPoint(64.0, [0, 1], [5, 0], [0.45, math.nan], {"decay": 1 / 64}, [5, 0]),
    ]
    return curve, pruned


def test_pruned_points_in_grid_order_in_table_and_json_and_range_reaches_nearest_beyond() -> None:
    curve, pruned = _pruned_sweep()
    found = result(curve, pruned=pruned, lr={"decay": 1e-3}, full_cost=9600)
    assert [p.tau_epoch for p in found.pruned] == [4.0, 64.0, 128.0]
    assert (found.grid_tau_epoch, found.at_edge, found.tau_epoch_range[1]) == (32.0, False, 64.0)
    assert found.cost == 20 + 20 + 20 + 12 + 5 + 3
    lines = found.table().splitlines()
    assert lines[0].startswith("Timescale finder: 6 tau_epochs x 2 seeds on a 0.25 subset")
    assert lines[1:8] == [
        "  tau_epoch | mean   | std     | per seed  | subset weight decay | note",
        "  4         | pruned |         |           | decay=0.25          | pruned: seed 0 completed, seed 1 after"
        " epoch 2",
        "  8         | 0.405  | 0.00707 | 0.4, 0.41 | decay=0.125         |",
        "  16        | 0.305  | 0.00707 | 0.3, 0.31 | decay=0.0625        |",
        "  32        | 0.205  | 0.00707 | 0.2, 0.21 | decay=0.0312        | best on grid",
        "  64        | pruned |         |           | decay=0.0156        | pruned: seed 0 after epoch 5, seed 1 not"
        " trained",
        "  128       | pruned |         |           | decay=0.00781       | pruned: seed 0 after epoch 3, seed 1 not"
        " trained",
    ]
    assert (
        "Pruned: tau_epoch 4, 64, 128 (runs: 3 stopped early, 2 not trained); not on the curve: every seed of a"
        " tau_epoch must complete to be compared."
    ) in lines
    assert found.to_json()["pruned"][1] == {
        "tau_epoch": 64.0,
        "seeds": [0, 1],
        "pruned_after_epoch": [5, 0],
        "last_values": [0.45, None],
        "weight_decay": {"decay": 1 / 64},
        "steps": [5, 0],
        "note": "pruned: seed 0 after epoch 5, seed 1 not trained",
    }
    assert [p["tau_epoch"] for p in found.to_json()["pruned"]] == [4.0, 64.0, 128.0]


def test_best_point_at_curves_low_end_reaches_nearest_pruned_point_below() -> None:
    curve = [
        CurvePoint(t, [v, v + 0.01], [0, 1], {"decay": 1.0 / t}, [10, 10])
        for t, v in [(8.0, 0.2), (16.0, 0.3), (32.0, 0.4)]
    ]
    below = [PrunedPoint(t, [0, 1], [2, 0], [0.9, math.nan], {}, [2, 0]) for t in (2.0, 4.0)]
    found = result(curve, pruned=below)
    assert (found.grid_tau_epoch, found.at_edge, found.tau_epoch_range[0]) == (8.0, False, 4.0)


# --- plateau: where weight decay stops mattering ---------------------------------------------------------------------

_FLAT_TOP = [0.20, 0.17, 0.155, 0.1492, 0.1491, 0.149]
_GRID6 = [4.0, 8.0, 16.0, 32.0, 64.0, 128.0]


def _seeded(means: list[float], spread: float = 0.002) -> list[list[float]]:
    return [[m - spread, m, m + spread] for m in means]


def test_plateau_start_of_flat_top_within_one_seed_sd():
    assert plateau(_GRID6, _seeded(_FLAT_TOP), epochs=20) == 32.0
    # a wider seed spread that every seed shares (its initialization) flattens nothing: 16 is 0.006 worse at each seed
    assert plateau(_GRID6, _seeded(_FLAT_TOP, 0.006), epochs=20) == 32.0
    # the same means with paired noise the seeds cannot see past: 16 is not measurably worse, 8 is
    noise = [(0, 0, 0), (0, 0, 0), (-0.010, -0.004, 0.010), (0.002, -0.002, 0.0), (0.0, 0.001, -0.001), (0, 0, 0)]
    noisy = [[v + n for v, n in zip(row, ns)] for row, ns in zip(_seeded(_FLAT_TOP, 0.006), noise)]
    assert plateau(_GRID6, noisy, epochs=20) == 16.0
    # two seeds that cannot tell apart a difference of several seed s.d. (8 is 0.08 worse at s.d. 0.02) make no
    # plateau of it: the quick batch demo's B=16 curve, 2 seeds x 2 epochs
    quick = [[1.2467, 1.2454], [1.1732, 1.1962], [1.1492, 1.1809]]
    assert plateau([2.0, 8.0, 32.0], quick, epochs=2) == 8.0
    # a point within a quarter of the best's seed s.d. is a tie, however consistent
    assert plateau(_GRID6, _seeded([0.2, 0.17, 0.155, 0.1505, 0.1495, 0.149], 0.006), epochs=20) == 32.0
    assert plateau(_GRID6, _seeded([0.2, 0.17, 0.155, 0.1506, 0.1495, 0.149], 0.006), epochs=20) == 64.0


# A width-16 model of benchmarks/eval_transfer.py's mup-reg case (val MSE, 5 seeds, 16 epochs): a clear minimum at
# 5.7-8 that every seed sees, under a seed s.d. (0.03) as large as the whole rise to the top. Read as a plateau by
# the unpaired rule this replaced ("every larger mean within one seed s.d."), its start 2.83 became the width axis's
# anchor, 2.3x short of the optimum, and cost 7 seed s.d. at 2x and 4x the width.
_MUP_REG_GRID = [2.0, 2.828427, 4.0, 5.656854, 8.0, 11.313708, 16.0, 22.627417, 32.0]
_MUP_REG = [
    [0.325, 0.273, 0.331, 0.288, 0.272],
    [0.280, 0.231, 0.270, 0.216, 0.214],
    [0.260, 0.200, 0.240, 0.194, 0.192],
    [0.255, 0.190, 0.234, 0.189, 0.183],
    [0.244, 0.196, 0.241, 0.191, 0.181],
    [0.238, 0.211, 0.253, 0.200, 0.186],
    [0.243, 0.224, 0.261, 0.209, 0.193],
    [0.246, 0.231, 0.266, 0.221, 0.199],
    [0.253, 0.240, 0.269, 0.232, 0.206],
]


def test_plateau_none_for_a_minimum_every_seed_sees_under_wide_seed_spread():
    assert plateau(_MUP_REG_GRID, _MUP_REG, epochs=16) is None
    # the top alone measurably worse than a best just below it: still a minimum
    assert plateau(_GRID6, _seeded([0.20, 0.17, 0.155, 0.150, 0.149, 0.16]), epochs=20) is None
    # shuffle which seed is which at the top (no longer paired): nothing there is measurably worse, a plateau
    unpaired = [row if i < 6 else row[i % 5:] + row[: i % 5] for i, row in enumerate(_MUP_REG)]
    assert plateau(_MUP_REG_GRID, unpaired, epochs=16) is not None
    # mode="max": the same curve negated
    assert plateau(_GRID6, [[-v for v in row] for row in _seeded(_FLAT_TOP)], "max", epochs=20) == 32.0


def test_plateau_needs_top_longer_than_run():
    assert plateau(_GRID6, _seeded(_FLAT_TOP), epochs=128 / LONG_TIMESCALE) == 32.0
    assert plateau(_GRID6, _seeded(_FLAT_TOP), epochs=128 / LONG_TIMESCALE + 1) is None
    assert plateau(_GRID6, _seeded(_FLAT_TOP)) == 32.0  # epochs not given: not checked


def test_plateau_none_for_edge_interior_optimum_or_one_seed():
    falling = [0.20, 0.17, 0.155, 0.14, 0.12, 0.10]  # still falling: an edge to widen, not a plateau
    assert plateau(_GRID6, _seeded(falling), epochs=20) is None
    interior = [0.20, 0.15, 0.12, 0.15, 0.18, 0.20]
    assert plateau(_GRID6, _seeded(interior), epochs=20) is None
    # the best below a rise that comes back down: the top is flat with itself but the best lies outside it
    dip = [0.20, 0.149, 0.17, 0.1495, 0.1494, 0.1493]
    assert plateau(_GRID6, _seeded(dip), epochs=20) is None
    assert plateau(_GRID6, [[m] for m in _FLAT_TOP], epochs=20) is None
    diverged = _seeded(_FLAT_TOP)
    diverged[-1][0] = math.nan
    assert plateau(_GRID6, diverged, epochs=20) is None


def test_plateau_flat_from_its_best_or_from_the_grid_bottom():
    # the best is the flat top's first point: the plateau starts there
    assert plateau(_GRID6, _seeded([0.20, 0.17, 0.155, 0.149, 0.1491, 0.1492]), epochs=20) == 32.0
    # flat over the whole grid: from its bottom
    assert plateau(_GRID6, _seeded([0.1495, 0.1494, 0.1493, 0.1492, 0.1491, 0.149]), epochs=20) == 4.0


def test_plateau_paired_test_uses_the_seeds_sample_sd():
    # 16 is 0.0013 worse, paired differences 0.0005, 0.0014, 0.0019 (s.d. 0.0007 with ddof=1): the paired bound,
    # 2.92 x 0.0007 / sqrt(3) = 0.0012, just tells it worse, so the flat top starts at 32 (with ddof=2, 16)
    rows = _seeded(_FLAT_TOP)
    rows[2] = [v + n for v, n in zip(rows[2], (-0.0055, -0.0046, -0.0041))]
    assert plateau(_GRID6, rows, epochs=20) == 32.0


def test_plateau_bad_input():
    for level in (0, 0.0, 1, 1.5, True, "0.9", -0.1):
        with pytest.raises(ValueError, match=rf"`plateau\(level={level!r}\)` is not valid: use a number in \(0, 1\)"):
            plateau(_GRID6, _seeded(_FLAT_TOP), level=level)
    with pytest.raises(ValueError, match=r"plateau\(mode='up'\)"):
        plateau(_GRID6, _seeded(_FLAT_TOP), "up")
    with pytest.raises(ValueError, match="6 tau_epochs and 5 lists"):
        plateau(_GRID6, _seeded(_FLAT_TOP)[:5])
