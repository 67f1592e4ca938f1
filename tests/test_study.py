"""``lightning_tau.tuner.study``: the finder's grid study — where a study's name may lead its trials' folders, the
held trials a stopped process gives back, and a study whose settings are not written yet (real Optuna, real fits)."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from helpers.finder_study import fit_finder, journal_study, make_finder

from lightning_tau.cli import main
from lightning_tau.tuner.study import study_folder

#: Study names a shared config or a job array may carry that are not one plain folder name.
UNSAFE_NAMES = ["../escape", "..", ".", "a/b", "/abs", "a\\b", "tab\there", "nl\nx", ".hidden", "x" * 300, ""]


@pytest.mark.parametrize("name", UNSAFE_NAMES)
def test_a_study_folder_is_one_component_inside_tb(tmp_path: Path, name: str) -> None:
    tb = tmp_path / "tb"
    folder = study_folder(name)
    assert (tb / folder).resolve().parent == tb.resolve(), folder
    assert folder not in ("", ".", "..") and "/" not in folder and "\\" not in folder
    assert folder.isprintable() and not folder.startswith(".") and len(folder) <= 120


def test_study_folders_of_different_names_differ_and_plain_names_stay() -> None:
    folders = [study_folder(name) for name in [*UNSAFE_NAMES, "a_b", "a/b/", "_abs", "abs"]]
    assert len(set(folders)) == len(folders), folders
    for plain in ["s", "tau_finder_1a2b", "mine_width=64", "t_dataset_size=0.25", "run-3.v2"]:
        assert study_folder(plain) == plain


def _files(folder: Path) -> set[Path]:
    return {path for path in folder.rglob("*") if path.is_file()}


def test_a_finder_study_named_dotdot_writes_only_under_root_dir(tmp_path: Path) -> None:
    root = tmp_path / "deep" / "finder"
    finder = make_finder(tmp_path, root_dir=root, study_name="../x", tau_epochs=(1.0, 4.0, 16.0))
    fit_finder(finder)
    assert journal_study(finder).study_name == "../x"  # Optuna's name is the given one
    outside = {path for path in _files(tmp_path) if root not in path.parents}
    assert not outside, outside
    (folder,) = (root / "tb").iterdir()
    assert folder.name == study_folder("../x") and len(list(folder.iterdir())) == 3


@pytest.mark.slow
def test_find_with_study_names_that_are_paths_writes_only_under_out(tmp_path: Path) -> None:
    out = tmp_path / "runs" / "out"
    absolute = str(tmp_path / "abs")  # a name like /abs, inside this test's folder
    names = [absolute, "../escape", "..", "a/b"]
    for name in names:
        tiny = ["--epochs", "1", "--tau-epochs", "2", "8", "32", "--seeds", "0", "--no-progress", "--no-plot"]
        assert main(["find", *tiny, "--study", name, "--out", str(out)]) == 0
    outside = {path for path in _files(tmp_path) if out not in path.parents}
    assert not outside, outside
    assert sorted(p.name for p in (out / "tb").iterdir()) == sorted(study_folder(name) for name in names)
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(out / "study.journal")))
    assert sorted(optuna.get_all_study_names(storage)) == sorted(names)
