"""Resuming from a checkpoint: the callback's value, not the restored optimizer state, is in force."""

from __future__ import annotations

import warnings
from typing import Any

import lightning.pytorch as pl
import pytest
import torch
from tiny_model import TinyModel, make_loader, quiet_trainer
from runs import Recorder, adamw
from lightning.pytorch.callbacks import ModelCheckpoint

from lightning_tau import TimescaleCallback


def first_run(tmp_path) -> tuple[str, TimescaleCallback]:
    cb = TimescaleCallback(tau_epoch=2.0)
    ckpt = ModelCheckpoint(dirpath=tmp_path, save_last=True)
    trainer = quiet_trainer(callbacks=[cb, ckpt], enable_checkpointing=True, max_epochs=2)
    trainer.fit(TinyModel(adamw()), make_loader(n=120, batch_size=10))
    return str(tmp_path / "last.ckpt"), cb


@pytest.mark.slow
def test_state_saved_in_checkpoint(tmp_path) -> None:
    path, cb = first_run(tmp_path)
    state = torch.load(path, weights_only=False)["callbacks"][cb.state_key]
    assert state["dataset_size"] == 120
    assert state["global_batch_size"] == 10
    assert state["tau_iter"] == pytest.approx(24.0)
    assert state["weight_decay"] == {"pg1": pytest.approx(10 / (1e-2 * 120 * 2.0))}


@pytest.mark.slow
def test_keeps_decided_value(tmp_path) -> None:
    path, _ = first_run(tmp_path)
    recorder, cb = Recorder(), TimescaleCallback(tau_epoch=2.0)
    trainer = quiet_trainer(callbacks=[cb, recorder], max_epochs=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.fit(TinyModel(adamw(wd=0.1)), make_loader(n=120, batch_size=10), ckpt_path=path)
    assert not [w for w in caught if "shape changed" in str(w.message)]  # same shape: no change reported
    assert trainer.global_step == 36 and len(recorder.steps) == 12  # really resumed at step 24
    assert recorder.steps[0][0][1] == pytest.approx(10 / (1e-2 * 120 * 2.0))


@pytest.mark.slow
def test_resume_with_new_dataset_size_recomputes_and_warns(tmp_path) -> None:
    path, _ = first_run(tmp_path)
    recorder, cb = Recorder(), TimescaleCallback(tau_epoch=2.0)
    trainer = quiet_trainer(callbacks=[cb, recorder], max_epochs=3)
    with pytest.warns(UserWarning, match=r"dataset_size 120.0 -> 60.0, steps_per_epoch 12 -> 6, tau_iter 24.0 -> 12.0"):
        trainer.fit(TinyModel(adamw()), make_loader(n=60, batch_size=10), ckpt_path=path)
    # the restored optimizer state held 4.17; the first step after the resume must see the new closed form
    assert recorder.steps[0][0][1] == pytest.approx(10 / (1e-2 * 60 * 2.0))
    assert cb.groups[0].weight_decay_before == 0.1  # the user's own value, noted before the restore


@pytest.mark.slow
def test_per_step_resume_on_new_data_holds_new_tau_iter_from_first_step(tmp_path) -> None:
    def cosine(m: TinyModel):
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=60, eta_min=1e-3)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    ckpt = ModelCheckpoint(dirpath=tmp_path, save_last=True)
    first = TimescaleCallback(tau_epoch=2.0, mode="per_step", verbose=False)
    quiet_trainer(callbacks=[first, ckpt], enable_checkpointing=True, max_epochs=2).fit(
        TinyModel(cosine), make_loader(n=120, batch_size=10)
    )
    recorder, cb = Recorder(), TimescaleCallback(tau_epoch=2.0, mode="per_step", verbose=False)
    with pytest.warns(UserWarning, match=r"steps_per_epoch 12 -> 6, tau_iter 24.0 -> 12.0"):
        quiet_trainer(callbacks=[cb, recorder], max_epochs=4).fit(
            TinyModel(cosine), make_loader(n=60, batch_size=10), ckpt_path=str(tmp_path / "last.ckpt")
        )
    assert len(recorder.steps) == 12  # two more epochs of 6 steps, after the restored 24
    assert [lr * wd for lr, wd in (s[0] for s in recorder.steps)] == pytest.approx([1 / 12.0] * 12)


@pytest.mark.slow
def test_manual_optimization_resume_keeps_counted_steps_per_epoch(tmp_path) -> None:
    from runs import PerOptimizer, TwoPlayers, closed_form

    ckpt = ModelCheckpoint(dirpath=tmp_path, save_last=True)
    with pytest.warns(UserWarning, match="optimizer 1 took 5 steps in epoch 0"):  # counted in the first run
        quiet_trainer(callbacks=[TimescaleCallback(tau_epoch=5.0), ckpt], enable_checkpointing=True, max_epochs=1).fit(
            TwoPlayers(), make_loader(n=100, batch_size=10)
        )
    log = PerOptimizer()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*took .* steps in epoch")
        quiet_trainer(callbacks=[TimescaleCallback(tau_epoch=5.0, verbose=False), log], max_epochs=2).fit(
            TwoPlayers(), make_loader(n=100, batch_size=10), ckpt_path=str(tmp_path / "last.ckpt")
        )
    assert log.of(1) == [(1, pytest.approx(closed_form(5)))] * 5  # the generator's own M from the resumed first step


