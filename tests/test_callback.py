"""TimescaleCallback on real single-process Lightning fits: the value written must be the closed form."""

from __future__ import annotations

import re
import warnings
from typing import Any

import lightning.pytorch as pl
import pytest
import torch
from tiny_model import TinyModel, make_dataset, make_loader, quiet_trainer
from runs import Recorder, adamw
from torch.utils.data import BatchSampler, DataLoader, IterableDataset, RandomSampler

from lightning_tau import TimescaleCallback, build_param_groups


def fit(make_optimizer=None, loader=None, datamodule=None, callback=None, **trainer_kwargs) -> tuple[Recorder, Any]:
    recorder = Recorder()
    callback = callback or TimescaleCallback(tau_epoch=2.0)
    trainer = quiet_trainer(callbacks=[callback, recorder], **trainer_kwargs)
    model = TinyModel(make_optimizer)
    if datamodule is not None:
        trainer.fit(model, datamodule=datamodule)
    else:
        trainer.fit(model, loader if loader is not None else make_loader())
    return recorder, callback


@pytest.mark.slow
def test_one_process_writes_closed_form() -> None:
    recorder, cb = fit(adamw(lr=1e-2), make_loader(n=120, batch_size=10), callback=TimescaleCallback(tau_epoch=2.0))
    expected = 10 / (1e-2 * 120 * 2.0)  # B / (lr N tau_epoch)
    assert recorder.steps[0][0][1] == pytest.approx(expected)
    assert all(step[0][1] == pytest.approx(expected) for step in recorder.steps)
    assert (cb.resolved_dataset_size, cb.resolved_batch_size) == (120, 10)
    assert cb.resolved_tau_iter == pytest.approx(2.0 * 12)


@pytest.mark.slow
def test_gradient_accumulation_multiplies_global_batch() -> None:
    recorder, cb = fit(adamw(), make_loader(n=120, batch_size=10), accumulate_grad_batches=3)
    assert cb.resolved_batch_size == 30
    assert recorder.steps[0][0][1] == pytest.approx(30 / (1e-2 * 120 * 2.0))


@pytest.mark.slow
def test_max_steps_only_run() -> None:
    recorder, cb = fit(adamw(), make_loader(n=120, batch_size=10), max_epochs=-1, max_steps=7)
    assert len(recorder.steps) == 7
    assert recorder.steps[0][0][1] == pytest.approx(10 / (1e-2 * 120 * 2.0))


@pytest.mark.slow
def test_linear_warmup_uses_initial_lr_not_warmed_up_lr() -> None:
    def make(m: TinyModel):
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1)
        sched = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=10)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    recorder, cb = fit(make, make_loader(n=120, batch_size=10), max_epochs=2)
    first_lr, first_wd = recorder.steps[0][0]
    assert first_lr == pytest.approx(1e-3)  # warm-up starts at 0.1x
    assert first_wd == pytest.approx(10 / (1e-2 * 120 * 2.0))  # ...but tau is defined at the initial lr
    assert recorder.steps[-1][0][1] == first_wd  # constant mode: never rewritten
    # planned timescales: sum over 24 steps of lr_t * wd, with lr_t ramping 0.1x -> 1x over 10 steps
    lrs = [1e-2 * (0.1 + 0.9 * min(t, 10) / 10) for t in range(24)]
    assert cb.groups[0].planned_timescales == pytest.approx(sum(lrs) * first_wd)


@pytest.mark.slow
def test_one_cycle_uses_max_lr() -> None:
    def make(m: TinyModel):
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=5e-2, total_steps=12)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    recorder, cb = fit(make, make_loader(n=120, batch_size=10))
    assert recorder.steps[0][0][0] == pytest.approx(5e-2 / 25)  # OneCycle starts at max_lr / div_factor
    assert recorder.steps[0][0][1] == pytest.approx(10 / (5e-2 * 120 * 2.0))
    assert cb.groups[0].reference_lr == pytest.approx(5e-2)


