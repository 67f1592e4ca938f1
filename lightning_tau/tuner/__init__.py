"""Tuners: find ``tau_epoch`` on a fraction of the data (like Lightning's ``tuner/lr_finder.py``).

``finder`` holds ``TimescaleFinder``, which checks its arguments into a frozen ``FinderSettings``
(``finder_settings``) and hands those down, never itself; the other modules, on the floors of the layering contract
that ``lint-imports`` checks, are mapped once in ``docs/architecture.rst`` ("Inside tuner/: the finder's floors").
The public names below are imported on first use (PEP 562), so that importing the pure modules
(``lightning_tau.tuner.curve``, ``lightning_tau.tuner.stats``, ``lightning_tau.tuner.study.journal``; ``lightning-tau
find
--help``) does not import Lightning, torch and Optuna.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the names below resolve to, for type checkers and IDEs
    from lightning_tau.tuner.finder import TimescaleFinder
    from lightning_tau.tuner.result import FinderResult

_PUBLIC = {"FinderResult": "lightning_tau.tuner.result", "TimescaleFinder": "lightning_tau.tuner.finder"}


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'lightning_tau.tuner' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})


__all__ = ["FinderResult", "TimescaleFinder"]
