"""``lightning_tau.tuner.width_probe``: the width axis's model probes, called directly (no finder, no training). A
``make_model`` that raises or returns something else, one that ignores ``width``, or a model that is not μP is a
one-line error naming what to do; the multipliers are read from the param groups; a trial's ``λ_base`` is the widest
decaying group's weight decay over its ``s``. (The same errors through ``TimescaleFinder.fit``:
``tests/tuner/test_finder_axes.py``.)"""

from __future__ import annotations

import re
from typing import Any

import lightning.pytorch as pl
import pytest
import torch

from lightning_tau.param_groups import build_param_groups
from lightning_tau.tuner.width_probe import check_mup, probe_width, record_lambda_base, width_mults


class Net(pl.LightningModule):
    """``4 -> width -> 2``; AdamW over :func:`build_param_groups` with ``width_mult`` (``None``: plain groups)."""

    def __init__(self, width: int, width_mult: float | None = None) -> None:
        super().__init__()
        self.inp, self.out = torch.nn.Linear(4, width), torch.nn.Linear(width, 2)
        self.width_mult = width_mult

    def configure_optimizers(self) -> torch.optim.Optimizer:
        mult = None if self.width_mult is None else {"out": self.width_mult}
        return torch.optim.AdamW(build_param_groups(self, weight_decay=0.1, lr=1e-3, width_mult=mult), lr=1e-3)


class NeedsTrainer(Net):
    def configure_optimizers(self) -> torch.optim.Optimizer:
        _ = self.trainer.max_epochs  # a probe has no trainer
        return super().configure_optimizers()


def test_refuses_factory_raises_or_returns_no_lightning_module() -> None:
    def broken(width: int) -> Any:
        raise RuntimeError("no such width")

    with pytest.raises(ValueError, match=re.escape("make_model(8) raised RuntimeError: no such width. `fit` needs")):
        probe_width(broken, 8)
    with pytest.raises(TypeError, match=re.escape("make_model(8) must return a LightningModule, got 'Linear'.")):
        probe_width(lambda width: torch.nn.Linear(width, 2), 8)
    assert isinstance(probe_width(Net, 8), Net)


def test_mults_read_from_decaying_param_groups() -> None:
    assert width_mults(Net(32, width_mult=4.0)) == [1.0, 4.0]  # the plain weights at s = 1, the readout's at 4
    assert width_mults(Net(32)) == [1.0]  # plain groups: one decaying group at s = 1
    assert width_mults(NeedsTrainer(32)) is None  # cannot be read without a trainer


def test_check_mup_refuses_factory_ignores_width() -> None:
    with pytest.raises(ValueError, match=re.escape("make_model(8) and make_model(32) build parameters of the same")):
        check_mup({8: Net(8), 32: Net(8)})


def test_check_mup_refuses_model_whose_every_multiplier_one() -> None:
    with pytest.raises(ValueError, match=re.escape("make_model(32) is not μP: every decaying weight has width")):
        check_mup({8: Net(8), 32: Net(32)})
    check_mup({8: Net(8, width_mult=1.0), 32: Net(32, width_mult=4.0)})  # s = 4 somewhere: accepted


def test_record_lambda_base_widest_decaying_groups_decay_over_s() -> None:
    record = {
        "groups": {
            "decay": {"decays": True, "width_mult": 1.0, "weight_decay": 0.2},
            "decay_s4": {"decays": True, "width_mult": 4.0, "weight_decay": 1.0},
            "no_decay_s8": {"decays": False, "width_mult": 8.0, "weight_decay": 0.0},
        }
    }
    assert record_lambda_base(record) == (0.25, 4.0)
    plain = {"groups": {"decay": {"decays": True, "weight_decay": 0.3}, "other": {"decays": False}}}
    assert record_lambda_base(plain) == (0.3, 1.0)  # no width_mult: s = 1
