"""TimescaleMonitor with a real TensorBoardLogger: event files read back, and the tensorboard server's HTTP API."""

from __future__ import annotations

import json
import math
import re
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import torch
from tiny_model import TinyModel, make_loader, quiet_trainer
from tb_events import hparams_record, load_events, scalar_series, ticked_columns
from lightning.pytorch.callbacks import EarlyStopping
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger
from tensorboard.backend.event_processing.plugin_event_accumulator import EventAccumulator
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.plugins.hparams import plugin_data_pb2
from tensorboard.util import tensor_util

from lightning_tau import TimescaleCallback
from lightning_tau.diagnostics import TimescaleMonitor
from lightning_tau.diagnostics.dashboards import CHART_TITLES

LR, WD, N, B = 1e-2, 0.1, 120, 10


class HparamsModel(TinyModel):
    def __init__(self) -> None:
        super().__init__()
        self.save_hyperparameters({"hidden": 8})


class SilentModel(TinyModel):
    """Logs nothing at all."""

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self(x), y)


def fit_with_tensorboard(
    tmp_path: Path,
    model: TinyModel | None = None,
    monitor: TimescaleMonitor | None = None,
    callbacks: list | None = None,
    **logger_kwargs,
) -> tuple[TinyModel, Path]:
    logger = TensorBoardLogger(tmp_path, name="runs", version="v0", **logger_kwargs)
    model = model or TinyModel()
    trainer = quiet_trainer(logger=logger, callbacks=[monitor or TimescaleMonitor(4), *(callbacks or [])])
    trainer.fit(model, make_loader(N, B))
    return model, Path(logger.log_dir)


def layout_charts(events: EventAccumulator) -> dict[str, layout_pb2.Chart]:
    (config,) = events.Tensors("custom_scalars__config__")
    layout = layout_pb2.Layout.FromString(tensor_util.make_ndarray(config.tensor_proto).item())
    return {c.title: c for category in layout.category for c in category.chart}


@pytest.mark.slow
def test_scalars_layout_and_hparams(tmp_path):
    model, log_dir = fit_with_tensorboard(tmp_path, HparamsModel(), default_hp_metric=False)
    events = load_events(log_dir)
    tags = set(events.Tags()["tensors"])
    expected = {
        f"timescale/{k}/pg1"
        for k in (
            "lr", "weight_decay", "tau_iter", "tau_epoch", "weight_mean_abs", "weight_rms", "rms_equilibrium",
            "coherent_bound", "rms_ratio", "wd_mean_abs", "init_memory", "timescales_elapsed",
        )
    }  # fmt: skip
    assert expected <= tags
    assert sorted(scalar_series(events, "timescale/tau_iter/pg1")) == [4, 8, 12]
    for step, value in scalar_series(events, "timescale/init_memory/pg1").items():
        assert value == pytest.approx((1 - LR * WD) ** step, rel=1e-6)
    assert scalar_series(events, "timescale/tau_epoch/pg1")[12] == pytest.approx(B / (LR * WD * N), rel=1e-6)
    assert scalar_series(events, "timescale/rms_equilibrium/pg1")[4] == pytest.approx(math.sqrt(LR / (2 * WD)))
    flat = torch.cat([p.detach().double().reshape(-1) for p in model.parameters()])
    assert scalar_series(events, "timescale/weight_rms/pg1")[12] == pytest.approx(
        flat.square().mean().sqrt().item(), rel=1e-6
    )

    # custom-scalars layout: instantaneous tau beside its target; the RMS against its prediction on the RMS's own
    # scale (a band from the prediction to the measured value, not up to 1/wd), and their ratio
    charts = layout_charts(events)
    assert list(charts[CHART_TITLES["tau_iter"]].multiline.tag) == ["^timescale/tau_iter(_target)?/"]
    assert list(charts[CHART_TITLES["tau_epoch"]].multiline.tag) == ["^timescale/tau_epoch(_target)?/"]
    assert list(charts[CHART_TITLES["init_memory"]].multiline.tag) == ["^timescale/init_memory/"]
    assert list(charts[CHART_TITLES["rms_ratio"]].multiline.tag) == ["^timescale/rms_ratio/"]
    (gap,) = charts["pg1: weight RMS (line), shaded to its prediction sqrt(lr_t/(2 wd_t))"].margin.series
    assert (gap.value, gap.lower, gap.upper) == (
        "timescale/weight_rms/pg1",
        "timescale/rms_equilibrium/pg1",
        "timescale/weight_rms/pg1",
    )
    assert {gap.value, gap.lower} <= tags
    assert [title for title, chart in charts.items() if chart.HasField("margin")] == [
        CHART_TITLES["weight_rms"].format(group="pg1")
    ]
    (tau_regex,) = charts[CHART_TITLES["tau_iter"]].multiline.tag
    assert {t for t in tags if re.search(tau_regex, t)} == {"timescale/tau_iter/pg1"}  # no target without a callback

    # hparams record, with the final monitored metric
    hparams, metric_tags = hparams_record(events)
    assert hparams["timescale/dataset_size"] == N
    assert hparams["timescale/global_batch_size"] == B
    assert hparams["timescale/weight_decay/pg1"] == pytest.approx(WD)
    assert hparams["timescale/lr/pg1"] == pytest.approx(LR)
    assert hparams["timescale/tau_epoch/pg1"] == pytest.approx(B / (LR * WD * N))
    assert "timescale/tau_iter_target" not in hparams
    assert hparams["hidden"] == 8  # the module's own hparams come along
    assert metric_tags == ["hp/train_loss"]
    assert set(scalar_series(events, "hp/train_loss")) == {12}


