"""``TimescaleFinder`` and ``lightning-tau find`` stopped by a signal: SIGTERM outside a trial's Lightning fit
(waiting on a trial elsewhere, or holding a trial between its take and its fit), Ctrl-C inside a fit (Lightning turns
it into ``sys.exit(1)``; the finder turns it back), on a terminal too, and either signal at every moment of a
``--workers 2`` sweep (start-up, the enqueue, a worker started, inside the fits, the JSON written). The process exits
143 or 130 with one line and no traceback from any of its processes, and a trial it held is FAIL at once (not
RUNNING until its heartbeat goes stale), so another process trains it (real processes, real signals, real fits on
digits; the job-array scenario on a real PostgreSQL server). Each signal is sent on observable state, not a delay."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import optuna
import pytest
from finder_procs import (
    children,
    importing_torch,
    logged_a_scalar,
    overlapping,
    own_group,
    trained,
    wait_for,
)
from optuna.trial import TrialState

pytest.importorskip("sklearn")

#: Epochs no trial finishes before the test signals it: on a loaded 2-core machine a 400-epoch trial finished
#: between the moment seen and the worker's hand-back once ("1 complete" where none should be).
FOREVER = "4000"

#: One long trial per tau_epoch: it is still training when the test signals.
LONG = ["--epochs", FOREVER, "--fraction", "0.5", "--seeds", "0", "--no-progress", "--no-plot", "--study", "s"]


class Command:
    """``lightning-tau find`` in a process of its own, its output (stdout and stderr) read as it comes."""

    def __init__(self, *argv: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lightning_tau", "find", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def said(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def wait(self, timeout: float = 240) -> tuple[int, list[str]]:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"did not exit in {timeout:g} s: {self.lines[-20:]}") from None
        self._reader.join(timeout=30)
        return code, self.lines


def _journal_study(journal: Path) -> optuna.Study | None:
    if not journal.is_file():
        return None
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(journal)))
    try:
        return optuna.load_study(study_name="s", storage=storage)
    except KeyError:
        return None


def _running_pids(study: optuna.Study | None) -> set[int]:
    if study is None:
        return set()
    return {
        t.user_attrs["worker"]["pid"]
        for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
        if "worker" in t.user_attrs
    }


def _stopped_line(where: str, complete: int) -> str:
    return (
        f"lightning-tau find: error: stopped by SIGTERM. The study in {where} ({complete} complete) keeps its complete"
        " trials: run the same command again to resume."
    )


@pytest.mark.slow
def test_sigterm_while_waiting_on_trial_elsewhere_exits_143_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "out"
    journal = out / "study.journal"
    argv = [*LONG, "--tau-epochs", "4", "--out", str(out)]
    trainer = Command(*argv)
    wait_for(lambda: trainer.proc.pid in _running_pids(_journal_study(journal)), "the first command's trial")
    waiter = Command(*argv)
    wait_for(lambda: waiter.said("waiting for 1 trials training elsewhere") or waiter.proc.poll(), "the wait")
    waiter.proc.terminate()
    code, lines = waiter.wait()
    assert code == 143, lines
    assert not any("Traceback" in line for line in lines), lines
    assert lines[-1] == _stopped_line(str(journal), 0)
    trainer.proc.terminate()  # inside its fit: Lightning's own SIGTERM path
    code, lines = trainer.wait()
    assert code == 143 and lines[-1] == _stopped_line(str(journal), 0), lines
    study = _journal_study(journal)
    assert study is not None and [t.state for t in study.trials] == [TrialState.FAIL]


#: A Python fit whose model factory SIGTERMs its own process when it builds the second trial's model: the trial is
#: taken and tagged, but its Lightning fit (with Lightning's handler) has not started.
HELD_OUTSIDE_A_FIT = """
import os, signal, sys
from lightning_tau import TimescaleFinder
from lightning_tau.demos.digits import DigitsDataModule, DigitsMLP
built = []
def model():
    built.append(1)
    if len(built) == 3:  # the shapes probe, the first trial, then the second trial
        os.kill(os.getpid(), signal.SIGTERM)
    return DigitsMLP()
