"""Honest evaluation of ``TimescaleFinder`` on the demo's digits task, against a full-data sweep as ground truth.

    .venv/bin/python benchmarks/eval_finder.py            # an estimated 25-40 minutes on 2 busy CPU cores
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
4. The held-out check: the sweep's best ``tau_epoch`` (the reference) and every distinct suggestion trained on all
   the data again over ``--holdout-seeds`` (10..39), seeds the sweep never saw.

Cost is counted in optimizer steps (a pruned run's steps up to where it stopped), so it does not depend on the
machine's load. Regret, two ways:

- held out (the one to quote): mean suggestion loss over the holdout seeds / mean reference loss over the same
  holdout seeds - 1. The reference was picked on ``--seeds``, so its holdout loss is not biased low by the pick;
  the same seed gives the same initialization and batch order at every ``tau_epoch``, so the interval is a paired
  one: Student's t over the holdout seeds' differences (suggestion - reference), divided by the reference's mean
  (its own noise, a few percent of the regret, is left out). With several subsets, a seed's difference uses the
  mean over the subsets' suggestions, so the interval is over seeds for these subsets' suggestions.
- old (kept to compare with earlier figures): mean suggestion loss over ``--seeds`` / the sweep's best seed-mean
  - 1. The best of 13 noisy seed-means, judged on the seeds that picked it, is biased low (the winner's curse),
  so every regret this way is biased high.

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
from lightning_tau.tuner.analysis.curve import DEFAULT_TAU_EPOCHS, PRUNER_NAMES, log_grid
from lightning_tau.tuner.finder import TimescaleFinder
from lightning_tau.tuner.analysis.finder_result import FinderResult
from lightning_tau.tuner.analysis.tdist import t_quantile

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
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=list(range(10)), help="full-data seeds that pick the reference"
    )
    parser.add_argument(
        "--holdout-seeds",
        type=int,
        nargs="+",
        default=list(range(10, 40)),
        help="full-data seeds, disjoint from --seeds, on which the reference and the suggestions are compared",
    )
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
    seeds, holdout_seeds = tuple(args.seeds), tuple(args.holdout_seeds)
    if args.quick:
        config = DemoConfig(epochs=3, hidden=32)
        finder_grid, full_grid, seeds, holdout_seeds = (2.0, 8.0, 32.0), (2.0, 8.0, 32.0), (0, 1), (2, 3)
        args.subset_seeds, args.finder_seeds, args.fractions = [0], [0], [0.25]
    if set(seeds) & set(holdout_seeds) or len(holdout_seeds) < 2:
        parser.error("--holdout-seeds must be at least two seeds, none of them in --seeds")
    out = args.out
    lr = config.lr

    begin = start = time.perf_counter()
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
        "holdout": {"seeds": list(holdout_seeds)},
        "pruner": args.pruner,
        "finder_grid": list(finder_grid),
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
    start = time.perf_counter()
    holdout: dict[float, list[float]] = {}  # tau_epoch -> its full-data losses over the holdout seeds, in their order
    for tau in [best.tau_epoch, *(row["suggested_tau_epoch"] for row in report["finder"])]:
        if tau not in holdout:  # a one-seed study per run, so that more --holdout-seeds reuse the runs made before
            holdout[tau] = [_fit(config, out / "holdout", 1.0, (tau,), (seed,)).curve[0].mean for seed in holdout_seeds]
    reference = holdout[best.tau_epoch]
    report["holdout"].update(
        tau_epoch=best.tau_epoch,
        losses=reference,
        loss=statistics.mean(reference),
        loss_std=statistics.stdev(reference),
        seconds=time.perf_counter() - start,
    )
    for row in report["finder"]:
        losses = holdout[row["suggested_tau_epoch"]]
        row["suggested"]["holdout_losses"] = losses
        row["holdout_regret"] = _paired_regret([losses], reference)
        row["old_regret"] = row["suggested"]["loss"] / best.mean - 1
    report["summary"] = []
    for fraction in dict.fromkeys(args.fractions):
        rows = [r for r in report["finder"] if r["fraction"] == fraction]
        report["summary"].append(
            {
                "fraction": fraction,
                "subsets": [r["subset_seed"] for r in rows],
                "holdout_regret": _paired_regret([r["suggested"]["holdout_losses"] for r in rows], reference),
                "old_regret": statistics.mean(r["old_regret"] for r in rows),
                "cost": statistics.mean(r["cost"] / r["full_cost"] for r in rows),
                "cost_range": [
                    min(r["cost"] / r["full_cost"] for r in rows),
                    max(r["cost"] / r["full_cost"] for r in rows),
                ],
                "pruned_per_finder": statistics.mean(len(r["pruned_tau_epochs"]) for r in rows),
                "suggested_tau_epochs": [r["suggested_tau_epoch"] for r in rows],
            }
        )
    report["seconds"] = time.perf_counter() - begin
    out.mkdir(parents=True, exist_ok=True)
    name = "eval.json" if args.pruner == "none" else f"eval_{args.pruner}.json"
    (out / name).write_text(json.dumps(report, indent=1) + "\n")
    if args.publish:
        docs = Path(__file__).resolve().parents[1] / "docs" / "_static" / name.replace("eval", "eval_finder", 1)
        docs.write_text(json.dumps(report, indent=1) + "\n")
    print(_format(report))
    return report


def _paired_regret(suggestions: list[list[float]], reference: list[float]) -> dict[str, Any]:
    """Regret of ``suggestions`` (one list of per-seed losses per subset) against ``reference`` on the same seeds.

    A seed's difference is the subsets' mean loss at that seed minus the reference's; the regret is the mean
    difference over the reference's mean, with a Student's t 95% interval over the seeds (the reference's mean taken
    as exact).

    >>> r = _paired_regret([[1.1, 1.3, 1.2]], [1.0, 1.0, 1.0])
    >>> round(r["regret"], 6), round(r["se"], 6), [round(x, 4) for x in r["ci95"]]
    (0.2, 0.057735, [-0.0484, 0.4484])
    """
    diffs = [statistics.mean(losses) - ref for *losses, ref in zip(*suggestions, reference, strict=True)]
    scale = statistics.mean(reference)
    se = statistics.stdev(diffs) / math.sqrt(len(diffs)) / scale
    regret = statistics.mean(diffs) / scale
    half = t_quantile(0.975, len(diffs) - 1) * se
    return {"regret": regret, "se": se, "ci95": [regret - half, regret + half], "seeds": len(diffs)}


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
    for summary in report["summary"]:
        rows = [r for r in report["finder"] if r["fraction"] == summary["fraction"]]
        naive = statistics.mean(r["naive"]["loss"] if r["naive"] else math.nan for r in rows)
        within = sum(r["suggested"]["loss"] - full["best_loss"] <= noise for r in rows)
        lines.append(
            f"  fraction {summary['fraction']:g}: mean over {len(rows)} subsets on the sweep's seeds: suggested"
            f" {statistics.mean(r['suggested']['loss'] for r in rows):.4f}, finder's grid best"
            f" {statistics.mean(r['grid_best']['loss'] for r in rows):.4f}, naive {naive:.4f}; within one seed std of"
            f" the best in {within}/{len(rows)}."
        )
    hold = report["holdout"]
    lines += [
        "",
        f"Held out: the reference (the sweep's best, tau_epoch {hold['tau_epoch']:.3g}) and each suggestion on"
        f" {len(hold['seeds'])} other seeds ({hold['seeds'][0]}..{hold['seeds'][-1]}), {hold['seconds']:.0f} s:"
        f" reference val loss {hold['loss']:.4f} +- {hold['loss_std']:.4f} (seed std; {full['best_loss']:.4f} on the"
        " sweep's seeds that picked it).",
        "  fraction | subset seed | suggested tau | its holdout val loss | held-out regret (95% CI)  | old regret",
    ]
    for row in report["finder"]:
        r, losses = row["holdout_regret"], row["suggested"]["holdout_losses"]
        lines.append(
            f"  {row['fraction']:<8g} | {row['subset_seed']:<11d} | {row['suggested_tau_epoch']:<13.3g} |"
            f" {statistics.mean(losses):.4f} +- {statistics.stdev(losses):.4f}     |"
            f" {r['regret']:+6.1%} ({r['ci95'][0]:+.1%}, {r['ci95'][1]:+.1%}) | {row['old_regret']:+.1%}"
        )
    for summary in report["summary"]:
        r = summary["holdout_regret"]
        n = len(summary["subsets"])
        lines.append(
            f"  fraction {summary['fraction']:g}, pruner {report.get('pruner', 'none')}, {n} subsets:"
            f" held-out regret {r['regret']:.1%} (95% CI {r['ci95'][0]:.1%} to {r['ci95'][1]:.1%}, se {r['se']:.1%},"
            f" {r['seeds']} paired seeds); old regret {summary['old_regret']:.1%} (over the sweep's best seed-mean);"
            f" cost {summary['cost']:.3f} ({summary['cost_range'][0]:.3f}-{summary['cost_range'][1]:.3f}) of the"
            f" same sweep on full data (steps); {summary['pruned_per_finder']:.1f} of {len(report['finder_grid'])}"
            " tau_epochs pruned per finder."
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
