"""Shared test fixtures: a tiny classification LightningModule whose optimizer set-up each test chooses, a real
PostgreSQL server (``pg_server.py``) and the finder's single-process reference run (``finder_procs.py``)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import pytest
import torch
from hypothesis import settings
from pg_server import PostgresServer, start_postgres
from torch.utils.data import DataLoader, TensorDataset

os.environ.setdefault("PYTHONHASHSEED", "0")

if "MUTANT_UNDER_TEST" in os.environ:
    # Under `make mutation` (mutmut sets this): the same examples every run, so that scores repeat, and no per-example
    # deadline, which the trampolines and a loaded machine would turn into failures that kill nothing.
    settings.register_profile("mutation", derandomize=True, deadline=None, database=None)
    settings.load_profile("mutation")


class TinyModel(pl.LightningModule):
    """Linear -> LayerNorm -> Linear classifier; `make_optimizer(module)` returns what `configure_optimizers` does."""

    def __init__(self, make_optimizer: Callable[[TinyModel], Any] | None = None, hidden: int = 8) -> None:
        super().__init__()
        self.hidden = torch.nn.Linear(4, hidden)
        self.norm = torch.nn.LayerNorm(hidden)
        self.head = torch.nn.Linear(hidden, 2)
        self.make_optimizer = make_optimizer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(self.hidden(x)).relu())

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self) -> Any:
        if self.make_optimizer is not None:
            return self.make_optimizer(self)
        return torch.optim.AdamW(self.parameters(), lr=1e-2, weight_decay=0.1)


def make_dataset(n: int = 120, seed: int = 0) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    return TensorDataset(x, (x[:, 0] > 0).long())


def make_loader(n: int = 120, batch_size: int = 10, **kwargs: Any) -> DataLoader:
    return DataLoader(make_dataset(n), batch_size=batch_size, **kwargs)


def quiet_trainer(**kwargs: Any) -> pl.Trainer:
    defaults: dict[str, Any] = dict(
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        max_epochs=1,
    )
    defaults.update(kwargs)
    return pl.Trainer(**defaults)


@pytest.fixture
def tiny_model() -> type[TinyModel]:
    return TinyModel


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A real PostgreSQL server for the whole session (see ``tests/pg_server.py``); stopped and removed at the end.

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
