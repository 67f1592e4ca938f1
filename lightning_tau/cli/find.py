"""``lightning-tau find``: tune ``tau_epoch`` on a fraction of the training set and print the full run's weight decay.

Runs :class:`~lightning_tau.tuner.finder.TimescaleFinder`: one Lightning fit per ``tau_epoch`` x seed on a fixed random
subset of the training set, for the epochs the full run will train. Without ``--config`` the task is the demo's
(bundled 8x8 digits, ``DigitsMLP``, N=1400, B=64, 40 epochs); with ``--config`` it is the model and data of a
LightningCLI YAML file (``model:`` and ``data:`` with ``class_path`` entries, ``trainer.max_epochs``). Prints the
curve, the suggested ``tau_epoch``, each param group's weight decay for the full run and what the finder cost;
writes a Figure-1-style plot and a JSON summary into ``--out``.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lightning_tau.cli._args import fraction_above_zero, positive_float, positive_int
from lightning_tau.tuner.curve import DEFAULT_TAU_EPOCHS

__all__ = ["DIGITS_EPOCHS", "add_parser", "load_config"]

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
            " Runs are stored in OUT/runs and reused when the command is run again with the same settings."
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
    parser.add_argument("--out", type=Path, default=Path("tau_runs/find"), help="run files, logs, plot and JSON")
    parser.add_argument(
        "--json", type=Path, default=None, help="where to write the JSON summary; when not given: OUT/finder.json"
    )
    parser.add_argument("--no-plot", action="store_true", help="skip the figure")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=_main)
    return parser


def load_config(path: Path) -> tuple[Callable[[], Any], Any, dict[str, Any], list[str]]:
    """Read a LightningCLI YAML: ``(model_factory, datamodule, trainer_kwargs, notes)``, nothing trained.

    ``model:`` and ``data:`` need ``class_path`` (and ``init_args``) entries. ``model_factory()`` instantiates a
    fresh model from the config on every call. ``trainer_kwargs`` holds the plain ``trainer:`` settings that differ
    from the Trainer's defaults, without those the finder sets itself (``notes`` says which were left out).

    Raises:
        ImportError: jsonargparse is not installed (the ``cli`` extra).
        SystemExit: the config does not parse (jsonargparse prints why).
    """
    try:
        from lightning.pytorch import LightningDataModule, LightningModule, Trainer
        from lightning.pytorch.cli import LightningCLI
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"`lightning-tau find --config` needs jsonargparse: pip install 'lightning-tau[cli]' ({err})"
        ) from err
    from lightning_tau._quiet import quiet_sweep

    argv, sys.argv = sys.argv, sys.argv[:1]  # LightningCLI warns about arguments it was not given
    try:
        with quiet_sweep():
            cli = LightningCLI(
                LightningModule,
                LightningDataModule,
                subclass_mode_model=True,
                subclass_mode_data=True,
                args=["--config", str(path)],
                run=False,
                save_config_callback=None,
                trainer_defaults={"logger": False},
            )
    finally:
        sys.argv = argv
    config = cli.config

    # jsonargparse >= 4.49 names it `instantiate`; older versions only have `instantiate_classes`
    instantiate = getattr(cli.parser, "instantiate", None) or cli.parser.instantiate_classes

    def model_factory() -> Any:
        return instantiate(config)["model"]

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


def _main(args: argparse.Namespace) -> int:
    import torch

    from lightning_tau.tuner.finder import TimescaleFinder

    if args.config is not None:
        if not args.config.is_file():
            print(f"lightning-tau find: error: --config {str(args.config)!r} is not a file.", file=sys.stderr)
            return 2
        model_factory, datamodule, trainer_kwargs, notes = load_config(args.config)
        if notes:
            print(f"Not carried over from {args.config} (the finder sets its own): {', '.join(notes)}.")
        if args.epochs is not None:
            trainer_kwargs["max_epochs"] = args.epochs
        if trainer_kwargs.get("max_epochs") in (None, -1):
            print(
                f"lightning-tau find: error: {args.config} sets no trainer.max_epochs: set it to the epochs of the"
                " full run, or pass --epochs.",
                file=sys.stderr,
            )
            return 2
        monitor = args.monitor or "val_loss"
    else:
        from lightning_tau.demos.digits import DigitsDataModule, DigitsMLP, load_digits_tensors

        try:
            load_digits_tensors()
        except ImportError as err:
            print(f"lightning-tau find: error: {err}", file=sys.stderr)
            return 1
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
        )
        result = finder.fit(model_factory, datamodule=datamodule)
    except (ValueError, TypeError) as err:
        print(f"lightning-tau find: error: {err}", file=sys.stderr)
        return 1
    print(result.table())
    if finder.trained_runs < len(result.curve) * len(finder.seeds):
        print(f"({len(result.curve) * len(finder.seeds) - finder.trained_runs} runs reused from {args.out / 'runs'}.)")
    json_path = result.save_json(args.json or args.out / "finder.json")
    print(f"JSON: {json_path}")
    if not args.no_plot:
        print(f"Figure: {result.plot(args.out / 'tau_finder.png')}")
    print(f"TensorBoard logs: tensorboard --logdir {args.out / 'tb'}")
    return 0
