"""lightning_tau.tuner.analysis.rules: the equivalence decision of a published rule at a tolerance (the rules of each
axis: tests/test_axes.py)."""

from __future__ import annotations

import math

import pytest

from lightning_tau.tuner.analysis.rules import DEFAULT_TOLERANCE, all_decided, decide, half_width, rules_for
from lightning_tau.tuner.axes import SIZE_RULES


def test_half_width_tolerance_factor_over_scale_range():
    # x1.25 over an 8x range, whatever the points between and their order
    assert half_width(1.25, [100, 200, 800]) == pytest.approx(math.log(1.25) / math.log(8))
    assert half_width(1.25, [800, 100]) == pytest.approx(math.log(1.25) / math.log(8))
    # a wider range makes the band narrower in exponent units (the same factor over more octaves)
    assert half_width(2.0, [1, 16]) == pytest.approx(0.25)
    assert DEFAULT_TOLERANCE == 1.25


def test_half_width_takes_tolerance_as_checked_at_entry():
    # checked once where the user gives it (TimescaleFinder, AxisResult.build: tests/tuner/analysis/test_axis_result.py), not here
    assert half_width(1.0, [1, 8]) == 0.0
    assert half_width(0.5, [1, 8]) == pytest.approx(-1 / 3)


@pytest.mark.parametrize("scales", [[4], [4, 4], [0, 4], [-1, 4], []])
def test_half_width_refuses_scales_without_range(scales):
    with pytest.raises(ValueError, match=r"`half_width\(scales=.*\)` is not valid: use at least 2 distinct positive"):
        half_width(1.25, scales)


@pytest.mark.parametrize(
    ("ci", "expected"),
    [
        ((-0.1, 0.1), "holds"),  # the band's own edges count as inside
        ((-0.1, 0.1000001), "undetermined"),  # one end just past the band: straddles
        ((-0.1000001, 0.1), "undetermined"),
        ((-0.05, 0.05), "holds"),
        ((0.1000001, 0.4), "excluded"),  # wholly above
        ((-0.4, -0.1000001), "excluded"),  # wholly below
        ((-0.4, -0.1), "undetermined"),  # touches the band's lower edge
        ((-0.3, 0.3), "undetermined"),  # holds the whole band and more
        (None, "undetermined"),
    ],
)
def test_decide_equivalence_test_against_band(ci, expected):
    assert decide(ci, 0.0, 0.1) == expected


def test_decide_measures_band_around_rules_own_exponent():
    # the same interval holds the -1/2 rule and excludes the 0 and -1 rules
    ci = (-0.55, -0.45)
    assert [decide(ci, r.exponent, 0.1) for r in SIZE_RULES] == ["excluded", "holds", "excluded"]


def test_all_decided_needs_every_rule_decided():
    assert all_decided((-0.05, 0.05), SIZE_RULES, 0.1)
    assert not all_decided((-0.05, 0.2), SIZE_RULES, 0.1)  # Wang & Aitchison straddled
    assert not all_decided((-0.65, -0.45), SIZE_RULES, 0.1)  # the 1/2 rules straddled
    assert not all_decided(None, SIZE_RULES, 0.1)


def test_rules_for_refuses_unknown_axis():
    with pytest.raises(ValueError, match="rules_for"):
        rules_for("depth")
