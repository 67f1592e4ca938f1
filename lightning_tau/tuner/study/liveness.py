"""Who is alive: this process's name on a trial, whether a process named there still runs, and the heartbeat settings.

Pure (the standard library only).

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import contextlib
import os
import socket
import uuid
from pathlib import Path
from typing import Any

__all__ = [
    "GRACE_BEATS",
    "HEARTBEAT_ENV",
    "HEARTBEAT_SECONDS",
    "MACHINE",
    "MAX_HEARTBEAT_SECONDS",
    "STALE_SECONDS",
    "claim_token",
    "heartbeat_seconds",
    "is_alive",
    "proc_stat",
    "stop_reason",
    "this_worker",
]

#: Seconds between a worker's signs of life (journal: ``alive_at``; database: Optuna's heartbeat), unless the
#: environment variable ``LIGHTNING_TAU_HEARTBEAT`` (:data:`HEARTBEAT_ENV`) says otherwise.
HEARTBEAT_SECONDS = 30
#: The environment variable that sets the seconds between signs of life (a positive whole number).
HEARTBEAT_ENV = "LIGHTNING_TAU_HEARTBEAT"
#: The longest heartbeat ``LIGHTNING_TAU_HEARTBEAT`` may set (a day): a longer one overflows a thread's wait and
#: the database's grace, and a trial's worker could not be told from a dead one for that long anyway.
MAX_HEARTBEAT_SECONDS = 86400
#: On a database storage, a trial whose worker sent no heartbeat for this many beats is handed on (120 s at 30 s).
GRACE_BEATS = 4
#: Seconds without a sign of life after which another machine hands a journal trial to another worker.
STALE_SECONDS = 600


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
    # ASCII digits only: str.isdigit() says yes to '²', which int() then refuses with a message naming nothing
    if not raw.isascii() or not raw.isdigit() or not 0 < int(raw) <= MAX_HEARTBEAT_SECONDS:
        raise ValueError(
            f"`{HEARTBEAT_ENV}={raw[:40]!r}` is not valid: use a positive whole number of seconds up to"
            f" {MAX_HEARTBEAT_SECONDS} (default {HEARTBEAT_SECONDS}), or unset it."
        )
    return int(raw)


def _machine() -> str:
    """This machine: its host name and, on Linux, its boot id (two containers may share a host name)."""
    boot = ""
    with contextlib.suppress(OSError):
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return f"{socket.gethostname()}/{boot}" if boot else socket.gethostname()


def proc_stat(pid: int) -> tuple[str, str] | None:
    """``(state, start time)`` of ``pid`` from ``/proc`` (Linux), or ``None``."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()  # the command name may hold spaces and parentheses
    return (fields[0], fields[19]) if len(fields) > 19 else None


#: This machine (:func:`_machine`): a worker tag's ``machine``.
MACHINE = _machine()
#: Each process's name in its claims (the study's ``CLAIM_PREFIX`` + it), by pid: made on first use in each process,
#: not at import (a worker forked from the finder's preloaded forkserver has the server's imported modules, so a token
#: made at import would be the same in every worker, and one worker's lost take would mark another's claim lost).
_TOKENS: dict[int, str] = {}


def claim_token() -> str:
    """This process's claim token."""
    pid = os.getpid()
    if pid not in _TOKENS:
        _TOKENS[pid] = uuid.uuid4().hex[:16]
    return _TOKENS[pid]


def this_worker() -> dict[str, Any]:
    """This process, as a trial's ``worker`` tag and claim name it: host, machine, pid and start time."""
    pid = os.getpid()
    stat = proc_stat(pid)
    return {"host": socket.gethostname(), "machine": MACHINE, "pid": pid, "started": stat[1] if stat else None}


def is_alive(pid: int, started: Any) -> bool | None:
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
    stat = proc_stat(pid)
    if stat is None:
        return True
    state, start = stat
    if state in ("Z", "X"):  # killed, not yet reaped by its parent
        return False
    return not (started is not None and start != started)  # the pid was reused by another process


def stop_reason(err: BaseException) -> str:
    """Why a process stopped working on its trials, as the ``error`` of a trial it hands back.

    Example:
        >>> stop_reason(KeyboardInterrupt())
        'interrupted (Ctrl-C): handed back'
        >>> stop_reason(SystemExit(143)), stop_reason(SystemExit(1)), stop_reason(ValueError("no"))
        ('stopped by SIGTERM: handed back', 'SystemExit: 1', 'ValueError: no')
    """
    if isinstance(err, KeyboardInterrupt):
        return "interrupted (Ctrl-C): handed back"
    if type(err).__name__ == "SIGTERMException" or (isinstance(err, SystemExit) and err.code == 143):
        return "stopped by SIGTERM: handed back"
    return f"{type(err).__name__}: {err}"[:1000]
