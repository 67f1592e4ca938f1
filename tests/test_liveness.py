"""``lightning_tau.tuner.liveness``: the heartbeat setting, who is alive, and why a stopping process hands its
trials back."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import optuna
import pytest

from lightning_tau.tuner.liveness import (
    HEARTBEAT_ENV,
    MACHINE,
    heartbeat_seconds,
    is_alive,
    proc_stat,
    stop_reason,
    this_worker,
)
from lightning_tau.tuner.study import CLAIM_PREFIX, _untagged_dead


def test_stop_reason_names_the_signal_or_the_error() -> None:
    from lightning.pytorch.utilities.exceptions import SIGTERMException

    assert stop_reason(SIGTERMException()) == "stopped by SIGTERM: handed back"
    assert stop_reason(SIGTERMException(143)) == "stopped by SIGTERM: handed back"
    assert stop_reason(KeyboardInterrupt()) == "interrupted (Ctrl-C): handed back"
    assert stop_reason(SystemExit(0)) == "SystemExit: 0"


@pytest.mark.parametrize("raw", ["0", "00", "-1", "0.5", "²", "٣", "99999999999999", "86401", "1e3", "x"])
def test_a_heartbeat_setting_that_is_not_a_whole_number_of_seconds_up_to_a_day_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv(HEARTBEAT_ENV, raw)
    with pytest.raises(ValueError, match=rf"^`LIGHTNING_TAU_HEARTBEAT={re.escape(repr(raw))}` is not valid: use a"):
        heartbeat_seconds()


@pytest.mark.parametrize(("raw", "seconds"), [("", 30), ("1", 1), (" 7 ", 7), ("86400", 86400)])
def test_a_heartbeat_setting_in_range_is_taken(monkeypatch: pytest.MonkeyPatch, raw: str, seconds: int) -> None:
    monkeypatch.setenv(HEARTBEAT_ENV, raw)
    assert heartbeat_seconds() == seconds


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_a_child_that_exited_and_was_not_reaped_is_dead() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        started = proc_stat(child.pid)
        # wait until it has exited, without reaping it (WNOWAIT): it stays in the process table as a zombie
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
        stat = proc_stat(child.pid)
        assert stat is not None and stat[0] == "Z"
        os.kill(child.pid, 0)  # a zombie still takes signals: only its state tells it is dead
        assert is_alive(child.pid, stat[1]) is False
        assert started is None or is_alive(child.pid, started[1]) is False
    finally:
        child.wait()
    assert is_alive(child.pid, stat[1]) is False  # reaped: gone


def test_this_process_is_alive() -> None:
    me = this_worker()
    assert is_alive(me["pid"], me["started"]) is True


def _claims(*pids_started: tuple[int, Any]) -> optuna.trial.FrozenTrial:
    """A running trial no worker tagged yet, claimed on this machine by each ``(pid, started)``."""
    attrs = {
        f"{CLAIM_PREFIX}{k}": {"machine": MACHINE, "pid": pid, "started": started}
        for k, (pid, started) in enumerate(pids_started)
    }
    return optuna.trial.create_trial(state=optuna.trial.TrialState.RUNNING, user_attrs=attrs)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_a_claimed_trial_is_reclaimed_only_when_every_claimer_is_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    stat = proc_stat(child.pid)
    child.wait()  # reaped: gone
    gone = (child.pid, stat[1] if stat else None)
    me = this_worker()
    assert _untagged_dead(_claims(gone, (me["pid"], me["started"]))) is None  # one claimer is alive: it may hold it
    assert _untagged_dead(_claims((me["pid"], me["started"]), gone)) is None
    assert _untagged_dead(_claims(gone, gone)) == (
        f"the process that took it (pid {child.pid}, {child.pid} on this machine) is gone before it marked it as its"
        " own"
    )
