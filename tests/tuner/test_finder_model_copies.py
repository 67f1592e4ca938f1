"""``TimescaleFinder.fit(<instance>)`` starts every seed from its own initialization (a copy of the instance whose
modules re-run ``reset_parameters`` under the seed); an instance whose initialization cannot be re-run that way (mup's
base shapes, a parameter no reset sets, an initialization of its own) or that cannot be copied is a one-line error
saying to pass the class or a factory."""

from __future__ import annotations

import math
import os
import pickle
import threading
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_tau.param_groups import build_param_groups
from lightning_tau.tuner.finder import TimescaleFinder
from lightning_tau.tuner.trial import ModelCopies

mup = pytest.importorskip("mup")

BASE, WIDTH, LR = 8, 32, 1e-2


class MuNet(pl.LightningModule):
    """input (vector-like) -> hidden (matrix-like, s = WIDTH / BASE) -> ``MuReadout``; ``MuAdamW``."""

    def __init__(self, width: int = WIDTH) -> None:
        super().__init__()
        self.inp = nn.Linear(4, width)
        self.hidden = nn.Linear(width, width)
        self.out = mup.MuReadout(width, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.hidden(torch.relu(self.inp(x)))))

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return nn.functional.cross_entropy(self(x), y)

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        self.log("val_loss", nn.functional.cross_entropy(self(x), y))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return mup.MuAdamW(self.parameters(), lr=LR, weight_decay=0.1)


def mu_net() -> MuNet:
    """A μP model instance, as a user makes one: ``set_base_shapes`` against a base and a delta model."""
    model = MuNet(WIDTH)
    mup.set_base_shapes(model, MuNet(BASE), delta=MuNet(2 * BASE))
    return model


def loaders() -> tuple[DataLoader, DataLoader]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(96, 4, generator=g)
    data = TensorDataset(x, (x[:, 0] > 0).long())
    return DataLoader(data, batch_size=16, shuffle=True), DataLoader(TensorDataset(x[:32], data.tensors[1][:32]))


def test_mup_instance_refused_before_any_training_saying_to_pass_class(tmp_path: Path) -> None:
    # its μP initialization (set_base_shapes) is not what reset_parameters draws: each seed cannot start afresh
    train, val = loaders()
    finder = TimescaleFinder(
        fraction=0.5,
        tau_epochs=(2.0, 8.0),
        seeds=(0,),
        trainer_kwargs={"max_epochs": 2, "accelerator": "cpu", "devices": 1},
        root_dir=tmp_path,
        progress=False,
        verbose=False,
    )
    with pytest.raises(TypeError) as error:
        finder.fit(mu_net(), train_dataloaders=train, val_dataloaders=val)
    message = str(error.value)
    assert "\n" not in message and message.startswith("`TimescaleFinder.fit(model=MuNet(...))` is not valid: its")
    assert "mup's base shapes" in message and "pass the class or a factory" in message
    assert "functools.partial(MyModel" in message
    assert not list(tmp_path.rglob("events.out.tfevents.*"))  # nothing was trained


