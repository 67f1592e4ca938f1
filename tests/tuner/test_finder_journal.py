"""The finder's journal file: a file that is not a journal, damaged lines, a half-written last line, and a trial taken
by a process killed before it tagged it (real Optuna, real fits, real processes). The full disk is in
``tests/cli/test_find_journal.py``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import optuna
import pytest
from finder_study import copy_study, fit_finder, journal_study, make_finder
from optuna.trial import TrialState

from lightning_tau.tuner.study.storage import StorageError


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    """An uninterrupted sweep (test_finder_study's) and its result."""
    finder = make_finder(tmp_path_factory.mktemp("reference"))
    return finder, fit_finder(finder)


@pytest.mark.parametrize("text", ["my notes\n", "my notes", "line one\nline two\n", '{"a": 1}\n{"b": 2}\n'])
def test_file_not_journal_refused_and_left_as_it_was(tmp_path: Path, text: str) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text(text)
    with pytest.raises(StorageError) as info:
        fit_finder(make_finder(tmp_path, storage=notes))
    message = str(info.value)
    assert message.startswith(f"`TimescaleFinder(storage={str(notes)!r})`: it is not an Optuna journal file"), message
    assert "nothing was written to it. Pass a new file path" in message and "\n" not in message
    assert notes.read_text() == text
    assert not (tmp_path / "finder").exists()  # nothing trained


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b"garbage", "not JSON"),
        (b"null", "null, not a journal record"),
        (b"\0\0\0\0", "NUL bytes"),
        (b'{"op_code":99,"worker_id":"w"}', "op_code 99, which this version of Optuna does not know"),
    ],
)
@pytest.mark.slow
def test_damaged_line_one_line_error_naming_file_and_line(
    tmp_path: Path, reference: tuple[Any, Any], line: bytes, why: str
) -> None:
    journal = tmp_path / "copy.journal"
    copy_study(journal_study(reference[0]), journal, {})
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join([*lines[:3], line + b"\n", *lines[3:]]))
    before = journal.read_bytes()
    with pytest.raises(StorageError) as info:
        fit_finder(make_finder(tmp_path, storage=journal))
    message = str(info.value)
    assert message.startswith(f"`TimescaleFinder(storage={str(journal)!r})`: line 4 is damaged ({why})"), message
    assert "restore the file from a backup, or move it aside" in message and "\n" not in message
    assert journal.read_bytes() == before
    assert not (tmp_path / "finder").exists()


@pytest.mark.slow
def test_half_written_last_line_moved_aside_and_trial_trained_again(
    tmp_path: Path, reference: tuple[Any, Any], caplog: pytest.LogCaptureFixture
) -> None:
    source, expected = reference
    journal = tmp_path / "copy.journal"
    copy_study(journal_study(source), journal, {})
    whole = journal.read_bytes()
    last = whole[:-1].rfind(b"\n") + 1  # the last line holds the last trial (tau_epoch 64)
    half = whole[last : last + (len(whole) - last) // 2]
    journal.write_bytes(whole[:last] + half)  # cut short, as by a full disk
    finder = make_finder(tmp_path, storage=journal, verbose=True)
    assert fit_finder(finder).to_json() == expected.to_json()
    assert (finder.reused_runs, finder.trained_runs) == (3, 1)
    (backup,) = tmp_path.glob("copy.journal.corrupt-*")
    assert backup.read_bytes() == half
    assert f"ended in a half-written line (a write cut short, e.g. by a full disk); moved it to {backup}." in (
        caplog.text
    )
    again = make_finder(tmp_path, storage=journal)
    assert fit_finder(again).to_json() == expected.to_json() and again.trained_runs == 0


#: Takes the study's first waiting trial through the storage, prints its grid point, then is killed or waits.
_TAKE = """
import sys
import optuna
from lightning_tau.tuner.study.grid_study import GridStudy
path, name = sys.argv[1], sys.argv[2]
storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(path))
grid = [(1.0, 0), (4.0, 0), (16.0, 0), (64.0, 0)]
study = GridStudy(optuna.load_study(study_name=name, storage=storage), storage, path, grid)
trial, key = study.take()
print(key, flush=True)
sys.stdin.read()  # holds the trial, untagged, until killed
"""


@pytest.mark.slow
def test_trial_taken_by_process_killed_before_tagging_it_handed_on_at_once(
    tmp_path: Path, reference: tuple[Any, Any]
) -> None:
    source, expected = reference
    journal = tmp_path / "copy.journal"
    waiting = optuna.trial.create_trial(state=TrialState.WAITING, user_attrs={"tau_epoch": 4.0, "seed": 0})
    copy_study(journal_study(source), journal, {(4.0, 0): lambda t: waiting})
    holder = subprocess.Popen(
        [sys.executable, "-c", _TAKE, str(journal), journal_study(source).study_name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "(4.0, 0)"
        # a live process holds it, untagged (as for a moment after every take): not stolen
        finder = make_finder(tmp_path, storage=journal)
        assert fit_finder(finder, wait=False) is None
        assert (finder.trained_runs, finder.pending_runs) == (0, 1)
    finally:
        holder.kill()  # SIGKILL between the take and the tag
        holder.wait()
    (four,) = [t for t in journal_study(finder).trials if t.user_attrs["tau_epoch"] == 4.0]
    assert four.state == TrialState.RUNNING and "worker" not in four.user_attrs
    # its process is gone: handed on at once, not after stale_after (600 s)
    finder = make_finder(tmp_path, storage=journal)
    assert fit_finder(finder, wait=False) is not None
    assert (finder.trained_runs, finder.pending_runs) == (1, 0)
    assert fit_finder(finder).to_json() == expected.to_json()