finder = TimescaleFinder(tau_epochs=(2, 8), seeds=(0,), root_dir=sys.argv[1], progress=False, study_name="s",
                         monitor="val/loss", trainer_kwargs={"max_epochs": 1, "accelerator": "cpu"})
finder.fit(model, datamodule=DigitsDataModule(train_size=1400, batch_size=64))
print("fit returned")
"""


@pytest.mark.slow
def test_sigterm_holding_trial_outside_fit_fails_it_and_exits_143(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", HELD_OUTSIDE_A_FIT, str(tmp_path)], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 143, done.stdout + done.stderr
    assert "fit returned" not in done.stdout and "Traceback" not in done.stderr, done.stderr
    study = _journal_study(tmp_path / "study.journal")
    assert study is not None
    assert [t.state for t in study.trials] == [TrialState.COMPLETE, TrialState.FAIL]
    assert study.trials[1].user_attrs["error"] == "stopped by SIGTERM: handed back"


@pytest.mark.slow
def test_job_array_on_postgres_with_two_processes_terminated_completes_every_key_once(
    tmp_path: Path, postgres: object
) -> None:
    """Four processes of the same command on one PostgreSQL study (one more than the grid: one waits); SIGTERM to
    the waiting one and to one inside a trial; the other two finish the grid, and a rerun trains nothing."""
    from pg_server import user_db
    from finder_study import StoredStudy

    role, password, db = user_db(postgres)  # type: ignore[arg-type]
    url = postgres.url(db, role, password)  # type: ignore[attr-defined]
    load = StoredStudy(postgres.url(db))  # type: ignore[attr-defined]
    argv = [*LONG[:1], "60", *LONG[2:], "--tau-epochs", "2", "8", "32", "--storage", url]
    procs = [Command(*argv, "--out", str(tmp_path / f"out{i}")) for i in range(4)]
    by_pid = {c.proc.pid: c for c in procs}
    waiting = wait_for(
        lambda: next((c for c in procs if c.said("waiting for 3 trials training elsewhere")), None),
        "a process waiting on the three others",
    )
    in_trial = next(c for c in procs if c.proc.pid in _running_pids(load()))
    waiting.proc.terminate()
    in_trial.proc.terminate()
    results = {pid: c.wait(timeout=400) for pid, c in by_pid.items()}
    shown = f"postgresql+psycopg2://{role}:***@/{db}?host="
    for pid, (code, lines) in results.items():
        assert not any("Traceback" in line for line in lines), lines
        if by_pid[pid] in (waiting, in_trial):
            assert code == 143, lines
            assert lines[-1].startswith(f"lightning-tau find: error: stopped by SIGTERM. The study in {shown}"), lines
        else:
            assert code == 0, lines
    rerun_code, rerun = Command(*argv, "--out", str(tmp_path / "rerun")).wait()
    assert rerun_code == 0 and "(3 of 3 trials were complete in the study before this command.)" in rerun, rerun
    study = load()
    assert study is not None
    assert not [t for t in study.trials if t.state == TrialState.RUNNING]
    done = trained(study)
    for key, trials in done.items():
        assert [t.state for t in trials].count(TrialState.COMPLETE) == 1, key
        assert not overlapping(trials), key  # never two processes on one key at once
    assert sorted(done) == [(2.0, 0), (8.0, 0), (32.0, 0)]
    stopped = [t for t in study.trials if t.state == TrialState.FAIL and "duplicate_of" not in t.user_attrs]
    assert [t.user_attrs.get("error") for t in stopped] == ["stopped by SIGTERM: handed back"], stopped


# --- Ctrl-C inside a fit, and either signal at every moment of a --workers sweep ------------------------------------

#: The exit code and the word of the one line each signal ends the command with.
ENDED_BY = {signal.SIGINT: (130, "interrupted"), signal.SIGTERM: (143, "stopped by SIGTERM")}
#: What each signal leaves as the ``error`` of a trial the command held.
HANDED_BACK = {signal.SIGINT: "interrupted (Ctrl-C): handed back", signal.SIGTERM: "stopped by SIGTERM: handed back"}
#: Two trials that outlast the test (400 epochs), one per process of ``--workers 2``.
TWO = ["--fraction", "0.5", "--tau-epochs", "2", "8", "--seeds", "0", "--no-progress", "--no-plot", "--study", "s"]


class Job:
    """``lightning-tau find`` as a terminal's job: a process group of its own (the command, its worker server and
    its workers), SIGINT at its default, stdout and stderr read apart as they come."""

    def __init__(self, out: Path, *argv: str) -> None:
        self.out, self.journal, self.json = out, out / "study.journal", out.parent / "result.json"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lightning_tau", "find", *TWO, *argv, "--out", str(out), "--json", str(self.json)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
            preexec_fn=own_group,
        )
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(stream, lines), daemon=True)
            for stream, lines in ((self.proc.stdout, self.stdout), (self.proc.stderr, self.stderr))
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: object, lines: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            lines.append(line.rstrip("\n"))

    def study(self) -> optuna.Study | None:
        return _journal_study(self.journal)

    def send(self, signum: int, group: bool) -> None:
        """``signum`` to the whole job (a terminal's Ctrl-C) or to the command's process alone (``kill``)."""
        if group:
            os.killpg(self.proc.pid, signum)
        else:
            self.proc.send_signal(signum)

    def wait(self, timeout: float = 300) -> int:
        """The exit code, once every process of the job has closed the output (none left running)."""
        try:
            self.proc.wait(timeout=timeout)
            for reader in self._readers:
                reader.join(timeout=timeout)
                assert not reader.is_alive(), f"a process of the job still holds its output: {self.stderr[-20:]}"
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
        return self.proc.returncode


def _ended_in_one_line(signum: int, code: int, stdout: list[str], stderr: list[str]) -> None:
    """Exit code and line of ``signum``, and no traceback from any process of the command."""
    expected, word = ENDED_BY[signum]
    assert not [line for line in stdout + stderr if "Traceback" in line or "KeyboardInterrupt" in line], stdout + stderr
    assert code == expected, (code, stderr[-20:])
    said = [line for line in stderr if line.startswith("lightning-tau find:")]
    assert len(said) == 1 and word in said[0] and said == stderr[-1:], stderr[-20:]


def _fits_running(job: Job, count: int) -> bool:
    """Whether ``count`` trials are inside their fits (each has logged a scalar and none is complete)."""
    runs = [run for run in (job.out / "tb").glob("*/*/") if logged_a_scalar(run)]
    study = job.study()
    return len(runs) >= count and study is not None and not study.get_trials(states=(TrialState.COMPLETE,))


def _server_importing(job: Job) -> bool:
    """Whether the command's worker server (its forkserver child) has started importing torch."""
    for pid in children(job.proc.pid):
        try:
            forkserver = b"forkserver" in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if forkserver and importing_torch(pid):
            return True
    return False


def _worker_started(job: Job) -> bool:
    """Whether a worker process (not the command's own) holds a trial."""
    study = job.study()
    return study is not None and any(
        t.user_attrs.get("worker", {}).get("pid") not in (None, job.proc.pid)
        for t in study.get_trials(states=(TrialState.RUNNING,))
    )


#: The moments of a ``--workers 2`` sweep a signal is sent at, each seen from outside: the epochs its command trains
#: (the JSON's is short: it must finish) and when it is reached.
MOMENTS: dict[str, tuple[str, Callable[[Job], object]]] = {
    "the worker server imports torch": (FOREVER, _server_importing),
    "trials enqueued": (FOREVER, lambda job: (study := job.study()) is not None and study.trials),
    "a worker holds a trial": (FOREVER, _worker_started),
    "both processes inside a fit": (FOREVER, lambda job: _fits_running(job, 2)),
    "the JSON written": ("1", lambda job: job.json.is_file()),
}


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="watches /proc (Linux)")
@pytest.mark.parametrize(("workers", "group"), [(1, False), (2, False), (2, True)])
def test_ctrl_c_inside_fit_hands_trials_back_and_exits_130(tmp_path: Path, workers: int, group: bool) -> None:
    """Lightning ends a fit on Ctrl-C with ``sys.exit(1)``: exit 1, no line, the trial FAIL with ``SystemExit: 1``,
    and (to the command's process alone) its workers training on. Sent once every process is inside a fit."""
    job = Job(tmp_path / "out", "--epochs", FOREVER, "--workers", str(workers))
    wait_for(lambda: _fits_running(job, workers) or job.proc.poll() is not None, "every process inside a fit")
    job.send(signal.SIGINT, group=group)
    code = job.wait()
    _ended_in_one_line(signal.SIGINT, code, job.stdout, job.stderr)
    assert job.stderr[-1] == (
        f"lightning-tau find: error: interrupted. The study in {job.journal} (0 complete) keeps its complete trials:"
        " run the same command again to resume."
    )
    study = job.study()
    assert study is not None
    held = [t.user_attrs.get("error") for t in study.trials if t.state != TrialState.WAITING]
    assert held == [HANDED_BACK[signal.SIGINT]] * workers, [(t.state, t.user_attrs.get("error")) for t in study.trials]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="watches /proc (Linux)")
