"""The monitor logs each param group's own target and ``tau_epoch`` in its own optimizer's steps per epoch.

A ``TimescaleCallback`` decides per group: with ``width_exponent=alpha`` every decaying group of a muP model of
width multiplier ``S`` holds ``tau_iter * S ** (1 - alpha)``, and under manual optimization an optimizer that steps
less than once per batch is decided with its own ``M``. The logged view (read back from the TensorBoard event file)
must show what each group holds, not the run's base-width, one-step-per-batch values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mup
import pytest
import torch
from tiny_model import TinyModel, make_loader, quiet_trainer
from mup_models import (
    BASE_WIDTH,
    LR,
    Module,
    mu_adamw,  # MuAdamW at a constant lr: tau_iter_t is on its target
    mup_mlp,
)
from runs import TwoPlayers
from tb_events import hparams_record, load_events, scalar_series
from lightning.pytorch.loggers import TensorBoardLogger

from lightning_tau import TimescaleCallback
from lightning_tau.diagnostics import TimescaleMonitor

TAU_EPOCH = 2.0
N, B = 120, 10  # 12 batches per epoch
INTERVAL = 4


def fit_logged(tmp_path: Path, model: Any, callbacks: list[Any], n: int = N, epochs: int = 2) -> Path:
    logger = TensorBoardLogger(tmp_path, name="runs", version="v0")
    trainer = quiet_trainer(logger=logger, callbacks=callbacks, max_epochs=epochs, log_every_n_steps=INTERVAL)
    trainer.fit(model, make_loader(n=n, batch_size=B))
    return Path(logger.log_dir)


@pytest.mark.parametrize("width", [2 * BASE_WIDTH, 4 * BASE_WIDTH])
@pytest.mark.slow
def test_width_exponent_each_group_logs_own_target(tmp_path: Path, width: int) -> None:
    alpha = 0.5
    callback = TimescaleCallback(tau_epoch=TAU_EPOCH, width_exponent=alpha, decay_vectors=True, verbose=False)
    events = load_events(fit_logged(tmp_path, Module(mup_mlp(width), mu_adamw), [callback]))  # its own monitor
    s = width / BASE_WIDTH
    m = N / B
    # MuAdamW: the hidden matrix (s = width / base) is pg1, the vector-like parameters (s = 1) pg2; both move with
    # the model's S = width / base
    expected = {"pg1": TAU_EPOCH * m * s ** (1 - alpha), "pg2": TAU_EPOCH * m * s ** (1 - alpha)}
    assert set(scalar_series(events, "timescale/width_mult/pg1").values()) == {s}
    steps = list(range(INTERVAL, 2 * N // B + 1, INTERVAL))
    for name, tau_iter in expected.items():
        target = scalar_series(events, f"timescale/tau_iter_target/{name}")
        assert sorted(target) == steps
        assert all(v == pytest.approx(tau_iter, rel=1e-6) for v in target.values()), (name, target, tau_iter)
        epoch_target = scalar_series(events, f"timescale/tau_epoch_target/{name}")
        assert all(v == pytest.approx(tau_iter / m, rel=1e-6) for v in epoch_target.values()), (name, epoch_target)
        # the step's own 1/(lr*wd) is on its group's target under a constant lr
        instantaneous = scalar_series(events, f"timescale/tau_iter/{name}")
        assert instantaneous == pytest.approx(target, rel=1e-6), name
        assert scalar_series(events, f"timescale/tau_epoch/{name}") == pytest.approx(epoch_target, rel=1e-6), name
    hparams, _ = hparams_record(events)
    assert hparams["timescale/tau_iter_target"] == pytest.approx(TAU_EPOCH * m)  # the run's (base width's) target
    assert hparams["timescale/tau_epoch/pg1"] == pytest.approx(TAU_EPOCH * s ** (1 - alpha), rel=1e-6)


@pytest.mark.slow
def test_manual_optimization_logs_tau_epoch_in_each_optimizers_own_steps(tmp_path: Path) -> None:
    # TwoPlayers: 10 batches, the discriminator (optimizer 0) steps every batch, the generator every second
    callback = TimescaleCallback(tau_epoch=TAU_EPOCH, steps_per_epoch={1: 5}, verbose=False)
    monitor = TimescaleMonitor(logging_interval=2)
    events = load_events(fit_logged(tmp_path, TwoPlayers(), [callback, monitor], n=100))
    expected_m = {"optimizer0/pg1": 10, "optimizer1/pg1": 5}  # steps each optimizer takes per epoch
    for name, m in expected_m.items():
        tau_iter = scalar_series(events, f"timescale/tau_iter/{name}")  # 1/(lr*wd) of the step: constant lr
        assert tau_iter and all(v == pytest.approx(TAU_EPOCH * m, rel=1e-6) for v in tau_iter.values()), name
        tau_iter_target = scalar_series(events, f"timescale/tau_iter_target/{name}")
        assert tau_iter_target == pytest.approx(tau_iter, rel=1e-6), name
        tau_epoch = scalar_series(events, f"timescale/tau_epoch/{name}")
        assert sorted(tau_epoch) == sorted(tau_iter)
        assert all(v == pytest.approx(TAU_EPOCH, rel=1e-6) for v in tau_epoch.values()), (name, tau_epoch)
        tau_epoch_target = scalar_series(events, f"timescale/tau_epoch_target/{name}")
        assert tau_epoch_target == pytest.approx(tau_epoch, rel=1e-6), name
    hparams, _ = hparams_record(events)
    assert hparams["timescale/tau_epoch/optimizer1/pg1"] == pytest.approx(TAU_EPOCH, rel=1e-6)
    assert hparams["timescale/steps_per_epoch"] == 10  # the run's M (one step per batch)


@pytest.mark.slow
def test_groups_sharing_name_logged_one_series_each(tmp_path: Path) -> None:
    # MuAdamW splits the one group named "all" into an s = 4 group (lr / 4) and an s = 1 group, both named "all"
    def named(net: Any) -> Any:
        return mup.MuAdamW([{"params": list(net.parameters()), "name": "all"}], lr=LR, weight_decay=0.1)

    callback = TimescaleCallback(tau_epoch=TAU_EPOCH, decay_vectors=True, verbose=False)
    events = load_events(fit_logged(tmp_path, Module(mup_mlp(4 * BASE_WIDTH), named), [callback]))
    m = N / B
    names = [g.name for g in callback.groups]
    assert names == ["all/pg1", "all/pg2"]
    by_name = {g.name: g for g in callback.groups}
    assert sorted((g.width_mult or 1.0) for g in callback.groups) == [1.0, 4.0]
    expected = [1 / (LR * TAU_EPOCH * m), 4 / (LR * TAU_EPOCH * m)]  # s = 1 (lr), s = 4 (lr / 4)
    for name, g in by_name.items():  # each series is one group's own
        assert g.weight_decay == pytest.approx(1 / (g.reference_lr * TAU_EPOCH * m))
        series = scalar_series(events, f"timescale/weight_decay/{name}")
        assert series and all(v == pytest.approx(g.weight_decay, rel=1e-6) for v in series.values()), name
        if g.width_mult is not None:
            assert set(scalar_series(events, f"timescale/width_mult/{name}").values()) == {g.width_mult}
    assert sorted(g.weight_decay for g in callback.groups) == pytest.approx(expected)
    tags = set(events.Tags()["tensors"])
    assert not any(t.endswith("/all") for t in tags), sorted(t for t in tags if t.endswith("/all"))
    assert set(callback.state_dict()["weight_decay"]) == set(names)
    hparams, _ = hparams_record(events)
    assert sorted(hparams[f"timescale/weight_decay/{n}"] for n in names) == pytest.approx(expected, rel=1e-6)


@pytest.mark.slow
def test_manual_optimization_with_tau_iter_logs_tau_epoch_in_each_optimizers_own_steps(tmp_path: Path) -> None:
    # tau_iter=20 steps for both optimizers: 2 epochs of the discriminator's 10 steps, 4 of the generator's 5
    callback = TimescaleCallback(tau_iter=20.0, steps_per_epoch={1: 5}, verbose=False)
    monitor = TimescaleMonitor(logging_interval=2)
    events = load_events(fit_logged(tmp_path, TwoPlayers(), [callback, monitor], n=100))
    for name, m in {"optimizer0/pg1": 10, "optimizer1/pg1": 5}.items():
        target = scalar_series(events, f"timescale/tau_epoch_target/{name}")
        assert target and all(v == pytest.approx(20.0 / m, rel=1e-6) for v in target.values()), (name, target)
        tau_epoch = scalar_series(events, f"timescale/tau_epoch/{name}")  # constant lr: on its target
        assert tau_epoch == pytest.approx(target, rel=1e-6), name
        tau_iter_target = scalar_series(events, f"timescale/tau_iter_target/{name}")
        assert all(v == pytest.approx(20.0) for v in tau_iter_target.values()), name


@pytest.mark.slow
def test_hparams_record_reference_lr_not_warmup_lr_of_first_step(tmp_path: Path) -> None:
    # a linear warm-up from 0.1 x lr: the first step runs at lr 0.001, the reference (initial_lr) is 0.01
    def warmup(m: TinyModel) -> dict[str, Any]:
        opt = torch.optim.AdamW(m.parameters(), lr=0.01, weight_decay=0.1)
        sched = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=6)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    callback = TimescaleCallback(tau_epoch=TAU_EPOCH, decay_vectors=True, verbose=False)
    events = load_events(fit_logged(tmp_path, TinyModel(warmup), [callback]))
    first_lr = scalar_series(events, "timescale/lr/pg1")
    assert first_lr[INTERVAL] < 0.01  # still warming up at the first logging step
    hparams, _ = hparams_record(events)
    m = N / B
    assert hparams["timescale/lr/pg1"] == pytest.approx(0.01)
    assert hparams["timescale/weight_decay/pg1"] == pytest.approx(1 / (0.01 * TAU_EPOCH * m))
    assert hparams["timescale/tau_iter/pg1"] == pytest.approx(TAU_EPOCH * m)
    assert hparams["timescale/tau_epoch/pg1"] == pytest.approx(TAU_EPOCH)


@pytest.mark.slow
def test_trainer_monitor_reads_shape_callback_decided_with(tmp_path: Path) -> None:
    # the callback's own N and B (M = 300 / 10 = 30) differ from the loader's (12 batches per epoch): the monitor
    # in the Trainer (listed first, so its hooks run first) must log tau_epoch in the callback's M, in both epochs
    callback = TimescaleCallback(tau_epoch=TAU_EPOCH, dataset_size=300, batch_size=10, verbose=False)
    monitor = TimescaleMonitor(logging_interval=INTERVAL)
    events = load_events(fit_logged(tmp_path, TinyModel(), [monitor, callback]))
    tau_epoch = scalar_series(events, "timescale/tau_epoch/pg1")
    assert sorted(tau_epoch) == list(range(INTERVAL, 2 * N // B + 1, INTERVAL))
    assert all(v == pytest.approx(TAU_EPOCH, rel=1e-6) for v in tau_epoch.values()), tau_epoch
    hparams, _ = hparams_record(events)
    assert hparams["timescale/steps_per_epoch"] == 30.0 and hparams["timescale/dataset_size"] == 300.0
    assert monitor.run_shape is callback.shape  # one shape, read once per decision
