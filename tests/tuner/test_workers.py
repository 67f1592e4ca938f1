"""``lightning_tau.tuner.workers``: the sweep's SIGTERM handling (raised at once outside a Lightning fit, left to
Lightning's inside one, once only) and why a stopping process hands its trials back (real signals, in-process); the
parts that start no process: the start method, the cores and threads per worker, the environment a worker takes,
and what :class:`Workers` reports (its processes stood in for by objects with a process's ``pid``, ``exitcode``,
``is_alive`` and ``terminate``). Workers started for real: ``test_finder_workers.py``."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from lightning_tau.tuner import workers
from lightning_tau.tuner.workers import (
    START_ENV,
    UNGUARDED_EXIT,
    Workers,
    cores,
    importing_main,
    preloaded,
    runs_at_import,
    sigint_raises,
    sigterm_raises,
    start_method,
    threads_line,
    threads_per_process,
    torch_threads,
    unguarded_call,
    unguarded_script,
    worker_environ,
)


class Stopped(Exception):
    pass


def test_sigterm_inside_block_raises_at_once_and_handler_restored_after() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Stopped), sigterm_raises(Stopped):
        signal.raise_signal(signal.SIGTERM)
        pytest.fail("SIGTERM did not stop the block")
    assert signal.getsignal(signal.SIGTERM) is before


def test_sigterm_under_handler_chains_ours_leaves_stop_to_it() -> None:
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


def test_second_sigterm_while_first_handled_ignored() -> None:
    handled = []
    with pytest.raises(Stopped), sigterm_raises(Stopped):
        try:
            signal.raise_signal(signal.SIGTERM)
        except Stopped:
            signal.raise_signal(signal.SIGTERM)  # the hand-back is not cut short
            handled.append(True)
            raise
    assert handled == [True]


def test_sigint_inside_block_raises_once_then_ignored_and_handler_restored() -> None:
    # Python's default, as in a terminal (a background job, e.g. `make test &`, starts with SIGINT ignored)
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        raised = 0
        with sigint_raises():
            try:
                signal.raise_signal(signal.SIGINT)
            except KeyboardInterrupt:
                raised += 1
            signal.raise_signal(signal.SIGINT)  # while the first is handled: ignored
        assert raised == 1 and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, inherited)


def test_sigint_ignored_block_starts_stays_ignored() -> None:
    """A background job starts with SIGINT ignored: the sweep does not start hearing it."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with sigint_raises():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            signal.raise_signal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, before)


def test_worker_takes_starting_processs_environment_without_what_it_removed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TAU_TEST_REMOVED", "inherited from the server")
    monkeypatch.setenv("TAU_TEST_CHANGED", "old")
    caller = {k: v for k, v in os.environ.items() if k != "TAU_TEST_REMOVED"} | {"TAU_TEST_CHANGED": "new"}
    worker_environ(caller)
    assert "TAU_TEST_REMOVED" not in os.environ
    assert dict(os.environ) == caller


# --- the start method ----------------------------------------------------------------------------------------------


def test_start_method_forkserver_on_linux_else_spawn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(START_ENV, raising=False)
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["fork", "spawn", "forkserver"])
    monkeypatch.setattr(sys, "platform", "linux")
    assert start_method() == "forkserver"
    monkeypatch.setenv(START_ENV, "  ")  # blank: the default
    assert start_method() == "forkserver"
    monkeypatch.setattr(sys, "platform", "darwin")
    assert start_method() == "spawn"
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["fork", "spawn"])
    assert start_method() == "spawn"


def test_start_method_variable_read_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["fork", "spawn", "forkserver"])
    monkeypatch.setenv(START_ENV, " spawn ")
    assert start_method() == "spawn"
    monkeypatch.setenv(START_ENV, "forkserver")
    assert start_method() == "forkserver"
    monkeypatch.setenv(START_ENV, "fork")
    with pytest.raises(ValueError) as info:
        start_method()
    assert str(info.value) == (
        "`LIGHTNING_TAU_WORKER_START=fork` is not valid: use 'spawn', or 'forkserver' where this platform has it"
        " (it has spawn, forkserver)."
    )
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])  # no forkserver here
    monkeypatch.setenv(START_ENV, "forkserver")
    with pytest.raises(
        ValueError, match=r"^`LIGHTNING_TAU_WORKER_START=forkserver` is not valid: .* \(it has spawn\)\.$"
    ):
        start_method()


