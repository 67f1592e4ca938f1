"""Tuners: find ``tau_epoch`` on a fraction of the data (like Lightning's ``tuner/lr_finder.py``).

The public names are imported on first use (PEP 562), so importing the pure modules imports no Lightning, torch or
Optuna.

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightning_tau._lazy import lazy_face

if TYPE_CHECKING:  # what the names below resolve to, for type checkers and IDEs
    from lightning_tau.tuner.finder import TimescaleFinder
    from lightning_tau.tuner.analysis.finder_result import FinderResult

_PUBLIC = {"FinderResult": "lightning_tau.tuner.analysis.finder_result", "TimescaleFinder": "lightning_tau.tuner.finder"}


__getattr__, __dir__ = lazy_face(__name__, _PUBLIC, globals())


__all__ = ["FinderResult", "TimescaleFinder"]
