"""``lightning_tau.tuner.study.grid_study``: the finder's grid study — where a study's name may lead its trials'
folders, the
held trials a stopped process gives back, and a study whose settings are not written yet (real Optuna, real fits);
and, with nothing trained (trials added in memory, on a journal or on a SQLite file), opening a study and the
differences of another sweep's settings, the queue (enqueue, take, duplicates, a lost take, finish, records,
malformed records), signs of life, and reclaiming the trials of dead workers (a gone or reused pid, a stale
journal trial, a stopped database heartbeat, untagged trials whose claimers are gone)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import optuna
import pytest
from finder_procs import wait_for
from finder_study import fit_finder, journal_study, make_finder
from optuna.trial import FrozenTrial, TrialState

from lightning_tau.cli import main
from lightning_tau.tuner.study import grid_study as study_module
from lightning_tau.tuner.study.grid_study import (
    CLAIM_PREFIX,
    SETTINGS_ATTR,
    GridStudy,
    TAU_RANGE,
    StudyMismatchError,
    _describe,
    _differences,
    _flatten,
    _key,
    set_user_attr,
    settled_user_attrs,
    sqlite_take_lock,
    study_folder,
)
from lightning_tau.tuner.study.liveness import proc_stat, this_worker
from lightning_tau.tuner.study.storage import StorageError
from lightning_tau.tuner.trial import RECORD_FORMAT

#: Study names a shared config or a job array may carry that are not one plain folder name.
UNSAFE_NAMES = ["../escape", "..", ".", "a/b", "/abs", "a\\b", "tab\there", "nl\nx", ".hidden", "x" * 300, ""]


@pytest.mark.parametrize("name", UNSAFE_NAMES)
def test_folder_one_component_inside_tb(tmp_path: Path, name: str) -> None:
    tb = tmp_path / "tb"
    folder = study_folder(name)
    assert (tb / folder).resolve().parent == tb.resolve(), folder
    assert folder not in ("", ".", "..") and "/" not in folder and "\\" not in folder
    assert folder.isprintable() and not folder.startswith(".") and len(folder) <= 120


def test_folders_of_different_names_differ_and_plain_names_stay() -> None:
    folders = [study_folder(name) for name in [*UNSAFE_NAMES, "a_b", "a/b/", "_abs", "abs"]]
    assert len(set(folders)) == len(folders), folders
    for plain in ["s", "tau_finder_1a2b", "mine_width=64", "t_dataset_size=0.25", "run-3.v2", "x" * 100]:
        assert study_folder(plain) == plain


def _files(folder: Path) -> set[Path]:
    return {path for path in folder.rglob("*") if path.is_file()}


@pytest.mark.slow
def test_finder_study_named_dotdot_writes_only_under_root_dir(tmp_path: Path) -> None:
    root = tmp_path / "deep" / "finder"
    finder = make_finder(tmp_path, root_dir=root, study_name="../x", tau_epochs=(1.0, 4.0, 16.0))
    fit_finder(finder)
    assert journal_study(finder).study_name == "../x"  # Optuna's name is the given one
    outside = {path for path in _files(tmp_path) if root not in path.parents}
    assert not outside, outside
    (folder,) = (root / "tb").iterdir()
    assert folder.name == study_folder("../x") and len(list(folder.iterdir())) == 3


@pytest.mark.slow
def test_find_with_study_names_paths_writes_only_under_out(tmp_path: Path) -> None:
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


def test_created_moment_ago_read_once_settings_written(tmp_path: Path) -> None:
    storage, creator = _bare_study(tmp_path)
    pauses = []

    def the_creator_writes_them() -> None:  # the other process's second write, while this one waits
        pauses.append(1)
        creator.set_user_attr(SETTINGS_ATTR, {"format": 2, "settings": {"seeds": [0]}})

    attrs = settled_user_attrs(optuna.load_study(study_name="s", storage=storage), pause=the_creator_writes_them)
    assert attrs[SETTINGS_ATTR]["settings"] == {"seeds": [0]} and pauses == [1]


def test_study_with_trials_and_no_settings_read_at_once_and_bare_one_after_grace(tmp_path: Path) -> None:
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
from lightning_tau.tuner.study.grid_study import GridStudy
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
def test_many_commands_started_at_once_on_fresh_storage_all_open_study(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    if backend == "postgresql":
        from pg_server import user_db

        postgres = request.getfixturevalue("postgres")
        role, password, db = user_db(postgres)
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


def test_release_fails_trials_this_process_holds_and_only_those(tmp_path: Path) -> None:
    grid = [(1.0, 0), (2.0, 0), (4.0, 0)]
    study = GridStudy.open(tmp_path / "j.journal", tmp_path, "s", {"seeds": [0]}, grid)
    study.enqueue_missing()
    first, second = study.take(), study.take()
    assert first is not None and second is not None
    study.finish(first[0], {"format": 2}, 1.0)  # finished: not held any more, even if its record is not usable
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert study.release("stopped by SIGTERM: handed back") == 1
    assert caught == []  # told FAIL, not left to Optuna's fallback for a trial told without a value (a warning)
    trials = study.study.trials
    assert [t.state for t in trials] == [TrialState.COMPLETE, TrialState.FAIL, TrialState.WAITING]
    assert trials[1].user_attrs["error"] == "stopped by SIGTERM: handed back"
    assert study.release("again") == 0


def test_ctrl_c_during_take_leaves_trial_held_to_hand_back(tmp_path: Path, monkeypatch: Any) -> None:
    """A Ctrl-C that lands just after a take wrote RUNNING (before the trial was this process's to hand back) left a
    RUNNING trial that no process held; it is held until the take is complete, then raised."""
    import os
    import signal

    from lightning_tau.tuner.study import grid_study

    study = GridStudy.open(tmp_path / "j.journal", tmp_path, "s", {"seeds": [0]}, [(1.0, 0), (2.0, 0)])
    study.enqueue_missing()
    real_pop = grid_study._pop

    def pop_then_interrupt(*args: Any) -> bool:
        taken = real_pop(*args)
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C arrives right after the RUNNING write
        return taken

    monkeypatch.setattr(grid_study, "_pop", pop_then_interrupt)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            study.take()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert study.release("interrupted (Ctrl-C): handed back") == 1
    states = [t.state for t in study.study.trials]
    assert TrialState.RUNNING not in states and states.count(TrialState.FAIL) == 1


# --- several processes on one SQLite file --------------------------------------------------------------------------

#: One process of several sharing a SQLite study: take and finish trials until none is left, print what it took.
TAKER = """
import sys, time
from pathlib import Path
from lightning_tau.tuner.study.grid_study import GridStudy
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
def test_processes_sharing_sqlite_file_never_take_one_trial_twice(tmp_path: Path) -> None:
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


# --- the grid study in one process: opening, the queue, the records (in memory or on a journal, nothing trains) ------

GRID = [(1.0, 0), (1.0, 1), (4.0, 0), (4.0, 1)]


def _complete(loss: float = 1.0) -> dict[str, Any]:
    """A record :func:`~lightning_tau.tuner.trial.check_record` takes as a trained run's."""
    return {
        "format": RECORD_FORMAT,
        "steps": 4,
        "epochs_run": 1,
        "dataset_size_seen": 32,
        "global_batch_size": 16,
        "world_size": 1,
        "groups": {"pg1": {"lr": 0.01, "weight_decay": 0.1, "decays": True}},
        "metrics": [{"val_loss": loss, "epoch": 0}],
    }


PRUNED = {"format": RECORD_FORMAT, "steps": 0, "epochs_run": 0, "metrics": [], "pruned": {"after_epoch": 0}}


def _open(grid: list[tuple[float, int]] = GRID, **kwargs: Any) -> tuple[GridStudy, list[str]]:
    said: list[str] = []
    study = GridStudy.open(
        optuna.storages.InMemoryStorage(), Path("unused"), "s", {"seeds": [0, 1]}, grid, log=said.append, **kwargs
    )
    return study, said


def _add(study: GridStudy, state: TrialState, started: datetime | None = None, **attrs: Any) -> int:
    """Add a trial in ``state`` with user attributes ``attrs`` (``tau_epoch``, ``seed``, ``record``, ``worker``)."""
    frozen = FrozenTrial(
        number=0,
        state=state,
        value=1.0 if state == TrialState.COMPLETE else None,
        datetime_start=started or datetime.now(),
        datetime_complete=datetime.now() if state.is_finished() else None,
        params={},
        distributions={},
        user_attrs=attrs,
        system_attrs={},
        intermediate_values={},
        trial_id=0,
    )
    study.study.add_trial(frozen)
    return study.study.trials[-1].number


def _gone_pid() -> tuple[int, Any]:
    """A process of this machine that has exited and been reaped: its pid and start time."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    stat = proc_stat(child.pid)
    child.wait()
    return child.pid, stat[1] if stat else None


def test_open_creates_study_with_settings_direction_pruner_and_timings() -> None:
    storage = optuna.storages.InMemoryStorage()
    pruner = optuna.pruners.MedianPruner()
    study = GridStudy.open(
        storage,
        Path("unused"),
        "s",
        {"seeds": [0]},
        GRID,
        direction="maximize",
        stale_after=5,
        heartbeat=2,
        pruner=pruner,
        seeds_grow=True,
    )
    assert study.storage is storage and study.shown == "InMemoryStorage" and study.grid == GRID
    assert study.study.study_name == "s" and study.study.direction == optuna.study.StudyDirection.MAXIMIZE
    assert study.study.pruner is pruner and isinstance(study.study.sampler, optuna.samplers.RandomSampler)
    assert study.study.user_attrs == {SETTINGS_ATTR: {"format": 2, "settings": {"seeds": [0]}}}
    assert (study.stale_after, study.heartbeat, study.grace, study.seeds_grow) == (5.0, 2.0, 5.0, True)
    assert type(study.stale_after) is float and type(study.heartbeat) is float
    again = GridStudy.open(storage, Path("unused"), "s", {"seeds": [0]}, GRID)  # the same sweep: opened as it is
    assert again.study._study_id == study.study._study_id and again.seeds_grow is False


def test_open_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTNING_TAU_HEARTBEAT", "7")
    study, _ = _open()
    assert study.study.direction == optuna.study.StudyDirection.MINIMIZE
    assert isinstance(study.study.pruner, optuna.pruners.NopPruner)
    assert (study.heartbeat, study.stale_after, study.grace, study.seeds_grow) == (7.0, 600.0, 600.0, False)
    assert study.log("anything") is None and GridStudy(study.study, study.storage, "x", GRID).log("a") is None


def test_open_on_database_gives_heartbeat_and_grace(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'finder.db'}"
    study = GridStudy.open(url, tmp_path, "s", {"seeds": [0]}, GRID, heartbeat=2.6)
    assert study.storage.get_heartbeat_interval() == 3 and study._beats  # type: ignore[attr-defined]
    assert study.grace == 4 * 3 and study.heartbeat == 2.6
    assert sqlite_take_lock(study.storage) == Path(f"{tmp_path / 'finder.db'}.take-lock")
    assert GridStudy.open(url, tmp_path, "t", {"seeds": [0]}, GRID, heartbeat=0.2).storage.get_heartbeat_interval() == 1  # type: ignore[attr-defined]
    bare = optuna.storages.RDBStorage(url, heartbeat_interval=5)
    assert GridStudy(optuna.load_study(study_name="s", storage=bare), bare, "b", GRID).grace == 10  # Optuna's 2 beats
    no_beat = optuna.storages.RDBStorage(url)
    plain = GridStudy(optuna.load_study(study_name="s", storage=no_beat), no_beat, "b", GRID, stale_after=9)
    assert not plain._beats and plain.grace == 9.0


def test_only_sqlite_file_has_take_lock(tmp_path: Path) -> None:
    assert sqlite_take_lock(optuna.storages.InMemoryStorage()) is None
    journal = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(tmp_path / "j.journal")))
    assert sqlite_take_lock(journal) is None
    assert sqlite_take_lock(optuna.storages.RDBStorage("sqlite://")) is None


def test_open_names_each_difference_of_another_sweeps_settings() -> None:
    storage = optuna.storages.InMemoryStorage()
    mine = {"seeds": [0, 1], "model": {"width": 64, "depth": 2}, "lr": 0.1}
    GridStudy.open(storage, Path("unused"), "s", mine, GRID)
    other = {"seeds": [0, 1], "model": {"width": 128}, "lr": 0.1, "epochs": 3}
    with pytest.raises(StudyMismatchError) as info:
        GridStudy.open(storage, Path("unused"), "s", other, GRID)
    assert str(info.value) == (
        "`TimescaleFinder(study_name='s')`: the study in InMemoryStorage holds a sweep with other settings: epochs is"
        " '(none)' there, 3 here; model.depth is 2 there, '(none)' here; model.width is 64 there, 128 here. Use"
        " another study name (the default is named after the settings), or the study's settings."
    )


def test_differences_of_settings_name_first_four_keys_and_count_rest() -> None:
    here = {"format": 2, "settings": {k: 1 for k in "abcdef"}}
    there = {"format": 2, "settings": {**{k: 2 for k in "abcdef"}, "nested": {}}}
    assert _differences(there, here) == (
        "a is 2 there, 1 here; b is 2 there, 1 here; c is 2 there, 1 here; d is 2 there, 1 here; and 3 more"
    )
    assert _differences({"format": 1, "settings": {}}, here) == "its format is 1, this version writes 2"
    assert _differences({"format": 2}, here) == (
        "it was not made by this version of lightning_tau (its 'lightning_tau' is {'format': 2})"
    )
    assert (
        _differences("x" * 100, here)
        == f"it was not made by this version of lightning_tau (its 'lightning_tau' is '{'x' * 79})"
    )
    assert _flatten({"a": {"b": {"c": 1}, "d": {}}, "e": 2}) == {"a.b.c": 1, "a.d": {}, "e": 2}


class _Refusing(optuna.storages.InMemoryStorage):
    """A storage whose study cannot be created: ``error`` is raised."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    def create_new_study(self, *args: Any, **kwargs: Any) -> int:
        raise self.error


def test_cannot_be_opened_storage_error_in_one_line() -> None:
    with pytest.raises(StorageError) as info:
        GridStudy.open(_Refusing(RuntimeError("refused " + "x" * 400)), Path("unused"), "s", {}, GRID)
    assert (
        str(info.value)
        == f"`TimescaleFinder(storage='_Refusing')`: cannot open the study 's': RuntimeError: refused {'x' * 292}."
    )
    assert info.value.__cause__ is None and info.value.__suppress_context__
    given = StorageError("there", "full")
    with pytest.raises(StorageError) as info:
        GridStudy.open(_Refusing(given), Path("unused"), "s", {}, GRID)
    assert info.value is given


def test_queue_enqueues_takes_in_order_and_finishes_each_point_once() -> None:
    study, said = _open()
    assert study.enqueue_missing() == 4 and study.enqueue_missing() == 0
    taken = [study.take() for _ in range(4)]
    assert [key for _, key in taken] == GRID and study.take() is None  # type: ignore[misc]
    assert [t.params for t, _ in taken] == [{"tau_epoch": tau, "seed": seed} for tau, seed in GRID]  # type: ignore[misc]
    trial, _ = taken[1]  # type: ignore[misc]
    frozen = study.study.trials[1]
    assert frozen.distributions["tau_epoch"] == optuna.distributions.FloatDistribution(*TAU_RANGE, log=True)
    assert frozen.distributions["seed"].choices == (0, 1)
    assert [t.number for t in study.running_elsewhere()] == [0, 1, 2, 3]  # taken, not yet marked as this process's
    with study.working_on(trial):
        assert [t.number for t in study.running_elsewhere()] == [0, 2, 3]
    assert study.finish(trial, _complete(0.5), 0.5) and study.finish(taken[2][0], PRUNED, 0.0)  # type: ignore[index]
    states = [t.state for t in study.study.trials]
    assert states == [TrialState.RUNNING, TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING]
    assert study.study.trials[1].value == 0.5 and study.study.trials[1].user_attrs["record"] == _complete(0.5)
    assert study.records() == {(1.0, 1): _complete(0.5), (4.0, 0): PRUNED}
    assert sorted(study._held) == [0, 3] and study.release("stopped") == 2 and said == []
    assert study.enqueue_missing() == 2  # the failed ones' points, again
    assert [key for _, key in [study.take(), study.take()]] == [(1.0, 0), (4.0, 1)]  # type: ignore[misc]


def test_point_grid_extension_adds_recorded_as_study_records_tau_epoch() -> None:
    # one distribution for every point, whatever the finder adds: a grid point beyond the first grid is one more float
    study, _ = _open()
    study.enqueue_missing()
    study.take()
    grown = GridStudy(study.study, study.storage, "memory", [*GRID, (0.5, 0)])
    grown.enqueue_missing()
    taken = [grown.take() for _ in range(4)]
    assert [t.params for t, key in taken if key == (0.5, 0)] == [{"tau_epoch": 0.5, "seed": 0}]  # type: ignore[misc]
    # a study an earlier version made recorded it as a categorical of its grid: a point beyond it is recorded apart
    earlier, _ = _open()
    earlier.study.add_trial(
        optuna.trial.create_trial(
            state=TrialState.FAIL,
            params={"tau_epoch": 1.0},
            distributions={"tau_epoch": optuna.distributions.CategoricalDistribution((1.0, 4.0))},
        )
    )
    grown = GridStudy(earlier.study, earlier.storage, "memory", [(1.0, 0), (0.5, 0)])
    grown.enqueue_missing()
    params = sorted(str(t.params) for t, _ in [grown.take(), grown.take()])  # type: ignore[misc]
    assert params == ["{'added_tau_epoch': 0.5, 'seed': 0}", "{'tau_epoch': 1.0, 'seed': 0}"]


def test_whose_seeds_grow_records_seed_as_integer() -> None:
    study, _ = _open(seeds_grow=True)
    study.enqueue_missing()
    study.take()
    assert study.study.trials[0].distributions["seed"] == optuna.distributions.IntDistribution(0, 2**32 - 1)


def test_second_trial_of_point_failed_as_duplicate_taken() -> None:
    study, _ = _open([(1.0, 0), (4.0, 0)])
    for tau in (1.0, 1.0, 4.0):  # two processes enqueued (1, 0) at once
        study.study.enqueue_trial({"tau_epoch": tau, "seed": 0}, user_attrs={"tau_epoch": tau, "seed": 0})
    _add(study, TrialState.WAITING, tau_epoch=16.0, seed=0)  # not of this grid: never taken
    first, second = study.take(), study.take()
    assert first is not None and first[0].number == 0 and second is not None and second[1] == (4.0, 0)
    duplicate = study.study.trials[1]
    assert duplicate.state == TrialState.FAIL and duplicate.user_attrs["duplicate_of"] == 0
    assert study.take() is None and sorted(study._held) == [0, 2] and study.study.trials[3].state == TrialState.WAITING


def test_take_lost_to_another_process_marks_claim_lost_and_takes_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    study, _ = _open([(1.0, 0), (4.0, 0)])
    study.enqueue_missing()
    other = GridStudy(study.study, study.storage, "the same storage", study.grid)  # another process's view
    real_pop = study_module._pop

    def raced(optuna_study: optuna.Study, frozen: FrozenTrial) -> bool:
        if frozen.number == 0:  # the other process takes trial 0 between this one's look and its take
            monkeypatch.setattr(study_module, "_pop", real_pop)
            assert other.take() is not None
        return real_pop(optuna_study, frozen)

    monkeypatch.setattr(study_module, "_pop", raced)
    taken = study.take()
    assert taken is not None and taken[1] == (4.0, 0) and list(study._held) == [1]
    [(name, claim)] = [(k, v) for k, v in study.study.trials[0].user_attrs.items() if k.startswith(CLAIM_PREFIX)]
    assert claim == {**this_worker(), "lost": True}


def test_malformed_record_reported_once_and_point_enqueued_again() -> None:
    study, said = _open([(1.0, 0), (4.0, 0), (16.0, 0)])
    _add(study, TrialState.COMPLETE, tau_epoch=1.0, seed=0, record={"format": 1})
    _add(study, TrialState.PRUNED, tau_epoch=4.0, seed=0, record=_complete())
    _add(study, TrialState.COMPLETE, tau_epoch=16.0, seed=0, record=_complete(0.3))
    _add(study, TrialState.COMPLETE, tau_epoch=16.0, seed=0, record=_complete(0.9))  # a later one: not the point's
    _add(study, TrialState.COMPLETE, tau_epoch=64.0, seed=0, record=_complete())  # not of this grid
    assert study.records() == {(16.0, 0): _complete(0.3)}
    assert study.records() == {(16.0, 0): _complete(0.3)}
    assert said == [
        "trial #0 (tau_epoch=1, seed=0) is complete but its stored result is not usable (its format is 1, not 2);"
        " training that grid point again.",
        "trial #1 (tau_epoch=4, seed=0) is complete but its stored result is not usable (it is pruned, and its record"
        " says otherwise); training that grid point again.",
    ]
    assert study.enqueue_missing() == 2


def test_keys_and_their_descriptions() -> None:
    def trial(**attrs: Any) -> FrozenTrial:
        return optuna.trial.create_trial(state=TrialState.COMPLETE, value=1.0, user_attrs=attrs)

    assert _key(trial(tau_epoch=4, seed=1)) == (4.0, 1) and type(_key(trial(tau_epoch=4, seed=1))[0]) is float  # type: ignore[index]
    for bad in [
        dict(tau_epoch=True, seed=1),
        dict(tau_epoch="4", seed=1),
        dict(tau_epoch=4.0, seed=1.0),
        dict(seed=1),
        {},
    ]:
        assert _key(trial(**bad)) is None
    assert _describe(trial(tau_epoch=0.5, seed=3)) == "tau_epoch=0.5, seed=3"
    assert _describe(trial(seed=3)) == "not a grid point"


def test_working_trial_keeps_writing_signs_of_life(tmp_path: Path) -> None:
    # a journal has no heartbeat of its own: the worker writes `alive_at` every `heartbeat` seconds while it trains
    study = GridStudy.open(tmp_path / "s.journal", tmp_path, "s", {"grid": [1]}, [(1.0, 0)], heartbeat=0.05)
    study.enqueue_missing()
    taken = study.take()
    assert taken is not None
    trial, _ = taken
    reader = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(tmp_path / "s.journal")))

    def alive_at() -> float | None:
        return optuna.load_study(study_name="s", storage=reader).trials[0].user_attrs.get("alive_at")

    with study.working_on(trial):
        first = wait_for(alive_at, "the first sign of life", timeout=30)
        second = wait_for(lambda: (alive_at() or first) > first and alive_at(), "a later sign of life", timeout=30)
        wait_for(lambda: (alive_at() or second) > second, "a third sign of life", timeout=30)