@pytest.mark.slow
def test_groups_with_zero_weight_decay_stay_zero_and_each_group_uses_own_lr() -> None:
    def make(m: TinyModel):
        decay = [m.hidden.weight, m.head.weight]
        no_decay = [m.hidden.bias, m.head.bias, m.norm.weight, m.norm.bias]
        return torch.optim.AdamW(
            [
                {"params": decay, "weight_decay": 0.3, "name": "matrices"},
                {"params": no_decay, "weight_decay": 0.0, "lr": 4e-2},
            ],
            lr=1e-2,
        )

    recorder, cb = fit(make, make_loader(n=120, batch_size=10))
    (lr0, wd0), (lr1, wd1) = recorder.steps[0]
    assert wd0 == pytest.approx(10 / (1e-2 * 120 * 2.0))
    assert wd1 == 0.0
    assert [g.name for g in cb.groups] == ["matrices", "pg2"]
    assert [g.managed for g in cb.groups] == [True, False]
    assert cb.groups[0].weight_decay_before == 0.3


@pytest.mark.slow
def test_per_group_lr_gives_per_group_weight_decay() -> None:
    def make(m: TinyModel):
        return torch.optim.AdamW(
            [{"params": m.hidden.parameters(), "lr": 1e-2}, {"params": m.head.parameters(), "lr": 2.5e-3}],
            weight_decay=0.1,
        )

    recorder, _ = fit(make, make_loader(n=120, batch_size=10))
    (lr0, wd0), (lr1, wd1) = recorder.steps[0]
    assert wd1 == pytest.approx(4 * wd0)  # lr / 4 -> weight decay x 4: same lr * wd
    assert lr0 * wd0 == pytest.approx(lr1 * wd1)


@pytest.mark.slow
def test_explicit_overrides_win_over_what_read() -> None:
    cb = TimescaleCallback(tau_epoch=2.0, dataset_size=1000, batch_size=50)
    recorder, _ = fit(adamw(), make_loader(n=120, batch_size=10), callback=cb)
    assert recorder.steps[0][0][1] == pytest.approx(50 / (1e-2 * 1000 * 2.0))


@pytest.mark.slow
def test_tau_iter_needs_no_dataset() -> None:
    cb = TimescaleCallback(tau_iter=40)
    recorder, _ = fit(adamw(lr=1e-2), make_loader(n=120, batch_size=10), callback=cb)
    assert recorder.steps[0][0][1] == pytest.approx(1 / (1e-2 * 40))
    assert cb.resolved_tau_epoch == pytest.approx(40 / 12)


@pytest.mark.slow
def test_adam_with_decoupled_weight_decay_managed() -> None:
    make = lambda m: torch.optim.Adam(m.parameters(), lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True)  # noqa: E731
    recorder, _ = fit(make, make_loader(n=120, batch_size=10))
    assert recorder.steps[0][0][1] == pytest.approx(10 / (1e-2 * 120 * 2.0))


@pytest.mark.slow
def test_per_step_mode_holds_lr_times_weight_decay() -> None:
    def make(m: TinyModel):
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1)
        # cosine to exactly 0 on the last step: lr_t = 0 must not produce NaN or inf
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=11, eta_min=0.0)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    cb = TimescaleCallback(tau_epoch=2.0, mode="per_step")
    recorder, _ = fit(make, make_loader(n=120, batch_size=10), max_epochs=-1, max_steps=12, callback=cb)
    tau_iter = 2.0 * 12
    for lr, wd in (step[0] for step in recorder.steps):
        assert torch.isfinite(torch.tensor(wd))
        if lr > 0:
            assert lr * wd == pytest.approx(1 / tau_iter)
    assert recorder.steps[-1][0][0] == pytest.approx(0.0, abs=1e-12)
    assert recorder.steps[-1][0][1] == recorder.steps[-2][0][1]  # lr 0 keeps the last weight decay


@pytest.mark.slow
def test_limit_train_batches_shrinks_epoch() -> None:
    recorder, cb = fit(adamw(), make_loader(n=120, batch_size=10), limit_train_batches=4)
    assert cb.resolved_dataset_size == 40  # 4 batches of 10 per epoch
    assert recorder.steps[0][0][1] == pytest.approx(10 / (1e-2 * 40 * 2.0))
    recorder, cb = fit(adamw(), make_loader(n=120, batch_size=10), limit_train_batches=0.5)
    assert cb.resolved_dataset_size == 60


@pytest.mark.slow
def test_batch_size_read_from_batch_sampler() -> None:
    ds = make_dataset(120)
    loader = DataLoader(ds, batch_sampler=BatchSampler(RandomSampler(ds), batch_size=15, drop_last=False))
    _, cb = fit(adamw(), loader)
    assert cb.resolved_batch_size == 15


