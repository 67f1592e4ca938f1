"""``lightning_tau.tuner.axis_fit``: the points of a fit on every axis (the fraction axis one point) and their study
keys; which published rules an axis result leaves undetermined (what ``seeds="auto"`` adds seeds for), and the record
of how the staging went, in words and JSON. (The axis fit itself, which trains, is tested through
``TimescaleFinder.fit``: ``tests/test_finder_axes.py``.)"""

from __future__ import annotations

from pathlib import Path

from helpers.axis_results import size_result, width_result

from lightning_tau.tuner.axis_fit import SeedStaging, axis_points, undetermined_rules
from lightning_tau.tuner.study_key import study_name
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
        "shape_only": False,
        "decided": False,
        "reason": "reached max_seeds=12 with Fan et al. undetermined",
    }
