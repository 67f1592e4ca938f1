"""``lightning-tau find`` as several OS processes on one journal file: a shared grid trained once, and a worker
SIGKILLed mid-trial whose grid point the next run trains (real Optuna, real Lightning fits on digits)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.trial import TrialState

pytest.importorskip("sklearn")

GRID = ["--epochs", "3", "--fraction", "0.5", "--tau-epochs", "2", "4", "8", "--seeds", "0"]
KEYS = [(2.0, 0), (4.0, 0), (8.0, 0)]


def _command(out: Path, json_path: Path, *extra: str) -> list[str]:
    argv = [*GRID, "--study", "s", "--out", str(out), "--json", str(json_path), "--no-plot", "--no-progress"]
    return [sys.executable, "-m", "lightning_tau", "find", *argv, *extra]


def _run(command: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))


def _finish(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    return out


def _suggestion(printed: str) -> str:
    return next(line for line in printed.splitlines() if line.startswith("Suggested tau_epoch:"))


def _study(out: Path) -> optuna.Study:
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(out / "study.journal")))
    return optuna.load_study(study_name="s", storage=storage)


def _trained(study: optuna.Study) -> dict[tuple[float, int], list[Any]]:
    """Per grid point, the trials a worker trained (a duplicate is failed before any training: no worker)."""
    trained: dict[tuple[float, int], list[Any]] = {}
    for trial in study.trials:
        if "worker" in trial.user_attrs:
            trained.setdefault((trial.user_attrs["tau_epoch"], trial.user_attrs["seed"]), []).append(trial)
    return trained


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    """One process, uninterrupted: the answer every other way must give."""
    root = tmp_path_factory.mktemp("single")
    printed = _finish(_run(_command(root / "out", root / "r.json")))
    return json.loads((root / "r.json").read_text()), _suggestion(printed)


@pytest.mark.slow
def test_two_commands_one_with_two_workers_share_the_grid(tmp_path: Path, single: tuple[dict[str, Any], str]) -> None:
    out = tmp_path / "out"
    procs = [
        _run(_command(out, tmp_path / "a.json", "--workers", "2")),
        _run(_command(out, tmp_path / "b.json")),
    ]
    printed = [_finish(proc) for proc in procs]
    expected, suggestion = single
    for name, text in zip(("a", "b"), printed):
        assert json.loads((tmp_path / f"{name}.json").read_text()) == expected
        assert _suggestion(text) == suggestion
    trained = _trained(_study(out))
    assert sorted(trained) == KEYS
    assert all(len(trials) == 1 and trials[0].state == TrialState.COMPLETE for trials in trained.values()), trained
    assert len({t[0].user_attrs["worker"]["pid"] for t in trained.values()}) >= 1
    assert len(list((out / "tb" / "s").iterdir())) == 3  # one TensorBoard folder per trial


@pytest.mark.slow
def test_a_worker_killed_mid_trial_the_next_run_completes_the_grid(
    tmp_path: Path, single: tuple[dict[str, Any], str]
) -> None:
    out = tmp_path / "out"
    victim = None
    for _ in range(5):  # a digits trial is short: a kill can land just after its trial finished; then kill the next
        proc = _run(_command(out, tmp_path / "killed.json"))
        deadline = time.monotonic() + 240
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, "the worker finished before it could be killed"
            time.sleep(0.02)
            if not (out / "study.journal").exists():
                continue
            try:
                trials = _study(out).trials
            except KeyError:  # the study is not created yet
                continue
            mine = [t for t in trials if t.state == TrialState.RUNNING and t.user_attrs.get("worker", {}).get("pid")]
            if any(t.user_attrs["worker"]["pid"] == proc.pid for t in mine) and any(
                t.state == TrialState.COMPLETE for t in trials
            ):
                break
        time.sleep(0.05)  # inside the Lightning fit, not in a journal write
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        trials = _study(out).trials
        left = [
            t for t in trials if t.state == TrialState.RUNNING and t.user_attrs.get("worker", {}).get("pid") == proc.pid
        ]
        if left:  # the kill caught a trial mid-fit: it stays RUNNING in the storage, its worker gone
            victim = left[0]
            break
    assert victim is not None, "no kill landed inside a trial in 5 tries"
    done_before = {t.number for t in trials if t.state == TrialState.COMPLETE}
    assert done_before

    printed = _finish(_run(_command(out, tmp_path / "again.json")))
    expected, suggestion = single
    assert json.loads((tmp_path / "again.json").read_text()) == expected and _suggestion(printed) == suggestion
    study = _study(out)
    assert study.trials[victim.number].state == TrialState.FAIL  # the killed trial, handed on and counted once
    trained = _trained(study)
    for key, trials in trained.items():
        complete = [t for t in trials if t.state == TrialState.COMPLETE]
        assert len(complete) == 1, key
        if complete[0].number in done_before:
            assert len(trials) == 1  # finished before the kill: never trained again
    assert sorted(trained) == KEYS
    assert len(trained[(victim.user_attrs["tau_epoch"], 0)]) == 2  # the killed one and its retraining