@pytest.mark.slow
def test_several_train_dataloaders_sum_sizes_and_batches() -> None:
    class TwoLoaders(TinyModel):
        def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
            return sum(super(TwoLoaders, self).training_step(b, batch_idx) for b in batch.values())

    recorder, cb = Recorder(), TimescaleCallback(tau_epoch=2.0)
    loaders = {"a": make_loader(n=120, batch_size=10), "b": make_loader(n=60, batch_size=5)}
    quiet_trainer(callbacks=[cb, recorder]).fit(TwoLoaders(adamw()), loaders)
    assert (cb.resolved_dataset_size, cb.resolved_batch_size) == (180, 15)
    assert recorder.steps[0][0][1] == pytest.approx(15 / (1e-2 * 180 * 2.0))


class LateDataModule(pl.LightningDataModule):
    """A DataModule whose dataset only exists after `setup`, as with real downloads."""

    def __init__(self) -> None:
        super().__init__()
        self.dataset = None

    def setup(self, stage: str) -> None:
        self.dataset = make_dataset(90)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.dataset, batch_size=9)


@pytest.mark.slow
def test_datamodule_set_up_late() -> None:
    recorder, cb = fit(adamw(), datamodule=LateDataModule())
    assert (cb.resolved_dataset_size, cb.resolved_batch_size) == (90, 9)
    assert recorder.steps[0][0][1] == pytest.approx(9 / (1e-2 * 90 * 2.0))


class Stream(IterableDataset):
    def __iter__(self):
        yield from make_dataset(40)


def weights(model: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.parameters()]


def assert_fit_raises(match: str, make_optimizer=None, loader=None, callback=None, **trainer_kwargs) -> None:
    """The fit must fail with `match` and no weight may have changed."""
    model = TinyModel(make_optimizer or adamw())
    before = weights(model)
    trainer = quiet_trainer(callbacks=[callback or TimescaleCallback(tau_epoch=2.0)], **trainer_kwargs)
    with pytest.raises(ValueError, match=match):
        trainer.fit(model, loader if loader is not None else make_loader())
    assert all(torch.equal(a, b) for a, b in zip(before, weights(model)))


@pytest.mark.slow
def test_iterable_dataset_without_length_asks_for_dataset_size() -> None:
    assert_fit_raises(r"has no length .*Pass `TimescaleCallback\(dataset_size=...\)`", loader=DataLoader(Stream(), 8))
    # ...and works once it is given
    recorder, _ = fit(adamw(), DataLoader(Stream(), 8), callback=TimescaleCallback(tau_epoch=2.0, dataset_size=40))
    assert recorder.steps[0][0][1] == pytest.approx(8 / (1e-2 * 40 * 2.0))


@pytest.mark.slow
def test_unknown_batch_size_needs_no_batch_size_trainer_counts_epoch() -> None:
    # batch_size=None: the dataset yields ready-made batches, so the loader cannot say how big they are; the
    # epoch is still 5 optimizer steps, and that is all tau_epoch needs
    ds = [(torch.randn(6, 4), torch.zeros(6, dtype=torch.long)) for _ in range(5)]
    recorder, cb = fit(adamw(), DataLoader(ds, batch_size=None), max_epochs=2)
    assert cb.resolved_steps_per_epoch == 5 and cb.resolved_batch_size is None
    assert [s[0][1] for s in recorder.steps] == pytest.approx([1 / (1e-2 * 2.0 * 5)] * 10)
    # ...but `dataset_size` alone (M = N / B) needs B, and says so
    assert_fit_raises(
        r"per-device batch size .*got None.*Pass `TimescaleCallback\(batch_size=...\)`",
        loader=DataLoader(ds, batch_size=None),
        callback=TimescaleCallback(tau_epoch=2.0, dataset_size=30),
    )


@pytest.mark.parametrize(
    ("make_optimizer", "match"),
    [
        (
            lambda m: torch.optim.Adam(m.parameters(), lr=1e-2, weight_decay=0.1),
            r"optimizer 0 \(torch\.optim\.Adam\) adds `weight_decay` to the gradient \(coupled L2",
        ),
        (
            lambda m: torch.optim.SGD(m.parameters(), lr=1e-2, weight_decay=0.1),
            r"optimizer 0 \(torch\.optim\.SGD\) adds `weight_decay` to the gradient \(coupled L2",
        ),
        (lambda m: torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.0), "found no AdamW param group"),
    ],
)
@pytest.mark.slow
def test_unsupported_optimizers_raise_before_training(make_optimizer, match: str) -> None:
    assert_fit_raises(match, make_optimizer=make_optimizer)


