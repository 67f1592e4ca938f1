"""The one check every result file passes (``lightning_tau.outputs``): a study's storage, another study's folder and a
file the package did not write are refused, byte for byte unchanged; the package's own JSON and figures are replaced.
"""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
from finder_results import finder_result as _finder_result
from optuna.storages import JournalStorage, RDBStorage
from optuna.storages.journal import JournalFileBackend
from optuna.storages.journal._file import LOCK_FILE_SUFFIX

from lightning_tau.outputs import OWN_JSON_KEYS, OutputError, check_output, output_problem, study_files, write_json
from lightning_tau.tuner.study.journal import _backup_path
from lightning_tau.tuner.study.storage import JOURNAL_NAME
from lightning_tau.tuner.study.take_lock import sqlite_take_lock

from lightning_tau.tuner.analysis.finder_result import CurvePoint, FinderResult

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


def test_journal_lock_and_backups_refused_existing_or_not(tmp_path: Path) -> None:
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


def test_sqlite_database_and_files_beside_it_refused(tmp_path: Path) -> None:
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


def test_existing_file_package_did_not_write_kept_byte_for_byte(tmp_path: Path) -> None:
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


def test_our_own_earlier_json_and_figure_replaced(tmp_path: Path) -> None:
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


def test_each_kind_of_own_json_recognised_by_writers_keys(tmp_path: Path) -> None:
    from axis_results import size_result

    finder_keys, axis_keys, demo_keys = OWN_JSON_KEYS
    assert finder_keys <= finder_result().to_json().keys()
    assert axis_keys <= size_result().to_json().keys()
    assert demo_keys <= {"task", "sweep", "metric", "sizes", "seeds", "curves", "runs", "config"}


def test_path_inside_another_studys_folder_refused(tmp_path: Path) -> None:
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


def test_refusals_say_what_to_do_in_full(tmp_path: Path) -> None:
    journal = tmp_path / "study.journal"
    files = study_files(journal)
    assert output_problem(journal, studies=[files]) == (
        "it is the study's journal file (or a file beside it), which writing there would destroy: pass another path"
        " outside the study's files."
    )
    out = tmp_path / "out"
    (out / "tb" / "study_a").mkdir(parents=True)
    assert output_problem(out / "study_a" / "x.json", out=out) == (
        f"it is inside {out / 'study_a'}, the folder of study 'study_a', which holds that study's results: pass a path"
        " outside the study folders (or leave --json out: each study writes its own folder)."
    )
    with pytest.raises(OutputError) as caught:
        check_output(journal, studies=[files])
    assert caught.value.path == journal and caught.value.reason == output_problem(journal, studies=[files])
    assert str(caught.value) == f"will not write {str(journal)!r}: {caught.value.reason}"


def test_check_output_passes_out_and_own_folder_on(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "tb" / "study_a").mkdir(parents=True)
    with pytest.raises(OutputError, match="the folder of study 'study_a'"):
        check_output(out / "study_a" / "finder.json", out=out)
    own = out / "study_a" / "finder.json"
    assert check_output(own, out=out, own_folder="study_a") == own
    assert check_output(str(out / "summary.json"), out=out) == out / "summary.json"  # a Path back


def test_study_folders_need_logs_under_tb(tmp_path: Path) -> None:
    bare = tmp_path / "bare"  # no tb folder at all: no study folder under it
    (bare / "mine").mkdir(parents=True)
    assert output_problem(bare / "mine" / "finder.json", out=bare) is None
    out = tmp_path / "out"
    (out / "tb" / "ax_dataset_size=0.5").mkdir(parents=True)  # an axis point's logs mark the axis's folder
    assert "the folder of study 'ax'" in (output_problem(out / "ax" / "finder.json", out=out) or "")
    assert output_problem(out / "tb.json", out=out) is None and output_problem(out / "ax.json", out=out) is None


def test_lock_named_like_journal_in_another_folder_not_studys(tmp_path: Path) -> None:
    files = study_files(tmp_path / "a" / "study.journal")
    assert files.holds((tmp_path / "a" / "study.journal.corrupt-2026").resolve())
    assert not files.holds((tmp_path / "b" / "study.journal.lock").resolve())
    assert not files.holds((tmp_path / "a" / "notes.lock").resolve())


def test_sqlite_urls_relative_with_query_or_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    relative = study_files("sqlite:///runs/finder.db?timeout=10")
    database = (tmp_path / "runs" / "finder.db").resolve()
    assert relative.exact[:2] == (database, database.with_name("finder.db-journal"))
    assert relative.what == "the study's SQLite database"
    # a folder whose name holds "://" is still a path
    odd = study_files(f"sqlite:///{tmp_path}/run://finder.db")
    assert odd.holds((tmp_path / "run:" / "finder.db").resolve())
    for url in ("sqlite://", "sqlite:///:memory:", "sqlite:///"):
        assert study_files(url) == study_files("postgresql://u@h/db"), url


def test_write_json_creates_parents_and_refuses_nan(tmp_path: Path) -> None:
    path = write_json(tmp_path / "a" / "b" / "r.json", {"tau_epoch": 8.0})
    assert path == tmp_path / "a" / "b" / "r.json" and json.loads(path.read_text()) == {"tau_epoch": 8.0}
    with pytest.raises(ValueError, match="JSON compliant"):
        write_json(tmp_path / "nan.json", {"tau_epoch": float("nan")})
    assert not (tmp_path / "nan.json").exists()


@pytest.mark.parametrize(
    ("head", "ours"),
    [
        (b"\x89PNG\r\n\x1a\n...Software\0lightning_tau", True),
        (b"\x89PNG\r\n\x1a\n...Software\0Matplotlib version3.9", True),
        (b"%PDF-1.4 ... /Creator (Matplotlib v3.9)", True),
        (b"%PDF-1.4 ... /Creator (LaTeX)", False),
        (b"\n  <?xml version='1.0'?> <!-- Created with matplotlib -->", True),
        (b"<?xml version='1.0'?> <!-- Inkscape -->", False),
    ],
)
def test_figures_recognised_by_their_maker(tmp_path: Path, head: bytes, ours: bool) -> None:
    path = tmp_path / "figure"
    path.write_bytes(head)
    assert (output_problem(path) is None) is ours


def test_figure_marker_past_first_64_kib_not_count(tmp_path: Path) -> None:
    path = tmp_path / "late.png"
    start = b"\x89PNG\r\n\x1a\n"
    pad = 65536 - len(start) - len(b"matplotlib")
    path.write_bytes(start + b"\0" * (pad + 1) + b"matplotlib")  # its last byte is byte 65537
    assert output_problem(path) is not None
    path.write_bytes(start + b"\0" * pad + b"matplotlib")  # its last byte is byte 65536, the last one read
    assert output_problem(path) is None


def test_own_json_with_exactly_keys_and_size_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import lightning_tau.outputs as outputs

    path = tmp_path / "summary.json"
    text = json.dumps(dict.fromkeys(("sweep", "metric", "curves", "config")))
    path.write_text(text)
    assert output_problem(path) is None  # exactly a writer's keys: ours
    monkeypatch.setattr(outputs, "_READ_LIMIT", len(text))
    assert output_problem(path) is None  # at the limit: read
    monkeypatch.setattr(outputs, "_READ_LIMIT", len(text) - 1)
    assert output_problem(path) is not None  # over it: not read, not ours


def test_file_cannot_be_read_not_replaced(tmp_path: Path) -> None:
    import socket

    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))  # exists, is no folder, and open() fails on it
        assert output_problem(path) == (
            "it is a file the package did not write (it would be replaced): pass a new path, or move the file away"
            " first."
        )
