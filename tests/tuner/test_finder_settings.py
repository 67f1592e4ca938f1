"""``tuner/finder_settings.py``: the finder's arguments, checked once into a frozen ``FinderSettings``."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from lightning_tau import _checks
from lightning_tau.tuner.finder import TimescaleFinder
from lightning_tau.tuner.finder_settings import FinderSettings

EPOCHS = {"max_epochs": 4}
#: the finder's arguments and their defaults, from the one place they are written: `TimescaleFinder.__init__`
DEFAULTS = {p.name: p.default for p in list(inspect.signature(TimescaleFinder.__init__).parameters.values())[1:]}
#: the settings the documentation reads as the finder's attributes (`finder.<name>`)
SHOWN = ("axis", "tau_epochs", "seeds", "study_name", "pruner")
ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())


def _build(**given: Any) -> FinderSettings:
    """``FinderSettings.build`` of ``given`` and the finder's defaults for the rest."""
    return FinderSettings.build(**{**DEFAULTS, **given})


def test_build_takes_finders_arguments_with_same_defaults(tmp_path: Path) -> None:
    # the signature is written once (the finder's); build takes every one of its arguments by name, and no other
    assert sorted(FinderSettings.arguments()) == sorted(DEFAULTS)
    given = {**DEFAULTS, "trainer_kwargs": EPOCHS, "root_dir": tmp_path}
    assert FinderSettings.build(**given) == TimescaleFinder(trainer_kwargs=EPOCHS, root_dir=tmp_path).settings
    del given["window"]
    with pytest.raises(TypeError, match=r"^`FinderSettings.build` takes every argument .*: missing \['window'\], unkn"):
        FinderSettings.build(**given)
    with pytest.raises(TypeError, match=r"missing \[\], unknown \['max_epochs'\]"):
        FinderSettings.build(**given, window=1, max_epochs=4)
    # the finder passes each argument under its own name (a value given to one is not read as another's)
    odd = dict(subset_seed=5, window=3, stale_after=7.5, level=0.9, max_grid_extensions=2, study_name="s", threads=2)
    settings = TimescaleFinder(trainer_kwargs=EPOCHS, root_dir=tmp_path, **odd).settings
    assert {name: getattr(settings, name) for name in odd} == odd


def test_holds_settings_and_reads_attributes_from_them(tmp_path: Path) -> None:
    finder = TimescaleFinder(tau_epochs=(2, 8), seeds=(3,), trainer_kwargs=EPOCHS, root_dir=tmp_path, pruner="median")
    settings = finder.settings
    again = _build(tau_epochs=(2, 8), seeds=(3,), trainer_kwargs=EPOCHS, root_dir=tmp_path)
    assert settings == dataclasses.replace(again, pruner=settings.pruner, pruner_setting="median")
    assert (finder.tau_epochs, finder.seeds, settings.epochs, settings.root_dir) == ((2.0, 8.0), (3,), 4, tmp_path)
    assert finder.pruner is settings.pruner and type(finder.pruner).__name__ == "MedianPruner"
    for name in SHOWN:
        assert getattr(finder, name) is getattr(settings, name), name
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.seeds = (0,)  # type: ignore[misc]
    with pytest.raises(AttributeError):
        finder.seeds = (0,)  # type: ignore[misc]


def test_forwards_exactly_settings_docs_read() -> None:
    forwarded = {
        name
        for name, value in vars(TimescaleFinder).items()
        if isinstance(value, property) and (value.__doc__ or "").startswith("``settings.")
    }
    assert forwarded == set(SHOWN)
    # what the user-facing text reads as `finder.<setting>`: the docs, README, examples, demos, CLI, benchmarks
    places = [*ROOT.glob("docs/**/*.rst"), ROOT / "README.md"]
    folders = ("examples", "lightning_tau/demos", "lightning_tau/cli", "benchmarks")
    places += [path for folder in folders for path in (ROOT / folder).rglob("*.py")]
    read = {name for path in places for name in re.findall(r"\bfinder\.(\w+)", path.read_text(encoding="utf-8"))}
    fields = {field.name for field in dataclasses.fields(FinderSettings)}
    assert read & fields == set(SHOWN)
    assert not hasattr(TimescaleFinder(trainer_kwargs=EPOCHS), "window")  # the others: `finder.settings.window`


def test_first_bad_argument_in_constructors_order_one_named() -> None:
    # the axis step before the metric step before the trainer step before the study step
    with pytest.raises(ValueError, match=r"`TimescaleFinder\(level=2\)`"):
        _build(level=2, monitor="", trainer_kwargs=None, workers=0)
    with pytest.raises(ValueError, match=r"`TimescaleFinder\(tau_epochs="):
        _build(tau_epochs=(), monitor="", trainer_kwargs=None)
    with pytest.raises(ValueError, match=r"`TimescaleFinder\(monitor=''\)`"):
        _build(monitor="", trainer_kwargs=None, workers=0)
    with pytest.raises(ValueError, match=r"`TimescaleFinder\(trainer_kwargs=None\)`"):
        _build(trainer_kwargs=None, workers=0)
    with pytest.raises(ValueError, match=r"`TimescaleFinder\(workers=0\)`"):
        _build(trainer_kwargs=EPOCHS, workers=0, stale_after=-1)


@pytest.mark.parametrize("threads", [0, -1, 1.5, True, "all"])
def test_threads_positive_int_or_auto(threads) -> None:
    with pytest.raises(ValueError, match=r"`TimescaleFinder\(threads=.*\)` is not valid: use a positive number"):
        _build(trainer_kwargs=EPOCHS, threads=threads)
    assert _build(trainer_kwargs=EPOCHS).threads == 1
    assert _build(trainer_kwargs=EPOCHS, threads="auto").threads == "auto"
    assert _build(trainer_kwargs=EPOCHS, threads=4).threads == 4


