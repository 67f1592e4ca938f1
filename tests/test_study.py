"""``lightning_tau.tuner.study``: the finder's grid study — where a study's name may lead its trials' folders, the
held trials a stopped process gives back, and a study whose settings are not written yet (real Optuna, real fits)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from finder_procs import wait_for
from helpers.finder_study import fit_finder, journal_study, make_finder
from optuna.trial import TrialState

from lightning_tau.cli import main
from lightning_tau.tuner.study import SETTINGS_ATTR, GridStudy, settled_user_attrs, study_folder

#: Study names a shared config or a job array may carry that are not one plain folder name.
UNSAFE_NAMES = ["../escape", "..", ".", "a/b", "/abs", "a\\b", "tab\there", "nl\nx", ".hidden", "x" * 300, ""]


@pytest.mark.parametrize("name", UNSAFE_NAMES)
def test_a_study_folder_is_one_component_inside_tb(tmp_path: Path, name: str) -> None:
    tb = tmp_path / "tb"
    folder = study_folder(name)
    assert (tb / folder).resolve().parent == tb.resolve(), folder
    assert folder not in ("", ".", "..") and "/" not in folder and "\\" not in folder
    assert folder.isprintable() and not folder.startswith(".") and len(folder) <= 120


def test_study_folders_of_different_names_differ_and_plain_names_stay() -> None:
    folders = [study_folder(name) for name in [*UNSAFE_NAMES, "a_b", "a/b/", "_abs", "abs"]]
    assert len(set(folders)) == len(folders), folders
    for plain in ["s", "tau_finder_1a2b", "mine_width=64", "t_dataset_size=0.25", "run-3.v2"]:
        assert study_folder(plain) == plain


def _files(folder: Path) -> set[Path]:
    return {path for path in folder.rglob("*") if path.is_file()}


def test_a_finder_study_named_dotdot_writes_only_under_root_dir(tmp_path: Path) -> None:
    root = tmp_path / "deep" / "finder"
    finder = make_finder(tmp_path, root_dir=root, study_name="../x", tau_epochs=(1.0, 4.0, 16.0))
    fit_finder(finder)
    assert journal_study(finder).study_name == "../x"  # Optuna's name is the given one
    outside = {path for path in _files(tmp_path) if root not in path.parents}
    assert not outside, outside
    (folder,) = (root / "tb").iterdir()
    assert folder.name == study_folder("../x") and len(list(folder.iterdir())) == 3


@pytest.mark.slow
def test_find_with_study_names_that_are_paths_writes_only_under_out(tmp_path: Path) -> None:
    out = tmp_path / "runs" / "out"
    absolute = str(tmp_path / "abs")  # a name like /abs, inside this test's folder
    names = [absolute, "../escape", "..", "a/b"]
    for name in names:
        tiny = ["--epochs", "1", "--tau-epochs", "2", "8", "32", "--seeds", "0", "--no-progress", "--no-plot"]
        assert main(["find", *tiny, "--study", name, "--out", str(out)]) == 0
    outside = {path for path in _files(tmp_path) if out not in path.parents}
    assert not outside, outside
    assert sorted(p.name for p in (out / "tb").iterdir()) == sorted(study_folder(name) for name in names)
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(out / "study.journal")))
    assert sorted(optuna.get_all_study_names(storage)) == sorted(names)


# --- a study whose settings are not written yet ------------------------------------------------------------------


def _bare_study(tmp_path: Path) -> tuple[optuna.storages.BaseStorage, optuna.Study]:
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(tmp_path / "j.journal")))
    return storage, optuna.create_study(storage=storage, study_name="s")  # created; its settings not yet written


def test_a_study_created_a_moment_ago_is_read_once_its_settings_are_written(tmp_path: Path) -> None:
    storage, creator = _bare_study(tmp_path)
    pauses = []

    def the_creator_writes_them() -> None:  # the other process's second write, while this one waits
        pauses.append(1)
        creator.set_user_attr(SETTINGS_ATTR, {"format": 2, "settings": {"seeds": [0]}})

    attrs = settled_user_attrs(optuna.load_study(study_name="s", storage=storage), pause=the_creator_writes_them)
    assert attrs[SETTINGS_ATTR]["settings"] == {"seeds": [0]} and pauses == [1]


def test_a_study_with_trials_and_no_settings_is_read_at_once_and_a_bare_one_after_the_grace(tmp_path: Path) -> None:
    storage, creator = _bare_study(tmp_path)
    attrs = settled_user_attrs(optuna.load_study(study_name="s", storage=storage), grace=0, pause=pytest.fail)
    assert SETTINGS_ATTR not in attrs
    creator.enqueue_trial({"x": 1})
    assert settled_user_attrs(creator, pause=pytest.fail) == {}


#: One process of a job array started at once on a fresh storage: what ``lightning-tau find --study s`` does first
#: (read the study's settings if it exists, then open or create it and write them), repeated.
OPENER = """
import sys, time
from pathlib import Path
from lightning_tau.cli import build_parser
from lightning_tau.cli.find import _reopen
from lightning_tau.tuner.study import GridStudy
storage, go, root, ready = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
ready.touch()
while not go.exists():
    time.sleep(0.001)
