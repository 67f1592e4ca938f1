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
    "CHART_TITLES",
    "custom_scalars_layout",
    "lightning_hparams",
    "lightning_wrote_hparams",
    "metric_key",
    "set_default_hp_metric",
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


#: Chart titles of the custom-scalars layout, by the quantity they show (``str.format`` fields: ``group``).
CHART_TITLES = {
    "tau_iter": "tau_iter_t = 1/(lr_t*wd_t) now, and the target (steps)",
    "tau_epoch": "tau_epoch_t = tau_iter_t/M now, and the target (epochs)",
    "init_memory": "init memory prod(1 - lr_t*wd_t), share of the init left",
    "timescales_elapsed": "timescales elapsed sum(lr_t*wd_t)",
    "wd_mean_abs": "wd_t * mean|w| (paper's plateau c)",
    "rms_ratio": "weight RMS / sqrt(lr_t/(2 wd_t)): 1 = random-walk equilibrium",
    "weight_rms": "{group}: weight RMS (line), shaded to its prediction sqrt(lr_t/(2 wd_t))",
}


def custom_scalars_layout(prefix: str, groups: Sequence[str]) -> dict[str, dict[str, list[Any]]]:
    """The custom-scalars layout, in the format of ``SummaryWriter.add_custom_scalars``.

    Every chart has lines of one size on a linear axis, so each stays readable. Category
    ``"{prefix}: timescales"`` has one multi-line chart per quantity with every group on it: the instantaneous
    ``tau_iter`` (``tau_epoch``) next to the target ``tau_iter_target`` (``tau_epoch_target``) a
    ``TimescaleCallback`` holds, init memory, timescales elapsed and ``weight_decay x mean|w|``. Category
    ``"{prefix}: weight RMS vs prediction"`` has the ratio of the measured weight RMS to the random-walk
    equilibrium ``sqrt(lr / (2 wd))`` for every group (about 1 at equilibrium), then, per group in ``groups``
    (pass the decaying ones), a margin chart: the measured RMS as the line, shaded down (or up) to the
    prediction. :data:`CHART_TITLES` holds the titles.

    Example:
        >>> layout = custom_scalars_layout("timescale", ["pg1"])
        >>> layout["timescale: timescales"][CHART_TITLES["tau_iter"]]
        ['Multiline', ['^timescale/tau_iter(_target)?/']]
        >>> layout["timescale: weight RMS vs prediction"][CHART_TITLES["weight_rms"].format(group="pg1")]
        ['Margin', ['timescale/weight_rms/pg1', 'timescale/rms_equilibrium/pg1', 'timescale/weight_rms/pg1']]
    """
    p = re.escape(prefix)
    timescales = {
        CHART_TITLES["tau_iter"]: ["Multiline", [f"^{p}/tau_iter(_target)?/"]],
        CHART_TITLES["tau_epoch"]: ["Multiline", [f"^{p}/tau_epoch(_target)?/"]],
        CHART_TITLES["init_memory"]: ["Multiline", [f"^{p}/init_memory/"]],
        CHART_TITLES["timescales_elapsed"]: ["Multiline", [f"^{p}/timescales_elapsed/"]],
        CHART_TITLES["wd_mean_abs"]: ["Multiline", [f"^{p}/wd_mean_abs/"]],
    }
    rms: dict[str, list[Any]] = {CHART_TITLES["rms_ratio"]: ["Multiline", [f"^{p}/rms_ratio/"]]}
    for group in groups:
        # a margin chart whose band runs from the prediction to the measured value (lower > upper draws it too):
        # the line is the measured RMS, the shaded gap how far it is from equilibrium, on the RMS's own scale
        measured = metric_key(prefix, "weight_rms", group)
        rms[CHART_TITLES["weight_rms"].format(group=group)] = [
            "Margin",
            [measured, metric_key(prefix, "rms_equilibrium", group), measured],
        ]
    return {f"{prefix}: timescales": timescales, f"{prefix}: weight RMS vs prediction": rms}


def write_custom_scalars(logger: TensorBoardLogger, layout: Mapping[str, Mapping[str, list[Any]]]) -> None:
    """Write ``layout`` into the logger's run with its ``SummaryWriter`` (call on rank zero only)."""
    logger.experiment.add_custom_scalars(dict(layout))


def write_hparams(
    logger: TensorBoardLogger, params: Mapping[str, Any], metrics: Mapping[str, float], step: int
) -> None:
    """Record ``params`` with ``metrics`` (scalar tags, latest value shown) for TensorBoard's HParams tab.

    Uses ``TensorBoardLogger.log_hyperparams(params, metrics)``, which writes the metrics as scalars at ``step``
    and the hparams experiment / session summaries. TensorBoard keeps only the *first* hparams record of a run;
    the monitor keeps Lightning's fit-start record out of the event file (see :func:`lightning_wrote_hparams`).
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


def set_default_hp_metric(logger: TensorBoardLogger, on: bool) -> None:
    """Turn the logger's default ``hp_metric`` on or off. Off, ``log_hyperparams(params)`` without metrics records
    the hparams (``hparams.yaml``) but writes no TensorBoard hparams event. The flag has no public setter; this is
    the one place that writes it."""
    logger._default_hp_metric = on


def lightning_hparams(trainer: pl.Trainer) -> dict[str, Any]:
    """The hparams Lightning records at fit start: the module's and the datamodule's ``save_hyperparameters``
    (each only if it called it), without LightningCLI's ``_class_path``."""
    params: dict[str, Any] = {}
    module = trainer.lightning_module
    if getattr(module, "_log_hyperparams", False):
        params.update(module.hparams_initial)
    datamodule = trainer.datamodule  # type: ignore[attr-defined]
    if datamodule is not None and getattr(datamodule, "_log_hyperparams", False):
        params.update(datamodule.hparams_initial)
    params.pop("_class_path", None)
    return params
