"""Argument types shared by the ``lightning-tau`` subcommands: each turns bad text into a message naming it."""

from __future__ import annotations

import argparse
import math
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "fraction_above_zero",
    "fraction_below_one",
    "nonempty_path",
    "output_dir_problem",
    "positive_float",
    "positive_int",
    "random_seed",
]

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
