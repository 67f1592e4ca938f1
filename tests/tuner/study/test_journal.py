"""``lightning_tau.tuner.study.journal``: which files are Optuna journals, which line is damaged and why, the repair
of a
half-written last line, and appends that a failing write leaves whole (the finder-level journal tests, which train,
are in ``tests/tuner/test_finder_journal.py``)."""

from __future__ import annotations

import calendar
import errno
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from file_limit import with_file_size_limit

from lightning_tau.tuner.study.journal import (
    DAMAGED_HINT,
    OP_CODES,
    _last_newline_end,
    _record_problem,
    append_lines,
    journal_problem,
    repair_tail,
)

NOT_A_JOURNAL = (
    "; nothing was written to it. Pass a new file path (a missing or empty file starts a new journal) or the journal"
    " of an earlier run."
)
GOOD = b'{"op_code":0,"worker_id":"w"}\n{"op_code":10,"trial_id":0}\n'


def test_op_codes_optunas() -> None:
    from optuna.storages.journal._storage import JournalOperation

    assert {op.value for op in JournalOperation} == OP_CODES


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b'{"op_code":0}', None),
        (b'{"op_code":10,"x":[1]}', None),
        (b"xyz", "not JSON"),
        (b"", "not JSON"),
        (b"\0\0\0", "NUL bytes"),
        (b"\0X\0", "not JSON"),
        (b"XX", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"null", "null, not a journal record"),
        (b"[" + b"1234567890," * 5 + b"1]", "[1234567890, 1234567, not a journal record"),
        (b'"op_code"', '"op_code", not a journal record'),
        (b'{"a":1}', "a JSON line without an integer op_code"),
        (b'{"op_code":true}', "a JSON line without an integer op_code"),
        (b'{"op_code":false}', "a JSON line without an integer op_code"),
        (b'{"op_code":"1"}', "a JSON line without an integer op_code"),
        (b'{"op_code":1.0}', "a JSON line without an integer op_code"),
        (b'{"op_code":11}', "op_code 11, which this version of Optuna does not know"),
        (b'{"op_code":-1}', "op_code -1, which this version of Optuna does not know"),
    ],
)
def test_line_journal_record_only_as_dict_with_known_op_code(line: bytes, why: str | None) -> None:
    assert _record_problem(line) == why


def _file(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "study.journal"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "data",
    [
        b"",
        GOOD,
        GOOD + b'{"op_code":4,"wor',
        b'{"op_',
        b"{",
        b'{"op_code":',
        b'{"op_code":0}\n{"op_code":3',
        b'{"op_code":0}',
    ],
)
def test_new_whole_or_half_written_journal_can_be_used(tmp_path: Path, data: bytes) -> None:
    assert journal_problem(_file(tmp_path, data)) is None
    assert journal_problem(str(_file(tmp_path, data))) is None  # a str path too


def test_missing_file_new_journal(tmp_path: Path) -> None:
    assert journal_problem(tmp_path / "new.journal") is None


@pytest.mark.parametrize("data", [b"my notes\n", b"my notes", b"x", b' {"op_code":0}\n', b'{"op_code" :0}\n'])
def test_file_not_begin_like_journal_not_one(tmp_path: Path, data: bytes) -> None:
    assert journal_problem(_file(tmp_path, data)) == (
        "it is not an Optuna journal file (its first line is not a journal record)" + NOT_A_JOURNAL
    )


@pytest.mark.parametrize(
    ("first", "why"),
    [
        (b'{"op_code":true}', "a JSON line without an integer op_code"),
        (b'{"op_code":11}', "op_code 11, which this version of Optuna does not know"),
        (b'{"op_code":0,', "not JSON"),
    ],
)
def test_bad_first_line_says_file_not_journal(tmp_path: Path, first: bytes, why: str) -> None:
    assert journal_problem(_file(tmp_path, first + b"\n" + GOOD)) == (
        f"it is not an Optuna journal file (line 1 is {why})" + NOT_A_JOURNAL
    )


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        (b"null", "null, not a journal record"),
        (b"\0\0\0\0", "NUL bytes"),
        (b"garbage", "not JSON"),
        (b'{"op_code":99}', "op_code 99, which this version of Optuna does not know"),
    ],
)
def test_damaged_line_named_by_number(tmp_path: Path, bad: bytes, why: str) -> None:
    path = _file(tmp_path, GOOD + bad + b"\n" + GOOD + b'{"op_co')
    assert journal_problem(path) == f"line 3 is damaged ({why}). {DAMAGED_HINT}"
    # a damaged line that is also the last, half-written one is left to the repair
    assert journal_problem(_file(tmp_path, GOOD + bad)) is None


