"""``TimescaleCallback`` under ``LightningCLI``: real jsonargparse parsing of real YAML and flags."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("jsonargparse")
yaml = pytest.importorskip("yaml")
pytest.importorskip("sklearn")

from lightning.pytorch.cli import LightningCLI  # noqa: E402

from lightning_tau import TimescaleCallback, TimescaleMonitor  # noqa: E402
from lightning_tau.demos.digits import DigitsDataModule, DigitsMLP, main  # noqa: E402

CONFIGS = Path(__file__).resolve().parents[1] / "examples" / "configs"


@pytest.fixture(autouse=True)
def _no_pytest_argv(monkeypatch: pytest.MonkeyPatch) -> None:
    """LightningCLI warns when ``sys.argv`` holds arguments besides ``args``; pytest's own are not meant for it."""
    monkeypatch.setattr(sys, "argv", ["lightning-tau-test"])


def _cli(args: list[str], run: bool = False) -> LightningCLI:
    return LightningCLI(DigitsMLP, DigitsDataModule, args=args, run=run)


def _timescale_callbacks(cli: LightningCLI) -> list[TimescaleCallback]:
    return [c for c in cli.trainer.callbacks if isinstance(c, TimescaleCallback)]


def _write(tmp_path: Path, init_args: dict) -> Path:
    path = tmp_path / "config.yaml"
    config = {"trainer": {"callbacks": [{"class_path": "lightning_tau.TimescaleCallback", "init_args": init_args}]}}
    path.write_text(yaml.safe_dump(config))
    return path


# two epochs are shorter than the config's tau_epoch: the callback says so, rightly
@pytest.mark.filterwarnings("ignore:.*less than one EMA timescale")
@pytest.mark.slow
def test_example_config_parses_and_fits(tmp_path: Path) -> None:
    cli = _cli(
        [
            "fit",
            "--config",
            str(CONFIGS / "digits_timescale.yaml"),
            "--trainer.max_epochs=2",
            f"--trainer.logger.init_args.save_dir={tmp_path}",
            f"--trainer.default_root_dir={tmp_path}",
            "--trainer.enable_progress_bar=false",
            "--data.train_size=128",
        ],
        run=True,
    )
    (callback,) = _timescale_callbacks(cli)
    assert callback.tau_epoch == 10.0
    assert callback.mode == "constant"
    assert cli.trainer.current_epoch == 2
    # the callback replaced the config's weight_decay: B / (lr * N * tau_epoch) in the `decay` group only
    groups = {g["name"]: g for g in cli.trainer.optimizers[0].param_groups}
    assert groups["decay"]["weight_decay"] == pytest.approx(64 / (0.003 * 128 * 10.0))
    assert groups["no_decay"]["weight_decay"] == 0.0
    assert callback.resolved_dataset_size == 128
    assert list((tmp_path / "digits_cli").rglob("events.out.tfevents.*"))


def test_configures_callback_from_flags() -> None:
    cli = _cli(
        [
            "--trainer.callbacks+=lightning_tau.TimescaleCallback",
            "--trainer.callbacks.tau_iter=250",
            "--trainer.callbacks.mode=per_step",
            "--trainer.callbacks.dataset_size=1000",
            "--trainer.callbacks.batch_size=50",
            "--trainer.callbacks.skip_unsupported_optimizers=true",
            "--trainer.callbacks.verbose=false",
            "--trainer.logger=false",
        ]
    )
    (callback,) = _timescale_callbacks(cli)
    assert (callback.tau_epoch, callback.tau_iter, callback.mode) == (None, 250.0, "per_step")
    assert (callback.dataset_size, callback.batch_size) == (1000, 50)
    assert callback.skip_unsupported_optimizers is True and callback.verbose is False


@pytest.mark.parametrize(
    ("init_args", "expected"),
    [
        ({"tau_epoch": "abc"}, ["tau_epoch", "abc"]),
        ({"tau_epoch": 5.0, "mode": "bogus"}, ["mode", "bogus", "per_step"]),
        ({"tau_epoch": 5.0, "dataset_size": "many"}, ["dataset_size", "many"]),
        ({"tau_epoch": 5.0, "verbose": "loud"}, ["verbose", "loud"]),
        ({"tau_epoch": 5.0, "unknown_option": 1}, ["unknown_option"]),
        ({"tau_epoch": 5.0, "size_exponent": "steep"}, ["size_exponent", "steep"]),
        ({"tau_epoch": 5.0, "coupling": "adamc"}, ["coupling", "adamc", "lr_ratio"]),
        ({"tau_epoch": 5.0, "beta2_epochs": "long"}, ["beta2_epochs", "long"]),
    ],
)
def test_rejects_wrong_type_at_parse_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], init_args: dict, expected: list[str]
) -> None:
    config = _write(tmp_path, init_args)
    with pytest.raises(SystemExit) as exit_info:
        _cli(["--config", str(config), "--trainer.logger=false"])
    assert exit_info.value.code not in (0, None)
    message = capsys.readouterr().err
    for text in expected:
        assert text in message


