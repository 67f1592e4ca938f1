"""`TimescaleCallback` alone logs the EMA view; with a `TimescaleMonitor` beside it no key is logged twice."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from tiny_model import TinyModel, make_loader, quiet_trainer
from loggers import MemoryLogger
from runs import Unfreeze, frozen_aware_adamw

from lightning_tau import TimescaleCallback, TimescaleMonitor


def adamw(m: TinyModel) -> torch.optim.Optimizer:
    return torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1)


def fit(callbacks: list[Any], **kwargs: Any) -> MemoryLogger:
    logger = MemoryLogger()
    trainer = quiet_trainer(logger=logger, callbacks=callbacks, log_every_n_steps=4, max_epochs=2, **kwargs)
    trainer.fit(TinyModel(adamw), make_loader(n=120, batch_size=10))
    return logger


@pytest.mark.slow
def test_alone_logs_ema_view_at_every_logging_step() -> None:
    logger = fit([TimescaleCallback(tau_epoch=2.0, verbose=False)])
    assert {
        "timescale/tau_iter/pg1",
        "timescale/tau_iter_target/pg1",
        "timescale/tau_epoch_target/pg1",
        "timescale/weight_rms/pg1",
        "timescale/rms_equilibrium/pg1",
    } <= logger.keys()
    assert sorted({step for key, step in logger.calls if key == "timescale/tau_iter/pg1"}) == list(range(4, 25, 4))
    assert logger.hparams and logger.hparams[-1]["timescale/tau_epoch_target"] == 2.0


@pytest.mark.parametrize("order", ["monitor_first", "callback_first"])
@pytest.mark.slow
def test_callback_and_monitor_in_one_trainer_log_each_key_once_per_step(order: str) -> None:
    callback, monitor = TimescaleCallback(tau_epoch=2.0, verbose=False), TimescaleMonitor()
    logger = fit([monitor, callback] if order == "monitor_first" else [callback, monitor])
    assert logger.keys(), "nothing was logged"
    assert max(logger.calls.values()) == 1, [k for k, n in logger.calls.items() if n > 1]
    assert callback._fit.own_monitor is None  # the Trainer's monitor logs; the callback's stood down
    assert len(logger.hparams) == 1
    assert {"timescale/tau_iter_target/pg1", "timescale/tau_epoch/pg1"} <= logger.keys()  # the user's monitor got them


@pytest.mark.slow
def test_monitor_false_logs_nothing() -> None:
    logger = fit([TimescaleCallback(tau_epoch=2.0, verbose=False, monitor=False)])
    assert not logger.keys() and not logger.hparams


@pytest.mark.slow
def test_configured_monitor_used() -> None:
    logger = fit(
        [TimescaleCallback(tau_epoch=2.0, verbose=False, monitor=TimescaleMonitor(prefix="ema", logging_interval=6))]
    )
    assert "ema/tau_iter/pg1" in logger.keys("ema/")
    assert sorted({s for k, s in logger.calls if k == "ema/tau_iter/pg1"}) == [6, 12, 18, 24]


def test_bad_monitor_argument_clear_error() -> None:
    with pytest.raises(ValueError, match=r"TimescaleCallback\(monitor='yes'\)` is not valid: use True"):
        TimescaleCallback(tau_epoch=2.0, monitor="yes")  # type: ignore[arg-type]


@pytest.mark.slow
def test_monitor_logs_group_added_mid_fit() -> None:
    logger = MemoryLogger()
    callback = TimescaleCallback(tau_epoch=5.0, verbose=False)
    trainer = quiet_trainer(logger=logger, callbacks=[Unfreeze(), callback], log_every_n_steps=5, max_epochs=3)
    trainer.fit(TinyModel(frozen_aware_adamw), make_loader(n=100, batch_size=10))
    steps = sorted(s for k, s in logger.calls if k == "timescale/tau_iter/head")
    assert steps == [15, 20, 25, 30]  # from the first logging step after epoch 1 added it
    assert callback.monitor is not None and [g.name for g in callback.monitor.groups] == ["pg1", "head"]
