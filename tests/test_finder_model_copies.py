"""``TimescaleFinder.fit(<instance>)`` copies the instance for every trial: real mup models keep their base shapes on
the copies, and an instance that cannot be copied is a one-line error saying to pass the class or a factory."""

from __future__ import annotations

import pickle
import threading
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

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


def test_copies_of_a_mup_model_keep_its_base_shapes() -> None:
    model = mu_net()
    copies = ModelCopies(model)
    for copy in (copies(), copies(), pickle.loads(pickle.dumps(copies))()):
        shapes = {name: p.infshape for name, p in copy.named_parameters()}
        assert shapes.keys() == dict(model.named_parameters()).keys()
        for name, p in model.named_parameters():
            assert shapes[name] == p.infshape and shapes[name].width_mult() == p.infshape.width_mult(), name
            assert torch.equal(dict(copy.named_parameters())[name], p)
        copy(torch.zeros(2, 4))  # mup's MuReadout reads its weight's infshape


def test_finder_fits_a_mup_model_instance(tmp_path: Path) -> None:
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
    result = finder.fit(mu_net(), train_dataloaders=train, val_dataloaders=val)
    assert result is not None and [p.tau_epoch for p in result.curve] == [2.0, 8.0]
    # MuAdamW's hidden group steps at lr / s, so holding one tau_epoch gives it s times the weight decay
    decays = sorted(result.weight_decay.values())
    assert len(decays) == 2 and decays[1] == pytest.approx(WIDTH / BASE * decays[0], rel=1e-9)


class Locked(MuNet):
    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()


def test_an_instance_that_cannot_be_copied_says_to_pass_the_class(tmp_path: Path) -> None:
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