# --- dead workers: reclaim ------------------------------------------------------------------------------------------


def test_reclaim_fails_running_trial_whose_worker_on_this_machine_gone(tmp_path: Path) -> None:
    study, said = _open()
    pid, started = _gone_pid()
    me = this_worker()
    gone = _add(study, TrialState.RUNNING, tau_epoch=1.0, seed=0, worker={**me, "pid": pid, "started": started})
    mine = _add(
        study, TrialState.RUNNING, tau_epoch=1.0, seed=1, worker=me, alive_at=0.0
    )  # alive: time does not decide
    assert [t.number for t in study.running_elsewhere()] == [gone]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert study.reclaim() == 1 and study.reclaim() == 0
    assert caught == []  # told FAIL, not left to Optuna's fallback for a trial told without a value (a warning)
    assert [t.state for t in study.study.trials] == [TrialState.FAIL, TrialState.RUNNING] and mine == 1
    assert said == [
        f"trial #0 (tau_epoch=1, seed=0): its worker (pid {pid} on this machine) is gone; handing it to another worker."
    ]


def test_reclaim_fails_trial_of_another_machine_after_stale_after_without_sign_of_life() -> None:
    study, said = _open(stale_after=100)
    elsewhere = {"host": "h2", "machine": "h2/boot", "pid": 5, "started": "1"}
    now = time.time()
    _add(study, TrialState.RUNNING, tau_epoch=1.0, seed=0, worker=elsewhere, alive_at=now - 150)
    _add(study, TrialState.RUNNING, tau_epoch=1.0, seed=1, worker=elsewhere, alive_at=now - 50)
    _add(study, TrialState.RUNNING, datetime.now() - timedelta(seconds=150), tau_epoch=4.0, seed=0, worker={"pid": "x"})
    _add(study, TrialState.RUNNING, datetime.now() - timedelta(seconds=50), tau_epoch=4.0, seed=1)  # untagged, recent
    assert study.reclaim() == 2
    assert [t.state for t in study.study.trials] == [
        TrialState.FAIL,
        TrialState.RUNNING,
        TrialState.FAIL,
        TrialState.RUNNING,
    ]
    assert said[0].startswith("trial #0 (tau_epoch=1, seed=0): no sign of life from its worker (h2, pid 5) for 15")
    assert said[0].endswith(" s (> 100 s); handing it to another worker.")
    assert said[1].startswith("trial #2 (tau_epoch=4, seed=0): no sign of life from its worker (?, pid x) for 15")
    assert [t.number for t in study.running_elsewhere()] == [1, 3]  # another machine's, and one untagged


