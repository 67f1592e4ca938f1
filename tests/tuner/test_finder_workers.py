"""``lightning-tau find`` as several OS processes on one journal file: a shared grid trained once with trials that
really run at the same time, and a worker SIGKILLed mid-trial whose grid point the next run trains (real Optuna,
real Lightning fits on digits). How the workers start: forks of a server that preloaded torch and Lightning, running
a model factory from the user's own script, each with its own claim token; the width axis with two workers. No
timing: a worker is caught inside a trial by stopping it (SIGSTOP) and looking at the study (see
``finder_procs.stop_inside_a_trial``), or a trial is held until another process's trial has started."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import optuna
import pytest
from axes_models import PlantedData, PlantedWidthModel
from finder_procs import (
    KEYS,
    command,
    finish,
    overlapping,
    run,
    stop_inside_a_trial,
    suggestion,
    trained,
    wait_for,
)
from optuna.trial import TrialState

from lightning_tau.tuner.finder import TimescaleFinder
from lightning_tau.tuner.workers import START_ENV, Workers, start_method

pytest.importorskip("sklearn")


def _study(out: Path) -> optuna.Study | None:
    """The study ``s`` in ``out``'s journal, or ``None`` before a command has created it."""
    if not (out / "study.journal").exists():
        return None
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(out / "study.journal")))
    try:
        return optuna.load_study(study_name="s", storage=storage)
    except KeyError:  # not created yet
        return None


@pytest.mark.slow
def test_two_commands_one_with_two_workers_share_grid_and_train_at_once(
    tmp_path: Path, finder_single: tuple[dict[str, Any], str]
) -> None:
    out = tmp_path / "out"
    procs = [run(command(out, tmp_path / "a.json", "--workers", "2")), run(command(out, tmp_path / "b.json"))]
    # hold the first worker seen inside a trial until another trial runs: two trials at once, whatever the speeds
    pid, held = stop_inside_a_trial(lambda: _study(out), lock=out / "study.journal.lock")
    try:
        wait_for(
            lambda: any(
                t.number != held.number and t.state in (TrialState.RUNNING, TrialState.COMPLETE)
                for t in _study(out).trials  # type: ignore[union-attr]
            ),
            "another trial to start while the first is held",
        )
    finally:
        os.kill(pid, signal.SIGCONT)
    printed = [finish(proc)[0] for proc in procs]
    expected, line = finder_single
    for name, text in zip(("a", "b"), printed):
        assert json.loads((tmp_path / f"{name}.json").read_text()) == expected
        assert suggestion(text) == line
    study = _study(out)
    assert study is not None
    done = trained(study)
    assert sorted(done) == KEYS
    assert all(len(trials) == 1 and trials[0].state == TrialState.COMPLETE for trials in done.values()), done
    assert overlapping(t for trials in done.values() for t in trials)  # two RUNNING intervals overlap
    assert len({t[0].user_attrs["worker"]["pid"] for t in done.values()}) >= 2
    assert len(list((out / "tb" / "s").iterdir())) == 3  # one TensorBoard folder per trial