@pytest.mark.slow
def test_logs_target_timescale_beside_instantaneous_one(tmp_path):
    """The targets a `TimescaleCallback` sets on the monitor are logged per decaying group, and recorded as hparams."""
    monitor = TimescaleMonitor(4)
    monitor.target_tau_iter, monitor.target_tau_epoch = 1000.0, 83.5
    _, log_dir = fit_with_tensorboard(tmp_path, monitor=monitor, default_hp_metric=False)
    events = load_events(log_dir)
    assert scalar_series(events, "timescale/tau_iter_target/pg1") == {4: 1000.0, 8: 1000.0, 12: 1000.0}
    assert scalar_series(events, "timescale/tau_epoch_target/pg1") == {4: 83.5, 8: 83.5, 12: 83.5}
    (tau_regex,) = layout_charts(events)[CHART_TITLES["tau_iter"]].multiline.tag
    tags = events.Tags()["tensors"]
    assert {t for t in tags if re.search(tau_regex, t)} == {"timescale/tau_iter/pg1", "timescale/tau_iter_target/pg1"}
    hparams, _ = hparams_record(events)
    assert hparams["timescale/tau_iter_target"] == 1000.0
    assert hparams["timescale/tau_epoch_target"] == 83.5


@pytest.mark.slow
def test_callback_alone_logs_targets_layout_and_hparams(tmp_path):
    """The quick start's one line: `TimescaleCallback` alone gives the targets, the layout and the hparams record."""
    logger = TensorBoardLogger(tmp_path, name="runs", version="v0", default_hp_metric=False)
    trainer = quiet_trainer(
        logger=logger, log_every_n_steps=4, callbacks=[TimescaleCallback(tau_epoch=2.0, verbose=False)]
    )
    trainer.fit(TinyModel(), make_loader(N, B))
    events = load_events(Path(logger.log_dir))
    steps_per_epoch = N / B
    assert scalar_series(events, "timescale/tau_epoch_target/pg1") == {4: 2.0, 8: 2.0, 12: 2.0}
    assert scalar_series(events, "timescale/tau_iter_target/pg1")[12] == pytest.approx(2.0 * steps_per_epoch)
    # constant lr: the instantaneous timescale is the target
    assert scalar_series(events, "timescale/tau_iter/pg1")[12] == pytest.approx(2.0 * steps_per_epoch)
    assert CHART_TITLES["tau_iter"] in layout_charts(events)
    hparams, metric_tags = hparams_record(events)
    assert hparams["timescale/tau_iter_target"] == pytest.approx(2.0 * steps_per_epoch)
    assert metric_tags == ["hp/train_loss"]


@pytest.mark.slow
def test_hparams_with_only_training_loss_and_unlogged_monitor(tmp_path, caplog):
    """No validation: `EarlyStopping(monitor="val_loss")` never sees its metric; the record shows the train loss."""
    stopping = EarlyStopping(monitor="val_loss", check_on_train_epoch_end=False)
    with caplog.at_level("INFO"):
        _, log_dir = fit_with_tensorboard(tmp_path, callbacks=[stopping], default_hp_metric=False)
    assert "'val_loss' was not logged" in caplog.text
    events = load_events(log_dir)
    hparams, metric_tags = hparams_record(events)
    assert hparams["timescale/tau_iter/pg1"] == pytest.approx(1 / (LR * WD))
    assert metric_tags == ["hp/train_loss"]
    (final_loss,) = scalar_series(events, "hp/train_loss").values()
    assert 0 < final_loss < 2  # a cross-entropy over two classes, recorded at the last step


