"""``lightning-tau find`` as OS processes, for the multi-process finder tests (journal file and PostgreSQL): the
commands, their output, and a way to catch a worker inside a trial without timing it (SIGSTOP, then look)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

#: a grid whose best point (1) is inside it on this task, so the grid extension adds nothing to it (the tests count
#: the trials of this grid)
GRID = ["--epochs", "3", "--fraction", "0.5", "--tau-epochs", "0.5", "1", "2", "--seeds", "0"]
KEYS = [(0.5, 0), (1.0, 0), (2.0, 0)]
#: how often the tests look at a study while they wait on it (a wait on observable state, not a timing)
POLL = 0.02


def default_sigint() -> None:
    """``preexec_fn`` for a child that a test interrupts with SIGINT: the default handler, as a terminal's Ctrl-C finds
    it. A job started with ``&`` from a non-interactive shell inherits SIGINT ignored, and Python then installs no
    ``KeyboardInterrupt`` handler: the test must not depend on how pytest itself was launched."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # exec keeps SIG_IGN, resets anything else to the default


def command(out: Path, json_path: Path, *extra: str) -> list[str]:
    argv = [*GRID, "--study", "s", "--out", str(out), "--json", str(json_path), "--no-plot", "--no-progress"]
    return [sys.executable, "-m", "lightning_tau", "find", *argv, *extra]


def run(argv: list[str], **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **env})


def finish(proc: subprocess.Popen[str], timeout: float = 300) -> tuple[str, str]:
    """``(stdout, stderr)`` of ``proc``, which must exit 0 within ``timeout`` seconds (else it is killed)."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"{proc.args!r} did not finish in {timeout:g} s: {err[-3000:]}") from None
    assert proc.returncode == 0, err[-3000:]
    return out, err


def suggestion(printed: str) -> str:
    return next(line for line in printed.splitlines() if line.startswith("Suggested tau_epoch:"))


def trained(study: optuna.Study) -> dict[tuple[float, int], list[FrozenTrial]]:
    """Per grid point, the trials a worker trained (a duplicate is failed before any training: no worker)."""
    out: dict[tuple[float, int], list[FrozenTrial]] = {}
    for trial in study.trials:
        if "worker" in trial.user_attrs:
            out.setdefault((trial.user_attrs["tau_epoch"], trial.user_attrs["seed"]), []).append(trial)
    return out


def overlapping(trials: Iterable[FrozenTrial]) -> list[tuple[int, int]]:
    """Pairs of trial numbers that were RUNNING at the same time (from their start and completion times)."""
    spans = [
        (t.number, t.datetime_start, t.datetime_complete or datetime.max)
        for t in trials
        if t.datetime_start is not None
    ]
    return [
        (a, b)
        for i, (a, start_a, end_a) in enumerate(spans)
        for b, start_b, end_b in spans[i + 1 :]
        if start_a < end_b and start_b < end_a
    ]


def _worker_pid(trial: FrozenTrial) -> int | None:
    worker = trial.user_attrs.get("worker")
    return worker.get("pid") if isinstance(worker, dict) else None


def stop_inside_a_trial(
    load: Callable[[], optuna.Study | None],
    *,
    pids: Callable[[], set[int]] | None = None,
    after_complete: int = 0,
    lock: Path | None = None,
    timeout: float = 240,
) -> tuple[int, FrozenTrial]:
    """Wait until a trial RUNNING in a worker (one of ``pids()``, if given) is seen with at least ``after_complete``
    complete trials, SIGSTOP that worker and return ``(pid, trial)`` once the trial is seen still RUNNING with the
    worker stopped (it cannot change any more). A trial that finished first, or a stop caught while the journal's
    ``lock`` file exists (a write in progress), is let go (SIGCONT) and the next is waited for. The caller must
    SIGCONT or SIGKILL the worker."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(POLL)
        study = load()
        if study is None:
            continue
        trials = study.get_trials(deepcopy=False)
        complete = sum(t.state == TrialState.COMPLETE for t in trials)
        running = [
            t
            for t in trials
            if t.state == TrialState.RUNNING and _worker_pid(t) and (pids is None or _worker_pid(t) in pids())
        ]
        if not running or complete < after_complete:
            continue
        pid = _worker_pid(running[0])
        assert pid is not None
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:
            continue
        again = load()
        trial = again.trials[running[0].number] if again is not None else None
        if trial is not None and trial.state == TrialState.RUNNING and not (lock is not None and lock.exists()):
            return pid, trial
        os.kill(pid, signal.SIGCONT)
    raise AssertionError(f"no worker was caught inside a trial in {timeout:g} s")


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 240) -> Any:
    """Poll ``condition()`` until it is truthy; its value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(POLL)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def own_group() -> None:
    """``preexec_fn`` for a child signalled as a terminal signals its job: SIGINT at its default
    (:func:`default_sigint`), in a process group of its own that ``os.killpg(child.pid, ...)`` reaches whole (the
    command, its worker server and its workers), and nothing else."""
    default_sigint()
    os.setpgid(0, 0)


def children(pid: int) -> list[int]:
    """The pids of ``pid``'s child processes (Linux ``/proc``; none once it has exited)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def importing_torch(pid: int) -> bool:
    """Whether process ``pid`` has torch's library mapped (it is importing torch, or has imported it)."""
    try:
        return "libtorch" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def logged_a_scalar(run: Path) -> bool:
    """Whether the TensorBoard folder of one trial holds a scalar: its fit has run an epoch, and is inside
    Lightning's fit (``run_trial``) as long as the trial is not complete."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(run))
    accumulator.Reload()
    return bool(accumulator.Tags()["scalars"])


def run_worker_here(payload: bytes) -> None:
    """A finder worker's whole life (``_worker_main``) in this process on ``payload``, as a worker process runs it:
    it must end by ``sys.exit(0)``. Its torch threads and its end's ignored SIGINT and SIGTERM are put back after."""
    import pytest
    import torch

    from lightning_tau.tuner.finder import _worker_main

    threads = torch.get_num_threads()
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}  # a worker ignores both at its end
    try:
        with pytest.raises(SystemExit) as ended:  # a worker process ends by sys.exit with its code
            _worker_main(payload, 1, dict(os.environ))
        assert ended.value.code == 0
    finally:
        torch.set_num_threads(threads)
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
