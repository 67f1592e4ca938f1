"""The finder's Optuna study, in one process: the suggestion against its curve, a model instance, stored results
that are malformed, dead and stale workers, duplicates, storages and their errors (real Optuna, real fits)."""

from __future__ import annotations

import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import optuna
import pytest
import torch
from finder_study import (
    DROP,
    LR,
    TRUE_TAU,
    CurveModel,
    copy_study,
    curve_loaders,
    fit_finder,
    journal_study,
    make_finder,
    with_attrs,
)
from optuna.trial import TrialState

from lightning_tau import TimescaleCallback
from lightning_tau.tuner.finder import SettingError, TimescaleFinder
from lightning_tau.tuner.study import liveness
from lightning_tau.tuner.study.storage import StorageError

# --- the suggestion against the curve it came from -------------------------------------------------------------


@pytest.mark.parametrize(("mode", "sign"), [("min", 1.0), ("max", -1.0)])
@pytest.mark.slow
def test_suggestion_vertex_of_curve_around_best_interior_point(
    tmp_path: Path, mode: str, sign: float
) -> None:
    # the metric is a parabola in log(tau_epoch) with its best at 6: grid best 4 (interior), the smoothing through
    # (1, 4, 16) gives exactly 6. The wrong direction, or any other grid point, fails here.
    finder = make_finder(tmp_path, mode=mode, seeds=(0, 1))
    result = fit_finder(finder, lambda: CurveModel(sign))
    values = {p.tau_epoch: p.mean for p in result.curve}
    assert values == {t: pytest.approx(sign * (1 + (math.log(t) - math.log(TRUE_TAU)) ** 2)) for t in values}
    assert (result.grid_tau_epoch, result.at_edge, result.smoothed) == (4.0, False, True)
    assert result.tau_epoch == pytest.approx(TRUE_TAU, rel=1e-6)  # float32 metrics
    # and the full run's weight decay follows from it: 1 / (lr * tau * M), M = 64 / 16 = 4 steps per epoch
    assert result.weight_decay == {"decay": pytest.approx(1 / (LR * TRUE_TAU * 4))}


@pytest.mark.slow
def test_model_instance_trains_seeded_fresh_copies_and_result_gives_callback(tmp_path: Path) -> None:
    class Starts(pl.Callback):
        def __init__(self) -> None:
            self.weights: list[torch.Tensor] = []

        def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
            self.weights.append(pl_module.net.weight.detach().clone())

    starts = Starts()
    model = CurveModel()
    initial = model.net.weight.detach().clone()
    finder = make_finder(
        tmp_path, seeds=(0, 1), trainer_kwargs={"max_epochs": 1, "accelerator": "cpu", "callbacks": [starts]}
    )
    result = fit_finder(finder, model)
    # every trial starts from its seed's own initialization (grid order: tau_epoch by tau_epoch, seeds 0, 1)
    assert len(starts.weights) == 8 and not torch.equal(starts.weights[0], starts.weights[1])
    assert all(torch.equal(w, starts.weights[i % 2]) for i, w in enumerate(starts.weights))
    assert torch.equal(model.net.weight, initial)  # the user's instance is not trained
    assert result.tau_epoch == pytest.approx(TRUE_TAU)
    callback = result.callback(verbose=False)
    assert isinstance(callback, TimescaleCallback) and callback.tau_epoch == pytest.approx(TRUE_TAU)
    # the full run with it: the weight decay is what the finder said, from the first optimizer step
    seen: list[float] = []
    full = CurveModel()
    trainer = pl.Trainer(
        max_epochs=1, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, num_sanity_val_steps=0, callbacks=[callback],
    )  # fmt: skip

    def record(optimizer: torch.optim.Optimizer, *args: Any) -> None:
        seen.append(next(g["weight_decay"] for g in optimizer.param_groups if g["weight_decay"] > 0))

    class Hook(pl.Callback):
        def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
            trainer.optimizers[0].register_step_post_hook(record)

    trainer.callbacks.append(Hook())
    train, val = curve_loaders()
    trainer.fit(full, train_dataloaders=train, val_dataloaders=val)
    assert len(seen) == 4 and all(wd == pytest.approx(result.weight_decay["decay"]) for wd in seen)


# --- what the study holds --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[TimescaleFinder, Any]:
    finder = make_finder(tmp_path_factory.mktemp("reference"))
    return finder, fit_finder(finder)


