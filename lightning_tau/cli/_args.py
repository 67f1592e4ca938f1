"""Argument types shared by the ``lightning-tau`` subcommands: each turns bad text into a message naming it."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

__all__ = ["fraction_above_zero", "fraction_below_one", "positive_float", "positive_int"]


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
