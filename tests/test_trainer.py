"""``lightning_tau/_trainer.py`` (named as ``_checks.py`` -> ``test_checks.py``): the optimizer steps a run has left,
counted from where it is (after a resume, at a mid-fit decision), and the timescales planned over them.

Its shape readers (``M``, ``N``, ``B`` from the Trainer) are tested through the callback that calls them:
``tests/test_callback.py`` and ``tests/test_callback_resume.py``.
"""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl
import pytest
from tiny_model import TinyModel, make_loader, quiet_trainer
from runs import adamw
from lightning.pytorch.callbacks import ModelCheckpoint

from lightning_tau import TimescaleCallback
from lightning_tau._trainer import remaining_steps

M = 12  # 120 samples in batches of 10


class Remaining(pl.Callback):
    """``(epoch, global_step, remaining_steps)`` at the train start and at each epoch start."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int, int | None]] = []

    def _look(self, trainer: pl.Trainer) -> None:
        self.seen.append((trainer.current_epoch, trainer.global_step, remaining_steps(trainer, M)))

    def on_train_start(self, trainer: pl.Trainer, pl_module: Any) -> None:
        self._look(trainer)

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: Any) -> None:
        self._look(trainer)


@pytest.mark.slow
def test_remaining_steps_at_each_epoch_start_count_from_there() -> None:
    looks = Remaining()
    quiet_trainer(callbacks=[looks], max_epochs=3).fit(TinyModel(adamw()), make_loader(n=120, batch_size=10))
    assert looks.seen == [(0, 0, 36), (0, 0, 36), (1, 12, 24), (2, 24, 12)]  # not 3 x 12 at every look


@pytest.mark.slow
def test_remaining_steps_after_resume_and_under_max_steps(tmp_path) -> None:
    ckpt = ModelCheckpoint(dirpath=tmp_path, save_last=True)
    first = quiet_trainer(callbacks=[ckpt], enable_checkpointing=True, max_epochs=2)
    first.fit(TinyModel(adamw()), make_loader(n=120, batch_size=10))
    looks, cb = Remaining(), TimescaleCallback(tau_epoch=2.0)
    resumed = quiet_trainer(callbacks=[looks, cb], max_epochs=5)
    resumed.fit(TinyModel(adamw()), make_loader(n=120, batch_size=10), ckpt_path=str(tmp_path / "last.ckpt"))
    assert looks.seen[0] == (2, 24, 36)  # 3 epochs of 12 left, not the whole run's 60
    # the callback plans over those: 36 steps at the reference lr and a tau_iter of 2 x 12 steps
    assert cb.groups[0].planned_timescales == pytest.approx(36 / 24)
    capped = Remaining()
    quiet_trainer(callbacks=[capped], max_epochs=5, max_steps=30).fit(
        TinyModel(adamw()), make_loader(n=120, batch_size=10), ckpt_path=str(tmp_path / "last.ckpt")
    )
    assert capped.seen[0][1:] == (24, 6)  # max_steps 30, 24 taken: 6 left, nearer than max_epochs' count


def test_remaining_steps_of_endless_run_and_of_unknown_epoch_length() -> None:
    endless = quiet_trainer(max_epochs=-1, max_steps=-1)
    assert remaining_steps(endless, M) is None
    assert remaining_steps(quiet_trainer(max_epochs=2), None) is None  # no M: max_epochs gives no count
    assert remaining_steps(quiet_trainer(max_epochs=2, max_steps=7), None) == 7
