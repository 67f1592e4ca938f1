"""TimescaleMonitor: logged keys and values against closed forms on a tiny model (CSV logger and no logger)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import lightning.pytorch as pl
import pytest
import torch
from tiny_model import TinyModel, make_dataset, make_loader, quiet_trainer
from runs import Unfreeze, frozen_aware_adamw
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.utilities.exceptions import MisconfigurationException
from torch.utils.data import DataLoader, IterableDataset

from lightning_tau import TimescaleCallback
from lightning_tau.couplings import window_direct
from lightning_tau.diagnostics import TimescaleMonitor

LR, WD = 1e-2, 0.1
N, B = 120, 10  # 12 optimizer steps per epoch

GROUP_KEYS = {
    "lr", "weight_decay", "weight_mean_abs", "weight_rms", "coherent_bound", "wd_mean_abs", "init_memory",
    "timescales_elapsed", "window_epochs", "tau_iter", "tau_epoch", "rms_equilibrium", "rms_ratio",
}  # fmt: skip
NO_DECAY_KEYS = {"lr", "weight_decay", "weight_mean_abs", "weight_rms"}


def two_groups(module: TinyModel) -> torch.optim.Optimizer:
    decay = [module.hidden.weight, module.head.weight]
    rest = [p for p in module.parameters() if all(p is not q for q in decay)]
    return torch.optim.AdamW(
        [{"params": decay, "name": "decay"}, {"params": rest, "weight_decay": 0.0}], lr=LR, weight_decay=WD
    )


def read_csv(log_dir: Path) -> list[dict[str, float]]:
    with open(log_dir / "metrics.csv") as f:
        return [{k: float(v) for k, v in row.items() if v != ""} for row in csv.DictReader(f)]


def timescale_rows(rows: list[dict[str, float]]) -> dict[int, dict[str, float]]:
    out: dict[int, dict[str, float]] = {}
    for row in rows:
        keys = {k: v for k, v in row.items() if k.startswith("timescale/")}
        if keys:
            step = int(row["step"])
            assert step not in out, f"step {step} logged twice"
            out[step] = keys
    return out


def magnitudes(params: list[torch.Tensor]) -> tuple[float, float]:
    flat = torch.cat([p.detach().double().reshape(-1) for p in params])
    return flat.abs().mean().item(), flat.square().mean().sqrt().item()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"logging_interval": 0}, r"logging_interval=0\)` is not valid"),
        ({"logging_interval": 2.5}, r"logging_interval=2.5\)` is not valid"),
        ({"logging_interval": True}, r"logging_interval=True\)` is not valid"),
        ({"per_tensor": "yes"}, r"per_tensor='yes'\)` is not valid: use True or False"),
        ({"prefix": "a/"}, r"prefix='a/'\)` is not valid"),
        ({"sharded": 1}, r"sharded=1\)` is not valid"),
        ({"hparams_metric": ""}, r"hparams_metric=''\)` is not valid"),
        ({"chunk_numel": 0}, r"chunk_numel=0\)` is not valid"),
    ],
)
def test_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TimescaleMonitor(**kwargs)


@pytest.mark.slow
def test_csv_logs_closed_forms(tmp_path):
    model = TinyModel(two_groups)
    trainer = quiet_trainer(logger=CSVLogger(tmp_path, name="", version=""), callbacks=[TimescaleMonitor(4)])
    trainer.fit(model, make_loader(N, B))
    logged = timescale_rows(read_csv(tmp_path))
    assert sorted(logged) == [4, 8, 12]
    assert set(logged[12]) == {f"timescale/{k}/decay" for k in GROUP_KEYS} | {
        f"timescale/{k}/pg2" for k in NO_DECAY_KEYS
    }
    for step, row in logged.items():
        assert row["timescale/lr/decay"] == pytest.approx(LR)
        assert row["timescale/weight_decay/decay"] == pytest.approx(WD)
        assert row["timescale/tau_iter/decay"] == pytest.approx(1 / (LR * WD))
        assert row["timescale/tau_epoch/decay"] == pytest.approx(1 / (LR * WD) * B / N)
        assert row["timescale/rms_equilibrium/decay"] == pytest.approx(math.sqrt(LR / (2 * WD)))
        assert row["timescale/coherent_bound/decay"] == pytest.approx(1 / WD)
        assert row["timescale/init_memory/decay"] == pytest.approx((1 - LR * WD) ** step, rel=1e-6)
        assert row["timescale/timescales_elapsed/decay"] == pytest.approx(step * LR * WD)
        # constant lr and decay: update a steps old holds weight (1 - r)^a, so the window is their mean age
        weights = [(1 - LR * WD) ** a for a in range(step)]
        window = sum(a * w for a, w in enumerate(weights)) / sum(weights)
        assert row["timescale/window_epochs/decay"] == pytest.approx(window * B / N, rel=1e-9)
    # the last logging step comes after the last update: the logged magnitudes are the final weights'
    mean_abs, rms = magnitudes([model.hidden.weight, model.head.weight])
    last = logged[12]
    assert last["timescale/weight_mean_abs/decay"] == pytest.approx(mean_abs, rel=1e-6)
    assert last["timescale/weight_rms/decay"] == pytest.approx(rms, rel=1e-6)
    assert last["timescale/wd_mean_abs/decay"] == pytest.approx(WD * mean_abs, rel=1e-6)
    assert last["timescale/rms_ratio/decay"] == pytest.approx(rms / math.sqrt(LR / (2 * WD)), rel=1e-6)
    rest = [model.hidden.bias, model.norm.weight, model.norm.bias, model.head.bias]
    assert last["timescale/weight_rms/pg2"] == pytest.approx(magnitudes(rest)[1], rel=1e-6)


@pytest.mark.slow
def test_init_memory_follows_scheduled_lr(tmp_path):
    """The product uses the lr of each step as taken (before the scheduler moves it)."""

    def scheduled(module):
        opt = torch.optim.AdamW(module.parameters(), lr=LR, weight_decay=WD)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: 0.8**t)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    trainer = quiet_trainer(logger=CSVLogger(tmp_path, name="", version=""), callbacks=[TimescaleMonitor(6)])
    trainer.fit(TinyModel(scheduled), make_loader(N, B))
    logged = timescale_rows(read_csv(tmp_path))
    for step in (6, 12):
        lrs = [LR * 0.8**t for t in range(step)]
        assert logged[step]["timescale/init_memory/pg1"] == pytest.approx(
            math.prod(1 - lr * WD for lr in lrs), rel=1e-9
        )
        assert logged[step]["timescale/timescales_elapsed/pg1"] == pytest.approx(sum(lrs) * WD, rel=1e-9)
        # the lr the logged step used, not the one the scheduler has already moved to for the next step
        assert logged[step]["timescale/lr/pg1"] == pytest.approx(LR * 0.8 ** (step - 1))
        assert logged[step]["timescale/tau_iter/pg1"] == pytest.approx(1 / (LR * 0.8 ** (step - 1) * WD))


@pytest.mark.slow
def test_uses_timescale_callback_shape(tmp_path):
    callback = TimescaleCallback(tau_epoch=5.0, dataset_size=600, batch_size=20, verbose=False)
    trainer = quiet_trainer(logger=CSVLogger(tmp_path, name="", version=""), callbacks=[callback, TimescaleMonitor(12)])
    trainer.fit(TinyModel(), make_loader(N, B))
    row = timescale_rows(read_csv(tmp_path))[12]
    wd = 20 / (LR * 600 * 5.0)  # B / (lr N tau_epoch)
    assert row["timescale/weight_decay/pg1"] == pytest.approx(wd)
    assert row["timescale/tau_epoch/pg1"] == pytest.approx(5.0)  # from the callback's N and B, not the loader's
    assert row["timescale/init_memory/pg1"] == pytest.approx((1 - LR * wd) ** 12, rel=1e-9)


@pytest.mark.slow
def test_logs_each_step_once_with_accumulation(tmp_path):
    trainer = quiet_trainer(
        logger=CSVLogger(tmp_path, name="", version=""),
        callbacks=[TimescaleMonitor(2)],
        accumulate_grad_batches=3,
        max_epochs=2,
    )
    trainer.fit(TinyModel(), make_loader(N, B))  # 4 optimizer steps per epoch
    logged = timescale_rows(read_csv(tmp_path))
    assert sorted(logged) == [2, 4, 6, 8]
    assert logged[8]["timescale/init_memory/pg1"] == pytest.approx((1 - LR * WD) ** 8, rel=1e-9)
    # B counts accumulation: 10 x 1 device x 3
    assert logged[8]["timescale/tau_epoch/pg1"] == pytest.approx(1 / (LR * WD) * 30 / N)


@pytest.mark.slow
def test_default_interval_log_every_n_steps(tmp_path):
    trainer = quiet_trainer(
        logger=CSVLogger(tmp_path, name="", version=""), callbacks=[TimescaleMonitor()], log_every_n_steps=5
    )
    trainer.fit(TinyModel(), make_loader(N, B))
    assert sorted(timescale_rows(read_csv(tmp_path))) == [5, 10]


@pytest.mark.slow
def test_per_tensor_and_width_mult(tmp_path):
    def grouped(module):
        return torch.optim.AdamW(
            [
                {"params": [module.hidden.weight, module.head.weight], "name": "hidden", "width_mult": 4.0},
                {"params": [module.hidden.bias, module.head.bias, *module.norm.parameters()], "weight_decay": 0.0},
            ],
            lr=LR,
            weight_decay=WD,
        )

    model = TinyModel(grouped)
    trainer = quiet_trainer(
        logger=CSVLogger(tmp_path, name="", version=""), callbacks=[TimescaleMonitor(12, per_tensor=True)]
    )
    trainer.fit(model, make_loader(N, B))
    row = timescale_rows(read_csv(tmp_path))[12]
    assert row["timescale/width_mult/hidden"] == 4.0
    assert "timescale/width_mult/pg2" not in row
    for name in ("hidden.weight", "head.weight"):
        mean_abs, rms = magnitudes([model.get_parameter(name)])
        assert row[f"timescale/weight_mean_abs/hidden/{name}"] == pytest.approx(mean_abs, rel=1e-6)
        assert row[f"timescale/weight_rms/hidden/{name}"] == pytest.approx(rms, rel=1e-6)
    assert row["timescale/weight_rms/pg2/norm.weight"] == pytest.approx(magnitudes([model.norm.weight])[1], rel=1e-6)


class _Stream(IterableDataset):
    def __iter__(self):
        dataset = make_dataset(N)
        return iter(dataset[i] for i in range(N))


@pytest.mark.slow
def test_leaves_out_tau_epoch_without_dataset_size(tmp_path):
    trainer = quiet_trainer(logger=CSVLogger(tmp_path, name="", version=""), callbacks=[TimescaleMonitor(6)])
    trainer.fit(TinyModel(), DataLoader(_Stream(), batch_size=B))
    row = timescale_rows(read_csv(tmp_path))[12]
    assert "timescale/tau_epoch/pg1" not in row
    assert row["timescale/tau_iter/pg1"] == pytest.approx(1 / (LR * WD))


@pytest.mark.slow
def test_monitor_without_logger_raises_before_training_like_lightning_s_lr_monitor():
    model = TinyModel()
    before = [p.detach().clone() for p in model.parameters()]
    for callbacks in (
        [TimescaleMonitor(4)],
        [TimescaleCallback(tau_epoch=2.0, verbose=False, monitor=TimescaleMonitor())],
    ):
        with pytest.raises(
            MisconfigurationException, match=r"Cannot use `TimescaleMonitor` callback with `Trainer\(logger=False\)`"
        ):
            quiet_trainer(callbacks=callbacks).fit(model, make_loader(N, B))
    assert all(torch.equal(a, p) for a, p in zip(before, model.parameters()))
    # the callback's default monitor: nothing asked for, the run trains and says nothing about logging
    quiet_trainer(callbacks=[TimescaleCallback(tau_epoch=2.0, verbose=False)]).fit(model, make_loader(N, B))


@pytest.mark.slow
def test_keeps_state(tmp_path):
    monitor = TimescaleMonitor(4)
    trainer = quiet_trainer(logger=CSVLogger(tmp_path, name="", version=""), callbacks=[monitor])
    trainer.fit(TinyModel(), make_loader(N, B))
    state = monitor.state_dict()
    assert state["optimizer_steps"] == 12
    assert state["init_memory"]["pg1"] == pytest.approx((1 - LR * WD) ** 12, rel=1e-9)
    assert state["timescales_elapsed"]["pg1"] == pytest.approx(12 * LR * WD)


@pytest.mark.slow
def test_resume_continues_init_memory(tmp_path):
    first = quiet_trainer(
        default_root_dir=tmp_path,
        logger=CSVLogger(tmp_path, name="first", version=""),
        enable_checkpointing=True,
        callbacks=[TimescaleMonitor(4), ModelCheckpoint(dirpath=tmp_path / "ckpt", save_last=True)],
    )
    first.fit(TinyModel(), make_loader(N, B))
    csv_logger = CSVLogger(tmp_path, name="resumed", version="")
    second = quiet_trainer(logger=csv_logger, max_epochs=2, callbacks=[TimescaleMonitor(4)])
    second.fit(TinyModel(), make_loader(N, B), ckpt_path=str(tmp_path / "ckpt" / "last.ckpt"))
    logged = timescale_rows(read_csv(Path(csv_logger.log_dir)))
    assert sorted(logged) == [16, 20, 24]
    for step in (16, 20, 24):
        assert logged[step]["timescale/init_memory/pg1"] == pytest.approx((1 - LR * WD) ** step, rel=1e-9)
        assert logged[step]["timescale/timescales_elapsed/pg1"] == pytest.approx(step * LR * WD)
        # the window continues across the resume: the updates of the first fit are still counted, and older
        assert logged[step]["timescale/window_epochs/pg1"] == pytest.approx(
            window_direct([LR] * step, [LR * WD] * step) * B / N, rel=1e-9
        )


@pytest.mark.slow
def test_load_state_dict_tolerates_missing_keys(tmp_path):
    monitor = TimescaleMonitor()
    monitor.load_state_dict({})
    trainer = quiet_trainer(logger=CSVLogger(tmp_path, name="", version=""), callbacks=[monitor], max_steps=1)
    trainer.fit(TinyModel(), make_loader(N, B))
    assert monitor.state_dict()["init_memory"]["pg1"] == pytest.approx(1 - LR * WD)


@pytest.mark.parametrize("monitor_first", [True, False])
@pytest.mark.slow
def test_logs_lr_and_weight_decay_step_used(tmp_path, monitor_first):
    """Under a per-step warm-up, in per_step mode, every logged tau_iter is the callback's target exactly.

    Step-interval schedulers step before `on_train_batch_end`, and the callback rewrites the weight decay in
    `on_before_optimizer_step`: whichever order the callbacks run in, the logged pair must be the one the step used.
    """

    def warmup(module: TinyModel):
        opt = torch.optim.AdamW(module.parameters(), lr=LR, weight_decay=WD)
        sched = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=12)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    cb, monitor = TimescaleCallback(tau_epoch=2.0, mode="per_step"), TimescaleMonitor(2)
    callbacks = [monitor, cb] if monitor_first else [cb, monitor]
    trainer = quiet_trainer(logger=CSVLogger(tmp_path, name="", version=""), callbacks=callbacks, max_epochs=1)
    trainer.fit(TinyModel(warmup), make_loader(N, B))
    logged = timescale_rows(read_csv(tmp_path))
    assert sorted(logged) == [2, 4, 6, 8, 10, 12]
    for step, row in logged.items():
        used_lr = LR * (0.1 + 0.9 * (step - 1) / 12)  # the lr of optimizer step `step` (1-based)
        assert row["timescale/lr/pg1"] == pytest.approx(used_lr)
        assert row["timescale/tau_iter/pg1"] == pytest.approx(2.0 * 12)  # tau_epoch x M, the target


@pytest.mark.slow
def test_window_matches_direct_sum_over_500_step_run(tmp_path):
    """The logged window (an O(1) recursion per step) against the direct sum over every update, under warm-up and
    cosine decay of the lr, at every logging step of a 500-step run."""
    steps = 500

    def warmup_cosine(module: TinyModel):
        opt = torch.optim.AdamW(module.parameters(), lr=LR, weight_decay=2.0)
        shape = lambda t: (t + 1) / 50 if t < 50 else 0.5 * (1 + math.cos(math.pi * (t - 50) / (steps - 50)))  # noqa: E731
        sched = torch.optim.lr_scheduler.LambdaLR(opt, shape)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    used: list[float] = []
    model = TinyModel(warmup_cosine)
    trainer = quiet_trainer(
        logger=CSVLogger(tmp_path, name="", version=""),
        callbacks=[TimescaleMonitor(100)],
        max_steps=steps,
        max_epochs=-1,
    )

    class Record(pl.Callback):
        def on_train_start(self, trainer, pl_module):
            opt = trainer.optimizers[0]
            opt.register_step_post_hook(lambda o, a, k: used.append(o.param_groups[0]["lr"]))

    trainer.callbacks.append(Record())
    trainer.fit(model, make_loader(N, B))
    assert len(used) == steps
    logged = timescale_rows(read_csv(tmp_path))
    assert sorted(logged) == [100, 200, 300, 400, 500]
    for step, row in logged.items():
        lrs = used[:step]
        direct = window_direct(lrs, [lr * 2.0 for lr in lrs])
        assert row["timescale/window_epochs/pg1"] == pytest.approx(direct * B / N, rel=1e-9)


@pytest.mark.slow
def test_tracks_group_added_mid_fit_once_and_keeps_others_series(tmp_path):
    # BaseFinetuning adds the head as a group at epoch 1 (step 12): each group is tracked once, and pg1's init memory
    # goes on from step 0 (a second, fresh state of pg1 would log (1 - r)^(step - 12) over it)
    monitor = TimescaleMonitor(4)
    trainer = quiet_trainer(
        logger=CSVLogger(tmp_path, name="", version=""), callbacks=[Unfreeze(), monitor], max_epochs=3
    )
    trainer.fit(TinyModel(frozen_aware_adamw), make_loader(N, B))
    assert [(g.name, g.group_index) for g in monitor.groups] == [("pg1", 0), ("head", 1)]
    logged = timescale_rows(read_csv(tmp_path))
    assert sorted(logged) == [4 * k for k in range(1, 10)]
    for step, row in logged.items():
        assert row["timescale/init_memory/pg1"] == pytest.approx((1 - LR * WD) ** step, rel=1e-6)
        if step > 12:  # the head: lr 0.005 and the optimizer's default decay 0.1, from step 13 on
            assert row["timescale/init_memory/head"] == pytest.approx((1 - 0.005 * WD) ** (step - 12), rel=1e-6)
        else:
            assert "timescale/init_memory/head" not in row
