"""The ``lightning-tau`` command (also ``python -m lightning_tau``).

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence

from lightning_tau.cli._args import CommandParser
from lightning_tau.cli.held_signals import _HELD, hold_signals

__all__ = ["SUBCOMMANDS", "build_parser", "hold_signals", "main"]

#: Subcommand modules, in the order ``--help`` lists them, with their one-line help and aliases (each module's
#: ``add_parser`` registers the same; ``tests/cli/test_first_contact.py`` checks they agree).
SUBCOMMANDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "demo": (
        "The timescale finder's dataset-size (width, batch-size) axis on bundled or synthetic data: runs, figures,"
        " verdict.",
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
    line and the shell's codes for them, 130 and 143, instead of a traceback or a death by the signal. From the
    command's last line on both are noted, not raised (:func:`hold_signals`): one that came after the results were
    written, while they were printed, still ends the command with its line and code; one that comes while the
    interpreter shuts down (threads, workers' clean-up: the run is complete and said so) is ignored, and the process
    exits with its own code. Called with ``argv`` (embedded), the handlers are put back on return.
    """
    import signal
    import sys
    import threading

    embedded = argv is not None
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _command(argv)
    prog = f"lightning-tau {command}" if command else "lightning-tau"

    def terminated(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the one line gets out
        raise _Terminated(143)

    previous = signal.getsignal(signal.SIGTERM)
    previous_int = signal.getsignal(signal.SIGINT)
    main_thread = threading.current_thread() is threading.main_thread()
    # only in the main thread, and where nobody (a caller embedding main) handles SIGTERM already
    ours = previous in (signal.SIG_DFL, None) and main_thread
    if ours:
        signal.signal(signal.SIGTERM, terminated)
    _HELD.clear()
    code: int | None = None
    try:
        args = build_parser(command).parse_args(argv)
        code = int(args.func(args) or 0)
        hold_signals()
    except KeyboardInterrupt:
        hold_signals()
        print(f"{prog}: interrupted.", file=sys.stderr)
        code = 130
    except _Terminated:
        hold_signals()
        print(f"{prog}: stopped by SIGTERM.", file=sys.stderr)
        code = 143
    finally:
        hold_signals()  # also on the way out of a SystemExit (a usage error, --help)
        if main_thread:
            # the command's own process shuts down ignoring both (the run is over and said so; ignored, not
            # handled: Python puts a handled signal back to its default late in its shutdown); embedded: as before
            for signum, handler in ((signal.SIGINT, previous_int), (signal.SIGTERM, previous)):
                if handler is not None:
                    signal.signal(signum, signal.SIG_IGN if not embedded else handler)
        held = _HELD[0] if _HELD else None
    if held is not None and code == 0:  # after the work, before the end: the command was stopped all the same
        print(f"{prog}: {'interrupted' if held == signal.SIGINT else 'stopped by SIGTERM'}.", file=sys.stderr)
        code = 130 if held == signal.SIGINT else 143
    assert code is not None  # set on every way here
    return code
