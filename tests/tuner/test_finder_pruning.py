"""The finder with an Optuna pruner: hopeless ``tau_epoch`` runs stop early, end PRUNED in the study, are listed as
pruned (table, JSON, figure, study attributes) and never enter the curve; a rerun trains nothing; two workers
share the pruning; bad pruner arguments fail before training (real Optuna, real Lightning fits)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import optuna
import pytest
from finder_results import finder_result
from finder_study import BATCH, TRUE_TAU, CurveModel, N, curve_loaders
from optuna.trial import TrialState

from lightning_tau.tuner.finder import TimescaleFinder
from lightning_tau.tuner.analysis.finder_result import CurvePoint, FinderResult, PrunedPoint

GRID = (1.5, 3.0, 6.0, 11.0, 96.0)
EPOCHS = 3


#: The runs go seed by seed and the pruner judges the first seed's. ``"median"`` at 3 epochs is
#: ``MedianPruner(n_startup_trials=3, n_warmup_steps=0)``: the first seed's 1.5, 3 and 6 complete unpruned (start-up:
#: val_loss 2.92, 1.48, 1.0); 11 (1.37) is better than their median (1.48) and completes; 96 (8.69) is pruned after
#: its first epoch. The second seed's runs train in full, except at 96, which is not trained.
PRUNER = "median"


def _finder(root: Path, **kwargs: Any) -> TimescaleFinder:
    settings: dict[str, Any] = dict(
        fraction=0.5,
        tau_epochs=GRID,
        seeds=(0, 1),
        trainer_kwargs={"max_epochs": EPOCHS, "accelerator": "cpu", "devices": 1},
        root_dir=root,
        progress=False,
        verbose=False,
    )
    settings.update(kwargs)
    return TimescaleFinder(**settings)


def _fit(finder: TimescaleFinder) -> Any:
    train, val = curve_loaders()
    return finder.fit(CurveModel, train_dataloaders=train, val_dataloaders=val)


def _trials(finder: TimescaleFinder) -> dict[tuple[float, int], optuna.trial.FrozenTrial]:
    assert finder.study is not None
    return {(t.user_attrs["tau_epoch"], t.user_attrs["seed"]): t for t in finder.study.study.trials}


@pytest.fixture(scope="module")
def pruned(tmp_path_factory: pytest.TempPathFactory) -> tuple[TimescaleFinder, FinderResult]:
    finder = _finder(tmp_path_factory.mktemp("pruned"), pruner=PRUNER)
    return finder, _fit(finder)


@pytest.mark.slow
def test_hopeless_tau_epoch_pruned_in_study_and_never_on_curve(
    pruned: tuple[TimescaleFinder, FinderResult],
) -> None:
    finder, result = pruned
    trials = _trials(finder)
    assert len(trials) == len(GRID) * 2  # one trial per grid point, none failed or retried
    states = {key: t.state for key, t in trials.items()}
    assert {key for key, s in states.items() if s == TrialState.PRUNED} == {(96.0, 0), (96.0, 1)}
    assert {key for key, s in states.items() if s == TrialState.COMPLETE} == set(trials) - {(96.0, 0), (96.0, 1)}
    # the run was stopped after its first epoch (of 3), its sibling seed not trained at all
    steps_per_epoch = N // 2 // BATCH
    assert trials[(96.0, 0)].user_attrs["record"]["steps"] == steps_per_epoch
    assert trials[(96.0, 0)].intermediate_values == {0: pytest.approx(1 + math.log(16) ** 2)}
    assert trials[(96.0, 1)].user_attrs["record"]["steps"] == 0
    assert trials[(96.0, 1)].intermediate_values == {}
    # the first seed's runs report every epoch; the second seed's, which the pruner does not judge, do not
    assert trials[(6.0, 0)].intermediate_values.keys() == {0, 1, 2}
    assert trials[(6.0, 1)].intermediate_values == {}
    # the curve holds only the tau_epochs whose every seed completed
    assert [p.tau_epoch for p in result.curve] == [1.5, 3.0, 6.0, 11.0]
    assert [(p.tau_epoch, p.pruned_after) for p in result.pruned] == [(96.0, [1, 0])]
    # cost: every step trained, the pruned run's too (4 full tau_epochs x 2 seeds, and 1 epoch)
    assert result.cost == 4 * 2 * EPOCHS * steps_per_epoch + steps_per_epoch
    assert result.full_cost == len(GRID) * 2 * EPOCHS * (N // BATCH)


@pytest.mark.slow
def test_pruned_points_shown_as_pruned_in_table_json_and_figure(
    pruned: tuple[TimescaleFinder, FinderResult], tmp_path: Path
) -> None:
    _, result = pruned
    table = result.table()
    rows = [line.split("|") for line in table.splitlines() if line.startswith("  ") and "|" in line][1:6]
    assert [r[0].strip() for r in rows] == ["1.5", "3", "6", "11", "96"]  # in grid order
    assert rows[4][1].strip() == "pruned" and rows[4][5].strip() == "pruned: seed 0 after epoch 1, seed 1 not trained"
    assert [r[1].strip() for r in rows[:4]] == ["2.922", "1.48", "1", "1.367"]
    assert "Pruned: tau_epoch 96 (runs: 1 stopped early, 1 not trained)" in table
    data = json.loads(json.dumps(result.to_json()))
    assert [p["tau_epoch"] for p in data["curve"]] == [1.5, 3.0, 6.0, 11.0]
    assert [(p["tau_epoch"], p["pruned_after_epoch"]) for p in data["pruned"]] == [(96.0, [1, 0])]
    assert data["pruned"][0]["last_values"] == [pytest.approx(1 + math.log(16) ** 2), None]
    assert result.plot(tmp_path / "pruned.png").stat().st_size > 0


@pytest.mark.slow
def test_suggestion_unpruned_runs_and_study_attributes_say_what_was_pruned(
    pruned: tuple[TimescaleFinder, FinderResult], tmp_path: Path
) -> None:
    finder, result = pruned
    full = _fit(_finder(tmp_path / "unpruned"))
    assert [p.tau_epoch for p in full.curve] == list(GRID) and full.pruned == []
    assert result.tau_epoch == pytest.approx(full.tau_epoch, rel=1e-6)
    assert result.tau_epoch == pytest.approx(TRUE_TAU, rel=1e-6)
    assert (result.grid_tau_epoch, result.at_edge) == (full.grid_tau_epoch, full.at_edge)
    assert result.cost < full.cost
    # read back through Optuna, as optuna-dashboard shows them
    assert finder.study is not None
    storage = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(finder.settings.root_dir / "study.journal"))
    )
    attrs = optuna.load_study(study_name=finder.study.study.study_name, storage=storage).user_attrs
    assert attrs["suggested_tau_epoch"] == pytest.approx(result.tau_epoch)
    assert [p["tau_epoch"] for p in attrs["curve"]] == [1.5, 3.0, 6.0, 11.0]
    assert attrs["pruned_tau_epochs"] == [96.0]
    assert attrs["pruned_trials"] == 2
    assert attrs["finder"]["pruner"] == "median"
    assert attrs["lightning_tau"]["settings"]["pruner"] == "median"


@pytest.mark.slow
def test_tau_epoch_with_one_seed_pruned_and_one_complete_stays_off_curve(
    pruned: tuple[TimescaleFinder, FinderResult], tmp_path: Path
) -> None:
    # two workers raced: the second seed of 96 completed before its first seed was pruned. The study holds both;
    # the finder trains nothing and leaves 96 off the paired curve.
    finder, _ = pruned
    assert finder.study is not None
    source = finder.study.study
    storage = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(tmp_path / "study.journal"))
    )
    copy = optuna.create_study(storage=storage, study_name=source.study_name)
    for key, value in source.user_attrs.items():
        copy.set_user_attr(key, value)
    complete = next(t for t in source.trials if (t.user_attrs["tau_epoch"], t.user_attrs["seed"]) == (11.0, 1))
    for trial in source.trials:
        if (trial.user_attrs["tau_epoch"], trial.user_attrs["seed"]) == (96.0, 1):
            trial = optuna.trial.create_trial(
                state=TrialState.COMPLETE,
                value=complete.value,
                params=trial.params,
                distributions=trial.distributions,
                user_attrs={**trial.user_attrs, "record": complete.user_attrs["record"]},
            )
        copy.add_trial(trial)
    again = _finder(tmp_path, pruner=PRUNER)
    result = _fit(again)
    assert again.trained_runs == 0
    assert [p.tau_epoch for p in result.curve] == [1.5, 3.0, 6.0, 11.0]
    assert [(p.tau_epoch, p.note) for p in result.pruned] == [(96.0, "pruned: seed 0 after epoch 1, seed 1 completed")]


@pytest.mark.slow
def test_rerun_trains_nothing_and_gives_same_answer(
    pruned: tuple[TimescaleFinder, FinderResult],
) -> None:
    finder, result = pruned
    again = _finder(finder.settings.root_dir, pruner=PRUNER)
    second = _fit(again)
    assert (again.trained_runs, again.reused_runs) == (0, len(GRID) * 2)
    assert len(_trials(again)) == len(GRID) * 2
    assert second.to_json() == result.to_json()


@pytest.mark.slow
def test_on_database_storage_pruned_trials_kept_and_rerun_trains_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'finder.db'}"
    first = _finder(tmp_path / "a", pruner=PRUNER, storage=url)
    result = _fit(first)
    assert [p.tau_epoch for p in result.pruned] == [96.0]
    again = _finder(tmp_path / "b", pruner=PRUNER, storage=url)
    assert _fit(again).to_json() == result.to_json()
    assert (again.trained_runs, again.reused_runs) == (0, len(GRID) * 2)
    states = [t.state for t in optuna.load_study(study_name=first.study.study.study_name, storage=url).trials]  # type: ignore[union-attr]
    assert (states.count(TrialState.PRUNED), states.count(TrialState.COMPLETE), len(states)) == (2, 8, 10)


@pytest.mark.slow
def test_pruning_with_two_workers(tmp_path: Path) -> None:
    finder = _finder(tmp_path, pruner=PRUNER, workers=2)
    result = _fit(finder)
    assert finder.study is not None
    trials = finder.study.study.trials
    assert all(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in trials)  # nothing failed or retried
    assert sorted((t.user_attrs["tau_epoch"], t.user_attrs["seed"]) for t in trials) == sorted(
        (tau, seed) for tau in GRID for seed in (0, 1)
    )
    # the worker joined this study (with the pruner), not one of its own
    storage = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(tmp_path / "study.journal"))
    )
    assert optuna.get_all_study_names(storage) == [finder.study.study.study_name]
    # which runs finished first decides what the median is (3 may be judged against 6 and 11 alone and pruned), but
    # 96 is always worse than it, and 6 (the best) and 11 (better than the median of any three others) never are
    on_curve, pruned = {p.tau_epoch for p in result.curve}, {p.tau_epoch for p in result.pruned}
    assert 96.0 in pruned and {6.0, 11.0} <= on_curve
    assert on_curve | pruned == set(GRID) and not on_curve & pruned
    assert result.tau_epoch == pytest.approx(TRUE_TAU, rel=1e-6)


class _PruneAll(optuna.pruners.BasePruner):
    def prune(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> bool:
        return True


@pytest.mark.slow
def test_pruner_prunes_everything_error_not_suggestion(tmp_path: Path) -> None:
    finder = _finder(tmp_path, tau_epochs=(3.0, 6.0), seeds=(0,), pruner=_PruneAll())
    with pytest.raises(ValueError, match=r"pruned every tau_epoch of the grid \[3.0, 6.0\].*gentler pruner"):
        _fit(finder)


def test_tau_epoch_with_pruned_seed_never_suggestion() -> None:
    # 4 was pruned with a last value (from an early epoch) below every curve value: the suggestion stays on the
    # curve, and the curve's first point is not "at the edge" when a pruned tau_epoch lies beyond it
    curve = [CurvePoint(t, [v, v + 0.01], [0, 1], {}, [10, 10]) for t, v in [(8.0, 0.2), (16.0, 0.3), (32.0, 0.4)]]
    stopped = PrunedPoint(4.0, [0, 1], [2, 0], [0.01, math.nan], {}, [2, 0])
    result = finder_result(curve, pruned=[stopped], full_cost=8 * 10 * 20)
    assert (result.tau_epoch, result.grid_tau_epoch, result.at_edge) == (8.0, 8.0, False)
    assert result.tau_epoch_range[0] == 4.0  # the optimum may lie between 8 and the pruned 4
    assert result.cost == 6 * 10 + 2
    assert finder_result(curve, full_cost=8 * 10 * 20).at_edge  # without the pruned point it is at the edge
    beyond = PrunedPoint(64.0, [0, 1], [2, 0], [0.01, math.nan], {}, [2, 0])
    assert finder_result(curve, pruned=[beyond], full_cost=8 * 10 * 20).at_edge  # pruned on the other side


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"pruner": "mediam"}, r"`TimescaleFinder\(pruner='mediam'\)` is not valid: use None"),
        ({"pruner": 3}, r"`TimescaleFinder\(pruner=3\)` is not valid: .*`optuna.pruners.BasePruner`"),
        ({"pruner": optuna.pruners.MedianPruner}, r"pruner=<class .*MedianPruner'>\)` is not valid"),
        (
            {"pruner": "median", "axis": "width", "widths": (8, 16)},
            r"`TimescaleFinder\(pruner='median'\)` is only used with axis='fraction' \(axis is 'width'\)",
        ),
    ],
)
def test_bad_pruner_arguments_fail_at_construction_in_one_line(
    tmp_path: Path, kwargs: dict[str, Any], match: str
) -> None:
    with pytest.raises(ValueError, match=match) as err:
        _finder(tmp_path, **kwargs)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "study.journal").exists()


def test_find_refuses_bad_pruner_in_one_line_before_training(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "lightning_tau", "find", "--pruner", "bogus", "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "argument --pruner: invalid choice: 'bogus'" in proc.stderr
    assert "'median'" in proc.stderr and "'none'" in proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_find_with_pruner_keeps_it_in_study_and_study_name_alone_reopens_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("sklearn")
    from lightning_tau.cli import main

    out = tmp_path / "find"
    tiny = ["--epochs", "1", "--fraction", "0.1", "--no-progress", "--no-plot", "--out", str(out)]
    assert main(["find", *tiny, "--tau-epochs", "2", "4", "--seeds", "0", "--pruner", "median", "--study", "s"]) == 0
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(out / "study.journal")))
    study = optuna.load_study(study_name="s", storage=storage)
    assert study.user_attrs["lightning_tau"]["settings"]["pruner"] == "median"
    first = json.loads((out / "s" / "finder.json").read_text())
    assert first["pruned"] == []  # 2 runs and the points the grid extension added: start-up, none pruned
    capsys.readouterr()
    assert main(["find", *tiny, "--study", "s"]) == 0  # the grid, seeds and pruner from the study
    printed = capsys.readouterr().out
    assert "with its own --tau-epochs, --seeds, --pruner" in printed
    trials = len(first["curve"])
    assert f"({trials} of {trials} trials were complete in the study before this command.)" in printed
