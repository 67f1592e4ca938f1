"""``lightning_tau.tuner.analysis.tdist``: Student's t tail and quantiles in closed form, against textbook values and the
closed forms at 1 and 2 degrees of freedom; bad input is a one-line error naming the argument."""

from __future__ import annotations

import math
import re

import pytest

from lightning_tau.tuner.analysis.tdist import paired_half_width, t_quantile, t_sf


@pytest.mark.parametrize(
    ("p", "df", "expected"),
    [  # textbook values
        (0.975, 1, 12.706204736174698),
        (0.975, 2, 4.302652729911275),
        (0.975, 3, 3.182446305284263),
        (0.975, 4, 2.7764451051977934),
        (0.975, 10, 2.2281388519649385),
        (0.95, 29, 1.6991270265334972),
        (0.6, 5, 0.26718086570308856),
        (0.025, 7, -2.3646242515927844),
    ],
)
def test_t_quantile_matches_tables(p, df, expected):
    assert t_quantile(p, df) == pytest.approx(expected, rel=1e-10)
    assert t_sf(expected, df) == pytest.approx(1 - p, rel=1e-9)


def test_t_sf_closed_forms():
    for t in (-3.0, -0.4, 0.0, 0.7, 2.5, 40.0):
        assert t_sf(t, 1) == pytest.approx(0.5 - math.atan(t) / math.pi, abs=1e-14)
        assert t_sf(t, 2) == pytest.approx(0.5 * (1 - t / math.sqrt(t * t + 2)), abs=1e-14)
    assert t_sf(math.inf, 4) == 0.0 and t_sf(-math.inf, 4) == 1.0
    with pytest.raises(ValueError, match=r"`t_quantile\(p=1.0\)` is not valid"):
        t_quantile(1.0, 3)
    with pytest.raises(ValueError, match=r"`t_sf\(df=0\)` is not valid: use a positive integer"):
        t_sf(1.0, 0)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: t_quantile(0.5, 1.5), "`t_quantile(df=1.5)` is not valid: use a positive integer."),
        (lambda: t_quantile(0.0, 3), "`t_quantile(p=0.0)` is not valid: use a probability strictly between 0 and 1."),
        (lambda: t_sf(1.0, True), "`t_sf(df=True)` is not valid: use a positive integer."),
    ],
)
def test_bad_input_one_line_naming_argument(call, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        call()


def test_paired_half_width_is_t_times_sd_over_root_n():
    # three differences, sd 0.1: t_{0.95, 2} = 2.919986 (level 0.9) times 0.1 / sqrt(3)
    assert paired_half_width([0.1, 0.2, 0.3], 0.9) == pytest.approx(2.919986 * 0.1 / math.sqrt(3), rel=1e-6)
    assert paired_half_width([0.2, 0.2], 0.95) == 0.0
    with pytest.raises(ValueError, match="`paired_half_width` needs at least 2 differences, got 1"):
        paired_half_width([0.1], 0.9)