@pytest.mark.parametrize("bad", [None, [], {"format": 2}, DROP, {"format": 1, "groups": {}}])
@pytest.mark.slow
def test_malformed_stored_result_trained_again(
    tmp_path: Path, reference: tuple[TimescaleFinder, Any], bad: Any, caplog: pytest.LogCaptureFixture
) -> None:
    source, expected = reference
    journal = tmp_path / "copy.journal"
    copy_study(journal_study(source), journal, {(4.0, 0): lambda t: with_attrs(t, record=bad)})
    finder = make_finder(tmp_path, storage=journal, verbose=True)
    result = fit_finder(finder)
    assert (finder.reused_runs, finder.trained_runs) == (3, 1)
    assert result.to_json() == expected.to_json()
    assert "trial #1 (tau_epoch=4, seed=0) is complete but its stored result is not usable (" in caplog.text


@pytest.mark.slow
def test_dead_and_stale_workers_trials_handed_on_live_ones_waited_for(
    tmp_path: Path, reference: tuple[TimescaleFinder, Any]
) -> None:
    source, expected = reference
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a pid that ran on this machine and is gone (as after SIGKILL)
    live = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    stat = liveness.proc_stat(live.pid)
    assert stat is not None
    here = liveness.this_worker()
    running = TrialState.RUNNING
    far = {"host": "far", "machine": "far/1"}
    try:
        copy_study(
            journal_study(source),
            tmp_path / "copy.journal",
            {
                (1.0, 0): lambda t: with_attrs(t, state=running, record=DROP, worker={**here, "pid": gone.pid}),
                # another machine's worker that started just now (no sign of life yet: its start counts)
                (4.0, 0): lambda t: with_attrs(t, state=running, record=DROP, worker=far),
                # another machine's worker silent for 115 days
                (16.0, 0): lambda t: with_attrs(t, state=running, record=DROP, worker=far, alive_at=time.time() - 1e7),
                # a live process on this machine, silent as long as the last one: alive, so never handed on
                (64.0, 0): lambda t: with_attrs(
                    t, state=running, record=DROP, worker={**here, "pid": live.pid, "started": stat[1]}, alive_at=0.0
                ),
            },
        )
        finder = make_finder(tmp_path, storage=tmp_path / "copy.journal", stale_after=1e6)
        assert fit_finder(finder, wait=False) is None
        assert (finder.trained_runs, finder.pending_runs) == (2, 2)  # the dead pid's and the stale one's
        trials = journal_study(finder).trials
        failed = sorted((t.user_attrs["tau_epoch"], t.number) for t in trials if t.state == TrialState.FAIL)
        assert [tau for tau, _ in failed] == [1.0, 16.0]
        assert [t.user_attrs["tau_epoch"] for t in trials if t.state == TrialState.RUNNING] == [4.0, 64.0]
        # the far worker stale too (any silence counts now): handed on; the live local one still waited for
        finder = make_finder(tmp_path, storage=tmp_path / "copy.journal", stale_after=1e-3)
        assert fit_finder(finder, wait=False) is None
        assert (finder.trained_runs, finder.pending_runs) == (1, 1)
        assert [t.user_attrs["tau_epoch"] for t in journal_study(finder).trials if t.state == running] == [64.0]
    finally:
        live.communicate(b"")  # its process ends
    finder = make_finder(tmp_path, storage=tmp_path / "copy.journal", stale_after=1e6)
    assert fit_finder(finder).to_json() == expected.to_json() and finder.trained_runs == 1


class _HandOver(pl.Callback):
    """Plays another worker that takes over the first trial while this one trains it: fails it in the storage."""

    def __init__(self, storage: str | Path) -> None:
        self.storage = storage
        self.failed: list[int] = []

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self.failed:
            return
        storage = self.storage
        if not isinstance(storage, str):
            storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(storage)))
        (name,) = optuna.get_all_study_names(storage)
        study = optuna.load_study(study_name=name, storage=storage)
        (trial,) = [t for t in study.trials if t.state == TrialState.RUNNING]
        study.tell(trial.number, state=TrialState.FAIL)
        self.failed.append(trial.number)


