"""Shared test fixtures: a tiny classification LightningModule whose optimizer set-up each test chooses
(``helpers/tiny_model.py``), a real PostgreSQL server (``helpers/pg_server.py``) and the finder's single-process
reference run (``helpers/finder_procs.py``). The builders tests import live in ``tests/helpers/`` (on the path through
pyproject's ``pythonpath``), never here: test modules import from helpers, never from each other or from conftest."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
    """A real PostgreSQL server for the whole session (see ``tests/helpers/pg_server.py``); stopped and removed at the end.

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under `make mutation`, run each doctest once.

    mutmut copies every mutated function, docstring and all, into `x_<name>__mutmut_<i>` siblings of the original;
    `--doctest-modules` would collect each copy's examples as a doctest of its own (hundreds per function). The
    public name's doctest stays: it calls whichever mutant is under test. Outside `mutants/` nothing is dropped.
    """
    items[:] = [item for item in items if "__mutmut_" not in item.nodeid]
