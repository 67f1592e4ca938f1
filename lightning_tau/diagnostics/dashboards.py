"""TensorBoard dashboards for :class:`~lightning_tau.diagnostics.TimescaleMonitor`: custom-scalars layout and hparams.

Both are written only through a :class:`~lightning.pytorch.loggers.TensorBoardLogger`; other loggers get the plain
scalars (and the hparams as a flat dict) through ``trainer.loggers``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
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
    "write_sweep_hparams_config",
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
    "window_epochs": "window: mean age of the updates the weights hold (epochs)",
    "wd_mean_abs": "wd_t * mean|w| (paper's plateau c)",
    "rms_ratio": "weight RMS / sqrt(lr_t/(2 wd_t)): 1 = random-walk equilibrium",
    "weight_rms": "{group}: weight RMS (line), shaded to its prediction sqrt(lr_t/(2 wd_t))",
}


def custom_scalars_layout(prefix: str, groups: Sequence[str]) -> dict[str, dict[str, list[Any]]]:
    """The custom-scalars layout, in the format of ``SummaryWriter.add_custom_scalars``.

    Every chart has lines of one size on a linear axis, so each stays readable. Category
    ``"{prefix}: timescales"`` has one multi-line chart per quantity with every group on it: the instantaneous
    ``tau_iter`` (``tau_epoch``) next to the target ``tau_iter_target`` (``tau_epoch_target``) a
    ``TimescaleCallback`` holds, init memory, timescales elapsed, the window and ``weight_decay x mean|w|``. Category
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
        CHART_TITLES["window_epochs"]: ["Multiline", [f"^{p}/window_epochs/"]],
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


def write_sweep_hparams_config(
    log_dir: str | Path, hparams: Mapping[str, Sequence[Any]], metrics: Sequence[str]
) -> None:
    """Write a sweep's HParams experiment config into ``log_dir`` (the folder above its runs).

    TensorBoard's HParams tab takes its columns from one experiment config, and shows the first five hparams and
    the first five metrics, hparams whose value ``differs`` across runs first, then by name. Each run's own
    ``log_hyperparams`` writes a config with ``differs`` unset (so the five shown are the first by name: for the
    demo ``batch_size``, ``dataset_size``, ``depth``, ``epochs``, ``hidden``, never ``tau_epoch`` or
    ``weight_decay``). This one, in the sweep's root run, marks the hparams that take more than one value in
    ``hparams`` (name -> the value of every run) as differing, and lists ``metrics`` (the scalar tags to show,
    in order). TensorBoard takes the first config it finds, in no set order, so the sweep's runs must write none of
    their own: record them with :func:`write_sweep_run_hparams`.

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> write_sweep_hparams_config(root, {"tau_epoch": [1.0, 10.0], "lr": [3e-3, 3e-3]}, ["hp/val_loss"])
        >>> [p.name.startswith("events.out.tfevents") for p in root.iterdir()]
        [True]
    """
    from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
    from tensorboard.plugins.hparams import api_pb2, metadata, plugin_data_pb2
    from torch.utils.tensorboard import SummaryWriter

    infos = []
    for name, values in hparams.items():
        kind = api_pb2.DATA_TYPE_STRING if any(isinstance(v, str) for v in values) else api_pb2.DATA_TYPE_FLOAT64
        infos.append(api_pb2.HParamInfo(name=name, type=kind, differs=len({str(v) for v in values}) > 1))
    experiment = api_pb2.Experiment(
        hparam_infos=infos, metric_infos=[api_pb2.MetricInfo(name=api_pb2.MetricName(tag=tag)) for tag in metrics]
    )
    content = plugin_data_pb2.HParamsPluginData(experiment=experiment, version=metadata.PLUGIN_DATA_VERSION)
    plugin = SummaryMetadata.PluginData(plugin_name=metadata.PLUGIN_NAME, content=content.SerializeToString())
    summary = Summary(value=[Summary.Value(tag=metadata.EXPERIMENT_TAG, metadata=SummaryMetadata(plugin_data=plugin))])
    writer = SummaryWriter(log_dir=str(log_dir))
    try:
        writer._get_file_writer().add_summary(summary)  # the public add_* methods write scalars, not raw summaries
    finally:
        writer.close()


def write_sweep_run_hparams(
    logger: TensorBoardLogger, params: Mapping[str, Any], metrics: Mapping[str, float], step: int
) -> None:
    """Record one run of a sweep for the HParams tab: as ``log_hyperparams(params, metrics)`` (the metrics as
    scalars at ``step``, ``hparams.yaml``, the session records), without the run's own experiment config, which
    would compete with the sweep's (:func:`write_sweep_hparams_config`). ``params``: a flat dict of numbers and
    strings. Call on rank zero only."""
    from torch.utils.tensorboard.summary import hparams as hparams_summaries

    logger.hparams.update(params)  # what Lightning's `log_hyperparams` keeps for `hparams.yaml`
    logger.log_metrics(dict(metrics), step)
    _, session_start, session_end = hparams_summaries(dict(params), dict(metrics))
    writer = logger.experiment._get_file_writer()  # the public add_* methods write scalars, not raw summaries
    writer.add_summary(session_start, step)
    writer.add_summary(session_end, step)