for i in range(3):  # a few studies each (every open holds a connection pool until exit)
    name = f"s{i}"
    args = build_parser("find").parse_args(["find", "--study", name, "--storage", storage, "--out", str(root)])
    _reopen(args)
    GridStudy.open(storage, root, name, {"seeds": [0]}, [(1.0, 0)])
"""


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["journal", "postgresql"])
def test_many_commands_started_at_once_on_a_fresh_storage_all_open_the_study(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    if backend == "postgresql":
        from test_finder_postgres import _user_db

        postgres = request.getfixturevalue("postgres")
        role, password, db = _user_db(postgres)
        storage = postgres.url(db, role, password)
    else:
        storage = str(tmp_path / "fresh.journal")
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", OPENER, storage, str(go), str(tmp_path / "root"), str(tmp_path / f"ready{i}")],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in range(6)
    ]
    wait_for(lambda: all((tmp_path / f"ready{i}").exists() for i in range(6)), "the commands to import")
    go.touch()  # all six open the fresh storage at the same moment
    outputs = [proc.communicate(timeout=300)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 6, "\n".join(outputs)[-3000:]


# --- the trials a stopping process holds ---------------------------------------------------------------------------


def test_release_fails_the_trials_this_process_holds_and_only_those(tmp_path: Path) -> None:
    grid = [(1.0, 0), (2.0, 0), (4.0, 0)]
    study = GridStudy.open(tmp_path / "j.journal", tmp_path, "s", {"seeds": [0]}, grid)
    study.enqueue_missing()
    first, second = study.take(), study.take()
    assert first is not None and second is not None
    study.finish(first[0], {"format": 2}, 1.0)  # finished: not held any more, even if its record is not usable
    assert study.release("stopped by SIGTERM: handed back") == 1
    trials = study.study.trials
    assert [t.state for t in trials] == [TrialState.COMPLETE, TrialState.FAIL, TrialState.WAITING]
    assert trials[1].user_attrs["error"] == "stopped by SIGTERM: handed back"
    assert study.release("again") == 0


# --- several processes on one SQLite file --------------------------------------------------------------------------

#: One process of several sharing a SQLite study: take and finish trials until none is left, print what it took.
TAKER = """
import sys, time
from pathlib import Path
from lightning_tau.tuner.study import GridStudy
from lightning_tau.tuner.trial import RECORD_FORMAT
url, go, ready = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
done = {"format": RECORD_FORMAT, "steps": 0, "epochs_run": 0, "metrics": [], "pruned": {"after_epoch": 0}}
grid = [(float(tau), 0) for tau in range(1, 41)]
ready.touch()
while not go.exists():
    time.sleep(0.001)
study = GridStudy.open(url, go.parent, "s", {"seeds": [0]}, grid)
study.enqueue_missing()
while (taken := study.take()) is not None:
    print(taken[0].number, flush=True)
    study.finish(taken[0], done, 1.0)  # a valid record (of a pruned trial): the point is finished for good
"""


@pytest.mark.slow
def test_processes_sharing_a_sqlite_file_never_take_one_trial_twice(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'finder.db'}"
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", TAKER, url, str(go), str(tmp_path / f"ready{i}")],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in range(4)
    ]
    wait_for(lambda: all((tmp_path / f"ready{i}").exists() for i in range(4)), "the takers to import")
    go.touch()
    outputs = [proc.communicate(timeout=300)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 4, "\n".join(outputs)[-3000:]
    taken = [int(line) for output in outputs for line in output.split()]
    assert len(taken) == len(set(taken)), sorted(taken)
    study = optuna.load_study(study_name="s", storage=url)
    finished = [t for t in study.trials if t.state == TrialState.PRUNED]
    assert sorted(t.user_attrs["tau_epoch"] for t in finished) == [float(tau) for tau in range(1, 41)]
