"""TensorBoard dashboards for :class:`~lightning_tau.diagnostics.TimescaleMonitor`: custom-scalars layout and hparams.

More: docs/diagnostics.rst, module notes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.loggers import TensorBoardLogger

__all__ = [
    "CHART_TITLES",
    "RUN_NAME_KEYS",
    "custom_scalars_layout",
    "experiment_summary",
    "link_runs",
    "run_name",
    "shown_hparams",
    "lightning_hparams",
    "lightning_wrote_hparams",
    "metric_key",
    "set_default_hp_metric",
    "write_custom_scalars",
    "write_hparams",
    "write_sweep_hparams_config",
    "write_sweep_run_hparams",
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
    """Record ``params`` with ``metrics`` (scalar tags, latest value shown) for TensorBoard's HParams tab, with
    the ``tau_epoch`` and ``weight_decay`` keys (:func:`shown_hparams`) listed first and shown by default, then
    the metrics.

    Writes the run's experiment config (:func:`experiment_summary`), then calls
    ``TensorBoardLogger.log_hyperparams(params, metrics)``, which writes the metrics as scalars at ``step``,
    ``hparams.yaml`` and the session summaries (and a config of its own, with no hparam marked ``differs``, which
    TensorBoard ignores: it keeps the *first* summary of a tag in a run). The monitor keeps Lightning's fit-start
    record out of the event file (see :func:`lightning_wrote_hparams`).
    """
    params = _shown_first(dict(params))
    recorded = _tensorboard_params(logger, params)
    _write_summary(logger, experiment_summary({key: [value] for key, value in recorded.items()}, list(metrics)))
    logger.log_hyperparams(params, metrics=dict(metrics), step=step)


def _tensorboard_params(logger: TensorBoardLogger, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` as ``TensorBoardLogger.log_hyperparams`` records them in the session summary (nested dicts
    flattened with ``/``, values TensorBoard cannot show turned into strings): the names the experiment config must
    use. Lightning has no public function for it; these are the three steps its ``log_hyperparams`` takes."""
    from lightning.fabric.utilities.logger import _convert_params, _flatten_dict

    return logger._sanitize_params(_flatten_dict(_convert_params(params)))


def _write_summary(logger: TensorBoardLogger, summary: Any) -> None:
    """Write a raw ``Summary`` proto into the logger's run (the public ``add_*`` methods write scalars only)."""
    logger.experiment._get_file_writer().add_summary(summary)


