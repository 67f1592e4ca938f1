"""What changed in a run and what the callback says about it (lightning_tau/changes.py): pure text, checked whole.

Among the tests `make mutation` runs against changes.py's mutants.
"""

from __future__ import annotations

from lightning_tau.changes import (
    change_line,
    change_parts,
    miscounted_steps_warning,
    resume_changes,
    shape_changes,
)
from lightning_tau.decide import GroupTimescale, RunShape


def group(name: str = "pg1", index: int = 0, *, managed: bool = True, **fields: object) -> GroupTimescale:
    values: dict = dict(num_params=10, reference_lr=1e-3, weight_decay_before=0.1, weight_decay=2.0)
    values.update(fields)
    return GroupTimescale(name, 0, index, managed=managed, **values)  # type: ignore[arg-type]


def test_shape_changes_names_each_changed_fact_and_ignores_rounding() -> None:
    old = RunShape(10, 100, 10)
    assert shape_changes(old, RunShape(10, 200, 10, world_size=2)) == ["dataset size 100 -> 200", "world size 1 -> 2"]
    assert shape_changes(old, RunShape(10.0 * (1 + 1e-15), 100, 10)) == []  # the same M up to float rounding
    assert shape_changes(old, RunShape(10.0 * (1 + 1e-10), 100, 10)) == ["steps per epoch 10 -> 10"]
    assert shape_changes(RunShape(None), RunShape(None)) == []
    assert shape_changes(RunShape(None), RunShape(3)) == ["steps per epoch ? -> 3"]


def test_resume_changes_compare_what_both_runs_know() -> None:
    restored = {"dataset_size": 100, "world_size": 1, "global_batch_size": 10, "steps_per_epoch": 10, "tau_iter": 50.0}
    same = RunShape(10, 100, 10, world_size=1)
    assert resume_changes(restored, same, 50.0 * (1 + 1e-13)) == []
    assert resume_changes(restored, RunShape(20, 200, 20, world_size=2), 100.0) == [
        "dataset_size 100 -> 200",
        "world_size 1 -> 2",
        "global_batch_size 10 -> 20",
        "steps_per_epoch 10 -> 20",
        "tau_iter 50.0 -> 100.0",
    ]
    assert resume_changes(restored, RunShape(None, None, None, world_size=1), None) == []  # unknown now
    assert resume_changes({"dataset_size": None}, RunShape(10, 200, 10), 50.0) == []  # unknown then


def test_resume_changes_compare_at_relative_tolerance_of_1e_12() -> None:
    shape = RunShape(10, 100, 10)
    assert resume_changes({"tau_iter": 500.0}, shape, 500.0 * (1 + 1e-10)) == [
        f"tau_iter 500.0 -> {500.0 * (1 + 1e-10)!r}"
    ]
    assert resume_changes({"tau_iter": 500.0}, shape, 500.0 * (1 + 1e-14)) == []


def test_change_parts_name_what_changed_and_skip_what_did_not() -> None:
    old = [
        group("same"),
        group("lr", 1, reference_lr=1e-3, weight_decay=2.0),
        group("wd", 2, weight_decay=2.0),
        group("off", 3, managed=False, weight_decay=0.3),
    ]
    new = [
        group("same", weight_decay=2.0 * (1 + 1e-13)),
        group("lr", 1, reference_lr=2e-3, weight_decay=1.0),
        group("wd", 2, weight_decay=0.5),
        group("off", 3, managed=False, weight_decay=0.7),
        group("added", 4, weight_decay_before=0.1, weight_decay=0.05),
        group("added_off", 5, managed=False, weight_decay=0.0),
    ]
    assert change_parts(RunShape(10), RunShape(10), 500.0, 500.0 * (1 + 1e-13), old, old) == []
    assert change_parts(RunShape(10), RunShape(5, accumulation=2), 500.0, 250.0, old, new) == [
        "steps per epoch 10 -> 5",
        "accumulation 1 -> 2",
        "tau_iter 500 -> 250 steps",
        "lr reference lr 0.001 -> 0.002",
        "lr weight decay 2 -> 1",
        "wd weight decay 2 -> 0.5",
        "new param group 'added' (managed at lr 0.001): weight decay 0.1 -> 0.05",
        "new param group 'added_off' (not managed): weight decay 0",
    ]


def test_change_line_says_which_target_held() -> None:
    parts = ["accumulation 1 -> 4", "pg1 weight decay 2 -> 0.5"]
    assert change_line(parts, tau_epoch=5.0, tau_iter=500.0, epoch=2, step=30) == (
        "`TimescaleCallback` at epoch 2, step 30: accumulation 1 -> 4; pg1 weight decay 2 -> 0.5 (tau_epoch=5 held)."
    )
    assert change_line(parts[:1], tau_epoch=None, tau_iter=1234.567, epoch=0, step=7) == (
        "`TimescaleCallback` at epoch 0, step 7: accumulation 1 -> 4 (tau_iter=1235 held)."
    )


def test_change_line_under_size_exponent_says_how_held_tau_epoch_came() -> None:
    assert (
        change_line(
            ["dataset size 100 -> 400"],
            tau_epoch=2.5,
            tau_iter=100.0,
            epoch=1,
            step=10,
            size_scaling="tau_epoch 5 x (400/100)^-0.5 = 2.5",
        )
        == "`TimescaleCallback` at epoch 1, step 10: dataset size 100 -> 400 (tau_epoch 5 x (400/100)^-0.5 = 2.5 held)."
    )


def test_miscounted_steps_warning_says_count_and_what_to_pass() -> None:
    assert miscounted_steps_warning(1, 40, 3, 100, 50.0) == (
        "`TimescaleCallback`: optimizer 1 took 40 steps in epoch 3 (100 batches), but its weight decay assumed M=50"
        " steps per epoch, so its tau_epoch there was 1.25 times the target. From the next epoch its M is the count"
        " (counted again every epoch). Pass `TimescaleCallback(steps_per_epoch={1: 40})` to have it right from the"
        " first step."
    )