@pytest.mark.slow
def test_hparams_nothing_logged(tmp_path):
    """A module that logs nothing still gets its record, next to the monitor's own timescales elapsed."""
    _, log_dir = fit_with_tensorboard(tmp_path, SilentModel(), default_hp_metric=False)
    events = load_events(log_dir)
    hparams, metric_tags = hparams_record(events)
    assert hparams["timescale/weight_decay/pg1"] == pytest.approx(WD)
    assert metric_tags == ["hp/timescale/timescales_elapsed/pg1"]
    assert scalar_series(events, "hp/timescale/timescales_elapsed/pg1")[12] == pytest.approx(12 * LR * WD)


@pytest.mark.slow
def test_hparams_metric_not_logged_warns_and_records_logged_scalars(tmp_path):
    with pytest.warns(UserWarning, match=r"hparams_metric='val_acc'\)`: that metric was not logged"):
        _, log_dir = fit_with_tensorboard(
            tmp_path, monitor=TimescaleMonitor(4, hparams_metric="val_acc"), default_hp_metric=False
        )
    _, metric_tags = hparams_record(load_events(log_dir))
    assert metric_tags == ["hp/train_loss"]


def session_starts(log_dir: Path) -> list[dict[str, object]]:
    """Every hparams session-start record in the run's event files, in the order written (TensorBoard shows the
    first)."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    records = []
    for event_file in sorted(log_dir.glob("events.out.tfevents.*")):
        for event in EventFileLoader(str(event_file)).Load():
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name != "hparams":
                    continue
                data = plugin_data_pb2.HParamsPluginData.FromString(value.metadata.plugin_data.content)
                if data.HasField("session_start_info"):
                    hparams = data.session_start_info.hparams
                    records.append({k: getattr(v, v.WhichOneof("kind")) for k, v in hparams.items()})
    return records


@pytest.mark.slow
def test_default_path_hparams_record_holds_timescales_and_module_s_hparams(tmp_path, recwarn):
    """README's quick start: `TimescaleCallback` with its own monitor, Lightning's default TensorBoard logger
    (`default_hp_metric=True`) and a module that calls `save_hyperparameters`."""
    model = HparamsModel()
    callback = TimescaleCallback(tau_epoch=2.0, verbose=False)
    trainer = quiet_trainer(logger=True, default_root_dir=tmp_path, callbacks=[callback])
    trainer.fit(model, make_loader(N, B))
    log_dir = Path(trainer.logger.log_dir)
    records = session_starts(log_dir)
    assert len(records) == 1, records  # the first record is the one TensorBoard shows: it must be ours
    (first,) = records
    m = N / B  # 12 steps per epoch
    assert first["hidden"] == 8  # the module's own hparams, as Lightning would have recorded them
    assert first["timescale/tau_epoch_target"] == pytest.approx(2.0)
    assert first["timescale/tau_iter_target"] == pytest.approx(2.0 * m)
    assert first["timescale/tau_iter/pg1"] == pytest.approx(24.0, rel=1e-9)
    assert first["timescale/tau_epoch/pg1"] == pytest.approx(2.0, rel=1e-9)
    assert first["timescale/weight_decay/pg1"] == pytest.approx(1 / (LR * 24.0), rel=1e-9)
    assert "hidden: 8" in (log_dir / "hparams.yaml").read_text()  # Lightning's hparams.yaml as before
    assert trainer.logger._default_hp_metric is True  # the logger is left as it was given
    assert not [w for w in recwarn if "hparams" in str(w.message)]


@pytest.mark.slow
def test_hparams_with_default_hp_metric_and_no_module_hparams(tmp_path):
    """Lightning writes no hparams record for a module without `save_hyperparameters`, so ours shows."""
    _, log_dir = fit_with_tensorboard(tmp_path)  # default_hp_metric=True
    content = load_events(log_dir).PluginTagToContent("hparams")
    session = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    assert session.session_start_info.hparams["timescale/weight_decay/pg1"].number_value == pytest.approx(WD)


@pytest.mark.slow
def test_csv_and_tensorboard_log_same_keys(tmp_path):
    tb = TensorBoardLogger(tmp_path, name="tb", version="", default_hp_metric=False)
    csv_logger = CSVLogger(tmp_path, name="csv", version="")
    trainer = quiet_trainer(logger=[tb, csv_logger], callbacks=[TimescaleMonitor(6)])
    trainer.fit(TinyModel(), make_loader(N, B))
    tb_tags = {t for t in load_events(Path(tb.log_dir)).Tags()["tensors"] if t.startswith("timescale/")}
    header = (Path(csv_logger.log_dir) / "metrics.csv").read_text().splitlines()[0].split(",")
    assert tb_tags == {h for h in header if h.startswith("timescale/")}
    assert len(tb_tags) == 13  # GROUP_KEYS of test_monitor.py, window_epochs among them
    hparams = (Path(csv_logger.log_dir) / "hparams.yaml").read_text()
    assert "timescale/tau_epoch/pg1" in hparams  # the flat hparams dict reaches other loggers too


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get_json(url: str) -> object:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


@pytest.mark.slow
def test_server_serves_layout_and_scalars(tmp_path):
    fit_with_tensorboard(tmp_path, default_hp_metric=False)
    port = _free_port()
    command = [sys.executable, "-m", "tensorboard.main", "--logdir", str(tmp_path / "runs"), "--host", "127.0.0.1",
               "--port", str(port), "--load_fast", "false", "--reload_interval", "1"]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        layout: object = {}
        while time.monotonic() < deadline:
            try:
                layout = _get_json(f"{base}/data/plugin/custom_scalars/layout")
                if layout:
                    break
            except OSError:
                pass
            if server.poll() is not None:
                raise AssertionError(f"tensorboard exited: {server.stderr.read().decode()[-2000:]}")
            time.sleep(1)
        charts = {chart["title"]: chart for category in layout["category"] for chart in category["chart"]}
        assert {CHART_TITLES["tau_iter"], CHART_TITLES["rms_ratio"]} <= set(charts)
        # the server matches the tau chart's regex to the instantaneous key (no target without a callback)
        (tau_regex,) = charts[CHART_TITLES["tau_iter"]]["multiline"]["tag"]
        query = urllib.parse.urlencode({"run": "v0", "tag": tau_regex})
        matched = _get_json(f"{base}/data/plugin/custom_scalars/scalars?{query}")
        assert matched["regex_valid"]
        assert set(matched["tag_to_events"]) == {"timescale/tau_iter/pg1"}
        query = urllib.parse.urlencode({"run": "v0", "tag": "timescale/init_memory/pg1"})
        series = _get_json(f"{base}/data/plugin/scalars/scalars?{query}")
        assert [(step, pytest.approx(value, rel=1e-6)) for _, step, value in series] == [
            (step, (1 - LR * WD) ** step) for step in (4, 8, 12)
        ]
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=15)


@pytest.mark.slow
def test_band_charts_only_for_decaying_groups(tmp_path):
    def two_groups(module: TinyModel) -> torch.optim.Optimizer:
        decay = [module.hidden.weight, module.head.weight]
        rest = [p for p in module.parameters() if all(p is not q for q in decay)]
        return torch.optim.AdamW([{"params": decay, "name": "decay"}, {"params": rest, "weight_decay": 0.0}], lr=LR)

    _, log_dir = fit_with_tensorboard(tmp_path, TinyModel(two_groups))
    titles = set(layout_charts(load_events(log_dir)))
    per_group = {t.split(":")[0] for t in titles if t.endswith(CHART_TITLES["weight_rms"].format(group=""))}
    assert per_group == {"decay"}  # pg2 has no weight decay, so no prediction: no empty chart for it


class TwoGroupModel(HparamsModel):
    """Module hparams that sort before ``timescale/...`` by name, and a decaying and a non-decaying group."""

    def __init__(self) -> None:
        super().__init__()
        self.save_hyperparameters({"hidden": 8, "activation": "relu", "batch_norm": False, "dropout": 0.0})

    def configure_optimizers(self):
        decay = [p for p in self.parameters() if p.ndim > 1]
        no_decay = [p for p in self.parameters() if p.ndim <= 1]
        return torch.optim.AdamW(
            [{"params": decay, "weight_decay": WD}, {"params": no_decay, "weight_decay": 0.0}], lr=LR
        )


@pytest.mark.slow
def test_hparams_tab_ticks_tau_epoch_and_weight_decay_per_group(tmp_path):
    """TensorBoard ticks the first five hparams of the run's experiment config (those marked ``differs`` first,
    by name) and its first five metrics: the monitor's config marks the timescale and weight decay of each group."""
    _, log_dir = fit_with_tensorboard(tmp_path, TwoGroupModel(), default_hp_metric=False)
    content = load_events(log_dir).PluginTagToContent("hparams")  # the first summary of each tag: TensorBoard's
    experiment = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"]).experiment
    hparams, metrics = ticked_columns(experiment)
    assert hparams[:3] == ["timescale/tau_epoch/pg1", "timescale/weight_decay/pg1", "timescale/weight_decay/pg2"]
    assert metrics == ["hp/train_loss"]
    session = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    assert set(session.session_start_info.hparams) == {info.name for info in experiment.hparam_infos}
    assert "activation: relu" in (log_dir / "hparams.yaml").read_text()