def test_derived_settings_follow_from_arguments() -> None:
    size = _build(axis="dataset_size", fractions=(0.2, 0.6), trainer_kwargs=EPOCHS)
    assert (size.fraction, size.fractions, size.seeds, size.widths) == (0.6, (0.2, 0.6), (0, 1, 2, 3, 4), None)
    auto = _build(axis="width", widths=(8, 16), seeds="auto", max_seeds=5, trainer_kwargs=EPOCHS)
    assert (auto.seeds, auto.auto_seeds, auto.max_seeds) == ((0, 1, 2), True, 5)
    accumulated = _build(trainer_kwargs={**EPOCHS, "accumulate_grad_batches": 3})
    assert (accumulated.accumulate, _build(trainer_kwargs=EPOCHS).accumulate) == (3, 1)


def test_max_grid_extensions_defaults_to_three_and_study_key_keeps_grid_given() -> None:
    settings = _build(tau_epochs=(8, 2), trainer_kwargs=EPOCHS)
    assert (settings.max_grid_extensions, settings.base_tau_epochs) == (3, (2.0, 8.0))
    assert _build(trainer_kwargs=EPOCHS, max_grid_extensions=0).max_grid_extensions == 0
    # checked in the grid step: before the metric, after the seeds
    with pytest.raises(ValueError, match=r"^`TimescaleFinder\(max_grid_extensions=-1\)` is not valid: use an integer"):
        _build(max_grid_extensions=-1, monitor="", trainer_kwargs=EPOCHS)
    with pytest.raises(ValueError, match=r"`TimescaleFinder\(seeds=\[\]\)`"):
        _build(seeds=[], max_grid_extensions=-1, trainer_kwargs=EPOCHS)
    with pytest.raises(ValueError, match=r"`TimescaleFinder\(max_grid_extensions=2.5\)`"):
        TimescaleFinder(trainer_kwargs=EPOCHS, max_grid_extensions=2.5)


def test_pruned_grid_goes_seed_by_seed_unpruned_one_tau_by_tau() -> None:
    grid = {"tau_epochs": (2, 8), "seeds": (0, 1), "trainer_kwargs": EPOCHS}
    assert _build(**grid).grid_order() == [(2.0, 0), (2.0, 1), (8.0, 0), (8.0, 1)]
    assert _build(**grid, pruner="median").grid_order() == [(2.0, 0), (8.0, 0), (2.0, 1), (8.0, 1)]


def test_fraction_in_zero_to_one_with_one_allowed() -> None:
    assert _build(fraction=1.0, trainer_kwargs=EPOCHS).fraction == 1.0  # the whole training set
    assert _build(axis="dataset_size", fractions=(0.5, 1.0), trainer_kwargs=EPOCHS).fraction == 1.0
    for bad in (0.0, 1.5):
        with pytest.raises(ValueError, match=rf"^`TimescaleFinder\(fraction={bad}\)` is not valid: use a number in"):
            _build(fraction=bad, trainer_kwargs=EPOCHS)


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
            "`TimescaleFinder(tolerance=1.5)` is only used with axis='width', 'dataset_size' or 'batch_size' (axis is"
            " 'fraction'):",
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
        _build(trainer_kwargs=EPOCHS, **kwargs)
    assert str(info.value).startswith(message)


def test_hold_arguments_given() -> None:
    given = dict(monitor="val_acc", mode="max", reduce="best", study_name="mine", progress=False, window=2)
    width = _build(axis="width", widths=(8, 16), tolerance=1.5, trainer_kwargs=EPOCHS, **given)
    assert (width.widths, width.tolerance, width.monitor, width.mode, width.reduce) == (
        (8, 16),
        1.5,
        "val_acc",
        "max",
        "best",
    )
    assert (width.study_name, width.progress, width.window) == ("mine", False, 2)
    assert _build(trainer_kwargs=EPOCHS).progress is True
    # along dataset_size, the runs' fraction is the largest of three
    assert _build(axis="dataset_size", fractions=(0.2, 0.4, 0.6), trainer_kwargs=EPOCHS).fraction == 0.6


def test_tolerance_checked_once_where_finder_takes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    checked = []
    in_range = _checks.in_range

    def counted(owner: str, name: str, value: Any, *args: Any, **kwargs: Any) -> float:
        if name == "tolerance":
            checked.append((owner, name))
        return in_range(owner, name, value, *args, **kwargs)

    monkeypatch.setattr(_checks, "in_range", counted)
    settings = _build(axis="width", widths=(64, 128), tolerance=1.5, trainer_kwargs={"max_epochs": 1})
    assert settings.tolerance == 1.5 and checked == [("TimescaleFinder", "tolerance")]


def test_axis_resolved_once_into_object() -> None:
    import pickle

    from lightning_tau.tuner.axes import DATASET_SIZE, FRACTION, WIDTH

    kwargs = {"trainer_kwargs": {"max_epochs": 1}}
    assert _build(**kwargs).axis is FRACTION
    assert _build(axis="width", widths=(8, 16), **kwargs).axis is WIDTH
    s = _build(axis="dataset-size", fractions=(0.5, 1.0), **kwargs)  # the CLI's spelling
    assert s.axis is DATASET_SIZE and s.axis.name == "dataset_size"
    assert pickle.loads(pickle.dumps(s)).axis is DATASET_SIZE  # as a worker process receives it
    with pytest.raises(ValueError, match=r"^`TimescaleFinder\(axis='size'\)` is not supported\. Use 'fraction'"):
        _build(axis="size", **kwargs)
