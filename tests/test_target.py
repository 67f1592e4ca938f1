"""The target timescale's checks, its size rule and its batch rule (lightning_tau/target.py): pure and fast.

Among the tests `make mutation` runs against target.py's mutants, so each message is checked whole and each boundary
from both sides.
"""

from __future__ import annotations

import re

import pytest

from lightning_tau.target import (
    Target,
    batch_scaled_tau_epoch,
    batch_scaling_text,
    check_batch_rule,
    check_size_rule,
    check_target,
    check_width_exponent,
    size_scaled_tau_epoch,
    size_scaling_text,
)

USAGE = (
    " use a finite number alpha (weight decay ∝ s ** alpha across widths; 1 is the paper's muP rule) or a mapping"
    " from param group name to alpha, e.g. {'hidden': 0.5}."
)

RANGE = (
    "use a finite number in [-2, 2], e of tau_epoch ∝ N ** e (0 Wang & Aitchison, -0.5 the 1/2 rules, -1 a fixed"
    " weight decay); beyond ±2 a 4-fold N moves tau_epoch over 16-fold, which no published rule does."
)


SIZE = (
    "use a positive whole number: the dataset size N (samples, or tokens when the run's dataset_size is in tokens)"
    " the given tau_epoch was measured at."
)


def raises_exactly(message: str) -> pytest.RaisesContext[ValueError]:
    return pytest.raises(ValueError, match=f"^{re.escape(message)}$")


def test_check_target_takes_exactly_one_target_of_more_than_one_step() -> None:
    assert check_target(5, None, token_budget=None) == (5.0, None)
    assert check_target(None, 1.5, token_budget=None) == (None, 1.5)
    assert check_target(None, None, token_budget=2e9) == (None, None)  # the token budget is the target
    for tau_epoch, tau_iter in ((None, None), (5.0, 100)):
        with raises_exactly(
            "`TimescaleCallback` takes exactly one of `tau_epoch`, `tau_iter` and `token_budget`,"
            f" got tau_epoch={tau_epoch!r} and tau_iter={tau_iter!r}."
        ):
            check_target(tau_epoch, tau_iter, token_budget=None)
    with raises_exactly("`TimescaleCallback(tau_epoch=0)` is not valid: `tau_epoch` must be a positive finite number."):
        check_target(0, None, token_budget=None)
    with raises_exactly("`TimescaleCallback(tau_iter='x')` is not valid: `tau_iter` must be a positive finite number."):
        check_target(None, "x", token_budget=None)
    with raises_exactly(
        "`TimescaleCallback(tau_iter=1)` is not valid: a timescale of one optimizer step or less makes"
        " `lr * weight_decay >= 1`, which zeroes or flips the weights every step. Use `tau_iter > 1`."
    ):
        check_target(None, 1, token_budget=None)


def test_check_width_exponent_messages() -> None:
    assert check_width_exponent(1) == 1.0 and check_width_exponent({"a": 1}) == {"a": 1.0}
    with raises_exactly("`TimescaleCallback(width_exponent={3: 1.0})` is not valid: entry 3: 1.0;" + USAGE):
        check_width_exponent({3: 1.0})
    with raises_exactly("`Owner(width_exponent={'h': 'x'})` is not valid: entry 'h': 'x';" + USAGE):
        check_width_exponent({"h": "x"}, owner="Owner")
    with raises_exactly("`TimescaleCallback(width_exponent=True)` is not valid:" + USAGE):
        check_width_exponent(True)


@pytest.mark.parametrize(
    ("exponent", "n", "expected"),
    [
        (0.0, 50_000, 8.0),  # Wang & Aitchison: tau_epoch at every N
        (-0.5, 50_000, 4.0),  # the 1/2 rules: 8 x 4^-0.5
        (-1.0, 50_000, 2.0),  # a fixed weight decay: 8 / 4
        (0.5, 3_125, 4.0),  # a quarter of the reference N, a positive exponent: 8 x 0.25^0.5
        (-0.5, 3_125, 16.0),
    ],
)
def test_size_scaled_tau_epoch_closed_form(exponent: float, n: float, expected: float) -> None:
    held = size_scaled_tau_epoch(8.0, n, size_exponent=exponent, reference_dataset_size=12_500)
    assert held == pytest.approx(expected, rel=1e-12)
    assert held == pytest.approx(8.0 * (n / 12_500) ** exponent, rel=1e-12)


def test_size_scaling_text_shows_arithmetic() -> None:
    text = size_scaling_text(8.0, 50_000, size_exponent=-0.5, reference_dataset_size=12_500)
    assert text == "tau_epoch 8 x (50000/12500)^-0.5 = 4"
    assert size_scaling_text(8.0, 50_000, size_exponent=0.0, reference_dataset_size=12_500) is None