def test_ctrl_c_typed_on_terminal_inside_fit_exits_130_in_one_line(tmp_path: Path) -> None:
    """The command on a pseudo-terminal of its own (its session's foreground job); the terminal's ^C byte makes the
    kernel SIGINT every process of that job: the command, its worker server and its worker."""
    import pty

    out = tmp_path / "out"
    argv = [sys.executable, "-m", "lightning_tau", "find", *TWO, "--epochs", FOREVER, "--workers", "2"]
    argv += ["--out", str(out)]
    pid, terminal = pty.fork()
    if pid == 0:  # the child: the session leader on the terminal, SIGINT at its default
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.execv(sys.executable, argv)
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                chunk = os.read(terminal, 4096)
            except OSError as err:  # EIO: every process has closed the terminal
                assert err.errno == errno.EIO
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    job = Job.__new__(Job)  # for its study and fits only: this command is not its child process
    job.out, job.journal = out, out / "study.journal"
    status = None
    try:
        wait_for(lambda: _fits_running(job, 2), "both processes inside a fit")
        os.write(terminal, b"\x03")  # ^C
        _, status = os.waitpid(pid, 0)
        reader.join(timeout=300)
        assert not reader.is_alive(), "a process of the job still holds the terminal"
    finally:
        if status is None:  # the test failed first: end the job (the pty's session leader leads its group)
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(terminal)
    printed = b"".join(chunks).decode(errors="replace").replace("^C", "").replace("\r", "").splitlines()
    lines = [line for line in printed if line.strip()]
    _ended_in_one_line(signal.SIGINT, os.waitstatus_to_exitcode(status), [], lines)
    study = job.study()
    assert study is not None
    assert [t.user_attrs.get("error") for t in study.trials] == [HANDED_BACK[signal.SIGINT]] * 2


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="watches /proc (Linux)")
@pytest.mark.parametrize("moment", list(MOMENTS))
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_at_any_moment_of_two_worker_sweep_one_line_and_code(
    tmp_path: Path, moment: str, signum: int
) -> None:
    """SIGINT to the whole job (a terminal's Ctrl-C reaches the worker server too: it printed a traceback while it
    imported torch), SIGTERM to the command's process alone (a scheduler's ``kill``: it exited -15, no line, just
    after the JSON). No trial is left RUNNING: each one held is handed back. After the JSON the command may have
    finished first: then it exits 0 with its output whole and no signal line."""
    epochs, reached = MOMENTS[moment]
    job = Job(tmp_path / "out", "--epochs", epochs, "--workers", "2")
    wait_for(lambda: reached(job) or job.proc.poll() is not None, moment)
    assert job.proc.poll() is None or moment == "the JSON written", job.stderr[-20:]
    job.send(signum, group=signum == signal.SIGINT)
    code = job.wait()
    if moment == "the JSON written" and code == 0:  # it had printed its last line: the signal came too late to matter
        assert not [line for line in job.stdout + job.stderr if "Traceback" in line], job.stderr
        assert not [line for line in job.stderr if line.startswith("lightning-tau find:")], job.stderr
        assert job.stdout[-1].startswith("TensorBoard logs:"), job.stdout
    else:
        _ended_in_one_line(signum, code, job.stdout, job.stderr)
    study = job.study()
    if study is not None:
        running = study.get_trials(states=(TrialState.RUNNING,))
        assert not running, [(t.number, t.user_attrs) for t in running]
        assert {t.user_attrs["error"] for t in study.get_trials(states=(TrialState.FAIL,))} <= {HANDED_BACK[signum]}