def test_surfaces_callback_validation(tmp_path: Path) -> None:
    """A well-typed but invalid value passes the parser and fails when LightningCLI instantiates the callback,
    before any training, with the callback's own message."""
    config = _write(tmp_path, {"tau_epoch": -1})
    with pytest.raises(ValueError, match=r"`TimescaleCallback\(tau_epoch=-1.0\)` is not valid"):
        _cli(["fit", "--config", str(config), "--trainer.logger=false"], run=True)


@pytest.mark.slow
def test_fits_with_size_exponent_from_yaml(tmp_path: Path) -> None:
    """The finder's dataset-size rule from YAML, through LightningCLI for real: tau_epoch 10 measured at N_ref = 32,
    carried by N^-0.5 to the run's N = 128, is 5, so the `decay` group gets B / (lr N 5)."""
    rule = {"tau_epoch": 10.0, "size_exponent": -0.5, "reference_dataset_size": 32, "verbose": False}
    cli = _cli(
        [
            "fit",
            "--config",
            str(CONFIGS / "digits_timescale.yaml"),
            "--config",
            str(_write(tmp_path, rule)),  # a later --config replaces the callbacks list
            "--trainer.max_epochs=1",
            "--trainer.logger=false",
            f"--trainer.default_root_dir={tmp_path / 'run'}",
            "--trainer.enable_progress_bar=false",
            "--data.train_size=128",
        ],
        run=True,
    )
    (callback,) = _timescale_callbacks(cli)
    assert (callback.size_exponent, callback.reference_dataset_size) == (-0.5, 32)
    assert callback.held_tau_epoch == pytest.approx(10.0 * (128 / 32) ** -0.5)
    groups = {g["name"]: g for g in cli.trainer.optimizers[0].param_groups}
    assert groups["decay"]["weight_decay"] == pytest.approx(64 / (0.003 * 128 * 10.0 * (128 / 32) ** -0.5))


@pytest.mark.slow
def test_fits_with_batch_exponent_from_yaml(tmp_path: Path) -> None:
    """The finder's batch rule from YAML, through LightningCLI for real: tau_epoch 10 measured at B_ref = 16, carried
    by B^1 to the run's global B = 64, is 40, so the `decay` group gets B / (lr N 40) (a fixed λ: B / (lr N 10) at
    B_ref)."""
    rule = {"tau_epoch": 10.0, "batch_exponent": 1.0, "reference_batch_size": 16, "verbose": False}
    cli = _cli(
        [
            "fit",
            "--config",
            str(CONFIGS / "digits_timescale.yaml"),
            "--config",
            str(_write(tmp_path, rule)),  # a later --config replaces the callbacks list
            "--trainer.max_epochs=1",
            "--trainer.logger=false",
            f"--trainer.default_root_dir={tmp_path / 'run'}",
            "--trainer.enable_progress_bar=false",
            "--data.train_size=128",
        ],
        run=True,
    )
    (callback,) = _timescale_callbacks(cli)
    assert (callback.batch_exponent, callback.reference_batch_size) == (1.0, 16)
    assert callback.resolved_batch_size == 64 and callback.held_tau_epoch == pytest.approx(10.0 * 64 / 16)
    groups = {g["name"]: g for g in cli.trainer.optimizers[0].param_groups}
    assert groups["decay"]["weight_decay"] == pytest.approx(64 / (0.003 * 128 * 10.0 * 64 / 16))


def test_refuses_batch_exponent_without_reference_before_training(tmp_path: Path) -> None:
    config = _write(tmp_path, {"tau_epoch": 10.0, "batch_exponent": -0.5})
    # jsonargparse lists the callback's own one-line message among the Union's errors, at instantiation
    with pytest.raises(ValueError, match=r"`TimescaleCallback\(batch_exponent=-0.5\)` is not valid: a nonzero `batch_"):
        _cli(["fit", "--config", str(config), "--trainer.logger=false"], run=True)