def test_check_size_rule_accepts_numbers_and_whole_sizes() -> None:
    assert check_size_rule(-0.5, 12_500) == (-0.5, 12_500)
    assert check_size_rule(-1, 12_500.0) == (-1.0, 12_500)
    assert check_size_rule(2, 10) == (2.0, 10) and check_size_rule(-2, 10) == (-2.0, 10)  # the ends are in
    assert check_size_rule(0, None) == (0.0, None)
    assert check_size_rule(0.0, 5) == (0.0, 5)  # given at exponent 0: checked, changes nothing


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"size_exponent": float("nan")}, f"`TimescaleCallback(size_exponent=nan)` is not valid: {RANGE}"),
        ({"size_exponent": float("inf")}, f"`TimescaleCallback(size_exponent=inf)` is not valid: {RANGE}"),
        ({"size_exponent": "-0.5"}, f"`TimescaleCallback(size_exponent='-0.5')` is not valid: {RANGE}"),
        ({"size_exponent": True}, f"`TimescaleCallback(size_exponent=True)` is not valid: {RANGE}"),
        ({"size_exponent": 2.01}, f"`TimescaleCallback(size_exponent=2.01)` is not valid: {RANGE}"),
        ({"size_exponent": -2.01}, f"`TimescaleCallback(size_exponent=-2.01)` is not valid: {RANGE}"),
        (
            {"size_exponent": -0.5},
            "`TimescaleCallback(size_exponent=-0.5)` is not valid: a nonzero `size_exponent` needs"
            " `reference_dataset_size`, the dataset size N the given tau_epoch was measured at (the finder's"
            " `AxisResult.callback()` passes both).",
        ),
        (
            {"size_exponent": -0.5, "reference_dataset_size": 0},
            f"`TimescaleCallback(reference_dataset_size=0)` is not valid: {SIZE}",
        ),
        (
            {"size_exponent": -0.5, "reference_dataset_size": 12.5},
            f"`TimescaleCallback(reference_dataset_size=12.5)` is not valid: {SIZE}",
        ),
        (
            {"size_exponent": 0.0, "reference_dataset_size": "big"},
            f"`TimescaleCallback(reference_dataset_size='big')` is not valid: {SIZE}",
        ),
        (
            {"size_exponent": -0.5, "reference_dataset_size": 100, "tau_iter": 300.0},
            "`TimescaleCallback(size_exponent=-0.5)` is not valid: `size_exponent` scales a `tau_epoch` target with"
            " N, and `tau_iter=300.0` is in optimizer steps. Give the target as `tau_epoch`.",
        ),
        (
            {"size_exponent": -0.5, "reference_dataset_size": 100, "token_budget": 2e9},
            "`TimescaleCallback(size_exponent=-0.5)` is not valid: `token_budget=2000000000.0` already picks the"
            " timescale from the tokens per parameter; scaling it with N as well would count the data twice. Use"
            " `tau_epoch` with `size_exponent`, or `token_budget` alone.",
        ),
    ],
)
def test_check_size_rule_refuses_bad_values_in_one_line(kwargs: dict, message: str) -> None:
    kwargs = {"reference_dataset_size": None, **kwargs}
    with raises_exactly(message):
        check_size_rule(kwargs.pop("size_exponent"), kwargs.pop("reference_dataset_size"), **kwargs)


def test_says_how_held_tau_epoch_came_only_under_size_rule() -> None:
    scaled = Target(tau_epoch=8.0, size_exponent=-0.5, reference_dataset_size=12_500)
    assert scaled.scaling_text(50_000) == "tau_epoch 8 x (50000/12500)^-0.5 = 4"
    assert scaled.scaling_text(None) is None
    assert Target(tau_epoch=8.0).scaling_text(50_000) is None
    assert Target(tau_iter=500.0, size_exponent=-0.5, reference_dataset_size=12_500).scaling_text(50_000) is None


# --- the batch rule: tau_epoch * (B / B_ref) ** e --------------------------------------------------------------------

BATCH_RANGE = (
    "use a finite number in [-2, 2], e of tau_epoch ∝ B ** e (0 holds tau_epoch at every B: lambda ∝ B at a fixed"
    " lr; 1 a fixed lambda at a fixed lr; with lr ∝ B^m and lambda ∝ B^k, e = 1 - k - m); beyond ±2 a 4-fold B moves"
    " tau_epoch over 16-fold, which no published rule does."
)
BATCH = (
    "use a positive whole number: the global batch size B (devices x per-device batch x accumulation, in the unit"
    " of the run's B) the given tau_epoch was measured at."
)


