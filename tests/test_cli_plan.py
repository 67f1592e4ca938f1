"""``lightning-tau plan`` on the example digits config: every coupling's plan of the config's own schedule, no step."""

from __future__ import annotations

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

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "examples" / "configs"
DIGITS = ["--model", "lightning_tau.demos.digits.DigitsMLP", "--data", "lightning_tau.demos.digits.DigitsDataModule"]


def cosine_lrs(lr: float, steps: int, final_ratio: float = 0.1) -> list[float]:
    """The digits model's per-step cosine (torch's CosineAnnealingLR over the run), in closed form."""
    low = lr * final_ratio
    return [low + (lr - low) * (1 + math.cos(math.pi * t / steps)) / 2 for t in range(steps)]


def test_plan_prints_every_couplings_plan_of_the_configs_schedule_and_draws_it(tmp_path: Path) -> None:
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


def test_plan_needs_a_timescale_and_says_how_to_give_one(
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


def test_plan_says_in_one_line_when_the_config_has_no_model_class(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", "--config", str(CONFIGS / "digits_timescale.yaml"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("lightning-tau plan: error: --config: ") and "\n" not in err
    assert err.endswith("(a `model:` without class_path needs --model, a `data:` one --data)")


def _figure(lrs: list[float]):
    from lightning_tau.cli.plan import plan_figure

    plans = {
        c: plan(c, lrs, lr_ref=max(lrs), tau_iter=80.0, steps_per_epoch=8) for c in COUPLINGS  # type: ignore[arg-type]
    }
    fig = plan_figure(plans, lrs, 8)
    fig.canvas.draw()
    return fig


def test_plan_figure_labels_couplings_that_coincide_as_one_line() -> None:
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


def test_plan_figure_legend_covers_no_line() -> None:
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
