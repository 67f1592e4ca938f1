"""``lightning_tau.tuner.study.storage``: storage URLs shown without their passwords, journal files opened, checked,
repaired
and written whole, databases opened with a heartbeat, and the retry of a table-creation race (the finder-level
storage tests, which train, are in ``tests/tuner/test_finder_study.py`` and ``tests/tuner/test_finder_journal.py``)."""

from __future__ import annotations

import json
import pickle
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optuna
import pytest
from file_limit import with_file_size_limit
from optuna.storages import JournalStorage, RDBStorage
from optuna.storages.journal import JournalFileSymlinkLock
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from lightning_tau.tuner.study.journal import DAMAGED_HINT, journal_problem
from lightning_tau.tuner.study.liveness import GRACE_BEATS
from lightning_tau.tuner.study.storage import (
    JOURNAL_NAME,
    RACE_TRIES,
    JournalWriteError,
    StorageError,
    _creation_race,
    _driver_hint,
    _JournalFile,
    _secrets,
    open_storage,
    redact_message,
    redact_url,
    retry_races,
)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "postgresql+psycopg2://u@host/db?PASSWORD=x7q9&sslmode=require",
            "postgresql+psycopg2://u@host/db?PASSWORD=***&sslmode=require",
        ),
        (
            "postgresql+psycopg2://u@host/db?Password=x7q9&sslmode=require",
            "postgresql+psycopg2://u@host/db?Password=***&sslmode=require",
        ),
        ("mysql+pymysql://u@host/db?PassWd=x7q9", "mysql+pymysql://u@host/db?PassWd=***"),
        ("mysql+pymysql://u@host/db?PWD=x7q9", "mysql+pymysql://u@host/db?PWD=***"),
    ],
)
def test_query_password_masked_whatever_case_of_key(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert "x7q9" not in redact_url(url)
    # a driver's message that echoes the password is scrubbed too
    assert redact_message("connection refused (password x7q9)", url) == "connection refused (password ***)"


def test_key_only_ends_in_password_left_alone() -> None:
    url = "postgresql+psycopg2://u@host/db?oldpassword=kept&sslmode=require"
    assert redact_url(url) == url


@pytest.mark.parametrize(
    ("url", "shown", "secrets"),
    [
        ("postgresql+psycopg2://u:ab/cd9@host/db", "postgresql+psycopg2://u:***@host/db", ["ab/cd9", "cd9"]),
        ("postgresql+psycopg2://user:s3c@ret@host/db", "postgresql+psycopg2://user:***@host/db", ["s3c", "ret"]),
        (
            "postgresql+psycopg2://u@host/db?password=x7q&sslmode=require",
            "postgresql+psycopg2://u@host/db?password=***&sslmode=require",
            ["x7q"],
        ),
        ("postgresql+psycopg2://u:p%2Fw%40d@host/db", "postgresql+psycopg2://u:***@host/db", ["p%2Fw%40d", "p/w@d"]),
        ("sqlite:///tau_runs/finder.db", "sqlite:///tau_runs/finder.db", []),
        ("mysql+pymysql://u:p%40ss@h/db", "mysql+pymysql://u:***@h/db", ["p%40ss", "p@ss"]),
        # not a URL SQLAlchemy reads (no such dialect): masked by hand, the query password too
        ("nodb://u:pw1@h/db?pwd=zz9", "nodb://u:***@h/db?pwd=***", ["pw1", "zz9"]),
        ("nodb://u:pw1@h:xx/db", "nodb://u:***@h:xx/db", ["pw1"]),
    ],
)
def test_urls_shown_without_their_passwords(url: str, shown: str, secrets: list[str]) -> None:
    assert redact_url(url) == shown
    assert all(secret not in redact_url(url) for secret in secrets)


def test_every_form_of_password_secret_longest_first() -> None:
    found = _secrets("postgresql://u:s3c@ret@h/db?password=q%2F1&PWD=zz")
    assert set(found) == {"s3c@ret", "s3c%40ret", "s3c", "ret", "q%2F1", "q/1", "q%252F1", "zz"}
    assert [len(s) for s in found] == sorted((len(s) for s in found), reverse=True)
    # a part of a password split at "@" is a secret only from 3 characters on (SQLAlchemy's own split still counts)
    assert set(_secrets("postgresql://u:ab@cd@h/db")) == {"ab@cd", "ab%40cd", "ab"}
    assert "ab=cd" in _secrets("postgresql://u@h/db?password=ab=cd")  # the value runs past a "=" in it
    assert "ab%2Fcd9" in _secrets("postgresql+psycopg2://u:ab/cd9@host/db")  # "/" quoted as a driver might
    assert _secrets("sqlite:///x.db") == [] and _secrets("postgresql://u@h/db?password=") == []


def test_drivers_message_one_line_without_passwords_or_links() -> None:
    url = "postgresql://u:s3cret@h/db"
    message = (
        "could not connect:\n  password s3cret\trefused (Background on this error at: https://sqlalche.me/e/20/e3q8). "
    )
    assert redact_message(message, url) == "could not connect: password *** refused"
    assert redact_message("fine.", "sqlite://") == "fine"
    assert redact_message("no host X", "sqlite://") == "no host X"


def test_drivers_error_echoes_password_scrubbed(tmp_path: Path) -> None:
    # an "@" in the password, not URL-encoded: SQLAlchemy takes "s3c" for the password and "ret@127.0.0.1" for the
    # host, and the driver's error echoes that host
    with pytest.raises(StorageError, match=r"could not translate host name \"\*\*\*@127.0.0.1\"") as info:
        open_storage("postgresql+psycopg2://tau:s3c@ret@127.0.0.1:1/finder", tmp_path)
    assert "s3c" not in str(info.value) and "ret@" not in str(info.value)


def test_driver_hint_names_psycopg2_for_this_sqlalchemy(tmp_path: Path) -> None:
    import sqlalchemy

    # SQLAlchemy 2.1 reads postgresql:// as psycopg 3 (2.0: psycopg2); the finder's tests and docs use psycopg2
    driver = "psycopg" if sqlalchemy.__version__.startswith("2.1") else "psycopg2"
    with pytest.raises(StorageError) as info:
        open_storage("postgresql://tau:pa55w0rd@127.0.0.1:1/finder", tmp_path)
    assert f"this URL uses the {driver!r} driver; for psycopg2 write postgresql+psycopg2://" in str(info.value)
    assert "pip install psycopg2-binary" in str(info.value) and "pa55w0rd" not in str(info.value)


@pytest.mark.parametrize(
    ("url", "hint"),
    [
        ("postgresql+psycopg2://u@h/d", " (this URL uses the 'psycopg2' driver: `pip install psycopg2-binary`)"),
        ("mysql+pymysql://u@h/d", " (this URL uses the 'pymysql' driver)"),
        (
            "postgresql+psycopg://u@h/d",
            " (this URL uses the 'psycopg' driver; for psycopg2 write postgresql+psycopg2://... and"
            " `pip install psycopg2-binary`)",
        ),
        ("sqlite:///x.db", " (this URL uses the 'pysqlite' driver)"),
        ("nodb://u@h/d", " (e.g. postgresql+psycopg2://user:password@host/db with `pip install psycopg2-binary`)"),
        ("x", " (e.g. postgresql+psycopg2://user:password@host/db with `pip install psycopg2-binary`)"),
    ],
)
def test_driver_hint_names_urls_driver(url: str, hint: str) -> None:
    assert _driver_hint(url) == hint


def test_error_names_storage_and_says_why() -> None:
    err = JournalWriteError("s.journal", "the disk is full.")
    assert isinstance(err, StorageError) and isinstance(err, ValueError)
    assert str(err) == "`TimescaleFinder(storage='s.journal')`: the disk is full."
    assert (err.shown, err.reason) == ("s.journal", "the disk is full.")


# --- open_storage: journals --------------------------------------------------------------------------------------


def test_none_or_path_journal_file_made_on_open(tmp_path: Path) -> None:
    storage, shown = open_storage(None, tmp_path / "root")
    assert isinstance(storage, JournalStorage) and shown == str(tmp_path / "root" / JOURNAL_NAME)
    assert (tmp_path / "root" / "study.journal").read_bytes() == b""
    path = tmp_path / "a" / "b" / "c.journal"  # its folders are made
    for given in (path, str(path)):
        storage, shown = open_storage(given, tmp_path / "unused")
        assert isinstance(storage, JournalStorage) and shown == str(path) and path.exists()
    assert not (tmp_path / "unused").exists()


def test_optuna_storage_itself_and_anything_else_refused(tmp_path: Path) -> None:
    memory = optuna.storages.InMemoryStorage()
    assert open_storage(memory, tmp_path) == (memory, "InMemoryStorage")
    with pytest.raises(ValueError) as info:
        open_storage(3, tmp_path)  # type: ignore[arg-type]
    assert str(info.value) == (
        "`TimescaleFinder(storage=...)` must be a journal file path, an Optuna storage URL or an Optuna storage,"
        " got 'int'."
    )
    assert list(tmp_path.iterdir()) == []


def test_journal_cannot_be_made_or_read_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(StorageError) as info:
        open_storage(tmp_path, tmp_path)
    assert info.value.reason == f"cannot write the journal file: {tmp_path} is a folder."
    assert info.value.shown == str(tmp_path)
    with pytest.raises(StorageError) as info:
        open_storage("/proc/finder.journal", tmp_path)
    assert info.value.reason == (
        "cannot write the journal file: No such file or directory. Pass a writable file path (on a file system every"
        " worker sees) or a database URL."
    )
    assert info.value.shown == "/proc/finder.journal"
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    with pytest.raises(StorageError) as info:
        open_storage(notes, tmp_path)
    assert info.value.shown == str(notes) and info.value.reason == journal_problem(notes)
    assert notes.read_text() == "my notes\n"
    # the right op code with the wrong fields: Optuna cannot replay it
    replay = tmp_path / "replay.journal"
    replay.write_bytes(b'{"op_code":0}\n')
    with pytest.raises(StorageError) as info:
        open_storage(replay, tmp_path)
    assert info.value.reason == f"cannot read the journal file: KeyError: 'study_name'. {DAMAGED_HINT}"
    assert info.value.shown == str(replay)


def _journal(tmp_path: Path, log: Any = None) -> tuple[JournalStorage, Path]:
    path = tmp_path / "study.journal"
    storage, _ = open_storage(path, tmp_path, log=log)
    return storage, path  # type: ignore[return-value]


def test_journal_written_in_compact_whole_lines(tmp_path: Path) -> None:
    storage, path = _journal(tmp_path)
    study = optuna.create_study(storage=storage, study_name="s")
    study.set_user_attr("k", [1, 2])
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 3
    assert lines[0].startswith(b'{"op_code":0,') and b" " not in lines[0] + lines[1]
    assert json.loads(lines[1])["user_attr"] == {"k": [1, 2]}
    again, _ = _journal(tmp_path)
    assert optuna.load_study(storage=again, study_name="s").user_attrs == {"k": [1, 2]}


def test_half_written_last_line_moved_aside_on_open_and_before_append(tmp_path: Path) -> None:
    storage, path = _journal(tmp_path)
    optuna.create_study(storage=storage, study_name="s")
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"op_code":4,"wor')  # a write cut short
    logged: list[str] = []
    storage, _ = _journal(tmp_path, logged.append)
    (backup,) = tmp_path.glob("study.journal.corrupt-*")
    assert logged == [
        f"the journal {path} ended in a half-written line (a write cut short, e.g. by a full disk); moved it to"
        f" {backup}."
    ]
    assert path.read_bytes() == whole and backup.read_bytes() == b'{"op_code":4,"wor'
    backup.unlink()
    with path.open("ab") as file:  # another process's write cut short after this one opened the journal
        file.write(b'{"op_co')
    optuna.load_study(storage=storage, study_name="s").set_user_attr("k", 1)
    assert len(logged) == 2 and logged[1].startswith(f"the journal {path} ended in a half-written line")
    assert path.read_bytes().startswith(whole) and path.read_bytes().endswith(b'"user_attr":{"k":1}}\n')
    assert journal_problem(path) is None


def test_without_log_repair_warning(tmp_path: Path) -> None:
    path = tmp_path / "study.journal"
    path.write_bytes(b'{"op_co')
    with pytest.warns(UserWarning, match=r"^the journal .*study.journal ended in a half-written line"):
        open_storage(path, tmp_path)
    assert path.read_bytes() == b""


def test_damaged_line_written_after_open_names_file_and_line(tmp_path: Path) -> None:
    storage, path = _journal(tmp_path)
    optuna.create_study(storage=storage, study_name="s")
    for bad, why in [(b"null", "null, not a journal record"), (b'{"op_code":true}', "a JSON line without")]:
        before = path.read_bytes()
        with path.open("ab") as file:
            file.write(bad + b"\n")
        with pytest.raises(StorageError) as info:
            JournalStorage(_JournalFile(str(path)))  # a reader that has not read the journal yet
        assert info.value.shown == str(path)
        assert info.value.reason.startswith(f"line 2 is damaged ({why}")
        path.write_bytes(before)
    assert _JournalFile(str(path))._damaged().reason == f"it changed while it was read. {DAMAGED_HINT}"


def test_journal_backend_travels_without_log_and_locks_like_optuna(tmp_path: Path) -> None:
    path = tmp_path / "study.journal"
    lines: list[str] = []
    backend = _JournalFile(str(path), lines.append)
    copy = pickle.loads(pickle.dumps(backend))
    assert copy.log is None and backend.log == lines.append
    assert copy._file_path == str(path) and isinstance(copy.lock, JournalFileSymlinkLock)
    lock = Path(f"{path}.lock")
    with backend.locked():
        assert lock.is_symlink()  # Optuna's writers wait on it
    assert not lock.exists()
    with pytest.raises(KeyError), backend.locked():
        raise KeyError("x")
    assert not lock.exists()  # released on an error too


# --- writes that fail part way (a file-size limit in a forked child stands in for a full disk) ----------------------


def _in_child_with_file_size_limit(limit: int, action: Callable[[], object]) -> str:
    """``action()`` in a forked child whose files cannot grow past ``limit`` bytes: ``"ok"`` or the error, described."""
    return with_file_size_limit(limit, action, lambda err: f"{type(err).__name__}: {err}")


def test_append_fails_undone_and_named(tmp_path: Path) -> None:
    storage, path = _journal(tmp_path)
    study = optuna.create_study(storage=storage, study_name="s")
    whole = path.read_bytes()
    answer = _in_child_with_file_size_limit(len(whole) + 5, lambda: study.set_user_attr("k", "v" * 100))
    assert answer == (
        f"JournalWriteError: `TimescaleFinder(storage={str(path)!r})`: cannot write the journal file: File too large."
        " The write was undone and the study keeps its complete trials: free some space (or pass another storage)"
        " and run the same command again."
    )
    assert path.read_bytes() == whole


def test_half_line_cannot_be_moved_aside_named(tmp_path: Path) -> None:
    path = tmp_path / "study.journal"
    path.write_bytes(b'{"op_co')
    answer = _in_child_with_file_size_limit(3, lambda: open_storage(path, tmp_path))
    assert answer == (
        f"JournalWriteError: `TimescaleFinder(storage={str(path)!r})`: its last line is half written (a write cut"
        " short) and cannot be moved aside: File too large. Free some space and run again."
    )
    assert path.read_bytes() == b'{"op_co'
    with pytest.warns(UserWarning, match="ended in a half-written line"):
        open_storage(path, tmp_path)  # with room again, it goes through
    assert path.read_bytes() == b""


# --- databases ----------------------------------------------------------------------------------------------------


def test_database_url_optunas_rdb_storage_with_heartbeat(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'f.db'}"
    storage, shown = open_storage(url, tmp_path, heartbeat=7)
    assert isinstance(storage, RDBStorage) and shown == url
    assert (storage.heartbeat_interval, storage.grace_period) == (7, 7 * GRACE_BEATS)
    default, _ = open_storage(url, tmp_path)
    assert (default.heartbeat_interval, default.grace_period) == (30, 120)  # type: ignore[attr-defined]
    assert not (tmp_path / "study.journal").exists()


def test_database_cannot_be_opened_says_what_to_check(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'no' / 'f.db'}"
    with pytest.raises(StorageError) as info:
        open_storage(url, tmp_path)
    assert str(info.value) == (
        f"`TimescaleFinder(storage={url!r})`: cannot open the database: OperationalError: (sqlite3.OperationalError)"
        " unable to open database file. Check the URL, that the database is reachable and that its driver is"
        " installed (this URL uses the 'pysqlite' driver)."
    )


# --- races on a new database ----------------------------------------------------------------------------------------


def _db_error(message: str, kind: type[DBAPIError] = OperationalError) -> DBAPIError:
    return kind("CREATE TABLE studies", {}, Exception(message))


def _raised_from(err: BaseException, *wrappers: BaseException, context: bool = False) -> BaseException:
    """``err`` wrapped in each of ``wrappers`` in turn (as ``raise wrapper from err``, or as its context)."""
    for wrapper in wrappers:
        if context:
            wrapper.__context__ = err
        else:
            wrapper.__cause__ = err
        err = wrapper
    return err


def test_creation_race_databases_answer_to_two_creators() -> None:
    assert _creation_race(_db_error("x", IntegrityError))
    assert _creation_race(_db_error("table studies already exists"))
    assert _creation_race(_db_error('type "studydirection" Already Exists'))
    assert _creation_race(_db_error("duplicate key value violates unique constraint"))
    assert _creation_race(_db_error("database is locked"))
    assert not _creation_race(_db_error("unable to open database file"))
    assert not _creation_race(ValueError("table studies already exists"))  # not the database's answer
    assert _creation_race(_raised_from(_db_error("x", IntegrityError), RuntimeError("commit failed")))
    assert _creation_race(_raised_from(_db_error("database is locked"), RuntimeError("a"), context=True))
    # the error and the three it was raised from are looked at, no further
    deep = [RuntimeError(str(k)) for k in range(3)]
    assert _creation_race(_raised_from(_db_error("x", IntegrityError), *deep))
    deeper = [RuntimeError(str(k)) for k in range(4)]
    assert not _creation_race(_raised_from(_db_error("x", IntegrityError), *deeper))
    assert not _creation_race(_raised_from(ValueError("a"), RuntimeError("b")))


def test_race_tried_again_after_growing_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    pauses: list[float] = []
    monkeypatch.setattr(time, "sleep", pauses.append)
    calls: list[int] = []

    def racing() -> str:
        calls.append(1)
        if len(calls) < 4:
            raise _db_error("table studies already exists")
        return "made"

    assert retry_races(racing) == "made" and len(calls) == 4
    assert len(pauses) == 3 and all(0.05 * k <= p <= 0.25 * k for k, p in enumerate(pauses, start=1))


def test_other_errors_and_last_try_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    pauses: list[float] = []
    monkeypatch.setattr(time, "sleep", pauses.append)
    calls: list[int] = []

    def broken() -> None:
        calls.append(1)
        raise ValueError("no")

    with pytest.raises(ValueError, match="^no$"):
        retry_races(broken)
    assert (len(calls), pauses) == (1, [])

    def always() -> None:
        calls.append(1)
        raise _db_error("database is locked")

    calls.clear()
    with pytest.raises(OperationalError):
        retry_races(always)
    assert len(calls) == RACE_TRIES == 8 and len(pauses) == 7
    calls.clear()
    with pytest.raises(OperationalError):
        retry_races(always, tries=2)
    assert len(calls) == 2
    assert retry_races(lambda: 5, tries=1) == 5


def test_database_whose_tables_keep_racing_says_run_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "sleep", lambda seconds: None)
    url = f"sqlite:///{tmp_path / 'f.db'}"
    connect = sqlite3.connect
    path = tmp_path / "f.db"
    path.touch()
    # another process holds the database's write lock the whole time: every try meets "database is locked"
    holder = connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StorageError) as info:
            open_storage(url + "?timeout=0", tmp_path)
    finally:
        holder.close()
    assert info.value.reason.startswith("cannot open the database: OperationalError:")
    assert info.value.reason.endswith(
        ". other processes kept creating its tables at the same time (8 tries); run the command again."
    )


