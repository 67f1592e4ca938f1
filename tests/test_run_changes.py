"""`tau_epoch` holds through what a real Lightning run changes under the callback (issue: run shape).

Every test reads the weight decay each optimizer step really used, from a torch step post-hook, and compares it
with the closed form ``1 / (lr_ref * tau_epoch * M_epoch)``, with ``M_epoch`` the optimizer steps the fit loop
runs in that epoch. Target ``tau_epoch=5``, lr 0.01, 100 samples, batch 10, as in the issue's table.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import lightning.pytorch as pl
import pytest
import torch
from tiny_model import TinyModel, make_loader, quiet_trainer
from runs import LR, TAU, PerOptimizer, TwoPlayers, Unfreeze, closed_form, frozen_aware_adamw
from lightning.pytorch.callbacks import BatchSizeFinder, GradientAccumulationScheduler
from lightning.pytorch.tuner import Tuner
from lightning.pytorch.utilities import CombinedLoader
from torch.utils.data import DataLoader

from lightning_tau import TimescaleCallback


class StepLog(pl.Callback):
    """Per optimizer step: (epoch, [(lr, weight_decay) per group]) as the step used them (a step post-hook)."""

    def __init__(self) -> None:
        self.steps: list[tuple[int, list[tuple[float, float]]]] = []
        self._handles: list[Any] = []
        self._trainer: pl.Trainer | None = None

    def on_train_start(self, trainer: pl.Trainer, pl_module: Any) -> None:
        self._trainer = trainer
        for opt in trainer.optimizers:
            self._handles.append(opt.register_step_post_hook(self._post))

    def _post(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        assert self._trainer is not None
        groups = [(float(g["lr"]), float(g["weight_decay"])) for g in optimizer.param_groups]
        self.steps.append((self._trainer.current_epoch, groups))

    def on_train_end(self, trainer: pl.Trainer, pl_module: Any) -> None:
        for h in self._handles:
            h.remove()

    def weight_decays(self, group: int = 0) -> list[float]:
        return [groups[group][1] for _, groups in self.steps]

    def epochs(self) -> list[int]:
        return [epoch for epoch, _ in self.steps]


def adamw(m: torch.nn.Module, lr: float = LR, wd: float = 0.1) -> torch.optim.Optimizer:
    return torch.optim.AdamW(m.parameters(), lr=lr, weight_decay=wd)


def cosine(m: TinyModel, total: int) -> dict[str, Any]:
    opt = adamw(m)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total, eta_min=LR * 0.1)
    return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def expect_every_step(log: StepLog, m_of_epoch: dict[int, float], mode: str) -> None:
    """Each step's weight decay is the closed form for its epoch's M (per_step: at that step's lr)."""
    assert log.steps, "no optimizer step was recorded"
    for epoch, groups in log.steps:
        lr, wd = groups[0]
        ref = lr if mode == "per_step" else LR
        assert wd == pytest.approx(closed_form(m_of_epoch[epoch], lr=ref)), (epoch, lr, wd)


@pytest.mark.parametrize("mode", ["constant", "per_step"])
@pytest.mark.parametrize("scheduler_first", [True, False])
@pytest.mark.slow
def test_gradient_accumulation_scheduler(mode: str, scheduler_first: bool) -> None:
    # 10 batches per epoch; accumulation 4 from epoch 2 gives ceil(10 / 4) = 3 optimizer steps per epoch
    log, cb = StepLog(), TimescaleCallback(tau_epoch=TAU, mode=mode, verbose=False)
    gas = GradientAccumulationScheduler({0: 1, 2: 4})
    callbacks = [gas, cb, log] if scheduler_first else [cb, gas, log]
    make = (lambda m: cosine(m, total=26)) if mode == "per_step" else adamw
    quiet_trainer(callbacks=callbacks, max_epochs=4).fit(TinyModel(make), make_loader(n=100, batch_size=10))
    assert log.epochs() == [0] * 10 + [1] * 10 + [2] * 3 + [3] * 3
    expect_every_step(log, {0: 10, 1: 10, 2: 3, 3: 3}, mode)
    if mode == "constant":
        assert log.weight_decays()[-1] == pytest.approx(6.6667, rel=1e-4)
    assert cb.resolved_steps_per_epoch == 3 and cb.resolved_tau_iter == pytest.approx(15.0)


@pytest.mark.parametrize("scheduler_first", [True, False])
@pytest.mark.slow
def test_accumulation_scheduled_from_epoch_zero(scheduler_first: bool) -> None:
    # The scheduler sets accumulation 2 in epoch 0's on_train_epoch_start, after the train-start decision (taken at
    # the Trainer's 1): epoch 0 runs ceil(10 / 2) = 5 steps, not 10, so its first step must re-decide too.
    log, cb = StepLog(), TimescaleCallback(tau_epoch=TAU, verbose=False)
    gas = GradientAccumulationScheduler({0: 2, 1: 4})
    callbacks = [gas, cb, log] if scheduler_first else [cb, gas, log]
    quiet_trainer(callbacks=callbacks, max_epochs=2).fit(TinyModel(adamw), make_loader(n=100, batch_size=10))
    assert log.epochs() == [0] * 5 + [1] * 3
    expect_every_step(log, {0: 5, 1: 3}, "constant")
    assert cb.resolved_batch_size == 40 and cb.resolved_steps_per_epoch == 3


class GrowingData(TinyModel):
    """A train set of 100, 200, 400 samples in epochs 0, 1, 2 (reloaded every epoch)."""

    def train_dataloader(self) -> DataLoader:
        return make_loader(n=100 * 2**self.trainer.current_epoch, batch_size=10)


@pytest.mark.parametrize("mode", ["constant", "per_step"])
@pytest.mark.slow
def test_reloaded_dataloaders_with_growing_dataset(mode: str, caplog: pytest.LogCaptureFixture) -> None:
    log = StepLog()
    cb = TimescaleCallback(tau_epoch=TAU, mode=mode, verbose=False)
    make = (lambda m: cosine(m, total=70)) if mode == "per_step" else adamw
    trainer = quiet_trainer(callbacks=[cb, log], max_epochs=3, reload_dataloaders_every_n_epochs=1)
    with caplog.at_level("INFO"):
        trainer.fit(GrowingData(make))
    assert log.epochs() == [0] * 10 + [1] * 20 + [2] * 40
    expect_every_step(log, {0: 10, 1: 20, 2: 40}, mode)
    if mode == "constant":
        assert sorted(set(round(w, 6) for w in log.weight_decays())) == [0.5, 1.0, 2.0]
    # said once per change, with old -> new
    assert caplog.text.count("`TimescaleCallback` at epoch 1") == 1
    assert "steps per epoch 10 -> 20" in caplog.text and "dataset size 100 -> 200" in caplog.text
    assert caplog.text.count("`TimescaleCallback` at epoch 2") == 1


@pytest.mark.parametrize("mode", ["constant", "per_step"])
@pytest.mark.slow
def test_size_exponent_re_decided_at_each_reloaded_n(mode: str, caplog: pytest.LogCaptureFixture) -> None:
    # tau_epoch 8 measured at N_ref = 25, carried by N^-0.5 to N = 100, 200, 400 (M = 10, 20, 40): 4, 2.83, 2
    exponent, reference = -0.5, 25
    log = StepLog()
    cb = TimescaleCallback(tau_epoch=8.0, size_exponent=exponent, reference_dataset_size=reference, mode=mode)
    make = (lambda m: cosine(m, total=70)) if mode == "per_step" else adamw
    trainer = quiet_trainer(callbacks=[cb, log], max_epochs=3, reload_dataloaders_every_n_epochs=1)
    with caplog.at_level("INFO"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the 1-D parameters and the short run: not what this test is about
        trainer.fit(GrowingData(make))
    assert log.epochs() == [0] * 10 + [1] * 20 + [2] * 40
    for epoch, groups in log.steps:  # wd = 1 / (lr * M * tau_epoch * (N / N_ref) ** e), at every step
        n, m = 100 * 2**epoch, 10 * 2**epoch
        lr, wd = groups[0]
        ref = lr if mode == "per_step" else LR
        assert wd == pytest.approx(1 / (ref * m * 8.0 * (n / reference) ** exponent), rel=1e-9), (epoch, wd)
    assert cb.held_tau_epoch == pytest.approx(2.0) and cb.resolved_tau_iter == pytest.approx(80.0)
    # the pre-flight table and each change say the tau_epoch held, and how it came
    assert "TimescaleCallback: tau_epoch=4 (tau_iter=40 steps)" in caplog.text
    assert "Held at this N: tau_epoch 8 x (100/25)^-0.5 = 4 (size_exponent=-0.5" in caplog.text
    assert "(tau_epoch 8 x (200/25)^-0.5 = 2.828 held)." in caplog.text
    assert "(tau_epoch 8 x (400/25)^-0.5 = 2 held)." in caplog.text


@pytest.mark.parametrize("mode", ["constant", "per_step"])
@pytest.mark.slow
def test_param_group_added_mid_fit_managed_with_own_lr(mode: str, caplog: pytest.LogCaptureFixture) -> None:
    log = StepLog()
    cb = TimescaleCallback(tau_epoch=TAU, mode=mode, verbose=False)
    trainer = quiet_trainer(callbacks=[Unfreeze(), cb, log], max_epochs=3)
    with caplog.at_level("INFO"):
        trainer.fit(TinyModel(frozen_aware_adamw), make_loader(n=100, batch_size=10))
    assert [len(groups) for _, groups in log.steps] == [1] * 10 + [2] * 20
    for epoch, groups in log.steps:
        assert groups[0][1] == pytest.approx(closed_form(10))
        if epoch >= 1:
            assert groups[1] == (0.005, pytest.approx(closed_form(10, lr=0.005)))  # 4.0, from its very first step
    assert "new param group 'head' (managed at lr 0.005): weight decay 0.1 -> 4" in caplog.text
    assert [g.name for g in cb.groups] == ["pg1", "head"] and cb.groups[1].managed


@pytest.mark.slow
def test_param_group_added_at_zero_decay_stays_zero() -> None:
    log = StepLog()
    quiet_trainer(
        callbacks=[Unfreeze(weight_decay=0.0), TimescaleCallback(tau_epoch=TAU, verbose=False), log], max_epochs=2
    ).fit(TinyModel(frozen_aware_adamw), make_loader(n=100, batch_size=10))
    added = [groups[1] for epoch, groups in log.steps if epoch == 1]
    assert len(added) == 10 and all(wd == 0.0 for _, wd in added)


@pytest.mark.parametrize(("mode", "steps"), [("max_size_cycle", 10), ("max_size", 10), ("min_size", 2)])
@pytest.mark.slow
def test_two_train_loaders_follow_combined_loader_mode(mode: str, steps: int) -> None:
    class TwoLoaders(TinyModel):
        def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
            # in `max_size` mode the shorter loader yields None once it is exhausted
            return sum(torch.nn.functional.cross_entropy(self(v[0]), v[1]) for v in batch.values() if v is not None)

    log, cb = StepLog(), TimescaleCallback(tau_epoch=TAU, verbose=False)
    loaders = CombinedLoader({"a": make_loader(n=100, batch_size=10), "b": make_loader(n=20, batch_size=10)}, mode)
    quiet_trainer(callbacks=[cb, log], max_epochs=2).fit(TwoLoaders(adamw), loaders)
    assert len(log.steps) == 2 * steps
    assert log.weight_decays() == pytest.approx([closed_form(steps)] * (2 * steps))  # 2.0 or 10.0
    assert (cb.resolved_dataset_size, cb.resolved_batch_size) == (120, 20)  # N and B still reported


@pytest.mark.slow
def test_impossible_timescale_error_before_any_weight_moves() -> None:
    model = TinyModel(adamw)
    before = [p.detach().clone() for p in model.parameters()]
    trainer = quiet_trainer(callbacks=[TimescaleCallback(tau_epoch=1e-12)], max_epochs=1)
    with pytest.raises(ValueError, match=r"tau_epoch=1e-12.*Use `tau_epoch` above 0.1 \(one optimizer step\)"):
        trainer.fit(model, make_loader(n=100, batch_size=10))
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


@pytest.mark.slow
def test_timescale_becomes_impossible_mid_fit_stops_before_step() -> None:
    # tau_epoch=0.5 is 5 steps at M=10, but 0.5 steps once accumulation 10 makes M=1: stop before that step
    log = StepLog()
    trainer = quiet_trainer(
        callbacks=[GradientAccumulationScheduler({1: 10}), TimescaleCallback(tau_epoch=0.5, verbose=False), log],
        max_epochs=2,
    )
    with pytest.raises(ValueError, match=r"at epoch 1 .*`tau_epoch=0.5` is 0.5 optimizer steps at M=1"):
        trainer.fit(TinyModel(adamw), make_loader(n=100, batch_size=10))
    assert log.epochs() == [0] * 10  # no step of epoch 1 ran


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"tau_epoch": 5.0, "batch_size": 2.5}, r"TimescaleCallback\(batch_size=2.5\)` is not valid.*whole number"),
        ({"tau_epoch": 5.0, "dataset_size": 10.5}, r"TimescaleCallback\(dataset_size=10.5\)`.*whole number"),
        ({"tau_epoch": 5.0, "dataset_size": 0}, r"TimescaleCallback\(dataset_size=0\)`.*whole number"),
        ({"token_budget": 1e6, "num_params": 2.5}, r"TimescaleCallback\(num_params=2.5\)`.*whole number"),
        ({"tau_iter": 1.0}, r"TimescaleCallback\(tau_iter=1.0\)` is not valid.*`tau_iter > 1`"),
    ],
)
def test_sizes_must_be_positive_whole_numbers(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        TimescaleCallback(**kwargs)


def test_whole_number_floats_accepted_as_sizes() -> None:
    cb = TimescaleCallback(tau_epoch=5.0, dataset_size=1e6, batch_size=100.0)  # e.g. YAML's 1e6
    assert (cb.dataset_size, cb.batch_size) == (1_000_000, 100)


@pytest.mark.slow
def test_token_budget_on_model_without_trainable_parameters_clear_error() -> None:
    model = TinyModel(lambda m: torch.optim.AdamW(m.parameters(), lr=LR, weight_decay=0.1))
    model.requires_grad_(False)
    trainer = quiet_trainer(callbacks=[TimescaleCallback(token_budget=1e6)], max_steps=5)
    with pytest.raises(ValueError, match=r"token_budget=1000000.0\)` divides .* has none.*`num_params=...`"):
        trainer.fit(model, make_loader(n=100, batch_size=10))


class TunableModel(TinyModel):
    """Reads `lr` and `batch_size` attributes, as Lightning's tuners expect."""

    def __init__(self) -> None:
        super().__init__()
        self.lr, self.batch_size = LR, 4

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=self.lr, weight_decay=0.1)

    def train_dataloader(self) -> DataLoader:
        return make_loader(n=100, batch_size=self.batch_size)


