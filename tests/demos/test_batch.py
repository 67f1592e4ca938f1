"""The batch-size demo (``lightning_tau/demos/batch.py``, ``lightning-tau demo --task synthetic --axis batch-size``):
every trial trains at its point's global batch, lr and weight decay for the steps its batch gives; the quick sweep's
table and ``summary.json`` show the batch axis, how the batch was set and both batch rules, decided or not, with the
curves the runs logged; the command-line options reach the sweep."""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import pytest
from lightning.pytorch.callbacks import Callback
from tb_events import read_run

from lightning_tau import TimescaleCallback
from lightning_tau.cli import main
from lightning_tau.cli.demo import QUICK_SYNTHETIC_BATCH
from lightning_tau.cli.demo_checks import batch_grid_problem
from lightning_tau.demos.batch import SyntheticBatchConfig, run_batch_demo

#: B = 16 and 64 at lr ∝ √B, 128 samples, one epoch: 8 and 2 steps a run
TINY = SyntheticBatchConfig(
    batch_sizes=[16, 64], lr_scaling="sqrt", tau_epochs=[2.0, 8.0, 32.0], seeds=[0], epochs=1, train_size=128,
    hidden=8, val_size=64, workers=1,
)  # fmt: skip


class _EveryTrial(Callback):
    """Per trial: the point's B (its study folder's name), the global batch it trained at, the model's ``batch_size``,
    the decaying group's initial lr and weight decay at every optimizer step, and the ``tau_epoch``."""

    def __init__(self) -> None:
        self.trials: list[dict[str, Any]] = []

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        study = Path(trainer.logger.log_dir).parent.name  # type: ignore[union-attr]
        point = re.search(r"_batch_size(?:_lr_\w+)?=(\d+)$", study)
        assert point is not None
        loader: Any = trainer.train_dataloader
        callbacks: list[Any] = trainer.callbacks  # type: ignore[attr-defined]
        callback = next(c for c in callbacks if isinstance(c, TimescaleCallback))
        trial: dict[str, Any] = {
            "point": int(point.group(1)),
            "global_batch": loader.batch_size * trainer.accumulate_grad_batches,
            "model_batch": pl_module.batch_size,
            "tau_epoch": callback.tau_epoch,
            "steps": [],
        }
        self.trials.append(trial)

        def hook(opt: Any, args: Any, kwargs: Any) -> None:
            group = next(g for g in opt.param_groups if g["weight_decay"] > 0)
            trial["steps"].append((float(group["initial_lr"]), float(group["weight_decay"])))

        trainer.optimizers[0].register_step_post_hook(hook)


@pytest.mark.slow
def test_every_trial_trains_at_its_batch_lr_and_weight_decay(tmp_path: Path) -> None:
    every = _EveryTrial()
    with contextlib.redirect_stdout(io.StringIO()):
        summary = run_batch_demo(TINY, tmp_path, plot=False, progress=False, callbacks=[every])
    assert {t["point"] for t in every.trials} == set(TINY.batch_sizes)
    for trial in every.trials:
        b = trial["point"]
        assert trial["global_batch"] == trial["model_batch"] == b  # set through the model's batch_size, no accumulation
        steps = math.ceil(TINY.train_size / b)
        assert len(trial["steps"]) == TINY.epochs * steps  # the same data for the same epochs: fewer steps at larger B
        lr = TINY.lr * (b / 16) ** 0.5
        lrs, decays = zip(*trial["steps"])  # every step: the point's lr and the weight decay of its tau_epoch
        assert lrs == pytest.approx([lr] * len(lrs), rel=1e-12)
        assert decays == pytest.approx([1 / (lr * steps * trial["tau_epoch"])] * len(lrs), rel=1e-12)
    assert summary["batch_setting"] == "the model's batch_size" and summary["axis"] == "batch_size_lr_sqrt"