def _shown_first(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with the keys of :func:`shown_hparams` first (the order ``hparams.yaml`` lists them in)."""
    return {key: params[key] for key in shown_hparams(params)} | params


def shown_hparams(names: Iterable[str]) -> list[str]:
    """Of hparam ``names``, those the HParams tab shows by default: every ``tau_epoch`` key, then every
    ``weight_decay`` key (one per param group in the monitor's record), each in the given order.

    Example:
        >>> shown_hparams(["lr", "timescale/weight_decay/pg1", "timescale/tau_epoch_target", "timescale/tau_epoch/pg1"])
        ['timescale/tau_epoch/pg1', 'timescale/weight_decay/pg1']
        >>> shown_hparams(["dataset_size", "weight_decay", "tau_epoch", "seed"])
        ['tau_epoch', 'weight_decay']
    """
    names = list(names)
    return [n for n in names if "tau_epoch" in n.split("/")] + [n for n in names if "weight_decay" in n.split("/")]


def experiment_summary(
    hparams: Mapping[str, Sequence[Any]],
    metrics: Sequence[str],
    shown: Sequence[str] | None = None,
    *,
    drop_constant: bool = False,
) -> Any:
    """The HParams experiment config as a TensorBoard ``Summary``: the columns of the HParams tab.

    ``hparams``: name -> the value of every run (a string value makes the column a string one); ``metrics``: the
    scalar tags, in the order shown; ``shown``: the hparams ticked by default (``None``: :func:`shown_hparams`),
    listed first and the only ones marked ``differs``, which is what TensorBoard sorts and ticks by (see the module
    docstring). ``drop_constant``: leave out the hparams (other than ``shown``) with one value in every run, so the
    five ticked columns are ``shown`` and, by name, what else varies (a sweep's constants are the same in each row).

    Example:
        >>> summary = experiment_summary({"seed": [0, 1], "weight_decay": [0.1, 1.0], "tau_epoch": [10, 1]}, ["hp/x"])
        >>> from tensorboard.plugins.hparams import plugin_data_pb2
        >>> config = plugin_data_pb2.HParamsPluginData.FromString(summary.value[0].metadata.plugin_data.content)
        >>> [(info.name, info.differs) for info in config.experiment.hparam_infos]
        [('tau_epoch', True), ('weight_decay', True), ('seed', False)]
    """
    from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
    from tensorboard.plugins.hparams import api_pb2, metadata, plugin_data_pb2

    shown = shown_hparams(hparams) if shown is None else [name for name in shown if name in hparams]
    infos = []
    for name in [*shown, *(name for name in hparams if name not in shown)]:
        values = hparams[name]
        if drop_constant and name not in shown and len({repr(v) for v in values}) < 2:
            continue
        kind = api_pb2.DATA_TYPE_STRING if any(isinstance(v, str) for v in values) else api_pb2.DATA_TYPE_FLOAT64
        infos.append(api_pb2.HParamInfo(name=name, type=kind, differs=name in shown))
    experiment = api_pb2.Experiment(
        hparam_infos=infos, metric_infos=[api_pb2.MetricInfo(name=api_pb2.MetricName(tag=tag)) for tag in metrics]
    )
    content = plugin_data_pb2.HParamsPluginData(experiment=experiment, version=metadata.PLUGIN_DATA_VERSION)
    plugin = SummaryMetadata.PluginData(plugin_name=metadata.PLUGIN_NAME, content=content.SerializeToString())
    return Summary(value=[Summary.Value(tag=metadata.EXPERIMENT_TAG, metadata=SummaryMetadata(plugin_data=plugin))])


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
    log_dir: str | Path,
    hparams: Mapping[str, Sequence[Any]],
    metrics: Sequence[str],
    shown: Sequence[str] | None = None,
) -> None:
    """Write a sweep's HParams experiment config into ``log_dir`` (the folder above its runs).

    TensorBoard's HParams tab takes its columns from one experiment config and ticks its first five hparams, those
    marked ``differs`` first, each part by name, and its first five metrics (see the module docstring). This one,
    in the sweep's root run, lists and marks ``shown`` (``None``: :func:`shown_hparams`, ``tau_epoch`` and
    ``weight_decay``), then the other hparams of ``hparams`` (name -> the value of every run) that vary across the
    runs (so the ticked columns are ``tau_epoch``, ``weight_decay``, then by name what else varies: for the demo
    ``dataset_size``, ``fraction``, ``seed``), and ``metrics`` (the scalar tags to show, in order). TensorBoard
    takes the first config it finds, in no set order, so the sweep's runs must write none of their own: record
    them with :func:`write_sweep_run_hparams`.

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> write_sweep_hparams_config(root, {"tau_epoch": [1.0, 10.0], "lr": [3e-3, 3e-3]}, ["hp/val_loss"])
        >>> [p.name.startswith("events.out.tfevents") for p in root.iterdir()]
        [True]
    """
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(log_dir))
    try:
        # the public add_* methods write scalars, not raw summaries
        writer._get_file_writer().add_summary(experiment_summary(hparams, metrics, shown, drop_constant=True))
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


#: Short names of the hparams in a run's name (:func:`run_name`), in the order they are written.
RUN_NAME_KEYS = {"tau_epoch": "tau", "width": "w", "dataset_size": "N", "seed": "s"}


def run_name(hparams: Mapping[str, Any], keys: Mapping[str, str] | None = None) -> str:
    """A short name for a run that differs from its neighbours in its first characters: the sweep's values
    (:data:`RUN_NAME_KEYS`, those present), ``tau_epoch`` first, as ``tau4_N150_s0``.

    Example:
        >>> run_name({"dataset_size": 150, "tau_epoch": 4.0, "seed": 0, "lr": 0.003})
        'tau4_N150_s0'
        >>> run_name({"tau_epoch": 0.25, "seed": 2})
        'tau0.25_s2'
    """
    keys = RUN_NAME_KEYS if keys is None else keys
    parts = []
    for key, short in keys.items():
        value = hparams.get(key)
        if value is not None:
            parts.append(f"{short}{value:g}" if isinstance(value, (int, float)) else f"{short}{value}")
    return "_".join(parts)


def link_runs(folder: str | Path, runs: Mapping[str, str | Path], experiment: str | Path | None = None) -> Path:
    """A folder of symbolic links, one per run, named by the keys of ``runs`` (e.g. :func:`run_name`), so that
    ``tensorboard --logdir FOLDER`` is a short command and the HParams tab's Trial ID column shows those names.

    ``runs``: name -> the run's folder (its event files). ``experiment``: a folder whose own event files (not its
    subfolders') are linked into ``folder`` too, e.g. the sweep root holding :func:`write_sweep_hparams_config`'s
    config. Links are relative, so the sweep can be moved as a whole. A second call replaces the links it made;
    anything else in ``folder`` is refused. Returns ``folder``.

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> (root / "tb" / "tau_epoch=4_seed0_ab12").mkdir(parents=True)
        >>> view = link_runs(root / "view", {"tau4_s0": root / "tb" / "tau_epoch=4_seed0_ab12"})
        >>> [(p.name, os.readlink(p)) for p in view.iterdir()]
        [('tau4_s0', '../tb/tau_epoch=4_seed0_ab12')]
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    strays = [p.name for p in folder.iterdir() if not p.is_symlink()]
    if strays:
        raise ValueError(
            f"`link_runs(folder={str(folder)!r})`: the folder holds {sorted(strays)[:3]}, which are not links it"
            " made. Pass a new or empty folder."
        )
    for old in folder.iterdir():
        old.unlink()
    links = {name: Path(path) for name, path in runs.items()}
    if experiment is not None:
        links |= {p.name: p for p in sorted(Path(experiment).glob("*tfevents*")) if p.is_file()}
    for name, target in links.items():
        if not name or "/" in name or name in (".", ".."):
            raise ValueError(f"`link_runs`: run name {name!r} is not a plain folder name. Pass names without '/'.")
        (folder / name).symlink_to(os.path.relpath(target.resolve(), folder.resolve()))
    return folder
