"""``lightning-tau find --config``: the model and data of a LightningCLI YAML file, as the finder takes them.

More: docs/finder.rst, module notes.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from lightning_tau.errors import TimescaleError
from lightning_tau.tuner.axes import WIDTH

__all__ = ["ConfigError", "ConfigModel", "ConfigWidthModel", "DigitsWidthModel", "load_config"]

#: The model argument ``--axis width`` builds each point's model with: the width axis's point value.
WIDTH_ARGUMENT = str(WIDTH.value_key)

#: Trainer settings a config may hold that the finder sets itself or does not carry over.
_NOT_CARRIED = {"callbacks", "logger", "default_root_dir", "enable_progress_bar", "enable_checkpointing", "max_steps"}


class ConfigError(TimescaleError):
    """A ``--config`` that cannot be read or whose model or data cannot be built (one line, for the CLI)."""


@contextlib.contextmanager
def _plain_argv() -> Iterator[None]:
    argv, sys.argv = sys.argv, sys.argv[:1]  # LightningCLI warns about arguments it was not given
    try:
        yield
    finally:
        sys.argv = argv


def _parse(path: Path) -> Any:
    """The ``LightningCLI`` of the config at ``path`` (model and data instantiated, nothing run)."""
    try:
        from lightning.pytorch import LightningDataModule, LightningModule
        from lightning.pytorch.cli import LightningCLI
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"`lightning-tau find --config` needs jsonargparse: pip install 'lightning-tau[cli]' ({err})"
        ) from err
    from lightning_tau._quiet import quiet_sweep

    # the model's module may sit in the working directory, as for `python main.py fit --config ...` (LightningCLI);
    # the console script's sys.path does not hold it (spawned workers inherit this sys.path)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        with _plain_argv(), quiet_sweep(), open(os.devnull, "w") as devnull, contextlib.redirect_stderr(devnull):
            return LightningCLI(
                LightningModule,
                LightningDataModule,
                subclass_mode_model=True,
                subclass_mode_data=True,
                args=["--config", str(path)],
                run=False,
                save_config_callback=None,
                trainer_defaults={"logger": False},
                parser_kwargs={"exit_on_error": False},
            )
    except (Exception, SystemExit) as err:
        raise ConfigError(f"--config {str(path)!r}: {_one_line(err)}") from None


def _one_line(err: BaseException) -> str:
    """The cause of a jsonargparse or model error in one line: its innermost reason, not the whole tree."""
    text = str(err).strip() or type(err).__name__
    lines = [line.strip(" -") for line in text.splitlines() if line.strip(" -")]
    reasons = [
        line
        for line in lines
        if not line.startswith(("Given value", "Expected a", "Problem with given class_path", "Parser key"))
    ]
    reason = next((line for line in reversed(reasons) if "Expected a <class 'NoneType'>" not in line), lines[0])
    first = lines[0] if lines[0] != reason else ""
    message = f"{first.rstrip(':')}: {reason}" if first and len(first) < 120 else reason
    return " ".join(message.split())[:400]


class ConfigModel:
    """Makes a fresh model from a LightningCLI config for every call (picklable: a worker process parses the
    config again)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._cli: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "_cli": None}

    def __call__(self) -> Any:
        if self._cli is None:
            self._cli = _parse(self.path)
        instantiate = getattr(self._cli.parser, "instantiate", None) or self._cli.parser.instantiate_classes
        return instantiate(self._cli.config)["model"]


class ConfigWidthModel(ConfigModel):
    """``make_model(width)`` for ``--axis width``: the config's model with ``init_args.width`` set to ``width``."""

    def __call__(self, width: int) -> Any:  # type: ignore[override]
        if self._cli is None:
            self._cli = _parse(self.path)
        cli = self._cli
        config = cli.config.clone()
        config["model.init_args.width"] = width
        instantiate = getattr(cli.parser, "instantiate", None) or cli.parser.instantiate_classes
        # LightningCLI's instantiator gives the model the hparams of `cli.config` (dumped once, kept as
        # `cli.config_dump`), not those it is built with: point it at this width's config while building
        original = cli.config
        cli.config = config
        vars(cli).pop("config_dump", None)
        try:
            return instantiate(config)["model"]
        finally:
            cli.config = original
            vars(cli).pop("config_dump", None)

    def takes_width(self) -> bool:
        """Whether the config's model class has a ``width`` argument."""
        from jsonargparse import Namespace

        if self._cli is None:
            self._cli = _parse(self.path)
        init_args = self._cli.config.get("model.init_args")
        return isinstance(init_args, Namespace) and WIDTH_ARGUMENT in init_args


class DigitsWidthModel:
    """``make_model(width)`` for ``--axis width`` without ``--config``: the width demo's μP MLP on digits
    (:class:`~lightning_tau.demos.width.MuDigitsMLP`, its settings as the demo's, μP's base width the smallest)."""

    def __init__(self, base_width: int) -> None:
        self.base_width = base_width

    def __call__(self, width: int) -> Any:
        from lightning_tau.demos.width import WidthConfig

        sweep = WidthConfig(widths=[self.base_width, width])
        return sweep.model(width, weight_decay=0.01, arm="timescale")


def load_config(path: Path) -> tuple[Callable[[], Any], Any, dict[str, Any], list[str]]:
    """Read a LightningCLI YAML: ``(model_factory, datamodule, trainer_kwargs, notes)``, nothing trained.

    ``model:`` and ``data:`` need ``class_path`` (and ``init_args``) entries. ``model_factory()`` instantiates a
    fresh model from the config on every call (and pickles, for ``--workers``). ``trainer_kwargs`` holds the plain
    ``trainer:`` settings that differ from the Trainer's defaults, without those the finder sets itself (``notes``
    says which were left out).

    Raises:
        ImportError: jsonargparse is not installed (the ``cli`` extra).
        ConfigError: the config does not parse, or its model or data cannot be built (a one-line reason).
    """
    from lightning.pytorch import Trainer

    cli = _parse(path)
    config = cli.config
    model_factory = ConfigModel(path)
    model_factory._cli = cli

    defaults = {name: p.default for name, p in inspect.signature(Trainer.__init__).parameters.items()}
    trainer_kwargs: dict[str, Any] = {}
    notes = []
    for key, value in config["trainer"].items():
        if key in _NOT_CARRIED:
            if value not in (None, False, [], -1, defaults.get(key)):
                notes.append(f"trainer.{key}")
            continue
        if key in defaults and value == defaults[key]:
            continue
        if value is None or isinstance(value, (bool, int, float, str)):
            trainer_kwargs[key] = value
        else:
            notes.append(f"trainer.{key}")
    return model_factory, cli.datamodule, trainer_kwargs, notes