@pytest.mark.slow
def test_quick_table_shows_batch_axis_both_rules_and_setting(tmp_path: Path) -> None:
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(io.StringIO()):
        argv = ["demo", "--task", "synthetic", "--axis", "batch_size", "--quick", "--no-progress", "--no-plot"]
        assert main([*argv, "--out", str(tmp_path)]) == 0
    printed, quick = stdout.getvalue(), QUICK_SYNTHETIC_BATCH
    sizes = ", ".join(map(str, quick.batch_sizes))
    assert f"batch_size axis: {len(quick.batch_sizes)} batch sizes ({sizes})" in printed
    assert "the batch set by the model's batch_size, the same lr at every B" in printed
    assert "Exponent of best tau_epoch on B" in printed
    summary = json.loads((tmp_path / "sweep_0" / "summary.json").read_text())
    assert (summary["task"], summary["axis"], summary["batch_sizes"]) == ("synthetic", "batch_size", quick.batch_sizes)
    assert summary["batch_setting"] == "the model's batch_size" and summary["lr_scaling"] == "none"
    rules = {r["name"]: r for r in summary["rules"]}
    assert {name: r["exponent"] for name, r in rules.items()} == {"constant tau_epoch": 0.0, "fixed λ": 1.0}
    for name, rule in rules.items():  # each rule's row: its exponent, its decision and its cost (or why none)
        assert rule["decision"] in ("holds", "excluded", "undetermined")
        row = next(line for line in printed.splitlines() if line.strip().startswith(f"{name} "))
        assert f"| {rule['decision']} " in row and len(row.split("|")) == 4
    # the curves are the runs the finder logged, one TensorBoard run per (B, tau_epoch, seed)
    logged: dict[str, dict[float, dict[int, float]]] = {}
    for run_dir in sorted({p.parent for p in (tmp_path / "sweep_0" / "tb").rglob("events.out.tfevents.*")}):
        b = re.search(r"_batch_size=(\d+)$", run_dir.parent.name).group(1)  # type: ignore[union-attr]
        tau, seed = re.match(r"tau_epoch=([^_]+)_seed(\d+)_trial", run_dir.name).groups()  # type: ignore[union-attr]
        logged.setdefault(b, {}).setdefault(float(tau), {})[int(seed)] = read_run(run_dir)[1]["val/loss"]
    assert sorted(logged, key=int) == [str(b) for b in quick.batch_sizes] == list(summary["curves"])
    for b, rows in summary["curves"].items():
        assert [tau for tau, _ in rows] == sorted(logged[b])
        for tau, values in rows:
            assert values == pytest.approx([logged[b][tau][s] for s in quick.seeds], rel=1e-6)


@pytest.mark.slow
def test_options_reach_the_sweep(tmp_path: Path) -> None:
    """``--batch-sizes`` (sorted, duplicates dropped), ``--lr-scaling``, ``--train-size``, ``--tau-epochs``,
    ``--seeds``, ``--epochs`` and ``--beta2`` are what the finder ran: at lr ∝ B both rules are exponent 0."""
    argv = ["demo", "--task", "synthetic", "--axis", "batch-size", "--batch-sizes", "32", "16", "32"]
    argv += ["--lr-scaling", "linear", "--train-size", "64", "--tau-epochs", "2", "8", "--seeds", "3", "--epochs", "1"]
    argv += ["--hidden", "8", "--workers", "1", "--beta2", "both", "--no-plot", "--no-progress"]
    argv += ["--out", str(tmp_path)]
    with contextlib.redirect_stdout(io.StringIO()) as stdout, contextlib.redirect_stderr(io.StringIO()):
        assert main(argv) == 0
    summary = json.loads((tmp_path / "sweep_0" / "summary.json").read_text())
    assert summary["batch_sizes"] == summary["values"] == [16, 32] and summary["seeds"] == [3]
    assert summary["axis"] == "batch_size_lr_linear" and summary["lr_scaling"] == "linear"
    assert [r["exponent"] for r in summary["rules"]] == [0.0, 0.0]
    assert (summary["config"]["train_size"], summary["config"]["epochs"], summary["config"]["hidden"]) == (64, 1, 8)
    assert {p["tau_epoch"] for p in summary["results"][0]["curve"]} >= {2.0, 8.0}
    assert "B=32: 2 steps/epoch, lr 0.006" in stdout.getvalue()  # lr ∝ B from 0.003 at B=16
    assert summary["config"]["beta2"] == "both"  # the largest B's best trained again with β₂ held: its paired cost
    held = r"^β₂ at B=32, tau_epoch=\S+ \(val/loss, min; held minus fixed, paired over 1 seed"
    assert re.search(held, stdout.getvalue(), re.M)


def test_default_and_quick_configs_pass_their_checks() -> None:
    """The full form trains B = 16 .. 256 (a range of 16) over 4 seeds on 2 cores; both forms pass the row's checks."""
    config = SyntheticBatchConfig()
    assert batch_grid_problem(config) is None and batch_grid_problem(QUICK_SYNTHETIC_BATCH) is None
    assert max(config.batch_sizes) / min(config.batch_sizes) >= 16 and len(config.seeds) >= 4 and config.workers == 2
    assert config.lr_at(256) == config.lr and SyntheticBatchConfig(lr_scaling="sqrt").lr_at(64) == 2 * config.lr
