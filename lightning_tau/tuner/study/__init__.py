"""The finder's study wing: where a sweep's trials live and who trains them, behind one small surface.

Everything outside the wing imports these names from here, never a room behind them (an import-linter contract); they
are imported on first use (PEP 562).

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightning_tau._lazy import lazy_face

if TYPE_CHECKING:  # what the names below resolve to, for type checkers and IDEs
    from lightning_tau.tuner.study.folder import study_folder
    from lightning_tau.tuner.study.grid_study import (
        BETA2_ATTR,
        SETTINGS_ATTR,
        GridStudy,
        StudyMismatchError,
        quiet_optuna,
        set_user_attr,
        settled_user_attrs,
    )
    from lightning_tau.tuner.study.journal import journal_problem
    from lightning_tau.tuner.study.liveness import STALE_SECONDS, stop_reason
    from lightning_tau.tuner.study.storage import (
        JOURNAL_NAME,
        JournalWriteError,
        StorageError,
        open_storage,
        redact_url,
    )

_PUBLIC = {
    "BETA2_ATTR": "lightning_tau.tuner.study.grid_study",
    "GridStudy": "lightning_tau.tuner.study.grid_study",
    "SETTINGS_ATTR": "lightning_tau.tuner.study.grid_study",
    "StudyMismatchError": "lightning_tau.tuner.study.grid_study",
    "quiet_optuna": "lightning_tau.tuner.study.grid_study",
    "set_user_attr": "lightning_tau.tuner.study.grid_study",
    "settled_user_attrs": "lightning_tau.tuner.study.grid_study",
    "JOURNAL_NAME": "lightning_tau.tuner.study.storage",
    "JournalWriteError": "lightning_tau.tuner.study.storage",
    "StorageError": "lightning_tau.tuner.study.storage",
    "open_storage": "lightning_tau.tuner.study.storage",
    "redact_url": "lightning_tau.tuner.study.storage",
    "journal_problem": "lightning_tau.tuner.study.journal",
    "STALE_SECONDS": "lightning_tau.tuner.study.liveness",
    "stop_reason": "lightning_tau.tuner.study.liveness",
    "study_folder": "lightning_tau.tuner.study.folder",
}


__getattr__, __dir__ = lazy_face(__name__, _PUBLIC, globals())


__all__ = [
    "BETA2_ATTR",
    "GridStudy",
    "JOURNAL_NAME",
    "JournalWriteError",
    "SETTINGS_ATTR",
    "STALE_SECONDS",
    "StorageError",
    "StudyMismatchError",
    "journal_problem",
    "open_storage",
    "quiet_optuna",
    "redact_url",
    "set_user_attr",
    "settled_user_attrs",
    "stop_reason",
    "study_folder",
]