def test_folder_or_unreadable_path_said_so(tmp_path: Path) -> None:
    assert journal_problem(tmp_path) == "it is a folder"
    _file(tmp_path, GOOD)
    assert journal_problem(tmp_path / "study.journal" / "inner") == "cannot read it: Not a directory"


# --- repair_tail ---------------------------------------------------------------------------------------------------


def _backup_time(backup: Path) -> float:
    match = re.fullmatch(r"study\.journal\.corrupt-(\d{8}T\d{6}Z)(-\d+)?", backup.name)
    assert match is not None, backup.name
    return calendar.timegm(time.strptime(match.group(1), "%Y%m%dT%H%M%SZ"))


@pytest.fixture
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process's local time zone five hours behind UTC (a backup's time must still be UTC)."""
    monkeypatch.setenv("TZ", "EST+5")
    time.tzset()
    try:
        yield
    finally:
        monkeypatch.undo()
        time.tzset()


def test_half_written_last_line_moved_to_backup_named_by_time(tmp_path: Path, new_york: None) -> None:
    path = _file(tmp_path, GOOD + b'{"op_code":4,"wor')
    before = time.time()
    backup = repair_tail(path)
    assert backup is not None and backup.parent == tmp_path
    assert before - 2 <= _backup_time(backup) <= time.time() + 1  # UTC
    assert path.read_bytes() == GOOD
    assert backup.read_bytes() == b'{"op_code":4,"wor'
    assert repair_tail(path) is None and path.read_bytes() == GOOD
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, backup.name])


def test_backups_made_in_same_second_get_numbers(tmp_path: Path) -> None:
    path = tmp_path / "study.journal"
    backups = []
    for k in range(3):
        path.write_bytes(GOOD + b"tail%d" % k)
        backup = repair_tail(str(path))
        assert backup is not None
        backups.append(backup)
    assert [b.read_bytes() for b in backups] == [b"tail0", b"tail1", b"tail2"]
    first = backups[0].name
    if all(b.name.startswith(first) for b in backups):  # all made in one second (the usual case)
        assert [b.name for b in backups] == [first, f"{first}-2", f"{first}-3"]
    else:
        assert len({b.name for b in backups}) == 3


@pytest.mark.parametrize("data", [b"", GOOD, b"\n"])
def test_ending_in_whole_line_left_alone(tmp_path: Path, data: bytes) -> None:
    path = _file(tmp_path, data)
    assert repair_tail(path) is None
    assert path.read_bytes() == data and list(tmp_path.iterdir()) == [path]


def test_missing_journal_needs_no_repair(tmp_path: Path) -> None:
    assert repair_tail(tmp_path / "none.journal") is None
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("kept", "tail"),
    [
        (b"", b'{"op_code":0,"wo'),  # nothing but a half line: all of it moves
        (GOOD, b"x" * 70000),  # a tail longer than one read: the newline is found in an earlier block
        (b"", b"y" * 140000),
        (b"\n", b"x" * 65536),  # the newline is the first byte of the file
        (b"\n", b"x" * 131072),
        (GOOD * 3000, b"z" * 65535),
        (GOOD * 3000, b"z" * 65536),
        (GOOD * 3000, b"z"),
    ],
)
def test_repair_keeps_every_whole_line_whatever_tails_length(tmp_path: Path, kept: bytes, tail: bytes) -> None:
    path = _file(tmp_path, kept + tail)
    backup = repair_tail(path)
    assert backup is not None
    assert path.read_bytes() == kept and backup.read_bytes() == tail


def test_offset_past_last_newline(tmp_path: Path) -> None:
    path = _file(tmp_path, b"ab\ncd\n" + b"e" * 65536 + b"\nfff")
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        assert _last_newline_end(fd, size) == size - 3
        assert _last_newline_end(fd, size - 4) == 6  # the block before it ends in "e"s only
        assert _last_newline_end(fd, 6) == 6
        assert _last_newline_end(fd, 5) == 3
        assert _last_newline_end(fd, 2) == 0
        assert _last_newline_end(fd, 0) == 0
    finally:
        os.close(fd)


# --- writes that fail part way (a file-size limit in a forked child stands in for a full disk) ----------------------


def _with_file_size_limit(limit: int, action: Callable[[], object]) -> str:
    """``action()`` in a forked child whose files cannot grow past ``limit`` bytes: ``"ok"`` or the error, described."""
    return with_file_size_limit(
        limit, action, lambda err: errno.errorcode.get(getattr(err, "errno", None) or 0, repr(err))
    )


def test_append_writes_whole_lines_and_creates_file(tmp_path: Path) -> None:
    path = tmp_path / "study.journal"
    append_lines(path, GOOD)
    append_lines(str(path), b'{"op_code":5}\n')
    assert path.read_bytes() == GOOD + b'{"op_code":5}\n'
    fresh = tmp_path / "other.journal"
    old = os.umask(0)
    try:
        append_lines(fresh, b"\n")
    finally:
        os.umask(old)
    assert fresh.stat().st_mode & 0o777 == 0o666  # readable and writable by every worker's user, as Optuna's


def _appended(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "study.journal"
    append_lines(path, data)
    return path


def test_append_cut_short_undone(tmp_path: Path) -> None:
    path = _appended(tmp_path, GOOD)
    more = b'{"op_code":4,"worker_id":"a"}\n{"op_code":5,"trial_id":1}\n'
    assert _with_file_size_limit(len(GOOD) + 7, lambda: append_lines(path, more)) == "EFBIG"
    assert path.read_bytes() == GOOD  # the 7 bytes written are taken back
    assert journal_problem(path) is None


def test_whole_line_written_before_failure_stays(tmp_path: Path) -> None:
    path = _appended(tmp_path, GOOD)
    first = b'{"op_code":4,"worker_id":"a"}\n'
    more = first + b'{"op_code":5,"trial_id":1}\n'
    assert _with_file_size_limit(len(GOOD) + len(first), lambda: append_lines(path, more)) == "EFBIG"
    assert path.read_bytes() == GOOD + first  # another process may have read it already


def test_append_whose_undo_fails_too_raises_writes_own_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a full disk whose truncate back also fails (an I/O error): the caller still gets the write's OSError, which the
    # storage turns into its one-line message, not an error of the undo's own making
    path = _appended(tmp_path, GOOD)
    more = b'{"op_code":4,"worker_id":"a"}\n{"op_code":5,"trial_id":1}\n'

    def refuse(fd: int, length: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "ftruncate", refuse)  # in the forked child that appends (and in this test only)
    assert _with_file_size_limit(len(GOOD) + 7, lambda: append_lines(path, more)) == "EFBIG"
    assert path.read_bytes() == GOOD + more[:7]  # not undone: the next open repairs the half-written line


def test_append_fits_kept_under_limit(tmp_path: Path) -> None:
    path = _appended(tmp_path, GOOD)
    assert _with_file_size_limit(2 * len(GOOD), lambda: append_lines(path, GOOD)) == "ok"
    assert path.read_bytes() == GOOD + GOOD


def test_repair_whose_backup_cannot_be_written_leaves_journal_as_it_was(tmp_path: Path) -> None:
    path = _file(tmp_path, GOOD + b'{"op_code":4,"wor')
    assert _with_file_size_limit(5, lambda: repair_tail(path)) == "EFBIG"
    assert path.read_bytes() == GOOD + b'{"op_code":4,"wor'
    for leftover in tmp_path.glob("*.corrupt-*"):  # the empty backup the child began
        leftover.unlink()
    backup = repair_tail(path)  # with room again, it goes through
    assert backup is not None and backup.read_bytes() == b'{"op_code":4,"wor' and path.read_bytes() == GOOD