def test_check_batch_rule_takes_range_and_reference() -> None:
    assert check_batch_rule(1, 128) == (1.0, 128) and isinstance(check_batch_rule(1, 128.0)[1], int)
    assert check_batch_rule(-2, 1) == (-2.0, 1) and check_batch_rule(2, 1) == (2.0, 1)  # both ends are in
    assert check_batch_rule(0, None) == (0.0, None) and check_batch_rule(0.0, 64) == (0.0, 64)


@pytest.mark.parametrize(
    ("exponent", "reference", "message"),
    [
        (2.001, 8, f"`TimescaleCallback(batch_exponent=2.001)` is not valid: {BATCH_RANGE}"),
        (-2.001, 8, f"`TimescaleCallback(batch_exponent=-2.001)` is not valid: {BATCH_RANGE}"),
        (float("nan"), 8, f"`TimescaleCallback(batch_exponent=nan)` is not valid: {BATCH_RANGE}"),
        (True, 8, f"`TimescaleCallback(batch_exponent=True)` is not valid: {BATCH_RANGE}"),
        (1, 0, f"`TimescaleCallback(reference_batch_size=0)` is not valid: {BATCH}"),
        (1, 2.5, f"`TimescaleCallback(reference_batch_size=2.5)` is not valid: {BATCH}"),
        (0, "64", f"`TimescaleCallback(reference_batch_size='64')` is not valid: {BATCH}"),
        (
            0.5,
            None,
            "`TimescaleCallback(batch_exponent=0.5)` is not valid: a nonzero `batch_exponent` needs"
            " `reference_batch_size`, the global batch size B the given tau_epoch was measured at (the finder's"
            " `AxisResult.callback()` passes both).",
        ),
    ],
)
def test_check_batch_rule_refuses_in_one_line(exponent: object, reference: object, message: str) -> None:
    with raises_exactly(message):
        check_batch_rule(exponent, reference)


def test_check_batch_rule_needs_tau_epoch_target() -> None:
    with raises_exactly(
        "`TimescaleCallback(batch_exponent=1)` is not valid: `batch_exponent` scales a `tau_epoch` target with B,"
        " and `tau_iter=50` is in optimizer steps. Give the target as `tau_epoch`."
    ):
        check_batch_rule(1, 8, tau_iter=50)
    with raises_exactly(
        "`apply_timescale(batch_exponent=1)` is not valid: `token_budget=1000000000.0` already picks the timescale"
        " as a fraction of the planned steps; use `tau_epoch` with `batch_exponent`, or `token_budget` alone."
    ):
        check_batch_rule(1, 8, owner="apply_timescale", token_budget=1e9)
    assert check_batch_rule(0, None, tau_iter=50, token_budget=1e9) == (0.0, None)  # exponent 0: nothing to scale


@pytest.mark.parametrize(("exponent", "held"), [(1.0, 16.0), (-0.5, 8.0 / 2**0.5), (0.0, 8.0), (2.0, 32.0)])
def test_batch_scaled_tau_epoch_b_over_b_ref_to_e(exponent: float, held: float) -> None:
    assert batch_scaled_tau_epoch(8.0, 256, batch_exponent=exponent, reference_batch_size=128) == pytest.approx(held)
    assert batch_scaled_tau_epoch(8.0, 64, batch_exponent=exponent, reference_batch_size=128) == pytest.approx(
        8.0 * 0.5**exponent
    )


def test_batch_scaling_text_and_targets_whole_text() -> None:
    text = batch_scaling_text(8.0, 256, batch_exponent=1.0, reference_batch_size=128)
    assert text == "tau_epoch 8 x (256/128)^1 = 16"
    assert batch_scaling_text(8.0, 64, batch_exponent=-0.5, reference_batch_size=256) == (
        "tau_epoch 8 x (64/256)^-0.5 = 16"
    )
    assert batch_scaling_text(8.0, 256, batch_exponent=0.0, reference_batch_size=128) is None
    assert batch_scaling_text(8.0, None, batch_exponent=1.0, reference_batch_size=128) is None
    both = Target(8.0, size_exponent=-0.5, reference_dataset_size=100, batch_exponent=1.0, reference_batch_size=10)
    assert both.scaling_text(400, 40) == "tau_epoch 8 x (400/100)^-0.5 = 4; tau_epoch 4 x (40/10)^1 = 16"
    assert both.scaled_by() == "N and B" and both.size_held(400) == 4.0
    batch = Target(8.0, batch_exponent=1.0, reference_batch_size=10)
    assert batch.scaling_text(400, 40) == "tau_epoch 8 x (40/10)^1 = 32" and batch.scaled_by() == "B"
    assert Target(8.0).scaling_text(400, 40) is None and Target(tau_iter=50.0).scaling_text(400, 40) is None
