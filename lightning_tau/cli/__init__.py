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

__all__ = ["SUBCOMMANDS", "build_parser", "hold_signals", "main"]

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


def hold_signals() -> None:
    """Hold (block) SIGINT and SIGTERM in this thread from now on: the command is ending and says so in its one
    line, which a second Ctrl-C or a SIGTERM must not cut short with a traceback or a second line. :func:`main`
    reads a signal held this way when the command ends (nothing where the platform cannot block signals).

    Example:
        >>> import signal
        >>> before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
        >>> hold_signals()
        >>> {signal.SIGINT, signal.SIGTERM} <= signal.pthread_sigmask(signal.SIG_BLOCK, [])
        True
        >>> _ = signal.pthread_sigmask(signal.SIG_SETMASK, before)
    """
    import signal

    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


def _held_signal() -> int | None:
    """The first SIGINT or SIGTERM held (:func:`hold_signals`) and not yet delivered, taken off: it is not delivered
    later; ``None`` if none (or where the platform cannot tell)."""
    import signal

    if not hasattr(signal, "sigtimedwait"):
        return None
    held = None
    while (info := signal.sigtimedwait({signal.SIGINT, signal.SIGTERM}, 0)) is not None:
        held = held if held is not None else info.si_signo
    return held


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lightning-tau`` console script.

    Ctrl-C and SIGTERM anywhere (importing torch, reading a config, writing the results) end the command with one
    line and the shell's codes for them, 130 and 143, instead of a traceback or a death by the signal. From the
    command's last line on both are held (:func:`hold_signals`): one that came after the results were written, while
    they were printed, still ends the command with its line and code; one that comes while the interpreter shuts down
    (threads, workers' clean-up: the run is complete and said so) is dropped with the process, which exits with its
    own code. Called with ``argv`` (embedded), the signals are let through again on return.
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
    main_thread = threading.current_thread() is threading.main_thread()
    # only in the main thread, and where nobody (a caller embedding main) handles SIGTERM already
    ours = previous in (signal.SIG_DFL, None) and main_thread
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, []) if hasattr(signal, "pthread_sigmask") else None
    if ours:
        signal.signal(signal.SIGTERM, terminated)
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
        held = _held_signal() if main_thread else None
        if ours:
            signal.signal(signal.SIGTERM, previous)
        if embedded and mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    if held is not None and code == 0:  # after the work, before the end: the command was stopped all the same
        print(f"{prog}: {'interrupted' if held == signal.SIGINT else 'stopped by SIGTERM'}.", file=sys.stderr)
        code = 130 if held == signal.SIGINT else 143
    assert code is not None  # set on every way here
    return code
