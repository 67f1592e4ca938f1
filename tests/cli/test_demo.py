"""``lightning-tau demo``: the quick dataset-size sweep (the finder's axis) end to end, its logs, summary, figures and
printed instructions; every step's weight decay; ``--help``."""

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

from tb_events import read_run
from lightning.pytorch.callbacks import Callback  # noqa: E402
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.plugins.hparams import plugin_data_pb2  # noqa: E402

from lightning_tau import TimescaleCallback  # noqa: E402
from lightning_tau._quiet import quiet_sweep  # noqa: E402
from lightning_tau.cli import main  # noqa: E402
from lightning_tau.cli.demo import QUICK  # noqa: E402
from lightning_tau.demos.size import SizeConfig, run_size_demo  # noqa: E402
from lightning_tau.tuner.analysis.scaling import fit_scaling  # noqa: E402
from lightning_tau.tuner.analysis.verdicts import RuleVerdict, size_verdict  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def quick_sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The quick demo as a user runs it (progress bar on): its folder and stdout."""
    out = tmp_path_factory.mktemp("tau_runs")
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["demo", "--quick", "--out", str(out)])
    assert code == 0, stderr.getvalue()[-3000:]
    return out, stdout.getvalue()


def _run_dirs(sweep: Path) -> list[Path]:
    """The sweep's TensorBoard runs (its root holds the HParams experiment config only; the views' folders of links to
    the runs, which TensorBoard follows, are not runs of their own)."""
    return sorted({p.parent for p in sweep.rglob("events.out.tfevents.*") if not p.is_symlink()} - {sweep})


@pytest.mark.slow
def test_quick_writes_one_tensorboard_run_per_setting(quick_sweep: tuple[Path, str]) -> None:
    out, _ = quick_sweep
    sweep = out / "sweep_0"
    run_dirs = _run_dirs(sweep)
    expected = {(n, tau) for n in QUICK.sizes for tau in QUICK.tau_epochs}
    assert len(run_dirs) == len(expected) * len(QUICK.seeds)
    seen = set()
    for run_dir in run_dirs:
        hparams, scalars = read_run(run_dir)
        for key in ("dataset_size", "fraction", "batch_size", "lr", "weight_decay", "tau_epoch", "epochs", "seed"):
            assert key in hparams, (run_dir, key)
        n, tau = int(hparams["dataset_size"]), hparams["tau_epoch"]
        seen.add((n, tau))
        # the callback set the weight decay from the run's tau_epoch: lambda = 1 / (lr * M * tau_epoch), with M the
        # optimizer steps an epoch really has (THEORY.md §7): ceil(N / B), which is N / B when B divides N
        steps = math.ceil(n / QUICK.batch_size)
        assert hparams["weight_decay"] == pytest.approx(1 / (QUICK.lr * steps * tau), rel=1e-6)
        assert hparams["batch_size"] == QUICK.batch_size and hparams["epochs"] == QUICK.epochs
        assert hparams["fraction"] == pytest.approx(n / QUICK.train_size, abs=1e-6)
        assert math.isfinite(scalars["hp/val_loss"]) and 0 <= scalars["hp/val_error"] <= 1
        # the final metric in the hparams record is the last validation value
        assert scalars["hp/val_loss"] == pytest.approx(scalars["val/loss"])
        assert run_dir.name.startswith(f"tau_epoch={tau:g}_seed{int(hparams['seed'])}_")
    assert seen == expected


def _experiment_configs(run_dir: Path) -> list:
    """The HParams experiment configs in ``run_dir``'s own event files (TensorBoard uses one per logdir)."""
    accumulator = EventAccumulator(str(run_dir))
    accumulator.Reload()
    content = accumulator.PluginTagToContent("hparams").get("_hparams_/experiment")
    return [] if content is None else [plugin_data_pb2.HParamsPluginData.FromString(content).experiment]


@pytest.mark.slow
def test_hparams_tab_shows_what_sweep_varies_first(quick_sweep: tuple[Path, str]) -> None:
    """TensorBoard ticks the first five hparams, those marked ``differs`` first, then by name, from one experiment
    config: the sweep root's, as no run writes its own. It marks tau_epoch and weight_decay, and lists besides them
    only what varies across the runs."""
    out, _ = quick_sweep
    sweep = out / "sweep_0"
    (config,) = _experiment_configs(sweep)
    assert [(info.name, info.differs) for info in config.hparam_infos] == [
        ("tau_epoch", True), ("weight_decay", True), ("dataset_size", False), ("fraction", False), ("tau_iter", False)
    ]  # fmt: skip  # QUICK: one seed
    assert [m.name.tag for m in config.metric_infos] == ["hp/val_loss", "hp/val_error"]
    run_dirs = _run_dirs(sweep)
    assert len(run_dirs) == len(QUICK.sizes) * len(QUICK.tau_epochs)
    assert all(_experiment_configs(run_dir) == [] for run_dir in run_dirs)


