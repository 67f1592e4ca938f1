"""``lightning_tau.tuner.analysis.grid_args``: the grid's arguments (``tau_epochs``, ``seeds``) checked without torch, in the
words ``TimescaleFinder`` and ``lightning-tau find`` share."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from lightning_tau.tuner.analysis.grid_args import check_grid, check_grid_extensions, check_seeds, tau_name

F = "`TimescaleFinder"


def _error(call: Callable[..., Any], *args: Any, kind: type[Exception] = ValueError) -> str:
    """The message of the error ``call(*args)`` raises (it must raise ``kind``)."""
    with pytest.raises(kind) as info:
        call(*args)
    return str(info.value)


def test_tau_name_keeps_six_significant_digits() -> None:
    assert tau_name(1234567.89) == "1.23457e+06" and tau_name(4.0) == "4" and tau_name(0.125) == "0.125"


def test_check_grid_sorts_timescales_as_floats() -> None:
    grid = check_grid([8, 2, 4])
    assert grid == (2.0, 4.0, 8.0) and all(type(t) is float for t in grid)
    assert check_grid((2, 2.00001)) == (2.0, 2.00001)  # distinct at 6 significant digits


@pytest.mark.parametrize("tau_epochs", ["abc", b"x", {1: 2}, (), []])
def test_check_grid_refuses_what_not_sequence_of_timescales(tau_epochs: Any) -> None:
    hint = "use a non-empty sequence of positive numbers (epochs), e.g. (2, 4, 8, 16, 32, 64, 128)."
    assert _error(check_grid, tau_epochs) == f"{F}(tau_epochs={tau_epochs!r})` is not valid: {hint}"


def test_check_grid_names_bad_timescale_and_repeat() -> None:
    assert (
        _error(check_grid, (2, 0))
        == f"{F}(tau_epochs=[2, 0])` is not valid: 0 is not a positive finite number of epochs."
    )
    assert _error(check_grid, (2, math.inf)).endswith(
        "(tau_epochs=[2, inf])` is not valid: inf is not a positive finite number of epochs."
    )
    assert _error(check_grid, (2, 2.0000001)) == (
        f"{F}(tau_epochs=[2, 2.0000001])` repeats a value (to 6 significant digits): give each tau_epoch once."
    )


def test_check_seeds_keeps_order_and_reaches_numpys_largest_seed() -> None:
    assert check_seeds([2**32 - 1, 0]) == (4294967295, 0)
    assert check_seeds((3, 1, 2)) == (3, 1, 2)


@pytest.mark.parametrize("seeds", ["0", b"0", {0}, []])
def test_check_seeds_refuses_what_not_sequence_of_seeds(seeds: Any) -> None:
    assert _error(check_seeds, seeds) == f"{F}(seeds={seeds!r})` is not valid: use a non-empty sequence of integers."


def test_check_seeds_names_bad_seed() -> None:
    assert _error(check_seeds, [0, True]) == f"{F}(seeds=[0, True])` is not valid: True is not an integer."
    assert _error(check_seeds, [0, 1.0]) == f"{F}(seeds=[0, 1.0])` is not valid: 1.0 is not an integer."
    numpy = "is not a seed numpy accepts; use integers from 0 to 4294967295."
    assert _error(check_seeds, [-1]) == f"{F}(seeds=[-1])` is not valid: -1 {numpy}"
    assert _error(check_seeds, [2**32]) == f"{F}(seeds=[4294967296])` is not valid: 4294967296 {numpy}"
    assert _error(check_seeds, [1, 0, 1]) == f"{F}(seeds=[1, 0, 1])` repeats a seed: give each seed once."
    # a tuple (the CLI and LightningCLI pass lists, Python users often tuples) is shown as the list it checks
    assert _error(check_seeds, (0, 1.0)) == f"{F}(seeds=[0, 1.0])` is not valid: 1.0 is not an integer."
    assert _error(check_seeds, (0, -1)) == f"{F}(seeds=[0, -1])` is not valid: -1 {numpy}"


def test_check_grid_extensions_takes_count_of_steps_from_zero() -> None:
    assert check_grid_extensions(0) == 0 and check_grid_extensions(5) == 5


@pytest.mark.parametrize("value", [-1, 1.5, 2.0, True, "3", None])
def test_check_grid_extensions_refuses_anything_but_integer_from_zero(value: Any) -> None:
    assert _error(check_grid_extensions, value) == (
        f"{F}(max_grid_extensions={value!r})` is not valid: use an integer >= 0, the most steps the grid grows by at"
        " each end where an optimum sits on it (0: none), e.g. 3."
    )
