"""``lightning-tau demo``: the quick sweep end to end, its logs, figure and printed instructions; ``--help``."""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")

from helpers.tb_events import read_run
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.plugins.hparams import plugin_data_pb2  # noqa: E402

from lightning_tau.cli import main  # noqa: E402
from lightning_tau.cli.demo import QUICK  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def quick_sweep_with_bar(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """The quick demo as a user runs it (progress bar on): its folder, stdout and stderr."""
    out = tmp_path_factory.mktemp("tau_runs")
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["demo", "--quick", "--out", str(out)])
    assert code == 0
    return out, stdout.getvalue(), stderr.getvalue()


@pytest.fixture(scope="module")
def quick_sweep(quick_sweep_with_bar: tuple[Path, str, str]) -> tuple[Path, str]:
    out, printed, _ = quick_sweep_with_bar
    return out, printed


def test_demo_progress_bar_counts_steps_not_epochs(quick_sweep_with_bar: tuple[Path, str, str]) -> None:
    """The bar (and its ETA) weighs an epoch by its optimizer steps plus the validation batch: N=100 at B=64 is 2
    steps + 1, N=300 is 5 + 1, each for 3 tau_epochs x 1 seed x 2 epochs: (3 + 6) x 6 = 54. By epochs (the old
    weighting) it would be 2 sizes x 3 x 2 = 12, and the small-N runs would fill half the bar in a sixth of the time."""
    _, _, bar = quick_sweep_with_bar
    final = bar.replace("\r", "\n").strip().splitlines()[-1]
    assert "54/54" in final and "step" in final, bar


def test_demo_quick_writes_one_tensorboard_run_per_setting(quick_sweep: tuple[Path, str]) -> None:
    out, _ = quick_sweep
    sweep = out / "sweep_0"
    run_dirs = sorted({p.parent for p in sweep.rglob("events.out.tfevents.*")} - {sweep})  # the root: HParams config
    expected = {(n, tau) for n in QUICK.sizes for tau in QUICK.tau_epochs}
    assert len(run_dirs) == len(expected) * len(QUICK.seeds)
    seen = set()
    for run_dir in run_dirs:
        hparams, scalars = read_run(run_dir)
        for key in ("dataset_size", "batch_size", "lr", "weight_decay", "tau_epoch", "epochs", "seed"):
            assert key in hparams, (run_dir, key)
        n, tau = int(hparams["dataset_size"]), hparams["tau_epoch"]
        seen.add((n, tau))
        # the callback set the weight decay from the run's tau_epoch: lambda = 1 / (lr * M * tau_epoch), with M the
        # optimizer steps an epoch really has (THEORY.md §7): ceil(N / B), which is N / B when B divides N
        steps = math.ceil(n / QUICK.batch_size)
        assert hparams["weight_decay"] == pytest.approx(1 / (QUICK.lr * steps * tau), rel=1e-6)
        assert hparams["batch_size"] == QUICK.batch_size and hparams["epochs"] == QUICK.epochs
        assert math.isfinite(scalars["hp/val_loss"]) and 0 <= scalars["hp/val_error"] <= 1
        # the final metric in the hparams record is the last validation value
        assert scalars["hp/val_loss"] == pytest.approx(scalars["val/loss"])
        assert run_dir.parent.name == f"N{n:04d}" and run_dir.name.startswith(f"tau_epoch={tau:g}_seed")
    assert seen == expected


def _experiment_configs(run_dir: Path) -> list:
    """The HParams experiment configs in ``run_dir``'s own event files (TensorBoard uses one per logdir)."""
    accumulator = EventAccumulator(str(run_dir))
    accumulator.Reload()
    content = accumulator.PluginTagToContent("hparams").get("_hparams_/experiment")
    return [] if content is None else [plugin_data_pb2.HParamsPluginData.FromString(content).experiment]


def test_demo_hparams_tab_shows_what_the_sweep_varies_first(quick_sweep: tuple[Path, str]) -> None:
    """TensorBoard shows the first five hparams, those that differ across runs first, then by name, from one
    experiment config: the sweep root's, as no run writes its own."""
    out, _ = quick_sweep
    sweep = out / "sweep_0"
    (config,) = _experiment_configs(sweep)
    differs = {info.name for info in config.hparam_infos if info.differs}
    assert differs == {"dataset_size", "tau_epoch", "tau_iter", "weight_decay"}  # QUICK: one seed
    assert [m.name.tag for m in config.metric_infos] == ["hp/val_loss", "hp/val_error"]
    run_dirs = {p.parent for p in sweep.rglob("events.out.tfevents.*")} - {sweep}
    assert len(run_dirs) == len(QUICK.sizes) * len(QUICK.tau_epochs)
    assert all(_experiment_configs(run_dir) == [] for run_dir in run_dirs)


def test_demo_prints_a_dashboard_view_that_opens_on_charts(quick_sweep: tuple[Path, str]) -> None:
    """First the largest size's first seed, one named run per tau_epoch (TensorBoard pre-selects at most 40 runs
    and has 7 colours), then the whole sweep for the HParams tab."""
    out, printed = quick_sweep
    sweep = out / "sweep_0"
    lines = printed.splitlines()
    first = next(line.strip() for line in lines if line.strip().startswith("tensorboard "))
    runs = [f"tau_epoch={tau:g}:{sweep / 'N0300' / f'tau_epoch={tau:g}_seed0'}" for tau in QUICK.tau_epochs]
    assert first == "tensorboard --logdir_spec " + ",".join(runs)
    assert all(Path(run.split(":", 1)[1]).is_dir() for run in runs)
    assert lines[-1].strip() == f"tensorboard --logdir {sweep}"