@pytest.mark.slow
def test_fits_with_coupling_from_yaml(tmp_path: Path) -> None:
    """``coupling: lr_ratio`` from YAML, through LightningCLI for real: the config's cosine runs 2 steps (N = 128,
    B = 64) from 0.003 to 0.1 x 0.003, so the last step runs at lr 0.00165 and its decay is λ_ref x 0.00165 / 0.003,
    with λ_ref = B / (lr N tau_epoch)."""
    config = _write(tmp_path, {"tau_epoch": 10.0, "coupling": "lr_ratio", "verbose": False})
    cli = _cli(
        [
            "fit",
            "--config",
            str(CONFIGS / "digits_timescale.yaml"),
            "--config",
            str(config),
            "--trainer.max_epochs=1",
            "--trainer.logger=false",
            f"--trainer.default_root_dir={tmp_path / 'run'}",
            "--trainer.enable_progress_bar=false",
            "--data.train_size=128",
        ],
        run=True,
    )
    (callback,) = _timescale_callbacks(cli)
    assert (callback.coupling, callback.mode) == ("lr_ratio", "per_step")
    groups = {g["name"]: g for g in cli.trainer.optimizers[0].param_groups}
    weight_decay_ref = 64 / (0.003 * 128 * 10.0)
    assert groups["decay"]["weight_decay"] == pytest.approx(weight_decay_ref * 0.00165 / 0.003, rel=1e-9)
    assert groups["no_decay"]["weight_decay"] == 0.0


def test_refuses_mode_disagrees_with_coupling(tmp_path: Path) -> None:
    config = _write(tmp_path, {"tau_epoch": 10.0, "mode": "per_step", "coupling": "lr_squared"})
    with pytest.raises(ValueError, match=r"`TimescaleCallback\(mode='per_step', coupling='lr_squared'\)` disagree"):
        _cli(["fit", "--config", str(config), "--trainer.logger=false"], run=True)


@pytest.mark.parametrize(
    ("init_args", "match"),
    [
        (
            {"size_exponent": -0.5},
            r"`TimescaleCallback\(size_exponent=-0.5\)` is not valid: .* `reference_dataset_size`",
        ),
        ({"size_exponent": float("nan"), "reference_dataset_size": 32}, r"`TimescaleCallback\(size_exponent=nan\)`"),
        ({"size_exponent": -0.5, "reference_dataset_size": 0}, r"`TimescaleCallback\(reference_dataset_size=0\)`"),
    ],
)
def test_refuses_bad_size_rule_before_any_step(tmp_path: Path, init_args: dict, match: str) -> None:
    config = _write(tmp_path, {"tau_epoch": 10.0, **init_args})
    with pytest.raises(ValueError, match=match):
        _cli(["fit", "--config", str(config), "--trainer.logger=false"], run=True)


def test_print_config_lists_every_option_with_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(
            [
                "fit",
                "--trainer.callbacks+=lightning_tau.TimescaleCallback",
                "--trainer.callbacks.tau_epoch=5",
                "--print_config",
            ]
        )
    assert exit_info.value.code in (0, None)
    printed = yaml.safe_load(capsys.readouterr().out)
    (entry,) = [c for c in printed["trainer"]["callbacks"] if c["class_path"].endswith("TimescaleCallback")]
    signature = inspect.signature(TimescaleCallback.__init__)
    expected = {
        name: p.default for name, p in signature.parameters.items() if name != "self" and p.kind is not p.VAR_KEYWORD
    }
    expected["tau_epoch"] = 5.0
    assert entry["init_args"] == expected


def test_example_callback_snippet_matches_signature() -> None:
    """``examples/configs/timescale_callback.yaml`` lists every option, with the defaults but ``tau_epoch``."""
    config = yaml.safe_load((CONFIGS / "timescale_callback.yaml").read_text())
    (entry,) = config["trainer"]["callbacks"]
    signature = inspect.signature(TimescaleCallback.__init__)
    names = [name for name in signature.parameters if name != "self"]
    assert sorted(entry["init_args"]) == sorted(names)
    for name in names:
        if name != "tau_epoch":
            assert entry["init_args"][name] == signature.parameters[name].default, name


def test_example_config_model_defaults_valid() -> None:
    """The example's model and data sections instantiate and train one step (catches stale keys)."""
    cli = _cli(["--config", str(CONFIGS / "digits_timescale.yaml"), "--trainer.logger=false"])
    assert isinstance(cli.model, DigitsMLP) and isinstance(cli.datamodule, DigitsDataModule)
    cli.datamodule.setup("fit")
    x, y = next(iter(cli.datamodule.train_dataloader()))
    loss = torch.nn.functional.cross_entropy(cli.model(x), y)
    assert torch.isfinite(loss)


@pytest.mark.parametrize(
    ("monitor", "expected"),
    [
        (False, None),
        (True, "timescale"),
        ({"class_path": "lightning_tau.TimescaleMonitor", "init_args": {"prefix": "ema", "per_tensor": True}}, "ema"),
    ],
)
def test_parses_monitor_option(tmp_path: Path, monitor: object, expected: str | None) -> None:
    cli = _cli(["--config", str(_write(tmp_path, {"tau_epoch": 5.0, "monitor": monitor}))])
    (callback,) = _timescale_callbacks(cli)
    if expected is None:
        assert callback.monitor is None
    else:
        assert isinstance(callback.monitor, TimescaleMonitor) and callback.monitor.prefix == expected
    assert callback.monitor is None or callback.monitor.per_tensor == isinstance(monitor, dict)
