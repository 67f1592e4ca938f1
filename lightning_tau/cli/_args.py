"""The ``lightning-tau`` parser class and the argument types its subcommands share.

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import argparse
import difflib
import math
import re
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

__all__ = [
    "CommandParser",
    "HelpFormatter",
    "fraction_above_zero",
    "fraction_below_one",
    "nonempty_path",
    "output_dir_problem",
    "positive_float",
    "positive_int",
    "random_seed",
]


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` text: an option's default is appended as ``(default: X)`` unless it is ``None`` or ``SUPPRESS``
    or its help already says it (argparse's would show ``--fraction``'s default twice)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        help_text = action.help or ""
        if action.default is None or isinstance(action.default, bool) or "default" in help_text:
            return help_text
        if action.default is argparse.SUPPRESS or not (action.option_strings or action.nargs in ("?", "*")):
            return help_text
        return help_text + " (default: %(default)s)"


#: A flag among the words argparse could not place (a number such as ``-1`` is a value, not a flag).
_FLAG = re.compile(r"-{1,2}[A-Za-z][\w-]*")


def _fold(word: str) -> str:
    """A choice's spelling with ``_`` and ``-`` made the same (``dataset_size`` is ``dataset-size``)."""
    return word.replace("_", "-")


class CommandParser(argparse.ArgumentParser):
    """The parser of ``lightning-tau`` and of each subcommand (subparsers are built with the parent's class).

    Differences from :class:`argparse.ArgumentParser`:

    * a usage error prints two lines, a one-line usage naming the command and ``PROG: error: MESSAGE``, then
      exits with 2 (argparse prints the full usage, a dozen lines for ``find``);
    * words the subcommand does not know are reported by the subcommand (argparse hands them up to the top-level
      parser, which names no subcommand): ``unknown flag --fractoin 0.1; did you mean --fraction 0.1?``;
    * a value of a ``choices`` option may spell ``_`` as ``-`` or the other way round (``--axis dataset_size`` and
      ``--axis dataset-size`` are the same), and a wrong one is answered with the nearest choice;
    * ``formatter_class=argparse.ArgumentDefaultsHelpFormatter`` means :class:`HelpFormatter`, which shows no
      ``(default: None)`` and no second default where the help text gives one;
    * an option's ``help`` may be a function of no argument, called when ``--help`` is shown.

    Example:
        >>> parser = CommandParser(prog="lightning-tau find")
        >>> _ = parser.add_argument("--fraction", type=float)
        >>> _ = parser.add_argument("--axis", choices=("fraction", "dataset_size"), default="fraction")
        >>> parser.parse_args(["--axis", "dataset-size"]).axis
        'dataset_size'
        >>> parser.unknown_words_message(["--fractoin", "0.1"])
        'unknown flag --fractoin 0.1; did you mean --fraction 0.1?'
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("formatter_class", argparse.ArgumentDefaultsHelpFormatter) in (
            argparse.ArgumentDefaultsHelpFormatter,
            argparse.HelpFormatter,
        ):
            kwargs["formatter_class"] = HelpFormatter
        super().__init__(*args, **kwargs)

    def format_help(self) -> str:
        """As argparse's; an option's help may be a function of no argument, called now (so a subcommand can show
        defaults that live in modules slow to import without importing them to parse)."""
        for action in self._actions:
            if callable(action.help):
                action.help = action.help()
        return super().format_help()

    def short_usage(self) -> str:
        """One line: the command, ``[flags]`` and its positional arguments, and where the full help is.

        Example:
            >>> parser = CommandParser(prog="lightning-tau plot")
            >>> _ = parser.add_argument("logdir")
            >>> parser.short_usage()
            'usage: lightning-tau plot [flags] logdir  (lightning-tau plot --help lists them)'
        """
        positionals = self._get_positional_actions()
        for action in positionals:
            if isinstance(action, argparse._SubParsersAction):
                commands = ", ".join(choice.dest for choice in action._choices_actions)
                return (
                    f"usage: {self.prog} COMMAND [flags]  (COMMAND: {commands};"
                    f" {self.prog} COMMAND --help lists its flags)"
                )
        names = [a.metavar if isinstance(a.metavar, str) else a.dest for a in positionals]
        return " ".join(["usage:", self.prog, "[flags]", *names]) + f"  ({self.prog} --help lists them)"

    def error(self, message: str) -> NoReturn:
        """Print the short usage line and ``PROG: error: MESSAGE`` (one line each) to stderr; exit with 2. A
        required flag reported missing while the command line holds an unknown flag is that flag's typo
        (``-lr`` for ``--lr``: argparse checks the required flags before it reports unknown words), so the unknown
        flag is reported, with the flag it is nearest to."""
        message = " ".join(message.split())  # argparse's own messages are one line; keep every message so
        typed = getattr(self, "_typed", [])
        if message.startswith("the following arguments are required"):
            unknown = [w for w in typed if _FLAG.match(w) and w.partition("=")[0] not in self._option_string_actions]
            if unknown:
                message = self.unknown_words_message(unknown, typed)
        self.exit(2, f"{self.short_usage()}\n{self.prog}: error: {message}\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """As argparse's, except that words this parser does not know are a usage error here (each parser of
        ``lightning-tau`` knows every word it is given, so the subcommand that was typed reports them)."""
        args = sys.argv[1:] if args is None else list(args)
        self._typed = args  # for `error`: a missing required flag may be a typed one misspelt
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(self.unknown_words_message(extras, args))
        return namespace, extras

    def unknown_words_message(self, words: Sequence[str], typed: Sequence[str] = ()) -> str:
        """The error for ``words`` this parser does not know (of the command line ``typed``): the first unknown
        flag with the values typed after it, and the nearest flag this parser has; a stray value by itself.

        Example:
            >>> parser = CommandParser(prog="lightning-tau demo")
            >>> _ = parser.add_argument("--axis")
            >>> parser.unknown_words_message(["--axsi=width"])
            'unknown flag --axsi=width; did you mean --axis=width?'
            >>> parser.unknown_words_message(["--zzz", "3", "4"])
            'unknown flag --zzz 3 4 (lightning-tau demo --help lists the flags)'
            >>> parser.unknown_words_message(["0.5"])
            "unexpected value '0.5' (lightning-tau demo takes flags only: --flag value)"
        """
        groups: list[list[str]] = []
        for word in words:
            if _FLAG.match(word) or not groups:
                groups.append([word])
            else:
                groups[-1].append(word)
        flags = [g for g in groups if _FLAG.match(g[0])]
        if not flags:
            wanted = " ".join(
                a.metavar if isinstance(a.metavar, str) else a.dest for a in self._get_positional_actions()
            )
            takes = f"takes {wanted} and flags" if wanted else "takes flags only: --flag value"
            return f"unexpected value {' '.join(words)!r} ({self.prog} {takes})"
        values = flags[0][1:]
        if flags[0][0] in typed:  # the words typed after it (argparse may have given some to a positional)
            after = list(typed[typed.index(flags[0][0]) + 1 :])
            commands = {c for a in self._get_positional_actions() if isinstance(a.choices, dict) for c in a.choices}
            values = after[: next((i for i, w in enumerate(after) if _FLAG.match(w) or w in commands), len(after))]
        flag, eq, value = flags[0][0].partition("=")
        known = [o for o in self._option_string_actions if o.startswith("--")]
        near = difflib.get_close_matches(flag if flag.startswith("--") else "-" + flag, known, n=1, cutoff=0.75)
        more = f" (and {len(flags) - 1} more unknown: {', '.join(g[0] for g in flags[1:])})" if len(flags) > 1 else ""
        text = " ".join([flag + eq + value, *values])
        if near:
            return f"unknown flag {text}; did you mean {' '.join([near[0] + eq + value, *values])}?{more}"
        return f"unknown flag {text} ({self.prog} --help lists the flags){more}"

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        if action.choices is not None and isinstance(arg_string, str) and arg_string not in action.choices:
            same = [c for c in action.choices if isinstance(c, str) and _fold(c) == _fold(arg_string)]
            if len(same) == 1:
                arg_string = same[0]
        return super()._get_value(action, arg_string)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as err:
            names = [c for c in (action.choices or ()) if isinstance(c, str)]
            near = difflib.get_close_matches(_fold(str(value)), [_fold(c) for c in names], n=1, cutoff=0.6)
            if not near:
                raise
            (choice,) = [c for c in names if _fold(c) == near[0]][:1]
            raise argparse.ArgumentError(action, f"{err.message}; did you mean {choice}?") from None


#: The largest seed ``lightning.seed_everything`` (numpy) accepts.
MAX_SEED = 2**32 - 1


def _number(text: str, cast: Callable[[str], float], ok: Callable[[float], bool], expected: str) -> float:
    try:
        value = cast(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """A positive integer.

    Example:
        >>> positive_int("3")
        3
    """
    return int(_number(text, int, lambda v: v >= 1, "a positive integer"))


def threads_setting(text: str) -> int | str:
    """Torch threads per process: a positive integer, or ``auto``.

    Example:
        >>> threads_setting("auto"), threads_setting("2")
        ('auto', 2)
        >>> threads_setting("0")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: expected a positive integer or auto, got '0'
    """
    if text == "auto":
        return text
    return int(_number(text, int, lambda v: v >= 1, "a positive integer or auto"))


def random_seed(text: str) -> int:
    """A random seed: an integer from 0 to 2**32 - 1 (what numpy, and so ``seed_everything``, accepts).

    Example:
        >>> random_seed("0")
        0
        >>> random_seed("-1")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: expected an integer from 0 to 4294967295, got '-1'
    """
    return int(_number(text, int, lambda v: 0 <= v <= MAX_SEED, f"an integer from 0 to {MAX_SEED}"))


def positive_float(text: str) -> float:
    """A positive finite number.

    Example:
        >>> positive_float("1e-3")
        0.001
    """
    return _number(text, float, lambda v: v > 0 and math.isfinite(v), "a positive finite number")


def fraction_above_zero(text: str) -> float:
    """A number in ``(0, 1]`` (a share of the data to keep).

    Example:
        >>> fraction_above_zero("0.25")
        0.25
    """
    return _number(text, float, lambda v: 0 < v <= 1, "a number in (0, 1]")


def fraction_below_one(text: str) -> float:
    """A number in ``[0, 1)`` (a share of the labels to randomize).

    Example:
        >>> fraction_below_one("0")
        0.0
    """
    return _number(text, float, lambda v: 0 <= v < 1, "a number in [0, 1)")


def nonempty_path(text: str) -> Path:
    """A file or folder path, not empty (``Path("")`` is the working folder, which nobody means to pass).

    Example:
        >>> nonempty_path("tau_runs/find").name
        'find'
        >>> nonempty_path("")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: expected a path, got '' (an empty path would mean the working folder)
    """
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected a path, got {text!r} (an empty path would mean the working folder)")
    return Path(text)


def output_dir_problem(path: Path, flag: str) -> str | None:
    """Create the output directory ``path`` and check that a file can be written in it; ``None`` when it can,
    else a one-line message naming ``flag`` and ``path`` and what to do.

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> output_dir_problem(root / "runs", "--out") is None
        True
        >>> (root / "notes.txt").write_text("")
        0
        >>> print(output_dir_problem(root / "notes.txt", "--out"))  # doctest: +ELLIPSIS
        --out .../notes.txt is an existing file, not a directory: give a directory (it is created if missing).
    """
    if path.exists() and not path.is_dir():
        return f"{flag} {path} is an existing file, not a directory: give a directory (it is created if missing)."
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as err:
        why = err.strerror or type(err).__name__
        return f"{flag} {path} cannot be written ({why}): give a directory you can write to."
    return None
