"""``lightning_tau.tuner.axis_runner``: the points of a fit on every axis (the fraction axis one point) and their study
keys; which published rules an axis result leaves undetermined (what ``seeds="auto"`` adds seeds for), and the record
of how the staging went, in words and JSON; the axis result from hand-written records (no run trains). (The axis fit
itself, which trains, is tested through ``TimescaleFinder.fit``: ``tests/tuner/test_finder_axes.py``.)"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from axis_results import TAUS, size_result, width_result

from lightning_tau.tuner.analysis import rules
from lightning_tau.tuner.analysis.axis_result import AxisResult
from lightning_tau.tuner.axis_runner import (
    SeedStaging,
    axis_intro,
    axis_points,
    axis_result,
    grid_round,
    seed_look,
    undetermined_rules,
)
from lightning_tau.tuner.finder import TimescaleFinder
from lightning_tau.tuner.analysis.grid_extension import AddedPoint
from lightning_tau.tuner.analysis.scaling import seed_stages
from lightning_tau.tuner.study_key import study_name
from axes_models import PlantedWidthModel
from finder_study import CurveModel, curve_loaders, make_finder


def test_fraction_axis_one_point_keyed_as_before(tmp_path: Path) -> None:
    finder = make_finder(tmp_path, tau_epochs=(1.0, 4.0), seeds=(0,))
    [point] = axis_points(finder.settings, CurveModel, curve_loaders()[0], None)
    assert (point.value, len(point.train.dataset), point.factory) == (0.5, 32, CurveModel)  # type: ignore[arg-type]
    assert "axis" not in point.settings and point.settings["fraction"] == 0.5
    # the name the finder gave this study before the fraction axis went through axis_points (main at 0c73ee1): an
    # existing study is still found, and a rerun trains nothing. The key holds the model class's dotted name, here
    # `finder_study.CurveModel` (tests/helpers/ on the path); as `tests.helpers.finder_study.CurveModel` (imported so
    # until the helpers got one home) the same settings gave tau_finder_644b80e89ba5
    assert point.settings["model"]["class"] == "finder_study.CurveModel"
    assert study_name(point.settings, None) == "tau_finder_9443dd0036bc"


def test_dataset_size_axis_keys_each_point_by_fraction(tmp_path: Path) -> None:
    finder = make_finder(tmp_path, fraction=None, axis="dataset_size", fractions=(0.5, 1.0), tau_epochs=(1.0, 4.0))
    points = axis_points(finder.settings, CurveModel, curve_loaders()[0], None)
    assert [(p.value, len(p.train.dataset)) for p in points] == [(0.5, 32), (1.0, 64)]  # type: ignore[arg-type]
    assert [p.settings["fraction"] for p in points] == [0.5, 1.0]
    assert [p.settings["axis"] for p in points] == [
        {"axis": "dataset_size", "fraction": 0.5},
        {"axis": "dataset_size", "fraction": 1.0},
    ]


class _Attrs:
    """A study's user attributes (what ``store_answer`` writes), standing in for the Optuna study of a point."""

    def __init__(self) -> None:
        self.user_attrs: dict[str, Any] = {}

    def set_user_attr(self, key: str, value: Any) -> None:
        self.user_attrs[key] = value


def _record(tau: float, loss: float) -> dict[str, Any]:
    """A trial's record as a worker stores it: one decaying group at lr 0.01, one validation."""
    return {
        "groups": {"pg1": {"lr": 1e-2, "weight_decay": 1 / (1e-2 * tau * 2), "decays": True}},
        "metrics": [{"val_loss": loss, "epoch": 0}],
        "steps": 2,
        "world_size": 1,
        "global_batch_size": 16,
    }


