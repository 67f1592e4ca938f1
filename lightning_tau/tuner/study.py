"""The finder's Optuna study: the ``(tau_epoch, seed)`` grid as enqueued trials that any number of processes share.

Every grid point is one Optuna trial, enqueued with ``Study.enqueue_trial`` (not ``GridSampler``, which may hand
the same point to two concurrent workers). The study's storage is the one place results live: a worker takes a
waiting trial (Optuna's atomic WAITING -> RUNNING), trains it, stores its record as the trial's user attribute
``record`` and tells it COMPLETE. The rules that make any number of workers agree:

- **One trial per grid point.** Among a grid point's *live* trials (waiting, running, or complete with a valid
  record) the lowest-numbered one is the point's trial; a worker that takes any other (two processes enqueued the
  same missing point at once) fails it as a duplicate without training it. A complete trial is never trained
  again; a grid point with no live trial (never enqueued, its worker died, its record is malformed) is enqueued
  again by the next process that looks.
- **Dead workers.** A running trial records its worker (host, machine, pid and the process's start time). A
  process on the same machine fails it at once if that process is gone (SIGKILL, a crash). Optuna cannot take a
  trial and tag it in one write, so a worker first writes a claim (``claim/<token>``: the same facts) on the
  waiting trial, then takes it, then tags it; a trial taken but never tagged is failed as soon as every process
  that claimed it on this machine is gone (a claimer that lost the take marks its claim ``lost``). On a database storage
  built here (``RDBStorage`` with ``heartbeat_interval``) Optuna's heartbeat and
  :func:`optuna.storages.fail_stale_trials` fail it from any machine; on a journal file, which has no heartbeat in
  Optuna 5, the worker writes the user attribute ``alive_at`` every ``heartbeat`` seconds and another machine fails
  the trial after ``stale_after`` seconds without one. A failed trial's grid point is enqueued again. The heartbeat
  is 30 s (``$LIGHTNING_TAU_HEARTBEAT`` sets it); a database's grace is 4 beats (120 s).
- **Many first openers.** Processes that open a new database or study at the same moment race to create its tables,
  study and settings; the loser of a race tries again (:func:`retry_races`) and finds them made.
- **Same sweep.** The study's user attribute ``lightning_tau`` holds the sweep's settings; opening the study with
  other settings is an error naming the difference.
- **Pruned trials** (a study opened with a pruner) are told PRUNED with a record that says after which epoch
  (:func:`~lightning_tau.tuner.trial.check_record`); they are finished like complete ones: never retried,
  reclaimed or trained again.
- **The answer** is computed from the lowest-numbered valid complete or pruned trial of every grid point, sorted by
  ``(tau_epoch, seed)``: the same whoever computes it and whatever order the trials finished in.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import socket
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, unquote

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.storages import BaseStorage, JournalStorage, RDBStorage
from optuna.storages.journal import JournalFileBackend, JournalFileSymlinkLock
from optuna.trial import FrozenTrial, TrialState

from lightning_tau.tuner.journal import DAMAGED_HINT, OP_CODES, journal_problem, repair_tail
from lightning_tau.tuner.trial import check_record

__all__ = [
    "GridStudy",
    "JournalWriteError",
    "StorageError",
    "StudyMismatchError",
    "heartbeat_seconds",
    "open_storage",
    "redact_url",
    "retry_races",
]

#: Bumped when the study's layout (user attributes, trial records) changes.
STUDY_FORMAT = 2
#: The study's user attribute holding the sweep's settings.
SETTINGS_ATTR = "lightning_tau"
#: Seconds between a worker's signs of life (journal: ``alive_at``; database: Optuna's heartbeat), unless the
#: environment variable ``LIGHTNING_TAU_HEARTBEAT`` (:data:`HEARTBEAT_ENV`) says otherwise.
HEARTBEAT_SECONDS = 30
#: The environment variable that sets the seconds between signs of life (a positive whole number).
HEARTBEAT_ENV = "LIGHTNING_TAU_HEARTBEAT"
#: On a database storage, a trial whose worker sent no heartbeat for this many beats is handed on (120 s at 30 s).
GRACE_BEATS = 4
#: Seconds without a sign of life after which another machine hands a journal trial to another worker.
STALE_SECONDS = 600
#: The default journal file under ``root_dir``.
JOURNAL_NAME = "study.journal"
#: The user attribute a worker writes on a waiting trial before it takes it: ``CLAIM_PREFIX`` + this process's token.
CLAIM_PREFIX = "claim/"

Key = tuple[float, int]
Log = Callable[[str], None]
#: The states of a trial that is done with: its record is the grid point's.
_FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)


class StorageError(ValueError):
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


class StudyMismatchError(ValueError):
    """A named study holds a sweep with other settings (a usage error: the name or the settings are wrong)."""


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


def _scrub(text: str, url: str) -> str:
    """A driver's error message for ``url`` in one line, without any of the URL's passwords."""
    text = _scrub_secrets(text, _secrets(url))
    text = re.sub(r"\(Background on this error at: [^)]*\)", "", text)
    return " ".join(text.split()).rstrip(". ")  # one line


def heartbeat_seconds() -> int:
    """The seconds between a worker's signs of life: ``$LIGHTNING_TAU_HEARTBEAT`` if set, else 30.

    Raises:
        ValueError: the variable is set to anything but a positive whole number.

    Example:
        >>> heartbeat_seconds()
        30
    """
    raw = os.environ.get(HEARTBEAT_ENV, "").strip()
    if not raw:
        return HEARTBEAT_SECONDS
    if not raw.isdigit() or int(raw) <= 0:
        raise ValueError(
            f"`{HEARTBEAT_ENV}={raw!r}` is not valid: use a positive whole number of seconds (default"
            f" {HEARTBEAT_SECONDS}), or unset it."
        )
    return int(raw)


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

    A journal file is checked before anything is written to it (:mod:`lightning_tau.tuner.journal`): a file that is
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
    (:func:`~lightning_tau.tuner.journal.repair_tail`), and a write that fails (a full disk) is undone by truncating
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
        """Hold Optuna's lock on the journal (the one its writers take)."""
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
                _append(self._file_path, data)
        except OSError as err:
            raise JournalWriteError(
                self._file_path,
                f"cannot write the journal file: {err.strerror or err}. The write was undone and the study keeps its"
                " complete trials: free some space (or pass another storage) and run the same command again.",
            ) from None


