"""Where the finder's study lives: opening its Optuna storage (a journal file or a database), and keeping secrets out.

Every error is a :class:`StorageError` naming the storage without its password.

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, unquote

import optuna
from optuna.storages import BaseStorage, JournalStorage, RDBStorage
from optuna.storages.journal import JournalFileBackend, JournalFileSymlinkLock

from lightning_tau.errors import TimescaleError
from lightning_tau.tuner.study.journal import DAMAGED_HINT, OP_CODES, append_lines, journal_problem, repair_tail
from lightning_tau.tuner.study.liveness import GRACE_BEATS, HEARTBEAT_SECONDS

__all__ = [
    "JOURNAL_NAME",
    "RACE_TRIES",
    "JournalWriteError",
    "Log",
    "StorageError",
    "open_storage",
    "redact_message",
    "redact_url",
    "retry_races",
    "signals_held",
]

#: The default journal file under ``root_dir``.
JOURNAL_NAME = "study.journal"

Log = Callable[[str], None]


class StorageError(TimescaleError):
    """The study's storage cannot be opened or written; ``str(err)`` never holds a URL's password.

    Attributes:
        shown: the storage, printable.
        reason: why, in one line.
    """

    def __init__(self, shown: str, reason: str) -> None:
        super().__init__(f"`TimescaleFinder(storage={shown!r})`: {reason}")
        self.shown = shown
        self.reason = reason


class JournalWriteError(StorageError):
    """A write to the journal file failed (a full disk, a quota); the failed write was undone, so the study keeps
    everything written before it."""


def redact_url(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``: safe to print.

    SQLAlchemy's own ``make_url(url).render_as_string(hide_password=True)`` where it reads the password as written;
    a password holding ``@`` (which SQLAlchemy splits at its first ``@``) is masked up to the last ``@`` before the
    host, and a ``password=`` query parameter is masked too.

    Example:
        >>> redact_url("postgresql+psycopg2://tau:s3cret@db.example.org:5432/finder")
        'postgresql+psycopg2://tau:***@db.example.org:5432/finder'
        >>> redact_url("postgresql+psycopg2://u:ab/cd9@host/db")
        'postgresql+psycopg2://u:***@host/db'
        >>> redact_url("postgresql+psycopg2://user:s3c@ret@host/db")
        'postgresql+psycopg2://user:***@host/db'
        >>> redact_url("postgresql+psycopg2://user@host/db?password=x&sslmode=require")
        'postgresql+psycopg2://user@host/db?password=***&sslmode=require'
        >>> redact_url("sqlite:///tau_runs/finder.db")
        'sqlite:///tau_runs/finder.db'
    """
    from sqlalchemy.engine import make_url

    userinfo = _USERINFO_PASSWORD.match(url)
    shown = url
    try:
        parsed = make_url(url)
        if userinfo is None or parsed.password == unquote(userinfo.group("password")):
            shown = parsed.render_as_string(hide_password=True)
    except Exception:  # not a URL SQLAlchemy reads: mask it by hand below
        pass
    if userinfo is not None and shown == url:
        shown = f"{userinfo.group('head')}***@{userinfo.group('tail')}"
    shown = _QUERY_PASSWORD.sub(r"\g<1>***", shown)
    return _scrub_secrets(shown, _secrets(url))


#: ``scheme://user:PASSWORD@rest``: the password runs to the last ``@`` before the query (it may hold ``/`` and ``@``).
_USERINFO_PASSWORD = re.compile(
    r"^(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^:/@?#]*:)(?P<password>[^?#]*)@(?P<tail>[^@?#]*(?:[?#].*)?)$", re.DOTALL
)
#: ``?password=...`` or ``&password=...`` (also ``passwd``, ``pwd``), as libpq and MySQL drivers accept it.
_QUERY_PASSWORD = re.compile(r"([?&](?:password|passwd|pwd)=)[^&#]*", re.IGNORECASE)


def _secrets(url: str) -> list[str]:
    """Every password ``url`` holds, as written and URL-decoded, longest first (what an error message might echo)."""
    found: set[str] = set()
    userinfo = _USERINFO_PASSWORD.match(url)
    if userinfo is not None:
        found.add(userinfo.group("password"))
        # SQLAlchemy splits a password at its first "@" and takes the rest for the host, which a driver then echoes
        found.update(part for part in userinfo.group("password").split("@") if len(part) >= 3)
    with contextlib.suppress(Exception):
        from sqlalchemy.engine import make_url

        password = make_url(url).password
        if password:
            found.add(str(password))
    found.update(match.group(0).split("=", 1)[1] for match in _QUERY_PASSWORD.finditer(url))
    found |= {unquote(secret) for secret in found} | {quote(secret, safe="") for secret in found}
    return sorted((secret for secret in found if secret), key=len, reverse=True)


