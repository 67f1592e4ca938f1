"""The one exception base: every error lightning_tau raises for a bad argument, setting or state derives from
:class:`TimescaleError`, as every Optuna error derives from ``optuna.exceptions.OptunaError``.

Catch it to catch them all::

    try:
        finder = TimescaleFinder(model, data, tau_epochs=[...], tolerance=0.8)
    except lightning_tau.TimescaleError as err:
        print(err)  # one line: the argument, its value and what to pass instead

It is a ``ValueError``, so code that caught ``ValueError`` before it existed still catches every one of them. The
argument checks every public entry point shares (``lightning_tau._checks``) raise it; so do the package's own
error classes, each a subclass naming what went wrong:

- :class:`~lightning_tau.outputs.OutputError`: a path a result file must not be written to (``--json``, ``--plot``);
- :class:`~lightning_tau.cli.config.ConfigError`, :class:`~lightning_tau.cli.plan.PlanError`: a ``--config`` that
  cannot be read, set up or planned;
- :class:`~lightning_tau.tuner.checks.SettingError`: a finder argument the model or data makes invalid;
- :class:`~lightning_tau.tuner.trial.MonitorError`: a ``monitor`` the model never logged;
- :class:`~lightning_tau.tuner.study.storage.StorageError` (and ``JournalWriteError``): a study's storage that cannot
  be opened or written;
- :class:`~lightning_tau.tuner.study.grid_study.StudyMismatchError`: a named study that holds another sweep.

Pure: imports nothing.
"""

from __future__ import annotations

__all__ = ["TimescaleError"]


class TimescaleError(ValueError):
    """The base of every error lightning_tau raises for a bad argument, setting or state; catch it to catch them all.

    Example:
        >>> from lightning_tau.errors import TimescaleError
        >>> from lightning_tau.timescale import tau_iter
        >>> try:
        ...     tau_iter(lr=-1.0, weight_decay=0.1)
        ... except TimescaleError as err:
        ...     print(type(err).__name__, isinstance(err, ValueError))
        TimescaleError True
    """