def _append(path: str, data: bytes) -> None:
    """Append ``data`` (one journal line) to ``path`` and sync it. A write that fails part way (a full disk, Ctrl-C
    between two writes) is undone: the file is truncated back to its size before. A line written whole stays, even
    if the sync then fails: another process may already have read it (readers skip only a line with no newline)."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        size = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except BaseException:
            with contextlib.suppress(OSError):
                end = os.fstat(fd).st_size
                if end > size and os.pread(fd, 1, end - 1) != b"\n":
                    os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


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
            f"cannot open the database: {type(err).__name__}: {_scrub(str(err), url)[:300]}. {hint}.",
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
    """Whether ``err`` is a database's answer to two processes creating the same thing at once."""
    try:
        from sqlalchemy.exc import DBAPIError, IntegrityError
    except ImportError:
        return False
    if isinstance(err, IntegrityError):
        return True
    return isinstance(err, DBAPIError) and bool(
        re.search(r"already exists|duplicate key|database is locked", str(err), re.IGNORECASE)
    )


@contextlib.contextmanager
def quiet_optuna() -> Iterator[None]:
    """Optuna's INFO and WARNING lines (study created, trial failed) off while the finder talks to the study."""
    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(level)


class GridStudy:
    """An Optuna study holding one trial per ``(tau_epoch, seed)`` of the finder's grid (see the module's rules).

    Open it with :meth:`open`; then, in any number of processes, :meth:`reclaim` and :meth:`enqueue_missing`,
    :meth:`take` a trial, train it and :meth:`finish` it; :meth:`records` gives every grid point's record.
    """

    def __init__(
        self,
        study: optuna.Study,
        storage: BaseStorage,
        shown: str,
        grid: Sequence[Key],
        *,
        stale_after: float = STALE_SECONDS,
        heartbeat: float = HEARTBEAT_SECONDS,
        log: Log | None = None,
    ) -> None:
        self.study = study
        self.storage = storage
        #: the storage, printable (a URL's password as ``***``)
        self.shown = shown
        self.grid = list(grid)
        self._grid = set(self.grid)
        self.stale_after = float(stale_after)
        self.heartbeat = float(heartbeat)
        self.log: Log = log or (lambda message: None)
        self._reported: set[int] = set()
        self._beats = isinstance(storage, RDBStorage) and storage.get_heartbeat_interval() is not None
        #: seconds without a sign of life after which another worker takes over a trial: the database heartbeat's
        #: grace where there is one, else ``stale_after`` (a journal file on another machine)
        self.grace = float(_grace(storage)) if self._beats else self.stale_after

    @classmethod
    def open(
        cls,
        storage: str | Path | BaseStorage | None,
        root_dir: Path,
        study_name: str,
        settings: Mapping[str, Any],
        grid: Sequence[Key],
        *,
        direction: str = "minimize",
        stale_after: float = STALE_SECONDS,
        heartbeat: float | None = None,
        log: Log | None = None,
        pruner: optuna.pruners.BasePruner | None = None,
    ) -> GridStudy:
        """Create or load ``study_name`` in ``storage`` and check that it holds this sweep.

        ``heartbeat``: seconds between a worker's signs of life (``None``: :func:`heartbeat_seconds`). Several
        processes may open the same new study at once: the one that loses a race to create it tries again.
        ``pruner``: the study's Optuna pruner (``None``: none; a pruner is not stored, each process gives its own).

        Raises:
            ValueError: the storage cannot be opened or written, or the study holds a sweep with other settings
                (the message names each difference).
        """
        heartbeat = heartbeat_seconds() if heartbeat is None else heartbeat
        backend, shown = open_storage(storage, root_dir, max(1, round(heartbeat)), log=log)
        mine = {"format": STUDY_FORMAT, "settings": dict(settings)}

        def create() -> tuple[optuna.Study, Any]:
            study = optuna.create_study(
                storage=backend,
                study_name=study_name,
                direction=direction,
                load_if_exists=True,
                sampler=optuna.samplers.RandomSampler(seed=0),  # never samples: every trial is enqueued
                pruner=pruner if pruner is not None else optuna.pruners.NopPruner(),
            )
            stored = study.user_attrs.get(SETTINGS_ATTR)
            if stored is None:
                # two first openers at once: a journal keeps the last write, a database refuses the second
                # (a duplicate key), whose opener then tries again and reads the first
                study.set_user_attr(SETTINGS_ATTR, mine)
                stored = study.user_attrs.get(SETTINGS_ATTR)
            return study, stored

        with quiet_optuna():
            try:
                study, stored = retry_races(create)
            except StorageError:
                raise
            except Exception as err:
                raise StorageError(
                    shown,
                    f"cannot open the study {study_name!r}: {type(err).__name__}:"
                    f" {_scrub(str(err), str(storage))[:300]}.",
                ) from None
        if stored != mine:
            raise StudyMismatchError(
                f"`TimescaleFinder(study_name={study_name!r})`: the study in {shown} holds a sweep with other"
                f" settings: {_differences(stored, mine)}. Use another study name (the default is named after"
                " the settings), or the study's settings."
            )
        return cls(study, backend, shown, grid, stale_after=stale_after, heartbeat=heartbeat, log=log)

    # --- reading ------------------------------------------------------------------------------------------------

    def _trials(self, states: tuple[TrialState, ...] | None = None) -> list[FrozenTrial]:
        return sorted(self.study.get_trials(deepcopy=False, states=states), key=lambda t: t.number)

    def _valid(self, trial: FrozenTrial) -> bool:
        """A complete trial whose record a result can be computed from, or a pruned one whose record says so (a
        malformed one is reported once)."""
        record = trial.user_attrs.get("record")
        why = check_record(record)
        if why is None and (trial.state == TrialState.PRUNED) != ("pruned" in record):  # type: ignore[operator]
            why = f"it is {trial.state.name.lower()}, and its record says otherwise"
        if why is not None and trial.number not in self._reported:
            self._reported.add(trial.number)
            self.log(
                f"trial #{trial.number} ({_describe(trial)}) is complete but its stored result is not usable ({why});"
                " training that grid point again."
            )
        return why is None

    def _live(self, trial: FrozenTrial) -> bool:
        if trial.state in (TrialState.WAITING, TrialState.RUNNING):
            return True
        return trial.state in _FINISHED and self._valid(trial)

    def records(self) -> dict[Key, dict[str, Any]]:
        """Every finished grid point's record: the lowest-numbered complete or pruned trial with a valid one (a
        pruned trial's record holds ``"pruned"``)."""
        out: dict[Key, dict[str, Any]] = {}
        for trial in self._trials(_FINISHED):
            key = _key(trial)
            if key in self._grid and key not in out and self._valid(trial):
                out[key] = trial.user_attrs["record"]  # type: ignore[index]
        return {key: out[key] for key in sorted(out)}

    def running_elsewhere(self) -> list[FrozenTrial]:
        """Running grid trials whose worker is not this process."""
        me = _worker()
        return [
            t
            for t in self._trials((TrialState.RUNNING,))
            if _key(t) in self._grid and t.user_attrs.get("worker", {}).get("pid") != me["pid"]
        ]

    # --- the queue ----------------------------------------------------------------------------------------------

    def reclaim(self) -> int:
        """Fail every running trial whose worker is dead; returns how many (their points get enqueued again)."""
        failed = 0
        if self._beats:
            before = {t.number for t in self._trials((TrialState.FAIL,))}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                optuna.storages.fail_stale_trials(self.study)  # Optuna's heartbeat, on a database storage
            for trial in self._trials((TrialState.FAIL,)):
                if trial.number not in before:
                    failed += 1
                    self.log(
                        f"trial #{trial.number} ({_describe(trial)}): its worker's heartbeat stopped (none for"
                        f" {self.grace:g} s); handing it on."
                    )
        now = time.time()
        for trial in self._trials((TrialState.RUNNING,)):
            why = self._dead(trial, now)
            if why is None:
                continue
            try:
                self.study.tell(trial.number, state=TrialState.FAIL, skip_if_finished=True)
            except StorageError:
                raise
            except (ValueError, UpdateFinishedTrialError):  # finished meanwhile
                continue
            failed += 1
            self.log(f"trial #{trial.number} ({_describe(trial)}): {why}; handing it to another worker.")
        return failed

    def _dead(self, trial: FrozenTrial, now: float) -> str | None:
        worker = trial.user_attrs.get("worker")
        if not isinstance(worker, dict):
            why = _untagged_dead(trial)
            if why is not None:
                return why
            worker = {}
        if worker.get("machine") == _worker()["machine"] and isinstance(worker.get("pid"), int):
            alive = _alive(worker["pid"], worker.get("started"))
            if alive is False:
                return f"its worker (pid {worker['pid']} on this machine) is gone"
            if alive is True:
                return None
        if self._beats and worker:
            return None  # Optuna's heartbeat decides (fail_stale_trials)
        last = trial.user_attrs.get("alive_at")
        if not isinstance(last, (int, float)):
            last = trial.datetime_start.timestamp() if trial.datetime_start is not None else now
        if now - float(last) > self.stale_after:
            where = f"{worker.get('host', '?')}, pid {worker.get('pid', '?')}"
            return f"no sign of life from its worker ({where}) for {now - float(last):.0f} s (> {self.stale_after:g} s)"
        return None

    def enqueue_missing(self) -> int:
        """Enqueue every grid point with no live trial; returns how many."""
        live = {_key(t) for t in self._trials() if self._live(t)}
        missing = [key for key in self.grid if key not in live]
        for tau, seed in missing:
            self.study.enqueue_trial({"tau_epoch": tau, "seed": seed}, user_attrs={"tau_epoch": tau, "seed": seed})
        return len(missing)

    def take(self) -> tuple[optuna.Trial, Key] | None:
        """Take the first waiting trial that is its grid point's trial (duplicates met on the way are failed)."""
        trials = self._trials()
        owner: dict[Key, int] = {}
        for trial in trials:
            key = _key(trial)
            if key in self._grid and key not in owner and self._live(trial):
                owner[key] = trial.number
        claim_key, claim = CLAIM_PREFIX + _token(), _worker()
        for frozen in trials:
            key = _key(frozen)
            if frozen.state != TrialState.WAITING or key not in self._grid:
                continue
            try:  # visible before the take: a process killed between the take and its tag leaves its claim
                self.storage.set_trial_user_attr(frozen._trial_id, claim_key, claim)
            except UpdateFinishedTrialError:
                continue
            if not _pop(self.study, frozen):
                with contextlib.suppress(UpdateFinishedTrialError):
                    self.storage.set_trial_user_attr(frozen._trial_id, claim_key, {**claim, "lost": True})
                continue
            trial = optuna.Trial(self.study, frozen._trial_id)
            if owner[key] != frozen.number:
                trial.set_user_attr("duplicate_of", owner[key])
                self.study.tell(trial, state=TrialState.FAIL)
                continue
            tau, seed = key
            taus = sorted({k[0] for k in self.grid})
            seeds = sorted({k[1] for k in self.grid})
            trial.suggest_categorical("tau_epoch", taus)  # the enqueued values, recorded as the trial's params
            trial.suggest_categorical("seed", seeds)
            return trial, key
        return None

    @contextlib.contextmanager
    def working_on(self, trial: optuna.Trial) -> Iterator[None]:
        """Mark ``trial`` as this process's and keep signs of life coming while the block trains it; a failure
        in the block fails the trial (its ``error`` attribute says why) and is raised."""
        trial.set_user_attr("worker", _worker())
        stop = threading.Event()
        trial_id = trial._trial_id  # Optuna's heartbeat is recorded by id; `Trial` has no public one

        def beat() -> None:
            if self._beats:
                self.storage.record_heartbeat(trial_id)  # type: ignore[attr-defined]
            else:
                trial.set_user_attr("alive_at", time.time())

        def loop() -> None:
            while not stop.wait(self.heartbeat):
                with contextlib.suppress(Exception):  # a storage hiccup: the next beat tries again
                    beat()

        beat()
        thread = threading.Thread(target=loop, name="tau-finder-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        except BaseException as err:
            stop.set()
            thread.join()
            with contextlib.suppress(Exception):
                trial.set_user_attr("error", f"{type(err).__name__}: {err}"[:1000])
                self.study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
            raise
        stop.set()
        thread.join()

    def finish(self, trial: optuna.Trial, record: dict[str, Any], value: float) -> bool:
        """Store ``record`` on ``trial`` and tell it COMPLETE (PRUNED for a pruned record); ``False`` if another
        worker was handed it meanwhile."""
        try:
            trial.set_user_attr("record", record)
            if "pruned" in record:
                self.study.tell(trial, state=TrialState.PRUNED)
            else:
                self.study.tell(trial, value)
        except StorageError:
            raise
        except (ValueError, UpdateFinishedTrialError):
            self.log(
                f"trial #{trial.number}: was handed to another worker while this one trained it"
                f" ({'no heartbeat' if self._beats else 'no sign of life'} for {self.grace:g} s); its result is"
                " dropped."
            )
            return False
        return True


def _grace(storage: RDBStorage) -> int:
    """The heartbeat grace of ``storage``: Optuna's default is two beats where none was given."""
    interval = storage.get_heartbeat_interval()
    grace = getattr(storage, "grace_period", None)  # a public attribute of RDBStorage, with no getter
    return int(grace) if grace is not None else 2 * int(interval or 0)


def _pop(study: optuna.Study, trial: FrozenTrial) -> bool:
    """Take the waiting ``trial``: the storage's WAITING -> RUNNING is atomic across processes.

    Optuna has no public call for it: ``Study.ask()`` takes the first waiting trial but, when none is left, creates a
    new one from the sampler, which a grid must never do. This is ``Study._pop_waiting_trial_id`` for one trial.
    """
    try:
        return bool(study._storage.set_trial_state_values(trial._trial_id, state=TrialState.RUNNING))
    except UpdateFinishedTrialError:
        return False


def _untagged_dead(trial: FrozenTrial) -> str | None:
    """Why a running trial that no worker tagged is dead: every process that claimed it on this machine (and did not
    lose the take) is gone; ``None`` when one may still hold it, or when a claimer is elsewhere (time decides)."""
    claims = [
        value
        for name, value in trial.user_attrs.items()
        if name.startswith(CLAIM_PREFIX) and isinstance(value, dict) and not value.get("lost")
    ]
    if not claims or any(c.get("machine") != _MACHINE or not isinstance(c.get("pid"), int) for c in claims):
        return None
    if all(_alive(c["pid"], c.get("started")) is False for c in claims):
        pids = ", ".join(str(c["pid"]) for c in claims)
        return f"the process that took it (pid {pids} on this machine) is gone before it marked it as its own"
    return None


def _key(trial: FrozenTrial) -> Key | None:
    tau, seed = trial.user_attrs.get("tau_epoch"), trial.user_attrs.get("seed")
    if isinstance(tau, (int, float)) and not isinstance(tau, bool) and isinstance(seed, int):
        return (float(tau), int(seed))
    return None


def _describe(trial: FrozenTrial) -> str:
    key = _key(trial)
    return f"tau_epoch={key[0]:g}, seed={key[1]}" if key else "not a grid point"


def _differences(stored: Any, mine: Mapping[str, Any]) -> str:
    if not isinstance(stored, dict) or not isinstance(stored.get("settings"), dict):
        return f"it was not made by this version of lightning_tau (its {SETTINGS_ATTR!r} is {stored!r:.80})"
    if stored.get("format") != mine["format"]:
        return f"its format is {stored.get('format')!r}, this version writes {mine['format']!r}"
    there, here = _flatten(stored["settings"]), _flatten(mine["settings"])
    keys = [k for k in sorted(set(there) | set(here)) if there.get(k, "(none)") != here.get(k, "(none)")]
    parts = [f"{k} is {there.get(k, '(none)')!r} there, {here.get(k, '(none)')!r} here" for k in keys[:4]]
    if len(keys) > 4:
        parts.append(f"and {len(keys) - 4} more")
    return "; ".join(parts)


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value}


