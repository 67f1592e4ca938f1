"""``lightning-tau plan`` on the example digits config: every coupling's plan of the config's own schedule, no step."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jsonargparse")
pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")

from lightning_tau.cli import main  # noqa: E402
from lightning_tau.cli.plan import plan_table  # noqa: E402
from lightning_tau.couplings import COUPLINGS, plan  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "examples" / "configs"
DIGITS = ["--model", "lightning_tau.demos.digits.DigitsMLP", "--data", "lightning_tau.demos.digits.DigitsDataModule"]


def cosine_lrs(lr: float, steps: int, final_ratio: float = 0.1) -> list[float]:
    """The digits model's per-step cosine (torch's CosineAnnealingLR over the run), in closed form."""
    low = lr * final_ratio
    return [low + (lr - low) * (1 + math.cos(math.pi * t / steps)) / 2 for t in range(steps)]


def test_prints_every_couplings_plan_of_configs_schedule_and_draws_it(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "lightning_tau", "plan", "--config", str(CONFIGS / "digits_timescale.yaml"), *DIGITS]
        + ["--out", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # the config: 500 samples at B = 64 are M = 8 steps, 40 epochs are 320 steps; tau_epoch 10 is 80 steps at lr 0.003
    lrs = cosine_lrs(0.003, 320)
    expected = {c: plan(c, lrs, lr_ref=0.003, tau_iter=80.0, steps_per_epoch=8) for c in COUPLINGS}  # type: ignore[arg-type]
    assert "Plan of param group 'decay': M = 8 optimizer steps per epoch, 320 steps;" in done.stdout
    table = plan_table(expected, 8)
    assert "\n".join(table) in done.stdout
    rows = {line.split("|")[0].strip(): line for line in table[2:]}
    assert [cell.strip() for cell in rows["per_step"].split("|")[1:4]] == ["80 (10)"] * 3
    assert expected["per_step"].timescales == pytest.approx(4.0)  # 320 steps at a rate of 1/80
    # the lr falls to 0.1x: tau grows 10x under constant, 100x under lr_ratio, 1000x under lr_squared (at the end)
    for coupling, power in (("constant", 1), ("lr_ratio", 2), ("lr_squared", 3)):
        assert expected[coupling].tau_end == pytest.approx(80 * (0.003 / lrs[-1]) ** power, rel=1e-12)
    # the callback's own pre-flight (its plan under the config's coupling, constant) printed before the plan
    assert "Plan under coupling='constant' and the run's lr schedule" in done.stdout + done.stderr
    assert (tmp_path / "tau_plan.png").stat().st_size > 10_000 and (tmp_path / "tau_plan.svg").is_file()
    assert not list(tmp_path.rglob("events.out.tfevents.*")) and not list(tmp_path.rglob("*.ckpt"))  # no training


@pytest.mark.slow
def test_needs_timescale_and_says_how_to_give_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = ["plan", "--config", str(CONFIGS / "find_digits.yaml"), "--out", str(tmp_path)]
    assert main(config) == 2
    assert capsys.readouterr().err.strip() == (
        "lightning-tau plan: error: the config has no TimescaleCallback under trainer.callbacks: give the timescale"
        " to plan with --tau-epoch."
    )
    assert main([*config, "--group", "hidden", "--tau-epoch", "5"]) == 2
    assert capsys.readouterr().err.strip() == (
        "lightning-tau plan: error: --group 'hidden' is not a decaying param group of the run; use one of ['decay']."
    )


def test_says_in_one_line_config_has_no_model_class(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", "--config", str(CONFIGS / "digits_timescale.yaml"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"lightning-tau plan: error: --config {CONFIGS / 'digits_timescale.yaml'}: ")
    assert "\n" not in err
    assert err.endswith("(a `model:` without class_path needs --model)")  # the hint that fits, only


def test_names_bad_callback_argument_without_unrelated_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (CONFIGS / "digits_timescale.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("tau_epoch: 10.0", "tau_epoch: -3"))
    assert main(["plan", "--config", str(bad), *DIGITS, "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"lightning-tau plan: error: --config {bad}: trainer.callbacks[0] (TimescaleCallback): `TimescaleCallback("
        "tau_epoch=-3)` is not valid: `tau_epoch` must be a positive finite number."
    )
    bad.write_text(text.replace("coupling: constant", "coupling: constant\n        bogus: 3"))
    assert main(["plan", "--config", str(bad), "--out", str(tmp_path)]) == 2  # no --model: the hint does not fit
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"lightning-tau plan: error: --config {bad}: trainer.callbacks[0] (TimescaleCallback): ")
    assert "'bogus'" in err and "--model" not in err and "\n" not in err


#: Runs ``lightning-tau`` argument lists in one process; prints, for each, its exit code, stderr and the heavy
#: packages imported by then.
_PROBE = """
import contextlib, io, json, sys
from lightning_tau.cli import main
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(argv)
    print(json.dumps([code, err.getvalue(), sorted({m.split(".")[0] for m in sys.modules} & {"torch", "lightning"})]))
