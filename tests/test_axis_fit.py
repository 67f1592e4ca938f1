"""``lightning_tau.tuner.axis_fit``: the points of a fit on every axis (the fraction axis one point) and their study
keys; which published rules an axis result leaves undetermined (what ``seeds="auto"`` adds seeds for), and the record
of how the staging went, in words and JSON. (The axis fit itself, which trains, is tested through
``TimescaleFinder.fit``: ``tests/test_finder_axes.py``.)"""

from __future__ import annotations

from pathlib import Path

from helpers.axis_results import size_result, width_result

from lightning_tau.tuner.axis_fit import SeedStaging, axis_intro, axis_points, undetermined_rules
from lightning_tau.tuner.study_key import study_name
from tests.axes_models import PlantedWidthModel
from tests.helpers.finder_study import CurveModel, curve_loaders, make_finder


def test_the_fraction_axis_is_one_point_keyed_as_before(tmp_path: Path) -> None:
    finder = make_finder(tmp_path, tau_epochs=(1.0, 4.0), seeds=(0,))
    [point] = axis_points(finder.settings, CurveModel, curve_loaders()[0], None)
    assert (point.value, len(point.train.dataset), point.factory) == (0.5, 32, CurveModel)  # type: ignore[arg-type]
    assert "axis" not in point.settings and point.settings["fraction"] == 0.5
    # the name the finder gave this study before the fraction axis went through axis_points (main at 0c73ee1): an
    # existing study is still found, and a rerun trains nothing
    assert study_name(point.settings, None) == "tau_finder_644b80e89ba5"


def test_the_dataset_size_axis_keys_each_point_by_its_fraction(tmp_path: Path) -> None:
    finder = make_finder(tmp_path, fraction=None, axis="dataset_size", fractions=(0.5, 1.0), tau_epochs=(1.0, 4.0))
    points = axis_points(finder.settings, CurveModel, curve_loaders()[0], None)
    assert [(p.value, len(p.train.dataset)) for p in points] == [(0.5, 32), (1.0, 64)]  # type: ignore[arg-type]
    assert [p.settings["fraction"] for p in points] == [0.5, 1.0]
    assert [p.settings["axis"] for p in points] == [
        {"axis": "dataset_size", "fraction": 0.5},
        {"axis": "dataset_size", "fraction": 1.0},
    ]


def test_undetermined_rules_are_the_results_own_undecided_rules() -> None:
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
        "decided": False,
        "reason": "reached max_seeds=12 with Fan et al. undetermined",
    }


class _Study:  # what axis_intro reads of a GridStudy: its Optuna study's name and the folder it is shown as
    def __init__(self, name: str) -> None:
        self.study, self.shown = type("S", (), {"study_name": name})(), "tau_runs/find"


def test_axis_intro_names_the_samples_epochs_and_seeds_on_every_axis(tmp_path: Path) -> None:
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
        " each (2 tau_epochs x 1 seeds), each on its fraction, for 1 epochs"
    )
    width = make_finder(tmp_path, axis="width", widths=(8, 16), tau_epochs=(1.0, 4.0), fraction=0.5)
    points = axis_points(width.settings, PlantedWidthModel, train, None)
    assert axis_intro(width.settings, points, [_Study("a"), _Study("b")], 64) == (
        "width axis: 2 studies in tau_runs/find (widths 8, 16), 2 trials each (2 tau_epochs x 1 seeds), every width"
        " on 32 of 64 training samples (fraction 0.5), for 1 epochs"
    )