def _scrub_secrets(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def redact_message(text: str, url: str) -> str:
    """A driver's error message for ``url`` in one line, without any of the URL's passwords."""
    text = _scrub_secrets(text, _secrets(url))
    text = re.sub(r"\(Background on this error at: [^)]*\)", "", text)
    return " ".join(text.split()).rstrip(". ")  # one line


def open_storage(
    storage: str | Path | BaseStorage | None,
    root_dir: Path,
    heartbeat: int = HEARTBEAT_SECONDS,
    log: Log | None = None,
) -> tuple[BaseStorage, str]:
    """The Optuna storage for ``storage`` and a printable name for it (a URL's password shown as ``***``).

    ``None``: the journal file ``root_dir/study.journal``. A path (no ``://``): a journal file there. A URL
    (``postgresql://...``, ``mysql+pymysql://...``, ``sqlite:///...``): Optuna's ``RDBStorage`` with a heartbeat
    every ``heartbeat`` seconds. An Optuna storage object: itself.

    A journal file is checked before anything is written to it (:mod:`lightning_tau.tuner.study.journal`): a file
    that is
    not an Optuna journal, or one with a damaged line, is an error; a half-written last line (a write cut short) is
    moved to a backup file next to it, and ``log`` says so.

    Raises:
        ValueError: the journal file cannot be written, is not a journal or is damaged, or the database cannot be
            opened (the message never holds the URL's password).
    """
    if isinstance(storage, BaseStorage):
        return storage, type(storage).__name__
    if storage is not None and not isinstance(storage, (str, Path)):
        raise ValueError(
            f"`TimescaleFinder(storage=...)` must be a journal file path, an Optuna storage URL or an Optuna"
            f" storage, got {type(storage).__name__!r}."
        )
    if isinstance(storage, str) and "://" in storage:
        return _open_database(storage, heartbeat), redact_url(storage)
    path = Path(storage) if storage is not None else root_dir / JOURNAL_NAME
    return _open_journal(path, log), str(path)


def _open_journal(path: Path, log: Log | None) -> JournalStorage:
    """Optuna's journal storage on ``path``, checked before anything is written and repaired (see the module)."""
    if path.is_dir():
        raise StorageError(str(path), f"cannot write the journal file: {path} is a folder.")
    problem = journal_problem(path)
    if problem is not None:
        raise StorageError(str(path), problem)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("ab"):
            pass
    except OSError as err:
        why = err.strerror or str(err)
        raise StorageError(
            str(path),
            f"cannot write the journal file: {why}. Pass a writable file path (on a file system every worker sees)"
            " or a database URL.",
        ) from None
    backend = _JournalFile(str(path), log)
    try:
        with backend.locked():
            backend.repair()
        return JournalStorage(backend)
    except StorageError:
        raise
    except Exception as err:  # an operation Optuna cannot replay (a line with the right op_code but wrong fields)
        raise StorageError(
            str(path), f"cannot read the journal file: {type(err).__name__}: {str(err)[:200]}. {DAMAGED_HINT}"
        ) from None


class _JournalFile(JournalFileBackend):
    """Optuna's journal file that never leaves a half-written line behind and names the file in its errors.

    Every append runs under Optuna's lock: it first moves aside a half-written last line another process left
    (:func:`~lightning_tau.tuner.study.journal.repair_tail`), and a write that fails (a full disk) is undone by
    truncating
    the file back to its size before it, then raised as :class:`JournalWriteError`. Reading a damaged line raises
    :class:`StorageError` naming the file and the line instead of Optuna's ``JSONDecodeError`` or assertion.
    """

    def __init__(self, path: str, log: Log | None = None) -> None:
        self.lock = JournalFileSymlinkLock(path)
        super().__init__(path, lock_obj=self.lock)
        self.log = log

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "log": None}  # a finder's bound method need not travel

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold Optuna's lock on the journal (the one its writers take), with Ctrl-C and SIGTERM held until it is
        released (:func:`signals_held`): Optuna's lock, interrupted while it waits, releases a lock another process
        holds, and interrupted as it releases, unlinks its own twice (``No such file or directory``)."""
        with signals_held():
            self.lock.acquire()
            try:
                yield
            finally:
                self.lock.release()

    def repair(self) -> None:
        """Move a half-written last line aside (call it holding the lock)."""
        try:
            backup = repair_tail(self._file_path)
        except OSError as err:
            raise JournalWriteError(
                self._file_path,
                f"its last line is half written (a write cut short) and cannot be moved aside:"
                f" {err.strerror or err}. Free some space and run again.",
            ) from None
        if backup is not None:
            message = (
                f"the journal {self._file_path} ended in a half-written line (a write cut short, e.g. by a full"
                f" disk); moved it to {backup}."
            )
            if self.log is not None:
                self.log(message)
            else:
                warnings.warn(message, stacklevel=2)

    def read_logs(self, log_number_from: int) -> Iterator[dict[str, Any]]:
        try:
            for record in super().read_logs(log_number_from):
                op = record.get("op_code") if isinstance(record, dict) else None
                if isinstance(op, bool) or op not in OP_CODES:
                    raise self._damaged()
                yield record
        except StorageError:
            raise
        except ValueError:  # json.JSONDecodeError, UnicodeDecodeError, Optuna's "Invalid log format."
            raise self._damaged() from None

    def _damaged(self) -> StorageError:
        why = journal_problem(self._file_path) or f"it changed while it was read. {DAMAGED_HINT}"
        return StorageError(self._file_path, why)

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        data = ("\n".join(json.dumps(log, separators=(",", ":")) for log in logs) + "\n").encode()
        try:
            with self.locked():
                self.repair()
                append_lines(self._file_path, data)
        except OSError as err:
            raise JournalWriteError(
                self._file_path,
                f"cannot write the journal file: {err.strerror or err}. The write was undone and the study keeps its"
                " complete trials: free some space (or pass another storage) and run the same command again.",
            ) from None


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM for the block (in the main thread, where Python runs signal handlers; elsewhere a
    no-op): a signal that arrives meanwhile is noted and raised again, to the handler that was in place, when the
    block ends. A journal write under its lock lasts milliseconds; an interrupt inside it would leave the lock or the
    file half done.

    Example:
        >>> import os, signal
        >>> seen = []
        >>> old = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
        >>> with signals_held():
        ...     os.kill(os.getpid(), signal.SIGTERM)
        ...     held = list(seen)
        >>> held, seen == [signal.SIGTERM]
        ([], True)
        >>> _ = signal.signal(signal.SIGTERM, old)
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    kept = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(signum)
        if handler in (signal.SIG_IGN, None):  # ignored (or set outside Python): nothing to hold
            continue
        kept[signum] = handler
        signal.signal(signum, lambda got, frame: noted.append(got))
    try:
        yield
    finally:
        for signum, handler in kept.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(noted):
            os.kill(os.getpid(), signum)  # to the handler put back: KeyboardInterrupt, a SIGTERM exit, ...


def _open_database(url: str, heartbeat: int) -> RDBStorage:
    """Optuna's ``RDBStorage`` on ``url`` with a heartbeat every ``heartbeat`` s and a grace of ``GRACE_BEATS`` beats.

    Creating the tables races when several processes open an empty database at once (PostgreSQL: ``duplicate key
    ... pg_type_typname_nsp_index``, ``type "studydirection" already exists``; SQLite: ``table studies already
    exists``): the loser tries again and finds them made.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # heartbeat_interval
            return retry_races(
                lambda: RDBStorage(url, heartbeat_interval=heartbeat, grace_period=GRACE_BEATS * heartbeat)
            )
    except Exception as err:  # sqlalchemy's errors, a missing driver (ImportError), a bad URL
        hint = (
            f"other processes kept creating its tables at the same time ({RACE_TRIES} tries); run the command again"
            if _creation_race(err)
            else f"Check the URL, that the database is reachable and that its driver is installed{_driver_hint(url)}"
        )
        raise StorageError(
            redact_url(url),
            f"cannot open the database: {type(err).__name__}: {redact_message(str(err), url)[:300]}. {hint}.",
        ) from None


