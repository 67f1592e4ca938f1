"""``lightning_tau.tuner.study.liveness``: the heartbeat setting, who is alive, and why a stopping process hands its
trials back."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import optuna
import pytest

from lightning_tau.tuner.study import liveness
from lightning_tau.tuner.study.grid_study import CLAIM_PREFIX, _untagged_dead
from lightning_tau.tuner.study.liveness import (
    HEARTBEAT_ENV,
    MACHINE,
    _machine,
    claim_token,
    heartbeat_seconds,
    is_alive,
    proc_stat,
    stop_reason,
    this_worker,
)


def test_stop_reason_names_signal_or_error() -> None:
    from lightning.pytorch.utilities.exceptions import SIGTERMException

    assert stop_reason(SIGTERMException()) == "stopped by SIGTERM: handed back"
    assert stop_reason(SIGTERMException(143)) == "stopped by SIGTERM: handed back"
    assert stop_reason(KeyboardInterrupt()) == "interrupted (Ctrl-C): handed back"
    assert stop_reason(SystemExit(0)) == "SystemExit: 0"


@pytest.mark.parametrize("raw", ["0", "00", "-1", "0.5", "²", "٣", "99999999999999", "86401", "1e3", "x"])
def test_heartbeat_setting_not_whole_number_of_seconds_up_to_day_names_variable(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv(HEARTBEAT_ENV, raw)
    with pytest.raises(ValueError, match=rf"^`LIGHTNING_TAU_HEARTBEAT={re.escape(repr(raw))}` is not valid: use a"):
        heartbeat_seconds()


@pytest.mark.parametrize(("raw", "seconds"), [("", 30), ("1", 1), (" 7 ", 7), ("86400", 86400)])
def test_heartbeat_setting_in_range_taken(monkeypatch: pytest.MonkeyPatch, raw: str, seconds: int) -> None:
    monkeypatch.setenv(HEARTBEAT_ENV, raw)
    assert heartbeat_seconds() == seconds


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_child_exited_and_was_not_reaped_dead() -> None:
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


def test_this_process_alive() -> None:
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
def test_claimed_trial_reclaimed_only_every_claimer_gone() -> None:
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


def test_long_error_cut_to_thousand_characters() -> None:
    assert stop_reason(ValueError("x" * 2000)) == "ValueError: " + "x" * 988


def test_long_heartbeat_setting_shown_cut_to_forty_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HEARTBEAT_ENV, "9" * 39 + "x" * 11)
    with pytest.raises(ValueError, match=rf"^`{HEARTBEAT_ENV}='9{{39}}x'` is not valid: use a positive whole number"):
        heartbeat_seconds()


BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


@pytest.mark.skipif(not BOOT_ID.exists(), reason="reads the boot id (Linux)")
def test_machine_host_name_and_boot_id() -> None:
    assert _machine() == MACHINE == f"{socket.gethostname()}/{BOOT_ID.read_text().strip()}"


def test_without_boot_id_machine_host_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(liveness, "Path", lambda _: tmp_path / "no_boot_id")  # not Linux: no such file
    assert _machine() == socket.gethostname()


def test_claim_token_sixteen_hex_digits_kept_for_process_and_new_in_child() -> None:
    token = claim_token()
    assert re.fullmatch(r"[0-9a-f]{16}", token) and claim_token() == token
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # a forked worker inherits the parent's tokens: it must make its own
        try:
            os.write(write, f"{claim_token()} {claim_token()}".encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        first, second = pipe.read().split()
    os.waitpid(pid, 0)
    assert first == second != token and re.fullmatch(r"[0-9a-f]{16}", first)
    assert claim_token() == token


def test_this_worker_names_host_machine_pid_and_start_time() -> None:
    stat = proc_stat(os.getpid())
    assert stat is not None or not Path("/proc/self/stat").exists()
    assert this_worker() == {
        "host": socket.gethostname(),
        "machine": MACHINE,
        "pid": os.getpid(),
        "started": stat[1] if stat else None,
    }


@pytest.fixture
def sleeper() -> Iterator[tuple[subprocess.Popen[str], float]]:
    """A live child that renamed itself ``a) b c d`` (a command name with a parenthesis and spaces, as /proc shows
    it) and waits on its stdin; and the machine's uptime just before it started."""
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; open('/proc/self/comm', 'w').write('a) b c d'); print('ready', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        yield child, uptime
    finally:
        child.kill()
        child.wait()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_proc_stat_reads_state_and_start_time_past_command_name_with_parentheses(
    sleeper: tuple[subprocess.Popen[str], float],
) -> None:
    child, uptime_before = sleeper
    assert Path(f"/proc/{child.pid}/comm").read_text() == "a) b c d\n"
    stat = proc_stat(child.pid)
    assert stat is not None
    state, started = stat
    assert state in ("R", "S")  # on its way to its stdin, or asleep on it (not a word of its command name)
    # the start time, in clock ticks after boot: between the uptime before the child started and now
    seconds = int(started) / os.sysconf("SC_CLK_TCK")
    assert uptime_before - 1 <= seconds <= float(Path("/proc/uptime").read_text().split()[0]) + 1
    assert proc_stat(2**22 + 1) is None  # above the kernel's largest pid: no such process


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_live_process_alive_unless_pid_now_names_another(
    sleeper: tuple[subprocess.Popen[str], float],
) -> None:
    child, _ = sleeper
    stat = proc_stat(child.pid)
    assert stat is not None
    assert is_alive(child.pid, stat[1]) is True
    assert is_alive(child.pid, None) is True  # no start time to compare: alive
    assert is_alive(child.pid, str(int(stat[1]) + 1)) is False  # another process took the pid
    assert child.stdin is not None
    child.stdin.close()
    assert child.wait() == 0  # asking did not signal it


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_process_exists_alive_without_proc_and_dead_in_state_x(
    sleeper: tuple[subprocess.Popen[str], float], monkeypatch: pytest.MonkeyPatch
) -> None:
    child, _ = sleeper
    monkeypatch.setattr(liveness, "proc_stat", lambda pid: None)  # no /proc (macOS): the signal test decides
    assert is_alive(child.pid, "123") is True
    monkeypatch.setattr(liveness, "proc_stat", lambda pid: ("X", "123"))  # dead, being torn down
    assert is_alive(child.pid, "123") is False
    monkeypatch.setattr(liveness, "proc_stat", lambda pid: ("R", "123"))
    assert is_alive(child.pid, "123") is True


def test_on_windows_liveness_left_to_time_out(monkeypatch: pytest.MonkeyPatch) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        monkeypatch.setattr(liveness.os, "name", "nt")  # os.kill(pid, 0) would kill the process there
        assert is_alive(child.pid, None) is None
        monkeypatch.undo()
        assert is_alive(child.pid, None) is True
    finally:
        child.kill()
        child.wait()
