"""``TimescaleCallback(beta2_epochs=...)`` holds Adam's ``β₂`` window in epochs as the batch changes.

``β₂`` averages squared gradients over ``1 / (1 - β₂)`` optimizer steps; at ``M`` steps per epoch the callback writes
``β₂ = 1 - 1 / (beta2_epochs · M)`` at each decision, so a batch change (reloaded dataloaders, ``BatchSizeFinder``)
moves ``β₂`` and keeps the window. Every value is read from a step post-hook: what the step used.
"""

from __future__ import annotations

import math
from typing import Any

import lightning.pytorch as pl
import pytest
import torch
from conftest import TinyModel, make_loader, quiet_trainer
from lightning.pytorch.callbacks import BatchSizeFinder
from torch.utils.data import DataLoader

from lightning_tau import TimescaleCallback

LR, N = 1e-2, 120
pytestmark = pytest.mark.filterwarnings("ignore:.*(1-D parameters|less than one EMA timescale)")


def adamw(m: torch.nn.Module) -> torch.optim.Optimizer:
    return torch.optim.AdamW(m.parameters(), lr=LR, weight_decay=0.1, betas=(0.9, 0.95))


class BetaLog(pl.Callback):
    """Per optimizer step, from a post-hook: ``(epoch, betas)`` of group 0."""

    def __init__(self) -> None:
        self.steps: list[tuple[int, tuple[float, float]]] = []
        self._handles: list[Any] = []

    def on_train_start(self, trainer: pl.Trainer, pl_module: Any) -> None:
        post = lambda o, a, k: self.steps.append((trainer.current_epoch, tuple(o.param_groups[0]["betas"])))  # noqa: E731
        self._handles = [opt.register_step_post_hook(post) for opt in trainer.optimizers]

    def on_train_end(self, trainer: pl.Trainer, pl_module: Any) -> None:
        for handle in self._handles:
            handle.remove()


class ChangingBatch(TinyModel):
    """Batches of 10, 20, 40 in epochs 0, 1, 2 (reloaded every epoch): M = 12, 6, 3."""

    def train_dataloader(self) -> DataLoader:
        return make_loader(n=N, batch_size=10 * 2**self.trainer.current_epoch)


def test_beta2_window_is_held_in_epochs_at_every_step_as_the_batch_changes() -> None:
    log, cb = BetaLog(), TimescaleCallback(tau_epoch=2.0, beta2_epochs=1.0, verbose=False, monitor=False)
    trainer = quiet_trainer(callbacks=[cb, log], max_epochs=3, reload_dataloaders_every_n_epochs=1)
    trainer.fit(ChangingBatch(adamw))
    assert [epoch for epoch, _ in log.steps] == [0] * 12 + [1] * 6 + [2] * 3
    for epoch, (beta1, beta2) in log.steps:
        m = 12 / 2**epoch
        assert beta1 == 0.9
        assert beta2 == pytest.approx(1 - 1 / (1.0 * m), rel=1e-12), (epoch, beta2)
        assert 1 / (1 - beta2) == pytest.approx(m)  # one epoch of steps, at every batch
    assert cb.beta2 == {(0, 0): pytest.approx(2 / 3)}


class TunableModel(TinyModel):
    def __init__(self) -> None:
        super().__init__()
        self.batch_size = 4

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return adamw(self)

    def train_dataloader(self) -> DataLoader:
        return make_loader(n=N, batch_size=self.batch_size)


def test_beta2_follows_the_batch_the_batch_size_finder_picks() -> None:
    log, cb = BetaLog(), TimescaleCallback(tau_epoch=2.0, beta2_epochs=0.5, verbose=False, monitor=False)
    finder = BatchSizeFinder(mode="power", steps_per_trial=1, init_val=4, max_trials=2)
    model = TunableModel()
    quiet_trainer(callbacks=[cb, finder, log], max_epochs=2).fit(model)
    assert model.batch_size != 4  # the finder really changed it
    m = math.ceil(N / model.batch_size)
    assert len(log.steps) == 2 * m
    assert [beta2 for _, (_, beta2) in log.steps] == [pytest.approx(1 - 1 / (0.5 * m), rel=1e-12)] * (2 * m)


def test_without_beta2_epochs_betas_are_left_alone() -> None:
    log, cb = BetaLog(), TimescaleCallback(tau_epoch=2.0, verbose=False, monitor=False)
    quiet_trainer(callbacks=[cb, log], max_epochs=1).fit(TinyModel(adamw), make_loader(n=N))
    assert {betas for _, betas in log.steps} == {(0.9, 0.95)} and cb.beta2 == {}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, r"^`TimescaleCallback\(beta2_epochs=0\)` is not valid: use a positive number of epochs, or None\.$"),
        ("x", r"^`TimescaleCallback\(beta2_epochs='x'\)` is not valid"),
        (math.inf, r"^`TimescaleCallback\(beta2_epochs=inf\)` is not valid"),
    ],
)
def test_bad_beta2_epochs_is_a_one_line_error(value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TimescaleCallback(tau_epoch=2.0, beta2_epochs=value)


def test_a_beta2_window_under_one_step_is_refused_before_any_step() -> None:
    model = TinyModel(adamw)
    before = [p.detach().clone() for p in model.parameters()]
    cb = TimescaleCallback(tau_epoch=2.0, beta2_epochs=0.05, verbose=False, monitor=False)  # 0.6 of M = 12 steps
    with pytest.raises(
        ValueError, match=r"^`TimescaleCallback\(beta2_epochs=0.05\)`: `beta_for_epochs\(epochs=0.05\)`"
    ):
        quiet_trainer(callbacks=[cb], max_epochs=1).fit(model, make_loader(n=N))
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_the_pre_flight_lists_the_held_beta2_window(caplog: pytest.LogCaptureFixture) -> None:
    cb = TimescaleCallback(tau_epoch=2.0, beta2_epochs=1.0, monitor=False)
    with caplog.at_level("INFO"):
        quiet_trainer(callbacks=[cb], max_epochs=1).fit(TinyModel(adamw), make_loader(n=N))
    rows = {line.split("|")[0].strip(): [c.strip() for c in line.split("|")[1:]] for line in caplog.text.splitlines()}
    # M = 12 steps of B = 10: beta2 = 1 - 1/12 averages over 12 steps, one epoch, 120 samples
    assert rows["Adam beta2 (pg1)"] == ["12", "1", "120", "betas[1]=0.916667 (beta2_epochs=1)"]
    assert rows["AdamW tau (pg1)"] == ["24", "2", "240", ""]
