"""``lightning-tau demo --axis width``: a λ_base sweep at a fixed lr_base, real mup and real Lightning.

What must hold: the two arms step with the weight decay they claim at every optimizer step (read by a torch step
post-hook); ``summary.json``'s ``best_lambda_base``, ``interior`` and ``exponent`` follow from its own ``curves``
(recomputed here without the package's functions); and the curves are the runs the sweep logged to TensorBoard.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import statistics
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")
pytest.importorskip("mup")

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.plugins.hparams import plugin_data_pb2  # noqa: E402

from lightning_tau.cli import main  # noqa: E402
from lightning_tau.demos.width import (  # noqa: E402
    ARMS,
    BASE_ARM,
    MuDigitsMLP,
    WidthConfig,
    draw_width_sweep,
    run_one_width,
    width_summary,
)
from lightning_tau.demos.width_curves import bootstrap_exponent, is_bracketed, is_interior  # noqa: E402

# one short epoch per run: enough for the optimizer to take steps, cheap on two shared cores
TINY = WidthConfig(widths=[8, 32], weight_decays=[0.5], seeds=[0], epochs=1, train_size=128, batch_size=32)

# the CLI sweep the summary tests read: 2 widths (s = 1, 4) x 3 λ_base x 2 seeds, one epoch of 6 steps per run
SWEEP_ARGS = ["--widths", "8", "32", "--weight-decays", "4", "16", "64", "--seeds", "0", "1"]
SWEEP_ARGS += ["--epochs", "1", "--batch-size", "256", "--lr-base", "0.003"]


def _fit(arm: str, width: int, config: WidthConfig = TINY) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*(fixed-λ muP pitfall|does not have many workers|less than one)")
        return run_one_width(config, arm, width, config.weight_decays[0], 0, None)


@pytest.fixture(scope="module")
def tiny_runs() -> dict[tuple[str, int], dict[str, Any]]:
    return {(arm, 32): _fit(arm, 32) for arm in ARMS} | {(BASE_ARM, 8): _fit(BASE_ARM, 8)}


def test_arms_step_with_their_weight_decay_at_every_step(tiny_runs: dict) -> None:
    lam, lr = TINY.weight_decays[0], TINY.lr
    for (arm, width), run in tiny_runs.items():
        s = width / TINY.base_width
        assert run["optimizer_steps"] == 4  # 128 digits / 32 per batch
        # the distinct weight decays the step post-hook saw over every optimizer step of the run: one value each
        decays = run["step_weight_decays"]
        assert set(decays) == {"hidden", "vector_like"}
        assert decays["vector_like"] == [lam]  # the 64 -> width input matrix: λ_base in both arms
        assert decays["hidden"] == [pytest.approx(lam * (s if arm == "timescale" else 1.0), rel=1e-12)]
        assert run["first_lr"]["hidden"] == pytest.approx(lr / s)  # μP: η_base / s
    # fixed arm: the same λ at every width, so the hidden tau_iter grows s-fold; timescale arm: the same lr * λ
    fixed, scaled, base = tiny_runs[("fixed", 32)], tiny_runs[("timescale", 32)], tiny_runs[(BASE_ARM, 8)]
    assert fixed["step_weight_decays"]["hidden"] == base["step_weight_decays"]["hidden"]
    assert fixed["hidden_tau_iter"] == pytest.approx(4 * base["hidden_tau_iter"])
    assert scaled["hidden_tau_iter"] == pytest.approx(base["hidden_tau_iter"])
    assert fixed["hp/val_loss"] != scaled["hp/val_loss"]


def test_no_decay_input_leaves_only_the_hidden_matrices_decaying() -> None:
    config = WidthConfig(**{**vars(TINY), "decay_input": False})
    run = _fit("timescale", 32, config)
    assert run["step_weight_decays"] == {"hidden": [pytest.approx(4 * config.weight_decays[0], rel=1e-12)]}


@pytest.fixture(scope="module")
def width_sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("tau_runs")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["demo", "--axis", "width", *SWEEP_ARGS, "--out", str(out), "--no-progress"])
    assert code == 0
    return out / "sweep_0", buffer.getvalue()


def _vertex(rows: list[list[float]]) -> float:
    """The best λ from the rows, written out: the parabola through the argmin and its neighbours in log λ."""
    means = [math.inf if row[1] is None else row[1] for row in rows]
    i = means.index(min(means))
    if i in (0, len(rows) - 1) or math.inf in means[i - 1 : i + 2]:
        return rows[i][0]
    (x0, x1, x2), (y0, y1, y2) = [math.log(rows[j][0]) for j in (i - 1, i, i + 1)], means[i - 1 : i + 2]
    # Lagrange form: the vertex of the parabola through three points
    num = (x1 - x0) ** 2 * (y1 - y2) - (x1 - x2) ** 2 * (y1 - y0)
    den = (x1 - x0) * (y1 - y2) - (x1 - x2) * (y1 - y0)
    if not (y0 - y1) / (x0 - x1) < (y2 - y1) / (x2 - x1):  # opens downward: no minimum, the grid point
        return rows[i][0]
    return math.exp(min(max(x1 - 0.5 * num / den, x0), x2))


def _check_summary_follows_from_its_curves(summary: dict[str, Any], lambdas: list[float], widths: list[str]) -> None:
    """``best_lambda_base``, ``interior``, ``bracketed`` and ``exponent`` recomputed from the summary's curves."""
    for arm, part in summary["arms"].items():
        assert set(part["curves"]) == set(part["best_lambda_base"]) == set(part["interior"]) == set(widths)
        assert set(part["bracketed"]) == set(widths)
        best = {}
        for width, rows in part["curves"].items():
            assert [row[0] for row in rows] == lambdas
            best[width] = _vertex(rows)
            assert part["best_lambda_base"][width] == pytest.approx(best[width], rel=1e-9), (arm, width)
            # interior: the argmin has a neighbour on each side, each worse by more than either one's seed std
            i = min(range(len(rows)), key=lambda j: rows[j][1])
            interior = 0 < i < len(rows) - 1 and all(
                rows[j][1] - rows[i][1] > max(rows[i][2], rows[j][2]) for j in (i - 1, i + 1)
            )
            assert part["interior"][width] is interior, (arm, width)
            bracketed = any(rows[j][1] - rows[i][1] > max(rows[i][2], rows[j][2]) for j in range(i)) and any(
                rows[j][1] - rows[i][1] > max(rows[i][2], rows[j][2]) for j in range(i + 1, len(rows))
            )
            assert part["bracketed"][width] is bracketed, (arm, width)
        # the exponent: least-squares slope of log best λ_base on log s
        log_s = [math.log(summary["width_mults"][w]) for w in widths]
        slope = statistics.linear_regression(log_s, [math.log(best[w]) for w in widths]).slope
        assert part["exponent"] == pytest.approx(slope, abs=1e-9)
        low, high = part["exponent_ci"]
        assert low <= high


