"""``lightning-tau demo``: sweep weight decay x dataset size on bundled digits and show where the optimum moves.

Each run is a Lightning fit of :class:`~lightning_tau.demos.digits.DigitsMLP` on a training set of ``N`` digits,
with :class:`~lightning_tau.TimescaleCallback` setting AdamW's weight decay from the run's ``tau_epoch``:
``weight_decay = B / (lr * N * tau_epoch)``. One ``tau_epoch`` grid per dataset size is therefore a different
weight-decay grid per size. Every run logs to TensorBoard (its own run directory, with ``dataset_size``,
``batch_size``, ``lr``, ``weight_decay``, ``tau_epoch`` and the final validation metrics as hparams), and
``lightning-tau plot`` draws the sweep at the end: the optimal weight decay falls with ``N`` while the optimal
``tau_epoch`` stays put (Wang & Aitchison, ICML 2025, Figure 1). Each run also carries a
:class:`~lightning_tau.diagnostics.TimescaleMonitor` (timescales and weight RMS against its prediction).

``--axis width`` runs the other sweep instead: μP width x base weight decay ``λ_base`` at a fixed base learning
rate, the weight decay fixed across widths against ``TimescaleCallback`` (:mod:`lightning_tau.demos.width`), and
measures the exponent of the best ``λ_base`` in the width multiplier. Both axes write ``summary.json`` into the sweep
folder.

The default setup follows the paper's: a fixed number of epochs for every size, a fixed batch size and initial
learning rate with cosine decay to a tenth, and a scale-invariant network (LayerNorm after every linear layer).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import TensorBoardLogger
from typing_extensions import override

from lightning_tau import timescale as tau_math
from lightning_tau._quiet import quiet_sweep
from lightning_tau.callback import TimescaleCallback
from lightning_tau.cli._args import fraction_below_one, positive_float, positive_int
from lightning_tau.demos.digits import DIGITS_SIZE, DigitsDataModule, DigitsMLP
from lightning_tau.demos.width import WidthConfig
from lightning_tau.diagnostics import TimescaleMonitor

__all__ = [
    "AXES",
    "QUICK",
    "QUICK_WIDTH",
    "SUMMARY_NAME",
    "DemoConfig",
    "dataset_size_optima",
    "demo_weight_decay",
    "run_width",
    "write_summary",
    "add_parser",
    "describe",
    "next_sweep_dir",
    "run_demo",
    "run_name",
    "run_one",
]


@dataclass
class DemoConfig:
    """One sweep: every ``(size, tau_epoch, seed)`` combination is a run.

    Attributes:
        sizes: training-set sizes ``N`` (digits; at most ``1797 - val_size``).
        tau_epochs: EMA timescales in epochs; each gives ``weight_decay = B / (lr * N * tau_epoch)``.
        seeds: seeds (model init and batch order); runs with the same size and ``tau_epoch`` are averaged.
        epochs: training epochs per run, the same for every size (as in the paper).
        batch_size: ``B``.
        lr: AdamW's initial learning rate.
        schedule: ``"cosine"`` (to ``0.1 * lr``, as in the paper) or ``"constant"``.
        hidden: MLP width.
        depth: MLP hidden layers.
        norm: ``"layer"`` (a LayerNorm after every linear layer: scale-invariant) or ``"none"``.
        label_noise: fraction of training labels randomized.
        val_size: held-out digits, the same for every run.
    """

    sizes: list[int] = field(default_factory=lambda: [150, 450, 1350])
    tau_epochs: list[float] = field(default_factory=lambda: [2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0])
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    epochs: int = 40
    batch_size: int = 64
    lr: float = 3e-3
    schedule: str = "cosine"
    hidden: int = 128
    depth: int = 2
    norm: str = "layer"
    label_noise: float = 0.0
    val_size: int = 397

    @property
    def num_runs(self) -> int:
        return len(self.sizes) * len(self.tau_epochs) * len(self.seeds)


#: What ``--quick`` runs: 2 sizes x 3 timescales x 2 epochs, a few seconds (for tests and a first look).
QUICK = DemoConfig(sizes=[100, 300], tau_epochs=[1.0, 10.0, 100.0], seeds=[0], epochs=2, hidden=32)

#: What ``--axis width --quick`` runs: widths 16 / 64 / 256 (s up to 16) x 4 λ_base (x4 steps) x 3 seeds, 30 epochs:
#: the full form's task on a coarser λ_base grid (60 runs, the base width's once for both arms).
QUICK_WIDTH = WidthConfig(weight_decays=[8.0, 32.0, 128.0, 512.0])

#: Values of ``--axis``.
AXES = ("dataset-size", "width")


def next_sweep_dir(out: Path) -> Path:
    """``out/sweep_K`` with the smallest ``K`` not taken yet (so a second demo never overwrites the first).

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> next_sweep_dir(root).name
        'sweep_0'
        >>> (root / "sweep_0").mkdir(); (root / "sweep_3").mkdir()
        >>> next_sweep_dir(root).name
        'sweep_4'
    """
    taken = [int(m.group(1)) for p in out.glob("sweep_*") if (m := re.fullmatch(r"sweep_(\d+)", p.name))]
    return out / f"sweep_{max(taken) + 1 if taken else 0}"


def demo_weight_decay(lr: float, tau_epoch: float, dataset_size: int, batch_size: int) -> float:
    """The weight decay ``TimescaleCallback`` sets in a demo run: ``1 / (lr * M * tau_epoch)`` with ``M`` the
    optimizer steps an epoch really has, ``ceil(N / B)`` (the demo's loaders keep the last, partial batch).

    Example:
        >>> demo_weight_decay(3e-3, 10.0, 1280, 64)  # M = 20 = N / B: the same as B / (lr * N * tau_epoch)
        1.6666666666666667
        >>> round(demo_weight_decay(3e-3, 10.0, 100, 64), 4)  # M = 2, not 100 / 64
        16.6667
    """
    return tau_math.weight_decay_for_tau_iter(lr, tau_epoch * math.ceil(dataset_size / batch_size))


def describe(config: DemoConfig) -> str:
    """What the sweep runs, with the weight-decay grid each dataset size gets from the ``tau_epoch`` grid.

    Example:
        >>> print(describe(DemoConfig(sizes=[100, 400], tau_epochs=[1.0, 10.0], seeds=[0], epochs=5)))
        Sweep: 2 sizes x 2 tau_epochs x 1 seeds = 4 runs x 5 epochs; B=64, lr=0.003 (cosine), MLP 128x2, norm=layer.
          N=100: weight decay 16.7 .. 167 (tau_epoch 10 .. 1)
          N=400: weight decay 4.76 .. 47.6 (tau_epoch 10 .. 1)
    """
    lines = [
        f"Sweep: {len(config.sizes)} sizes x {len(config.tau_epochs)} tau_epochs x {len(config.seeds)} seeds"
        f" = {config.num_runs} runs x {config.epochs} epochs; B={config.batch_size}, lr={config.lr:g}"
        f" ({config.schedule}), MLP {config.hidden}x{config.depth}, norm={config.norm}."
    ]
    for size in config.sizes:
        taus = sorted(config.tau_epochs, reverse=True)
        decays = [demo_weight_decay(config.lr, tau, size, config.batch_size) for tau in taus]
        lines.append(
            f"  N={size}: weight decay {decays[0]:.3g} .. {decays[-1]:.3g} (tau_epoch {taus[0]:g} .. {taus[-1]:g})"
        )
    return "\n".join(lines)


def run_name(size: int, tau_epoch: float, seed: int) -> tuple[str, str]:
    """TensorBoard ``(name, version)`` of one run: ``("N0200", "tau_epoch=10_seed0")``.

    Example:
        >>> run_name(200, 10.0, 0)
        ('N0200', 'tau_epoch=10_seed0')
    """
    return f"N{size:04d}", f"tau_epoch={tau_epoch:g}_seed{seed}"


def run_one(
    config: DemoConfig, size: int, tau_epoch: float, seed: int, sweep_dir: Path, extra_callbacks: Sequence[Any] = ()
) -> dict[str, float]:
    """Fit one run and log it to ``sweep_dir/N<size>/tau_epoch=<tau>_seed<seed>``; returns its hparams + metrics."""
    pl.seed_everything(seed, verbose=False)
    data = DigitsDataModule(
        train_size=size, val_size=config.val_size, batch_size=config.batch_size, label_noise=config.label_noise
    )
    # The callback sets the weight decay from `tau_epoch`; the model gets the same value up front only so its own
    # hparams (which TimescaleMonitor records too) show the decay actually used.
    weight_decay = demo_weight_decay(config.lr, tau_epoch, size, config.batch_size)
    model = DigitsMLP(
        hidden=config.hidden,
        depth=config.depth,
        norm=config.norm,  # type: ignore[arg-type]
        lr=config.lr,
        weight_decay=weight_decay,
        schedule=config.schedule,  # type: ignore[arg-type]
    )
    timescale = TimescaleCallback(tau_epoch=tau_epoch, verbose=False)
    record = _RecordRun(timescale, config, seed)
    name, version = run_name(size, tau_epoch, seed)
    logger = TensorBoardLogger(save_dir=str(sweep_dir), name=name, version=version, default_hp_metric=False)
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        max_epochs=config.epochs,
        logger=logger,
        # `record` writes the run's HParams record (sweep knobs, seed, both final metrics); TensorBoard keeps only a
        # run's first, so the monitor logs its scalars and dashboards but no record of its own
        callbacks=[timescale, record, TimescaleMonitor(log_hparams=False), *extra_callbacks],
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        num_sanity_val_steps=0,
        log_every_n_steps=max(1, math.ceil(size / config.batch_size)),  # about once per epoch
    )
    trainer.fit(model, datamodule=data)
    return dict(record.logged)


class _RecordRun(Callback):
    """At train end, write the run's HParams record: the sweep's knobs, what ``TimescaleCallback`` resolved, and
    the final validation metrics (``hp/val_loss``, ``hp/val_error``)."""

    def __init__(self, timescale: TimescaleCallback, config: DemoConfig, seed: int) -> None:
        self.timescale = timescale
        self.config = config
        self.seed = seed
        self.logged: dict[str, Any] = {}

    @override
    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        cb, config = self.timescale, self.config
        decay_groups = [g for g in cb.groups if g.decays]
        hparams: dict[str, Any] = {
            "dataset_size": cb.resolved_dataset_size,
            "batch_size": cb.resolved_batch_size,
            "lr": config.lr,
            "schedule": config.schedule,
            "weight_decay": decay_groups[0].weight_decay,
            "tau_epoch": cb.resolved_tau_epoch,
            "tau_iter": cb.resolved_tau_iter,
            "epochs": config.epochs,
            "seed": self.seed,
            "hidden": config.hidden,
            "depth": config.depth,
            "norm": config.norm,
            "label_noise": config.label_noise,
        }
        metrics = {
            "hp/val_loss": float(trainer.callback_metrics["val/loss"]),
            "hp/val_error": float(trainer.callback_metrics["val/error"]),
        }
        for logger in trainer.loggers:
            logger.log_hyperparams(hparams, metrics=metrics, step=trainer.global_step)
        self.logged = {**hparams, **metrics}


class _EpochTick(Callback):
    """Advance the sweep's progress bar once per training epoch."""

    def __init__(self, bar: Any) -> None:
        self.bar = bar

    @override
    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.bar.update(1)


#: File name of the sweep's optimum summary, in the sweep directory (both axes).
SUMMARY_NAME = "summary.json"


def dataset_size_optima(results: Sequence[dict[str, Any]], metric: str = "hp/val_loss") -> list[dict[str, float]]:
    """Per dataset size, the ``tau_epoch`` (and its weight decay) with the lowest seed-averaged ``metric``.

    Example:
        >>> rows = [{"dataset_size": n, "tau_epoch": t, "weight_decay": 64 / (3e-3 * n * t), "seed": s,
        ...          "hp/val_loss": abs(t - 10) + s} for n in (150, 450) for t in (5.0, 10.0) for s in (0, 1)]
        >>> [(o["dataset_size"], o["tau_epoch"], round(o["weight_decay"], 2), o["metric"])
        ...  for o in dataset_size_optima(rows)]
        [(150, 10.0, 14.22, 0.5), (450, 10.0, 4.74, 0.5)]
    """
    grouped: dict[int, dict[float, tuple[float, list[float]]]] = {}
    for r in results:
        value = float(r[metric])
        points = grouped.setdefault(int(r["dataset_size"]), {})
        points.setdefault(float(r["tau_epoch"]), (float(r["weight_decay"]), []))[1].append(
            value if math.isfinite(value) else math.inf
        )
    optima = []
    for size, points in sorted(grouped.items()):
        tau, (wd, values) = min(points.items(), key=lambda item: sum(item[1][1]) / len(item[1][1]))
        optima.append({"dataset_size": size, "tau_epoch": tau, "weight_decay": wd, "metric": sum(values) / len(values)})
    return optima


def write_summary(results: Sequence[dict[str, Any]], path: Path, config: DemoConfig) -> dict[str, Any]:
    """Write the dataset-size sweep's ``{"axis": "dataset-size", "optimum": [...]}`` summary to ``path``."""
    summary = {
        "axis": "dataset-size",
        "metric": "hp/val_loss",
        "optimum": dataset_size_optima(results),
        "config": asdict(config),
    }
    path.write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def run_demo(config: DemoConfig, out: Path, *, plot: bool = True, progress: bool = True) -> Path:
    """Run the sweep into a fresh ``out/sweep_K`` and (unless ``plot=False``) draw it there; returns that dir."""
    sweep_dir = next_sweep_dir(out)
    sweep_dir.mkdir(parents=True)
    print(describe(config))
    from tqdm.auto import tqdm

    bar = tqdm(total=config.num_runs * config.epochs, unit="epoch", desc="sweep", disable=not progress)
    tick = _EpochTick(bar)
    start = time.perf_counter()
    results = []
    try:
        with quiet_sweep(single_thread=True):
            for size in config.sizes:
                for tau_epoch in config.tau_epochs:
                    for seed in config.seeds:
                        bar.set_postfix_str(f"N={size} tau_epoch={tau_epoch:g} seed={seed}")
                        results.append(run_one(config, size, tau_epoch, seed, sweep_dir, extra_callbacks=[tick]))
    finally:
        bar.close()
    elapsed = time.perf_counter() - start
    print(f"{config.num_runs} runs in {elapsed:.0f} s. TensorBoard logs: {sweep_dir}")
    write_summary(results, sweep_dir / SUMMARY_NAME, config)
    print(f"Summary: {sweep_dir / SUMMARY_NAME}")
    if plot:
        from lightning_tau.cli.plot import plot_sweep

        plot_sweep(sweep_dir, sweep_dir)
    largest = sweep_dir / run_name(max(config.sizes), config.tau_epochs[0], config.seeds[0])[0]
    print(
        f"Open them with:\n  tensorboard --logdir {sweep_dir}\n"
        "(HParams tab: every run. TensorBoard pre-selects no runs in a logdir of more than 40 runs, so for the"
        f" Custom Scalars dashboards\n select runs in the sidebar, or open one dataset size: tensorboard --logdir"
        f" {largest})"
    )
    return sweep_dir


# --- command line ----------------------------------------------------------------------------------------------


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``demo``."""
    d, w = DemoConfig(), WidthConfig()
    parser = subparsers.add_parser(
        "demo",
        help="Sweep weight decay x dataset size on bundled digits (a few minutes on a CPU) and plot it.",
        description=(
            "Train a small MLP on scikit-learn's bundled 8x8 digits (nothing is downloaded) for every training-set"
            " size x tau_epoch x seed, with TimescaleCallback setting AdamW's weight decay to"
            " B / (lr * N * tau_epoch), log every run to TensorBoard, and plot validation loss against weight"
            " decay and against tau_epoch. The optimal weight decay falls as N grows; the optimal tau_epoch"
            " moves much less. `--axis width` instead sweeps μP width x base weight decay at a fixed base learning"
            " rate, weight decay fixed across widths against TimescaleCallback, and fits the exponent of the best"
            " λ_base in the width multiplier (needs mup). Each call writes a new OUT/sweep_K directory with a"
            " summary.json of each line's optimum."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--axis",
        choices=AXES,
        default="dataset-size",
        help="what the sweep varies: 'dataset-size' (tau_epoch x N, TimescaleCallback in every run) or 'width'"
        " (μP width x λ_base at a fixed lr, fixed weight decay against TimescaleCallback; needs mup)",
    )
    parser.add_argument("--out", type=Path, default=Path("tau_runs"), help="root directory for the sweep's logs")
    parser.add_argument(
        "--sizes",
        type=positive_int,
        nargs="+",
        default=d.sizes,
        metavar="N",
        help="training-set sizes (at most 1797 - 397 = 1400)",
    )
    parser.add_argument(
        "--tau-epochs",
        type=positive_float,
        nargs="+",
        default=d.tau_epochs,
        metavar="TAU",
        help="EMA timescales in epochs (one weight decay per size each)",
    )
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=argparse.SUPPRESS,
        metavar="SEED",
        help=f"seeds per setting; the plot averages over them (default: {_ints(d.seeds)}; --axis width:"
        f" {_ints(w.seeds)})",
    )
    parser.add_argument(
        "--epochs",
        type=positive_int,
        default=argparse.SUPPRESS,
        help=f"epochs per run, the same for every run (default: {d.epochs}; --axis width: {w.epochs})",
    )
    parser.add_argument("--batch-size", type=positive_int, default=d.batch_size, help="batch size B")
    parser.add_argument("--lr", type=positive_float, default=d.lr, help="AdamW's initial learning rate")
    parser.add_argument(
        "--schedule",
        choices=("cosine", "constant"),
        default=d.schedule,
        help="learning-rate schedule (cosine decays to 0.1 x lr; weight decay stays fixed)",
    )
    parser.add_argument("--hidden", type=positive_int, default=d.hidden, help="MLP width")
    parser.add_argument(
        "--depth",
        type=positive_int,
        default=argparse.SUPPRESS,
        help=f"MLP linear layers before the output layer (default: {d.depth}; --axis width: {w.depth})",
    )
    parser.add_argument(
        "--norm",
        choices=("layer", "none"),
        default=d.norm,
        help="'layer': a LayerNorm after every linear layer (scale-invariant); 'none': plain MLP",
    )
    parser.add_argument(
        "--label-noise", type=fraction_below_one, default=d.label_noise, help="fraction of training labels randomized"
    )
    width = parser.add_argument_group("--axis width only")
    width.add_argument(
        "--widths",
        type=positive_int,
        nargs="+",
        default=argparse.SUPPRESS,
        metavar="WIDTH",
        help=f"hidden widths; the smallest is μP's base width (default: {_ints(w.widths)})",
    )
    width.add_argument(
        "--weight-decays",
        type=positive_float,
        nargs="+",
        default=argparse.SUPPRESS,
        metavar="LAMBDA",
        help="the λ_base grid: every width's weight decay in the 'fixed' arm; in the 'timescale' arm"
        " TimescaleCallback holds the base width's tau_iter = 1 / (lr_base λ_base), so the hidden matrices get"
        f" s λ_base (default: {' '.join(f'{x:g}' for x in w.weight_decays)})",
    )
    width.add_argument(
        "--lr-base",
        type=positive_float,
        default=argparse.SUPPRESS,
        help=f"η_base, fixed for the whole sweep; hidden matrices get η_base / s (default: {w.lr:g})",
    )
    width.add_argument(
        "--no-decay-input",
        action="store_true",
        default=argparse.SUPPRESS,
        help="decay only the hidden width x width matrices, not the 64 -> width input matrix",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small sweep that ignores the sweep options (dataset-size: 2 sizes x 3 timescales x 2 epochs,"
        " seconds; width: widths 16 64 256 x λ_base 8 32 128 512 x 3 seeds, 60 runs, minutes)",
    )
    parser.add_argument("--no-plot", action="store_true", help="log the runs but skip the figure")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=_main)
    return parser


def _ints(values: Sequence[int]) -> str:
    return " ".join(str(v) for v in values)


def _error(message: str) -> int:
    print(f"lightning-tau demo: error: {message}", file=sys.stderr)
    return 2


def _main(args: argparse.Namespace) -> int:
    if args.axis == "width":
        return _main_width(args)
    given = [f"--{name.replace('_', '-')}" for name in WIDTH_ONLY if hasattr(args, name)]
    if given:
        return _error(f"{' '.join(given)} apply to `--axis width` only (got --axis {args.axis}).")
    d = DemoConfig()
    if args.quick:
        config = DemoConfig(**vars(QUICK))
    else:
        config = DemoConfig(
            # duplicates would write the same run directory twice
            sizes=list(dict.fromkeys(args.sizes)),
            tau_epochs=list(dict.fromkeys(args.tau_epochs)),
            seeds=list(dict.fromkeys(getattr(args, "seeds", d.seeds))),
            epochs=getattr(args, "epochs", d.epochs),
            batch_size=args.batch_size,
            lr=args.lr,
            schedule=args.schedule,
            hidden=args.hidden,
            depth=getattr(args, "depth", d.depth),
            norm=args.norm,
            label_noise=args.label_noise,
        )
    too_big = [n for n in config.sizes if n > DIGITS_SIZE - config.val_size]
    if too_big:
        print(
            f"lightning-tau demo: error: --sizes {too_big} too large: the digits dataset has 1797 images and"
            f" {config.val_size} are held out, so use sizes up to {DIGITS_SIZE - config.val_size}.",
            file=sys.stderr,
        )
        return 2
    try:
        from lightning_tau.demos.digits import load_digits_tensors

        load_digits_tensors()
    except ImportError as err:
        print(f"lightning-tau demo: error: {err}", file=sys.stderr)
        return 1
    run_demo(config, args.out, plot=not args.no_plot, progress=not args.no_progress)
    return 0


#: Options that only ``--axis width`` reads (their argparse default is ``SUPPRESS``, so given means typed).
WIDTH_ONLY = ("widths", "weight_decays", "lr_base", "no_decay_input")

#: Options that only ``--axis dataset-size`` reads, with their defaults (typed with another value is an error).
DATASET_SIZE_ONLY = ("sizes", "tau_epochs", "lr", "hidden", "norm", "label_noise")


def _main_width(args: argparse.Namespace) -> int:
    d = DemoConfig()
    given = [f"--{name.replace('_', '-')}" for name in DATASET_SIZE_ONLY if getattr(args, name) != getattr(d, name)]
    if given:
        return _error(
            f"{' '.join(given)} apply to `--axis dataset-size` only; for `--axis width` use --widths,"
            " --weight-decays and --lr-base."
        )
    w = QUICK_WIDTH if args.quick else WidthConfig()
    config = WidthConfig(**{**vars(w)})
    config.batch_size, config.schedule = args.batch_size, args.schedule
    if not args.quick:
        config.widths = sorted(dict.fromkeys(getattr(args, "widths", w.widths)))
        config.weight_decays = sorted(dict.fromkeys(getattr(args, "weight_decays", w.weight_decays)))
        config.lr = getattr(args, "lr_base", w.lr)
        config.seeds = list(dict.fromkeys(getattr(args, "seeds", w.seeds)))
        config.epochs = getattr(args, "epochs", w.epochs)
        config.depth = getattr(args, "depth", w.depth)
        config.decay_input = not getattr(args, "no_decay_input", False)
    if len(config.widths) < 2:
        return _error(f"--widths {_ints(config.widths)}: give at least two widths to compare.")
    if len(config.weight_decays) < 3:
        return _error(
            f"--weight-decays {' '.join(f'{x:g}' for x in config.weight_decays)}: give at least three λ_base values"
            " (an interior optimum needs a worse neighbour on each side)."
        )
    if config.depth < 2:
        return _error(
            f"--depth {config.depth}: the width demo needs depth >= 2 (at least one hidden width x width matrix,"
            " the only weights μP's lr / s touches)."
        )
    try:
        from lightning_tau.demos.digits import load_digits_tensors
        from lightning_tau.demos.width import _import_mup

        load_digits_tensors()
        _import_mup()
    except ImportError as err:
        print(f"lightning-tau demo: error: {err}", file=sys.stderr)
        return 1
    run_width(config, args.out, plot=not args.no_plot, progress=not args.no_progress)
    return 0


def run_width(config: WidthConfig, out: Path, *, plot: bool = True, progress: bool = True) -> Path:
    """Run the width sweep (:func:`~lightning_tau.demos.width.run_width_demo`) into a new ``out/sweep_K``; return it."""
    from tqdm.auto import tqdm

    from lightning_tau.demos.width import run_width_demo

    sweep_dir = next_sweep_dir(out)
    sweep_dir.mkdir(parents=True)
    bar = tqdm(total=config.num_runs * config.epochs, unit="epoch", desc="width sweep", disable=not progress)
    try:
        with quiet_sweep(single_thread=True), warnings.catch_warnings():
            # the timescale arm starts from fixed-λ groups on purpose: the callback's pitfall warning is the point
            warnings.filterwarnings("ignore", message=r".*fixed-λ muP pitfall")
            run_width_demo(config, sweep_dir, plot=plot, extra_callbacks=[_EpochTick(bar)])
    finally:
        bar.close()
    print(f"Open the runs with:\n  tensorboard --logdir {sweep_dir}")
    return sweep_dir