@pytest.mark.parametrize("backend", ["journal", "database"])
@pytest.mark.slow
def test_trial_handed_on_while_training_dropped_and_trained_again(
    tmp_path: Path,
    reference: tuple[TimescaleFinder, Any],
    backend: str,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LIGHTNING_TAU_HEARTBEAT", "2")  # a database's grace: 4 beats, 8 s
    storage: str | Path = tmp_path / "s.journal" if backend == "journal" else f"sqlite:///{tmp_path / 's.db'}"
    hand_over = _HandOver(storage)
    trainer_kwargs = {"max_epochs": 1, "accelerator": "cpu", "devices": 1, "callbacks": [hand_over]}
    finder = make_finder(tmp_path, storage=storage, trainer_kwargs=trainer_kwargs, verbose=True, stale_after=300)
    assert fit_finder(finder).to_json() == reference[1].to_json()
    assert finder.trained_runs == 4  # the dropped result is not counted: its point was trained again
    (number,) = hand_over.failed
    grace = "no sign of life for 300 s" if backend == "journal" else "no heartbeat for 8 s"  # what decided
    assert f"trial #{number}: was handed to another worker while this one trained it ({grace})" in caplog.text
    trials = finder.study.study.trials  # type: ignore[union-attr]
    assert trials[number].state == TrialState.FAIL and "record" not in trials[number].user_attrs


@pytest.mark.slow
def test_duplicate_enqueued_point_trained_once(tmp_path: Path, reference: tuple[TimescaleFinder, Any]) -> None:
    source, expected = reference
    journal = tmp_path / "copy.journal"
    copy_study(
        journal_study(source), journal, {(4.0, 0): lambda t: with_attrs(t, state=TrialState.WAITING, record=DROP)}
    )
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(journal)))
    study = optuna.load_study(study_name=journal_study(source).study_name, storage=storage)
    study.enqueue_trial({"tau_epoch": 4.0, "seed": 0}, user_attrs={"tau_epoch": 4.0, "seed": 0})
    finder = make_finder(tmp_path, storage=journal)
    assert fit_finder(finder).to_json() == expected.to_json() and finder.trained_runs == 1
    fours = [t for t in journal_study(finder).trials if t.user_attrs["tau_epoch"] == 4.0]
    assert [t.state for t in fours] == [TrialState.COMPLETE, TrialState.FAIL]
    assert fours[1].user_attrs["duplicate_of"] == fours[0].number and "worker" not in fours[1].user_attrs


# --- storages --------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_database_url_storage(tmp_path: Path, reference: tuple[TimescaleFinder, Any]) -> None:
    url = f"sqlite:///{tmp_path / 'finder.db'}"
    first = make_finder(tmp_path, storage=url)
    assert fit_finder(first).to_json() == reference[1].to_json()
    again = make_finder(tmp_path, storage=url)
    fit_finder(again)
    assert (again.trained_runs, again.reused_runs) == (0, 4)
    assert not (tmp_path / "finder" / "study.journal").exists()


def test_bad_storages_fail_before_training_and_never_show_password(tmp_path: Path) -> None:
    secret = "pa55w0rd"
    for storage, match in [
        (f"postgresql://tau:{secret}@127.0.0.1:1/finder", r"storage='postgresql://tau:\*\*\*@127.0.0.1:1/finder'\)`"),
        (f"sqlite:///{tmp_path}/no/such/dir/f.db", r"cannot open the database: OperationalError"),
        (tmp_path, r"cannot write the journal file: .*is a folder"),
        ("/proc/finder.journal", r"cannot write the journal file"),
    ]:
        with pytest.raises(StorageError, match=match) as info:
            fit_finder(make_finder(tmp_path, storage=storage))
        assert secret not in str(info.value) and "\n" not in str(info.value)
    assert not (tmp_path / "finder").exists()  # nothing trained


def test_bad_heartbeat_setting_refused_before_any_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIGHTNING_TAU_HEARTBEAT", "0.5")
    with pytest.raises(ValueError, match=r"`LIGHTNING_TAU_HEARTBEAT='0.5'` is not valid: use a positive whole"):
        fit_finder(make_finder(tmp_path))
    assert not (tmp_path / "finder" / "tb").exists()


def test_workers_need_model_and_data_pickle(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"workers=2\)` sends the model and the data.*do not pickle"):
        fit_finder(make_finder(tmp_path, workers=2), lambda: CurveModel())


