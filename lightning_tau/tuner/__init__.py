"""Tuners: find ``tau_epoch`` on a fraction of the data (like Lightning's ``tuner/lr_finder.py``).

``curve`` holds the pure maths of the sweep's curve (its grid, its smoothed optimum and range), ``result`` what the
finder found (the curve's points, the suggestion, its table, JSON and plot), ``stats`` the statistics of the finder's
width and dataset-size axes (paired interior test, scaling exponent and its interval; ``tdist`` the t distribution
they use) and ``verdicts`` the sentences that say what they show, ``axes`` the result of those axes; ``journal`` the
checks and repair of the study's journal file, ``storage`` the opening of the study's storage, ``liveness`` who a
worker is and whether it is alive, ``study`` the grid as an Optuna study; ``trial`` trains one trial, ``workers``
starts worker processes and ``finder`` runs the trials, with its argument checks in ``settings``, its study's key in
``study_key``, its pruners in ``pruning``, its answer in ``answer`` and its axes' points in ``axis_fit``
(``width_probe`` for the width axis's models). The public names below are imported on first use (PEP 562),
so that importing the pure modules (``lightning_tau.tuner.curve``, ``lightning_tau.tuner.stats``,
``lightning_tau.tuner.journal``; ``lightning-tau find --help``) does not import Lightning, torch and Optuna.
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
