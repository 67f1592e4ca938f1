"""``lightning-tau demo --axis width``: real mup (``set_base_shapes``, ``MuReadout``, ``MuAdamW``) and real Lightning.

The two arms must differ in the weight decay the optimizer steps really use (read by a step post-hook): ``fixed``
keeps ``λ_base`` on the hidden matrices at every width, ``timescale`` (``TimescaleCallback``) gives them ``s λ_base``
so ``lr * weight_decay`` is the same at every width. The sweep writes TensorBoard runs, a figure and ``summary.json``.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import warnings
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")
pytest.importorskip("mup")

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.plugins.hparams import plugin_data_pb2  # noqa: E402

from lightning_tau.cli import main  # noqa: E402
from lightning_tau.cli.demo import QUICK_WIDTH  # noqa: E402
from lightning_tau.demos.width import ARMS, MuDigitsMLP, WidthConfig, run_one_width  # noqa: E402

# one epoch of 4 steps per run: enough for the optimizer to take steps, cheap on two shared cores
TINY = WidthConfig(widths=[16, 64], lrs=[1e-2], seeds=[0], epochs=1, train_size=128, batch_size=32, weight_decay=0.5)


def _hparams(run_dir: Path) -> dict[str, Any]:
    accumulator = EventAccumulator(str(run_dir))
    accumulator.Reload()
    content = accumulator.PluginTagToContent("hparams")["_hparams_/session_start_info"]
    hparams = plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info.hparams
    return {key: getattr(value, value.WhichOneof("kind")) for key, value in hparams.items()}


def _fit(arm: str, width: int) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*(fixed-λ muP pitfall|does not have many workers|less than one)")
        return run_one_width(TINY, arm, width, TINY.lrs[0], 0, None)


@pytest.fixture(scope="module")
def tiny_runs() -> dict[tuple[str, int], dict[str, Any]]:
    return {(arm, width): _fit(arm, width) for arm in ARMS for width in TINY.widths}


def _hidden(run: dict[str, Any]) -> dict[str, Any]:
    (group,) = [g for g in run["first_step_groups"] if g["width_mult"] != 1.0] or [
        g for g in run["first_step_groups"] if g["name"].startswith("hidden")
    ]
    return group


def test_fixed_arm_steps_with_the_same_weight_decay_at_every_width(tiny_runs: dict) -> None:
    lr, lam = TINY.lrs[0], TINY.weight_decay
    for width in TINY.widths:
        s = width / TINY.base_width
        groups = tiny_runs[("fixed", width)]["first_step_groups"]
        assert groups, "no decaying param group took a step"
        # every decaying group, hidden matrices included, stepped with λ_base; mup divided the hidden lr by s
        assert {g["weight_decay"] for g in groups} == {lam}
        hidden = [g for g in groups if g["width_mult"] == s] if s != 1 else groups
        assert hidden and all(g["lr"] == pytest.approx(lr / s) for g in hidden)
    wide = [g for g in tiny_runs[("fixed", 64)]["first_step_groups"] if g["width_mult"] == 4.0]
    # the hidden timescale grows s-fold: tau_iter = s / (lr λ)
    assert 1 / (wide[0]["lr"] * wide[0]["weight_decay"]) == pytest.approx(4 / (lr * lam))


def test_timescale_arm_steps_with_the_same_lr_times_weight_decay_at_every_width(tiny_runs: dict) -> None:
    lr, lam = TINY.lrs[0], TINY.weight_decay
    rates = []
    for width in TINY.widths:
        s = width / TINY.base_width
        for g in tiny_runs[("timescale", width)]["first_step_groups"]:
            rates.append(g["lr"] * g["weight_decay"])
            # the callback gave each group weight decay from its own lr: s λ_base on the lr / s hidden matrices
            assert g["weight_decay"] == pytest.approx(g["width_mult"] * lam, rel=1e-9)
        assert any(g["width_mult"] == s for g in tiny_runs[("timescale", width)]["first_step_groups"])
    assert rates == pytest.approx([lr * lam] * len(rates), rel=1e-9)


def test_arms_differ_only_off_the_base_width(tiny_runs: dict) -> None:
    base, wide = TINY.widths
    # at s = 1 the two arms are the same run (the callback writes back λ_base); wider, they differ
    assert tiny_runs[("fixed", base)]["hp/val_loss"] == pytest.approx(tiny_runs[("timescale", base)]["hp/val_loss"])
    fixed, scaled = _hidden(tiny_runs[("fixed", wide)]), _hidden(tiny_runs[("timescale", wide)])
    assert scaled["weight_decay"] == pytest.approx(4 * fixed["weight_decay"])
    assert tiny_runs[("fixed", wide)]["hidden_tau_iter"] == pytest.approx(
        4 * tiny_runs[("timescale", wide)]["hidden_tau_iter"]
    )


@pytest.fixture(scope="module")
def quick_width_sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("tau_runs")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["demo", "--axis", "width", "--quick", "--out", str(out), "--no-progress"])
    assert code == 0
    return out / "sweep_0", buffer.getvalue()


def test_width_demo_writes_the_summary(quick_width_sweep: tuple[Path, str]) -> None:
    sweep, printed = quick_width_sweep
    summary = json.loads((sweep / "summary.json").read_text())
    assert summary["axis"] == "width"
    rows = summary["optimum"]
    assert {(r["arm"], r["width"]) for r in rows} == {(a, w) for a in ARMS for w in QUICK_WIDTH.widths}
    for row in rows:
        assert set(row) == {"arm", "width", "lr", "metric"}
        assert row["lr"] in QUICK_WIDTH.lrs and math.isfinite(row["metric"]) and row["metric"] > 0
    assert set(summary["lr_spread"]) == set(ARMS) and all(v >= 1 for v in summary["lr_spread"].values())
    # the printed table and the spread per arm
    assert "Best base lr per width" in printed and "Spread of the best lr across widths (max / min): fixed x" in printed
    assert f"Summary: {sweep / 'summary.json'}" in printed


def test_width_demo_logs_one_tensorboard_run_per_setting(quick_width_sweep: tuple[Path, str]) -> None:
    sweep, printed = quick_width_sweep
    run_dirs = sorted({p.parent for p in sweep.rglob("events.out.tfevents.*")})
    assert len(run_dirs) == len(ARMS) * len(QUICK_WIDTH.widths) * len(QUICK_WIDTH.lrs) * len(QUICK_WIDTH.seeds)
    summary = json.loads((sweep / "summary.json").read_text())
    losses: dict[tuple[str, int], dict[float, float]] = {}
    for run_dir in run_dirs:
        hp = _hparams(run_dir)
        arm, width, lr = hp["arm"], int(hp["width"]), hp["lr"]
        assert run_dir.parent.name == f"w{width:04d}" and run_dir.parent.parent.name == arm
        s = width / QUICK_WIDTH.widths[0]
        expected = QUICK_WIDTH.weight_decay * (s if arm == "timescale" else 1.0)
        assert hp["hidden_weight_decay"] == pytest.approx(expected, rel=1e-9)
        assert hp["hidden_lr"] == pytest.approx(lr / s)
        losses.setdefault((arm, width), {})[lr] = _scalar(run_dir, "hp/val_loss")
    # summary.json's optimum is the best logged run of each line
    for row in summary["optimum"]:
        line = losses[(row["arm"], row["width"])]
        assert row["lr"] == min(line, key=line.__getitem__)
        assert row["metric"] == pytest.approx(min(line.values()), rel=1e-6)
    assert f"tensorboard --logdir {sweep}" in printed


def _scalar(run_dir: Path, tag: str) -> float:
    accumulator = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    accumulator.Reload()
    return accumulator.Scalars(tag)[-1].value


def test_width_demo_draws_the_figure(quick_width_sweep: tuple[Path, str]) -> None:
    sweep, printed = quick_width_sweep
    png = sweep / "width_sweep.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"Figure: {png}" in printed


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
        (["--axis", "width", "--sizes", "100"], "--sizes apply to `--axis dataset-size` only"),
        (["--axis", "width", "--widths", "32"], "--widths 32: give at least two widths to compare"),
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