def test_each_dataset_size_points_result_holds_own_fraction(tmp_path: Path) -> None:
    taus, seeds = (1.0, 4.0, 16.0), (0, 1)
    finder = make_finder(
        tmp_path, fraction=None, axis="dataset_size", fractions=(0.5, 1.0), tau_epochs=taus, seeds=seeds
    )
    full_train = curve_loaders()[0]
    points = axis_points(finder.settings, CurveModel, full_train, None)
    records = [  # a parabola in log2 tau_epoch with its vertex at 1.75 (N = 32) and 1.5 (N = 64), seeds 0.1 apart
        {(tau, seed): _record(tau, 0.1 * (math.log2(tau) - best) ** 2 + 0.1 * seed) for tau in taus for seed in seeds}
        for best in (1.75, 1.5)
    ]
    studies = [SimpleNamespace(study=_Attrs()) for _ in points]
    said: list[str] = []
    result = axis_result(finder.settings, points, records, studies, full_train, said.append)  # type: ignore[arg-type]
    assert isinstance(result, AxisResult) and finder.settings.fraction == 1.0
    assert [r.fraction for r in result.results] == [0.5, 1.0]  # each point's, not the largest one's
    assert [r.subset_size for r in result.results] == [32, 64] and result.scales == [32.0, 64.0]
    assert [s.study.user_attrs["suggested_tau_epoch"] for s in studies] == [r.tau_epoch for r in result.results]
    assert said == []


def test_undetermined_rules_results_own_undecided_rules() -> None:
    width, size = width_result(), size_result()
    assert undetermined_rules(width, width.tolerance) == []  # Fan et al. holds, the other two are excluded
    assert undetermined_rules(size, size.tolerance) == ["Wang & Aitchison"]
    for result in (width, size):
        undecided = [r.name for r in result.rules if r.decision == "undetermined"]
        assert undetermined_rules(result, result.tolerance) == undecided
    # a tolerance of x1.01 is a band of +-0.004 around -1/2, narrower than the interval (-0.59, -0.41)
    assert undetermined_rules(width, 1.01) == ["Fan et al."]


def test_seed_staging_says_why_it_stopped_in_words_and_json() -> None:
    decided = SeedStaging(8, 12, (3, 5, 8), 0.9875, 1.25, ())
    assert decided.decided and decided.reason == "stopped at 8 seeds: every published rule decided"
    stopped = SeedStaging(12, 12, (3, 5, 8, 12), 0.9875, 1.25, ("Fan et al.",))
    assert not stopped.decided
    assert stopped.sentence() == (
        "Seeds (seeds='auto'): reached max_seeds=12 with Fan et al. undetermined (looked at 3, 5, 8, 12 seeds of at"
        " most 12; each look's interval at 0.9875, tolerance x1.25)."
    )
    assert stopped.to_json() == {
        "seeds": 12,
        "max_seeds": 12,
        "stages": [3, 5, 8, 12],
        "level": 0.9875,
        "tolerance": 1.25,
        "undetermined": ["Fan et al."],
        "shape_only": False,
        "decided": False,
        "reason": "reached max_seeds=12 with Fan et al. undetermined",
    }


def _decided_by(result: Any, ci: tuple[float, float], shape: tuple[float, float]) -> Any:
    """``result`` with its interval ``ci`` and that interval's shape part ``shape`` (the seeds part the rest), every
    rule's point on the grid."""
    half, shape_half = (ci[1] - ci[0]) / 2, (shape[1] - shape[0]) / 2
    centre = (ci[0] + ci[1]) / 2
    parts = {"seeds": (centre - (half - shape_half), centre + (half - shape_half)), "shape": shape}
    fit = dataclasses.replace(result.fit, ci=ci, interval_parts=parts)
    rules = [dataclasses.replace(r, x_rule=4.0, loss_cost_reason=None) for r in result.rules]
    return dataclasses.replace(result, fit=fit, rules=rules)


# Wang & Aitchison's band at x1.25 over N = 250 to 1000 is ±0.161; the shape part (0.10, 0.20) straddles its edge
SHAPE_ONLY = {"ci": (-0.05, 0.25), "shape": (0.10, 0.20)}  # only Wang & Aitchison undetermined, by the shape part
SEEDS_TOO = {"ci": (-0.40, 0.25), "shape": (0.10, 0.20)}  # the 1/2 rules undetermined too, by the seeds part