class Ordinary(pl.LightningModule):
    """The layers a user's model is made of, each initialized by its own ``reset_parameters``."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 8)
        self.conv = nn.Conv1d(8, 8, 3)
        self.norm = nn.LayerNorm(8)
        self.attend = nn.MultiheadAttention(8, 2)
        self.head = nn.Linear(8, 2)


def _weights(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def test_each_seed_starts_from_own_initialization_and_seed_from_same() -> None:
    instance = Ordinary()
    before = _weights(instance)
    copies = pickle.loads(pickle.dumps(ModelCopies(instance)))  # as workers get it
    made = {}
    for seed in (0, 1, 0):
        pl.seed_everything(seed, verbose=False)
        made.setdefault(seed, []).append(_weights(copies()))
    (first, again), (other,) = made[0], made[1]
    # nn.MultiheadAttention's own _reset_parameters runs after its out_proj's (a parent after its children, as in
    # __init__): its biases are zeros, as a fresh MultiheadAttention's are
    fixed = {"norm.weight": 1.0, "norm.bias": 0.0, "attend.in_proj_bias": 0.0, "attend.out_proj.bias": 0.0}
    assert all(torch.all(first[name] == value) for name, value in fixed.items())
    random = [name for name in first if name not in fixed]
    assert "attend.in_proj_weight" in random and "embed.weight" in random and "conv.bias" in random
    for name in random:  # every randomly initialized parameter differs between the seeds ...
        assert not torch.equal(first[name], other[name]), name
    for name in first:  # ... and one seed gives the same weights every time
        assert torch.equal(first[name], again[name]), name
    assert all(torch.equal(p, before[n]) for n, p in instance.named_parameters())  # the instance is left alone


class DirectParameter(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Linear(4, 2)
        self.scale = nn.Parameter(torch.ones(2))  # no reset_parameters sets it


class ZeroHead(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(16, 16)
        self.head = nn.Linear(16, 4)
        nn.init.zeros_(self.head.weight)  # an initialization of its own


@pytest.mark.parametrize(
    ("model", "match"),
    [
        (DirectParameter(), r"its parameter `scale` is not set by any `reset_parameters\(\)` \(the model itself"),
        (
            ZeroHead(),
            r"its parameter `head.weight` is not initialized as `reset_parameters\(\)` initializes it \(RMS 0",
        ),
    ],
)
def test_instance_whose_initialization_cannot_be_rerun_refused(model: pl.LightningModule, match: str) -> None:
    with pytest.raises(TypeError, match=match) as error:
        ModelCopies(model)
    message = str(error.value)
    assert "\n" not in message and "pass the class or a factory instead" in message


class InitSlope(pl.LightningModule):
    """``val_loss = 1 + (log tau_epoch - log(6 (N / 64) ** slope))^2`` with ``slope`` read from the run's initial
    weights: so a seed's exponent is its initialization's, and an interval over seeds is as wide as their spread."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(4, 8)

    def on_train_start(self) -> None:
        self.slope = 0.1 * float(self.net.weight.detach().sum())

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, _ = batch
        return self.net(x).pow(2).mean()

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        group = next(g for g in self.trainer.optimizers[0].param_groups if g["weight_decay"] > 0)
        steps = self.trainer.num_training_batches
        tau = 1.0 / (group["lr"] * group["weight_decay"] * steps)
        best = 6.0 * (steps * 16 / 96) ** self.slope
        self.log("val_loss", 1.0 + (math.log(tau) - math.log(best)) ** 2)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(build_param_groups(self, weight_decay=0.1), lr=LR)


class Starts(pl.Callback):
    """Each trial's initial weights, by seed (an observer: shared by the trials of a process)."""

    def __init__(self) -> None:
        self.by_seed: dict[int, list[torch.Tensor]] = {}

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        seed = int(os.environ["PL_GLOBAL_SEED"])
        self.by_seed.setdefault(seed, []).append(pl_module.net.weight.detach().clone())


@pytest.mark.slow
def test_instance_on_dataset_size_axis_gives_seeds_of_their_own_and_interval(tmp_path: Path) -> None:
    starts = Starts()
    finder = TimescaleFinder(
        axis="dataset_size",
        fractions=(0.5, 1.0),
        tau_epochs=(2.0, 4.0, 8.0, 16.0, 32.0),
        seeds=(0, 1, 2),
        trainer_kwargs={"max_epochs": 1, "accelerator": "cpu", "devices": 1, "callbacks": [starts]},
        root_dir=tmp_path,
        progress=False,
        verbose=False,
    )
    instance = InitSlope()
    train, val = loaders()
    result = finder.fit(instance, train_dataloaders=train, val_dataloaders=val)
    assert sorted(starts.by_seed) == [0, 1, 2] and all(len(w) == 10 for w in starts.by_seed.values())
    for weights in starts.by_seed.values():  # a seed starts from the same weights at every point and tau_epoch
        assert all(torch.equal(w, weights[0]) for w in weights)
    firsts = [weights[0] for weights in starts.by_seed.values()]
    assert not torch.equal(firsts[0], firsts[1]) and not torch.equal(firsts[1], firsts[2])  # and seeds differ
    # the interval holds the seeds' spread of initialization: not a point, as copies of one instance would give
    ci = result.exponent_ci
    assert ci is not None and ci[1] - ci[0] > 0.01
    assert ci[0] <= result.fit.exponent <= ci[1]


class Locked(MuNet):
    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()


def test_instance_cannot_be_copied_says_to_pass_class(tmp_path: Path) -> None:
    train, val = loaders()
    finder = TimescaleFinder(
        tau_epochs=(2.0, 8.0), seeds=(0,), trainer_kwargs={"max_epochs": 2}, root_dir=tmp_path, progress=False
    )
    with pytest.raises(TypeError) as error:
        finder.fit(Locked(), train_dataloaders=train, val_dataloaders=val)
    message = str(error.value)
    assert "\n" not in message and message.startswith("`TimescaleFinder.fit(model=Locked(...))` is not valid:")
    assert "`lock`" in message and "_thread.lock" in message and "pass the class or a factory" in message
    assert not list(tmp_path.rglob("events.out.tfevents.*"))  # nothing was trained
