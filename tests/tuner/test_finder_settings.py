"""``tuner/finder_settings.py``: the finder's arguments, checked once into a frozen ``FinderSettings``."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest

from lightning_tau.tuner.finder import TimescaleFinder
from lightning_tau.tuner.finder_settings import FinderSettings

EPOCHS = {"max_epochs": 4}


def test_build_takes_finders_arguments_with_same_defaults() -> None:
    finder = list(inspect.signature(TimescaleFinder.__init__).parameters.values())[1:]
    build = list(inspect.signature(FinderSettings.build).parameters.values())
    assert [(p.name, p.default) for p in build] == [(p.name, p.default) for p in finder]


def test_holds_settings_and_reads_attributes_from_them(tmp_path: Path) -> None:
    finder = TimescaleFinder(tau_epochs=(2, 8), seeds=(3,), trainer_kwargs=EPOCHS, root_dir=tmp_path, pruner="median")
    settings = finder.settings
    again = FinderSettings.build(tau_epochs=(2, 8), seeds=(3,), trainer_kwargs=EPOCHS, root_dir=tmp_path)
    assert settings == dataclasses.replace(again, pruner=settings.pruner, pruner_setting="median")
    assert (finder.tau_epochs, finder.seeds, finder.epochs, finder.root_dir) == ((2.0, 8.0), (3,), 4, tmp_path)
    assert finder.pruner is settings.pruner and type(finder.pruner).__name__ == "MedianPruner"
    for field in dataclasses.fields(FinderSettings):
        assert getattr(finder, field.name) is getattr(settings, field.name), field.name
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.seeds = (0,)  # type: ignore[misc]
    with pytest.raises(AttributeError):
        finder.seeds = (0,)  # type: ignore[misc]


def test_first_bad_argument_in_constructors_order_one_named() -> None:
    # the axis step before the metric step before the trainer step before the study step
    with pytest.raises(ValueError, match=r"`TimescaleFinder\(level=2\)`"):
        FinderSettings.build(level=2, monitor="", trainer_kwargs=None, workers=0)
    with pytest.raises(ValueError, match=r"`TimescaleFinder\(tau_epochs="):
        FinderSettings.build(tau_epochs=(), monitor="", trainer_kwargs=None)
    with pytest.raises(ValueError, match=r"`TimescaleFinder\(monitor=''\)`"):
        FinderSettings.build(monitor="", trainer_kwargs=None, workers=0)
    with pytest.raises(ValueError, match=r"`TimescaleFinder\(trainer_kwargs=None\)`"):
        FinderSettings.build(trainer_kwargs=None, workers=0)
    with pytest.raises(ValueError, match=r"`TimescaleFinder\(workers=0\)`"):
        FinderSettings.build(trainer_kwargs=EPOCHS, workers=0, stale_after=-1)


@pytest.mark.parametrize("threads", [0, -1, 1.5, True, "all"])
def test_threads_positive_int_or_auto(threads) -> None:
    with pytest.raises(ValueError, match=r"`TimescaleFinder\(threads=.*\)` is not valid: use a positive number"):
        FinderSettings.build(trainer_kwargs=EPOCHS, threads=threads)
    assert FinderSettings.build(trainer_kwargs=EPOCHS).threads == 1
    assert FinderSettings.build(trainer_kwargs=EPOCHS, threads="auto").threads == "auto"
    assert FinderSettings.build(trainer_kwargs=EPOCHS, threads=4).threads == 4


def test_derived_settings_follow_from_arguments() -> None:
    size = FinderSettings.build(axis="dataset_size", fractions=(0.2, 0.6), trainer_kwargs=EPOCHS)
    assert (size.fraction, size.fractions, size.seeds, size.widths) == (0.6, (0.2, 0.6), (0, 1, 2, 3, 4), None)
    auto = FinderSettings.build(axis="width", widths=(8, 16), seeds="auto", max_seeds=5, trainer_kwargs=EPOCHS)
    assert (auto.seeds, auto.auto_seeds, auto.max_seeds) == ((0, 1, 2), True, 5)
    accumulated = FinderSettings.build(trainer_kwargs={**EPOCHS, "accumulate_grad_batches": 3})
    assert (accumulated.accumulate, FinderSettings.build(trainer_kwargs=EPOCHS).accumulate) == (3, 1)


def test_max_grid_extensions_defaults_to_three_and_study_key_keeps_grid_given() -> None:
    settings = FinderSettings.build(tau_epochs=(8, 2), trainer_kwargs=EPOCHS)
    assert (settings.max_grid_extensions, settings.base_tau_epochs) == (3, (2.0, 8.0))
    assert FinderSettings.build(trainer_kwargs=EPOCHS, max_grid_extensions=0).max_grid_extensions == 0
    # checked in the grid step: before the metric, after the seeds
    with pytest.raises(ValueError, match=r"^`TimescaleFinder\(max_grid_extensions=-1\)` is not valid: use an integer"):
        FinderSettings.build(max_grid_extensions=-1, monitor="", trainer_kwargs=EPOCHS)
    with pytest.raises(ValueError, match=r"`TimescaleFinder\(seeds=\[\]\)`"):
        FinderSettings.build(seeds=[], max_grid_extensions=-1, trainer_kwargs=EPOCHS)
    with pytest.raises(ValueError, match=r"`TimescaleFinder\(max_grid_extensions=2.5\)`"):
        TimescaleFinder(trainer_kwargs=EPOCHS, max_grid_extensions=2.5)


def test_pruned_grid_goes_seed_by_seed_unpruned_one_tau_by_tau() -> None:
    grid = {"tau_epochs": (2, 8), "seeds": (0, 1), "trainer_kwargs": EPOCHS}
    assert FinderSettings.build(**grid).grid_order() == [(2.0, 0), (2.0, 1), (8.0, 0), (8.0, 1)]
    assert FinderSettings.build(**grid, pruner="median").grid_order() == [(2.0, 0), (8.0, 0), (2.0, 1), (8.0, 1)]


def test_fraction_in_zero_to_one_with_one_allowed() -> None:
    assert FinderSettings.build(fraction=1.0, trainer_kwargs=EPOCHS).fraction == 1.0  # the whole training set
    assert FinderSettings.build(axis="dataset_size", fractions=(0.5, 1.0), trainer_kwargs=EPOCHS).fraction == 1.0
    for bad in (0.0, 1.5):
        with pytest.raises(ValueError, match=rf"^`TimescaleFinder\(fraction={bad}\)` is not valid: use a number in"):
            FinderSettings.build(fraction=bad, trainer_kwargs=EPOCHS)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"monitor": ""}, "`TimescaleFinder(monitor='')` is not valid: use the name of a logged validation metric."),
        ({"mode": "best"}, "`TimescaleFinder(mode='best')` is not supported. Use 'min' or 'max'."),
        ({"reduce": "mean"}, "`TimescaleFinder(reduce='mean')` is not supported. Use 'last' or 'best'."),
        ({"subset_seed": "x"}, "`TimescaleFinder(subset_seed='x')` is not valid: use an integer."),
        ({"window": 0}, "`TimescaleFinder(window=0)` is not valid: use an integer >= 1."),
        ({"study_name": ""}, "`TimescaleFinder(study_name='')` is not valid: use a non-empty name."),
        ({"stale_after": 0}, "`TimescaleFinder(stale_after=0)` is not valid: use a positive number of seconds."),
        (
            {"axis": "dataset_size", "fraction": 0.5, "fractions": (0.2, 0.5)},
            "`TimescaleFinder(fraction=0.5)` is not used with axis='dataset_size': the runs train on each of"
            " `fractions`. Leave `fraction` out.",
        ),
        (
            {"tolerance": 1.5},
            "`TimescaleFinder(tolerance=1.5)` is only used with axis='width' or 'dataset_size' (axis is 'fraction'):",
        ),
        (
            {"axis": "width", "widths": (8, 16), "pruner": "median"},
            "`TimescaleFinder(pruner='median')` is only used with axis='fraction' (axis is 'width'): leave `pruner`"
            " out along an axis.",
        ),
    ],
)
def test_each_argument_refused_in_own_words(kwargs, message) -> None:
    with pytest.raises(ValueError) as info:
        FinderSettings.build(trainer_kwargs=EPOCHS, **kwargs)
    assert str(info.value).startswith(message)


def test_hold_arguments_given() -> None:
    given = dict(monitor="val_acc", mode="max", reduce="best", study_name="mine", progress=False, window=2)
    width = FinderSettings.build(axis="width", widths=(8, 16), tolerance=1.5, trainer_kwargs=EPOCHS, **given)
    assert (width.widths, width.tolerance, width.monitor, width.mode, width.reduce) == (
        (8, 16),
        1.5,
        "val_acc",
        "max",
        "best",
    )
    assert (width.study_name, width.progress, width.window) == ("mine", False, 2)
    assert FinderSettings.build(trainer_kwargs=EPOCHS).progress is True
    # along dataset_size, the runs' fraction is the largest of three
    assert FinderSettings.build(axis="dataset_size", fractions=(0.2, 0.4, 0.6), trainer_kwargs=EPOCHS).fraction == 0.6