def test_reclaim_fails_untagged_trial_once_every_claimer_on_this_machine_gone() -> None:
    study, said = _open([*GRID, (16.0, 0)])
    (pid, started), (pid2, started2) = _gone_pid(), _gone_pid()
    me = this_worker()
    gone = {"machine": me["machine"], "pid": pid, "started": started}
    gone2 = {"machine": me["machine"], "pid": pid2, "started": started2}
    _add(study, TrialState.RUNNING, tau_epoch=1.0, seed=0, **{f"{CLAIM_PREFIX}a": gone, f"{CLAIM_PREFIX}b": gone2})
    _add(study, TrialState.RUNNING, tau_epoch=1.0, seed=1, **{f"{CLAIM_PREFIX}a": gone, f"{CLAIM_PREFIX}b": me})
    lost = {**me, "lost": True}  # the one alive lost the take: it does not hold the trial
    _add(study, TrialState.RUNNING, tau_epoch=4.0, seed=0, **{f"{CLAIM_PREFIX}a": gone, f"{CLAIM_PREFIX}b": lost})
    elsewhere = {**me, "machine": "m2"}
    _add(study, TrialState.RUNNING, tau_epoch=4.0, seed=1, **{f"{CLAIM_PREFIX}a": gone, f"{CLAIM_PREFIX}b": elsewhere})
    # claimed on another machine only, by a pid that is gone here (another process there): time decides
    _add(study, TrialState.RUNNING, tau_epoch=16.0, seed=0, **{f"{CLAIM_PREFIX}a": {**gone, "machine": "m2"}})
    assert study.reclaim() == 2
    states = [t.state for t in study.study.trials]
    assert states == [TrialState.FAIL, TrialState.RUNNING, TrialState.FAIL, TrialState.RUNNING, TrialState.RUNNING]
    assert said[0] == (
        f"trial #0 (tau_epoch=1, seed=0): the process that took it (pid {pid}, {pid2} on this machine) is gone before"
        " it marked it as its own; handing it to another worker."
    )


