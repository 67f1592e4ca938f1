"""``lightning_tau.tuner.workers``: the sweep's SIGTERM handling (raised at once outside a Lightning fit, left to
Lightning's inside one, once only) and why a stopping process hands its trials back (real signals, in-process)."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest

from lightning_tau.tuner.workers import sigterm_raises, worker_environ


class Stopped(Exception):
    pass


def test_sigterm_inside_the_block_raises_at_once_and_the_handler_is_restored_after() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Stopped), sigterm_raises(Stopped):
        signal.raise_signal(signal.SIGTERM)
        pytest.fail("SIGTERM did not stop the block")
    assert signal.getsignal(signal.SIGTERM) is before


def test_sigterm_under_a_handler_that_chains_ours_leaves_the_stop_to_it() -> None:
    """Lightning's fit installs a handler that records the SIGTERM and calls the one it found (ours): the fit then
    ends at the batch's end, so ours must not raise in the middle of the fit."""
    seen: list[int] = []
    with sigterm_raises(Stopped):
        ours = signal.getsignal(signal.SIGTERM)

        def lightnings(signum: int, frame: Any) -> None:
            seen.append(signum)
            ours(signum, frame)  # type: ignore[operator, misc]

        signal.signal(signal.SIGTERM, lightnings)
        signal.raise_signal(signal.SIGTERM)
        signal.signal(signal.SIGTERM, ours)  # the fit's teardown puts ours back
        with pytest.raises(Stopped):
            signal.raise_signal(signal.SIGTERM)
    assert seen == [signal.SIGTERM]


def test_a_second_sigterm_while_the_first_is_handled_is_ignored() -> None:
    handled = []
    with pytest.raises(Stopped), sigterm_raises(Stopped):
        try:
            signal.raise_signal(signal.SIGTERM)
        except Stopped:
            signal.raise_signal(signal.SIGTERM)  # the hand-back is not cut short
            handled.append(True)
            raise
    assert handled == [True]


def test_a_worker_takes_the_starting_processs_environment_without_what_it_removed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TAU_TEST_REMOVED", "inherited from the server")
    monkeypatch.setenv("TAU_TEST_CHANGED", "old")
    caller = {k: v for k, v in os.environ.items() if k != "TAU_TEST_REMOVED"} | {"TAU_TEST_CHANGED": "new"}
    worker_environ(caller)
    assert "TAU_TEST_REMOVED" not in os.environ
    assert dict(os.environ) == caller
