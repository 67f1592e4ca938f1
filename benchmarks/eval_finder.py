"""Honest evaluation of ``TimescaleFinder`` on the demo's digits task, against a full-data sweep as ground truth.

    .venv/bin/python benchmarks/eval_finder.py            # about 5-10 minutes on 2 busy CPU cores
    .venv/bin/python benchmarks/eval_finder.py --quick    # a smoke run (seconds), numbers meaningless
    .venv/bin/python benchmarks/eval_finder.py --pruner median   # the finder with a pruner (the rest reused)

The task is ``lightning-tau demo``'s (``DigitsMLP`` 128x2 with LayerNorm, AdamW lr 3e-3 with cosine decay to a
tenth, B=64, 40 epochs, the fixed 397-digit validation set) at the demo's largest training set, N=1400.

1. Ground truth: a full-data sweep of ``tau_epoch`` (a grid finer than the finder's) over ``--seeds``; its best
   seed-mean final ``val/loss`` and the seed-to-seed standard deviation there.
2. The finder at each ``--fractions`` and each ``--subset-seeds`` (a different random subset each), with its own
   grid and ``--finder-seeds``.
3. Every suggestion trained on all the data over ``--seeds`` (the same seeds as the sweep: a paired comparison),
   next to the naive transfer (the subset's best *weight decay* kept as it is, i.e. ``tau_epoch * fraction``) and
   PyTorch's default ``weight_decay=0.01``.

Cost is counted in optimizer steps (a pruned run's steps up to where it stopped), so it does not depend on the
machine's load; regret is the suggestion's full-data loss above the sweep's best, relative to it.

Every run is a Lightning fit with ``TimescaleCallback``, a trial of an Optuna study in ``--out/*/study.journal``;
a second call reuses them. Prints the table that ``docs/finder.rst`` reports and writes ``--out/eval.json`` (with
the machine it ran on); ``--publish`` also copies it to ``docs/_static/eval_finder.json``, the raw data the docs'
table ships with.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from lightning_tau.cli.demo import DemoConfig
from lightning_tau.demos.digits import DigitsDataModule, DigitsMLP
from lightning_tau.timescale import weight_decay_for_tau_iter
from lightning_tau.tuner.curve import DEFAULT_TAU_EPOCHS, PRUNER_NAMES, log_grid
from lightning_tau.tuner.finder import TimescaleFinder
from lightning_tau.tuner.result import FinderResult

FULL_SIZE = 1400


def _model(config: DemoConfig) -> DigitsMLP:
    return DigitsMLP(
        hidden=config.hidden,
        depth=config.depth,
        norm=config.norm,  # type: ignore[arg-type]
        lr=config.lr,
        weight_decay=0.01,  # any positive value: TimescaleCallback replaces it
        schedule=config.schedule,  # type: ignore[arg-type]
    )


def _fit(
    config: DemoConfig,
    root: Path,
    fraction: float,
    tau_epochs: tuple[float, ...],
    seeds: tuple[int, ...],
    subset_seed: int = 0,
    monitor: str = "val/loss",
    pruner: str | None = None,
) -> FinderResult:
    finder = TimescaleFinder(
        fraction=fraction,
        tau_epochs=tau_epochs,
        seeds=seeds,
        monitor=monitor,
        trainer_kwargs={"max_epochs": config.epochs, "accelerator": "cpu", "devices": 1},
        root_dir=root,
        subset_seed=subset_seed,
        progress=False,
        verbose=False,
        pruner=pruner,
    )
    data = DigitsDataModule(train_size=FULL_SIZE, val_size=config.val_size, batch_size=config.batch_size)
    return finder.fit(lambda: _model(config), datamodule=data)


def _full_runs(
    config: DemoConfig, out: Path, tau: float, seeds: tuple[int, ...], sweep: tuple[FinderResult, FinderResult]
) -> dict[str, Any]:
    """Train ``tau`` on all the data (the sweep's point when it is on its grid); loss and error."""
    on_grid = [i for i, p in enumerate(sweep[0].curve) if math.isclose(p.tau_epoch, tau, rel_tol=1e-9)]
    if on_grid:
        result, loss, error = sweep[0], sweep[0].curve[on_grid[0]], sweep[1].curve[on_grid[0]]
    else:
        result = _fit(config, out / "full", 1.0, (tau,), seeds)
        loss = result.curve[0]
        error = _fit(config, out / "full", 1.0, (tau,), seeds, monitor="val/error").curve[0]  # same study: reused
    return {
        "tau_epoch": tau,
        "weight_decay": result.weight_decay["decay"],
        "loss": loss.mean,
        "loss_std": loss.std,
        "losses": loss.values,
        "error": error.mean,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("tau_runs/eval_finder"))
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.25, 0.1])
    parser.add_argument("--subset-seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--finder-seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4], help="full-data seeds")
    parser.add_argument("--full-points", type=int, default=13, help="full sweep: log grid 2..128 with this many")
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--quick", action="store_true", help="smoke run: 3 epochs, tiny grids")
    parser.add_argument("--publish", action="store_true", help="also write docs/_static/eval_finder.json")
    parser.add_argument(
        "--pruner", choices=("none", *PRUNER_NAMES), default="none", help="the finder's pruner (not the sweep's)"
    )
    parser.add_argument(
        "--suggestions-only",
        action="store_true",
        help="train only the suggestions on the full data (no naive transfer, no default weight decay): quicker",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    config = DemoConfig(epochs=args.epochs)
    finder_grid = tuple(DEFAULT_TAU_EPOCHS)
    full_grid = log_grid(2.0, 128.0, args.full_points)
    seeds = tuple(args.seeds)
    if args.quick:
        config = DemoConfig(epochs=3, hidden=32)
        finder_grid, full_grid, seeds = (2.0, 8.0, 32.0), (2.0, 8.0, 32.0), (0, 1)
        args.subset_seeds, args.finder_seeds, args.fractions = [0], [0], [0.25]
    out = args.out
    lr = config.lr

    start = time.perf_counter()
    sweep = _fit(config, out / "full", 1.0, full_grid, seeds)
    sweep_seconds = time.perf_counter() - start
    sweep_error = _fit(config, out / "full", 1.0, full_grid, seeds, monitor="val/error")  # the same study: reused
    sweeps = (sweep, sweep_error)
    best = min(sweep.curve, key=lambda p: p.mean)
    report: dict[str, Any] = {
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "torch": torch.__version__,
            "torch_threads": torch.get_num_threads(),
            "load_average_at_start": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        },
        "task": {
            "N": FULL_SIZE,
            "B": config.batch_size,
            "lr": lr,
            "epochs": config.epochs,
            "schedule": config.schedule,
        },
        "full_sweep": {
            "grid": list(full_grid),
            "seeds": list(seeds),
            "steps": sweep.cost,
            "seconds": sweep_seconds,
            "curve": [{"tau_epoch": p.tau_epoch, "mean": p.mean, "std": p.std} for p in sweep.curve],
            "best_tau_epoch": best.tau_epoch,
            "best_loss": best.mean,
            "best_std": best.std,
            "median_std": statistics.median(p.std for p in sweep.curve),
        },
        "pruner": args.pruner,
        "finder": [],
    }
    # weight_decay = 1 / (lr * tau_epoch * M), M the full run's steps per epoch, as TimescaleCallback counts them
    full_m = sweep.steps_per_epoch
    default_tau = 1.0 / (lr * 0.01 * full_m)
    if not args.suggestions_only:
        report["default_wd_0.01"] = _full_runs(config, out, default_tau, seeds, sweeps)
    for fraction in args.fractions:
        for subset_seed in args.subset_seeds:
            start = time.perf_counter()
            result = _fit(
                config,
                out / f"finder_f{fraction:g}_s{subset_seed}",
                fraction,
                finder_grid,
                tuple(args.finder_seeds),
                subset_seed,
                pruner=None if args.pruner == "none" else args.pruner,
            )
            seconds = time.perf_counter() - start
            # the naive transfer keeps the subset's best weight decay: 1 / (lr * tau * M_subset) on M_full steps
            subset_m = result.curve[0].steps[0] / result.epochs
            naive_tau = result.grid_tau_epoch * subset_m / full_m
            assert math.isclose(weight_decay_for_tau_iter(lr, naive_tau * full_m), result.subset_weight_decay["decay"])
            naive = None if args.suggestions_only else _full_runs(config, out, naive_tau, seeds, sweeps)
            report["finder"].append(
                {
                    "fraction": fraction,
                    "subset_seed": subset_seed,
                    "suggested_tau_epoch": result.tau_epoch,
                    "grid_tau_epoch": result.grid_tau_epoch,
                    "at_edge": result.at_edge,
                    "cost": result.cost,
                    "full_cost": result.full_cost,
                    "cost_vs_ground_truth_sweep": result.cost / sweep.cost,
                    "pruned_tau_epochs": [p.tau_epoch for p in result.pruned],
                    "seconds": seconds,
                    "suggested": _full_runs(config, out, result.tau_epoch, seeds, sweeps),
                    "grid_best": _full_runs(config, out, result.grid_tau_epoch, seeds, sweeps),
                    "naive": naive,
                }
            )
    out.mkdir(parents=True, exist_ok=True)
    name = "eval.json" if args.pruner == "none" else f"eval_{args.pruner}.json"
    (out / name).write_text(json.dumps(report, indent=1) + "\n")
    if args.publish:
        docs = Path(__file__).resolve().parents[1] / "docs" / "_static" / name.replace("eval", "eval_finder", 1)
        docs.write_text(json.dumps(report, indent=1) + "\n")
    print(_format(report))
    return report


def _format(report: dict[str, Any]) -> str:
    full = report["full_sweep"]
    noise = full["best_std"]
    lines = [
        f"Finder pruner: {report.get('pruner', 'none')}.",
        f"Ground truth: full-data sweep, N={report['task']['N']}, {len(full['grid'])} tau_epochs"
        f" ({full['grid'][0]:g}..{full['grid'][-1]:g}) x {len(full['seeds'])} seeds, {full['steps']:,} steps"
        f" ({full['seconds']:.0f} s).",
        f"  best tau_epoch {full['best_tau_epoch']:.3g}: val loss {full['best_loss']:.4f} +- {noise:.4f} (seed std;"
        f" median std over the grid {full['median_std']:.4f})",
        "",
        "  fraction | subset seed | suggested tau | its val loss (full data) | gap / seed std | grid-best tau |"
        " naive tau | naive val loss | cost/full_cost | finder s",
    ]
    for row in report["finder"]:
        s, naive = row["suggested"], row["naive"] or {"tau_epoch": math.nan, "loss": math.nan}
        gap = s["loss"] - full["best_loss"]
        lines.append(
            f"  {row['fraction']:<8g} | {row['subset_seed']:<11d} | {row['suggested_tau_epoch']:<13.3g} |"
            f" {s['loss']:.4f} +- {s['loss_std']:.4f}         | {gap / noise if noise else math.nan:+.2f}"
            f"          | {row['grid_tau_epoch']:<13g} | {naive['tau_epoch']:<9.3g}"
            f" | {naive['loss']:.4f}         | {row['cost'] / row['full_cost']:.2f}           | {row['seconds']:.0f}"
        )
    d = report.get("default_wd_0.01")
    if d is not None:
        lines.append(
            f"  PyTorch default weight_decay=0.01 (tau_epoch {d['tau_epoch']:.0f}): val loss {d['loss']:.4f} +-"
            f" {d['loss_std']:.4f}, {(d['loss'] - full['best_loss']) / noise if noise else math.nan:+.1f} seed std"
            " from the best."
        )
    by_fraction: dict[float, list[dict[str, Any]]] = {}
    for row in report["finder"]:
        by_fraction.setdefault(row["fraction"], []).append(row)
    for fraction, rows in by_fraction.items():
        mean = statistics.mean(r["suggested"]["loss"] for r in rows)
        naive = statistics.mean(r["naive"]["loss"] if r["naive"] else math.nan for r in rows)
        grid = statistics.mean(r["grid_best"]["loss"] for r in rows)
        within = sum(r["suggested"]["loss"] - full["best_loss"] <= noise for r in rows)
        regret = statistics.mean(r["suggested"]["loss"] / full["best_loss"] - 1 for r in rows)
        pruned = statistics.mean(len(r.get("pruned_tau_epochs", [])) for r in rows)
        lines.append(
            f"  fraction {fraction:g}: mean over {len(rows)} subsets: suggested {mean:.4f},"
            f" finder's grid best {grid:.4f}, naive {naive:.4f};"
            f" within one seed std of the best in {within}/{len(rows)};"
            f" cost {statistics.mean(r['cost'] / r['full_cost'] for r in rows):.3f} of the same sweep on full data"
            f" (steps); regret {regret:.1%} (mean suggested loss over the sweep's best); {pruned:.1f} tau_epochs"
            " pruned per finder."
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
