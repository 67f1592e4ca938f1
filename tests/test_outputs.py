"""The one check every result file passes (``lightning_tau.outputs``): a study's storage, another study's folder and a
file the package did not write are refused, byte for byte unchanged; the package's own JSON and figures are replaced.
"""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
from helpers.finder_results import finder_result as _finder_result
from optuna.storages import JournalStorage, RDBStorage
from optuna.storages.journal import JournalFileBackend
from optuna.storages.journal._file import LOCK_FILE_SUFFIX

from lightning_tau.outputs import OWN_JSON_KEYS, OutputError, check_output, output_problem, study_files, write_json
from lightning_tau.tuner.study.journal import _backup_path
from lightning_tau.tuner.study.storage import JOURNAL_NAME
from lightning_tau.tuner.study.take_lock import sqlite_take_lock

from lightning_tau.tuner.result import CurvePoint, FinderResult

optuna.logging.set_verbosity(optuna.logging.WARNING)


def finder_result() -> FinderResult:
    return _finder_result([CurvePoint(t, [v, v + 0.1], [0, 1], {"decay": 1 / t}, [10, 10]) for t, v in ((2.0, 0.4), (8.0, 0.2), (32.0, 0.3))])


def _journal(folder: Path) -> Path:
    journal = folder / JOURNAL_NAME
    optuna.create_study(study_name="s", storage=JournalStorage(JournalFileBackend(str(journal))))
    return journal


def _database(folder: Path) -> tuple[str, Path]:
    url = f"sqlite:///{folder / 'finder.db'}"
    optuna.create_study(study_name="s", storage=url)
    return url, folder / "finder.db"


def test_the_journal_its_lock_and_backups_are_refused_existing_or_not(tmp_path: Path) -> None:
    journal = _journal(tmp_path)
    before = journal.read_bytes()
    files = study_files(journal)
    for path in (journal, Path(f"{journal}{LOCK_FILE_SUFFIX}"), _backup_path(journal), tmp_path / "new.journal.lock"):
        problem = output_problem(path, studies=[files])
        if path.name.startswith(JOURNAL_NAME):
            assert problem is not None and problem.startswith("it is the study's journal file"), path
    with pytest.raises(OutputError, match="the study's journal file"):
        check_output(journal, studies=[files])
    assert journal.read_bytes() == before
    # a spelling through a link is the same file
    (tmp_path / "link").symlink_to(journal)
    assert output_problem(tmp_path / "link", studies=[files]) is not None
    assert output_problem(tmp_path / "other.json", studies=[files]) is None


def test_the_sqlite_database_and_the_files_beside_it_are_refused(tmp_path: Path) -> None:
    url, database = _database(tmp_path)
    before = database.read_bytes()
    files = study_files(url)
    take_lock = sqlite_take_lock(RDBStorage(url))
    assert take_lock is not None
    for path in (database, take_lock, Path(f"{database}-wal"), Path(f"{database}-journal")):
        assert (output_problem(path, studies=[files]) or "").startswith("it is the study's SQLite database"), path
    assert study_files(url.replace("sqlite://", "sqlite+pysqlite://")).holds(database.resolve())
    assert study_files("postgresql://tau@localhost/db").exact == ()
    with pytest.raises(OutputError):  # without the study's context: not the package's file
        write_json(database, {"tau_epoch": 8.0})
    assert database.read_bytes() == before


def test_an_existing_file_the_package_did_not_write_is_kept_byte_for_byte(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    journal = _journal(tmp_path)
    journal_bytes = journal.read_bytes()
    for path, before in ((notes, b"my notes\n"), (journal, journal_bytes)):
        with pytest.raises(OutputError, match="a file the package did not write"):
            finder_result().save_json(path)
        assert path.read_bytes() == before
    other_json = tmp_path / "config.json"
    other_json.write_text('{"tau_epoch": 3}\n')  # JSON, but not ours
    with pytest.raises(OutputError):
        write_json(other_json, {"tau_epoch": 8.0})
    assert output_problem(tmp_path) == "it is a folder: pass a file path."


def test_our_own_earlier_json_and_figure_are_replaced(tmp_path: Path) -> None:
    path = finder_result().save_json(tmp_path / "finder.json")
    assert output_problem(path) is None
    assert finder_result().save_json(path) == path  # replaced
    figure = finder_result().plot(tmp_path / "tau_finder.png")
    svg = finder_result().plot(tmp_path / "tau_finder.svg")
    assert output_problem(figure) is None and output_problem(svg) is None
    assert finder_result().plot(figure) == figure
    fake = tmp_path / "photo.png"
    fake.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)  # a PNG nobody marked
    assert output_problem(fake) is not None


def test_each_kind_of_own_json_is_recognised_by_its_writers_keys(tmp_path: Path) -> None:
    from helpers.axis_results import size_result

    finder_keys, axis_keys, demo_keys = OWN_JSON_KEYS
    assert finder_keys <= finder_result().to_json().keys()
    assert axis_keys <= size_result().to_json().keys()
    assert demo_keys <= {"task", "sweep", "metric", "sizes", "seeds", "curves", "runs", "config"}


def test_a_path_inside_another_studys_folder_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "tb" / "study_a" / "version_0").mkdir(parents=True)
    (out / "tb" / "ax_width=64").mkdir()
    (out / "study_a").mkdir()
    write_json(out / "study_a" / "finder.json", finder_result().to_json())
    for path in (out / "study_a" / "finder.json", out / "study_a" / "x.json", out / "ax" / "finder.json"):
        problem = output_problem(path, out=out)
        assert problem is not None and "the folder of study" in problem, path
    assert "TensorBoard logs" in (output_problem(out / "tb" / "study_a" / "r.json", out=out) or "")
    assert output_problem(out / "study_a" / "finder.json", out=out, own_folder="study_a") is None
    assert output_problem(out / "mine" / "finder.json", out=out) is None  # no study's logs: not a study folder
    assert output_problem(out / "summary.json", out=out) is None
    assert json.loads((out / "study_a" / "finder.json").read_text())["tau_epoch"] == finder_result().tau_epoch
