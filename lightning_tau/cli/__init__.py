"""The ``lightning-tau`` command (also ``python -m lightning_tau``).

Each subcommand lives in its own module exposing ``add_parser(subparsers)``, which registers the subcommand and
sets ``func`` (called with the parsed ``argparse.Namespace``, returning an exit code) as its default.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence

__all__ = ["build_parser", "main"]

#: Subcommand modules, in the order ``--help`` lists them.
SUBCOMMANDS = ("demo", "find", "plot", "transfer")


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="lightning-tau",
        description="Set AdamW's weight decay from its EMA timescale: demo sweep, plots and transfer tables.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in SUBCOMMANDS:
        importlib.import_module(f"lightning_tau.cli.{name}").add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lightning-tau`` console script."""
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)