@pytest.mark.slow
def test_zero_reference_lr_raises() -> None:
    assert_fit_raises(r"param group 'pg1'.*reference learning rate is 0.0", make_optimizer=adamw(lr=0.0))


@pytest.mark.slow
def test_skip_unsupported_optimizers_leaves_them_alone() -> None:
    def make(m: TinyModel):
        return [
            torch.optim.AdamW(m.hidden.parameters(), lr=1e-2, weight_decay=0.1),
            torch.optim.SGD(m.head.parameters(), lr=1e-2, weight_decay=0.5),
        ]

    class Manual(TinyModel):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.automatic_optimization = False

        def training_step(self, batch: Any, batch_idx: int) -> None:
            opts = self.optimizers()
            loss = super().training_step(batch, batch_idx)
            self.manual_backward(loss)
            for opt in opts:
                opt.step()
                opt.zero_grad()

    cb = TimescaleCallback(tau_epoch=2.0, skip_unsupported_optimizers=True)
    trainer = quiet_trainer(callbacks=[cb], max_steps=2)
    with pytest.warns(UserWarning, match=r"leaves optimizer 1 \(SGD\) alone"):
        trainer.fit(Manual(make), make_loader())
    adam, sgd = trainer.optimizers
    assert adam.param_groups[0]["weight_decay"] == pytest.approx(10 / (1e-2 * 120 * 2.0))
    assert sgd.param_groups[0]["weight_decay"] == 0.5
    assert [(g.name, g.managed) for g in cb.groups] == [("optimizer0/pg1", True), ("optimizer1/pg1", False)]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "exactly one of `tau_epoch`, `tau_iter` and `token_budget`, got tau_epoch=None and tau_iter=None"),
        ({"tau_epoch": 1.0, "tau_iter": 5}, "exactly one of .* got tau_epoch=1.0 and tau_iter=5"),
        ({"tau_epoch": 0}, r"`TimescaleCallback\(tau_epoch=0\)` is not valid"),
        ({"tau_epoch": float("nan")}, r"`TimescaleCallback\(tau_epoch=nan\)` is not valid"),
        ({"tau_iter": -3}, r"`TimescaleCallback\(tau_iter=-3\)` is not valid"),
        ({"tau_epoch": float("inf")}, r"`TimescaleCallback\(tau_epoch=inf\)` is not valid"),
        ({"tau_epoch": 1.0, "dataset_size": 0}, r"`TimescaleCallback\(dataset_size=0\)` is not valid"),
        ({"tau_epoch": 1.0, "batch_size": -8}, r"`TimescaleCallback\(batch_size=-8\)` is not valid"),
        ({"tau_epoch": 1.0, "mode": "sometimes"}, r"`TimescaleCallback\(mode='sometimes'\)` is not supported"),
        ({"tau_epoch": 1.0, "size_exponent": float("nan")}, r"`TimescaleCallback\(size_exponent=nan\)` is not valid"),
        ({"tau_epoch": 1.0, "size_exponent": -0.5}, r"size_exponent=-0.5\)` .* needs `reference_dataset_size`"),
        ({"tau_epoch": 1.0, "size_exponent": 3, "reference_dataset_size": 10}, r"size_exponent=3\)` .* \[-2, 2\]"),
        ({"tau_epoch": 1.0, "reference_dataset_size": -1}, r"`TimescaleCallback\(reference_dataset_size=-1\)`"),
        ({"tau_iter": 9, "size_exponent": -1, "reference_dataset_size": 10}, r"Give the target as `tau_epoch`"),
        ({"token_budget": 1e9, "size_exponent": -1, "reference_dataset_size": 10}, r"would count the data twice"),
        (
            {"tau_epoch": 1.0, "batch_exponent": 1},
            r"^`TimescaleCallback\(batch_exponent=1\)` is not valid: a nonzero `batch_exponent` needs"
            r" `reference_batch_size`, the global batch size B",
        ),
        ({"tau_epoch": 1.0, "batch_exponent": float("nan")}, r"^`TimescaleCallback\(batch_exponent=nan\)` is not"),
        ({"tau_epoch": 1.0, "batch_exponent": float("inf")}, r"^`TimescaleCallback\(batch_exponent=inf\)` is not"),
        ({"tau_epoch": 1.0, "batch_exponent": -2.5, "reference_batch_size": 8}, r"batch_exponent=-2.5\)` .* \[-2, 2\]"),
        ({"tau_epoch": 1.0, "batch_exponent": "1"}, r"^`TimescaleCallback\(batch_exponent='1'\)` is not valid"),
        ({"tau_epoch": 1.0, "reference_batch_size": 0}, r"^`TimescaleCallback\(reference_batch_size=0\)` is not valid"),
        ({"tau_epoch": 1.0, "reference_batch_size": 1.5}, r"^`TimescaleCallback\(reference_batch_size=1.5\)`"),
        ({"tau_epoch": 1.0, "reference_batch_size": True}, r"^`TimescaleCallback\(reference_batch_size=True\)`"),
        ({"tau_iter": 9, "batch_exponent": 1, "reference_batch_size": 8}, r"with B, .* Give the target as `tau_epoch`"),
        ({"token_budget": 1e9, "batch_exponent": 1, "reference_batch_size": 8}, r"or `token_budget` alone"),
    ],
)
def test_bad_arguments_raise_at_construction(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        TimescaleCallback(**kwargs)


@pytest.mark.slow
def test_summary_and_warnings(caplog: pytest.LogCaptureFixture) -> None:
    # tau_epoch 50 over a 2-epoch run: far less than one timescale
    with pytest.warns(UserWarning, match=r"less than one EMA timescale for pg1 \(0.04\)"):
        fit(adamw(), make_loader(n=120, batch_size=10), max_epochs=2, callback=TimescaleCallback(tau_epoch=50.0))
    with pytest.raises(ValueError, match=r"TimescaleCallback\(tau_iter=0.5\)` is not valid.*Use `tau_iter > 1`"):
        TimescaleCallback(tau_iter=0.5)


@pytest.mark.slow
def test_summary_printed(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO"):
        fit(adamw(), make_loader(n=120, batch_size=10), max_epochs=4)
    text = caplog.text
    assert "TimescaleCallback: tau_epoch=2 (tau_iter=24 steps), M=12 steps/epoch, N=120, B=10" in text
    assert "M = 12 optimizer steps per epoch: 12 batches per rank." in text
    # weight decay 10 / (0.01 * 120 * 2) = 4.167; 48 steps at lr 0.01 cover 48 * 0.01 * 4.167 = 2 timescales
    assert re.search(r"0 \| pg1 +\| 74 +\| - +\| 0.01 +\| 0.1 -> 4.167 +\| 24 +\| 2 +\| 2\n", text)
    assert "Planned: 48 optimizer steps." in text
    assert "B = 10 per device x 1 device(s) x 1 accumulation." in text


@pytest.mark.slow
def test_decaying_biases_and_norms_warn_once_naming_them() -> None:
    # `self.parameters()` with one weight decay: the biases and LayerNorm weights decay at the callback's lambda
    with pytest.warns(UserWarning) as caught:
        recorder, _ = fit(adamw(), make_loader(n=120, batch_size=10), max_epochs=2)
    messages = [str(w.message) for w in caught if "1-D parameters" in str(w.message)]
    assert len(messages) == 1  # once, before training: not again at the epoch-1 re-decision
    assert re.search(
        r"'pg1' \(4 of 6: hidden\.bias, norm\.weight, norm\.bias, head\.bias; weight decay 4\.167\).*"
        r"`torch\.optim\.AdamW\(lightning_tau\.build_param_groups\(model, weight_decay=0\.1\), lr=\.\.\.\)`.*"
        r"`TimescaleCallback\(decay_vectors=True\)`",
        messages[0],
    )
    # decay_vectors=True: the user means it; no warning, and exactly the same values written at every step
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*1-D parameters")
        quiet, _ = fit(
            adamw(),
            make_loader(n=120, batch_size=10),
            max_epochs=2,
            callback=TimescaleCallback(2.0, decay_vectors=True),
        )
    assert quiet.steps == recorder.steps


@pytest.mark.slow
def test_vector_warning_caps_list_and_skips_groups_do_not_decay() -> None:
    class Deep(TinyModel):
        def __init__(self, make_optimizer) -> None:
            super().__init__(make_optimizer)
            self.norms = torch.nn.ModuleList(torch.nn.LayerNorm(8) for _ in range(5))

    trainer = quiet_trainer(callbacks=[TimescaleCallback(tau_epoch=2.0)], max_steps=1)
    with pytest.warns(UserWarning, match=r"'pg1' \(14 of 16: hidden\.bias, .*, norms\.0\.bias and 8 more;"):
        trainer.fit(Deep(adamw()), make_loader())
    # build_param_groups puts biases and norms at weight decay 0: nothing to say
    trainer = quiet_trainer(callbacks=[TimescaleCallback(tau_epoch=2.0)], max_steps=1)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*1-D parameters")
        trainer.fit(TinyModel(lambda m: torch.optim.AdamW(build_param_groups(m, 0.1), lr=1e-2)), make_loader())


@pytest.mark.slow
def test_two_timescale_callbacks_error_before_any_step() -> None:
    model = TinyModel(adamw())
    before = weights(model)
    trainer = quiet_trainer(callbacks=[TimescaleCallback(tau_epoch=2.0), TimescaleCallback(tau_iter=50)])
    with pytest.raises(ValueError, match=r"2 `TimescaleCallback`s \(tau_epoch=2, tau_iter=50\).*last one would"):
        trainer.fit(model, make_loader())
    assert all(torch.equal(a, b) for a, b in zip(before, weights(model)))


@pytest.mark.slow
def test_size_exponent_in_hparams_record_with_held_tau_epoch() -> None:
    from loggers import MemoryLogger

    logger = MemoryLogger()
    cb = TimescaleCallback(tau_epoch=8.0, size_exponent=-0.5, reference_dataset_size=30, verbose=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quiet_trainer(callbacks=[cb], logger=logger, max_epochs=1).fit(
            TinyModel(adamw()), make_loader(n=120, batch_size=10)
        )
    record = logger.hparams[-1]
    assert record["timescale/size_exponent"] == -0.5
    assert record["timescale/reference_dataset_size"] == 30.0
    assert record["timescale/tau_epoch_at_reference_size"] == 8.0
    assert record["timescale/tau_epoch_target"] == pytest.approx(8.0 * (120 / 30) ** -0.5)  # 4: the one held
    assert record["timescale/tau_epoch/pg1"] == pytest.approx(4.0)


@pytest.mark.slow
def test_batch_exponent_in_hparams_record_with_held_tau_epoch() -> None:
    from loggers import MemoryLogger

    logger = MemoryLogger()
    cb = TimescaleCallback(tau_epoch=8.0, batch_exponent=-0.5, reference_batch_size=40, verbose=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quiet_trainer(callbacks=[cb], logger=logger, max_epochs=1).fit(
            TinyModel(adamw()), make_loader(n=120, batch_size=10)
        )
    record = logger.hparams[-1]
    assert record["timescale/batch_exponent"] == -0.5
    assert record["timescale/reference_batch_size"] == 40.0
    assert record["timescale/tau_epoch_at_reference_size"] == 8.0
    assert "timescale/size_exponent" not in record
    assert record["timescale/tau_epoch_target"] == pytest.approx(8.0 * (10 / 40) ** -0.5)  # 16: the one held
    assert record["timescale/tau_epoch/pg1"] == pytest.approx(16.0)


@pytest.mark.slow
def test_nonzero_batch_exponent_with_no_readable_b_stops_before_any_step() -> None:
    cb = TimescaleCallback(tau_epoch=8.0, batch_exponent=1, reference_batch_size=10, verbose=False)
    model = TinyModel(adamw())
    before = [p.detach().clone() for p in model.parameters()]
    batches = make_loader(n=120, batch_size=None)  # no batch dimension Lightning can read
    with pytest.raises(ValueError, match=r"^`TimescaleCallback\(batch_exponent=1\)` needs the run's global batch"):
        quiet_trainer(callbacks=[cb], max_epochs=1).fit(model, batches)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


@pytest.mark.slow
def test_size_exponent_zero_todays_rule_and_records_nothing_new() -> None:
    from loggers import MemoryLogger

    logger = MemoryLogger()
    cb = TimescaleCallback(tau_epoch=2.0, reference_dataset_size=30, verbose=False)  # ignored at exponent 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quiet_trainer(callbacks=[cb], logger=logger, max_epochs=1).fit(
            TinyModel(adamw()), make_loader(n=120, batch_size=10)
        )
    assert cb.held_tau_epoch == 2.0 and cb.resolved_tau_iter == pytest.approx(24.0)
    rule_keys = {"timescale/size_exponent", "timescale/reference_dataset_size", "timescale/tau_epoch_at_reference_size"}
    assert not rule_keys & logger.hparams[-1].keys()
    assert logger.hparams[-1]["timescale/tau_epoch_target"] == 2.0
