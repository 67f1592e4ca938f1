"""``lightning_tau.tuner.checks``: the checks ``TimescaleFinder`` runs on its arguments and on the data ``fit`` is
given, each called directly: what each accepts (as what it returns) and the one-line error, in full, for what it
refuses (no model is built and nothing trains)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optuna
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from lightning_tau.tuner.axes import BATCH_SIZE, DATASET_SIZE, FRACTION, WIDTH
from lightning_tau.tuner.checks import (
    SettingError,
    check_axis,
    check_batch_sizes,
    check_beta2,
    check_fractions,
    check_lr_scaling,
    check_pruner,
    check_root_dir,
    check_seed_count,
    check_storage,
    check_subset,
    check_subset_size,
    check_timescales,
    check_tolerance,
    check_widths,
)

F = "`TimescaleFinder"


def _error(call: Callable[..., Any], *args: Any, kind: type[Exception] = ValueError) -> str:
    """The message of the error ``call(*args)`` raises (it must raise ``kind``)."""
    with pytest.raises(kind) as info:
        call(*args)
    return str(info.value)


def _loader(samples: int, batch_size: int | None, drop_last: bool = False) -> DataLoader:
    return DataLoader(TensorDataset(torch.zeros(samples)), batch_size=batch_size, drop_last=drop_last)


# --- the axes ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("batch_sizes", "message"),
    [
        ([32], "batch_sizes=[32])` is not valid: give at least 2 increasing positive integer global batch sizes, e.g."),
        ("64", "batch_sizes='64')` is not valid: give at least 2"),
        ([64, 32], "batch_sizes=[64, 32])` is not valid: 32 follows 64; give the batch_sizes increasing, each once"),
        ([32, 32], "batch_sizes=[32, 32])` is not valid: 32 follows 32"),
        ([0, 32], "batch_sizes=[0, 32])` is not valid: 0 is not a positive integer batch size."),
        ([16, 32.5], "batch_sizes=[16, 32.5])` is not valid: 32.5 is not a positive integer batch size."),
        ([True, 32], "batch_sizes=[True, 32])` is not valid: True is not a positive integer batch size."),
    ],
)
def test_check_batch_sizes_refuses_in_one_line_naming_value(batch_sizes: Any, message: str) -> None:
    text = _error(check_batch_sizes, batch_sizes)
    assert text.startswith(f"{F}({message}") and "\n" not in text


def test_check_batch_sizes_and_lr_scaling_accept_what_they_return() -> None:
    assert check_batch_sizes([16, 64, 256]) == (16, 64, 256)
    assert check_lr_scaling("none", BATCH_SIZE) is BATCH_SIZE and check_lr_scaling("none", WIDTH) is WIDTH
    assert check_lr_scaling("linear", BATCH_SIZE).lr_exponent == 1.0
    assert check_axis("batch-size", None, None, None, (16, 32)) is BATCH_SIZE


def test_check_beta2_takes_both_on_batch_axis_only() -> None:
    assert [check_beta2(v, BATCH_SIZE) for v in ("fixed", "held", "both")] == ["fixed", "held", "both"]
    assert check_beta2("fixed", WIDTH) == "fixed"
    assert _error(check_beta2, "hold", BATCH_SIZE) == (
        f"{F}(beta2='hold')` is not supported. Use 'fixed', 'held' or 'both'."
    )
    assert _error(check_beta2, "both", WIDTH) == (
        f"{F}(beta2='both')` is only used with axis='batch_size' (axis is 'width'): it holds Adam's β₂ window in"
        " samples across the batch sizes. Leave `beta2` out."
    )


def test_check_lr_scaling_refuses_in_one_line_naming_value() -> None:
    assert _error(check_lr_scaling, "quadratic", BATCH_SIZE) == (
        f"{F}(lr_scaling='quadratic')` is not supported. Use 'none', 'sqrt' or 'linear'."
    )
    assert _error(check_lr_scaling, "sqrt", DATASET_SIZE) == (
        f"{F}(lr_scaling='sqrt')` is only used with axis='batch_size' (axis is 'dataset_size'): it scales the lr"
        " across the batch sizes. Leave `lr_scaling` out."
    )
    assert _error(check_axis, "batch_size", None, None, None, None) == (
        f"{F}(axis='batch_size')` needs `batch_sizes`: at least 2 increasing global batch sizes, e.g."
        " batch_sizes=(32, 64, 128)."
    )
    assert _error(check_axis, "width", None, (8, 16), None, (16, 32)) == (
        f"{F}(batch_sizes=(16, 32))` is only used with axis='batch_size' (axis is 'width'): pass axis='batch_size',"
        " or leave `batch_sizes` out."
    )



def test_check_tolerance_default_and_range() -> None:
    assert check_tolerance(None, "fraction") == 1.25 and check_tolerance(None, "width") == 1.25
    assert check_tolerance(1.01, "dataset_size") == 1.01
    assert _error(check_tolerance, 2, "fraction") == (
        f"{F}(tolerance=2)` is only used with axis='width', 'dataset_size' or 'batch_size' (axis is 'fraction'): it"
        " decides the published rules along an axis. Leave `tolerance` out."
    )
    hint = "how far the best value may move over the axis's range and still follow a rule), e.g. 1.25."
    assert _error(check_tolerance, 1.0, "width") == f"{F}(tolerance=1.0)` is not valid: use a factor above 1 ({hint}"
    assert (
        _error(check_tolerance, math.inf, "width") == f"{F}(tolerance=inf)` is not valid: use a factor above 1 ({hint}"
    )


def test_check_axis_returns_axis_with_what_it_uses() -> None:
    assert check_axis("fraction", 0.5, None, None) is FRACTION
    assert check_axis("width", 0.5, (1, 2), None) is WIDTH
    assert check_axis("dataset_size", None, None, (0.1, 0.2)) is DATASET_SIZE
    assert check_axis("dataset-size", None, None, (0.1, 0.2)) is DATASET_SIZE  # the CLI's spelling
    assert check_axis(WIDTH, None, (1, 2), None) is WIDTH  # an axis object as it is


def test_check_axis_names_argument_given_to_wrong_axis_or_missing() -> None:
    assert _error(check_axis, "x", None, None, None) == (
        f"{F}(axis='x')` is not supported. Use 'fraction' (one sweep on a subset), 'width' (with `widths`),"
        " 'dataset_size' ('dataset-size' too; with `fractions`) or 'batch_size' ('batch-size' too; with"
        " `batch_sizes`)."
    )
    assert _error(check_axis, "fraction", None, (1, 2), None) == (
        f"{F}(widths=(1, 2))` is only used with axis='width' (axis is 'fraction'): pass axis='width', or leave"
        " `widths` out."
    )
    assert _error(check_axis, "width", None, (1, 2), (0.1,)) == (
        f"{F}(fractions=(0.1,))` is only used with axis='dataset_size' (axis is 'width'): pass axis='dataset_size',"
        " or `fraction=` for one subset."
    )
    assert _error(check_axis, "width", None, None, None) == (
        f"{F}(axis='width')` needs `widths`: at least 2 increasing widths, e.g. widths=(64, 128, 256)."
    )
    assert _error(check_axis, "dataset_size", None, None, None) == (
        f"{F}(axis='dataset_size')` needs `fractions`: at least 2 increasing fractions of the training set, e.g."
        " fractions=(0.1, 0.25, 0.5)."
    )
    assert _error(check_axis, "dataset_size", 0.5, None, (0.1, 0.2)) == (
        f"{F}(fraction=0.5)` is not used with axis='dataset_size': the runs train on each of `fractions`. Leave"
        " `fraction` out."
    )


def test_check_widths_gives_increasing_integers() -> None:
    widths = check_widths([64, 128, 256])
    assert widths == (64, 128, 256) and isinstance(widths, tuple)
    assert check_widths((1, 2)) == (1, 2)


@pytest.mark.parametrize("widths", ["ab", (64,), {1, 2}])
def test_check_widths_refuses_fewer_than_two_or_no_sequence(widths: Any) -> None:
    assert _error(check_widths, widths) == (
        f"{F}(widths={widths!r})` is not valid: give at least 2 increasing positive integer widths, e.g. (64, 128,"
        " 256): the exponent is a slope across widths."
    )


def test_check_widths_names_bad_width_and_order() -> None:
    for bad, shown in [((64, True), "True"), ((64, 1.5), "1.5"), ((0, 2), "0")]:
        assert _error(check_widths, bad) == (
            f"{F}(widths={list(bad)!r})` is not valid: {shown} is not a positive integer width."
        )
    order = "give the widths increasing, each once, e.g. (64, 128, 256)."
    assert _error(check_widths, (64, 64)) == f"{F}(widths=[64, 64])` is not valid: 64 follows 64; {order}"
    assert _error(check_widths, (128, 256, 64)) == f"{F}(widths=[128, 256, 64])` is not valid: 64 follows 256; {order}"


def test_check_fractions_gives_increasing_floats_up_to_one() -> None:
    fractions = check_fractions((0.5, 1))
    assert fractions == (0.5, 1.0) and all(type(f) is float for f in fractions)
    assert check_fractions([0.1, 0.25]) == (0.1, 0.25)


def test_check_fractions_names_bad_fraction_and_order() -> None:
    assert _error(check_fractions, (0.5,)) == (
        f"{F}(fractions=(0.5,))` is not valid: give at least 2 increasing fractions in (0, 1], e.g. (0.1, 0.25,"
        " 0.5): the exponent is a slope across dataset sizes."
    )
    assert _error(check_fractions, "ab").startswith(f"{F}(fractions='ab')` is not valid: give at least 2 ")
    assert _error(check_fractions, (0, 0.5)) == f"{F}(fractions=[0, 0.5])` is not valid: 0 is not a number in (0, 1]."
    assert _error(check_fractions, (0.5, 1.5)) == (
        f"{F}(fractions=[0.5, 1.5])` is not valid: 1.5 is not a number in (0, 1]."
    )
    assert _error(check_fractions, (0.25, 0.5, 0.5)) == (
        f"{F}(fractions=[0.25, 0.5, 0.5])` is not valid: 0.5 follows 0.5; give the fractions increasing, each once,"
        " e.g. (0.1, 0.25, 0.5)."
    )


# --- the pruner, the folder and the storage ------------------------------------------------------------------------


def test_check_pruner_takes_name_or_pruner_on_fraction_axis_only() -> None:
    assert check_pruner(None, "width") is None
    for pruner in ["median", "successive_halving", "hyperband", optuna.pruners.NopPruner()]:
        assert check_pruner(pruner, "fraction") is None
    assert _error(check_pruner, "x", "fraction") == (
        f"{F}(pruner='x')` is not valid: use None (no pruning), 'median', 'successive_halving', 'hyperband' or an"
        " `optuna.pruners.BasePruner` instance."
    )
    assert _error(check_pruner, "median", "width") == (
        f"{F}(pruner='median')` is only used with axis='fraction' (axis is 'width'): leave `pruner` out along an axis."
    )
    assert "is only used with axis='fraction' (axis is 'dataset_size')" in _error(
        check_pruner, optuna.pruners.NopPruner(), "dataset_size"
    )


def test_check_root_dir_and_check_storage() -> None:
    assert check_root_dir("r") == Path("r") and check_root_dir(Path("p")) == Path("p")
    assert _error(check_root_dir, "") == f"{F}(root_dir='')` is not valid: use a directory path."
    assert _error(check_root_dir, 3) == f"{F}(root_dir=3)` is not valid: use a directory path."
    storage = optuna.storages.InMemoryStorage()
    for given in [None, "a.journal", Path("a"), storage]:
        assert check_storage(given) is given
    hint = (
        "use a journal file path, an Optuna storage URL (e.g. postgresql+psycopg2://user:password@host/db) or an"
        " Optuna storage."
    )
    assert _error(check_storage, "") == f"{F}(storage='')` is not valid: {hint}"
    assert _error(check_storage, 3) == f"{F}(storage=3)` is not valid: {hint}"


# --- the data ``fit`` is given -------------------------------------------------------------------------------------


def test_setting_error_names_argument() -> None:
    error = SettingError("fraction", "the message")
    assert error.argument == "fraction" and str(error) == "the message" and isinstance(error, ValueError)


def test_check_subset_size_keeps_at_least_one_full_batch() -> None:
    full = _loader(100, 8)
    assert check_subset_size(full, 0.08, "fraction", 0.08) is None  # 8 samples: one batch
    assert check_subset_size(full, 0.075, "fraction", 0.075) is None  # round(7.5) = 8
    with pytest.raises(SettingError) as info:
        check_subset_size(full, 0.07, "fractions", (0.07, 0.5))
    assert info.value.argument == "fractions"
    assert str(info.value) == (
        f"{F}(fractions=(0.07, 0.5))`: a fraction of 0.07 keeps 7 of the 100 training samples, fewer than one batch"
        " of 8: use a fraction of at least 0.08 (a subset holds at least one full batch)."
    )
    least = _error(check_subset_size, _loader(30, 7), 0.2, "fraction", 0.2, kind=SettingError)
    assert "keeps 6 of the 30 training samples, fewer than one batch of 7: use a fraction of at least 0.2334 " in least


def test_check_subset_size_leaves_no_batch_size_drop_last_and_empty_data_to_others() -> None:
    assert _error(check_subset_size, _loader(30, None), 0.01, "fraction", 0.01, kind=SettingError) == (
        f"{F}(fraction=0.01)`: a fraction of 0.01 keeps 0 of the 30 training samples, fewer than one batch of 1: use a"
        " fraction of at least 0.0334 (a subset holds at least one full batch)."
    )
    assert "a fraction of 1 keeps 1 of the 1 training samples, fewer than one batch of 2" in _error(
        check_subset_size, _loader(1, 2), 1.0, "fraction", 1.0, kind=SettingError
    )
    assert check_subset_size(_loader(100, 8, drop_last=True), 0.01, "fraction", 0.01) is None
    assert check_subset_size(_loader(0, 8), 0.5, "fraction", 0.5) is None


def test_check_timescales_refuses_timescale_of_one_step_or_infinite_one() -> None:
    train = _loader(40, 8)  # M = 5 steps per epoch
    assert check_timescales((1.0, 0.21), train, 1) is None
    assert check_timescales((0.45,), train, 2) is None  # ceil(5 / 2) = 3 steps: 1.35 steps
    with pytest.raises(SettingError) as info:
        check_timescales((1.0, 0.2), train, 1)
    assert info.value.argument == "tau_epochs"
    assert str(info.value) == (
        f"{F}(tau_epochs=[1.0, 0.2])` is not valid: tau_epoch=0.2 is 1 optimizer steps at M=5 steps per epoch of the"
        " subset, which TimescaleCallback cannot set. Use tau_epochs above 0.2 (one step); good values are usually"
        " several epochs."
    )
    assert "tau_epoch=0.3 is 0.9 optimizer steps at M=3 steps per epoch" in _error(
        check_timescales, (0.3,), train, 2, kind=SettingError
    )
    assert _error(check_timescales, (1e308,), train, 1, kind=SettingError) == (
        f"{F}(tau_epochs=[1e+308])` is not valid: tau_epoch=1e+308 is inf optimizer steps at M=5 steps per epoch of"
        " the subset, which TimescaleCallback cannot set. Use tau_epochs below 3.595e+307; good values are usually"
        " several epochs."
    )


def test_check_subset_needs_full_batch_and_settable_timescales() -> None:
    assert check_subset(_loader(40, 8), "fraction", 0.05, (1.0,), 1) is None
    with pytest.raises(SettingError) as info:
        check_subset(_loader(5, 8, drop_last=True), "fractions", 0.05, (1.0,), 1)
    assert info.value.argument == "fractions"
    assert str(info.value) == (
        f"{F}(fractions=0.05)`: the subset of 5 samples gives no full batch of 8 (drop_last=True). Use a larger"
        " fraction."
    )
    assert "tau_epoch=0.1 is 0.5 optimizer steps at M=5" in _error(
        check_subset, _loader(40, 8), "fraction", 0.05, (0.1,), 1, kind=SettingError
    )
    assert "at M=3 steps" in _error(check_subset, _loader(40, 8), "fraction", 0.05, (0.3,), 2, kind=SettingError)


# --- the seeds' count along an axis ----------------------------------------------------------------------------


def test_check_seed_count_defaults_per_axis_and_auto_stages() -> None:
    assert check_seed_count(None, None, "fraction") == ((0, 1, 2), False, 3)
    assert check_seed_count(None, None, "dataset_size") == ((0, 1, 2, 3, 4), False, 5)
    assert check_seed_count([5, 3], None, "width") == ((5, 3), False, 2)
    assert check_seed_count("auto", None, "width") == ((0, 1, 2), True, 12)
    assert check_seed_count("auto", 3, "dataset_size") == ((0, 1, 2), True, 3)
    assert check_seed_count("auto", 2**32 - 1, "width") == ((0, 1, 2), True, 4294967295)


def test_check_seed_count_refuses_auto_where_it_not_used_and_max_seeds_without_it() -> None:
    assert _error(check_seed_count, "auto", None, "fraction") == (
        f"{F}(seeds='auto')` is only used with axis='width', 'dataset_size' or 'batch_size' (axis is 'fraction'): it"
        " adds seeds until the axis's published rules are decided. Give the seeds, e.g. seeds=(0, 1, 2)."
    )
    alone = "pass seeds='auto', or leave `max_seeds` out."
    assert _error(check_seed_count, (0,), 5, "width") == (
        f"{F}(max_seeds=5)` is only used with seeds='auto' (seeds is (0,)): {alone}"
    )
    assert _error(check_seed_count, None, 3, "width") == (
        f"{F}(max_seeds=3)` is only used with seeds='auto' (seeds is None): {alone}"
    )
    hint = "use an integer >= 3 (the first stage trains 3 seeds), e.g. 12."
    assert _error(check_seed_count, "auto", 2, "width") == f"{F}(max_seeds=2)` is not valid: {hint}"
    assert _error(check_seed_count, "auto", 2**32, "width") == f"{F}(max_seeds=4294967296)` is not valid: {hint}"
    assert _error(check_seed_count, "AUTO", None, "width") == (
        f"{F}(seeds='AUTO')` is not valid: use a non-empty sequence of integers."
    )
