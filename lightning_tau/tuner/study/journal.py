"""The finder's journal file: is it an Optuna journal, is it damaged, and the repair of a half-written last line.

Pure (no Optuna import), so the command line can check ``--storage`` before it imports anything heavy.

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

__all__ = ["DAMAGED_HINT", "OP_CODES", "append_lines", "journal_problem", "repair_tail"]

#: The op codes of ``optuna.storages.journal._storage.JournalOperation`` in Optuna 5 (create study ... discard
#: trials); ``tests/tuner/test_finder_journal.py`` checks that they still match.
OP_CODES = frozenset(range(11))
#: How every line Optuna writes begins (``json.dumps`` of a dict whose first key is ``op_code``, no spaces).
_START = b'{"op_code":'
#: What to do about a journal file with a damaged line.
DAMAGED_HINT = (
    "The study cannot be read past it: restore the file from a backup, or move it aside and run again to start a"
    " new study (its trials are trained again)."
)
_NOT_A_JOURNAL = (
    "; nothing was written to it. Pass a new file path (a missing or empty file starts a new journal) or the journal"
    " of an earlier run."
)


def _record_problem(line: bytes) -> str | None:
    """Why a complete line (without its newline) is not a journal record, or ``None``."""
    try:
        record = json.loads(line)
    except ValueError:  # also a UnicodeDecodeError
        return "NUL bytes" if line and not line.strip(b"\0") else "not JSON"
    if not isinstance(record, dict):
        return f"{json.dumps(record)[:20]}, not a journal record"
    op = record.get("op_code")
    if isinstance(op, bool) or not isinstance(op, int):
        return "a JSON line without an integer op_code"
    if op not in OP_CODES:
        return f"op_code {op}, which this version of Optuna does not know"
    return None


def journal_problem(path: str | Path) -> str | None:
    """Why the file at ``path`` cannot be used as the finder's journal and what to do, in one line; ``None`` if it can.

    A missing or empty file is a new journal. A half-written last line is not a problem here (:func:`repair_tail`
    moves it aside), unless it is all the file holds and does not begin like a journal record.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> journal_problem(folder / "new.journal") is None
        True
        >>> _ = (folder / "notes.txt").write_text("my notes\\n")
        >>> print(journal_problem(folder / "notes.txt"))  # doctest: +ELLIPSIS
        it is not an Optuna journal file (its first line is not a journal record); nothing was written to it. ...
        >>> _ = (folder / "j").write_bytes(b'{"op_code":0,"worker_id":"w"}\\nnull\\n{"op_code":3')
        >>> print(journal_problem(folder / "j"))  # doctest: +ELLIPSIS
        line 2 is damaged (null, not a journal record). The study cannot be read past it: restore the file ...
    """
    path = Path(path)
    try:
        with path.open("rb") as file:
            head = file.read(len(_START))
            if not head:
                return None
            if not (head.startswith(_START) or _START.startswith(head)):
                return "it is not an Optuna journal file (its first line is not a journal record)" + _NOT_A_JOURNAL
            file.seek(0)
            for number, line in enumerate(file, start=1):
                if not line.endswith(b"\n"):
                    return None  # the last line, half written: repair_tail moves it aside
                why = _record_problem(line[:-1])
                if why is not None:
                    if number == 1:
                        return f"it is not an Optuna journal file (line 1 is {why})" + _NOT_A_JOURNAL
                    return f"line {number} is damaged ({why}). {DAMAGED_HINT}"
    except IsADirectoryError:
        return "it is a folder"
    except FileNotFoundError:
        return None
    except OSError as err:
        return f"cannot read it: {err.strerror or err}"
    return None


def repair_tail(path: str | Path) -> Path | None:
    """Move a half-written last line of the journal at ``path`` to a backup file next to it; returns the backup's
    path, or ``None`` when the file ends with a complete line (or is empty or missing). Call it while holding the
    journal's lock.

    Raises:
        OSError: the backup cannot be written (e.g. the disk is full) or the journal cannot be truncated; the
            journal is then left as it was.

    Example:
        >>> import tempfile
        >>> journal = Path(tempfile.mkdtemp()) / "study.journal"
        >>> _ = journal.write_bytes(b'{"op_code":0}\\n{"op_co')
        >>> backup = repair_tail(journal)
        >>> journal.read_bytes(), backup.read_bytes(), backup.name.startswith("study.journal.corrupt-")
        (b'{"op_code":0}\\n', b'{"op_co', True)
        >>> repair_tail(journal) is None
        True
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return None
    try:
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return None
        keep = _last_newline_end(fd, size)
        tail = os.pread(fd, size - keep, keep)
        backup = _backup_path(path)
        with backup.open("xb") as copy:
            copy.write(tail)
            copy.flush()
            os.fsync(copy.fileno())
        os.ftruncate(fd, keep)
        os.fsync(fd)
        return backup
    finally:
        os.close(fd)


def append_lines(path: str | Path, data: bytes) -> None:
    """Append ``data`` (whole journal lines) to ``path`` and sync it. A write that fails part way (a full disk, Ctrl-C
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


def _last_newline_end(fd: int, size: int) -> int:
    """The offset just past the last newline before ``size`` (0 when there is none)."""
    end = size
    while end > 0:
        start = max(0, end - 65536)
        chunk = os.pread(fd, end - start, start)
        at = chunk.rfind(b"\n")
        if at >= 0:
            return start + at + 1
        end = start
    return 0


def _backup_path(path: Path) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    backup = path.with_name(f"{path.name}.corrupt-{stamp}")
    number = 1
    while backup.exists():
        number += 1
        backup = path.with_name(f"{path.name}.corrupt-{stamp}-{number}")
    return backup
