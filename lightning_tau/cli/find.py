"""``lightning-tau find``: tune ``tau_epoch`` on a fraction of the training set and print the full run's weight decay.

Runs :class:`~lightning_tau.tuner.finder.TimescaleFinder`: one Lightning fit per ``tau_epoch`` x seed on a fixed random
subset of the training set, for the epochs the full run will train. Without ``--config`` the task is the demo's
(bundled 8x8 digits, ``DigitsMLP``, N=1400, B=64, 40 epochs); with ``--config`` it is the model and data of a
LightningCLI YAML file (``model:`` and ``data:`` with ``class_path`` entries, ``trainer.max_epochs``). Prints the
curve, the suggested ``tau_epoch``, each param group's weight decay for the full run and what the finder cost;
writes a Figure-1-style plot and a JSON summary into ``--out``.

The runs are the trials of an Optuna study (``--storage``, ``--study``): the same command started on several
machines, or ``--workers K`` on one, shares one grid; every process waits until the grid is complete and prints
the same suggestion (``--no-wait``: exit as soon as no trial is left for it to take).
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from lightning_tau.cli._args import fraction_above_zero, positive_float, positive_int
from lightning_tau.tuner.curve import DEFAULT_TAU_EPOCHS

__all__ = ["DIGITS_EPOCHS", "ConfigError", "ConfigModel", "add_parser", "load_config"]

#: Epochs per run on the demo's digits task (as ``lightning-tau demo``).
DIGITS_EPOCHS = 40

#: Trainer settings a config may hold that the finder sets itself or does not carry over.
_NOT_CARRIED = {"callbacks", "logger", "default_root_dir", "enable_progress_bar", "enable_checkpointing", "max_steps"}


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``find``."""
    parser = subparsers.add_parser(
        "find",
        help="Tune tau_epoch on a fraction of the training set; print the full run's weight decay.",
        description=(
            "Sweep tau_epoch on a fixed random subset holding FRACTION of the training set, for the epochs the full"
            " run will train, with TimescaleCallback setting each run's weight decay; suggest the tau_epoch"
            " (a parabola in log tau_epoch through the best grid point and its neighbours) and the weight decay"
            " B / (lr * N * tau_epoch) of every param group for the full run. Without --config: the demo's digits"
            " task. With --config: a LightningCLI YAML with model/data class_path entries and trainer.max_epochs."
            " Runs are trials of an Optuna study (by default the journal file OUT/study.journal): the same command"
            " run again trains nothing, and the same command started on several machines (--storage, --study) or"
            " with --workers K shares one grid."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help="LightningCLI YAML (model:, data:, trainer:); when not given: the demo's digits task",
    )
    parser.add_argument("--fraction", type=fraction_above_zero, default=0.25, help="share of the training set per run")
    parser.add_argument(
        "--tau-epochs",
        type=positive_float,
        nargs="+",
        default=list(DEFAULT_TAU_EPOCHS),
        metavar="TAU",
        help="the tau_epoch grid (log-spaced)",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], metavar="SEED", help="seeds per tau_epoch")
    parser.add_argument(
        "--epochs",
        type=positive_int,
        default=None,
        help=f"epochs per run; when not given: trainer.max_epochs of --config, else {DIGITS_EPOCHS}",
    )
    parser.add_argument(
        "--monitor",
        default=None,
        help="validation metric to compare; when not given: val/loss on digits, val_loss with --config",
    )
    parser.add_argument("--mode", choices=("min", "max"), default="min", help="whether lower or higher is better")
    parser.add_argument(
        "--reduce",
        choices=("last", "best"),
        default="last",
        help="compare each run's metric after the last epoch, or its best over epochs",
    )
    parser.add_argument("--subset-seed", type=int, default=0, help="seed of the random subset")
    parser.add_argument(
        "--out", type=Path, default=Path("tau_runs/find"), help="the default study journal, logs, plot and JSON"
    )
    parser.add_argument(
        "--json", type=Path, default=None, help="where to write the JSON summary; when not given: OUT/finder.json"
    )
    parser.add_argument(
        "--storage",
        default=None,
        metavar="PATH_OR_URL",
        help="the study's storage: a journal file (shared file system) or an Optuna database URL such as"
        " postgresql+psycopg2://user:password@host/db (the password is never printed); when not given:"
        " OUT/study.journal",
    )
    parser.add_argument(
        "--study",
        default=None,
        metavar="NAME",
        help="the study to join; when not given: tau_finder_ and a hash of the settings",
    )
    parser.add_argument(
        "--workers", type=positive_int, default=1, help="worker processes on this machine (each cores/K threads)"
    )
    parser.add_argument(
        "--no-wait",
        action="store_true",
        help="exit as soon as no trial is left to take, without waiting for those training elsewhere",
    )
    parser.add_argument("--no-plot", action="store_true", help="skip the figure")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=_main)
    return parser


