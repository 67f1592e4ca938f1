"""Each optimizer's own steps per epoch (lightning_tau/optimizer_steps.py): the declared mapping, the count of manual
optimization's steps, and the ``M`` the next decision takes from them.

Fast and without Lightning: among the tests `make mutation` runs against the module's mutants, so each message is
checked whole and each boundary from both sides.
"""

from __future__ import annotations

import re

import pytest

from lightning_tau.optimizer_steps import (
    StepCounter,
    check_optimizer_indices,
    check_steps_per_epoch,
    count_epoch,
    optimizer_steps_per_epoch,
)

HINT = (
    " is not valid: use a mapping from optimizer index to the optimizer steps it takes per epoch, e.g. `{1: 50}` for a"
    " second optimizer stepped every other batch of 100 (manual optimization)."
)


def raises_exactly(message: str) -> pytest.RaisesContext[ValueError]:
    return pytest.raises(ValueError, match=f"^{re.escape(message)}$")


def test_per_epoch_prefers_count_then_declared_value() -> None:
    measured = {0: (50, 100), 1: (30, 60), 2: (7, 9)}
    assert optimizer_steps_per_epoch(5, 100, measured=measured, declared={0: 1, 3: 25}) == {
        0: 50.0,  # counted over an epoch of the same length: the count
        1: 50.0,  # counted over an epoch of 60 batches: the ratio, at 100
        2: 7 * 100 / 9,
        3: 25,  # declared
    }  # optimizer 4: neither, the run's M
    assert optimizer_steps_per_epoch(2, None, measured={1: (30, 60)}, declared=None) == {1: 30.0}
    assert optimizer_steps_per_epoch(2, 100, measured={}, declared=None) == {}
    assert optimizer_steps_per_epoch(2, 100, measured={}, declared={0: 40.0}) == {0: 40.0}
    assert optimizer_steps_per_epoch(1, 100, measured={}, declared={1: 5}) == {}  # only the run's optimizers


def test_check_optimizer_indices_names_indices_run_lacks() -> None:
    check_optimizer_indices(None, 1)
    check_optimizer_indices({0: 10.0, 1: 5.0}, 2)
    with raises_exactly(
        "`TimescaleCallback(steps_per_epoch={3: 10.0, 0: 5.0, 1: 2.0})` names optimizer index(es) [1, 3], but the"
        " LightningModule has 1 optimizer(s) (indices from 0, in the order `configure_optimizers` returns them)."
    ):
        check_optimizer_indices({3: 10.0, 0: 5.0, 1: 2.0}, 1)


def test_count_epoch_keeps_counts_matter_and_names_wrong_assumptions() -> None:
    counts = {0: 10, 1: 5, 2: 10, 3: 10, 4: 7, 6: 10}
    keep, wrong = count_epoch(
        counts,
        10,
        [6, 4, 3, 2, 1, 0, 5],  # 5 took no step
        optimizer_m={2: 5.0, 4: 7.0},
        steps_per_epoch=10.0,
        measured={3: (10, 10)},
    )
    assert keep == {1: (5, 10), 2: (10, 10), 3: (10, 10), 4: (7, 10)}  # 0 and 6 step once per batch, as assumed
    assert wrong == [(1, 5, 10.0), (2, 10, 5.0)]
    _, wrong = count_epoch({0: 10}, 10, [0], optimizer_m={}, steps_per_epoch=None, measured={})
    assert wrong == []
    _, wrong = count_epoch({0: 10}, 10, [0], optimizer_m={}, steps_per_epoch=10.0 * (1 + 1e-10), measured={})
    assert wrong == []


def test_count_epoch_skips_optimizer_took_no_step_and_goes_on() -> None:
    # optimizer 0 took no step this epoch; optimizer 1 (later in the loop) took half as many as its M
    keep, wrong = count_epoch({1: 5}, 10, [0, 1], optimizer_m={}, steps_per_epoch=10, measured={})
    assert (keep, wrong) == ({1: (5, 10)}, [(1, 5, 10)])


def test_check_steps_per_epoch_takes_indices_from_0_to_positive_numbers() -> None:
    assert check_steps_per_epoch(None) is None
    assert check_steps_per_epoch({}) == {}
    checked = check_steps_per_epoch({0: 1, 1: 2.5})
    assert checked == {0: 1.0, 1: 2.5} and all(type(m) is float for m in checked.values())


@pytest.mark.parametrize(
    "value, shown",
    [
        ([50], "[50]"),
        ({-1: 50}, "{-1: 50}"),
        ({1.5: 50}, "{1.5: 50}"),
        ({"1": 50}, "{'1': 50}"),
        ({1: 0}, "{1: 0}"),
        ({1: float("inf")}, "{1: inf}"),
        ({0: 10, 1: "x"}, "{0: 10, 1: 'x'}"),
    ],
)
def test_check_steps_per_epoch_shows_whole_mapping(value: object, shown: str) -> None:
    with raises_exactly(f"`TimescaleCallback(steps_per_epoch={shown})`" + HINT):
        check_steps_per_epoch(value)