def test_summary_optima_follow_from_its_own_curves(width_sweep: tuple[Path, str]) -> None:
    sweep, printed = width_sweep
    summary = json.loads((sweep / "summary.json").read_text())
    assert summary["axis"] == "width" and summary["sweep"] == "lambda_base" and summary["lr_base"] == 0.003
    assert set(summary["arms"]) == set(ARMS) and summary["widths"] == [8, 32]
    _check_summary_follows_from_its_curves(summary, [4.0, 16.0, 64.0], ["8", "32"])
    # the base width is one run for both arms
    assert summary["arms"]["fixed"]["curves"]["8"] == summary["arms"]["timescale"]["curves"]["8"]
    assert "Exponent of best λ_base in s" in printed and f"Summary: {sweep / 'summary.json'}" in printed


#: A synthetic sweep: each seed's loss is ``offset + (log2 λ - log2 (10 s^e))^2``, e = +0.35 in the fixed arm and
#: -0.35 in the timescale arm, so every optimum is interior and each arm's exponent is known.
SYNTHETIC = WidthConfig(widths=[16, 64, 256], weight_decays=[2.0**k for k in range(7)], seeds=[0, 1, 2])


def _synthetic_summary() -> dict[str, Any]:
    exponent = {"fixed": 0.35, "timescale": -0.35, BASE_ARM: 0.0}
    records = [
        {
            "arm": arm,
            "width": width,
            "weight_decay_base": lam,
            "seed": seed,
            "hp/val_loss": 0.1 * seed + (math.log2(lam) - math.log2(10 * (width / 16) ** exponent[arm])) ** 2,
        }
        for arm, width, lam, seed in SYNTHETIC.runs()
    ]
    return width_summary(records, SYNTHETIC)


def test_summary_of_a_sweep_with_interior_optima_and_known_exponents() -> None:
    summary = _synthetic_summary()
    _check_summary_follows_from_its_curves(summary, SYNTHETIC.weight_decays, ["16", "64", "256"])
    for arm, exponent in (("fixed", 0.35), ("timescale", -0.35)):
        part = summary["arms"][arm]
        assert all(part["interior"].values())
        assert part["best_lambda_base"]["256"] == pytest.approx(10 * 16**exponent, rel=1e-9)
        assert part["exponent"] == pytest.approx(exponent, abs=1e-9)
        assert part["exponent_ci"] == [pytest.approx(exponent, abs=1e-9)] * 2  # seeds differ by a constant