@pytest.mark.slow
def test_worker_killed_mid_trial_next_run_completes_grid(
    tmp_path: Path, finder_single: tuple[dict[str, Any], str]
) -> None:
    out = tmp_path / "out"
    proc = run(command(out, tmp_path / "killed.json"))
    # stopped inside its second trial (not in a journal write), then killed: the trial stays RUNNING, its worker gone
    pid, victim = stop_inside_a_trial(
        lambda: _study(out), pids=lambda: {proc.pid}, after_complete=1, lock=out / "study.journal.lock"
    )
    os.kill(pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    study = _study(out)
    assert study is not None and study.trials[victim.number].state == TrialState.RUNNING
    done_before = {t.number for t in study.trials if t.state == TrialState.COMPLETE}
    assert done_before

    printed, _ = finish(run(command(out, tmp_path / "again.json")))
    expected, line = finder_single
    assert json.loads((tmp_path / "again.json").read_text()) == expected and suggestion(printed) == line
    study = _study(out)
    assert study is not None
    assert study.trials[victim.number].state == TrialState.FAIL  # the killed trial, handed on and counted once
    done = trained(study)
    for key, trials in done.items():
        complete = [t for t in trials if t.state == TrialState.COMPLETE]
        assert len(complete) == 1, key
        if complete[0].number in done_before:
            assert len(trials) == 1  # finished before the kill: never trained again
    assert sorted(done) == KEYS
    assert len(done[(victim.user_attrs["tau_epoch"], 0)]) == 2  # the killed one and its retraining


# --- how the workers start ------------------------------------------------------------------------------------

#: A user's script with its model factory defined in it (so in ``__main__``): ``python sweep.py OUT``. Each call of
#: ``make_model`` writes what its process is; the script's own first trial waits until another process has taken a
#: trial (two trials at once, whatever the speeds).
SCRIPT = """
import json
import os
import sys
import time
from pathlib import Path

from lightning_tau.demos.digits import DigitsDataModule, DigitsMLP
from lightning_tau.tuner import workers
from lightning_tau.tuner.finder import TimescaleFinder

OUT = Path(sys.argv[1])
CALLS = {"n": 0}


def make_model():
    facts = {"pid": os.getpid(), "ppid": os.getppid(), "preloaded": workers.preloaded(), "module": __name__}
    facts["mark"] = os.environ.get("TAU_SCRIPT_MARK")
    with open(OUT / f"calls-{os.getpid()}.jsonl", "a") as f:
        f.write(json.dumps(facts) + "\\n")
    CALLS["n"] += 1
    if __name__ == "__main__" and CALLS["n"] == 2:  # the script's first trial (its first call is fit's probe)
        deadline = time.monotonic() + 240
        others = lambda: [p for p in OUT.glob("calls-*.jsonl") if p.stem != f"calls-{os.getpid()}"]
        while not any(len(p.read_text().splitlines()) >= 2 for p in others()):
            if time.monotonic() > deadline:
                raise SystemExit("no worker took a trial in 240 s")
            time.sleep(0.02)
    return DigitsMLP()


if __name__ == "__main__":
    finder = TimescaleFinder(
        fraction=0.25,
        tau_epochs=(2, 4, 8),
        seeds=(0,),
        max_grid_extensions=0,  # the grid given: KEYS
        monitor="val/loss",
        trainer_kwargs={"max_epochs": 2, "accelerator": "cpu", "devices": 1},
        root_dir=OUT,
        study_name="s",
        workers=2,
        progress=False,
        verbose=False,
    )
    os.environ["TAU_SCRIPT_MARK"] = "set after the workers' server started"
    result = finder.fit(make_model, datamodule=DigitsDataModule(train_size=400, batch_size=64))
    print(json.dumps({"pid": os.getpid(), "trained": finder.trained_runs, "tau_epoch": result.tau_epoch}))
"""


@pytest.mark.slow
def test_fork_from_preloaded_server_and_run_model_factory_from_users_script(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "sweep.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "LIGHTNING_TAU_WORKER_START"}  # the default start
    printed, _ = finish(run([sys.executable, str(tmp_path / "sweep.py"), str(out)], **env))
    main = json.loads(printed.splitlines()[-1])
    calls = {
        int(p.stem.split("-")[1]): [json.loads(line) for line in p.read_text().splitlines()]
        for p in out.glob("calls-*.jsonl")
    }
    worker_pids = set(calls) - {main["pid"]}
    assert len(worker_pids) == 1, calls  # one worker besides the script's own process
    (worker,) = worker_pids
    # the script's own make_model ran in the worker, from its main module run again as `__mp_main__` (spawn's way)
    assert {c["module"] for c in calls[worker]} == {"__mp_main__"}
    # ... in a process that found torch and Lightning imported: a fork of the server that preloaded them, not of
    # the script (whose torch has run) and not a fresh interpreter
    assert all(c["preloaded"] for c in calls[worker]), calls[worker]
    assert {c["ppid"] for c in calls[worker]} != {main["pid"]}
    assert not any(c["preloaded"] for c in calls[main["pid"]])
    # the environment the script had when the worker started, not the server's older one
    assert {c["mark"] for c in calls[worker]} == {"set after the workers' server started"}

    study = optuna.load_study(
        study_name="s",
        storage=optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(out / "study.journal"))),
    )
    done = trained(study)
    assert sorted(done) == [(2.0, 0), (4.0, 0), (8.0, 0)]  # SCRIPT's grid
    assert all(len(trials) == 1 and trials[0].state == TrialState.COMPLETE for trials in done.values()), done
    assert {t[0].user_attrs["worker"]["pid"] for t in done.values()} == {main["pid"], worker}
    assert overlapping(t for trials in done.values() for t in trials)
    # each process claims trials under a token of its own (a fork's is not its server's)
    tokens: dict[str, set[int]] = {}
    for trial in study.trials:
        for key, claim in trial.user_attrs.items():
            if key.startswith("claim/"):
                tokens.setdefault(key, set()).add(claim["pid"])
    assert sorted(pid for pids in tokens.values() for pid in pids) == sorted({main["pid"], worker})
    assert all(len(pids) == 1 for pids in tokens.values()), tokens


