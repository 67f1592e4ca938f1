"""The finder study's set-ups: a real fit whose metric is a known function of the timescale (``CurveModel``), a
small finder over it, its journal study, and copies of that study with some trials changed."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import optuna
import sqlalchemy
import torch
from optuna.trial import TrialState
from torch.utils.data import DataLoader, TensorDataset

from lightning_tau.param_groups import build_param_groups
from lightning_tau.tuner.finder import TimescaleFinder
from lightning_tau.tuner.study.grid_study import SETTINGS_ATTR

N, BATCH, LR, TRUE_TAU = 64, 16, 1e-2, 6.0


class CurveModel(pl.LightningModule):
    """A real fit whose validation metric is a known function of the timescale the callback set:
    ``val_loss = 1 + (log tau_epoch - log 6)^2``, ``tau_epoch = 1 / (lr * wd * M)`` read from the optimizer."""

    def __init__(self, sign: float = 1.0) -> None:
        super().__init__()
        self.sign = sign
        self.net = torch.nn.Linear(4, 2)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        group = next(g for g in self.trainer.optimizers[0].param_groups if g["weight_decay"] > 0)
        tau = 1.0 / (group["lr"] * group["weight_decay"] * self.trainer.num_training_batches)
        loss = 1.0 + (math.log(tau) - math.log(TRUE_TAU)) ** 2
        self.log("val_loss", self.sign * loss)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(build_param_groups(self, weight_decay=0.1), lr=LR)


def curve_loaders() -> tuple[DataLoader, DataLoader]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(N, 4, generator=g)
    data = TensorDataset(x, (x[:, 0] > 0).long())
    return DataLoader(data, batch_size=BATCH, shuffle=True), DataLoader(data, batch_size=N)


def make_finder(tmp_path: Path, **kwargs: Any) -> TimescaleFinder:
    settings: dict[str, Any] = dict(
        fraction=0.5,
        tau_epochs=(1.0, 4.0, 16.0, 64.0),
        seeds=(0,),
        trainer_kwargs={"max_epochs": 1, "accelerator": "cpu", "devices": 1},
        root_dir=tmp_path / "finder",
        progress=False,
        verbose=False,
    )
    settings.update(kwargs)
    return TimescaleFinder(**settings)


def fit_finder(finder: TimescaleFinder, model: Any = CurveModel, **kwargs: Any) -> Any:
    train, val = curve_loaders()
    return finder.fit(model, train_dataloaders=train, val_dataloaders=val, **kwargs)


def journal_study(finder: TimescaleFinder) -> optuna.Study:
    assert finder.study is not None
    return finder.study.study


def copy_study(source: optuna.Study, path: Path, change: dict[tuple[float, int], Any]) -> None:
    """A new journal holding ``source``'s study, with some grid points' trials replaced (``change``)."""
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(path)))
    copy = optuna.create_study(storage=storage, study_name=source.study_name)
    copy.set_user_attr(SETTINGS_ATTR, source.user_attrs[SETTINGS_ATTR])
    for trial in source.trials:
        key = (trial.user_attrs["tau_epoch"], trial.user_attrs["seed"])
        copy.add_trial(change[key](trial) if key in change else trial)


def with_attrs(trial: optuna.trial.FrozenTrial, **attrs: Any) -> optuna.trial.FrozenTrial:
    state = attrs.pop("state", TrialState.COMPLETE)
    user_attrs = {**trial.user_attrs, **attrs}
    if "record" in attrs and attrs["record"] is DROP:
        del user_attrs["record"]
    return optuna.trial.create_trial(
        state=state,
        value=trial.value if state == TrialState.COMPLETE else None,
        params=trial.params,
        distributions=trial.distributions,
        user_attrs=user_attrs,
    )


DROP = object()


class StoredStudy:
    """The study ``s`` in a database, read with the superuser's URL once a command has created it: calling it gives
    the study, or None while no command has created it yet (the PostgreSQL tests of the finder and its signals)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = sqlalchemy.create_engine(url)
        self.storage: optuna.storages.RDBStorage | None = None

    def __call__(self) -> optuna.Study | None:
        if self.storage is None:
            try:
                with self.engine.connect() as conn:
                    found = conn.execute(sqlalchemy.text("SELECT 1 FROM studies WHERE study_name = 's'")).first()
            except sqlalchemy.exc.ProgrammingError:  # no tables yet: creating them is the commands' job
                return None
            if found is None:
                return None
            self.storage = optuna.storages.RDBStorage(self.url)
        return optuna.load_study(study_name="s", storage=self.storage)