@pytest.mark.slow
def test_batch_size_finder_then_real_fit() -> None:
    log, cb = StepLog(), TimescaleCallback(tau_epoch=TAU, verbose=False)
    finder = BatchSizeFinder(mode="power", steps_per_trial=1, init_val=4, max_trials=2)
    model = TunableModel()
    quiet_trainer(callbacks=[cb, finder, log], max_epochs=2).fit(model)
    assert model.batch_size != 4  # the finder really changed it
    steps = math.ceil(100 / model.batch_size)
    assert cb.resolved_steps_per_epoch == steps and len(log.steps) == 2 * steps
    assert log.weight_decays() == pytest.approx([closed_form(steps)] * (2 * steps))


@pytest.mark.slow
def test_lr_find_then_real_fit() -> None:
    log, cb = StepLog(), TimescaleCallback(tau_epoch=TAU, verbose=False)
    model = TunableModel()
    model.batch_size = 10
    trainer = quiet_trainer(callbacks=[cb, log], max_epochs=2)
    result = Tuner(trainer).lr_find(model, min_lr=1e-4, max_lr=1e-1, num_training=20)
    assert result is not None and math.isfinite(result.suggestion()) and model.lr == result.suggestion()
    assert not log.steps  # the callbacks sat out the finder's trial steps
    trainer.fit(model)
    assert len(log.steps) == 20
    assert log.weight_decays() == pytest.approx([closed_form(10, lr=model.lr)] * 20)


