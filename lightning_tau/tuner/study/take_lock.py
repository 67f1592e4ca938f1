"""The file lock that makes processes on one machine take a SQLite database's trials one at a time.

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from optuna.storages import BaseStorage, RDBStorage

__all__ = ["file_lock", "sqlite_take_lock"]


def sqlite_take_lock(storage: BaseStorage) -> Path | None:
    """The lock file beside a SQLite database file (``finder.db`` -> ``finder.db.take-lock``) that serializes takes
    (:meth:`GridStudy.take <lightning_tau.tuner.study.grid_study.GridStudy.take>`); ``None`` for any other storage (a
    journal
    file has its own lock, a database server its row locks) and for an in-memory SQLite database.

    Example:
        >>> import optuna
        >>> sqlite_take_lock(optuna.storages.RDBStorage("sqlite:///:memory:")) is None
        True
    """
    if not isinstance(storage, RDBStorage):
        return None
    from sqlalchemy.engine import make_url

    url = make_url(str(storage.url))
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return Path(f"{url.database}.take-lock")


@contextlib.contextmanager
def file_lock(path: Path | None) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing) for the block; nothing for ``None`` or where
    ``fcntl`` is missing (Windows: SQLite stays one process at a time there, as the docs say)."""
    try:
        import fcntl
    except ImportError:
        fcntl = None  # type: ignore[assignment]
    if path is None or fcntl is None:
        yield
        return
    try:
        handle = open(path, "a+b")  # noqa: SIM115 (closed below)
    except OSError:  # a folder this process cannot write in: the database cannot be written either, it will say so
        yield
        return
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