def count(counter: StepCounter, epoch: int, steps: dict[int, int], batches: int) -> None:
    counter.start_epoch(epoch)
    for index, n in steps.items():
        for _ in range(n):
            counter.step(index)
    for _ in range(batches):
        counter.end_batch()


def test_step_counter_compares_only_full_epoch() -> None:
    counter = StepCounter()
    count(counter, 0, {0: 10, 1: 5}, 9)  # cut short: 9 of 10 batches
    assert counter.end_epoch([0, 1], planned=10, stopped=False, optimizer_m={}, steps_per_epoch=10) == []
    assert counter.measured == {}
    count(counter, 1, {0: 10, 1: 5}, 10)
    assert counter.end_epoch([0, 1], planned=10, stopped=False, optimizer_m={}, steps_per_epoch=10) == [(1, 5, 10)]
    assert counter.measured == {1: (5, 10)}
    count(counter, 2, {}, 0)  # no batch: nothing to say
    assert counter.end_epoch([0, 1], planned=float("inf"), stopped=False, optimizer_m={}, steps_per_epoch=10) == []


def test_step_counter_of_epoch_of_unknown_length_counts_unless_stopped() -> None:
    counter = StepCounter()
    count(counter, 0, {0: 4}, 8)
    assert counter.end_epoch([0], planned=float("inf"), stopped=True, optimizer_m={}, steps_per_epoch=8) == []
    assert counter.measured == {}
    assert counter.end_epoch([0], planned=float("inf"), stopped=False, optimizer_m={}, steps_per_epoch=8) == [(0, 4, 8)]
    assert counter.measured == {0: (4, 8)}


def test_step_counter_state_round_trips_and_resume_inside_epoch_continues_count() -> None:
    counter = StepCounter()
    assert counter.state_dict() == {"measured_steps": {}, "epoch_counts": {"epoch": None, "batches": 0, "steps": {}}}
    count(counter, 0, {1: 5}, 10)
    counter.end_epoch([1], planned=10, stopped=False, optimizer_m={}, steps_per_epoch=10)
    count(counter, 1, {0: 3, 1: 2}, 3)
    state = counter.state_dict()
    assert state == {
        "measured_steps": {"1": [5, 10]},
        "epoch_counts": {"epoch": 1, "batches": 3, "steps": {"0": 3, "1": 2}},
    }
    resumed = StepCounter()
    resumed.restore(state)
    assert resumed.measured == {1: (5, 10)} and (resumed.counts, resumed.batches) == ({}, 0)
    resumed.resume(1)
    assert (resumed.counts, resumed.batches, resumed.epoch) == ({0: 3, 1: 2}, 3, 1)
    resumed.resume(1)  # only once: the checkpoint's count is spent
    assert resumed.counts == {0: 3, 1: 2}
    other = StepCounter()
    other.restore(state)
    other.resume(2)  # resumed at another epoch's start: that epoch counts from zero
    assert (other.counts, other.batches, other.epoch) == ({}, 0, None)
    fresh = StepCounter()
    fresh.restore(None)
    fresh.resume(0)
    assert (fresh.measured, fresh.counts, fresh.epoch) == ({}, {}, None)


def test_step_counter_epoch_of_no_batch_never_full_and_one_batch_can_be() -> None:
    counter = StepCounter()
    # an epoch planned empty ran its 0 batches: it says nothing, even of a step taken outside a batch (a manual
    # optimizer stepped in an epoch hook)
    count(counter, 0, {0: 1}, 0)
    assert counter.end_epoch([0], planned=0, stopped=False, optimizer_m={}, steps_per_epoch=0.5) == []
    assert counter.measured == {}
    count(counter, 1, {0: 1}, 1)  # one batch, one step, as planned: a full epoch, compared with the assumed M
    assert counter.end_epoch([0], planned=1, stopped=False, optimizer_m={}, steps_per_epoch=2) == [(0, 1, 2)]
    assert counter.measured == {}  # an optimizer stepped every batch needs no count of its own


def test_step_counter_resumes_checkpoint_count_without_batches_from_zero() -> None:
    """A checkpoint's state is read tolerantly: an ``epoch_counts`` without ``batches`` resumes with 0 batches."""
    counter = StepCounter()
    counter.restore({"epoch_counts": {"epoch": 3, "steps": {"0": 2}}})
    counter.resume(3)
    assert (counter.counts, counter.batches, counter.epoch) == ({0: 2}, 0, 3)