class HoldFirstTrial(pl.Callback):
    """Holds the first trial of the process that made it until a trial of another process has started (two trials
    at once, whatever the speeds); ``journal=None`` holds nothing. Shared by every run, so it travels to the workers,
    where it holds nothing either (another process made it)."""

    def __init__(self, journal: Path | None) -> None:
        self.journal, self.owner, self.held = journal, os.getpid(), journal is None

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self.held or os.getpid() != self.owner:
            return
        self.held = True
        wait_for(self._another_started, "a worker's trial to start")

    def _another_started(self) -> bool:
        storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(self.journal)))
        return any(
            t.user_attrs.get("worker", {}).get("pid") not in (None, self.owner)
            for name in optuna.get_all_study_names(storage)
            for t in optuna.load_study(study_name=name, storage=storage).get_trials(deepcopy=False)
        )


@pytest.mark.slow
def test_width_axis_with_two_workers_trains_each_point_once_and_gives_one_worker_result(
    tmp_path: Path,
) -> None:
    widths, taus, seeds = (8, 16), (2.0, 4.0, 8.0), (0, 1, 2)

    def fit(root: Path, workers: int) -> tuple[TimescaleFinder, Any]:
        finder = TimescaleFinder(
            axis="width",
            widths=widths,
            tau_epochs=taus,
            seeds=seeds,
            max_grid_extensions=0,  # the grid given: the trials counted below
            fraction=1.0,
            trainer_kwargs={
                "max_epochs": 1,
                "accelerator": "cpu",
                "devices": 1,
                "callbacks": [HoldFirstTrial(root / "study.journal" if workers > 1 else None)],
            },
            root_dir=root,
            study_name="w",
            workers=workers,
            progress=False,
            verbose=False,
        )
        return finder, finder.fit(PlantedWidthModel, datamodule=PlantedData())

    one_finder, one = fit(tmp_path / "one", 1)
    two_finder, two = fit(tmp_path / "two", 2)
    # the same seeds and a metric that is a function of the weight decay the callback set: the same answer, to the
    # last digit, whichever process trained which point
    assert json.loads(two.save_json(tmp_path / "two.json").read_text()) == json.loads(
        one.save_json(tmp_path / "one.json").read_text()
    )
    assert two.exponent == one.exponent and two.verdict == one.verdict
    assert one_finder.trained_runs == len(widths) * len(taus) * len(seeds)
    assert two_finder.trained_runs < len(widths) * len(taus) * len(seeds)  # the rest trained in the worker
    pids = set()
    for width, study in zip(widths, two_finder.studies):
        assert study.study.study_name == f"w_width={width}"
        done = trained(study.study)
        assert sorted(done) == [(tau, seed) for tau in taus for seed in seeds]
        assert all(len(trials) == 1 and trials[0].state == TrialState.COMPLETE for trials in done.values()), done
        pids |= {trials[0].user_attrs["worker"]["pid"] for trials in done.values()}
    assert len(pids) == 2 and os.getpid() in pids