def test_finish_on_trial_handed_on_meanwhile_drops_result() -> None:
    study, said = _open([(1.0, 0)], stale_after=30)
    study.enqueue_missing()
    taken = study.take()
    assert taken is not None
    study.study.tell(taken[0].number, state=TrialState.FAIL)  # another process reclaimed it
    assert study.finish(taken[0], _complete(), 1.0) is False and study._held == {}
    assert said == [
        "trial #0: was handed to another worker while this one trained it (no sign of life for 30 s); its result is"
        " dropped."
    ]


def test_reclaim_on_database_fails_trial_whose_heartbeat_stopped(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'finder.db'}"
    GridStudy.open(url, tmp_path, "s", {"seeds": [0]}, GRID[:2])
    storage = optuna.storages.RDBStorage(url, heartbeat_interval=1, grace_period=1)
    said: list[str] = []
    study = GridStudy(optuna.load_study(study_name="s", storage=storage), storage, "db", GRID[:2], log=said.append)
    study.enqueue_missing()
    taken = study.take()
    assert taken is not None and study.reclaim() == 0  # no heartbeat recorded yet: Optuna does not judge it
    storage.record_heartbeat(taken[0]._trial_id)  # then none: the worker stopped
    assert wait_for(study.reclaim, "the heartbeat to go stale", timeout=60) == 1
    assert study.study.trials[0].state == TrialState.FAIL and study.study.trials[1].state == TrialState.WAITING
    assert said == ["trial #0 (tau_epoch=1, seed=0): its worker's heartbeat stopped (none for 1 s); handing it on."]
    assert study.finish(taken[0], _complete(), 1.0) is False
    assert said[1] == (
        "trial #0: was handed to another worker while this one trained it (no heartbeat for 1 s); its result is"
        " dropped."
    )