class ConfigError(ValueError):
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


def _writable(path: Path, *, folder: bool) -> str | None:
    """Why ``path`` (a folder, or a file to write) cannot be written, or ``None``; creates nothing."""
    if folder and path.exists() and not path.is_dir():
        return "it is a file, not a folder"
    if not folder and path.is_dir():
        return "it is a folder"
    existing = path if folder else path.parent
    while not existing.exists():  # the nearest folder that exists: the rest will be created in it
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a folder"
    probe = existing / f".lightning-tau-write-test-{os.getpid()}"
    try:  # a real write: os.access says yes to root on read-only file systems (/sys, /proc, a read-only mount)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as err:
        return f"cannot write in {existing}: {err.strerror or err}"
    return None


def _error(message: str, code: int) -> int:
    print(f"lightning-tau find: error: {message}", file=sys.stderr)
    return code


def _main(args: argparse.Namespace) -> int:
    import torch

    from lightning_tau.tuner.finder import TimescaleFinder
    from lightning_tau.tuner.study import StorageError

    for option, path, folder in (("--out", args.out, True), ("--json", args.json, False)):
        if path is not None and (why := _writable(path, folder=folder)) is not None:
            return _error(f"argument {option}: cannot write to {str(path)!r}: {why}. Pass a writable path.", 2)
    if args.config is not None:
        if not args.config.is_file():
            return _error(f"--config {str(args.config)!r} is not a file.", 2)
        try:
            model_factory, datamodule, trainer_kwargs, notes = load_config(args.config)
        except ConfigError as err:
            return _error(f"{err}. Fix the config (see examples/configs/find_digits.yaml).", 2)
        if notes:
            print(f"Not carried over from {args.config} (the finder sets its own): {', '.join(notes)}.")
        if args.epochs is not None:
            trainer_kwargs["max_epochs"] = args.epochs
        if trainer_kwargs.get("max_epochs") in (None, -1):
            return _error(
                f"{args.config} sets no trainer.max_epochs: set it to the epochs of the full run, or pass --epochs.", 2
            )
        monitor = args.monitor or "val_loss"
    else:
        from lightning_tau.demos.digits import DigitsDataModule, DigitsMLP, load_digits_tensors

        try:
            load_digits_tensors()
        except ImportError as err:
            return _error(str(err), 1)
        model_factory, datamodule = DigitsMLP, DigitsDataModule(train_size=1400, batch_size=64)
        trainer_kwargs = {"max_epochs": args.epochs or DIGITS_EPOCHS, "accelerator": "cpu", "devices": 1}
        monitor = args.monitor or "val/loss"
        # a tiny MLP gains nothing from intra-op threads, and on a busy machine their hand-offs cost a lot
        torch.set_num_threads(1)
    try:
        finder = TimescaleFinder(
            fraction=args.fraction,
            tau_epochs=list(dict.fromkeys(args.tau_epochs)),
            seeds=list(dict.fromkeys(args.seeds)),
            monitor=monitor,
            mode=args.mode,
            reduce=args.reduce,
            trainer_kwargs=trainer_kwargs,
            root_dir=args.out,
            subset_seed=args.subset_seed,
            progress=not args.no_progress,
            storage=args.storage,
            study_name=args.study,
            workers=args.workers,
        )
    except ValueError as err:
        return _error(str(err), 2)
    try:
        result = finder.fit(model_factory, datamodule=datamodule, wait=not args.no_wait)
    except StorageError as err:
        return _error(f"argument --storage: {err.shown!r}: {err.reason}", 2)
    except ConfigError as err:
        return _error(f"{err}. Fix the config.", 2)
    except (ValueError, TypeError) as err:
        return _error(str(err), 1)
    grid = len(finder.tau_epochs) * len(finder.seeds)
    if result is None:
        elsewhere = len(finder.study.running_elsewhere()) if finder.study is not None else 0
        print(
            f"No trial left to take: {finder.trained_runs} trained here, {grid - finder.pending_runs} of {grid}"
            f" complete, {elsewhere} still training elsewhere. Run the command again (without --no-wait) for the"
            " suggestion."
        )
        return 0
    print(result.table())
    if finder.reused_runs:
        print(f"({finder.reused_runs} of {grid} trials were complete in the study before this command.)")
    try:
        print(f"JSON: {result.save_json(args.json or args.out / 'finder.json')}")
        if not args.no_plot:
            print(f"Figure: {result.plot(args.out / 'tau_finder.png')}")
    except OSError as err:
        return _error(f"cannot write the result: {err}. The trials are stored: run the command again to write it.", 1)
    print(f"TensorBoard logs: tensorboard --logdir {args.out / 'tb'}")
    return 0
