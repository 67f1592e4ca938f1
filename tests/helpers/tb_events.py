"""Readers of real TensorBoard event files: a run's events, one tag's series, its HParams record, its last scalars."""

from __future__ import annotations

from pathlib import Path

from tensorboard.backend.event_processing import event_accumulator
from tensorboard.backend.event_processing.plugin_event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2
from tensorboard.plugins.hparams.backend_context import _sort_and_reduce_to_hparams_limit
from tensorboard.util import tensor_util


def hparams_record(events: EventAccumulator) -> tuple[dict[str, float], list[str]]:
    """The hparams and the metric tags of the run's (first) HParams record."""
    content = events.PluginTagToContent("hparams")
    session = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    experiment = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"]).experiment
    hparams = {k: v.number_value for k, v in session.session_start_info.hparams.items()}
    return hparams, [m.name.tag for m in experiment.metric_infos]


def load_events(log_dir: Path) -> EventAccumulator:
    accumulator = EventAccumulator(str(log_dir), size_guidance={"tensors": 0})
    accumulator.Reload()
    return accumulator


def scalar_series(accumulator: EventAccumulator, tag: str) -> dict[int, float]:
    return {e.step: float(tensor_util.make_ndarray(e.tensor_proto)) for e in accumulator.Tensors(tag)}


def read_run(run_dir: Path) -> tuple[dict, dict]:
    """Hparams of the run's first HParams record, and the last value of each scalar (read with tensorboard)."""
    accumulator = event_accumulator.EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    accumulator.Reload()
    content = accumulator.PluginTagToContent("hparams")["_hparams_/session_start_info"]
    hparams = plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info.hparams
    values = {key: getattr(value, value.WhichOneof("kind")) for key, value in hparams.items()}
    scalars = {tag: accumulator.Scalars(tag)[-1].value for tag in accumulator.Tags()["scalars"]}
    return values, scalars


def ticked_columns(experiment: api_pb2.Experiment) -> tuple[list[str], list[str]]:
    """The hparams and metrics the HParams tab ticks: TensorBoard's backend sorts the hparams
    (``_sort_and_reduce_to_hparams_limit``); its query pane (``tf-hparams-query-pane``) stable-sorts them by
    ``differs`` and ticks the first five of each list."""
    _sort_and_reduce_to_hparams_limit(experiment)
    infos = sorted(experiment.hparam_infos, key=lambda info: not info.differs)
    return [info.name for info in infos[:5]], [m.name.tag for m in experiment.metric_infos[:5]]