@pytest.mark.slow
def test_prints_dashboard_view_opens_on_charts(quick_sweep: tuple[Path, str]) -> None:
    """First the largest size's first seed, one run per tau_epoch named by its values (TensorBoard pre-selects at
    most 40 runs and has 7 colours), then the whole sweep for the HParams tab: each a short command on a folder of
    links."""
    out, printed = quick_sweep
    sweep = out / "sweep_0"
    commands = [line.strip() for line in printed.splitlines() if line.strip().startswith("tensorboard ")]
    assert commands == [
        f"tensorboard --logdir {sweep / 'tensorboard_charts'}",
        f"tensorboard --logdir {sweep / 'tensorboard'}",
    ]
    charts = sorted((sweep / "tensorboard_charts").iterdir())
    assert len(charts) == len(QUICK.tau_epochs) and all(p.is_symlink() for p in charts)
    for link in charts:
        hparams, _ = read_run(link)  # the link reaches the run's event files
        assert (hparams["dataset_size"], hparams["seed"]) == (max(QUICK.sizes), QUICK.seeds[0])
        assert link.name == f"tau{hparams['tau_epoch']:g}_N{max(QUICK.sizes)}_s{QUICK.seeds[0]}"
    every = [p for p in (sweep / "tensorboard").iterdir() if p.is_dir()]
    assert len(every) == len(_run_dirs(sweep)) == len(QUICK.sizes) * len(QUICK.tau_epochs)
    assert len({p.name[:12] for p in every}) == len(every)  # trial IDs that differ at a glance


@pytest.mark.slow
def test_quick_logs_timescale_monitor(quick_sweep: tuple[Path, str]) -> None:
    out, _ = quick_sweep
    _, scalars = read_run(_run_dirs(out / "sweep_0")[0])
    assert any(tag.startswith("timescale/tau_iter/") for tag in scalars)


@pytest.mark.slow
def test_quick_draws_figures_and_prints_where(quick_sweep: tuple[Path, str]) -> None:
    out, printed = quick_sweep
    sweep = out / "sweep_0"
    for stem in ("tau_sweep", "size_sweep"):  # Figure 1 from the TensorBoard runs; the finder's axis figure
        png, svg = sweep / f"{stem}.png", sweep / f"{stem}.svg"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert "<svg" in svg.read_text()[:2000]
        assert str(png) in printed and str(svg) in printed
    assert f"tensorboard --logdir {sweep}" in printed
    assert "Optimum of hp/val_loss per dataset_size" in printed
    assert "Exponent of best tau_epoch on N" in printed and "Verdict:" in printed
    for n in QUICK.sizes:
        assert f"\n  {n} " in printed


@pytest.mark.slow
def test_quick_summary_follows_from_curves_and_logs(quick_sweep: tuple[Path, str]) -> None:
    """``summary.json``: the curves are the logged runs' final losses; the exponent, its interval (or the reason
    there is none) and the per-seed grid optima are ``fit_scaling``'s on those curves."""
    out, printed = quick_sweep
    sweep = out / "sweep_0"
    summary = json.loads((sweep / "summary.json").read_text())
    assert (summary["axis"], summary["task"], summary["sizes"]) == ("dataset_size", "digits", QUICK.sizes)
    logged: dict[int, dict[float, dict[int, float]]] = {}
    for run_dir in _run_dirs(sweep):
        hparams, scalars = read_run(run_dir)
        n, tau, seed = int(hparams["dataset_size"]), hparams["tau_epoch"], int(hparams["seed"])
        logged.setdefault(n, {}).setdefault(tau, {})[seed] = scalars["hp/val_loss"]
    curves = []
    for n in QUICK.sizes:
        rows = summary["curves"][str(n)]
        assert [tau for tau, _ in rows] == sorted(QUICK.tau_epochs)
        for tau, values in rows:
            assert values == pytest.approx([logged[n][tau][seed] for seed in QUICK.seeds], rel=1e-6)
        curves.append([values for _, values in rows])
    fit = fit_scaling(QUICK.sizes, sorted(QUICK.tau_epochs), curves, mode="min")
    assert summary["exponent"] == pytest.approx(fit.exponent, abs=1e-9)
    assert summary["exponent_ci"] == (list(fit.ci) if fit.ci is not None else None)
    assert summary["ci_reason"] == fit.ci_reason
    assert summary["per_seed_grid_optima"] == [list(v) for v in fit.per_seed_grid_optima]
    rules = [RuleVerdict.from_json(r) for r in summary["rules"]]
    assert summary["verdict"] == size_verdict(fit, rules, monitor=summary["results"][0]["monitor"])
    assert f"Summary: {sweep / 'summary.json'}" in printed


