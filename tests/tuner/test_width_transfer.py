"""The finder's width axis and ``TimescaleCallback(width_exponent=...)`` share one definition (issue 36, item 3).

A real width axis (two widths, a planted best ``λ_base ∝ width^-1/2``) measures an exponent ``e != 0``; its
``AxisResult.callback_kwargs()`` give ``tau_epoch`` at ``s = 1`` and ``width_exponent = 1 + e``. At a held-out width
``W`` (model multiplier ``S``) the axis predicts the best ``tau_epoch`` ``t = tau_epoch * S ** -e``, a point of the
axis's own kind: a trial trained there with the trial's own callback (``TimescaleCallback(tau_epoch=t)``, exponent 1)
moves every decaying group's ``λ_base`` together. The callback built from the result must write, at every optimizer
step, exactly the weight decay that trial wrote into every group (hidden, readout, vectors): it applies what was
measured, not a rule that leaves the groups at ``s = 1`` behind.
"""

from __future__ import annotations

import functools
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import lightning.pytorch as pl
import mup
import pytest
import torch
from axes_models import BASE_WIDTH, PlantedData, PlantedWidthModel
from mup_models import MLP, mu_adamw
from torch import nn

from lightning_tau.tuner.analysis.axis_result import AxisResult
from lightning_tau.tuner.finder import TimescaleFinder
from lightning_tau.tuner.trial import run_trial

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:.*(1-D parameters|less than one EMA timescale|fixed-λ muP)"),
]

TRAINER = {"max_epochs": 2, "accelerator": "cpu", "devices": 1, "enable_model_summary": False}
TRAINER["num_sanity_val_steps"] = 0  # the planted model's validation reads the epoch length, unknown before fit
HELD_OUT = 16 * BASE_WIDTH  # S = 16: beyond the axis's widths (16 and 64, S = 2 and 8)


class WeightDecayLog(pl.Callback):
    """Per optimizer step, from a torch step post-hook: ``{group name: weight_decay}`` as the step used it."""

    def __init__(self) -> None:
        self.steps: list[dict[str, float]] = []
        self._handles: list[Any] = []

    def on_train_start(self, trainer: pl.Trainer, pl_module: Any) -> None:
        self._handles = [o.register_step_post_hook(self._post) for o in trainer.optimizers]

    def _post(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        groups = optimizer.param_groups
        self.steps.append({g.get("name", f"pg{j + 1}"): float(g["weight_decay"]) for j, g in enumerate(groups)})

    def on_train_end(self, trainer: pl.Trainer, pl_module: Any) -> None:
        for handle in self._handles:
            handle.remove()


class MupModel(pl.LightningModule):
    """Real mup: input (vector-like) -> LayerNorm -> hidden (matrix-like) -> ``MuReadout``, with ``MuAdamW``: one
    matrix-like group at ``lr / S``, one vector-like group (readout, input weight, biases, norm) at ``lr``."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = MLP(width)
        mup.set_base_shapes(self.net, MLP(BASE_WIDTH), delta=MLP(2 * BASE_WIDTH))

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        self.log("val_loss", nn.functional.cross_entropy(self.net(x), y))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return mu_adamw(self.net)


@pytest.fixture(scope="module")
def axis(tmp_path_factory: pytest.TempPathFactory) -> AxisResult:
    finder = TimescaleFinder(
        axis="width",
        widths=(2 * BASE_WIDTH, 8 * BASE_WIDTH),
        tau_epochs=(4.0, 8.0, 16.0, 32.0),
        seeds=(0, 1),  # two seeds: an interval, so the callback applies the measured exponent (none without one)
        fraction=1.0,
        trainer_kwargs={"max_epochs": 1, "accelerator": "cpu", "devices": 1},
        root_dir=tmp_path_factory.mktemp("axis"),
        progress=False,
        verbose=False,
    )
    # planted best λ_base ∝ width^-1/2 (Fan et al.) with no seed offset: best tau_epoch 8.5 at S = 2, 17 at S = 8
    return finder.fit(functools.partial(PlantedWidthModel, exponent=-0.5, spread=0.0), datamodule=PlantedData())


@pytest.mark.parametrize(
    "make_model",
    [functools.partial(PlantedWidthModel, exponent=-0.5, spread=0.0), MupModel],
    ids=["build_param_groups", "mup"],
)
def test_callback_writes_what_width_axis_trial_wrote_into_every_group(
    axis: AxisResult, make_model: Any, tmp_path: Path
) -> None:
    kwargs = axis.callback_kwargs()
    assert axis.exponent_used == pytest.approx(-0.5, abs=0.2) and axis.exponent_used != 0.0  # a real exponent
    assert kwargs["width_exponent"] == 1.0 + axis.exponent_used
    s = HELD_OUT / BASE_WIDTH
    t = kwargs["tau_epoch"] * s ** (1.0 - kwargs["width_exponent"])  # the axis's best tau_epoch at the held-out width
    data = PlantedData()

    trial_log = WeightDecayLog()
    record = run_trial(
        functools.partial(make_model, HELD_OUT),
        data.train_dataloader(),
        data.val_dataloader(),
        tau_epoch=t,
        seed=0,
        monitor="val_loss",
        trainer_kwargs={**TRAINER, "callbacks": [trial_log]},
        log_dir=tmp_path,
        log_name="trial",
        bar=SimpleNamespace(update=lambda n: None),
    )
    callback_log = WeightDecayLog()
    pl.seed_everything(0, verbose=False)
    trainer = pl.Trainer(
        callbacks=[axis.callback(verbose=False), callback_log], logger=False, enable_checkpointing=False, **TRAINER
    )
    trainer.fit(make_model(HELD_OUT), datamodule=data)

    steps = 2 * len(data.train_dataloader())  # two epochs: the epoch-1 re-decision takes the same path
    assert len(trial_log.steps) == len(callback_log.steps) == steps
    decaying = {name for name, g in record["groups"].items() if g["decays"]}
    mults = {name: g["width_mult"] or 1.0 for name, g in record["groups"].items()}
    assert {mults[n] for n in decaying} == {1.0, s}  # a hidden group at S and a group at s = 1 both decay
    for step, (trial, applied) in enumerate(zip(trial_log.steps, callback_log.steps)):
        assert applied.keys() == trial.keys()
        for name in trial:
            assert applied[name] == pytest.approx(trial[name], rel=1e-12, abs=0.0), (step, name)
        assert all(trial[n] > 0 for n in decaying)