def test_pid_reused_by_another_process_dead_worker_and_dead_claimer() -> None:
    study, said = _open()
    parent = os.getppid()  # alive, on this machine; with another start time it is a process that reused the pid
    reused = {**this_worker(), "pid": parent, "started": "0"}
    _add(study, TrialState.RUNNING, tau_epoch=1.0, seed=0, worker=reused)
    _add(study, TrialState.RUNNING, tau_epoch=1.0, seed=1, **{f"{CLAIM_PREFIX}a": reused})
    _add(study, TrialState.RUNNING, tau_epoch=4.0, seed=0, worker={"host": "h3", "machine": "m3"}, alive_at=0.0)
    alive = {**reused, "started": proc_stat(parent)[1]}  # type: ignore[index]
    _add(study, TrialState.RUNNING, tau_epoch=4.0, seed=1, worker=alive, alive_at=0.0)
    assert study.reclaim() == 3
    gone = "on this machine) is gone"
    assert said[0] == f"trial #0 (tau_epoch=1, seed=0): its worker (pid {parent} {gone}; handing it to another worker."
    assert said[1].startswith(f"trial #1 (tau_epoch=1, seed=1): the process that took it (pid {parent} {gone} before")
    assert said[2].startswith("trial #2 (tau_epoch=4, seed=0): no sign of life from its worker (h3, pid ?) for ")


