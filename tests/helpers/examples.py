"""Run a script of ``examples/`` as a user would (a subprocess) and return what it printed."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ddp_harness import clean_env, on_free_port

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


#: Seconds before a single-process example is killed (each takes a few seconds at these sizes).
TIMEOUT = 180

#: Seconds the processes an example launched (a DDP run's other ranks) get to end once the example itself has ended.
_GRACE = 20


def run_example(name: str, tmp_path: Path, *args: str, timeout: float = TIMEOUT) -> str:
    """Run ``examples/<name>`` in ``tmp_path`` and return stdout + stderr; fail with the output if it fails.

    The example runs in a session of its own, with every process it starts: a DDP example's launcher (rank zero)
    starts the other ranks itself, and they print to the same files. The run fails, with all that was printed, when
    the example fails, runs past ``timeout`` or leaves a process running :data:`_GRACE` seconds after it ended (a rank
    waiting on a rank zero that died would wait for the process group's 30 minutes); the whole session is killed
    then, after Python's fault handler has printed where every thread of every process stood. A run whose rank zero
    found the port it had picked taken by another process is started again (a new port):
    :func:`ddp_harness.on_free_port`.
    """
    return on_free_port(lambda: _run_once(name, tmp_path, args, timeout))


def _run_once(name: str, tmp_path: Path, args: tuple[str, ...], timeout: float) -> str:
    """One run: stdout + stderr, or an ``AssertionError`` saying what went wrong, with them."""
    env = clean_env()
    env["PYTHONFAULTHANDLER"] = "1"  # SIGABRT prints every thread's Python stack before the process dies
    env.pop("PYTHONUNBUFFERED", None)  # output to a file is block-buffered, as a user's pipe: an example must flush
    stdout_path, stderr_path = tmp_path / f"{name}.stdout", tmp_path / f"{name}.stderr"
    with stdout_path.open("w") as out, stderr_path.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, str(EXAMPLES / name), *args],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=err,
            start_new_session=True,  # its own session: the ranks it launches are found and killed with it
        )
        problem = None
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            problem = f"still running after {timeout:g} s (killed)"
        else:
            if proc.returncode:
                problem = f"failed ({proc.returncode})"
            left = _wait_session(proc.pid, _GRACE)
            if left and problem is None:
                problem = f"left {len(left)} process(es) running {_GRACE} s after it ended (killed)"
        _kill_session(proc.pid)
        if proc.poll() is None:
            proc.wait()
    output = stdout_path.read_text() + stderr_path.read_text()
    if problem is not None:
        raise AssertionError(f"examples/{name} {' '.join(args)} {problem}:\n{output}")
    return output


def session_processes(sid: int) -> list[int]:
    """The live (not zombie) processes of session ``sid``, read from ``/proc`` (Linux)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # the process ended while we looked
            continue
        # pid (comm) state ppid pgrp session ...; comm may hold spaces and parentheses
        fields = text[text.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[3]) == sid:
            pids.append(int(stat.parent.name))
    return pids


def _wait_session(sid: int, grace: float) -> list[int]:
    """Wait up to ``grace`` seconds for session ``sid`` to have no live process; those left."""
    deadline = time.monotonic() + grace
    while (left := session_processes(sid)) and time.monotonic() < deadline:
        time.sleep(0.1)  # no handle to wait on: the other ranks are the launcher's children, not ours
    return left


def _kill_session(sid: int) -> None:
    """Dump the stacks of the session's live processes (SIGABRT, the fault handler), then kill what is left."""
    left = session_processes(sid)
    for pid in left:
        _signal(pid, signal.SIGABRT)
    if left:
        _wait_session(sid, 5)  # the fault handler writes, then the process dies of SIGABRT
    for pid in session_processes(sid):
        _signal(pid, signal.SIGKILL)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
        os.kill(pid, sig)