class HalveLrAtEpoch1(pl.Callback):
    """The user changes the base lr by hand between epochs (no scheduler): the reference lr itself moved."""

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: Any) -> None:
        if trainer.current_epoch == 1:
            for group in trainer.optimizers[0].param_groups:
                group["lr"] = LR / 2


@pytest.mark.slow
def test_changed_reference_lr_re_decided(caplog: pytest.LogCaptureFixture) -> None:
    log = StepLog()
    trainer = quiet_trainer(callbacks=[TimescaleCallback(tau_epoch=TAU), HalveLrAtEpoch1(), log], max_epochs=2)
    with caplog.at_level("INFO"):
        trainer.fit(TinyModel(adamw), make_loader(n=100, batch_size=10))
    assert log.weight_decays() == pytest.approx([closed_form(10)] * 10 + [closed_form(10, lr=LR / 2)] * 10)
    assert "pg1 reference lr 0.01 -> 0.005; pg1 weight decay 2 -> 4" in caplog.text


@pytest.mark.slow
def test_reduce_lr_on_plateau_not_undone() -> None:
    # ReduceLROnPlateau moves `lr` with no `initial_lr`: the reference stays the lr the group started at
    def make(m: TinyModel) -> dict[str, Any]:
        opt = adamw(m)
        sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=0, threshold=1e9)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "monitor": "train_loss", "interval": "epoch"}}

    log = StepLog()
    quiet_trainer(callbacks=[TimescaleCallback(tau_epoch=TAU, verbose=False), log], max_epochs=3).fit(
        TinyModel(make), make_loader(n=100, batch_size=10)
    )
    lrs = [groups[0][0] for _, groups in log.steps]
    assert lrs[-1] < lrs[0]  # the plateau scheduler really lowered the lr
    assert log.weight_decays() == pytest.approx([closed_form(10)] * 30)  # held at the starting lr, as the paper does