# --- who is working ---------------------------------------------------------------------------------------------


def _machine() -> str:
    """This machine: its host name and, on Linux, its boot id (two containers may share a host name)."""
    boot = ""
    with contextlib.suppress(OSError):
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return f"{socket.gethostname()}/{boot}" if boot else socket.gethostname()


def _proc_stat(pid: int) -> tuple[str, str] | None:
    """``(state, start time)`` of ``pid`` from ``/proc`` (Linux), or ``None``."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()  # the command name may hold spaces and parentheses
    return (fields[0], fields[19]) if len(fields) > 19 else None


_MACHINE = _machine()
#: Each process's name in its claims (``CLAIM_PREFIX`` + it), by pid: made on first use in each process, not at
#: import (a worker forked from the finder's preloaded forkserver has the server's imported modules, so a token made
#: at import would be the same in every worker, and one worker's lost take would mark another's claim lost).
_TOKENS: dict[int, str] = {}


def _token() -> str:
    """This process's claim token."""
    pid = os.getpid()
    if pid not in _TOKENS:
        _TOKENS[pid] = uuid.uuid4().hex[:16]
    return _TOKENS[pid]


def _worker() -> dict[str, Any]:
    pid = os.getpid()
    stat = _proc_stat(pid)
    return {"host": socket.gethostname(), "machine": _MACHINE, "pid": pid, "started": stat[1] if stat else None}


def _alive(pid: int, started: Any) -> bool | None:
    """Whether process ``pid`` (started at ``started``, from ``/proc``) still runs here; ``None``: cannot tell."""
    if pid == os.getpid():
        return True
    if os.name == "nt":  # os.kill(pid, 0) would signal it on Windows: leave it to the time-out
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    except OSError:
        return None
    stat = _proc_stat(pid)
    if stat is None:
        return True
    state, start = stat
    if state in ("Z", "X"):  # killed, not yet reaped by its parent
        return False
    return not (started is not None and start != started)  # the pid was reused by another process