def test_auto_seeds_stop_where_only_shape_part_leaves_rules_undetermined() -> None:
    stages, level = seed_stages(12), 0.9875
    shape = _decided_by(size_result(), **SHAPE_ONLY)
    assert undetermined_rules(shape, 1.25) == shape.shape_undetermined() == ["Wang & Aitchison"]
    staging = seed_look(shape, 1.25, stages, 1, level)  # the first look, at 3 seeds of up to 12
    assert staging == SeedStaging(3, 12, (3,), level, 1.25, ("Wang & Aitchison",), shape_only=True)
    assert staging is not None and staging.reason == (
        "stopped at 3 seeds: Wang & Aitchison undetermined only by the shape part of the interval, which more seeds"
        " do not narrow (points nearer the optimum do)"
    )
    seeds = _decided_by(size_result(), **SEEDS_TOO)
    assert undetermined_rules(seeds, 1.25) == ["Wang & Aitchison", "the 1/2 rules"]
    assert seeds.shape_undetermined() == ["Wang & Aitchison"]
    assert seed_look(seeds, 1.25, stages, 1, level) is None  # more seeds may decide the 1/2 rules: add them
    last = seed_look(seeds, 1.25, stages, 4, level)
    assert last is not None and not last.shape_only and last.reason.startswith("reached max_seeds=12")
    decided = _decided_by(size_result(), ci=(-0.05, 0.05), shape=(-0.01, 0.01))
    assert seed_look(decided, 1.25, stages, 2, level) == SeedStaging(5, 12, (3, 5), level, 1.25, ())


def test_grid_round_adds_midpoints_only_where_shape_part_alone_undetermined() -> None:
    settings = TimescaleFinder(
        axis="dataset_size", fractions=(0.25, 1.0), tau_epochs=TAUS, seeds=(0, 1, 2), trainer_kwargs={"max_epochs": 2}
    ).settings
    shape = grid_round(settings, _decided_by(size_result(), **SHAPE_ONLY), lowest=0.1, at_round=0, midpoints=True)
    assert [p.tau_epoch for p in shape.added] == pytest.approx([2**1.5, 2**2.5])  # around 4, the best at both N
    assert {p.reason for p in shape.added} == {"midpoint: shape undecided"}
    seeds = grid_round(settings, _decided_by(size_result(), **SEEDS_TOO), lowest=0.1, at_round=0, midpoints=True)
    assert seeds.added == ()  # seeds first: the shape part is not all that stands in the way
    waiting = grid_round(settings, _decided_by(size_result(), **SHAPE_ONLY), lowest=0.1, at_round=0, midpoints=False)
    assert waiting.added == ()  # seeds="auto" still adding seeds


def test_grid_round_brings_off_grid_rule_onto_grid_on_either_axis() -> None:
    size = TimescaleFinder(
        axis="dataset_size", fractions=(0.25, 1.0), tau_epochs=TAUS, seeds=(0, 1, 2), trainer_kwargs={"max_epochs": 2}
    ).settings
    result = size_result()  # fixed λ puts tau_epoch at 1.27 at N=1000, below the grid (from 2): not measured
    assert [r.loss_cost for r in result.rules][2] is None
    plan = grid_round(size, result, lowest=0.1, at_round=0, midpoints=False)
    assert plan.added == (AddedPoint(1.0, "rule fixed λ at 1.27", 0),)
    # along width the grid is λ_base = 10 / tau_epoch: a rule's λ_base of 0.2, under the grid's 0.3125, is tau_epoch 50
    # (8-epoch runs: 64 is 8 runs long, within grid_extension.MAX_RUNS)
    width = TimescaleFinder(
        axis="width", widths=(64, 128, 256), tau_epochs=TAUS, trainer_kwargs={"max_epochs": 8}
    ).settings
    result = width_result()
    result = dataclasses.replace(result, rules=[*result.rules[:2], dataclasses.replace(result.rules[2], x_rule=0.2)])
    plan = grid_round(width, result, lowest=0.1, at_round=3, midpoints=False)
    assert plan.added == (AddedPoint(64.0, "rule Qiu et al. at 50", 3),)


class _Study:  # what axis_intro reads of a GridStudy: its Optuna study's name and the folder it is shown as
    def __init__(self, name: str) -> None:
        self.study, self.shown = type("S", (), {"study_name": name})(), "tau_runs/find"