@pytest.mark.slow
def test_second_fit_of_same_callback_decides_afresh() -> None:
    # what one fit holds is replaced at the next fit start: the first fit's plateau-pinned lr does not carry over
    def make(lr: float) -> Any:
        def build(m: TinyModel) -> dict[str, Any]:
            opt = torch.optim.AdamW(m.parameters(), lr=lr, weight_decay=0.1)
            sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=0, threshold=1e9)
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "monitor": "train_loss"}}

        return build

    callback = TimescaleCallback(tau_epoch=TAU, verbose=False)
    for lr in (LR, 4 * LR):
        log = StepLog()
        quiet_trainer(callbacks=[callback, log], max_epochs=1).fit(
            TinyModel(make(lr)), make_loader(n=100, batch_size=10)
        )
        assert log.weight_decays() == pytest.approx([closed_form(10, lr=lr)] * 10)


@pytest.mark.slow
def test_manual_optimization_with_declared_steps_per_epoch_holds_each_optimizers_tau_from_first_step() -> None:
    log = PerOptimizer()
    cb = TimescaleCallback(tau_epoch=TAU, steps_per_epoch={1: 5}, verbose=False)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*took .* steps in epoch")  # the count agrees: nothing to say
        quiet_trainer(callbacks=[cb, log], max_epochs=3).fit(TwoPlayers(), make_loader(n=100, batch_size=10))
    assert [e for e, _ in log.of(0)] == [0] * 10 + [1] * 10 + [2] * 10
    assert [e for e, _ in log.of(1)] == [0] * 5 + [1] * 5 + [2] * 5
    assert [wd for _, wd in log.of(0)] == pytest.approx([closed_form(10)] * 30)  # 2.0: tau_iter 50 of 10 per epoch
    assert [wd for _, wd in log.of(1)] == pytest.approx([closed_form(5)] * 15)  # 4.0: tau_iter 25 of 5 per epoch
    assert [g.tau_iter for g in cb.groups] == pytest.approx([50.0, 25.0])


