"""lightning_tau.tuner.analysis.rules: the published rules of each axis and the equivalence decision at a tolerance."""

from __future__ import annotations

import math

import pytest

from lightning_tau.tuner.analysis.rules import (
    DEFAULT_TOLERANCE,
    SIZE_RULES,
    WIDTH_RULES,
    all_decided,
    decide,
    half_width,
    rules_for,
)


def test_rules_of_each_axis_name_published_exponents():
    assert [(r.name, r.exponent) for r in WIDTH_RULES] == [
        ("Wang & Aitchison", 0.0),
        ("Fan et al.", -0.5),
        ("Qiu et al.", -1.0),
    ]
    assert [(r.name, r.exponent) for r in SIZE_RULES] == [
        ("Wang & Aitchison", 0.0),
        ("the 1/2 rules", -0.5),
        ("fixed λ", -1.0),
    ]
    assert rules_for("width") is WIDTH_RULES and rules_for("dataset_size") is SIZE_RULES
    assert "Power Lines" in SIZE_RULES[1].source and "one epoch" in SIZE_RULES[1].source


def test_half_width_tolerance_factor_over_scale_range():
    # x1.25 over an 8x range, whatever the points between and their order
    assert half_width(1.25, [100, 200, 800]) == pytest.approx(math.log(1.25) / math.log(8))
    assert half_width(1.25, [800, 100]) == pytest.approx(math.log(1.25) / math.log(8))
    # a wider range makes the band narrower in exponent units (the same factor over more octaves)
    assert half_width(2.0, [1, 16]) == pytest.approx(0.25)
    assert DEFAULT_TOLERANCE == 1.25


@pytest.mark.parametrize("tolerance", [1, 0.5, -2, float("nan"), "x", None])
def test_half_width_refuses_tolerance_not_above_one(tolerance):
    with pytest.raises(ValueError, match=r"`half_width\(tolerance=.*\)` is not valid: use a factor above 1"):
        half_width(tolerance, [1, 8])


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
