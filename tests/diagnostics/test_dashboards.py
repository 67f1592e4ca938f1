"""The HParams tab's columns as TensorBoard picks them, run names, and the folder of links to a sweep's runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tb_events import ticked_columns
from tensorboard.backend.event_processing.io_wrapper import GetLogdirSubdirectories
from tensorboard.backend.event_processing.plugin_event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2

from lightning_tau.diagnostics.dashboards import link_runs, run_name, write_sweep_hparams_config

#: A sweep of 2 dataset sizes x 3 tau_epochs x 2 seeds, as the demo records it (constants among them).
RUNS = [
    {"dataset_size": n, "fraction": n / 1400, "batch_size": 64, "lr": 3e-3, "weight_decay": 64 / (3e-3 * n * tau),
     "tau_epoch": tau, "tau_iter": tau * n / 64, "seed": seed, "schedule": "cosine"}
    for n in (100, 300) for tau in (1.0, 10.0, 100.0) for seed in (0, 1)
]  # fmt: skip


def read_experiment(log_dir: Path) -> api_pb2.Experiment:
    events = EventAccumulator(str(log_dir))
    events.Reload()
    content = events.PluginTagToContent("hparams")["_hparams_/experiment"]
    return plugin_data_pb2.HParamsPluginData.FromString(content).experiment


def test_sweep_config_ticks_tau_epoch_and_weight_decay_first(tmp_path: Path) -> None:
    metrics = ["hp/val_loss", "hp/val_error"]
    write_sweep_hparams_config(tmp_path, {key: [run[key] for run in RUNS] for key in RUNS[0]}, metrics)
    hparams, shown_metrics = ticked_columns(read_experiment(tmp_path))
    # then, by name, what else varies: no constant (batch_size, lr, schedule) takes a column
    assert hparams == ["tau_epoch", "weight_decay", "dataset_size", "fraction", "seed"]
    assert shown_metrics == metrics


def test_run_names_differ_in_their_first_characters() -> None:
    names = [run_name(run) for run in RUNS]
    assert len(set(names)) == len(names)
    assert names[:3] == ["tau1_N100_s0", "tau1_N100_s1", "tau10_N100_s0"]
    assert max(len(name) for name in names) <= 14  # TensorBoard's Trial ID column shows them whole
    assert run_name({"tau_epoch": 0.25, "width": 64, "seed": 3}) == "tau0.25_w64_s3"


def test_link_runs_makes_short_logdir_tensorboard_reads(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep_0"
    paths = {}
    for run in RUNS[:3]:
        path = sweep / "tb" / f"digits_dataset_size={run['fraction']:g}" / f"tau_epoch={run['tau_epoch']:g}_trial0"
        path.mkdir(parents=True, exist_ok=True)
        (path / "events.out.tfevents.1.host").write_bytes(b"")
        paths[run_name(run)] = path
    (sweep / "events.out.tfevents.0.host").write_bytes(b"")  # the sweep's HParams config
    view = link_runs(sweep / "view", paths, experiment=sweep)
    assert sorted(p.name for p in view.iterdir()) == sorted([*paths, "events.out.tfevents.0.host"])
    assert all(not os.path.isabs(os.readlink(p)) for p in view.iterdir())  # relative: the sweep can move
    # TensorBoard's own walk of the logdir finds each run under its short name, and the config at the root
    found = {Path(d).name for d in GetLogdirSubdirectories(str(view))}
    assert found == {*paths, "view"}
    # a second call replaces the links; a folder holding anything else is refused
    assert sorted(p.name for p in link_runs(view, dict(list(paths.items())[:1])).iterdir()) == [next(iter(paths))]
    (view / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=r"holds \['notes.txt'\], which are not links it made"):
        link_runs(view, paths)
    assert (view / "notes.txt").read_text() == "mine"