def _hparams(run_dir: Path) -> dict[str, Any]:
    accumulator = EventAccumulator(str(run_dir))
    accumulator.Reload()
    content = accumulator.PluginTagToContent("hparams")["_hparams_/session_start_info"]
    hparams = plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info.hparams
    return {key: getattr(value, value.WhichOneof("kind")) for key, value in hparams.items()}


def _last_scalar(run_dir: Path, tag: str) -> float:
    accumulator = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    accumulator.Reload()
    return accumulator.Scalars(tag)[-1].value


def test_summary_curves_are_the_logged_runs(width_sweep: tuple[Path, str]) -> None:
    sweep, printed = width_sweep
    summary = json.loads((sweep / "summary.json").read_text())
    run_dirs = sorted({p.parent for p in sweep.rglob("events.out.tfevents.*")})
    # the base width once (3 λ x 2 seeds), then each arm at width 32
    assert len(run_dirs) == 3 * 2 + 2 * 3 * 2
    logged: dict[tuple[str, str], dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run_dir in run_dirs:
        hp = _hparams(run_dir)
        arm, width, lam = hp["arm"], int(hp["width"]), hp["weight_decay_base"]
        assert run_dir.parent.name == f"w{width:04d}" and run_dir.parent.parent.name == arm
        assert (arm == BASE_ARM) == (width == 8)
        s = width / 8
        # the weight decay the hidden matrices stepped with, as logged
        assert hp["hidden_weight_decay"] == pytest.approx(lam * (s if arm == "timescale" else 1.0), rel=1e-9)
        assert hp["hidden_lr"] == pytest.approx(0.003 / s)
        for line_arm in ARMS if arm == BASE_ARM else (arm,):
            logged[(line_arm, str(width))][lam].append(_last_scalar(run_dir, "hp/val_loss"))
    for arm, part in summary["arms"].items():
        for width, rows in part["curves"].items():
            points = logged[(arm, width)]
            assert sorted(points) == [row[0] for row in rows]
            for lam, mean, std in rows:
                values = points[lam]
                assert len(values) == 2
                assert mean == pytest.approx(sum(values) / 2, rel=1e-6)
                assert std == pytest.approx(abs(values[0] - values[1]) / math.sqrt(2), rel=1e-5, abs=1e-7)
    assert f"tensorboard --logdir {sweep}" in printed


def _check_figure_draws_the_curves(summary: dict[str, Any]) -> None:
    """Read the drawn data back from matplotlib's artists: per arm a panel, per width the curve with its error
    bars and a star at the smoothed best λ_base."""
    import matplotlib.pyplot as plt

    fig = draw_width_sweep(summary)
    try:
        axes = fig.axes
        assert len(axes) == len(summary["arms"])
        for ax, (arm, part) in zip(axes, summary["arms"].items()):
            widths = [str(w) for w in summary["widths"] if str(w) in part["curves"]]
            assert f"{part['exponent']:.2f}" in ax.get_title()
            bars = ax.containers
            stars = [line for line in ax.lines if line.get_marker() == "*"]
            assert len(bars) == len(stars) == len(widths)
            for width, bar, star in zip(widths, bars, stars):
                rows = [row for row in part["curves"][width] if row[1] is not None]
                assert bar.get_label() == f"width {width} (s={summary['width_mults'][width]:g})"
                data_line, _, (bar_lines,) = bar.lines
                assert list(data_line.get_xdata()) == [row[0] for row in rows], (arm, width)
                assert list(data_line.get_ydata()) == pytest.approx([row[1] for row in rows]), (arm, width)
                # each error bar spans mean ± std
                spans = [y for seg in bar_lines.get_segments() for y in (seg[0][1], seg[1][1])]
                assert spans == pytest.approx([y for r in rows for y in (r[1] - r[2], r[1] + r[2])]), (arm, width)
                assert list(star.get_xdata()) == pytest.approx([part["best_lambda_base"][width]]), (arm, width)
                assert star.get_color() == data_line.get_color()
    finally:
        plt.close(fig)


def test_width_demo_draws_the_figure(width_sweep: tuple[Path, str]) -> None:
    sweep, printed = width_sweep
    png, svg = sweep / "width_sweep.png", sweep / "width_sweep.svg"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in svg.read_bytes()[:1000]
    assert f"Figure: {png}" in printed and f"Figure: {svg}" in printed
    _check_figure_draws_the_curves(json.loads((sweep / "summary.json").read_text()))


def test_figure_draws_the_curves_and_optima_of_a_sweep_with_interior_optima() -> None:
    _check_figure_draws_the_curves(_synthetic_summary())


def test_interior_needs_both_neighbours_worse_by_more_than_the_seed_spread() -> None:
    assert is_interior([[1.0, 0.9, 0.01], [2.0, 0.5, 0.01], [4.0, 0.7, 0.01]])
    assert not is_interior([[1.0, 0.9, 0.01], [2.0, 0.5, 0.3], [4.0, 0.7, 0.01]])  # spread at the best
    assert not is_interior([[1.0, 0.9, 0.01], [2.0, 0.5, 0.01], [4.0, 0.7, 0.3]])  # spread at a neighbour
    assert not is_interior([[1.0, 0.5, 0.01], [2.0, 0.6, 0.01], [4.0, 0.7, 0.01]])  # at the grid edge
    assert is_interior([[1.0, math.inf, math.inf], [2.0, 0.5, 0.01], [4.0, 0.7, 0.01]])  # a diverged neighbour
    # a flat bottom between grid points: not interior, but bracketed by the points further out
    flat = [[1.0, 0.9, 0.01], [2.0, 0.505, 0.01], [4.0, 0.5, 0.01], [8.0, 0.9, 0.01]]
    assert not is_interior(flat) and is_bracketed(flat)
    assert not is_bracketed([[1.0, 0.9, 0.01], [2.0, 0.5, 0.01], [4.0, 0.505, 0.01]])  # no rise on the right


def test_bootstrap_interval_is_reproducible_and_covers_the_spread_of_seeds() -> None:
    # seed 0 has its optimum at λ = 2 at both widths, seed 1 at λ = 4 for the wide one: a resample's slope is 0
    # (seed 0 twice), 1/2 (seed 1 twice) or 1/4 (both: the mean curve's parabola peaks halfway, at 2^1.5)
    base = {1.0: [0.9, 0.9], 2.0: [0.5, 0.5], 4.0: [0.9, 0.9], 8.0: [1.0, 1.0]}
    wide = {1.0: [0.9, 0.95], 2.0: [0.5, 0.9], 4.0: [0.9, 0.5], 8.0: [1.0, 0.9]}
    interval = bootstrap_exponent({1.0: base, 4.0: wide})
    assert interval == bootstrap_exponent({1.0: base, 4.0: wide})  # a fixed generator seed
    assert interval[0] == pytest.approx(0.0, abs=1e-9) and interval[1] == pytest.approx(0.5, abs=1e-9)


def test_demo_rejects_a_bad_axis(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--axis", "depth", "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "argument --axis: invalid choice: 'depth' (choose from" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--widths", "32", "128"], "--widths apply to `--axis width` only (got --axis dataset-size)"),
        (["--weight-decays", "1", "2", "4"], "--weight-decays apply to `--axis width` only"),
        (["--axis", "width", "--sizes", "100"], "--sizes apply to `--axis dataset-size` only"),
        (["--axis", "width", "--lr", "0.01"], "for `--axis width` use --widths, --weight-decays and --lr-base"),
        (["--axis", "width", "--widths", "32"], "--widths 32: give at least two widths to compare"),
        (["--axis", "width", "--weight-decays", "1", "2"], "--weight-decays 1 2: give at least three λ_base values"),
        (["--axis", "width", "--depth", "1"], "--depth 1: the width demo needs depth >= 2"),
    ],
)
def test_demo_rejects_options_of_the_other_axis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    assert main(["demo", "--out", str(tmp_path), *argv]) == 2
    assert expected in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"depth": 1}, r"`MuDigitsMLP\(depth=1\)` has no hidden width x width matrix.*use depth >= 2"),
        ({"arm": "tau"}, r"`MuDigitsMLP\(arm='tau'\)` is not supported\. Use 'fixed' or 'timescale'"),
        ({"weight_decay": 0.0}, r"`MuDigitsMLP\(weight_decay=0\.0\)` is not valid: use a positive value"),
    ],
)
def test_model_rejects_bad_arguments(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        MuDigitsMLP(**kwargs)


def test_base_arm_is_only_the_base_width() -> None:
    with pytest.raises(ValueError, match=r"`arm='both'` is the base width's \(8\) shared run, not width 32"):
        run_one_width(TINY, BASE_ARM, 32, 0.5, 0, None)