# --- Ctrl-C and SIGTERM while the journal's lock is held ------------------------------------------------------------


def test_ctrl_c_under_journal_lock_waits_until_it_released(tmp_path: Path) -> None:
    """Optuna's symlink lock, interrupted as it releases, unlinks its renamed file twice and raises ENOENT (seen as a
    'cannot write the journal file: No such file or directory' after a Ctrl-C mid-sweep); interrupted while it waits,
    it releases another process's lock. The backend holds SIGINT/SIGTERM for the locked block, then raises them."""
    import os
    import signal

    backend = _JournalFile(str(tmp_path / "study.journal"))
    lock_file = Path(backend.lock._lock_file)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with backend.locked():
                os.kill(os.getpid(), signal.SIGINT)  # handled at the next bytecode if not held
                assert lock_file.is_symlink()  # still inside, no KeyboardInterrupt yet
                inside_done = True
        assert inside_done
        assert not lock_file.exists() and not lock_file.is_symlink()  # released before the interrupt was raised
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler put back
    finally:
        signal.signal(signal.SIGINT, previous)


def test_signals_held_leaves_other_threads_and_ignored_signals_alone() -> None:
    import signal
    import threading

    from lightning_tau.tuner.study.storage import signals_held

    seen: list[Any] = []

    def in_thread() -> None:
        with signals_held():
            seen.append(signal.getsignal(signal.SIGTERM))

    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join()
    assert seen == [before]
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with signals_held():
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, previous)
