"""Pure timescale math: closed forms, round trips (hypothesis) and input validation."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lightning_tau import timescale

positive = st.floats(min_value=1e-6, max_value=1e6, allow_nan=False, allow_infinity=False)
sizes = st.integers(min_value=1, max_value=10**9)


def test_closed_forms_match_paper() -> None:
    # Paper Sec. 4.1 setting: lr 1e-3, B = 100; 50k samples and wd 0.1 give tau_epoch 20.
    assert timescale.tau_iter(1e-3, 0.1) == pytest.approx(1e4)
    assert timescale.steps_per_epoch(50_000, 100) == 500
    assert timescale.tau_epoch(1e-3, 0.1, 50_000, 100) == pytest.approx(20.0)
    assert timescale.weight_decay_for_tau_epoch(1e-3, 20.0, 50_000, 100) == pytest.approx(0.1)


def test_dataset_batch_and_width_rules() -> None:
    base = timescale.weight_decay_for_tau_epoch(1e-3, 5.0, 10_000, 64)
    assert timescale.weight_decay_for_tau_epoch(1e-3, 5.0, 40_000, 64) == pytest.approx(base / 4)  # lam ∝ 1/N
    assert timescale.weight_decay_for_tau_epoch(1e-3, 5.0, 10_000, 256) == pytest.approx(base * 4)  # lam ∝ B
    assert timescale.weight_decay_for_tau_epoch(1e-3 / 8, 5.0, 10_000, 64) == pytest.approx(base * 8)  # muP: lam ∝ s


@given(lr=positive, wd=positive, n=sizes, b=sizes)
def test_tau_epoch_round_trip(lr: float, wd: float, n: int, b: int) -> None:
    tau = timescale.tau_epoch(lr, wd, n, b)
    assert timescale.weight_decay_for_tau_epoch(lr, tau, n, b) == pytest.approx(wd, rel=1e-9)
    assert timescale.tau_epoch_from_tau_iter(timescale.tau_iter(lr, wd), n, b) == pytest.approx(tau, rel=1e-9)


@given(lr=positive, tau=positive)
def test_tau_iter_round_trip(lr: float, tau: float) -> None:
    wd = timescale.weight_decay_for_tau_iter(lr, tau)
    assert timescale.tau_iter(lr, wd) == pytest.approx(tau, rel=1e-9)


@given(lr=positive, wd=positive, n=sizes, b=sizes, lr2=positive, n2=sizes, b2=sizes)
def test_transfer_holds_tau_epoch(lr: float, wd: float, n: int, b: int, lr2: float, n2: int, b2: int) -> None:
    new_wd = timescale.transfer_weight_decay(lr, wd, n, b, new_lr=lr2, new_dataset_size=n2, new_batch_size=b2)
    assert timescale.tau_epoch(lr2, new_wd, n2, b2) == pytest.approx(timescale.tau_epoch(lr, wd, n, b), rel=1e-9)
    # transferring to the same run is the identity
    assert timescale.transfer_weight_decay(lr, wd, n, b) == pytest.approx(wd, rel=1e-12)


def test_elapsed_timescales_and_init_memory() -> None:
    lrs = [1e-3 * (1 + i % 3) for i in range(300)]
    elapsed = timescale.timescales_elapsed(lrs, 2.0)
    assert elapsed == pytest.approx(2.0 * sum(lrs))
    assert timescale.init_memory(lrs, 2.0) == pytest.approx(math.prod(1 - lr * 2.0 for lr in lrs))
    assert timescale.init_memory(lrs, 2.0) == pytest.approx(math.exp(-elapsed), rel=0.01)
    assert timescale.init_memory([2.0], 1.0) == 0.0  # a step with lr * wd >= 1 erases the init
    assert timescale.init_memory([0.5, 1.0], 1.0) == 0.0  # lr * wd exactly 1 too (no log of zero)


def test_weight_magnitude_predictions() -> None:
    assert timescale.equilibrium_rms(1e-3, 0.5) == pytest.approx(math.sqrt(1e-3))
    # the two forms in THEORY.md §4 agree: sqrt(lr / (2 lam)) = 1 / (lam * sqrt(2 tau_iter))
    lr, wd = 3e-4, 0.7
    assert timescale.equilibrium_rms(lr, wd) == pytest.approx(1 / (wd * math.sqrt(2 * timescale.tau_iter(lr, wd))))
    assert timescale.coherent_norm_bound(0.25) == 4.0


def test_power_lines_law() -> None:
    assert timescale.power_lines_tau_epoch(1.0) == pytest.approx(1.084)
    assert timescale.power_lines_tau_epoch(100.0) == pytest.approx(1.084 * 100**-0.527)
    assert timescale.power_lines_tau_epoch(10.0, coefficient=2.0, exponent=-1.0) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="`exponent` must be a finite number, got nan"):
        timescale.power_lines_tau_epoch(10.0, exponent=float("nan"))


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), True, "3", None])
@pytest.mark.parametrize(
    ("func", "argument", "call"),
    [
        (timescale.tau_iter, "lr", lambda f, v: f(v, 0.1)),
        (timescale.tau_iter, "weight_decay", lambda f, v: f(1e-3, v)),
        (timescale.tau_epoch, "dataset_size", lambda f, v: f(1e-3, 0.1, v, 10)),
        (timescale.weight_decay_for_tau_epoch, "tau_epoch", lambda f, v: f(1e-3, v, 100, 10)),
        (timescale.weight_decay_for_tau_epoch, "batch_size", lambda f, v: f(1e-3, 1.0, 100, v)),
        (timescale.weight_decay_for_tau_iter, "tau_iter", lambda f, v: f(1e-3, v)),
        (timescale.power_lines_tau_epoch, "tokens_per_parameter", lambda f, v: f(v)),
        (timescale.power_lines_tau_epoch, "coefficient", lambda f, v: f(10.0, coefficient=v)),
        (timescale.tau_epoch_from_tau_iter, "tau_iter", lambda f, v: f(v, 100, 10)),
        (timescale.weight_decay_for_tau_iter, "lr", lambda f, v: f(v, 10.0)),
        (timescale.timescales_elapsed, "weight_decay", lambda f, v: f([1e-3], v)),
        (timescale.init_memory, "weight_decay", lambda f, v: f([1e-3], v)),
        (timescale.equilibrium_rms, "lr", lambda f, v: f(v, 0.5)),
        (timescale.equilibrium_rms, "weight_decay", lambda f, v: f(1e-3, v)),
        (timescale.coherent_norm_bound, "weight_decay", lambda f, v: f(v)),
    ],
)
def test_bad_numbers_name_argument_and_value(func, argument, call, bad) -> None:
    with pytest.raises(ValueError, match=f"`{argument}` must be a positive finite number, got {bad!r}"):
        call(func, bad)


def test_positive_integer_takes_whole_numbers_from_one() -> None:
    assert timescale.is_positive_integer(1) and timescale.is_positive_integer(3.0)
    assert not any(timescale.is_positive_integer(v) for v in (0, 0.5, 2.5, -3, float("nan"), float("inf")))
    assert not timescale.is_positive_integer(None) and not timescale.is_positive_integer("many")  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0, -5, float("nan"), "3"])
@pytest.mark.parametrize("argument", ["new_lr", "new_dataset_size", "new_batch_size"])
def test_new_values_validated_in_transfer_under_their_own_name(argument: str, bad: object) -> None:
    # the message names the argument given (`new_dataset_size`), not the tuned run's `dataset_size`
    with pytest.raises(ValueError, match=f"^`{argument}` must be a positive finite number, got {bad!r}"):
        timescale.transfer_weight_decay(1e-3, 0.1, 1000, 10, **{argument: bad})
