"""``lightning-tau find`` as several OS processes on one journal file: a shared grid trained once with trials that
really run at the same time, and a worker SIGKILLed mid-trial whose grid point the next run trains (real Optuna,
real Lightning fits on digits). No timing: a worker is caught inside a trial by stopping it (SIGSTOP) and looking
at the study (see ``finder_procs.stop_inside_a_trial``)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import optuna
import pytest
from finder_procs import (
    KEYS,
    command,
    finish,
    overlapping,
    run,
    stop_inside_a_trial,
    suggestion,
    trained,
    wait_for,
)
from optuna.trial import TrialState

pytest.importorskip("sklearn")


def _study(out: Path) -> optuna.Study | None:
    """The study ``s`` in ``out``'s journal, or ``None`` before a command has created it."""
    if not (out / "study.journal").exists():
        return None
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(out / "study.journal")))
    try:
        return optuna.load_study(study_name="s", storage=storage)
    except KeyError:  # not created yet
        return None


@pytest.mark.slow
def test_two_commands_one_with_two_workers_share_the_grid_and_train_at_once(
    tmp_path: Path, finder_single: tuple[dict[str, Any], str]
) -> None:
    out = tmp_path / "out"
    procs = [run(command(out, tmp_path / "a.json", "--workers", "2")), run(command(out, tmp_path / "b.json"))]
    # hold the first worker seen inside a trial until another trial runs: two trials at once, whatever the speeds
    pid, held = stop_inside_a_trial(lambda: _study(out), lock=out / "study.journal.lock")
    try:
        wait_for(
            lambda: any(
                t.number != held.number and t.state in (TrialState.RUNNING, TrialState.COMPLETE)
                for t in _study(out).trials  # type: ignore[union-attr]
            ),
            "another trial to start while the first is held",
        )
    finally:
        os.kill(pid, signal.SIGCONT)
    printed = [finish(proc)[0] for proc in procs]
    expected, line = finder_single
    for name, text in zip(("a", "b"), printed):
        assert json.loads((tmp_path / f"{name}.json").read_text()) == expected
        assert suggestion(text) == line
    study = _study(out)
    assert study is not None
    done = trained(study)
    assert sorted(done) == KEYS
    assert all(len(trials) == 1 and trials[0].state == TrialState.COMPLETE for trials in done.values()), done
    assert overlapping(t for trials in done.values() for t in trials)  # two RUNNING intervals overlap
    assert len({t[0].user_attrs["worker"]["pid"] for t in done.values()}) >= 2
    assert len(list((out / "tb" / "s").iterdir())) == 3  # one TensorBoard folder per trial


@pytest.mark.slow
def test_a_worker_killed_mid_trial_the_next_run_completes_the_grid(
    tmp_path: Path, finder_single: tuple[dict[str, Any], str]
) -> None:
    out = tmp_path / "out"
    proc = run(command(out, tmp_path / "killed.json"))
    # stopped inside its second trial (not in a journal write), then killed: the trial stays RUNNING, its worker gone
    pid, victim = stop_inside_a_trial(
        lambda: _study(out), pids=lambda: {proc.pid}, after_complete=1, lock=out / "study.journal.lock"
    )
    os.kill(pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    study = _study(out)
    assert study is not None and study.trials[victim.number].state == TrialState.RUNNING
    done_before = {t.number for t in study.trials if t.state == TrialState.COMPLETE}
    assert done_before

    printed, _ = finish(run(command(out, tmp_path / "again.json")))
    expected, line = finder_single
    assert json.loads((tmp_path / "again.json").read_text()) == expected and suggestion(printed) == line
    study = _study(out)
    assert study is not None
    assert study.trials[victim.number].state == TrialState.FAIL  # the killed trial, handed on and counted once
    done = trained(study)
    for key, trials in done.items():
        complete = [t for t in trials if t.state == TrialState.COMPLETE]
        assert len(complete) == 1, key
        if complete[0].number in done_before:
            assert len(trials) == 1  # finished before the kill: never trained again
    assert sorted(done) == KEYS
    assert len(done[(victim.user_attrs["tau_epoch"], 0)]) == 2  # the killed one and its retraining
