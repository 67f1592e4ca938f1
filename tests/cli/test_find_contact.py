"""``lightning-tau find`` as a new user meets it (issue 21): a model module in the working directory, ``--study NAME``
alone reopening a study, and usage errors exiting with 2."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import optuna
import pytest

pytest.importorskip("sklearn")
pytest.importorskip("jsonargparse")
yaml = pytest.importorskip("yaml")

from lightning_tau.cli import main  # noqa: E402

TINY = ["--epochs", "2", "--tau-epochs", "2", "8", "32", "--seeds", "0", "--no-progress", "--no-plot"]


@pytest.mark.slow
def test_config_imports_model_module_from_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "contact_cwd_model.py").write_text(
        "from lightning_tau.demos.digits import DigitsMLP\n\n\nclass MyMLP(DigitsMLP):\n    pass\n"
    )
    config = {
        "trainer": {"accelerator": "cpu", "devices": 1, "max_epochs": 1},
        "model": {"class_path": "contact_cwd_model.MyMLP", "init_args": {"hidden": 8, "depth": 1}},
        "data": {
            "class_path": "lightning_tau.demos.digits.DigitsDataModule",
            "init_args": {"train_size": 200, "batch_size": 32},
        },
    }
    (tmp_path / "find.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.chdir(tmp_path)
    # as the console script runs: the working directory is not on sys.path ("" would be, under `python -m`)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", str(tmp_path), os.getcwd())])
    argv = ["find", "--config", "find.yaml", "--monitor", "val/loss", "--tau-epochs", "2", "8", "--seeds", "0"]
    assert main([*argv, "--out", "o", "--no-plot", "--no-progress"]) == 0, capsys.readouterr().err
    (found,) = (tmp_path / "o").glob("*/finder.json")  # OUT/STUDY/finder.json
    data = json.loads(found.read_text())
    assert data["dataset_size"] == 200
    assert "contact_cwd_model" in sys.modules


@pytest.mark.slow
def test_study_name_alone_reopens_study_with_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "find"
    common = ["--out", str(out), "--no-progress", "--no-plot"]
    assert main(["find", *TINY, "--fraction", "0.2", "--study", "mlp", "--out", str(out)]) == 0
    first = json.loads((out / "mlp" / "finder.json").read_text())
    capsys.readouterr()

    assert main(["find", "--study", "mlp", *common]) == 0
    printed = capsys.readouterr().out
    assert "Reopening study 'mlp'" in printed and "--tau-epochs" in printed and "--fraction" in printed
    trials = len(first["curve"])  # TINY's 3 and the points the grid extension added
    assert f"({trials} of {trials} trials were complete in the study before this command.)" in printed
    assert json.loads((out / "mlp" / "finder.json").read_text()) == first

    # a setting given that the study does not hold: a usage error naming it
    assert main(["find", "--study", "mlp", "--fraction", "0.5", *common]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("lightning-tau find: error: argument --study:") and "fraction" in line

    # a study this command did not make
    optuna.create_study(
        study_name="theirs",
        storage=optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(out / "study.journal"))),
    )
    assert main(["find", "--study", "theirs", *common]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "'theirs'" in line and "not made by `lightning-tau find`" in line