@pytest.mark.slow
def test_manual_optimization_counts_optimizer_stepped_every_second_batch(caplog: pytest.LogCaptureFixture) -> None:
    log = PerOptimizer()
    cb = TimescaleCallback(tau_epoch=TAU)
    with caplog.at_level("INFO"), pytest.warns(UserWarning) as caught:
        quiet_trainer(callbacks=[cb, log], max_epochs=3).fit(TwoPlayers(), make_loader(n=100, batch_size=10))
    # epoch 0 assumes one step per batch (said before training); the count corrects the generator from epoch 1
    assert "assumed to step once per batch (M=10) until an epoch's steps are counted" in caplog.text
    (said,) = [str(w.message) for w in caught if "took" in str(w.message)]
    assert "optimizer 1 took 5 steps in epoch 0 (10 batches), but its weight decay assumed M=10" in said
    assert "tau_epoch there was 2 times the target" in said and "`TimescaleCallback(steps_per_epoch={1: 5})`" in said
    assert [wd for _, wd in log.of(0)] == pytest.approx([closed_form(10)] * 30)
    assert log.of(1) == [(0, pytest.approx(closed_form(10)))] * 5 + [
        (e, pytest.approx(closed_form(5))) for e in (1, 1, 1, 1, 1, 2, 2, 2, 2, 2)
    ]
    assert "optimizer1/pg1 weight decay 2 -> 4" in caplog.text


class Samples(torch.utils.data.IterableDataset):
    """100 samples with no length: the Trainer cannot count the epoch ahead."""

    def __iter__(self):
        x, y = make_loader(n=100, batch_size=100).dataset.tensors
        yield from zip(x, y)


