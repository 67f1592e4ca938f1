"""lightning_tau.tuner.axes: each finder axis one object (the registry, the spellings, each axis's published rules,
its callback settings and what its scale means), and the one-line error for a name that is no axis."""

from __future__ import annotations

import pickle

import pytest

from lightning_tau.tuner.analysis.rules import rules_for
from lightning_tau.tuner.axes import (
    AXES,
    BATCH_SIZE,
    DATASET_SIZE,
    FRACTION,
    SIZE_RULES,
    WIDTH,
    WIDTH_RULES,
    Axis,
    axis_spellings,
    batch_rules,
    resolve_axis,
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


def test_registry_lists_every_axis_by_name_in_order():
    assert list(AXES) == ["fraction", "width", "dataset_size", "batch_size"]
    assert [AXES[name] for name in AXES] == [FRACTION, WIDTH, DATASET_SIZE, BATCH_SIZE]
    assert all(isinstance(axis, Axis) and axis.spellings[0] == name for name, axis in AXES.items())


def test_every_spelling_resolves_to_axis_and_axis_to_itself():
    assert axis_spellings() == ("fraction", "width", "dataset_size", "batch_size", "dataset-size", "batch-size")
    assert resolve_axis("batch-size") is resolve_axis("batch_size") is BATCH_SIZE
    assert resolve_axis("dataset-size") is resolve_axis("dataset_size") is DATASET_SIZE
    assert resolve_axis("width") is WIDTH and resolve_axis("fraction") is FRACTION
    assert resolve_axis(WIDTH) is WIDTH


@pytest.mark.parametrize("bad", ["depth", "Width", "", None, 3])
def test_bad_axis_one_line_naming_argument_and_every_spelling(bad):
    with pytest.raises(ValueError) as info:
        resolve_axis(bad)
    assert str(info.value) == (
        f"`TimescaleFinder(axis={bad!r})` is not supported. Use 'fraction' (one sweep on a subset), 'width' (with"
        " `widths`), 'dataset_size' ('dataset-size' too; with `fractions`) or 'batch_size' ('batch-size' too; with"
        " `batch_sizes`)."
    )
    with pytest.raises(ValueError, match=r"^`rules_for\(axis='depth'\)` is not supported"):
        rules_for("depth")


def test_axis_one_frozen_instance_after_pickle():
    assert type(WIDTH)() is WIDTH and pickle.loads(pickle.dumps(DATASET_SIZE)) is DATASET_SIZE
    with pytest.raises(AttributeError):
        WIDTH.name = "depth"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        WIDTH.extra = 1  # type: ignore[attr-defined]
    assert str(WIDTH) == "width" and repr(DATASET_SIZE) == "<axis 'dataset_size'>"


def test_fraction_axis_scales_nothing_and_decides_no_rule():
    assert not FRACTION.scaling and FRACTION.rules == () and FRACTION.values_argument is None
    assert FRACTION.point_noun is None and not FRACTION.subsets_per_point
    with pytest.raises(NotImplementedError, match="'fraction' axis fits no exponent"):
        FRACTION.callback_kwargs(4.0, 0.0, 100)


def test_width_axis_passes_width_to_model_and_reads_lambda_base():
    assert WIDTH.scaling and WIDTH.model_per_point and not WIDTH.subsets_per_point
    assert (WIDTH.values_argument, WIDTH.value_key, WIDTH.value_type(64.0)) == ("widths", "width", 64)
    assert (WIDTH.x_name, WIDTH.x_label, WIDTH.scale_symbol) == ("lambda_base", "λ_base", "width")
    assert WIDTH.x_falls_with_tau and WIDTH.sign == -1.0 and WIDTH.anchor(3) == 0  # the smallest width
    assert WIDTH.point_noun == "width" and WIDTH.point_name(64, 64.0) == "width 64"


def test_width_axis_callback_kwargs_width_exponent_one_plus_exponent():
    assert WIDTH.callback_kwargs(4.0, 0.0, 300) == {"tau_epoch": 4.0, "width_exponent": 1.0}
    assert WIDTH.callback_kwargs(2.5, -0.5, 300) == {"tau_epoch": 2.5, "width_exponent": 0.5}
    assert [WIDTH.alpha(r.exponent) for r in WIDTH.rules] == [1.0, 0.5, 0.0]
    assert WIDTH.paper_setting == "width_exponent=1"
    assert WIDTH.follow_text(-0.5) == "result.callback() uses width_exponent = 1/2 (α)"
    assert WIDTH.measured_text(-0.07) == "width_exponent = 0.93 (exponent -0.07)"


def test_dataset_size_axis_trains_each_fraction_and_reads_tau_epoch_in_n():
    assert DATASET_SIZE.scaling and DATASET_SIZE.subsets_per_point and not DATASET_SIZE.model_per_point
    assert (DATASET_SIZE.values_argument, DATASET_SIZE.value_key) == ("fractions", "fraction")
    assert type(DATASET_SIZE.value_type(1)) is float
    assert (DATASET_SIZE.x_name, DATASET_SIZE.scale_symbol) == ("tau_epoch", "N")
    assert not DATASET_SIZE.x_falls_with_tau and DATASET_SIZE.sign == 1.0 and DATASET_SIZE.anchor(3) == 2
    assert DATASET_SIZE.point_noun == "size" and DATASET_SIZE.point_name(0.1, 150.0) == "N=150"
    assert DATASET_SIZE.alpha(-0.5) is None


def test_dataset_size_axis_callback_kwargs_carry_exponent_from_reference_n():
    kwargs = DATASET_SIZE.callback_kwargs(8.0, -0.5, 500.0)
    assert kwargs == {"tau_epoch": 8.0, "size_exponent": -0.5, "reference_dataset_size": 500}
    assert type(kwargs["reference_dataset_size"]) is int and type(kwargs["size_exponent"]) is float
    assert DATASET_SIZE.paper_setting == "size_exponent=0"
    assert DATASET_SIZE.follow_text(0.0).endswith("at every N (size_exponent = 0)")
    assert DATASET_SIZE.follow_text(-0.5).endswith("to the full N as (N / N_ref)^-1/2")
    assert DATASET_SIZE.measured_text(0.3) == "size_exponent = +0.30"


def test_each_axis_says_scale_and_range_in_words():
    assert WIDTH.scale_text("128") == "width 128" and DATASET_SIZE.scale_text("8000") == "N = 8000"
    assert WIDTH.span_text(64, 512) == "widths 64 to 512" and DATASET_SIZE.span_text(150, 1350) == "N = 150 to 1350"
    assert WIDTH.from_to_text(64, 512) == "from width 64 to width 512"
    assert DATASET_SIZE.from_to_text(150, 1350) == "from N = 150 to N = 1350"
    assert (WIDTH.range_noun, DATASET_SIZE.range_noun) == ("widths", "N")


def test_axis_equals_spellings_so_string_comparisons_keep_their_meaning() -> None:
    from lightning_tau.tuner.axes import DATASET_SIZE, FRACTION, WIDTH

    assert WIDTH == "width" and DATASET_SIZE == "dataset-size" and DATASET_SIZE == "dataset_size"
    assert FRACTION != "width" and WIDTH != DATASET_SIZE and WIDTH != 1
    assert {WIDTH: 1}[WIDTH] == 1 and len({WIDTH, FRACTION, DATASET_SIZE}) == 3


@pytest.mark.parametrize(
    ("lr_scaling", "m", "fixed"),
    [("none", 0.0, 1.0), ("sqrt", 0.5, 0.5), ("linear", 1.0, 0.0)],
)
def test_batch_rules_move_tau_epoch_as_b_to_one_minus_k_minus_m(lr_scaling, m, fixed):
    # λ ∝ B^k at lr ∝ B^m moves the best tau_epoch as B^(1-k-m): tau_epoch constant is 0, a fixed λ (k=0) is 1-m
    along = BATCH_SIZE.with_lr_scaling(lr_scaling)
    assert along.lr_exponent == m and along.lr_scaling == lr_scaling
    assert [(r.name, r.exponent) for r in along.rules] == [("constant tau_epoch", 0.0), ("fixed λ", fixed)]
    assert along.rules == batch_rules(m) and rules_for(along) == along.rules
    assert "Power Lines" in along.rules[0].source and "λ ∝ B" in along.rules[0].source
    assert resolve_axis(along.name) is along  # read back from a result's JSON with its own rules
    assert along.lr_factor(128, 32) == pytest.approx(4.0**m)
    assert pickle.loads(pickle.dumps(along)) is along


def test_batch_axis_objects_per_lr_scaling_differ_only_where_m_enters():
    sqrt, linear = BATCH_SIZE.with_lr_scaling("sqrt"), BATCH_SIZE.with_lr_scaling("linear")
    assert BATCH_SIZE.with_lr_scaling("none") is BATCH_SIZE and len({BATCH_SIZE, sqrt, linear}) == 3
    assert (BATCH_SIZE.name, sqrt.name, linear.name) == ("batch_size", "batch_size_lr_sqrt", "batch_size_lr_linear")
    assert sqrt == "batch_size_lr_sqrt" and sqrt != "batch_size"  # its own name keys its studies and its JSON
    assert "batch_size_lr_sqrt" not in AXES and "batch_size_lr_sqrt" not in axis_spellings()  # lr_scaling picks it


def test_batch_axis_trains_one_model_at_each_batch_and_reads_tau_epoch_in_b():
    assert BATCH_SIZE.scaling and BATCH_SIZE.batch_per_point and BATCH_SIZE.scale_is_value
    assert not BATCH_SIZE.model_per_point and not BATCH_SIZE.subsets_per_point
    assert (BATCH_SIZE.values_argument, BATCH_SIZE.value_key, BATCH_SIZE.value_type(64.0)) == (
        "batch_sizes",
        "batch_size",
        64,
    )
    assert (BATCH_SIZE.x_name, BATCH_SIZE.scale_symbol) == ("tau_epoch", "B")
    assert not BATCH_SIZE.x_falls_with_tau and BATCH_SIZE.anchor(3) == 0  # the smallest batch, where lr is the user's
    assert BATCH_SIZE.point_name(64, 64.0) == "B=64" and BATCH_SIZE.span_text(32, 128) == "B = 32 to 128"
    assert BATCH_SIZE.alpha(0.5) is None
    assert WIDTH.scale_is_value and not DATASET_SIZE.scale_is_value and not FRACTION.scale_is_value


def test_batch_axis_callback_kwargs_batch_exponent_from_reference_batch():
    kwargs = BATCH_SIZE.callback_kwargs(8.0, 0.5, 32.0)
    assert kwargs == {"tau_epoch": 8.0, "batch_exponent": 0.5, "reference_batch_size": 32}
    assert type(kwargs["reference_batch_size"]) is int and type(kwargs["batch_exponent"]) is float
    assert BATCH_SIZE.paper_setting == "batch_exponent=0"
    assert BATCH_SIZE.follow_text(0.0).endswith("at every B (batch_exponent = 0)")
    assert BATCH_SIZE.follow_text(0.5).endswith("to another B as (B / B_ref)^1/2")
    assert BATCH_SIZE.measured_text(0.3) == "batch_exponent = +0.30"
