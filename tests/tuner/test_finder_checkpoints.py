"""``TimescaleFinder`` with a ``ModelCheckpoint`` in ``trainer_kwargs["callbacks"]``: every run saves its checkpoints
in its own folder; a ``dirpath`` that every run would share is refused at construction (real fits)."""

from __future__ import annotations

from pathlib import Path

import pytest
from finder_study import fit_finder, make_finder
from lightning.pytorch.callbacks import ModelCheckpoint
from optuna.trial import TrialState


@pytest.mark.slow
def test_model_checkpoint_saves_each_runs_checkpoint_in_own_folder(tmp_path: Path) -> None:
    checkpoint = ModelCheckpoint(monitor="val_loss", save_top_k=1)
    finder = make_finder(
        tmp_path, tau_epochs=(1.0, 4.0, 16.0), trainer_kwargs={"max_epochs": 2, "callbacks": [checkpoint]}
    )
    fit_finder(finder)
    assert finder.study is not None
    assert [t.state for t in finder.study.study.trials] == [TrialState.COMPLETE] * 3
    saved = sorted((tmp_path / "finder" / "tb").rglob("*.ckpt"))
    assert len(saved) == 3 and len({path.parent for path in saved}) == 3, saved


def test_model_checkpoint_with_dirpath_every_run_shares_refused(tmp_path: Path) -> None:
    checkpoint = ModelCheckpoint(dirpath=tmp_path / "ckpt", monitor="val_loss")
    with pytest.raises(
        ValueError, match=r"^`TimescaleFinder\(trainer_kwargs=\{'callbacks': \[ModelCheckpoint\(dirpath="
    ):
        make_finder(tmp_path, trainer_kwargs={"max_epochs": 2, "callbacks": [checkpoint]})
    assert not (tmp_path / "ckpt").exists()
