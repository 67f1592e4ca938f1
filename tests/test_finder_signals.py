"""``TimescaleFinder`` and ``lightning-tau find`` stopped by SIGTERM outside a trial's Lightning fit: waiting on a
trial elsewhere, or holding a trial between its take and its fit. The process exits 143 with one line, and a trial it
held is FAIL at once (not RUNNING until its heartbeat goes stale), so another process trains it (real processes,
real signals, real fits on digits; the job-array scenario on a real PostgreSQL server)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import optuna
import pytest
from finder_procs import overlapping, trained, wait_for
from optuna.trial import TrialState

pytest.importorskip("sklearn")

#: One long trial per tau_epoch: it is still training when the test signals.
LONG = ["--epochs", "400", "--fraction", "0.5", "--seeds", "0", "--no-progress", "--no-plot", "--study", "s"]


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
def test_sigterm_while_waiting_on_a_trial_elsewhere_exits_143_in_one_line(tmp_path: Path) -> None:
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
def test_sigterm_holding_a_trial_outside_its_fit_fails_it_and_exits_143(tmp_path: Path) -> None:
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
def test_a_job_array_on_postgres_with_two_processes_terminated_completes_every_key_once(
    tmp_path: Path, postgres: object
) -> None:
    """Four processes of the same command on one PostgreSQL study (one more than the grid: one waits); SIGTERM to
    the waiting one and to one inside a trial; the other two finish the grid, and a rerun trains nothing."""
    from test_finder_postgres import _Study, _user_db

    role, password, db = _user_db(postgres)  # type: ignore[arg-type]
    url = postgres.url(db, role, password)  # type: ignore[attr-defined]
    load = _Study(postgres.url(db))  # type: ignore[attr-defined]
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