def test_demo_quick_logs_the_timescale_monitor(quick_sweep: tuple[Path, str]) -> None:
    out, _ = quick_sweep
    run_dir = next(p for p in (out / "sweep_0").rglob("events.out.tfevents.*") if p.parent.name != "sweep_0").parent
    _, scalars = read_run(run_dir)
    assert any(tag.startswith("timescale/tau_iter/") for tag in scalars)


def test_demo_quick_draws_the_figure_and_prints_where(quick_sweep: tuple[Path, str]) -> None:
    out, printed = quick_sweep
    sweep = out / "sweep_0"
    png, svg = sweep / "tau_sweep.png", sweep / "tau_sweep.svg"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in svg.read_text()[:2000]
    assert f"tensorboard --logdir {sweep}" in printed
    assert str(png) in printed and str(svg) in printed
    assert "Optimum of hp/val_loss per dataset_size" in printed
    for n in QUICK.sizes:
        assert f"\n  {n} " in printed


def test_demo_quick_writes_the_summary_of_each_sizes_optimum(quick_sweep: tuple[Path, str]) -> None:
    out, printed = quick_sweep
    sweep = out / "sweep_0"
    summary = json.loads((sweep / "summary.json").read_text())
    assert summary["axis"] == "dataset-size"
    rows = summary["optimum"]
    assert [row["dataset_size"] for row in rows] == QUICK.sizes
    # the optimum of each size is its best logged run (one seed), with the weight decay the callback set there
    logged: dict[int, dict[float, float]] = {}
    for run_dir in {p.parent for p in sweep.rglob("events.out.tfevents.*")} - {sweep}:
        hparams, scalars = read_run(run_dir)
        logged.setdefault(int(hparams["dataset_size"]), {})[hparams["tau_epoch"]] = scalars["hp/val_loss"]
    for row in rows:
        assert set(row) == {"dataset_size", "tau_epoch", "weight_decay", "metric"}
        n, tau = row["dataset_size"], row["tau_epoch"]
        assert tau == min(logged[n], key=logged[n].__getitem__)
        assert row["metric"] == pytest.approx(logged[n][tau], rel=1e-6)
        assert row["weight_decay"] == pytest.approx(1 / (QUICK.lr * math.ceil(n / QUICK.batch_size) * tau), rel=1e-6)
    assert f"Summary: {sweep / 'summary.json'}" in printed


def test_demo_second_call_writes_a_new_sweep_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "sweep_0").mkdir()
    code = main(["demo", "--quick", "--out", str(tmp_path), "--no-progress", "--no-plot"])
    assert code == 0
    assert list((tmp_path / "sweep_1").rglob("events.out.tfevents.*"))
    assert not list((tmp_path / "sweep_0").iterdir())
    assert f"tensorboard --logdir {tmp_path / 'sweep_1'}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--tau-epochs", "-1"], "argument --tau-epochs: expected a positive finite number, got '-1'"),
        (["--sizes", "abc"], "argument --sizes: expected a positive integer, got 'abc'"),
        (["--label-noise", "1.5"], "argument --label-noise: expected a number in [0, 1), got '1.5'"),
        (["--norm", "batch"], "argument --norm: invalid choice: 'batch'"),
    ],
)
def test_demo_rejects_bad_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--out", str(tmp_path), *argv])
    assert exit_info.value.code == 2
    assert expected in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_demo_rejects_a_size_larger_than_the_dataset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--sizes", "200", "1500", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--sizes [1500] too large" in err and "up to 1400" in err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("subcommand", ["demo", "plot"])
def test_subcommand_help_in_process(capsys: pytest.CaptureFixture[str], subcommand: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([subcommand, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert f"usage: lightning-tau {subcommand}" in out
    if subcommand == "demo":
        for option in ("--out", "--sizes", "--tau-epochs", "--epochs", "--seeds", "--quick"):
            assert option in out
        assert "tau_runs" in out  # the default --out is shown


def _console_script() -> Path:
    return Path(sys.executable).parent / ("lightning-tau.exe" if os.name == "nt" else "lightning-tau")


@pytest.mark.slow
def test_help_as_subprocesses() -> None:
    """``python -m lightning_tau --help`` and the ``lightning-tau demo --help`` console script, as a user runs them."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    module = subprocess.run(
        [sys.executable, "-m", "lightning_tau", "--help"], capture_output=True, text=True, env=env, timeout=300
    )
    assert module.returncode == 0, module.stderr
    for subcommand in ("demo", "plot"):
        assert subcommand in module.stdout
    script = _console_script()
    assert script.exists(), f"console script {script} is missing: install the package (`make test` does)"
    demo = subprocess.run([str(script), "demo", "--help"], capture_output=True, text=True, env=env, timeout=300)
    assert demo.returncode == 0, demo.stderr
    assert "usage: lightning-tau demo" in demo.stdout and "--tau-epochs" in demo.stdout
