"""Tuners: find ``tau_epoch`` on a fraction of the data (like Lightning's ``tuner/lr_finder.py``).

``finder`` holds ``TimescaleFinder``, which checks its arguments into a frozen ``FinderSettings``
(``finder_settings``) and hands those down, never itself; the other modules, on the floors of the layering contract
that ``lint-imports`` checks, are mapped once in ``docs/architecture.rst`` ("Inside tuner/: the finder's floors").
The public names below are imported on first use (PEP 562), so that importing the pure modules
(``lightning_tau.tuner.analysis.curve``, ``lightning_tau.tuner.analysis.scaling``, ``lightning_tau.tuner.study.journal``; ``lightning-tau
find
--help``) does not import Lightning, torch and Optuna.
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
