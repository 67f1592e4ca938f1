"""Argument checks written once: every public entry point validates its arguments with these, each raising one
``TimescaleError`` (a ``ValueError``) that names the owner, the argument and its value, and says what to pass instead (pure: the
standard library only).

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any, TypeVar

from lightning_tau.errors import TimescaleError

__all__ = [
    "batch_exponent",
    "choice",
    "finite_number",
    "flag",
    "in_range",
    "integer",
    "invalid",
    "non_empty",
    "positive_int",
    "positive_number",
    "size_exponent",
]

#: The largest ``|size_exponent|`` (and ``|batch_exponent|``) taken (``TimescaleCallback``, ``apply_timescale``,
#: ``lightning-tau transfer``).
#: The published dataset-size rules lie in [-1, 0] (Wang & Aitchison 0, the 1/2 rules -1/2, a fixed weight decay -1);
#: an exponent of 2 already moves ``tau_epoch`` 16-fold over a 4-fold ``N``. Beyond it the value is almost surely a
#: mistake (a width exponent, a log-base slip, a noise-driven fit over a narrow range), and an extrapolation by it
#: would set a weight decay no measurement supports.
SIZE_EXPONENT_LIMIT = 2.0

T = TypeVar("T")


def invalid(owner: str, name: str, value: Any, hint: str, *, shown: str | None = None) -> TimescaleError:
    """The error for a bad argument, in the package's one form.

    ``shown`` replaces ``repr(value)`` where the message should show more than the value (the whole list one bad
    entry came from) or less (a tensor by its shape); every check below takes it too.

    Example:
        >>> invalid("TimescaleMonitor", "prefix", "/tau", "use a name without a leading '/'.")
        TimescaleError("`TimescaleMonitor(prefix='/tau')` is not valid: use a name without a leading '/'.")
    """
    return TimescaleError(f"`{owner}({name}={repr(value) if shown is None else shown})` is not valid: {hint}")


def _as_float(value: Any) -> float | None:
    """``value`` as a float, or ``None`` for a bool, a string or anything ``float()`` refuses."""
    if isinstance(value, (bool, str, bytes)):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def flag(owner: str, name: str, value: Any, hint: str = "use True or False.") -> bool:
    """``True`` or ``False`` (not ``1``, not ``"yes"``).

    Example:
        >>> flag("TimescaleCallback", "verbose", False)
        False
        >>> flag("TimescaleCallback", "verbose", 1)
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleCallback(verbose=1)` is not valid: use True or False.
    """
    if not isinstance(value, bool):
        raise invalid(owner, name, value, hint)
    return value


def integer(
    owner: str,
    name: str,
    value: Any,
    hint: str = "use an integer.",
    *,
    minimum: int | None = None,
    shown: str | None = None,
) -> int:
    """An integer (a numpy integer counts; a bool or ``3.0`` does not), at least ``minimum`` when given.

    Example:
        >>> integer("TimescaleFinder", "subset_seed", -3)
        -3
        >>> integer("TimescaleFinder", "window", 0, "use an integer >= 1.", minimum=1)
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleFinder(window=0)` is not valid: use an integer >= 1.
    """
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if not ok or (minimum is not None and value < minimum):
        raise invalid(owner, name, value, hint, shown=shown)
    return int(value)


def positive_int(
    owner: str, name: str, value: Any, hint: str = "use a positive integer.", *, shown: str | None = None
) -> int:
    """An integer >= 1.

    Example:
        >>> positive_int("TimescaleFinder", "workers", 4)
        4
        >>> positive_int("TimescaleFinder", "workers", True)
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleFinder(workers=True)` is not valid: use a positive integer.
    """
    return integer(owner, name, value, hint, minimum=1, shown=shown)


def finite_number(owner: str, name: str, value: Any, hint: str = "use a finite number.") -> float:
    """A finite real number as a float (anything ``float()`` takes but a bool or a string).

    Example:
        >>> finite_number("TimescaleCallback", "power_law_exponent", -1)
        -1.0
        >>> finite_number("TimescaleCallback", "power_law_exponent", float("nan"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleCallback(power_law_exponent=nan)` is not valid: use a finite ...
    """
    number = _as_float(value)
    if number is None or not math.isfinite(number):
        raise invalid(owner, name, value, hint)
    return number


def positive_number(
    owner: str, name: str, value: Any, hint: str = "use a positive finite number.", *, shown: str | None = None
) -> float:
    """A positive finite real number as a float.

    Example:
        >>> positive_number("TimescaleCallback", "tau_epoch", 5)
        5.0
        >>> positive_number("TimescaleCallback", "tau_epoch", float("inf"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleCallback(tau_epoch=inf)` is not valid: use a positive ...
    """
    number = _as_float(value)
    if number is None or not (math.isfinite(number) and number > 0):
        raise invalid(owner, name, value, hint, shown=shown)
    return number


def in_range(
    owner: str,
    name: str,
    value: Any,
    hint: str,
    *,
    low: float,
    high: float,
    low_closed: bool = False,
    high_closed: bool = False,
    shown: str | None = None,
) -> float:
    """A real number between ``low`` and ``high``, each end open unless said closed (nan never passes).

    Example:
        >>> in_range("TimescaleFinder", "fraction", 1, "use a number in (0, 1].", low=0, high=1, high_closed=True)
        1.0
        >>> in_range("TimescaleFinder", "level", 1, "use a number in (0, 1).", low=0, high=1)
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleFinder(level=1)` is not valid: use a number in (0, 1).
    """
    number = _as_float(value)
    ok = (
        number is not None
        and (low <= number if low_closed else low < number)
        and (number <= high if high_closed else number < high)
    )
    if not ok:
        raise invalid(owner, name, value, hint, shown=shown)
    return number  # type: ignore[return-value]


def non_empty(owner: str, name: str, value: Any, hint: str = "use a non-empty string.") -> str:
    """A string with something in it besides white space.

    Example:
        >>> non_empty("TimescaleFinder", "monitor", "val_loss")
        'val_loss'
        >>> non_empty("TimescaleFinder", "monitor", " ", "use a metric's name.")
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleFinder(monitor=' ')` is not valid: use a metric's name.
    """
    if not isinstance(value, str) or not value.strip():
        raise invalid(owner, name, value, hint)
    return value


def choice(owner: str, name: str, value: Any, options: Sequence[T], hint: str | None = None) -> T:
    """One of ``options``; else "`Owner(name=value)` is not supported. Use 'a' or 'b'." (or ``hint`` after it).

    Example:
        >>> choice("TimescaleCallback", "mode", "per_step", ("constant", "per_step"))
        'per_step'
        >>> choice("TimescaleFinder", "mode", "lowest", ("min", "max"))
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleFinder(mode='lowest')` is not supported. Use 'min' or 'max'.
    """
    try:
        known = value in options
    except (TypeError, ValueError):  # an unhashable value asked of a set, an array's ambiguous truth
        known = False
    if not known:
        names = [repr(o) for o in options]
        usage = hint or "Use " + (", ".join(names[:-1]) + " or " if len(names) > 1 else "") + f"{names[-1]}."
        raise TimescaleError(f"`{owner}({name}={value!r})` is not supported. {usage}")
    return value


def size_exponent(owner: str, value: Any) -> float:
    """A dataset-size exponent ``e`` of ``tau_epoch ∝ N ** e``: a finite number in ``[-2, 2]``
    (:data:`SIZE_EXPONENT_LIMIT`).

    Example:
        >>> size_exponent("TimescaleCallback", -0.5)
        -0.5
        >>> size_exponent("transfer_groups", -3)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `transfer_groups(size_exponent=-3)` is not valid: use a finite ...
    """
    return in_range(
        owner,
        "size_exponent",
        value,
        f"use a finite number in [-{SIZE_EXPONENT_LIMIT:g}, {SIZE_EXPONENT_LIMIT:g}], e of tau_epoch ∝ N ** e (0"
        " Wang & Aitchison, -0.5 the 1/2 rules, -1 a fixed weight decay); beyond ±2 a 4-fold N moves tau_epoch"
        " over 16-fold, which no published rule does.",
        low=-SIZE_EXPONENT_LIMIT,
        high=SIZE_EXPONENT_LIMIT,
        low_closed=True,
        high_closed=True,
    )


def batch_exponent(owner: str, value: Any) -> float:
    """A batch-size exponent ``e`` of ``tau_epoch ∝ B ** e``: a finite number in ``[-2, 2]``
    (:data:`SIZE_EXPONENT_LIMIT`, the same bound as the dataset-size exponent's).

    Example:
        >>> batch_exponent("TimescaleCallback", 1)
        1.0
        >>> batch_exponent("TimescaleCallback", float("nan"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleCallback(batch_exponent=nan)` is not valid: use a finite ...
    """
    return in_range(
        owner,
        "batch_exponent",
        value,
        f"use a finite number in [-{SIZE_EXPONENT_LIMIT:g}, {SIZE_EXPONENT_LIMIT:g}], e of tau_epoch ∝ B ** e (0"
        " holds tau_epoch at every B: lambda ∝ B at a fixed lr; 1 a fixed lambda at a fixed lr; with lr ∝ B^m and"
        " lambda ∝ B^k, e = 1 - k - m); beyond ±2 a 4-fold B moves tau_epoch over 16-fold, which no published rule"
        " does.",
        low=-SIZE_EXPONENT_LIMIT,
        high=SIZE_EXPONENT_LIMIT,
        low_closed=True,
        high_closed=True,
    )