def test_take_lock_of_sqlite_file_held_by_takes_and_enqueues(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'finder.db'}"
    study = GridStudy.open(url, tmp_path, "s", {"seeds": [0]}, GRID)
    lock = tmp_path / "finder.db.take-lock"
    assert lock.exists()  # opened under it
    lock.unlink()
    study.enqueue_missing()
    assert lock.exists()
    lock.unlink()
    assert study.take() is not None and lock.exists()
    assert sqlite_take_lock(optuna.storages.RDBStorage("sqlite:///")) is None  # a temporary database


def test_open_says_through_log_journals_cut_last_line_was_moved_aside(tmp_path: Path) -> None:
    journal = tmp_path / "j.journal"
    GridStudy.open(journal, tmp_path, "s", {"seeds": [0]}, GRID)
    with journal.open("a") as f:
        f.write('{"op_code": 5, "worker_id"')  # a write cut short
    said: list[str] = []
    GridStudy.open(journal, tmp_path, "s", {"seeds": [0]}, GRID, log=said.append)
    assert len(said) == 1 and said[0].startswith(f"the journal {journal} ended in a half-written line")


def test_open_without_storage_uses_journal_in_root_dir(tmp_path: Path) -> None:
    study = GridStudy.open(None, tmp_path, "s", {"seeds": [0]}, GRID)
    assert study.shown == str(tmp_path / "study.journal") and (tmp_path / "study.journal").is_file()
    assert GridStudy(study.study, study.storage, "j", GRID).seeds_grow is False


