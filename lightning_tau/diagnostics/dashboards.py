"""TensorBoard dashboards for :class:`~lightning_tau.diagnostics.TimescaleMonitor`: custom-scalars layout and hparams.

Both are written only through a :class:`~lightning.pytorch.loggers.TensorBoardLogger`; other loggers get the plain
scalars (and the hparams as a flat dict) through ``trainer.loggers``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.loggers import TensorBoardLogger

__all__ = [
    "custom_scalars_layout",
    "lightning_wrote_hparams",
    "metric_key",
    "write_custom_scalars",
    "write_hparams",
]


def metric_key(prefix: str, metric: str, group: str) -> str:
    """The logged key of ``metric`` for param group ``group``: ``{prefix}/{metric}/{group}``.

    Example:
        >>> metric_key("timescale", "tau_iter", "pg1")
        'timescale/tau_iter/pg1'
    """
    return f"{prefix}/{metric}/{group}"


def custom_scalars_layout(prefix: str, groups: Sequence[str]) -> dict[str, dict[str, list[Any]]]:
    """The custom-scalars layout, in the format of ``SummaryWriter.add_custom_scalars``.

    Category ``"{prefix}: timescales"`` has one multi-line chart per quantity with every group on it
    (``tau_iter``, ``tau_epoch``, init memory, timescales elapsed, ``weight_decay x mean|w|``). Category
    ``"{prefix}: weight RMS vs prediction"`` has, per group in ``groups`` (pass the decaying ones), a margin chart
    of the measured weight RMS inside the band from the random-walk equilibrium ``sqrt(lr / (2 wd))`` (lower) to
    the coherent bound ``1 / wd`` (upper).

    Example:
        >>> layout = custom_scalars_layout("timescale", ["pg1"])
        >>> layout["timescale: timescales"]["tau_iter (steps)"]
        ['Multiline', ['^timescale/tau_iter/']]
        >>> layout["timescale: weight RMS vs prediction"]["pg1"]
        ['Margin', ['timescale/weight_rms/pg1', 'timescale/rms_equilibrium/pg1', 'timescale/coherent_bound/pg1']]
    """
    p = re.escape(prefix)
    timescales = {
        "tau_iter (steps)": ["Multiline", [f"^{p}/tau_iter/"]],
        "tau_epoch (epochs)": ["Multiline", [f"^{p}/tau_epoch/"]],
        "init memory prod(1 - lr*wd)": ["Multiline", [f"^{p}/init_memory/"]],
        "timescales elapsed sum(lr*wd)": ["Multiline", [f"^{p}/timescales_elapsed/"]],
        "wd x mean|w| (paper's c)": ["Multiline", [f"^{p}/wd_mean_abs/"]],
        "weight RMS / random-walk prediction": ["Multiline", [f"^{p}/rms_ratio/"]],
    }
    bands = {
        group: [
            "Margin",
            [
                metric_key(prefix, "weight_rms", group),
                metric_key(prefix, "rms_equilibrium", group),
                metric_key(prefix, "coherent_bound", group),
            ],
        ]
        for group in groups
    }
    return {f"{prefix}: timescales": timescales, f"{prefix}: weight RMS vs prediction": bands}


def write_custom_scalars(logger: TensorBoardLogger, layout: Mapping[str, Mapping[str, list[Any]]]) -> None:
    """Write ``layout`` into the logger's run with its ``SummaryWriter`` (call on rank zero only)."""
    logger.experiment.add_custom_scalars(dict(layout))


def write_hparams(
    logger: TensorBoardLogger, params: Mapping[str, Any], metrics: Mapping[str, float], step: int
) -> None:
    """Record ``params`` with ``metrics`` (scalar tags, latest value shown) for TensorBoard's HParams tab.

    Uses ``TensorBoardLogger.log_hyperparams(params, metrics)``, which writes the metrics as scalars at ``step``
    and the hparams experiment / session summaries. TensorBoard keeps only the *first* hparams record of a run,
    so this shows only when Lightning did not write one at fit start (see :func:`lightning_wrote_hparams`).
    """
    logger.log_hyperparams(dict(params), metrics=dict(metrics), step=step)


def lightning_wrote_hparams(logger: TensorBoardLogger, trainer: pl.Trainer) -> bool:
    """Whether Lightning writes its own hparams record (with ``hp_metric``) into this run at fit start.

    Lightning's ``_log_hyperparams`` calls ``log_hyperparams`` once, before the first fit hook, when the module
    or datamodule called ``save_hyperparameters``; with ``default_hp_metric=True`` (the logger's default) that
    writes the HParams summaries, and TensorBoard keeps only the first. Neither flag has a public accessor, so
    they are read here, in one place, the way Lightning reads them.
    """
    if not getattr(logger, "_default_hp_metric", False):
        return False
    module_logs = bool(getattr(trainer.lightning_module, "_log_hyperparams", False))
    datamodule = trainer.datamodule  # type: ignore[attr-defined]
    datamodule_logs = datamodule is not None and bool(getattr(datamodule, "_log_hyperparams", False))
    return module_logs or datamodule_logs
