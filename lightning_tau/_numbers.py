"""Numbers as people read them, to the precision they have: one formatter for exponents, costs, intervals and the
settings a user is shown (the ground floor: the standard library only).

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["EXPONENT_ZERO", "SAME_POINT", "cost", "exponent", "interval", "kwargs_text", "setting", "signed"]

#: A cost that is zero because the same grid point is best at both ends of the rule: no cost within the grid's
#: resolution, not a measured zero (the rule's ``x`` and the best ``x`` are the same run on every seed).
SAME_POINT: str = "0: the same grid point is best at both ends (no cost within the grid's resolution)"

#: An exponent closer to zero than this prints as ``0`` (two decimals would show ``+0.00`` or ``-0.00``).
EXPONENT_ZERO: float = 0.005


def signed(value: float, digits: int = 2) -> str:
    """``value`` with its sign and ``digits`` decimals, never ``-0.00``.

    Example:
        >>> signed(-1.44e-16), signed(0.456), signed(-0.004, 3)
        ('+0.00', '+0.46', '-0.004')
    """
    text = f"{value:+.{digits}f}"
    return "+" + text[1:] if float(text) == 0 else text


def exponent(value: float, *, sign: bool = True) -> str:
    """An exponent to two decimals; within :data:`EXPONENT_ZERO` of zero, ``0``; ``sign=False`` drops a ``+``
    (a setting such as ``size_exponent=-0.5``). Fractions a rule names (``-1/2``) are the rule's own text, not this.

    Example:
        >>> exponent(-0.39123), exponent(0.84), exponent(-0.000760685), exponent(-0.5, sign=False)
        ('-0.39', '+0.84', '0', '-0.5')
        >>> exponent(1.0, sign=False), exponent(0.004999), exponent(float("nan"))
        ('1', '0', 'nan')
    """
    if not math.isfinite(value):
        return str(value)
    if abs(value) < EXPONENT_ZERO:
        return "0"
    if sign:
        return signed(value, 2)
    return f"{round(value, 2) + 0.0:g}"


def setting(value: Any) -> str:
    """A setting shown to a user: a float to three significant digits without float noise (``5.14``, ``2048``,
    ``0.000123``), a whole float without a point, anything else as Python writes it.

    Example:
        >>> setting(5.137462), setting(2048), setting(2048.0), setting(1.2345e-4), setting(True), setting("min")
        ('5.14', '2048', '2048', '0.000123', 'True', "'min'")
    """
    if isinstance(value, bool) or not isinstance(value, float):
        return repr(value) if isinstance(value, str) else str(value)
    if not math.isfinite(value):
        return str(value)
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{float(f'{value:.3g}'):g}"


def kwargs_text(kwargs: Mapping[str, Any]) -> str:
    """Keyword arguments as a user reads them: exponents (``*_exponent``) by :func:`exponent` without a ``+``, other
    numbers by :func:`setting`.

    Example:
        >>> kwargs_text({"tau_epoch": 5.13842, "size_exponent": -0.000760685, "reference_dataset_size": 1347})
        'tau_epoch=5.14, size_exponent=0, reference_dataset_size=1347'
        >>> kwargs_text({"tau_epoch": 8.0, "width_exponent": 0.90812})
        'tau_epoch=8, width_exponent=0.91'
    """
    parts = []
    for key, value in kwargs.items():
        if key.endswith("_exponent") and isinstance(value, (int, float)) and not isinstance(value, bool):
            parts.append(f"{key}={exponent(float(value), sign=False)}")
        else:
            parts.append(f"{key}={setting(value)}")
    return ", ".join(parts)


def interval(low: float, high: float, *, as_exponent: bool = True, digits: int = 2) -> str:
    """An interval ``[low, high]``: exponents by :func:`exponent`, else signed to ``digits`` decimals.

    Example:
        >>> interval(-0.4213, -0.3567), interval(-0.003, 0.02), interval(0.0081, 0.0166, as_exponent=False, digits=3)
        ('[-0.42, -0.36]', '[0, +0.02]', '[+0.008, +0.017]')
    """
    if as_exponent:
        return f"[{exponent(low)}, {exponent(high)}]"
    return f"[{signed(low, digits)}, {signed(high, digits)}]"


def cost(
    mean: float | None, ci: tuple[float, float] | None, reason: str | None = None, *, same_point: bool = False
) -> str:
    """A loss cost rounded for people: to the interval's precision (its half-width's first digit), or to two
    significant digits without an interval; six decimals at most. ``mean`` ``None``: the reason it was not measured.
    ``same_point``: the rule lands on the grid point that is best, so the cost is zero by construction (every seed
    compares a run with itself), said in words (:data:`SAME_POINT`) rather than as a zero-width interval.

    Example:
        >>> cost(0.01234, (0.0081, 0.0166)), cost(0.01234, None), cost(1e-17, (-0.0021, 0.0021))
        ('+0.012 [+0.008, +0.017]', '+0.012', '+0.000 [-0.002, +0.002]')
        >>> cost(None, None, "the rule puts tau_epoch at 512, beyond the grid (up to 128): not measured there")
        'not measured: the rule puts tau_epoch at 512, beyond the grid (up to 128)'
        >>> cost(0.0, (0.0, 0.0), same_point=True)
        "0: the same grid point is best at both ends (no cost within the grid's resolution)"
    """
    if same_point and mean is not None:
        return SAME_POINT
    if mean is None:
        why = (reason or "not measured").removesuffix(": not measured there")
        return why if why.startswith("not measured") else f"not measured: {why}"
    own = 1 - math.floor(math.log10(abs(mean))) if mean != 0 else 3  # two significant digits of the mean
    if ci is not None and ci[1] > ci[0]:  # the interval's precision, never finer than the mean's two digits + 2
        digits = min(-math.floor(math.log10((ci[1] - ci[0]) / 2)), own + 2)
    else:
        digits = own
    digits = min(6, max(0, digits))
    text = signed(mean, digits)
    return text if ci is None else f"{text} [{signed(ci[0], digits)}, {signed(ci[1], digits)}]"