def test_context_has_start_method_and_forkserver_preloads_finder(monkeypatch: pytest.MonkeyPatch) -> None:
    from multiprocessing import forkserver

    monkeypatch.setenv(START_ENV, "spawn")
    assert workers._context().get_start_method() == "spawn"
    if "forkserver" in multiprocessing.get_all_start_methods():
        monkeypatch.setattr(forkserver._forkserver, "_preload_modules", ["__main__"])  # what it holds unset
        monkeypatch.setenv(START_ENV, "forkserver")
        assert workers._context().get_start_method() == "forkserver"
        # the server's preload list: private to multiprocessing, read here only to see that it was set
        assert forkserver._forkserver._preload_modules == list(workers.PRELOAD)
        assert workers.PRELOAD[0] == "lightning_tau.tuner.workers"  # first: it holds SIGINT in the server


# --- cores and threads ---------------------------------------------------------------------------------------------


def test_cores_affinity_else_cpu_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 5}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert cores() == 3
    monkeypatch.delattr(os, "sched_getaffinity")  # not Linux
    assert cores() == 16
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert cores() == 1


@pytest.mark.parametrize(
    ("current", "count", "threads"), [(16, 2, 4), (3, 2, 3), (16, 3, 2), (16, 8, 1), (16, 16, 1), (0, 1, 1)]
)
def test_threads_per_worker_divide_cores_capped_by_current_setting(
    monkeypatch: pytest.MonkeyPatch, current: int, count: int, threads: int
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    assert threads_per_process(current, count) == threads


def test_threads_setting_number_as_given_auto_cores_share(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    assert torch_threads(1, current=16, workers=1) == 1  # the default: one thread whatever the cores
    assert torch_threads(3, current=1, workers=4) == 3  # a number is the user's, not capped
    assert torch_threads("auto", current=16, workers=2) == 4
    assert torch_threads("auto", current=2, workers=1) == 2


def test_threads_line_names_setting_and_other_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    assert threads_line(1, 1, 2) == (
        "torch threads per process: 1 (threads=1; one is the default: a small model's trials train about as fast on"
        " one, and on a busy machine more threads ran 5-30x slower; threads='auto' would give 4 here)."
    )
    assert threads_line("auto", 8, 1) == (
        "torch threads per process: 8 (threads='auto': 8 cores // 1 worker, at most what torch was set to)."
    )
    assert "8 cores // 2 workers" in threads_line("auto", 4, 2)


# --- what a worker process knows about itself ----------------------------------------------------------------------


def test_preloaded_whether_another_process_imported_module(monkeypatch: pytest.MonkeyPatch) -> None:
    assert preloaded() is False
    monkeypatch.setattr(workers, "_IMPORTED_IN", os.getpid() + 1)  # as in a fork of the server
    assert preloaded() is True


def test_importing_main_multiprocessings_inheriting_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    process = multiprocessing.process.current_process()
    assert not hasattr(process, "_inheriting") and importing_main() is False
    monkeypatch.setattr(process, "_inheriting", 1, raising=False)  # set by multiprocessing while a worker bootstraps
    assert importing_main() is True
    monkeypatch.setattr(process, "_inheriting", 0)
    assert importing_main() is False


def test_unguarded_script_line_names_worker_count_and_guard() -> None:
    assert unguarded_script(3) == (
        "`TimescaleFinder(workers=3)`: the worker processes import your script, which starts the finder again at"
        ' import; put the script\'s code under `if __name__ == "__main__":`.'
    )


# --- what Workers reports ------------------------------------------------------------------------------------------


class Ended:
    """Stands in for a started worker process: its pid, exit code and liveness, and whether it was terminated."""

    def __init__(self, pid: int, exitcode: int | None, alive: bool = False, refuse: Exception | None = None) -> None:
        self.pid, self.exitcode, self._alive, self.terminated, self.refuse = pid, exitcode, alive, False, refuse

    def is_alive(self) -> bool:
        return self._alive

    def terminate(self) -> None:
        if self.refuse is not None:
            raise self.refuse
        self.terminated = True

    def join(self) -> None:
        pass


def _no_workers(monkeypatch: pytest.MonkeyPatch) -> Workers:
    """Workers whose start fails at once (an invalid start method): a starting thread and no process."""
    monkeypatch.setenv(START_ENV, "fork")
    started = Workers(print, (), count=2, name="tau-worker")
    started.join()
    return started


def test_cannot_start_reported_and_nothing_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    started = _no_workers(monkeypatch)
    [error] = started.errors
    assert error.startswith("`LIGHTNING_TAU_WORKER_START=fork` is not valid")
    assert started.processes == [] and started.exit_codes() == [] and not started.alive() and not started.unguarded()
    assert started.problems() == [f"{error}; trained without it."]


def test_report_nonzero_exit_codes_and_unguarded_script(monkeypatch: pytest.MonkeyPatch) -> None:
    started = _no_workers(monkeypatch)
    started.errors.clear()
    started.processes += [Ended(11, 0), Ended(12, 1), Ended(13, -15)]
    assert started.exit_codes() == [(11, 0), (12, 1), (13, -15)]
    assert started.problems() == [
        "worker process 12 ended with exit code 1.",
        "worker process 13 ended with exit code -15.",
    ]
    assert not started.unguarded()
    started.processes.append(Ended(14, UNGUARDED_EXIT))
    assert started.unguarded()


def test_alive_while_one_runs_and_terminate_signals_only_those(monkeypatch: pytest.MonkeyPatch) -> None:
    started = _no_workers(monkeypatch)
    done, running = Ended(11, 0), Ended(12, None, alive=True)
    started.processes.append(done)
    assert not started.alive()
    started.processes.append(running)
    assert started.alive()
    started.terminate()
    assert running.terminated and not done.terminated and started._stopped.is_set()


@pytest.mark.parametrize("refuse", [ProcessLookupError("gone meanwhile"), ValueError("process object is closed")])
def test_terminate_goes_on_past_worker_ended_meanwhile(
    monkeypatch: pytest.MonkeyPatch, refuse: Exception
) -> None:
    started = _no_workers(monkeypatch)
    last = Ended(13, None, alive=True)
    started.processes += [Ended(12, None, alive=True, refuse=refuse), last]
    started.terminate()
    assert last.terminated


# --- the main-guard check, made in the main process before any trial trains ----------------------------------------


@pytest.mark.parametrize(
    ("source", "line", "runs"),
    [
        ("import x\nx.fit()\n", 2, True),
        ("def main():\n    x.fit()\n\nmain()\n", 4, True),  # the call in a function the module calls
        ("with x:\n    try:\n        x.fit()\n    finally:\n        pass\n", 3, True),
        ("if __name__ == '__main__':\n    x.fit()\n", 2, False),
        ("def main():\n    x.fit()\n\nif __name__ == '__main__':\n    main()\n", 5, False),
        ("if RANK == 0:\n    x.fit()\n", 2, False),  # another condition: not sure, not claimed
        ("for i in range(2):\n    x.fit()\n", 2, False),
        ("try:\n    pass\nexcept E:\n    x.fit()\n", 4, False),
        ("x.fit(\n", 1, False),  # does not parse
        ("import x\n", 5, False),  # no such line
    ],
)
def test_statement_runs_at_import_only_through_no_condition(source: str, line: int, runs: bool) -> None:
    assert runs_at_import(source, line) is runs


def test_call_unguarded_only_from_main_module_workers_import(monkeypatch: pytest.MonkeyPatch) -> None:
    """The call site is read from the stack: the main module's top-level frame and the script's source."""
    script = "import sys\nframe = sys._getframe()\n"
    main = types.ModuleType("__main__")
    main.__file__ = "/nowhere/sweep.py"
    main.__spec__ = None
    monkeypatch.setitem(sys.modules, "__main__", main)
    monkeypatch.setattr(workers.linecache, "getlines", lambda path, module_globals=None: script.splitlines(True))
    exec(compile(script, "/nowhere/sweep.py", "exec"), vars(main))
    assert unguarded_call(vars(main)["frame"]) is True
    main.__spec__ = types.SimpleNamespace(name="pkg.__main__")  # `python -m pkg`: the workers do not import it
    assert unguarded_call(vars(main)["frame"]) is False
    main.__spec__ = types.SimpleNamespace(name="pkg.sweep")  # `python -m pkg.sweep`: they do
    assert unguarded_call(vars(main)["frame"]) is True
    guarded = "import sys\nif __name__ == '__main__':\n    frame = sys._getframe()\n"
    monkeypatch.setattr(workers.linecache, "getlines", lambda path, module_globals=None: guarded.splitlines(True))
    exec(compile(guarded, "/nowhere/sweep.py", "exec"), vars(main))
    assert unguarded_call(vars(main)["frame"]) is False
    assert unguarded_call() is False  # this test is called by pytest, not by a main module's top-level code


#: A user's script with no ``if __name__ == "__main__":`` and ``workers=2``: each worker would run it again as it
#: imports it.
UNGUARDED = """
from lightning_tau.demos.digits import DigitsDataModule, DigitsMLP
from lightning_tau.tuner.finder import TimescaleFinder

finder = TimescaleFinder(
    fraction=0.5, tau_epochs=(2, 4), seeds=(0,), monitor="val/loss", root_dir="out", workers=2,
    trainer_kwargs={"max_epochs": 1, "accelerator": "cpu", "devices": 1}, progress=False, verbose=False,
)
finder.fit(DigitsMLP, datamodule=DigitsDataModule(train_size=400, batch_size=64))
print("the script went on")
"""


@pytest.mark.slow
def test_script_without_main_guard_stops_before_any_trial_trains(tmp_path: Path) -> None:
    """It used to train the grid in the main process while its worker found the finder at import, and only then
    stop: here it stops with the one line and no trial was trained (no study written, no TensorBoard run)."""
    pytest.importorskip("sklearn")
    (tmp_path / "sweep.py").write_text(UNGUARDED)
    env = {k: v for k, v in os.environ.items() if k != START_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[2]), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "sweep.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240
    )
    printed = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode == 1
    assert printed == [unguarded_script(2)], printed
    assert not (tmp_path / "out" / "tb").exists() and not (tmp_path / "out" / "study.journal").exists()


def test_sigint_once_raises_the_first_and_ignores_the_rest_for_good() -> None:
    """A worker's Ctrl-C comes twice (the terminal's, the main process's forward): one KeyboardInterrupt, also after
    the block that handled the first has ended."""
    code = (
        "import signal\n"
        "from lightning_tau.tuner.workers import sigint_once\n"
        "sigint_once()\n"
        "try:\n"
        "    signal.raise_signal(signal.SIGINT)\n"
        "except KeyboardInterrupt:\n"
        "    print('raised once')\n"
        "signal.raise_signal(signal.SIGINT)\n"
        "signal.raise_signal(signal.SIGINT)\n"
        "print('then ignored')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.split("\n")[:2], done.stderr) == (0, ["raised once", "then ignored"], "")


def test_sigint_seen_after_a_swallowed_first_sigint() -> None:
    """The first SIGINT's KeyboardInterrupt swallowed on its way (a library's bare ``except``) and the second ignored:
    ``sigint_seen()`` still says the worker was interrupted, so its trial loop stops."""
    code = (
        "import signal\n"
        "from lightning_tau.tuner.workers import sigint_once, sigint_seen\n"
        "sigint_once()\n"
        "print(sigint_seen())\n"
        "try:\n"
        "    signal.raise_signal(signal.SIGINT)\n"
        "except BaseException:\n"
        "    pass\n"
        "signal.raise_signal(signal.SIGINT)\n"
        "print(sigint_seen())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.split(), done.stderr) == (0, ["False", "True"], "")