@pytest.mark.slow
def test_manual_optimization_resume_inside_first_epoch_counts_whole_epoch(tmp_path) -> None:
    # TwoPlayers: D steps every batch, G every second one, so global_step is 7 after batch 4 (D 5, G 2). The
    # resumed run takes the epoch's other 5 batches (D 5, G 3): with the checkpoint's partial count, epoch 0 is a
    # full epoch of G 5 steps, and G runs epoch 1 at its own M = 5 (without it, at the assumed M = 10).
    from runs import PerOptimizer, TwoPlayers, closed_form

    ckpt = ModelCheckpoint(dirpath=tmp_path, every_n_train_steps=7, save_top_k=-1, filename="{step}")
    with pytest.warns(UserWarning, match="optimizer 1 took 5 steps in epoch 0"):
        quiet_trainer(
            callbacks=[TimescaleCallback(tau_epoch=5.0, verbose=False), ckpt], enable_checkpointing=True, max_epochs=1
        ).fit(TwoPlayers(), make_loader(n=100, batch_size=10))
    path = tmp_path / "step=7.ckpt"
    log = PerOptimizer()
    with pytest.warns(UserWarning, match=r"optimizer 1 took 5 steps in epoch 0 \(10 batches\)"):
        trainer = quiet_trainer(callbacks=[TimescaleCallback(tau_epoch=5.0, verbose=False), log], max_epochs=2)
        trainer.fit(TwoPlayers(), make_loader(n=100, batch_size=10), ckpt_path=str(path))
    assert [e for e, _ in log.of(0)] == [0] * 5 + [1] * 10  # really resumed at batch 5
    assert [wd for _, wd in log.of(0)] == pytest.approx([closed_form(10)] * 15)
    assert log.of(1) == [(0, pytest.approx(closed_form(10)))] * 3 + [(1, pytest.approx(closed_form(5)))] * 5


@pytest.mark.slow
def test_manual_optimization_resume_at_later_step_keeps_count(tmp_path) -> None:
    # a checkpoint in the second epoch carries the first epoch's count, and the second epoch's partial one is
    # continued: the generator runs at its own M from the resumed step
    from runs import PerOptimizer, TwoPlayers, closed_form

    ckpt = ModelCheckpoint(dirpath=tmp_path, every_n_train_steps=22, save_top_k=-1, filename="{step}")
    with pytest.warns(UserWarning, match="optimizer 1 took 5 steps in epoch 0"):
        quiet_trainer(
            callbacks=[TimescaleCallback(tau_epoch=5.0, verbose=False), ckpt], enable_checkpointing=True, max_epochs=2
        ).fit(TwoPlayers(), make_loader(n=100, batch_size=10))
    log = PerOptimizer()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*took .* steps in epoch")  # the count agrees: nothing to say
        quiet_trainer(callbacks=[TimescaleCallback(tau_epoch=5.0, verbose=False), log], max_epochs=3).fit(
            TwoPlayers(), make_loader(n=100, batch_size=10), ckpt_path=str(tmp_path / "step=22.ckpt")
        )
    assert log.of(1) == [(1, pytest.approx(closed_form(5)))] * 3 + [(2, pytest.approx(closed_form(5)))] * 5


class UsedDecay(pl.Callback):
    """The weight decay each optimizer step used: a torch step post-hook, which runs after every pre-hook write."""

    def __init__(self) -> None:
        self.used: list[float] = []

    def on_train_start(self, trainer: pl.Trainer, pl_module: Any) -> None:
        self._handle = trainer.optimizers[0].register_step_post_hook(
            lambda opt, args, kwargs: self.used.append(float(opt.param_groups[0]["weight_decay"]))
        )

    def on_train_end(self, trainer: pl.Trainer, pl_module: Any) -> None:
        self._handle.remove()


@pytest.mark.slow
def test_resume_with_size_exponent_holds_tau_epoch_at_new_n(tmp_path) -> None:
    # tau_epoch 8 measured at N_ref = 30 and carried by N^-0.5: 4 at the first run's N = 120 (M = 12), then
    # 2 at the resumed run's N = 480 (M = 48), from the first resumed step on
    rule = dict(tau_epoch=8.0, size_exponent=-0.5, reference_dataset_size=30, verbose=False)
    first, used = TimescaleCallback(**rule), UsedDecay()
    ckpt = ModelCheckpoint(dirpath=tmp_path, save_last=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quiet_trainer(callbacks=[first, ckpt, used], enable_checkpointing=True, max_epochs=2).fit(
            TinyModel(adamw()), make_loader(n=120, batch_size=10)
        )
    assert used.used == pytest.approx([1 / (1e-2 * 12 * 8.0 * (120 / 30) ** -0.5)] * 24, rel=1e-9)
    assert first.held_tau_epoch == pytest.approx(4.0)

    cb, used = TimescaleCallback(**rule), UsedDecay()
    with pytest.warns(UserWarning, match=r"dataset_size 120.0 -> 480.0, steps_per_epoch 12 -> 48, tau_iter 48.0 -> 96"):
        quiet_trainer(callbacks=[cb, used], max_epochs=3).fit(
            TinyModel(adamw()), make_loader(n=480, batch_size=10), ckpt_path=str(tmp_path / "last.ckpt")
        )
    assert used.used == pytest.approx([1 / (1e-2 * 48 * 8.0 * (480 / 30) ** -0.5)] * 48, rel=1e-9)
    assert cb.held_tau_epoch == pytest.approx(2.0)