def test_seeds_numpy_cannot_take_and_timescales_callback_cannot_set_fail_before_training(tmp_path: Path) -> None:
    for seeds in ([0, -1], [2**32]):
        with pytest.raises(ValueError, match=r"is not a seed numpy accepts; use integers from 0 to 4294967295"):
            make_finder(tmp_path, seeds=seeds)
    # M = 32 / 16 = 2 steps per epoch of the subset: 1e308 epochs is inf steps, 0.25 epochs half a step
    for taus, match in [
        ((4.0, 1e308), r"tau_epoch=1e\+308 is inf optimizer steps at M=2 .* Use tau_epochs below 8.988e\+307"),
        ((0.25, 4.0), r"tau_epoch=0.25 is 0.5 optimizer steps at M=2 .* Use tau_epochs above 0.5 \(one step\)"),
    ]:
        with pytest.raises(SettingError, match=match) as info:
            fit_finder(make_finder(tmp_path, tau_epochs=taus))
        assert info.value.argument == "tau_epochs"
    assert not (tmp_path / "finder").exists()  # no study, nothing trained


@pytest.mark.slow
def test_workers_capped_at_trials_left(
    tmp_path: Path, reference: tuple[TimescaleFinder, Any], caplog: pytest.LogCaptureFixture
) -> None:
    source, expected = reference
    journal = tmp_path / "copy.journal"
    copy_study(journal_study(source), journal, {(4.0, 0): lambda t: with_attrs(t, state=TrialState.FAIL, record=DROP)})
    finder = make_finder(tmp_path, storage=journal, workers=3, verbose=True)
    assert fit_finder(finder).to_json() == expected.to_json() and finder.trained_runs == 1
    assert "TimescaleFinder: workers=3 capped at 1 (the number of trials left to train)." in caplog.text
    assert "workers on this machine" not in caplog.text  # no worker process started


class _LastEpochWorse(CurveModel):
    """``CurveModel``'s metric, plus 10 at the last epoch only: ``reduce="last"`` sees the jump, ``"best"`` not."""

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        group = next(g for g in self.trainer.optimizers[0].param_groups if g["weight_decay"] > 0)
        tau = 1.0 / (group["lr"] * group["weight_decay"] * self.trainer.num_training_batches)
        jump = 10.0 if self.current_epoch == self.trainer.max_epochs - 1 else 0.0
        self.log("val_loss", 1.0 + (math.log(tau) - math.log(TRUE_TAU)) ** 2 + jump)


@pytest.mark.parametrize("reduce", ["last", "best"])
@pytest.mark.slow
def test_reduce_picks_each_runs_last_or_best_epoch_for_curve_and_study(tmp_path: Path, reduce: str) -> None:
    finder = make_finder(tmp_path, reduce=reduce, tau_epochs=(2.0, 6.0, 18.0), trainer_kwargs={"max_epochs": 2})
    result = fit_finder(finder, _LastEpochWorse)
    expected = [1.0 + math.log(t / TRUE_TAU) ** 2 + (10.0 if reduce == "last" else 0.0) for t in (2.0, 6.0, 18.0)]
    assert [p.values[0] for p in result.curve] == pytest.approx(expected, rel=1e-5)
    told = sorted((t.params["tau_epoch"], t.value) for t in journal_study(finder).trials)
    assert [value for _, value in told] == pytest.approx(expected, rel=1e-5)


@pytest.mark.slow
def test_docs_python_reuse_recipe_for_axis_sweep_trains_nothing_second_time(tmp_path: Path) -> None:
    # docs/finder.rst's recipe as written, on a tiny planted μP model: a named width sweep run twice from Python
    import functools

    from axes_models import PlantedData, PlantedWidthModel

    make_model, dm = functools.partial(PlantedWidthModel, exponent=0.0), PlantedData()
    trainer = {"max_epochs": 1, "accelerator": "cpu", "devices": 1}
    quiet = {"fraction": 1.0, "progress": False, "verbose": False, "root_dir": tmp_path}  # not in the recipe: tiny
    kwargs = dict(axis="width", widths=(8, 16), tau_epochs=(2, 8), seeds=(0, 1, 2),
                  trainer_kwargs=trainer, storage=str(tmp_path / "width.journal"), study_name="my_width")  # fmt: skip
    first = TimescaleFinder(**kwargs, **quiet).fit(make_model, datamodule=dm)
    again = TimescaleFinder(**kwargs, **quiet)
    result = again.fit(make_model, datamodule=dm)
    assert again.trained_runs == 0 and result.exponent == first.exponent
    assert [s.study.study_name for s in again.studies] == ["my_width_width=8", "my_width_width=16"]  # as the docs say
