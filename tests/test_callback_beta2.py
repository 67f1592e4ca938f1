"""``TimescaleCallback(beta2_epochs=...)`` holds Adam's ``β₂`` window in epochs as the batch changes; the unit tests of
lightning_tau/callback_beta2.py, on plain torch optimizers, at the end.

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
from tiny_model import TinyModel, make_loader, quiet_trainer
from lightning.pytorch.callbacks import BatchSizeFinder, GradientAccumulationScheduler
from torch.utils.data import DataLoader

from lightning_tau import TimescaleCallback
from lightning_tau.callback_beta2 import MAX_BETA2_STEPS, check_adam_groups, check_beta2_epochs, checked_beta2, hold_beta2
from lightning_tau.callback_decision import Decision, decide_and_write
from lightning_tau.decide import RunShape
from lightning_tau.target import Target

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


@pytest.mark.slow
def test_window_held_in_epochs_at_every_step_as_batch_changes() -> None:
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


@pytest.mark.slow
def test_follows_batch_batch_size_finder_picks() -> None:
    log, cb = BetaLog(), TimescaleCallback(tau_epoch=2.0, beta2_epochs=0.5, verbose=False, monitor=False)
    finder = BatchSizeFinder(mode="power", steps_per_trial=1, init_val=4, max_trials=2)
    model = TunableModel()
    quiet_trainer(callbacks=[cb, finder, log], max_epochs=2).fit(model)
    assert model.batch_size != 4  # the finder really changed it
    m = math.ceil(N / model.batch_size)
    assert len(log.steps) == 2 * m
    assert [beta2 for _, (_, beta2) in log.steps] == [pytest.approx(1 - 1 / (0.5 * m), rel=1e-12)] * (2 * m)


@pytest.mark.slow
def test_without_beta2_epochs_betas_left_alone() -> None:
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
def test_bad_beta2_epochs_one_line_error(value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TimescaleCallback(tau_epoch=2.0, beta2_epochs=value)


TOO_LONG = (
    r" rounds to 1 in float64: torch's Adam refuses β₂ = 1 and its steps would turn the weights non-finite\. Use"
    r" `beta2_epochs` of at most {most} at this M \(2\^53 steps, the longest window a float64 β₂ below 1 expresses\)\.$"
)
TOO_SHORT = (
    r" = {beta2} \(<= 0: no average at all\)\. Use `beta2_epochs` above 0\.08333 at this M \(one optimizer step\)\.$"
)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (1e20, r"1e\+20\)` is 1\.2e\+21 optimizer steps.*" + TOO_LONG.format(most=r"7\.506e\+14")),
        (1e300, r"1e\+300\)` is 1\.2e\+301 optimizer steps.*" + TOO_LONG.format(most=r"7\.506e\+14")),
        (2**54 / 12, r"1501199875790165\.2\)` is 1\.801e\+16 optimizer steps.*" + TOO_LONG.format(most=r"7\.506e\+14")),
        (0.05, r"0\.05\)` is 0\.6 optimizer steps" + r".*" + TOO_SHORT.format(beta2=r"-0\.6667")),
        (1 / 12, r"0\.08333333333333333\)` is 1 optimizer steps" + r".*" + TOO_SHORT.format(beta2="0")),
    ],
)
@pytest.mark.slow
def test_not_below_one_or_not_above_zero_refused_before_any_step(value: float, message: str) -> None:
    model = TinyModel(adamw)
    before = [p.detach().clone() for p in model.parameters()]
    cb = TimescaleCallback(tau_epoch=2.0, beta2_epochs=value, verbose=False, monitor=False)  # M = 12 steps of B = 10
    with pytest.raises(ValueError, match=r"^`TimescaleCallback\(beta2_epochs=" + message) as err:
        quiet_trainer(callbacks=[cb], max_epochs=1).fit(model, make_loader(n=N))
    assert "at M=12 steps per epoch, so β₂ = 1 - 1/(beta2_epochs·M)" in str(err.value) and "\n" not in str(err.value)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert model.trainer.optimizers[0].param_groups[0]["betas"] == (0.9, 0.95)  # nothing written


@pytest.mark.slow
def test_longest_window_message_names_held() -> None:
    log, cb = BetaLog(), TimescaleCallback(tau_epoch=2.0, beta2_epochs=7.506e14, verbose=False, monitor=False)
    model = TinyModel(adamw)
    quiet_trainer(callbacks=[cb, log], max_epochs=1).fit(model, make_loader(n=N))
    assert {beta2 for _, (_, beta2) in log.steps} == {1 - 2**-53}  # the largest double below 1
    assert all(torch.isfinite(p).all() for p in model.parameters())


class WeightsAtEpochEnd(pl.Callback):
    def __init__(self) -> None:
        self.weights: list[list[torch.Tensor]] = []

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.weights.append([p.detach().clone() for p in pl_module.parameters()])


class GrowingM(TinyModel):
    """Batches of 40 in epoch 0, then 10 (reloaded every epoch): M = 3, then 12."""

    def train_dataloader(self) -> DataLoader:
        return make_loader(n=N, batch_size=40 if self.trainer.current_epoch == 0 else 10)


@pytest.mark.parametrize(
    ("beta2_epochs", "model_class", "extra", "message"),
    [
        # 1.2 steps at M = 12, 0.3 once accumulation 4 makes M = 3: beta2 would fall below 0
        (0.1, TinyModel, [GradientAccumulationScheduler({1: 4})], r"0\.1\)` at epoch 1 \(.*\) is 0\.3 optimizer"
         r" steps at M=3 steps per epoch, so β₂ = 1 - 1/\(beta2_epochs·M\) = -2\.333 \(<= 0: no average at all\)\. Use"
         r" `beta2_epochs` above 0\.3333 at this M \(one optimizer step\)\.$"),
        # 2^53 steps at M = 3 (beta2 = 1 - 2^-53), 2^55 at M = 12: beta2 would round to 1
        (2**53 / 3, GrowingM, [], r"3002399751580330\.5\)` at epoch 1 \(.*\) is 3\.603e\+16 optimizer steps at"
         r" M=12 steps per epoch, so β₂ = 1 - 1/\(beta2_epochs·M\) rounds to 1 in float64.* Use `beta2_epochs` of at"
         r" most 7\.506e\+14 at this M"),
    ],
    ids=["accumulation", "reloaded-dataloader"],
)
@pytest.mark.slow
def test_change_mid_fit_pushes_beta2_out_of_range_stops_before_step(
    beta2_epochs: float, model_class: type[TinyModel], extra: list[Any], message: str
) -> None:
    model, log, weights = model_class(adamw), BetaLog(), WeightsAtEpochEnd()
    cb = TimescaleCallback(tau_epoch=2.0, beta2_epochs=beta2_epochs, verbose=False, monitor=False)
    trainer = quiet_trainer(callbacks=[cb, log, weights, *extra], max_epochs=2, reload_dataloaders_every_n_epochs=1)
    with pytest.raises(ValueError, match=r"^`TimescaleCallback\(beta2_epochs=" + message):
        trainer.fit(model, None if model_class is GrowingM else make_loader(n=N))  # GrowingM has its own
    m0 = len(log.steps)
    assert m0 in (3, 12) and [epoch for epoch, _ in log.steps] == [0] * m0  # no step of epoch 1 ran
    assert all(0 < beta2 < 1 for _, (_, beta2) in log.steps)
    (after_epoch_0,) = weights.weights
    assert all(torch.equal(a, b) for a, b in zip(after_epoch_0, model.parameters()))


@pytest.mark.slow
def test_pre_flight_lists_held_beta2_window(caplog: pytest.LogCaptureFixture) -> None:
    cb = TimescaleCallback(tau_epoch=2.0, beta2_epochs=1.0, monitor=False)
    with caplog.at_level("INFO"):
        quiet_trainer(callbacks=[cb], max_epochs=1).fit(TinyModel(adamw), make_loader(n=N))
    rows = {line.split("|")[0].strip(): [c.strip() for c in line.split("|")[1:]] for line in caplog.text.splitlines()}
    # M = 12 steps of B = 10: beta2 = 1 - 1/12 averages over 12 steps, one epoch, 120 samples
    assert rows["Adam beta2 (pg1)"] == ["12", "1", "120", "betas[1]=0.916667 (beta2_epochs=1)"]
    assert rows["AdamW tau (pg1)"] == ["24", "2", "240", ""]


def preflight_rows(caplog: pytest.LogCaptureFixture, model: TinyModel, **callback_kwargs: Any) -> dict[str, list[str]]:
    cb = TimescaleCallback(tau_epoch=2.0, monitor=False, **callback_kwargs)
    with caplog.at_level("INFO"):
        quiet_trainer(callbacks=[cb], max_epochs=1).fit(model, make_loader(n=N))
    return {line.split("|")[0].strip(): [c.strip() for c in line.split("|")[1:]] for line in caplog.text.splitlines()}


@pytest.mark.slow
def test_pre_flight_shows_long_but_valid_beta2_window_and_beta2_unrounded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # 1e14 epochs of M = 12 steps: 1 - 1/1.2e15 rounds to the double 1 - 8 * 2^-53 = 1 - 8.882e-16, whose window is
    # 2^50 = 1.126e15 steps: the table shows the window float64 holds (9.382e13 epochs), not the one asked for
    rows = preflight_rows(caplog, TinyModel(adamw), beta2_epochs=1e14)
    assert rows["Adam beta2 (pg1)"] == [
        "1.126e+15",
        "9.382e+13",
        "11,258,999,068,426,240",  # samples: 10 per step
        "betas[1]=1-8.882e-16 (beta2_epochs=1e+14)",
    ]


@pytest.mark.slow
def test_pre_flight_shows_users_own_beta2_of_one_as_endless_window(caplog: pytest.LogCaptureFixture) -> None:
    def beta2_one(m: torch.nn.Module) -> torch.optim.Optimizer:
        opt = adamw(m)
        opt.param_groups[0]["betas"] = (0.9, 1.0)  # torch refuses it in the constructor, not afterwards
        return opt

    rows = preflight_rows(caplog, TinyModel(beta2_one))  # the callback does not hold beta2 here: it only reports it
    assert rows["Adam beta2 (pg1)"] == ["inf", "inf", "inf", "betas[1]=1"]


# --- lightning_tau/callback_beta2.py, on plain torch optimizers ---


def test_hold_beta2_writes_each_adam_groups_beta2_for_optimizers_own_m() -> None:
    first, second = (torch.optim.AdamW(torch.nn.Linear(2, 2).parameters()) for _ in range(2))
    decision = decide_and_write(
        [first, second],
        RunShape(100),
        Target(tau_epoch=5.0),
        managed_optimizers={0, 1},
        weight_decay_before={},
        pinned_lrs={},
        scheduled=set(),
        measured={},
        declared_steps_per_epoch={1: 50},
    )
    assert hold_beta2([first, second], decision, {0, 1}, beta2_epochs=10.0) == {(0, 0): 0.999, (1, 0): 0.998}
    assert [o.param_groups[0]["betas"] for o in (first, second)] == [(0.9, 0.999), (0.9, 0.998)]


def test_checked_beta2_takes_windows_over_one_step_up_to_where_beta2_rounds_to_one() -> None:
    assert checked_beta2(2.0, 1.0) == 0.5
    assert checked_beta2(MAX_BETA2_STEPS, 1.0) == 1 - 2**-53  # the longest window the message names
    assert checked_beta2(math.nextafter(2.0**54, 0), 1.0) == 1 - 2**-53  # past it, still below 1 (held as 2^53)
    with pytest.raises(ValueError, match=r"^`TimescaleCallback\(beta2_epochs=1.8014398509481984e\+16\)` is 1.801e\+16"
                       r" optimizer steps at M=1 steps per epoch, so β₂ = 1 - 1/\(beta2_epochs·M\) rounds to 1 in"
                       r" float64: .* at most 9.007e\+15 at this M \(2\^53 steps"):
        checked_beta2(2.0**54, 1.0)
    assert checked_beta2(math.nextafter(1.0, 2), 1.0) > 0  # just over one step
    with pytest.raises(ValueError, match=r"^`TimescaleCallback\(beta2_epochs=0.5\)`, optimizer 1 is 1 optimizer steps"
                       r" at M=2 steps per epoch, so β₂ = 1 - 1/\(beta2_epochs·M\) = 0 \(<= 0: no average at all\)\."
                       r" Use `beta2_epochs` above 0.5 at this M \(one optimizer step\)\.$"):
        checked_beta2(0.5, 2.0, where=", optimizer 1")


def test_hold_beta2_checks_every_group_before_writing_any_and_names_epoch_mid_fit() -> None:
    first, second = (torch.optim.AdamW(torch.nn.Linear(2, 2).parameters(), betas=(0.9, 0.99)) for _ in range(2))
    # optimizer 1 steps 4 times an epoch (declared), the run's M is 100: 0.2 epochs is 20 steps, then 0.8
    shape = RunShape(100, sources=("M = 100 batches.",))
    decision = Decision(shape, 500.0, None, [], [], {1: 4.0}, 500.0, epoch=3)
    with pytest.raises(ValueError, match=r"^`TimescaleCallback\(beta2_epochs=0.2\)` at epoch 3 \(M = 100 batches.\),"
                       r" optimizer 1 is 0.8 optimizer steps at M=4 steps per epoch"):
        hold_beta2([first, second], decision, {0, 1}, beta2_epochs=0.2)
    assert [o.param_groups[0]["betas"] for o in (first, second)] == [(0.9, 0.99), (0.9, 0.99)]  # nothing written


def test_hold_beta2_without_epoch_length_says_what_to_give() -> None:
    opt = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters())
    unknown = Decision(RunShape(None), 500.0, None, [], [], {}, 500.0)
    with pytest.raises(ValueError) as info:
        hold_beta2([opt], unknown, {0}, beta2_epochs=10.0)
    assert str(info.value) == (
        "`TimescaleCallback(beta2_epochs=10.0)` needs the epoch length in optimizer steps, which could not be read:"
        " give `dataset_size` (or `batch_size`), or leave `beta2_epochs` out."
    )


def test_hold_beta2_without_beta2_epochs_writes_nothing() -> None:
    opt = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters(), betas=(0.9, 0.95))
    assert hold_beta2([opt], Decision(RunShape(100), 500.0, None, [], [], {}, 500.0), {0}, None) == {}
    assert opt.param_groups[0]["betas"] == (0.9, 0.95)


def test_check_beta2_epochs_takes_positive_number_or_none() -> None:
    assert check_beta2_epochs(None) is None
    assert check_beta2_epochs(3) == 3.0 and isinstance(check_beta2_epochs(3), float)
    for bad in (0, -1.0, True, "5", math.nan):
        with pytest.raises(ValueError, match=r"^`TimescaleCallback\(beta2_epochs=.*\)` is not valid: use a positive"):
            check_beta2_epochs(bad)


def test_check_adam_groups_needs_betas_pair_in_managed_optimizer() -> None:
    net = torch.nn.Linear(2, 2)
    sgd, adamw = torch.optim.SGD(net.parameters(), lr=0.1), torch.optim.AdamW(net.parameters())
    check_adam_groups([sgd], {0}, None)  # no beta2_epochs: nothing to hold, nothing checked
    check_adam_groups([sgd, adamw], {1}, 5.0)
    with pytest.raises(ValueError) as info:
        check_adam_groups([sgd, adamw], {0}, 5.0)  # the AdamW is not managed
    assert str(info.value) == (
        "`TimescaleCallback(beta2_epochs=5.0)` found no Adam-like param group (one with a `betas` pair) in the"
        " optimizers it manages; leave `beta2_epochs` out for an optimizer without a second-moment EMA."
    )