def test_intro_names_samples_epochs_and_seeds_on_every_axis(tmp_path: Path) -> None:
    train = curve_loaders()[0]  # 64 samples
    trainer = {"max_epochs": 3, "accelerator": "cpu", "devices": 1}
    finder = make_finder(tmp_path, tau_epochs=(1.0, 4.0), seeds=(0, 1), trainer_kwargs=trainer)
    points = axis_points(finder.settings, CurveModel, train, None)
    assert axis_intro(finder.settings, points, [_Study("f")], 64) == (
        "study 'f' in tau_runs/find: 4 trials (2 tau_epochs x 2 seeds) on 32 of 64 training samples (fraction 0.5)"
        " for 3 epochs"
    )
    sizes = make_finder(tmp_path, fraction=None, axis="dataset_size", fractions=(0.5, 1.0), tau_epochs=(1.0, 4.0))
    points = axis_points(sizes.settings, CurveModel, train, None)
    assert axis_intro(sizes.settings, points, [_Study("a"), _Study("b")], 64) == (
        "dataset_size axis: 2 studies in tau_runs/find (fractions 0.5, 1 of 64 training samples: N=32, 64), 2 trials"
        " each (2 tau_epochs x 1 seed), each on its fraction, for 1 epoch"
    )
    width = make_finder(tmp_path, axis="width", widths=(8, 16), tau_epochs=(1.0, 4.0), fraction=0.5)
    points = axis_points(width.settings, PlantedWidthModel, train, None)
    assert axis_intro(width.settings, points, [_Study("a"), _Study("b")], 64) == (
        "width axis: 2 studies in tau_runs/find (widths 8, 16), 2 trials each (2 tau_epochs x 1 seed), every width"
        " on 32 of 64 training samples (fraction 0.5), for 1 epoch"
    )


def test_undetermined_rules_read_results_half_width(monkeypatch: pytest.MonkeyPatch) -> None:
    size = size_result()
    delta = size.half_width
    assert delta == pytest.approx(math.log(size.tolerance) / math.log(size.scales[-1] / size.scales[0]))

    def recomputed(tolerance: float, scales: Any) -> float:
        raise AssertionError(f"half_width({tolerance}) computed again")

    monkeypatch.setattr(rules, "half_width", recomputed)
    assert undetermined_rules(size) == undetermined_rules(size, size.tolerance) == ["Wang & Aitchison"]
    with pytest.raises(AssertionError, match="computed again"):  # another tolerance: its own band
        undetermined_rules(size, 1.01)


@pytest.mark.slow
def test_batch_hparam_model_worker_keys_parents_studies(tmp_path: Path) -> None:
    import optuna
    from axes_models import PlantedBatchModel, PlantedData
    from finder_procs import run_worker_here

    # a model with `batch_size` and `lr` hparams, which each batch point's model has set (BatchedModel): a worker
    # process (run here, as it runs) must key the studies the main process keys, not studies of its own
    def batch_finder() -> TimescaleFinder:
        return TimescaleFinder(
            axis="batch_size", batch_sizes=(16, 32), lr_scaling="sqrt", fraction=1.0, tau_epochs=[2, 6, 18],
            seeds=[0], monitor="val_loss", trainer_kwargs={"max_epochs": 1, "accelerator": "cpu", "devices": 1},
            root_dir=tmp_path, workers=2, progress=False, verbose=False, max_grid_extensions=0,
        )

    finder, data = batch_finder(), PlantedData()
    payload = finder._worker_payload(PlantedBatchModel, data.train_dataloader(), data.val_dataloader(), finder.settings)
    run_worker_here(payload)  # the worker trains the whole sweep
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(tmp_path / "study.journal")))
    worker_studies = sorted(optuna.get_all_study_names(storage))
    assert len(worker_studies) == 2

    main = batch_finder()  # the main process: every trial complete in its studies, nothing trained, no study added
    main.fit(PlantedBatchModel, datamodule=PlantedData())
    assert main.trained_runs == 0 and main.reused_runs == 6
    assert sorted(s.study.study_name for s in main.studies) == worker_studies
    assert sorted(optuna.get_all_study_names(storage)) == worker_studies
