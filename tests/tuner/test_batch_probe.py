"""``lightning_tau.tuner.batch_probe``: how the batch-size axis sets a point's batch (the model's ``batch_size``, else
accumulation), finds the lr to scale, rebuilds the loader, and holds ``β₂`` in samples (a real one-step fit)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from lightning_tau.errors import TimescaleError
from lightning_tau.tuner.batch_probe import (
    ACCUMULATION,
    ATTRIBUTE,
    BatchedModel,
    HeldBeta2,
    adam_beta2s,
    batch_setting,
    check_held_beta2,
    lr_attribute,
    rebatched,
)


class _Net(pl.LightningModule):
    def __init__(self, lr: float = 0.01, beta2: float = 0.999, **extra: Any) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(2, 1)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        return self.layer(batch[0]).pow(2).mean()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, betas=(0.9, self.hparams.beta2))


def _loader(batch_size: int = 4, shuffle: bool = True) -> DataLoader:
    return DataLoader(TensorDataset(torch.randn(16, 2)), batch_size=batch_size, shuffle=shuffle)


def test_set_on_model_where_it_has_batch_size_else_accumulated() -> None:
    assert batch_setting(_Net(batch_size=4), 4, (8, 12)) == ATTRIBUTE  # an hparam, as BatchSizeFinder reads it
    assert batch_setting(_Net(), 4, (8, 16)) == ACCUMULATION
    with pytest.raises(TimescaleError) as err:
        batch_setting(_Net(), 4, (8, 10))
    assert str(err.value).startswith(
        "`TimescaleFinder(batch_sizes=[8, 10])`: 10 is not a whole multiple of the train loader's batch_size 4"
    )
    assert "\n" not in str(err.value)


def test_lr_found_as_lightnings_lr_finder_finds_it_else_one_line() -> None:
    assert lr_attribute(_Net(), "sqrt") == "lr"

    class NoLr(pl.LightningModule):
        pass

    with pytest.raises(TimescaleError, match=r"^`TimescaleFinder\(lr_scaling='sqrt'\)` needs the model's learning"):
        lr_attribute(NoLr(), "sqrt")


def test_point_model_gets_batch_and_scaled_lr() -> None:
    model = BatchedModel(lambda: _Net(lr=0.01, batch_size=4), 16, "lr", 2.0)()
    assert model.hparams.batch_size == 16 and model.hparams.lr == pytest.approx(0.02)
    same = BatchedModel(_Net, None, None, 1.0)()
    assert "batch_size" not in same.hparams and same.hparams.lr == 0.01


def test_point_model_logs_batch_and_lr_it_trains_with() -> None:
    # the hparams Lightning's loggers log (hparams_initial: TensorBoard's hparams, hparams.yaml) are those in force
    model = BatchedModel(lambda: _Net(lr=0.01, batch_size=4), 16, "lr", 2.0)()
    assert model.hparams_initial["batch_size"] == 16 and model.hparams_initial["lr"] == pytest.approx(0.02)
    kept = BatchedModel(lambda: _Net(lr=0.01, batch_size=4), None, "lr", 1.0)()  # nothing set: as built
    assert kept.hparams_initial["batch_size"] == 4 and kept.hparams_initial["lr"] == 0.01

    class Plain(pl.LightningModule):  # an lr that is an attribute only: no hparam to log, none added
        def __init__(self) -> None:
            super().__init__()
            self.lr = 0.01

    plain = BatchedModel(Plain, None, "lr", 2.0)()
    assert plain.lr == pytest.approx(0.02) and "lr" not in plain.hparams_initial


@pytest.mark.slow
def test_trials_logged_hparams_hold_scaled_lr_and_batch(tmp_path: Path) -> None:
    import yaml
    from axes_models import LR, PlantedBatchModel, PlantedData

    from lightning_tau.tuner.finder import TimescaleFinder

    finder = TimescaleFinder(
        axis="batch_size", batch_sizes=(16, 64), lr_scaling="sqrt", fraction=1.0, tau_epochs=[2, 6, 18], seeds=[0],
        monitor="val_loss", trainer_kwargs={"max_epochs": 1, "accelerator": "cpu", "devices": 1}, root_dir=tmp_path,
        progress=False, verbose=False, max_grid_extensions=0,
    )
    finder.fit(PlantedBatchModel, datamodule=PlantedData())
    (study,) = [s for s in finder.studies if s.study.study_name.endswith("=64")]
    (trial, *_) = study.study.trials
    trained = trial.user_attrs["record"]["groups"]["decay"]["lr"]  # the lr the optimizer had
    assert trained == pytest.approx(2 * LR)  # (64 / 16) ** 0.5
    logged = [yaml.safe_load(f.read_text()) for f in tmp_path.glob(f"tb/{study.study.study_name}/*/hparams.yaml")]
    assert len(logged) == 3 and all(h["lr"] == pytest.approx(trained) and h["batch_size"] == 64 for h in logged)


def test_rebatched_loader_keeps_data_and_shuffling_at_new_batch() -> None:
    loader = rebatched(_loader(4), 8)
    assert loader.batch_size == 8 and len(loader) == 2 and isinstance(loader.sampler, torch.utils.data.RandomSampler)
    assert isinstance(rebatched(_loader(4, shuffle=False), 8).sampler, torch.utils.data.SequentialSampler)


class _Steps(pl.Callback):
    def __init__(self) -> None:
        self.steps = 0

    def on_train_batch_end(self, *args: Any) -> None:
        self.steps += 1


def _fit(model: pl.LightningModule, held: HeldBeta2, tmp_path: Any, steps: _Steps | None = None) -> pl.Trainer:
    trainer = pl.Trainer(
        max_steps=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[held, *([steps] if steps is not None else [])],
        default_root_dir=tmp_path,
    )
    trainer.fit(model, train_dataloaders=_loader())
    return trainer


@pytest.mark.slow
def test_held_beta2_raises_it_to_batch_ratio_at_train_start(tmp_path: Any) -> None:
    trainer = _fit(_Net(beta2=0.99), HeldBeta2(4.0, 8.0), tmp_path)
    assert trainer.optimizers[0].param_groups[0]["betas"] == (0.9, pytest.approx(0.99**4))
    same = _fit(_Net(beta2=0.99), HeldBeta2(1.0, 8.0, "both"), tmp_path)  # beta2="both"'s sweep: checked, kept
    assert same.optimizers[0].param_groups[0]["betas"] == (0.9, 0.99)


@pytest.mark.slow
@pytest.mark.parametrize("ratio", [1.0, 2.0])
def test_held_beta2_refuses_what_largest_batch_cannot_use_before_step(tmp_path: Any, ratio: float) -> None:
    # 1e-200 held at x2 is 1e-200 (usable) and at x1 is itself; at the largest batch (x4) it is 0.0: refused at the
    # train start of whichever batch starts first, before it trains a step
    steps = _Steps()
    with pytest.raises(TimescaleError) as err:
        _fit(_Net(beta2=1e-200), HeldBeta2(ratio, 4.0, "both"), tmp_path, steps)
    assert str(err.value).startswith(
        "`TimescaleFinder(beta2='both')`: the optimizer's β₂ = 1e-200 held in samples at the largest batch (4 times"
        " the smallest) is 0.0, which Adam cannot use (it must lie in (0, 1)): give the optimizer a β₂ nearer 1"
    )
    assert "\n" not in str(err.value) and steps.steps == 0


def test_check_held_beta2_refuses_rounding_to_one_or_zero_in_one_line() -> None:
    check_held_beta2([0.999, 0.95], 4096.0, "held")  # 0.95^4096 = 1e-91: small, still in (0, 1)
    check_held_beta2([0.9999999], 4096.0, "held")
    for value, largest, held, what in [(1.0, 4.0, "1.0", "below 1 (β₂^4 must stay below 1)"),
                                       (0.5, 1100.0, "0.0", "nearer 1 (β₂^1100 must stay above 0)")]:
        with pytest.raises(TimescaleError) as err:
            check_held_beta2([0.999, value], largest, "held")
        assert str(err.value) == (
            f"`TimescaleFinder(beta2='held')`: the optimizer's β₂ = {value!r} held in samples at the largest batch"
            f" ({largest:g} times the smallest) is {held}, which Adam cannot use (it must lie in (0, 1)): give the"
            f" optimizer a β₂ {what}, a narrower batch_sizes range, or beta2='fixed'."
        )


def test_adam_beta2s_reads_every_group_with_betas() -> None:
    adam = torch.optim.AdamW([{"params": [torch.zeros(1)]}, {"params": [torch.zeros(1)], "betas": (0.9, 0.95)}])
    sgd = torch.optim.SGD([torch.zeros(1)], lr=0.1)
    assert adam_beta2s([adam, sgd]) == [0.999, 0.95]
