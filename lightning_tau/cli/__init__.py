"""The ``lightning-tau`` command (also ``python -m lightning_tau``).

Each subcommand lives in its own module exposing ``add_parser(subparsers)``, which registers the subcommand and
sets ``func`` (called with the parsed ``argparse.Namespace``, returning an exit code) as its default.

Only the module of the command being run is imported (``demo`` imports Lightning and torch, seconds on a busy
machine); the others are listed by :data:`SUBCOMMANDS`' one-line help, so ``lightning-tau --help`` imports neither.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence

from lightning_tau.cli._args import CommandParser

__all__ = ["SUBCOMMANDS", "build_parser", "main"]

#: Subcommand modules, in the order ``--help`` lists them, with their one-line help and aliases (each module's
#: ``add_parser`` registers the same; ``tests/test_first_contact.py`` checks they agree).
SUBCOMMANDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "demo": (
        "The timescale finder's dataset-size (or width) axis on bundled digits or text: runs, figures, verdict.",
        (),
    ),
    "find": ("Tune tau_epoch on a fraction of the training set; print the full run's weight decay.", ()),
    "plan": (
        "Before training: what each weight-decay coupling does to a LightningCLI config's timescale, as a figure.",
        (),
    ),
    "plot": (
        "Plot a sweep's final metric against weight decay and tau_epoch, and print each line's optimum.",
        ("report",),
    ),
    "transfer": ("Weight decay per param group for a bigger run that keeps a tuned run's timescale.", ()),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The top-level parser. ``command=None`` registers every subcommand in full; a command name registers only
    that one in full and the others by name and help (so their modules are not imported)."""
    parser = CommandParser(
        prog="lightning-tau",
        description="Set AdamW's weight decay from its EMA timescale: demo sweep, plots and transfer tables.",
    )
    # every subcommand's parser is a CommandParser too: two-line usage errors, unknown flags reported by it
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    subparsers.required = True
    for name, (help_text, aliases) in SUBCOMMANDS.items():
        if command is None or name == command:
            importlib.import_module(f"lightning_tau.cli.{name}").add_parser(subparsers)
        else:
            subparsers.add_parser(name, aliases=list(aliases), help=help_text, add_help=False)
    return parser


def _command(argv: Sequence[str]) -> str:
    """The subcommand ``argv`` runs (its first word; the top-level parser has no option taking a value), or ``""``."""
    for word in argv:
        if not word.startswith("-"):
            for name, (_, aliases) in SUBCOMMANDS.items():
                if word == name or word in aliases:
                    return name
            return ""
    return ""


class _Terminated(SystemExit):
    """SIGTERM outside the finder's sweep (which says itself what its study kept)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lightning-tau`` console script.

    Ctrl-C and SIGTERM anywhere (importing torch, reading a config, writing the results) end the command with one
    line and the shell's codes for them, 130 and 143, instead of a traceback or a death by the signal.
    """
    import signal
    import sys
    import threading

    argv = sys.argv[1:] if argv is None else list(argv)
    command = _command(argv)
    prog = f"lightning-tau {command}" if command else "lightning-tau"

    def terminated(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the one line gets out
        raise _Terminated(143)

    previous = signal.getsignal(signal.SIGTERM)
    # only in the main thread, and where nobody (a caller embedding main) handles SIGTERM already
    ours = previous in (signal.SIG_DFL, None) and threading.current_thread() is threading.main_thread()
    if ours:
        signal.signal(signal.SIGTERM, terminated)
    try:
        args = build_parser(command).parse_args(argv)
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted.", file=sys.stderr)
        return 130
    except _Terminated:
        print(f"{prog}: stopped by SIGTERM.", file=sys.stderr)
        return 143
    finally:
        if ours:
            signal.signal(signal.SIGTERM, previous)