def _driver_hint(url: str) -> str:
    """Which driver the URL's dialect asks for, and how to name psycopg2 (SQLAlchemy 2.1 reads ``postgresql://``
    as psycopg 3, 2.0 as psycopg2)."""
    try:
        from sqlalchemy.engine import make_url

        parsed = make_url(url)
        driver = parsed.get_dialect().driver
    except Exception:
        return " (e.g. postgresql+psycopg2://user:password@host/db with `pip install psycopg2-binary`)"
    if parsed.get_backend_name() == "postgresql" and driver == "psycopg2":
        return " (this URL uses the 'psycopg2' driver: `pip install psycopg2-binary`)"
    if parsed.get_backend_name() == "postgresql":
        return (
            f" (this URL uses the {driver!r} driver; for psycopg2 write postgresql+psycopg2://..."
            " and `pip install psycopg2-binary`)"
        )
    return f" (this URL uses the {driver!r} driver)"


T = TypeVar("T")
#: How many times opening a storage or a study is tried when another process creates it at the same moment.
RACE_TRIES = 8


def retry_races(action: Callable[[], T], tries: int = RACE_TRIES) -> T:
    """``action()``, tried again (after a short random pause) while it fails because another process was creating
    the same tables, study or study attribute at the same moment; any other error is raised at once."""
    for attempt in range(tries):
        try:
            return action()
        except Exception as err:
            if attempt == tries - 1 or not _creation_race(err):
                raise
            time.sleep(random.uniform(0.05, 0.25) * (attempt + 1))
    raise AssertionError("unreachable")  # the loop returns or raises


def _creation_race(err: BaseException) -> bool:
    """Whether ``err`` (or the error it was raised from: Optuna wraps a failed commit in its
    ``StorageInternalError``) is a database's answer to two processes creating the same thing at once."""
    try:
        from sqlalchemy.exc import DBAPIError, IntegrityError
    except ImportError:
        return False
    seen: BaseException | None = err
    for _ in range(4):  # the error and the ones it was raised from
        if seen is None:
            return False
        if isinstance(seen, IntegrityError):
            return True
        if isinstance(seen, DBAPIError) and re.search(
            r"already exists|duplicate key|database is locked", str(seen), re.IGNORECASE
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