def test_start_from_forkserver_on_linux_spawn_on_request_and_bad_choice_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from lightning_tau.cli import main

    monkeypatch.delenv(START_ENV, raising=False)
    assert start_method() == ("forkserver" if sys.platform.startswith("linux") else "spawn")
    monkeypatch.setenv(START_ENV, "spawn")
    assert start_method() == "spawn"
    monkeypatch.setenv(START_ENV, "fork")  # fork after torch has run is not safe: refused
    with pytest.raises(ValueError, match=r"^`LIGHTNING_TAU_WORKER_START=fork` is not valid: use 'spawn'"):
        start_method()
    # the command says so in one line, before it imports torch or trains anything
    assert main(["find", "--workers", "2", "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("lightning-tau find: error: `LIGHTNING_TAU_WORKER_START=fork` is not valid")
    assert not (tmp_path / "o").exists()


def _report_token(folder: str) -> None:
    """A worker's body for the test below: write this process's claim token."""
    from lightning_tau.tuner.study import liveness

    (Path(folder) / f"{os.getpid()}.json").write_text(json.dumps({"pid": os.getpid(), "token": liveness.claim_token()}))


@pytest.mark.slow
def test_each_forked_worker_claims_trials_under_token_of_own(tmp_path: Path) -> None:
    """Forks of one server share what it made at import: a claim token made then would be every worker's, and one
    worker's lost take would mark another's claim lost (its trial then waits out ``stale_after`` if it dies)."""
    from lightning_tau.tuner.study import liveness

    procs = Workers(_report_token, (str(tmp_path),), 2, "token-probe")
    procs.join()
    assert procs.errors == [] and [code for _, code in procs.exit_codes()] == [0, 0]
    reports = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert len({r["pid"] for r in reports}) == 2
    assert len({r["token"] for r in reports} | {liveness.claim_token()}) == 3


SCRIPT_MODEL = """
import sys
from lightning_tau.demos.digits import DigitsDataModule, DigitsMLP
from lightning_tau.tuner.finder import TimescaleFinder


class ScriptMLP(DigitsMLP):  # a model class of the user's own script: `__mp_main__.ScriptMLP` in a worker
    pass


if __name__ == "__main__":
    finder = TimescaleFinder(
        tau_epochs=(2, 8), seeds=(0, 1, 2), root_dir=sys.argv[1], progress=False, verbose=False, monitor="val/loss",
        workers=2, trainer_kwargs={"max_epochs": 2, "accelerator": "cpu"}, max_grid_extensions=0,
    )
    model = ScriptMLP() if sys.argv[2] == "instance" else ScriptMLP
    finder.fit(model, datamodule=DigitsDataModule(train_size=1400, batch_size=64))
"""


@pytest.mark.slow
@pytest.mark.parametrize("given", ["instance", "class"])
def test_model_of_users_script_with_two_workers_one_study_each_grid_point_joins_once(
    tmp_path: Path, given: str
) -> None:
    """``fit(MyModel(), ...)`` or ``fit(MyModel, ...)`` with ``workers=2``, ``MyModel`` defined in the script: the
    worker must open the script's study. It keyed another one and trained the whole grid a second time there: its
    class was ``__mp_main__.MyModel`` (the worker imports the script under that name), and an instance was sent as
    its copier, keyed "a factory called per seed"."""
    out = tmp_path / "out"
    (tmp_path / "sweep.py").write_text(SCRIPT_MODEL)
    env = {k: v for k, v in os.environ.items() if k != "LIGHTNING_TAU_WORKER_START"}
    _, err = finish(run([sys.executable, str(tmp_path / "sweep.py"), str(out), given], **env))
    assert "could not start worker" not in err, err  # the worker ran
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(out / "study.journal")))
    (name,) = optuna.get_all_study_names(storage)
    study = optuna.load_study(study_name=name, storage=storage)
    keys = sorted((t.params["tau_epoch"], t.params["seed"]) for t in study.trials)
    assert keys == [(2, 0), (2, 1), (2, 2), (8, 0), (8, 1), (8, 2)]
    assert all(t.state == TrialState.COMPLETE for t in study.trials)
    model = study.user_attrs["lightning_tau"]["settings"]["model"]
    assert model["class"] == "__main__.ScriptMLP"
    assert model["init"] == (
        "an instance initialized afresh per seed" if given == "instance" else "a factory called per seed"
    )


#: A user's script with no ``if __name__ == "__main__":``: each worker runs it again as it imports it.
UNGUARDED = """
from lightning_tau.demos.digits import DigitsDataModule, DigitsMLP
from lightning_tau.tuner.finder import TimescaleFinder

finder = TimescaleFinder(
    fraction=0.5, tau_epochs=(2, 4), seeds=(0,), monitor="val/loss", root_dir=".", workers=2,
    trainer_kwargs={"max_epochs": 1, "accelerator": "cpu", "devices": 1}, progress=False, verbose=False,
)
finder.fit(DigitsMLP, datamodule=DigitsDataModule(train_size=400, batch_size=64))
print("the script went on")
"""


@pytest.mark.slow
def test_script_without_main_guard_stops_with_one_line_naming_it(tmp_path: Path) -> None:
    """Its worker would start the finder again while importing it (multiprocessing's 30-line "bootstrapping phase"
    traceback): the script stops, non-zero, with one line that shows the guard (400 samples: a start message larger
    than a pipe's buffer, so a worker that dies importing the script must not break the pipe before its exit code)."""
    (tmp_path / "sweep.py").write_text(UNGUARDED)
    env = {k: v for k, v in os.environ.items() if k != START_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[2]), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "sweep.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240
    )
    printed = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode != 0
    assert printed == [
        "`TimescaleFinder(workers=2)`: the worker processes import your script, which starts the finder again at"
        ' import; put the script\'s code under `if __name__ == "__main__":`.'
    ], printed