@pytest.mark.slow
def test_iterable_dataset_with_dataset_size_counts_incomplete_accumulation_window() -> None:
    # 100 samples, batch 10, accumulation 4: 10 batches are 3 optimizer steps (the last window has 2 batches)
    log, cb = StepLog(), TimescaleCallback(tau_epoch=TAU, dataset_size=100, verbose=False)
    quiet_trainer(callbacks=[cb, log], max_epochs=2, accumulate_grad_batches=4).fit(
        TinyModel(adamw), DataLoader(Samples(), batch_size=10)
    )
    assert log.epochs() == [0] * 3 + [1] * 3  # the Trainer's own epoch
    assert cb.resolved_steps_per_epoch == 3 and cb.resolved_batch_size == 40
    assert log.weight_decays() == pytest.approx([closed_form(3)] * 6)  # not closed_form(2.5)


@pytest.mark.parametrize("exponent", [1.0, -0.5])
@pytest.mark.slow
def test_batch_exponent_follows_each_accumulated_b_at_every_step(
    exponent: float, caplog: pytest.LogCaptureFixture
) -> None:
    # 100 samples in batches of 10, accumulation 1, 2, 4 in epochs 0, 1, 2: B = 10, 20, 40 and M = 10, 5, 3.
    # tau_epoch 8 measured at B_ref = 20 is held as 8 x (B / 20) ** e, so wd = 1 / (lr M 8 (B / 20) ** e).
    log = StepLog()
    cb = TimescaleCallback(tau_epoch=8.0, batch_exponent=exponent, reference_batch_size=20)
    gas = GradientAccumulationScheduler({0: 1, 1: 2, 2: 4})
    trainer = quiet_trainer(callbacks=[gas, cb, log], max_epochs=3)
    with caplog.at_level("INFO"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the 1-D parameters and the short run: not what this test is about
        trainer.fit(TinyModel(adamw), make_loader(n=100, batch_size=10))
    assert log.epochs() == [0] * 10 + [1] * 5 + [2] * 3
    for epoch, groups in log.steps:
        b, m = 10 * 2**epoch, {0: 10, 1: 5, 2: 3}[epoch]
        held = 8.0 * (b / 20) ** exponent
        assert groups[0][1] == pytest.approx(1 / (LR * m * held), rel=1e-9), (epoch, groups[0][1])
    assert cb.held_tau_epoch == pytest.approx(8.0 * 2**exponent)
    shown = f"{exponent:g}"
    first = f"tau_epoch 8 x (10/20)^{shown} = {8.0 * 0.5**exponent:.4g}"
    assert f"Held at this B: {first} (batch_exponent={shown}: tau_epoch ∝ B^{shown} from" in caplog.text
    assert f"(tau_epoch 8 x (20/20)^{shown} = 8 held)." in caplog.text  # each change says the one held
    assert f"(tau_epoch 8 x (40/20)^{shown} = {8.0 * 2**exponent:.4g} held)." in caplog.text


@pytest.mark.slow
def test_batch_exponent_follows_batch_batch_size_finder_picks() -> None:
    log = StepLog()
    cb = TimescaleCallback(tau_epoch=TAU, batch_exponent=1.0, reference_batch_size=4, verbose=False)
    finder = BatchSizeFinder(mode="power", steps_per_trial=1, init_val=4, max_trials=2)
    model = TunableModel()
    quiet_trainer(callbacks=[cb, finder, log], max_epochs=2).fit(model)
    assert model.batch_size != 4  # the finder really changed it
    steps = math.ceil(100 / model.batch_size)
    held = TAU * model.batch_size / 4
    assert cb.held_tau_epoch == pytest.approx(held) and len(log.steps) == 2 * steps
    assert log.weight_decays() == pytest.approx([closed_form(steps, tau_epoch=held)] * (2 * steps))


@pytest.mark.slow
def test_batch_and_size_exponents_multiply() -> None:
    # tau_epoch 8 at N_ref = 25, B_ref = 5; the run: N = 100, B = 10. Held: 8 x 4^-0.5 x 2^1 = 8, at M = 10.
    log = StepLog()
    cb = TimescaleCallback(
        tau_epoch=8.0,
        size_exponent=-0.5,
        reference_dataset_size=25,
        batch_exponent=1.0,
        reference_batch_size=5,
        verbose=False,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quiet_trainer(callbacks=[cb, log], max_epochs=1).fit(TinyModel(adamw), make_loader(n=100, batch_size=10))
    assert cb.held_tau_epoch == pytest.approx(8.0)
    assert log.weight_decays() == pytest.approx([1 / (LR * 10 * 8.0)] * 10)