"""


def test_refuses_missing_config_and_figure_it_did_not_write_before_torch(tmp_path: Path) -> None:
    (tmp_path / "tau_plan.svg").write_text("<svg>my drawing</svg>")
    config = str(CONFIGS / "digits_timescale.yaml")
    argvs = [
        ["plan", "--config", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "new")],
        ["plan", "--config", config, *DIGITS, "--out", str(tmp_path)],
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(argvs)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(code, heavy) for code, _, heavy in results] == [(2, []), (2, [])], done.stderr[-2000:]
    missing = str(tmp_path / "missing.yaml")
    assert results[0][1].strip() == f"lightning-tau plan: error: --config {missing!r} is not a file."
    assert results[1][1].strip() == (
        f"lightning-tau plan: error: --out: will not write {str(tmp_path / 'tau_plan.svg')!r}: it is a file the package"
        " did not write (it would be replaced): pass a new path, or move the file away first."
    )
    assert (tmp_path / "tau_plan.svg").read_text() == "<svg>my drawing</svg>"
    assert not (tmp_path / "tau_plan.png").exists()


def _figure(lrs: list[float]):
    from lightning_tau.cli.plan import plan_figure

    plans = {
        c: plan(c, lrs, lr_ref=max(lrs), tau_iter=80.0, steps_per_epoch=8) for c in COUPLINGS  # type: ignore[arg-type]
    }
    fig = plan_figure(plans, lrs, 8)
    fig.canvas.draw()
    return fig


def test_figure_labels_couplings_coincide_as_one_line() -> None:
    import matplotlib.pyplot as plt

    flat = _figure([0.003] * 320)  # a constant lr: every coupling holds tau_iter, one line
    cosine = _figure(cosine_lrs(0.003, 320))
    try:
        top = flat.axes[0]
        assert [line.get_label() for line in top.get_lines()] == [
            "constant = per_step = lr_ratio = lr_squared (one line: they coincide): window 9.15 ep, init left 0.018"
        ]
        labels = [line.get_label().split(":")[0] for line in cosine.axes[0].get_lines()]
        assert labels == list(COUPLINGS)  # a falling lr: four lines, four names
        assert [t.get_text() for t in flat.legends[0].get_texts()][-1] == "learning rate η_t / max η"
    finally:
        plt.close(flat)
        plt.close(cosine)


def test_figure_legend_covers_no_line() -> None:
    import matplotlib.pyplot as plt

    fig = _figure(cosine_lrs(0.003, 320))
    try:
        box = fig.legends[0].get_window_extent()
        for ax in fig.axes:  # the legend is outside every panel, so it covers no line (the dashed lr's included)
            assert not box.overlaps(ax.get_window_extent()), ax.get_ylabel()
        lr_line = fig.axes[-1].get_lines()[0]
        points = lr_line.get_transform().transform(lr_line.get_xydata())
        assert not any(box.contains(x, y) for x, y in points)
    finally:
        plt.close(fig)
