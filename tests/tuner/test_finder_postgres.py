"""The finder on a real PostgreSQL server (``pg_server.py``: PyPI's ``pgserver`` binaries, a Unix socket, password
authentication) and on SQLite: first use of an empty database by several processes at once, ``lightning-tau find``
commands sharing a grid with trials that really run at the same time, a SIGKILLed worker's trial handed on by the
database heartbeat, and a password that never shows (real Optuna, real Lightning fits on digits)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import optuna
import pytest
from finder_procs import KEYS, command, finish, overlapping, run, stop_inside_a_trial, suggestion, trained, wait_for
from finder_study import StoredStudy
from optuna.trial import TrialState
from pg_server import PostgresServer, user_db

from lightning_tau.tuner.study.storage import StorageError, open_storage

pytest.importorskip("sklearn")

#: One process's first use of a storage: import, say it is ready, wait for the go, open the study.
OPENER = """
import sys, time
from pathlib import Path
from lightning_tau.tuner.study.grid_study import GridStudy
url, ready, go, root = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
ready.touch()
while not go.exists():
    time.sleep(0.001)
GridStudy.open(url, root, "s", {"grid": [1, 2]}, [(1.0, 0), (2.0, 0)])
"""


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["postgresql", "sqlite"])
def test_processes_opening_empty_database_at_once_all_start(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    # Optuna's table creation races (PostgreSQL: duplicate key ... pg_type_typname_nsp_index, type "studydirection"
    # already exists; SQLite: table studies already exists), and so do the study and its settings attribute
    if backend == "postgresql":
        postgres: PostgresServer = request.getfixturevalue("postgres")
        role, password, db = user_db(postgres)
        url, admin = postgres.url(db, role, password), postgres.url(db)
    else:
        url = admin = f"sqlite:///{tmp_path / 'finder.db'}"
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", OPENER, url, str(tmp_path / f"ready{i}"), str(go), str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in range(4)
    ]
    wait_for(lambda: all((tmp_path / f"ready{i}").exists() for i in range(4)), "the openers to import")
    go.touch()  # all four open the empty database at the same moment
    outputs = [proc.communicate(timeout=120)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 4, "\n".join(outputs)[-3000:]
    study = optuna.load_study(study_name="s", storage=admin)
    assert study.user_attrs["lightning_tau"]["settings"] == {"grid": [1, 2]}


@pytest.mark.slow
def test_three_commands_on_postgres_share_grid_train_at_once_and_never_show_password(
    tmp_path: Path, postgres: PostgresServer, finder_single: tuple[dict[str, Any], str]
) -> None:
    role, password, db = user_db(postgres)
    url = postgres.url(db, role, password)  # postgresql+psycopg2://role:s3c%2Fr%40t-...@/db?host=...
    out = tmp_path / "out"
    # the same command three times at once on an empty database, one of them with a second worker process
    procs = [
        run(command(out, tmp_path / "a.json", "--storage", url, "--workers", "2")),
        run(command(out, tmp_path / "b.json", "--storage", url)),
        run(command(out, tmp_path / "c.json", "--storage", url)),
    ]
    load = StoredStudy(postgres.url(db))
    pid, held = stop_inside_a_trial(load)  # held inside its trial until another trial runs
    try:
        wait_for(
            lambda: any(
                t.number != held.number and t.state in (TrialState.RUNNING, TrialState.COMPLETE)
                for t in load().trials  # type: ignore[union-attr]
            ),
            "another trial to start while the first is held",
        )
    finally:
        os.kill(pid, signal.SIGCONT)
    printed = [finish(proc) for proc in procs]
    expected, line = finder_single
    for name, (stdout, _) in zip("abc", printed):
        assert json.loads((tmp_path / f"{name}.json").read_text()) == expected  # = one process on a journal file
        assert suggestion(stdout) == line
    study = load()
    assert study is not None
    done = trained(study)
    assert sorted(done) == KEYS
    assert all(len(trials) == 1 and trials[0].state == TrialState.COMPLETE for trials in done.values()), done
    assert overlapping(t for trials in done.values() for t in trials)  # two RUNNING intervals overlap
    assert len({t[0].user_attrs["worker"]["pid"] for t in done.values()}) >= 2
    # the password, as written and as URL-encoded, is in no output and no file the commands wrote
    forms = {password, quote(password, safe=""), quote(password)}
    texts = [text for pair in printed for text in pair]
    assert all(form not in text for form in forms for text in texts)
    assert all(f"{role}:***@/" in stderr for _, stderr in printed)  # the storage, as every command shows it
    files = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert any(path.name.startswith("events.out.tfevents") for path in files)
    for path in files:
        data = path.read_bytes()
        assert all(form.encode() not in data for form in forms), path


@pytest.mark.slow
def test_killed_workers_trial_handed_on_by_database_heartbeat(
    tmp_path: Path, postgres: PostgresServer, finder_single: tuple[dict[str, Any], str]
) -> None:
    role, password, db = user_db(postgres)
    url = postgres.url(db, role, password)
    out = tmp_path / "out"
    beat = {"LIGHTNING_TAU_HEARTBEAT": "1"}  # a heartbeat every second, a grace of 4 s
    proc = run(command(out, tmp_path / "killed.json", "--storage", url), **beat)
    load = StoredStudy(postgres.url(db))
    pid, victim = stop_inside_a_trial(load, pids=lambda: {proc.pid}, after_complete=1)
    os.kill(pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    study = load()
    assert study is not None and study.trials[victim.number].state == TrialState.RUNNING
    done_before = {t.number for t in study.trials if t.state == TrialState.COMPLETE}
    # as if the worker had run on another machine: only the heartbeat can tell that it is gone
    assert load.storage is not None
    worker = {**victim.user_attrs["worker"], "machine": "far/1", "host": "far"}
    load.storage.set_trial_user_attr(victim._trial_id, "worker", worker)

    stdout, stderr = finish(run(command(out, tmp_path / "again.json", "--storage", url), **beat), timeout=240)
    expected, line = finder_single
    assert json.loads((tmp_path / "again.json").read_text()) == expected and suggestion(stdout) == line
    assert f"trial #{victim.number} (tau_epoch=" in stderr and "heartbeat stopped (none for 4 s)" in stderr
    study = load()
    assert study is not None and study.trials[victim.number].state == TrialState.FAIL
    done = trained(study)
    assert sorted(done) == KEYS
    for key, trials in done.items():
        complete = [t for t in trials if t.state == TrialState.COMPLETE]
        assert len(complete) == 1, key
        if complete[0].number in done_before:
            assert len(trials) == 1  # finished before the kill: never trained again
    assert len(done[(victim.user_attrs["tau_epoch"], 0)]) == 2  # the killed one and its retraining


def test_database_errors_never_show_password(tmp_path: Path, postgres: PostgresServer) -> None:
    role, password, db = user_db(postgres)
    wrong = postgres.url(db, role, password + "x")
    with pytest.raises(StorageError, match=r"password authentication failed") as info:
        open_storage(wrong, tmp_path)
    assert password not in str(info.value) and quote(password, safe="") not in str(info.value)
    assert f"{role}:***@/" in str(info.value) and "\n" not in str(info.value)
    # the right one opens it
    storage, shown = open_storage(postgres.url(db, role, password), tmp_path)
    assert isinstance(storage, optuna.storages.RDBStorage)
    assert shown == f"postgresql+psycopg2://{role}:***@/{db}?host=" + quote(postgres.socket_dir, safe="")