def test_differences_of_missing_key_and_none_and_of_five_keys() -> None:
    def differ(there: dict[str, Any], here: dict[str, Any]) -> str:
        return _differences({"format": 2, "settings": there}, {"format": 2, "settings": here})

    assert differ({"y": 1}, {"y": 1, "x": None}) == "x is '(none)' there, None here"
    assert differ({"y": 1, "x": None}, {"y": 1}) == "x is None there, '(none)' here"
    five = differ({k: 1 for k in "abcd"}, {"f": None})  # five keys differ
    assert five.endswith("d is 1 there, '(none)' here; and 1 more") and "f is" not in five


def test_name_not_valid_unicode_still_has_folder() -> None:
    folder = study_folder("a\ud800b")  # a lone surrogate, as a file-system name decoded with surrogateescape gives
    assert folder.startswith("a_b-") and len(folder) == len("a_b-") + 8 and folder != study_folder("a\ud801b")


def test_working_on_beats_before_tagging_so_a_kill_between_is_judged(tmp_path: Path) -> None:
    # a worker killed right after tagging its trial: the heartbeat must already be there, or nothing ever hands it on
    url = f"sqlite:///{tmp_path / 'finder.db'}"
    GridStudy.open(url, tmp_path, "s", {"seeds": [0]}, GRID[:1])
    storage = optuna.storages.RDBStorage(url, heartbeat_interval=1, grace_period=1)
    study = GridStudy(optuna.load_study(study_name="s", storage=storage), storage, "db", GRID[:1], log=lambda _: None)
    study.enqueue_missing()
    taken = study.take()
    assert taken is not None
    trial = taken[0]
    tag = trial.set_user_attr

    def tag_then_die(key: str, value: Any) -> None:
        tag(key, value)
        if key == "worker":
            raise SystemExit("killed")

    trial.set_user_attr = tag_then_die  # type: ignore[method-assign]
    with pytest.raises(SystemExit), study.working_on(trial):
        pass
    assert study.study.trials[0].state == TrialState.RUNNING and "worker" in study.study.trials[0].user_attrs
    assert wait_for(study.reclaim, "the heartbeat to go stale", timeout=30) == 1
    assert study.study.trials[0].state == TrialState.FAIL


def test_set_user_attr_writes_only_a_new_value(tmp_path: Path) -> None:
    study = GridStudy.open(tmp_path / "j.journal", tmp_path, "s", {"seeds": [0]}, [(1.0, 0)]).study
    journal = tmp_path / "j.journal"
    set_user_attr(study, "beta2_requested", None)  # absent: written, even as None
    assert study.user_attrs["beta2_requested"] is None
    size = journal.stat().st_size
    set_user_attr(study, "beta2_requested", None)  # held already: no journal line
    assert journal.stat().st_size == size
    set_user_attr(study, "beta2_requested", "both")
    assert study.user_attrs["beta2_requested"] == "both" and journal.stat().st_size > size