class _StepDecays(Callback):
    """Every optimizer step's ``decay`` group weight decay, as the step used it, with the run's ``N`` and
    ``tau_epoch`` (shared by every finder trial)."""

    def __init__(self) -> None:
        self.runs: list[tuple[int, float, list[float]]] = []

    def on_train_start(self, trainer, pl_module) -> None:  # type: ignore[no-untyped-def]
        timescale = next(c for c in trainer.callbacks if isinstance(c, TimescaleCallback))
        used: list[float] = []
        self.runs.append((len(trainer.train_dataloader.dataset), timescale.tau_epoch, used))
        group = next(g for g in trainer.optimizers[0].param_groups if g["name"] == "decay")
        trainer.optimizers[0].register_step_post_hook(lambda *_: used.append(group["weight_decay"]))


@pytest.mark.slow
def test_size_demo_every_step_uses_sizes_weight_decay(tmp_path: Path) -> None:
    """Every optimizer step of every run used ``B / (lr N tau_epoch)`` (``M = ceil(N / B)`` steps an epoch) for the
    ``N`` the demo asked for: the finder's subset of the sizes' fractions holds exactly that many digits."""
    config = SizeConfig(sizes=[100, 300], tau_epochs=[1.0, 10.0], seeds=[0], epochs=2, hidden=16)
    steps = _StepDecays()
    with quiet_sweep(single_thread=True):
        run_size_demo(config, tmp_path, plot=False, progress=False, callbacks=[steps])
    assert sorted((n, tau) for n, tau, _ in steps.runs) == [(n, t) for n in (100, 300) for t in (1.0, 10.0)]
    for n, tau, used in steps.runs:
        m = math.ceil(n / config.batch_size)
        assert len(used) == config.epochs * m
        assert used == pytest.approx([1 / (config.lr * m * tau)] * len(used), rel=1e-12)


@pytest.mark.slow
def test_second_call_writes_new_sweep_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
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
def test_rejects_bad_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--out", str(tmp_path), *argv])
    assert exit_info.value.code == 2
    assert expected in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_rejects_size_larger_than_dataset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--sizes", "200", "1500", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "1500 is more than the 1400 digits left for training" in err and "use sizes up to 1400" in err
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


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--sizes", "100"], "--sizes 100: give at least two dataset sizes to compare"),
        (["--task", "text", "--fractions", "0.5"], "--fractions 0.5: give at least two dataset sizes to compare"),
    ],
)
def test_needs_two_dataset_sizes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    """The finder's dataset-size axis fits an exponent over the sizes: one size is an error before any training."""
    assert main(["demo", *argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert expected in err and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--batch-sizes", "64"], "--batch-sizes 64: give at least two batch sizes to compare."),
        (
            ["--batch-sizes", "16", "4096"],
            "--batch-sizes 16 4096: B=4096 is more than the --train-size 2048 samples, so an epoch would not hold one"
            " full batch. Use batch sizes up to --train-size.",
        ),
        (["--tau-epochs", "0.1", "4"], "--tau-epochs 0.1: at N=2048, B=256 an epoch is 8 optimizer steps, so"),
        (["--sizes", "64", "128"], "--sizes apply to `--axis dataset-size` only; `--axis batch-size` trains every"),
        (["--batch-size", "64"], "--batch-size apply to `--axis dataset-size` only; `--axis batch-size` trains"),
        (["--widths", "8", "16"], "--widths apply to `--axis width` only (got --axis batch-size)."),
        (["--label-noise", "0.1"], "--label-noise do not apply to `--task synthetic` (its labels are noisy"),
    ],
)
def test_batch_demo_rejects_what_it_cannot_run_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    """``--task synthetic --axis batch-size``: each bad option is one line naming it (exit 2), before any run."""
    assert main(["demo", "--task", "synthetic", "--axis", "batch-size", *argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"lightning-tau demo: error: {expected}") and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["--batch-sizes", "16", "32"],
            "--batch-sizes apply to `--task synthetic --axis batch-size` only (got --axis dataset-size).",
        ),
        (
            ["--axis", "width", "--lr-scaling", "sqrt", "--beta2", "held"],
            "--lr-scaling --beta2 apply to `--task synthetic --axis batch-size` only (got --axis width).",
        ),
        (
            ["--task", "text", "--train-size", "64"],
            "--train-size apply to `--task synthetic --axis batch-size` only (got --axis dataset-size).",
        ),
        (
            ["--axis", "batch_size"],
            "--task digits --axis batch-size: the digits task has --axis dataset-size and --axis width only.",
        ),
    ],
)
def test_batch_options_elsewhere_rejected_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    assert main(["demo", *argv, "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"lightning-tau demo: error: {expected}"
    assert not list(tmp_path.iterdir())


def test_batch_demo_bad_choice_is_argparse_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--task", "synthetic", "--axis", "batch-size", "--lr-scaling", "cubic", "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "argument --lr-scaling: invalid choice: 'cubic'" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_help_says_what_batch_axis_does(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for option in ("--batch-sizes", "--lr-scaling", "--beta2", "--train-size", "--workers"):
        assert option in out
    assert "`--task synthetic --axis batch-size` runs the finder's batch-size axis" in out
    assert "decides each published batch rule (tau_epoch constant; a fixed λ) with its loss cost" in out
