"""``lightning-tau find``: on digits with tiny flags, its JSON, reuse, ``--config`` with a LightningCLI YAML, errors."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")
pytest.importorskip("jsonargparse")
yaml = pytest.importorskip("yaml")

import optuna  # noqa: E402
import torch  # noqa: E402

from lightning_tau.cli import main  # noqa: E402
from lightning_tau.cli.config import load_config  # noqa: E402
from lightning_tau.demos.digits import DigitsDataModule, DigitsMLP  # noqa: E402
from lightning_tau.tuner.study.grid_study import study_folder  # noqa: E402
from lightning_tau.tuner.workers import cores  # noqa: E402

CONFIGS = Path(__file__).resolve().parents[2] / "examples" / "configs"
TINY = ["--epochs", "2", "--tau-epochs", "2", "8", "32", "--seeds", "0", "--no-progress"]


@pytest.mark.slow
def test_find_on_digits_prints_suggestion_and_writes_json_and_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    out, json_path = tmp_path / "find", tmp_path / "result.json"
    assert main(["find", *TINY, "--out", str(out), "--json", str(json_path), "--threads", "auto"]) == 0
    printed = capsys.readouterr().out
    data = json.loads(json_path.read_text())
    auto = min(torch.get_num_threads(), cores())  # cores // 1 worker, at most what torch was set to
    assert f"torch threads per process: {auto} (threads='auto': {cores()} cores // 1 worker" in caplog.text
    # the demo's task: N=1400, B=64, lr=3e-3; the subset is a quarter of it: 350 samples, ceil(350/64)=6 steps
    assert (data["dataset_size"], data["subset_size"], data["batch_size"], data["epochs"]) == (1400, 350, 64, 2)
    assert data["fraction"] == 0.25 and data["monitor"] == "val/loss" and data["reduce"] == "last"
    runs = len(data["curve"])  # the grid given, 2 8 32, and the points the grid extension added to it
    added = [p["tau_epoch"] for p in data["grid_added"]]
    assert [p["tau_epoch"] for p in data["curve"]] == sorted([2.0, 8.0, 32.0, *added])
    assert data["cost"] == runs * 2 * 6 and data["full_cost"] == runs * 2 * 22
    assert all(len(p["values"]) == 1 and math.isfinite(p["mean"]) for p in data["curve"])
    assert set(data["weight_decay"]) == {"decay"}  # biases and norms (no_decay) stay at 0
    assert data["weight_decay"]["decay"] == pytest.approx(1 / (3e-3 * data["tau_epoch"] * 22))
    assert data["curve"][0]["tau_epoch"] <= data["tau_epoch"] <= data["curve"][-1]["tau_epoch"]
    (name,) = [line.split()[1] for line in printed.splitlines() if line.startswith("Study: ")]
    assert name.startswith("tau_finder_") and f"Study: {name} (in {out / 'study.journal'})" in printed
    for text in (
        "Suggested tau_epoch:",
        "Weight decay for the full run (N=1400, B=64, 22 steps per epoch)",
        f"Cost: {runs * 12} optimizer steps, 27% of the {runs * 44}",
        f"JSON: {json_path}",
        f"Figure: {out / name / 'tau_finder.png'}",  # in the study's own folder
        f"tensorboard --logdir {out / 'tb'}",
    ):
        assert text in printed, text
    figure = (out / name / "tau_finder.png").read_bytes()
    assert figure[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "study.journal").is_file() and not (out / "runs").exists()

    # again: every trial is reused, the same answer, the JSON by default in OUT/STUDY/finder.json
    assert main(["find", *TINY, "--out", str(out)]) == 0
    assert f"({runs} of {runs} trials were complete in the study before this command.)" in capsys.readouterr().out
    assert json.loads((out / name / "finder.json").read_text()) == data

    # another study in the same --out writes beside the first (its name made a plain folder), not over it
    assert main(["find", *TINY, "--out", str(out), "--study", "../other"]) == 0
    printed = capsys.readouterr().out
    assert (
        "Study: ../other (in" in printed and f"Figure: {out / study_folder('../other') / 'tau_finder.png'}" in printed
    )
    assert (out / name / "tau_finder.png").read_bytes() == figure and (out / name / "finder.json").is_file()
    assert sorted(p.parent.parent for p in tmp_path.rglob("tau_finder.png")) == [out, out]


def _tiny_config(tmp_path: Path, **trainer: object) -> Path:
    config = {
        "seed_everything": 0,
        "trainer": {"accelerator": "cpu", "devices": 1, **trainer},
        "model": {"class_path": "lightning_tau.demos.digits.DigitsMLP", "init_args": {"hidden": 16, "depth": 1}},
        "data": {
            "class_path": "lightning_tau.demos.digits.DigitsDataModule",
            "init_args": {"train_size": 200, "batch_size": 32},
        },
    }
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.slow
def test_find_with_lightning_cli_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    callbacks = [{"class_path": "lightning_tau.TimescaleCallback", "init_args": {"tau_epoch": 5.0}}]
    config = _tiny_config(tmp_path, max_epochs=2, callbacks=callbacks)
    out = tmp_path / "find"
    argv = ["find", "--config", str(config), "--monitor", "val/loss", "--fraction", "0.5", "--tau-epochs", "1", "4"]
    assert main([*argv, "--seeds", "0", "--out", str(out), "--no-plot", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "Not carried over from" in printed and "trainer.callbacks" in printed
    (data_path,) = out.glob("*/finder.json")
    data = json.loads(data_path.read_text())
    # the config's model and data: N=200, B=32, trainer.max_epochs=2; the subset is half: 100 samples, 4 steps
    assert (data["dataset_size"], data["subset_size"], data["batch_size"], data["epochs"]) == (200, 100, 32, 2)
    assert data["cost"] == 2 * 2 * 4 and data["full_cost"] == 2 * 2 * 7
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(out / "study.journal")))
    (summary,) = optuna.get_all_study_summaries(storage)
    settings = summary.user_attrs["lightning_tau"]["settings"]
    assert settings["model"]["class"] == "lightning_tau.demos.digits.DigitsMLP"
    assert settings["model"]["hparams"]["hidden"] == 16
    assert not list(out.rglob("tau_finder.png"))


def test_config_without_max_epochs_and_missing_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["find", "--config", str(_tiny_config(tmp_path)), "--out", str(tmp_path / "o")]) == 2
    assert "sets no trainer.max_epochs" in capsys.readouterr().err
    assert main(["find", "--config", str(tmp_path / "nope.yaml")]) == 2
    assert "is not a file" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    # a password in --storage gets its one-line note first (test_cli_find_errors checks it); the error is one line
    err = "\n".join(line for line in lines if not line.startswith("lightning-tau find: note: the password"))
    assert err.startswith("lightning-tau find: error: ") and "\n" not in err and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("model:\n  init_args:\n    hiddn: 3\n", "Option 'hiddn' is not accepted"),
        # DigitsMLP checks hidden now (was torch's "Trying to create tensor with negative dimension -3")
        ("model:\n  init_args:\n    hidden: -3\n", "`DigitsMLP(hidden=-3)` is not valid: use a positive integer. Fix"),
        ("trainer: [\n", "Problems parsing config"),
    ],
)
def test_bad_config_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    config = yaml.safe_load(_tiny_config(tmp_path, max_epochs=1).read_text())
    if text.startswith("model"):
        config["model"]["init_args"].update(yaml.safe_load(text)["model"]["init_args"])
        config["model"]["init_args"].pop("hidden") if "hiddn" in text else None
        bad = tmp_path / "bad.yaml"
        bad.write_text(yaml.safe_dump(config))
    else:
        bad = tmp_path / "bad.yaml"
        bad.write_text(text)
    assert main(["find", "--config", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = _one_line_error(capsys)
    assert f"--config '{bad}': " in err and expected in err and "Fix the config" in err
    assert not (tmp_path / "o" / "study.journal").exists()


def test_unwritable_out_json_and_storage_fail_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    out = ["--out", str(tmp_path / "o")]
    for argv, expected in [
        (["--out", str(blocker / "sub")], f"argument --out: cannot write to '{blocker / 'sub'}': "),
        ([*out, "--json", str(blocker / "r.json")], f"argument --json: cannot write to '{blocker / 'r.json'}': "),
        ([*out, "--json", str(tmp_path)], "argument --json: cannot write to"),
        ([*out, "--storage", str(blocker / "s.journal")], "argument --storage: "),
        ([*out, "--storage", "postgresql://tau:hunter2@127.0.0.1:1/db"], "'postgresql://tau:***@127.0.0.1:1/db'"),
    ]:
        assert main(["find", *TINY, *argv]) == 2, argv
        err = _one_line_error(capsys)
        assert expected in err and "hunter2" not in err, err
    assert not (tmp_path / "o" / "study.journal").exists() and not (tmp_path / "o" / "tb").exists()


def test_timescale_beyond_float_usage_error_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the subset (350 samples, B=64) has 6 steps per epoch: tau_epoch=1e308 is inf steps, which no weight decay gives
    out = tmp_path / "o"
    argv = ["find", "--epochs", "1", "--tau-epochs", "2", "8", "1e308", "--seeds", "0", "--out", str(out)]
    assert main([*argv, "--no-progress"]) == 2
    err = _one_line_error(capsys)
    expected = "argument --tau-epochs: `TimescaleFinder(tau_epochs=[2.0, 8.0, 1e+308])` is not valid: tau_epoch=1e+308"
    assert expected in err
    assert "inf optimizer steps at M=6 steps per epoch of the subset" in err and "below 2.996e+307" in err
    assert not (out / "tb").exists() and not (out / "study.journal").exists()  # nothing trained, no study


@pytest.mark.slow
def test_reports_monitor_model_not_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a usage error (exit 2, one line naming --monitor and what the model logs) at the first trial's first validation
    config = _tiny_config(tmp_path, max_epochs=3)
    out = tmp_path / "o"
    argv = ["find", "--config", str(config), "--tau-epochs", "4", "8", "--seeds", "0", "--out", str(out)]
    assert main([*argv, "--monitor", "val_los", "--no-progress"]) == 2
    err = _one_line_error(capsys)
    assert "argument --monitor: 'val_los' is not a metric the model logs at validation" in err and "val/loss" in err
    trials = [p for p in (out / "tb").rglob("events.out.tfevents.*")]
    assert len({p.parent for p in trials}) <= 1  # the first trial only: the rest of the grid never started


def test_example_find_config_loads_fresh_models() -> None:
    factory, datamodule, trainer_kwargs, notes = load_config(CONFIGS / "find_digits.yaml")
    first, second = factory(), factory()
    assert isinstance(first, DigitsMLP) and first is not second and first.hparams["hidden"] == 128
    assert isinstance(datamodule, DigitsDataModule) and datamodule.train_size == 1400
    assert trainer_kwargs["max_epochs"] == 40 and trainer_kwargs["accelerator"] == "cpu"
    assert notes == []


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--fraction", "0"], "argument --fraction: expected a number in (0, 1], got '0'"),
        (["--fraction", "1.5"], "argument --fraction: expected a number in (0, 1], got '1.5'"),
        (["--tau-epochs", "-1"], "argument --tau-epochs: expected a positive finite number, got '-1'"),
        (["--seeds", "x"], "argument --seeds: expected an integer from 0 to 4294967295, got 'x'"),
        (["--seeds", "0", "-1"], "argument --seeds: expected an integer from 0 to 4294967295, got '-1'"),
        (["--seeds", "4294967296"], "argument --seeds: expected an integer from 0 to 4294967295, got '4294967296'"),
        (["--epochs", "0"], "argument --epochs: expected a positive integer, got '0'"),
        (["--reduce", "mean"], "argument --reduce: invalid choice: 'mean'"),
        (["--beta2", "hold"], "argument --beta2: invalid choice: 'hold'"),
    ],
)
def test_rejects_bad_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["find", "--out", str(tmp_path / "o"), *argv])
    assert exit_info.value.code == 2
    assert expected in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_help_names_beta2_choices_and_what_both_runs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["find", "--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--beta2 {fixed,held,both}" in text
    assert (
        "fixed (the optimizer's), held in samples (β₂^(B / B_0)), or both: the sweep fixed, then the largest batch's"
        " best tau_epoch held too, with each choice's paired cost (default fixed)"
    ) in text


@pytest.mark.slow
def test_help_from_console_script() -> None:
    script = Path(sys.executable).parent / ("lightning-tau.exe" if os.name == "nt" else "lightning-tau")
    assert script.exists(), f"console script {script} is missing: install the package (`make test` does)"
    proc = subprocess.run([str(script), "find", "--help"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for option in ("--config", "--fraction", "--tau-epochs", "--seeds", "--json", "--out", "--monitor"):
        assert option in proc.stdout
