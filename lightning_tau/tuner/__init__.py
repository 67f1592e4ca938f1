"""Tuners: find ``tau_epoch`` on a fraction of the data (like Lightning's ``tuner/lr_finder.py``).

``curve`` holds the pure maths (the sweep's curve and its smoothed optimum); ``finder`` runs the trials. The public
names resolve on first use (PEP 562), so that importing ``tuner.curve`` or ``tuner.journal`` (``lightning-tau find
--help``) does not import Lightning, torch and Optuna.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lightning_tau.tuner.finder import FinderResult, TimescaleFinder

__all__ = ["FinderResult", "TimescaleFinder"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'lightning_tau.tuner' has no attribute {name!r}")
    value = getattr(importlib.import_module("lightning_tau.tuner.finder"), name)
    globals()[name] = value
    return value
