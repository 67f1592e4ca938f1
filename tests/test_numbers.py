"""``lightning_tau._numbers``: one spelling per number, to the precision it has."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import pytest

from lightning_tau._numbers import EXPONENT_ZERO, cost, exponent, interval, kwargs_text, setting, signed


@pytest.mark.parametrize(
    ("value", "sign", "text"),
    [
        (-0.39123, True, "-0.39"),
        (0.8449, True, "+0.84"),
        (-0.000760685, True, "0"),
        (EXPONENT_ZERO * 0.999, True, "0"),
        (-EXPONENT_ZERO * 0.999, False, "0"),
        (EXPONENT_ZERO, True, "+0.01"),  # at the threshold: shown (rounds half to even in the format)
        (-0.5, False, "-0.5"),
        (0.908, False, "0.91"),
        (1.0, False, "1"),
        (-1.0, True, "-1.00"),
        (math.inf, True, "inf"),
    ],
)
def test_exponent_two_decimals_and_zero_near_zero(value: float, sign: bool, text: str) -> None:
    assert exponent(value, sign=sign) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [(5.137462, "5.14"), (2048, "2048"), (2048.0, "2048"), (1.2345e-4, "0.000123"), (123456.7, "123000"),
     (0.1 + 0.2, "0.3"), (True, "True"), ("min", "'min'"), (None, "None"), (math.nan, "nan"),
     # 1e15 is where a whole float stops printing as an integer; a Path or a Fraction as str writes it, not repr
     (1e15, "1e+15"), (1e15 - 1, "999999999999999"), (Path("runs/a"), "runs/a"), (Fraction(1, 2), "1/2")],
)
def test_setting_three_significant_digits_without_float_noise(value: object, text: str) -> None:
    assert setting(value) == text


def test_kwargs_text_rounds_exponents_and_settings_alike() -> None:
    shown = kwargs_text({"tau_epoch": 5.13842, "size_exponent": -0.000760685, "reference_dataset_size": 1347})
    assert shown == "tau_epoch=5.14, size_exponent=0, reference_dataset_size=1347"
    assert kwargs_text({"width_exponent": 0.90812, "decay_vectors": True}) == "width_exponent=0.91, decay_vectors=True"
    # only a number under an *_exponent key is an exponent: a small setting keeps its digits, a string its quotes
    assert kwargs_text({"weight_decay": 0.001, "mode": "min"}) == "weight_decay=0.001, mode='min'"
    assert kwargs_text({"size_exponent": "auto", "width_exponent": True}) == "size_exponent='auto', width_exponent=True"


def test_interval_and_signed() -> None:
    assert interval(-0.4213, -0.3567) == "[-0.42, -0.36]"
    assert interval(-0.003, 0.0201) == "[0, +0.02]"
    assert interval(0.0081, 0.0166, as_exponent=False, digits=3) == "[+0.008, +0.017]"
    assert interval(0.0081, 0.0166, as_exponent=False) == "[+0.01, +0.02]"  # two decimals unless told
    assert signed(-1e-17) == "+0.00" and signed(-0.004, 3) == "-0.004"


def test_cost_to_interval_precision() -> None:
    assert cost(0.01234, (0.0081, 0.0166)) == "+0.012 [+0.008, +0.017]"
    assert cost(0.0013, (0.0010, 0.0017)) == "+0.0013 [+0.0010, +0.0017]"
    assert cost(0.01234, None) == "+0.012"
    assert cost(None, None, "a run diverged") == "not measured: a run diverged"
    assert cost(None, None, None) == "not measured"


def test_cost_digits_from_mean_without_interval() -> None:
    # two significant digits of the mean, whatever its size; a zero mean gets three decimals
    assert cost(0.5, None) == "+0.50" and cost(0.0013, None) == "+0.0013" and cost(0.0, None) == "+0.000"
    assert cost(123.4, None) == "+123"  # no decimals, not fewer than none
    assert cost(1.234e-8, None) == "+0.000000"  # six decimals at most


def test_cost_digits_from_interval_half_width() -> None:
    # half-width 0.0013: three decimals (a third of the width, 0.00087, would give four)
    assert cost(0.01234, (0.0110, 0.0136)) == "+0.012 [+0.011, +0.014]"
    # an interval far finer than the mean: never more than the mean's two digits + 2
    assert cost(0.5, (0.49999, 0.50001)) == "+0.5000 [+0.5000, +0.5000]"
    # a zero-width interval has no precision of its own: the mean's two digits
    assert cost(0.01, (0.01, 0.01)) == "+0.010 [+0.010, +0.010]"
