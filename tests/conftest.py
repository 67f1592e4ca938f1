"""Shared test fixtures: a tiny classification LightningModule whose optimizer set-up each test chooses
(``helpers/tiny_model.py``), a real PostgreSQL server (``helpers/pg_server.py``) and the finder's single-process
reference run (``helpers/finder_procs.py``). The builders tests import live in ``tests/helpers/`` (on the path through
pyproject's ``pythonpath``), never here: test modules import from helpers, never from each other or from conftest."""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import pytest
from hypothesis import settings
from pg_server import PostgresServer, start_postgres
from tiny_model import TinyModel

os.environ.setdefault("PYTHONHASHSEED", "0")

if "MUTANT_UNDER_TEST" in os.environ:
    # Under `make mutation` (mutmut sets this): the same examples every run, so that scores repeat, and no per-example
    # deadline, which the trampolines and a loaded machine would turn into failures that kill nothing.
    settings.register_profile("mutation", derandomize=True, deadline=None, database=None)
    settings.load_profile("mutation")


@pytest.fixture
def tiny_model() -> type[TinyModel]:
    return TinyModel


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A real PostgreSQL server for the whole session (``tests/helpers/pg_server.py``); stopped and removed at the end.

    Its data folder is not under pytest's temporary folder: pytest makes ``/tmp/pytest-of-<user>`` private (0700)
    at the start of every session, so a concurrent session would lock the server's own user (as root: ``pgserver``)
    out of it. No skip: if the server cannot start, every test that uses it errors (CI fails on it)."""
    folder = Path(tempfile.mkdtemp(prefix="lightning_tau_pg_"))
    try:
        server = start_postgres(folder / "data")
        try:
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def finder_single(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    """``lightning-tau find`` of ``finder_procs.GRID`` in one process on a journal file, uninterrupted: the JSON and
    the suggestion line every multi-process way must give."""
    pytest.importorskip("sklearn")
    import finder_procs  # imports optuna: only where a test needs it

    root = tmp_path_factory.mktemp("single")
    printed, _ = finder_procs.finish(finder_procs.run(finder_procs.command(root / "out", root / "r.json")))
    return json.loads((root / "r.json").read_text()), finder_procs.suggestion(printed)


# Every Lightning fit of the session, counted by a pass-through wrapper of `Trainer.fit` (it changes nothing of what
# fit does): a test that is not marked `slow` fails if its set-up or body fitted, so `pytest -m "not slow"` stays the
# fast loop. Fits in subprocesses are not seen here; the tests that start them are marked slow by what they run.
_FITS = [0]
_FITS_BEFORE = pytest.StashKey[int]()


def pytest_configure(config: pytest.Config) -> None:
    fit = pl.Trainer.fit
    if getattr(fit, "_counts_fits", False):
        return

    @functools.wraps(fit)
    def counted_fit(self: pl.Trainer, *args: Any, **kwargs: Any) -> Any:
        _FITS[0] += 1
        return fit(self, *args, **kwargs)

    counted_fit._counts_fits = True  # type: ignore[attr-defined]
    pl.Trainer.fit = counted_fit  # type: ignore[method-assign]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    item.stash[_FITS_BEFORE] = _FITS[0]
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    result = yield
    fits = _FITS[0] - item.stash.get(_FITS_BEFORE, _FITS[0])
    if fits and item.get_closest_marker("slow") is None:
        pytest.fail(f"{item.nodeid} ran Trainer.fit {fits} time(s) but is not marked slow: add @pytest.mark.slow "
                    "(or `pytestmark = pytest.mark.slow` for a file that trains throughout; a shared fixture's fits "
                    "count for the first test that sets it up: mark every test that takes it)", pytrace=False)
    return result



def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under `make mutation`, run each doctest once.

    mutmut copies every mutated function, docstring and all, into `x_<name>__mutmut_<i>` siblings of the original;
    `--doctest-modules` would collect each copy's examples as a doctest of its own (hundreds per function). The
    public name's doctest stays: it calls whichever mutant is under test. Outside `mutants/` nothing is dropped.
    """
    items[:] = [item for item in items if "__mutmut_" not in item.nodeid]
