"""The argument checks written once (`lightning_tau._checks`): what each accepts, what it refuses, and its message."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from lightning_tau import _checks
from lightning_tau.errors import TimescaleError


def _message(check, *args, **kwargs) -> str:
    with pytest.raises(ValueError) as info:
        check(*args, **kwargs)
    return str(info.value)


@pytest.mark.parametrize("value", [True, False, 1.0, 2.5, "3", None, [1]])
def test_integer_refuses_bools_floats_and_other_types(value: object) -> None:
    assert _message(_checks.integer, "Owner", "n", value) == f"`Owner(n={value!r})` is not valid: use an integer."


def test_integer_takes_numpy_integers_and_returns_plain_int() -> None:
    out = _checks.integer("Owner", "n", np.int64(-3))
    assert out == -3 and type(out) is int
    assert _checks.positive_int("Owner", "n", np.uint8(7)) == 7


@pytest.mark.parametrize("value", [0, -1, True, 1.0, math.inf])
def test_positive_int_refuses_zero_negatives_bools_and_floats(value: object) -> None:
    message = _message(_checks.positive_int, "Owner", "n", value, "use a count >= 1.")
    assert message == f"`Owner(n={value!r})` is not valid: use a count >= 1."


@pytest.mark.parametrize("value", [0, -0.5, math.nan, math.inf, -math.inf, True, "1", b"1", None, object()])
def test_positive_number_refuses_zero_negatives_nan_inf_bools_and_strings(value: object) -> None:
    message = _message(_checks.positive_number, "Owner", "x", value)
    assert message == f"`Owner(x={value!r})` is not valid: use a positive finite number."


def test_positive_number_returns_float_from_ints_and_numpy_numbers() -> None:
    assert [_checks.positive_number("Owner", "x", v) for v in (3, np.float32(0.5), 1e-300)] == [3.0, 0.5, 1e-300]
    assert type(_checks.positive_number("Owner", "x", 3)) is float


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, True, "-0.5", None])
def test_finite_number_refuses_nan_inf_bools_and_strings(value: object) -> None:
    assert _message(_checks.finite_number, "Owner", "a", value, "use a finite number (default -0.5).") == (
        f"`Owner(a={value!r})` is not valid: use a finite number (default -0.5)."
    )
    assert _checks.finite_number("Owner", "a", -2) == -2.0 and _checks.finite_number("Owner", "a", 0) == 0.0


def test_in_range_keeps_open_and_closed_ends_apart() -> None:
    half_open = dict(low=0, high=1, high_closed=True)
    assert _checks.in_range("Owner", "f", 1, "hint", **half_open) == 1.0
    for value in (0, 0.0, -0.1, 1.0001, math.nan, math.inf, True, "0.5"):
        with pytest.raises(ValueError, match=re.escape(f"`Owner(f={value!r})` is not valid: hint")):
            _checks.in_range("Owner", "f", value, "hint", **half_open)
    with pytest.raises(ValueError, match="is not valid"):
        _checks.in_range("Owner", "level", 1, "hint", low=0, high=1)
    assert _checks.in_range("Owner", "x", 0, "hint", low=0, high=1, low_closed=True) == 0.0


@pytest.mark.parametrize("value", [1, 0, None, "True", np.bool_(True)])
def test_flag_takes_only_true_and_false(value: object) -> None:
    assert (
        _message(_checks.flag, "Owner", "verbose", value)
        == f"`Owner(verbose={value!r})` is not valid: use True or False."
    )
    assert _checks.flag("Owner", "verbose", False) is False


@pytest.mark.parametrize("value", ["", "   ", None, 3, b"val_loss"])
def test_non_empty_refuses_blank_strings_and_other_types(value: object) -> None:
    message = _message(_checks.non_empty, "Owner", "monitor", value, "use a metric's name.")
    assert message == f"`Owner(monitor={value!r})` is not valid: use a metric's name."
    assert _checks.non_empty("Owner", "monitor", " val_loss") == " val_loss"


def test_choice_names_every_option_and_survives_unhashable_and_array_values() -> None:
    assert _checks.choice("Owner", "mode", "max", ("min", "max")) == "max"
    assert _message(_checks.choice, "Owner", "mode", "lowest", ("min", "max")) == (
        "`Owner(mode='lowest')` is not supported. Use 'min' or 'max'."
    )
    assert _message(_checks.choice, "Owner", "axis", "depth", ("a", "b", "c")) == (
        "`Owner(axis='depth')` is not supported. Use 'a', 'b' or 'c'."
    )
    assert _message(_checks.choice, "Owner", "axis", "depth", ("a",)).endswith("is not supported. Use 'a'.")
    assert _message(_checks.choice, "Owner", "axis", "x", ("a", "b"), "Use 'a' (one) or 'b' (two).").endswith(
        "is not supported. Use 'a' (one) or 'b' (two)."
    )
    assert "is not supported" in _message(_checks.choice, "Owner", "mode", ["min"], {"min", "max"})
    assert "is not supported" in _message(_checks.choice, "Owner", "mode", np.array([1, 2]), ("min", "max"))


def test_shown_replaces_value_in_message() -> None:
    message = _message(_checks.positive_number, "Owner", "xs", -1, "-1 is not positive.", shown="[1, -1]")
    assert message == "`Owner(xs=[1, -1])` is not valid: -1 is not positive."
    message = _message(_checks.positive_int, "Owner", "kwargs", 0, shown="{'max_epochs': 0}")
    assert message == "`Owner(kwargs={'max_epochs': 0})` is not valid: use a positive integer."
    message = _message(_checks.in_range, "Owner", "fs", 2, "2 is over 1.", low=0, high=1, shown="[0.5, 2]")
    assert message == "`Owner(fs=[0.5, 2])` is not valid: 2 is over 1."


def test_string_power_law_exponent_value_error_naming_it() -> None:
    """It was a bare TypeError from `math.isfinite('x')` before the callback used `finite_number`."""
    from lightning_tau import TimescaleCallback

    with pytest.raises(ValueError, match=re.escape("`TimescaleCallback(power_law_exponent='x')` is not valid")):
        TimescaleCallback(token_budget=1e6, power_law_exponent="x")


@pytest.mark.parametrize("value", [2.0001, -2.0001, math.nan, math.inf, True, "1", None])
def test_batch_exponent_refuses_outside_minus_two_to_two_and_non_numbers(value: object) -> None:
    shown = re.escape(repr(value))
    with pytest.raises(TimescaleError, match=rf"^`TimescaleCallback\(batch_exponent={shown}\)` is not valid: use a"):
        _checks.batch_exponent("TimescaleCallback", value)


def test_batch_exponent_takes_both_ends_and_numpy_numbers() -> None:
    assert _checks.batch_exponent("apply_timescale", -2) == -2.0 and _checks.batch_exponent("x", 2) == 2.0
    assert _checks.batch_exponent("x", np.float32(0.5)) == 0.5
