"""The finder's study wing: where a sweep's trials live and who trains them, behind one small surface.

- ``grid_study``: :class:`GridStudy`, one Optuna study over a grid of ``(tau_epoch, seed)`` trials: enqueue, take,
  finish, hand back, reclaim a dead process's trials;
- ``storage``: :func:`open_storage` (a journal file, SQLite, PostgreSQL, an Optuna storage object) and its one-line
  errors (:class:`StorageError`, :func:`redact_url`);
- ``journal``: the journal file's lock, repair and checks (:func:`journal_problem`);
- ``liveness``: which process holds a trial, and whether it is alive (heartbeats, claim tokens, ``/proc``);
- ``folder``: :func:`study_folder`, a study name made a safe folder name; ``take_lock``: SQLite's take lock.

The study's key (its name and settings, :mod:`lightning_tau.tuner.study_key`) stays outside the wing: it reads the
finder's settings, which sit above the wing on the floors of ``docs/architecture.rst``. The names below are imported
on first use (PEP 562), so that ``lightning_tau.tuner.study.journal`` (``lightning-tau find``'s usage checks) imports
neither Optuna's trials nor torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the names below resolve to, for type checkers and IDEs
    from lightning_tau.tuner.study.folder import study_folder
    from lightning_tau.tuner.study.grid_study import GridStudy
    from lightning_tau.tuner.study.journal import journal_problem
    from lightning_tau.tuner.study.storage import StorageError, open_storage, redact_url

_PUBLIC = {
    "GridStudy": "lightning_tau.tuner.study.grid_study",
    "StorageError": "lightning_tau.tuner.study.storage",
    "journal_problem": "lightning_tau.tuner.study.journal",
    "open_storage": "lightning_tau.tuner.study.storage",
    "redact_url": "lightning_tau.tuner.study.storage",
    "study_folder": "lightning_tau.tuner.study.folder",
}


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'lightning_tau.tuner.study' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})


__all__ = ["GridStudy", "StorageError", "journal_problem", "open_storage", "redact_url", "study_folder"]
