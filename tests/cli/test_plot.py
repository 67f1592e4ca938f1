"""``lightning-tau plot``: reads a sweep's TensorBoard logs back and finds each dataset size's optimum."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import pytest
import torch
from tiny_model import TinyModel, make_loader, quiet_trainer

pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")

from lightning_tau import TimescaleCallback  # noqa: E402
from lightning_tau._quiet import quiet_sweep  # noqa: E402
from lightning_tau.cli import main  # noqa: E402
from lightning_tau.cli.demo import QUICK  # noqa: E402
from lightning_tau.demos.size import SizeConfig, run_size_demo  # noqa: E402
from lightning_tau.diagnostics.sweep import load_runs, plot_sweep  # noqa: E402


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """A quick sweep with two seeds; returns its directory and what each run reported in memory."""
    sweep_dir = tmp_path_factory.mktemp("sweep")
    config = SizeConfig(**{**vars(QUICK), "seeds": [0, 1]})
    with quiet_sweep(single_thread=True):
        summary = run_size_demo(config, sweep_dir, plot=False, progress=False)
    return sweep_dir, summary["runs"]


def _expected_optima(logged: list[dict], metric: str) -> dict[int, tuple[float, float, float]]:
    """Per dataset size: ``(tau_epoch, weight_decay, mean metric)`` of the lowest seed-averaged ``metric``."""
    by_setting: dict[tuple[int, float], list[dict]] = defaultdict(list)
    for run in logged:
        by_setting[(int(run["dataset_size"]), run["tau_epoch"])].append(run)
    best: dict[int, tuple[float, float, float]] = {}
    for (n, tau), runs in by_setting.items():
        mean = sum(r[metric] for r in runs) / len(runs)
        if n not in best or mean < best[n][2]:
            best[n] = (tau, runs[0]["weight_decay"], mean)
    return best


@pytest.mark.parametrize("metric", ["hp/val_loss", "hp/val_error"])
@pytest.mark.slow
def test_optimum_table_matches_logged_metrics(
    sweep: tuple[Path, list[dict]], tmp_path: Path, capsys: pytest.CaptureFixture[str], metric: str
) -> None:
    sweep_dir, logged = sweep
    expected = _expected_optima(logged, metric)
    # ties (possible for the error rate) go to the smallest tau_epoch, in the plot as here
    code = main(["plot", str(sweep_dir), "--out", str(tmp_path), "--metric", metric])
    assert code == 0
    printed = capsys.readouterr().out
    result = plot_sweep(sweep_dir, tmp_path, metric=metric, quiet=True)
    assert [int(o.group) for o in result.optima] == sorted(expected)
    for optimum in result.optima:
        tau, wd, mean = expected[int(optimum.group)]
        assert optimum.tau_epoch == pytest.approx(tau)
        assert optimum.weight_decay == pytest.approx(wd, rel=1e-6)
        assert optimum.metric == pytest.approx(mean, rel=1e-5)
        assert optimum.runs == len(QUICK.tau_epochs) * 2
        row = f"  {int(optimum.group)} "
        (line,) = [line for line in printed.splitlines() if line.startswith(row)]
        assert f"{wd:.3g}" in line and f"{tau:.3g}" in line
    assert (tmp_path / "tau_sweep.png").stat().st_size > 1000
    assert (tmp_path / "tau_sweep.svg").stat().st_size > 1000


@pytest.mark.slow
def test_reads_hparams_and_final_metrics(sweep: tuple[Path, list[dict]]) -> None:
    sweep_dir, logged = sweep
    runs = [r for r in load_runs(sweep_dir) if r.path != sweep_dir]  # the root holds the HParams config only
    assert len(runs) == len(logged)
    by_key = {(int(r["dataset_size"]), r["tau_epoch"], r["seed"]): r for r in logged}
    for run in runs:
        key = (int(run.hparams["dataset_size"]), run.hparams["tau_epoch"], int(run.hparams["seed"]))
        reported = by_key[key]
        assert run.hparams["weight_decay"] == pytest.approx(reported["weight_decay"])
        assert run.scalars["hp/val_loss"] == pytest.approx(reported["hp/val_loss"], rel=1e-6)
        assert math.isfinite(run.scalars["val/loss"])


@pytest.mark.slow
def test_group_by_other_hparam_and_goal_max(sweep: tuple[Path, list[dict]], tmp_path: Path) -> None:
    sweep_dir, logged = sweep
    result = plot_sweep(sweep_dir, tmp_path, metric="hp/val_loss", group_by="seed", goal="max", quiet=True)
    assert sorted(int(o.group) for o in result.optima) == [0, 1]
    # computed here from what each run reported in memory: per seed, each tau_epoch's loss averaged over the sizes,
    # and the highest of those means (goal="max")
    for optimum in result.optima:
        by_tau: dict[float, list[float]] = defaultdict(list)
        for r in logged:
            if r["seed"] == optimum.group:
                by_tau[r["tau_epoch"]].append(r["hp/val_loss"])
        means = {tau: sum(v) / len(v) for tau, v in by_tau.items()}
        highest = max(means, key=lambda tau: means[tau])
        lowest = min(means, key=lambda tau: means[tau])
        assert means[highest] > means[lowest]  # the two goals pick different points, so the check can fail
        assert optimum.tau_epoch == pytest.approx(highest)
        assert optimum.metric == pytest.approx(means[highest], rel=1e-5)


@pytest.mark.slow
def test_will_not_write_over_figure_package_did_not_write(
    sweep: tuple[Path, list[dict]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep_dir, _ = sweep
    out = tmp_path / "figures"
    out.mkdir()
    mine = out / "tau_sweep.svg"
    mine.write_text("<svg>my drawing</svg>")
    assert main(["plot", str(sweep_dir), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("lightning-tau plot: error: argument --out: ") and "\n" not in err, err
    assert mine.read_text() == "<svg>my drawing</svg>" and not (out / "tau_sweep.png").exists()
    mine.unlink()
    assert main(["plot", str(sweep_dir), "--out", str(out)]) == 0  # written; and again over its own figures
    assert main(["plot", str(sweep_dir), "--out", str(out)]) == 0


def test_fails_clearly_without_sweep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plot", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "No run under" in err and "no TensorBoard event files" in err
    assert main(["plot", str(tmp_path / "missing")]) == 2
    assert "is not a directory" in capsys.readouterr().err


@pytest.mark.slow
def test_unknown_metric_names_what_was_found(
    sweep: tuple[Path, list[dict]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep_dir, _ = sweep
    assert main(["plot", str(sweep_dir), "--out", str(tmp_path), "--metric", "val/acc"]) == 2
    err = capsys.readouterr().err
    assert "`val/acc`" in err and "hp/val_loss" in err
    assert not (tmp_path / "tau_sweep.png").exists()


class _ValModel(TinyModel):
    """The quick start's shape: `save_hyperparameters` and a validation loss, Lightning's default logger."""

    def __init__(self) -> None:
        super().__init__()
        self.save_hyperparameters({"hidden": 8})

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.cross_entropy(self(x), y))


@pytest.mark.slow
def test_reads_package_s_own_logs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Runs with `TimescaleCallback` and Lightning's default TensorBoard logger (the quick start, or what
    `lightning-tau find` writes) record `timescale/...` hparams, not the demo's `tau_epoch`: plot reads them."""
    final = {}
    for tau in (0.5, 8.0):
        trainer = quiet_trainer(
            logger=True, default_root_dir=tmp_path, max_epochs=2, callbacks=[TimescaleCallback(tau_epoch=tau)]
        )
        with quiet_sweep():
            trainer.fit(_ValModel(), make_loader(120, 10), make_loader(40, 40))
        final[tau] = float(trainer.callback_metrics["val_loss"])
    assert main(["plot", str(tmp_path / "lightning_logs"), "--out", str(tmp_path / "fig")]) == 0
    printed = capsys.readouterr().out
    assert "Optimum of hp/val_loss per dataset_size" in printed
    (optimum,) = plot_sweep(tmp_path / "lightning_logs", tmp_path / "fig", quiet=True).optima
    best = min(final, key=final.__getitem__)
    assert optimum.group == 120  # N, from timescale/dataset_size
    assert optimum.tau_epoch == best
    assert optimum.weight_decay == pytest.approx(1 / (1e-2 * 12 * best), rel=1e-6)  # 1 / (lr M tau_epoch), M = 12
    assert optimum.metric == pytest.approx(final[best], rel=1e-5)


@pytest.mark.slow
def test_plot_without_timescales_says_so_in_one_short_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trainer = quiet_trainer(logger=True, default_root_dir=tmp_path)
    trainer.fit(TinyModel(), make_loader())
    assert main(["plot", str(tmp_path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("lightning-tau plot: error: No run under") and "records tau_epoch and weight_decay" in line
    assert len(line) < 250, line
