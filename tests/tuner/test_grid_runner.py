"""``lightning_tau.tuner.grid_runner``: the fit's one progress line across its studies (:class:`FitProgress`), read
back from the tqdm bar it makes, and through a real dataset-size fit."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from lightning_tau.tuner.grid_runner import FitProgress
from finder_study import fit_finder, make_finder


class _Study:
    """What FitProgress reads of a GridStudy: its grid and its complete records."""

    def __init__(self, grid: list[tuple[float, int]], done: dict[tuple[float, int], dict[str, Any]]) -> None:
        self.grid, self.done = grid, done

    def records(self) -> dict[tuple[float, int], dict[str, Any]]:
        return dict(self.done)


GRID = [(t, s) for t in (1.0, 4.0) for s in (0, 1)]


def test_one_bar_across_studies_with_point_and_run(tmp_path: Path) -> None:
    settings = make_finder(
        tmp_path, fraction=None, axis="dataset_size", fractions=(0.5, 1.0), tau_epochs=(1.0, 4.0), seeds=(0, 1),
        progress=True, trainer_kwargs={"max_epochs": 5, "accelerator": "cpu", "devices": 1},
    ).settings  # fmt: skip
    first, second = _Study(GRID, {GRID[0]: {"epochs_run": 5}}), _Study(GRID, {})  # one run done before
    progress = FitProgress(settings, [first, second])  # type: ignore[list-item]
    try:
        assert (progress.runs, progress.done, progress.total) == (8, 1, 7 * 5)  # both studies' runs, in epochs
        bar = progress.start(first, 1.0, 1)
        assert bar.desc == "tau finder, size 1 of 2" and bar.total == 35
        assert bar.postfix == "run 2 of 8: tau_epoch=1 seed=1"
        bar.update(5)
        for key in GRID[1:]:
            progress.count(first, key)
        assert progress.start(second, 4.0, 0) is bar  # the same bar for the second size: no restart at 0
        assert bar.desc == "tau finder, size 2 of 2" and bar.postfix == "run 5 of 8: tau_epoch=4 seed=0"
        assert bar.total == 35 and bar.n == 5 and bar.smoothing == 0  # the ETA: the whole fit's average rate
        second.done[GRID[3]] = {"epochs_run": 3}  # a worker's run (pruned after 3 epochs)
        progress.finished_elsewhere(second)
        assert bar.n == 8 and progress.done == 5
    finally:
        progress.close()
    assert bar.total == bar.n == 8  # closed at what it counted


def test_sizes_of_different_samples_count_samples_so_eta_holds(tmp_path: Path) -> None:
    """An epoch at N=200 costs four at N=50: counted in epochs, the ETA while the small size trained was a third of
    the truth (issue 38). Points of different sizes count samples (epochs x the point's samples)."""
    settings = make_finder(
        tmp_path, fraction=None, axis="dataset_size", fractions=(0.25, 1.0), tau_epochs=(1.0, 4.0), seeds=(0, 1),
        progress=True, trainer_kwargs={"max_epochs": 5, "accelerator": "cpu", "devices": 1},
    ).settings  # fmt: skip
    small, large = _Study(GRID, {GRID[0]: {"epochs_run": 5}}), _Study(GRID, {})
    progress = FitProgress(settings, [small, large], [50, 200])  # type: ignore[list-item]
    try:
        assert progress.unit == "sample" and progress.total == 3 * 5 * 50 + 4 * 5 * 200
        ticks = progress.start(small, 1.0, 1)
        ticks.update(1)  # one epoch at N=50
        assert progress.bar.n == 50 and progress.bar.unit == "sample"
        progress.start(large, 1.0, 0).update(2)  # two epochs at N=200
        assert progress.bar.n == 50 + 400
        large.done[GRID[3]] = {"epochs_run": 3}  # a worker's run
        progress.finished_elsewhere(large)
        assert progress.bar.n == 50 + 400 + 600
    finally:
        progress.close()
    same = FitProgress(settings, [small, large], [64, 64])  # type: ignore[list-item]
    assert same.unit == "epoch" and same.total == 6 * 5  # one size of subset (the width axis): epochs


def test_width_axis_counts_widths_and_fraction_axis_names_no_point(tmp_path: Path) -> None:
    width = make_finder(tmp_path, axis="width", widths=(8, 16, 32), tau_epochs=(1.0, 4.0), progress=True).settings
    progress = FitProgress(width, [_Study(GRID, {}), _Study(GRID, {}), _Study(GRID, {})])  # type: ignore[list-item]
    assert progress.description(progress.studies[1]) == "tau finder, width 2 of 3"  # type: ignore[arg-type]
    one = FitProgress(make_finder(tmp_path).settings, [_Study(GRID, {})])  # type: ignore[list-item]
    assert one.description(one.studies[0]) == "tau finder"  # type: ignore[arg-type]


def test_progress_off_silent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    quiet = make_finder(tmp_path, progress=False).settings
    progress = FitProgress(quiet, [_Study(GRID, {})])  # type: ignore[list-item]
    bar = progress.start(progress.studies[0], 1.0, 0)  # type: ignore[arg-type]
    bar.update(1)
    progress.close()
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_dataset_size_fit_draws_one_line_for_both_sizes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    finder = make_finder(  # the grid as given: one _run call, one bar (a grid round would make its own)
        tmp_path, fraction=None, axis="dataset_size", fractions=(0.5, 1.0), tau_epochs=(1.0, 4.0), progress=True,
        max_grid_extensions=0,
    )
    fit_finder(finder)
    printed = capsys.readouterr().err
    assert "tau finder, size 1 of 2" in printed and "tau finder, size 2 of 2" in printed
    assert "run 4 of 4: tau_epoch=4 seed=0" in printed
    counts = re.findall(r"([\d.]+[kM]?)/([\d.]+[kM]?) \[", printed)  # tqdm's unit_scale: 0.00/192, 1.2k/3.4k
    # one total, no restart: 4 runs x 1 epoch, counted in samples (the sizes differ): 2 x 32 + 2 x 64
    assert counts and {total for _, total in counts} == {"192"}, counts
    assert counts[-1] == ("192", "192") and "sample/s" in printed
