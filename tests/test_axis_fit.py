"""``tuner/axis_fit.py``: the points of a fit on every axis (the fraction axis one point) and their study keys."""

from __future__ import annotations

from pathlib import Path

from lightning_tau.tuner.axis_fit import axis_points
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
