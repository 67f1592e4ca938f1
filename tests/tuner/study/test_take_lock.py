"""``lightning_tau.tuner.study.take_lock``: the lock file beside a SQLite database, and the exclusive ``flock`` held
on it
while a process takes a trial (another open file on it cannot lock it until the block ends)."""

from __future__ import annotations

import fcntl
from pathlib import Path

import optuna
import pytest

from lightning_tau.tuner.study.take_lock import file_lock, sqlite_take_lock


def _locked_elsewhere(path: Path) -> bool:
    """Whether another open file description on ``path`` is refused an exclusive lock (a non-blocking try)."""
    with open(path, "a+b") as other:
        try:
            fcntl.flock(other.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(other.fileno(), fcntl.LOCK_UN)
        return False


def _shared_refused(path: Path) -> bool:
    """Whether another open file description on ``path`` is refused even a shared lock (a non-blocking try): so only
    while an exclusive one is held, not a shared one."""
    with open(path, "a+b") as other:
        try:
            fcntl.flock(other.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(other.fileno(), fcntl.LOCK_UN)
        return False


def test_sqlite_take_lock_file_beside_database_file(tmp_path: Path) -> None:
    database = tmp_path / "finder.db"
    assert sqlite_take_lock(optuna.storages.RDBStorage(f"sqlite:///{database}")) == Path(f"{database}.take-lock")
    journal = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(tmp_path / "j.log")))
    # the driver named in the URL (SQLAlchemy's "dialect+driver") is still a SQLite file
    pysqlite = optuna.storages.RDBStorage(f"sqlite+pysqlite:///{database}")
    assert sqlite_take_lock(pysqlite) == Path(f"{database}.take-lock")
    assert sqlite_take_lock(journal) is None  # a journal file has its own lock
    assert sqlite_take_lock(optuna.storages.InMemoryStorage()) is None
    for memory in ("sqlite://", "sqlite:///", "sqlite:///:memory:"):  # no file (database None, "" or ":memory:")
        assert sqlite_take_lock(optuna.storages.RDBStorage(memory)) is None, memory


def test_file_lock_holds_file_for_block_only(tmp_path: Path) -> None:
    path = tmp_path / "finder.db.take-lock"
    with file_lock(path):
        assert path.exists() and _locked_elsewhere(path)
    assert not _locked_elsewhere(path)
    with pytest.raises(RuntimeError, match="inside"), file_lock(path):  # released when the block raises too
        raise RuntimeError("inside")
    assert not _locked_elsewhere(path)


def test_file_lock_exclusive_second_taker_gets_not_even_shared_lock(tmp_path: Path) -> None:
    path = tmp_path / "finder.db.take-lock"
    with file_lock(path):
        assert _shared_refused(path)  # a shared lock would let a second process read and take the same trial
    assert not _shared_refused(path)


def test_file_lock_without_path_or_writable_folder_locks_nothing(tmp_path: Path) -> None:
    with file_lock(None):
        pass
    with file_lock(tmp_path / "missing" / "x.take-lock"):  # the folder is not there: no lock, no error
        assert not (tmp_path / "missing").exists()
