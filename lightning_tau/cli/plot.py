"""``lightning-tau plot``: read a sweep's TensorBoard logs and draw the paper's Figure-1-style picture.

The command line over :mod:`lightning_tau.diagnostics.sweep`, which reads the runs, finds each line's optimum and
draws the figure.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from lightning_tau._constants import GOALS
from lightning_tau.diagnostics.sweep import DEFAULT_METRICS, plot_sweep

__all__ = ["add_parser"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``plot``."""
    parser = subparsers.add_parser(
        "plot",
        aliases=["report"],
        help="Plot a sweep's final metric against weight decay and tau_epoch, and print each line's optimum.",
        description=(
            "Read the TensorBoard logs under LOGDIR (one run directory per fit, with hparams tau_epoch,"
            " weight_decay and GROUP_BY, and a scalar METRIC, as `lightning-tau demo` writes them) and draw the"
            " metric against weight decay and against tau_epoch, one line per GROUP_BY value, optimum marked."
            " Writes tau_sweep.png and tau_sweep.svg and prints the optimum table."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("logdir", type=Path, help="sweep directory (e.g. tau_runs/sweep_0)")
    parser.add_argument("--out", type=Path, default=None, help="where to write the figure (default: LOGDIR)")
    parser.add_argument(
        "--metric",
        default=None,
        help="scalar tag to compare (its last value per run); default: the first of"
        f" {', '.join(DEFAULT_METRICS)} that the runs logged",
    )
    parser.add_argument("--group-by", default="dataset_size", help="hparam that tells the lines apart")
    parser.add_argument("--goal", choices=GOALS, default="min", help="whether lower or higher is better")
    parser.set_defaults(func=_main)
    return parser


def _main(args: argparse.Namespace) -> int:
    if not args.logdir.is_dir():
        print(f"lightning-tau plot: error: LOGDIR {str(args.logdir)!r} is not a directory.", file=sys.stderr)
        return 2
    if args.out is not None:
        from lightning_tau.cli._args import output_dir_problem

        problem = output_dir_problem(args.out, "--out")
        if problem:
            print(f"lightning-tau plot: error: {problem}", file=sys.stderr)
            return 2
    from lightning_tau.outputs import OutputError

    try:
        plot_sweep(args.logdir, args.out, metric=args.metric, group_by=args.group_by, goal=args.goal)
    except OutputError as err:  # a tau_sweep.png / .svg there that the package did not write
        print(f"lightning-tau plot: error: argument --out: {err}", file=sys.stderr)
        return 2
    except ValueError as err:  # LOGDIR holds no sweep, or no run logged --metric / --group-by: a usage error
        print(f"lightning-tau plot: error: {err}", file=sys.stderr)
        return 2
    return 0
