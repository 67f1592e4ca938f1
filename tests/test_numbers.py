"""``lightning_tau._numbers``: one spelling per number, to the precision it has."""

from __future__ import annotations

import math

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
     (0.1 + 0.2, "0.3"), (True, "True"), ("min", "'min'"), (None, "None"), (math.nan, "nan")],
)
def test_setting_three_significant_digits_without_float_noise(value: object, text: str) -> None:
    assert setting(value) == text


def test_kwargs_text_rounds_exponents_and_settings_alike() -> None:
    shown = kwargs_text({"tau_epoch": 5.13842, "size_exponent": -0.000760685, "reference_dataset_size": 1347})
    assert shown == "tau_epoch=5.14, size_exponent=0, reference_dataset_size=1347"
    assert kwargs_text({"width_exponent": 0.90812, "decay_vectors": True}) == "width_exponent=0.91, decay_vectors=True"


def test_interval_and_signed() -> None:
    assert interval(-0.4213, -0.3567) == "[-0.42, -0.36]"
    assert interval(-0.003, 0.0201) == "[0, +0.02]"
    assert interval(0.0081, 0.0166, as_exponent=False, digits=3) == "[+0.008, +0.017]"
    assert signed(-1e-17) == "+0.00" and signed(-0.004, 3) == "-0.004"


def test_cost_to_the_interval_precision() -> None:
    assert cost(0.01234, (0.0081, 0.0166)) == "+0.012 [+0.008, +0.017]"
    assert cost(0.0013, (0.0010, 0.0017)) == "+0.0013 [+0.0010, +0.0017]"
    assert cost(0.01234, None) == "+0.012"
    assert cost(None, None, "a run diverged") == "not measured: a run diverged"
    assert cost(None, None, None) == "not measured"
