"""``lightning-tau demo``: sweep weight decay x dataset size on bundled digits and show where the optimum moves.

Each run is a Lightning fit of :class:`~lightning_tau.demos.digits.DigitsMLP` on a training set of ``N`` digits,
with :class:`~lightning_tau.TimescaleCallback` setting AdamW's weight decay from the run's ``tau_epoch``:
``weight_decay = B / (lr * N * tau_epoch)``. One ``tau_epoch`` grid per dataset size is therefore a different
weight-decay grid per size. Every run logs to TensorBoard (its own run directory, with ``dataset_size``,
``batch_size``, ``lr``, ``weight_decay``, ``tau_epoch`` and the final validation metrics as hparams), and
``lightning-tau plot`` draws the sweep at the end, Figure 1 of Wang & Aitchison (ICML 2025), and prints how far
each optimum moved from the smallest ``N`` to the largest. The paper finds the optimal ``tau_epoch`` stable while
the optimal weight decay falls with ``N``. The default sweep (seeds 0-2, N = 150 -> 1350; ``make demo`` on a fresh
clone, 2-core CPU, 2026-11-25, 214 s) gave best weight decay 22.2 / 4.17 / 3.03 and best ``tau_epoch`` 5 / 10 / 5 on
the grid: the optimal weight decay moved x7.33 while the optimal ``tau_epoch`` ended where it started (x1), though it
is a grid argmin over 7 points x2-x2.5 apart, with no interval. Each run also carries a
:class:`~lightning_tau.diagnostics.TimescaleMonitor` (timescales and weight RMS against its prediction).

``--axis width`` runs the finder's width axis instead (``TimescaleFinder(axis="width")`` on the demo's own μP task,
:mod:`lightning_tau.demos.width`): μP width x base weight decay ``λ_base`` at a fixed base learning rate, with
``TimescaleCallback(width_exponent=1)`` in every run, and the exponent of the best ``λ_base`` in the width with the
statistics of :mod:`lightning_tau.tuner.stats`. Both axes write ``summary.json`` into the sweep folder.

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
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import TensorBoardLogger
from typing_extensions import override

from lightning_tau import timescale as tau_math
from lightning_tau._quiet import quiet_sweep
from lightning_tau.callback import TimescaleCallback
from lightning_tau.cli._args import (
    fraction_above_zero,
    fraction_below_one,
    output_dir_problem,
    positive_float,
    positive_int,
    random_seed,
)
from lightning_tau.demos import DemoRun
from lightning_tau.demos.digits import DIGITS_SIZE, DigitsDataModule, DigitsMLP
from lightning_tau.demos.text import TextDemoConfig
from lightning_tau.demos.text_width import QUICK_HELD_OUT, TextWidthConfig
from lightning_tau.demos.width import WidthConfig
from lightning_tau.diagnostics import TimescaleMonitor, dashboards

__all__ = [
    "AXES",
    "QUICK",
    "QUICK_TEXT",
    "QUICK_WIDTH",
    "SUMMARY_NAME",
    "TASKS",
    "DemoConfig",
    "SweepConfig",
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
    "tensorboard_commands",
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

    #: The task's name in ``summary.json`` and ``--task``.
    task: ClassVar[str] = "digits"

    @property
    def num_runs(self) -> int:
        return len(self.sizes) * len(self.tau_epochs) * len(self.seeds)

    def describe(self) -> str:
        """What the sweep runs (:func:`describe`)."""
        return describe(self)

    def run_name(self, size: int, tau_epoch: float, seed: int) -> tuple[str, str]:
        """TensorBoard ``(name, version)`` of one run (:func:`run_name`)."""
        return run_name(size, tau_epoch, seed)

    def build_run(self, size: int, tau_epoch: float) -> DemoRun:
        """The digits MLP on ``size`` training digits, with ``TimescaleCallback(tau_epoch)``."""
        data = DigitsDataModule(
            train_size=size, val_size=self.val_size, batch_size=self.batch_size, label_noise=self.label_noise
        )
        # The callback sets the weight decay from `tau_epoch`; the model gets the same value up front only so its own
        # hparams (which TimescaleMonitor records too) show the decay actually used.
        model = DigitsMLP(
            hidden=self.hidden,
            depth=self.depth,
            norm=self.norm,  # type: ignore[arg-type]
            lr=self.lr,
            weight_decay=demo_weight_decay(self.lr, tau_epoch, size, self.batch_size),
            schedule=self.schedule,  # type: ignore[arg-type]
        )
        return DemoRun(
            model=model,
            datamodule=data,
            timescale=TimescaleCallback(tau_epoch=tau_epoch, verbose=False),
            hparams={"hidden": self.hidden, "depth": self.depth, "norm": self.norm, "label_noise": self.label_noise},
            trainer_kwargs={
                "accelerator": "cpu",
                "log_every_n_steps": max(1, math.ceil(size / self.batch_size)),  # about once per epoch
            },
        )


class SweepConfig(Protocol):
    """What the dataset-size sweep needs from a task's config: :class:`DemoConfig` (digits) or
    :class:`~lightning_tau.demos.text.TextDemoConfig` (the byte-level GPT)."""

    task: ClassVar[str]
    sizes: list[Any]
    tau_epochs: list[float]
    seeds: list[int]
    epochs: int
    lr: float
    schedule: str

    @property
    def num_runs(self) -> int: ...

    def describe(self) -> str: ...

    def run_name(self, size: Any, tau_epoch: float, seed: int) -> tuple[str, str]: ...

    def build_run(self, size: Any, tau_epoch: float) -> DemoRun: ...


#: What ``--quick`` runs: 2 sizes x 3 timescales x 2 epochs, a few seconds (for tests and a first look).
QUICK = DemoConfig(sizes=[100, 300], tau_epochs=[1.0, 10.0, 100.0], seeds=[0], epochs=2, hidden=32)

#: What ``--axis width --quick`` runs: widths 16 / 64 / 256 (s up to 16) x 4 λ_base (x4 steps) x 3 seeds, 30 epochs:
#: the full form's task on a coarser λ_base grid (36 finder trials).
QUICK_WIDTH = WidthConfig(weight_decays=[8.0, 32.0, 128.0, 512.0])

#: Values of ``--axis``.
AXES = ("dataset-size", "width")

#: Values of ``--task``: the dataset-size sweep's task.
TASKS = ("digits", "text")

#: What ``--task text --quick`` runs: 3 fractions of a 32,000-byte corpus x 4 timescales (x4 apart) x 32 epochs,
#: one seed, validation at the end only; about 5 CPU-minutes (one thread).
QUICK_TEXT = TextDemoConfig(
    sizes=[0.25, 0.5, 1.0],
    tau_epochs=[0.5, 2.0, 8.0, 32.0],
    seeds=[0],
    epochs=32,
    batch_size=16,
    warmup_fraction=0.0,
    block_size=64,
    n_layer=2,
    n_head=4,
    n_embd=64,
    max_tokens=32_000,
    val_tokens=32_000,
    val_every_n_epochs=32,
    accelerator="cpu",
)


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
    config: SweepConfig,
    size: Any,
    tau_epoch: float,
    seed: int,
    sweep_dir: Path,
    extra_callbacks: Sequence[Any] = (),
) -> dict[str, float]:
    """Fit one run of ``config``'s task and log it to ``sweep_dir/<name>/<version>`` (``config.run_name``); returns
    its hparams + metrics."""
    pl.seed_everything(seed, verbose=False)
    run = config.build_run(size, tau_epoch)
    record = _RecordRun(run.timescale, config, seed, run.hparams)
    name, version = config.run_name(size, tau_epoch, seed)
    logger = TensorBoardLogger(save_dir=str(sweep_dir), name=name, version=version, default_hp_metric=False)
    trainer = pl.Trainer(
        devices=1,
        max_epochs=config.epochs,
        logger=logger,
        # `record` writes the run's HParams record (sweep knobs, seed, both final metrics); TensorBoard keeps only a
        # run's first, so the monitor logs its scalars and dashboards but no record of its own
        callbacks=[run.timescale, record, TimescaleMonitor(log_hparams=False), *extra_callbacks],
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        num_sanity_val_steps=0,
        **run.trainer_kwargs,
    )
    trainer.fit(run.model, datamodule=run.datamodule)
    return dict(record.logged)


class _RecordRun(Callback):
    """At train end, write the run's HParams record: the sweep's knobs, what ``TimescaleCallback`` resolved, and
    the final validation metrics (``hp/val_loss``, ``hp/val_error``)."""

    def __init__(
        self, timescale: TimescaleCallback, config: SweepConfig, seed: int, task_hparams: dict[str, Any]
    ) -> None:
        self.timescale = timescale
        self.config = config
        self.seed = seed
        self.task_hparams = task_hparams
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
            **self.task_hparams,
        }
        metrics = {
            "hp/val_loss": float(trainer.callback_metrics["val/loss"]),
            "hp/val_error": float(trainer.callback_metrics["val/error"]),
        }
        for logger in trainer.loggers:
            if isinstance(logger, TensorBoardLogger):  # no per-run HParams config: the sweep writes one at its root
                dashboards.write_sweep_run_hparams(logger, hparams, metrics, trainer.global_step)
            else:
                logger.log_hyperparams(hparams, metrics=metrics, step=trainer.global_step)
        self.logged = {**hparams, **metrics}


class _EpochTick(Callback):
    """Advance the sweep's progress bar by ``work`` at the end of every training epoch."""

    def __init__(self, bar: Any, work: int = 1) -> None:
        self.bar = bar
        self.work = work

    @override
    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.bar.update(self.work)


def _epoch_work(size: int, batch_size: int) -> int:
    """What one epoch of a dataset-size run weighs on the progress bar: its optimizer steps ``ceil(N / B)`` plus one
    for the validation batch, so that the bar (and its ETA) moves with the time an epoch takes, not the count.

    Example:
        >>> _epoch_work(150, 64), _epoch_work(1350, 64)  # a run on 1350 digits takes about 6x as long
        (4, 23)
    """
    return math.ceil(size / batch_size) + 1


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


def write_summary(results: Sequence[dict[str, Any]], path: Path, config: SweepConfig) -> dict[str, Any]:
    """Write the dataset-size sweep's ``{"axis": "dataset-size", "task": ..., "optimum": [...]}`` summary to
    ``path``."""
    summary = {
        "axis": "dataset-size",
        "task": config.task,
        "metric": "hp/val_loss",
        "optimum": dataset_size_optima(results),
        "config": asdict(config),
    }
    path.write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def run_demo(config: SweepConfig, out: Path, *, plot: bool = True, progress: bool = True) -> Path:
    """Run the sweep into a fresh ``out/sweep_K`` and (unless ``plot=False``) draw it there; returns that dir."""
    sweep_dir = next_sweep_dir(out)
    sweep_dir.mkdir(parents=True)
    print(config.describe())
    from tqdm.auto import tqdm

    per_setting = len(config.tau_epochs) * len(config.seeds) * config.epochs
    total = sum(_epoch_work(size, config.batch_size) for size in config.sizes) * per_setting
    bar = tqdm(total=total, unit="step", desc="sweep", disable=not progress)
    start = time.perf_counter()
    results = []
    try:
        with quiet_sweep(single_thread=True):
            for size in config.sizes:
                tick = _EpochTick(bar, _epoch_work(size, config.batch_size))
                for tau_epoch in config.tau_epochs:
                    for seed in config.seeds:
                        bar.set_postfix_str(f"size={size:g} tau_epoch={tau_epoch:g} seed={seed}")
                        results.append(run_one(config, size, tau_epoch, seed, sweep_dir, extra_callbacks=[tick]))
    finally:
        bar.close()
    elapsed = time.perf_counter() - start
    print(f"{config.num_runs} runs in {elapsed:.0f} s. TensorBoard logs: {sweep_dir}")
    write_summary(results, sweep_dir / SUMMARY_NAME, config)
    # the HParams tab's columns: the hparams that vary across the runs first (tau_epoch, weight_decay, ...)
    metrics = [key for key in results[0] if key.startswith("hp/")]
    swept = {key: [r[key] for r in results] for key in results[0] if key not in metrics}
    dashboards.write_sweep_hparams_config(sweep_dir, swept, metrics)
    print(f"Summary: {sweep_dir / SUMMARY_NAME}")
    if plot:
        from lightning_tau.cli.plot import plot_sweep

        plot_sweep(sweep_dir, sweep_dir)
    print(tensorboard_commands(config, sweep_dir))
    return sweep_dir


def tensorboard_commands(config: DemoConfig, sweep_dir: Path) -> str:
    """What the demo prints last: first a TensorBoard view that opens on charts (the largest size, first seed: one
    run per ``tau_epoch``, each its own colour), then the whole sweep for the HParams tab.

    TensorBoard pre-selects no run in a logdir of more than 40, so ``--logdir`` on the sweep opens on empty charts;
    one dataset size of the default sweep is 21 runs, which repeat TensorBoard's 7 colours and pile up the shaded
    bands. ``--logdir_spec`` names each run (``tau_epoch=5``); it cannot take a path with a comma or a colon, so
    then the first view is the size's folder.

    Example:
        >>> print(tensorboard_commands(DemoConfig(sizes=[150], tau_epochs=[2.0, 20.0], seeds=[0, 1]), Path("r")))
        Dashboards (Custom Scalars tab) of N=150, seed 0, one run per tau_epoch:
          tensorboard --logdir_spec tau_epoch=2:r/N0150/tau_epoch=2_seed0,tau_epoch=20:r/N0150/tau_epoch=20_seed0
        Every run (HParams tab: one row per run, tau_epoch and weight_decay first):
          tensorboard --logdir r
    """
    size, seed = max(config.sizes), config.seeds[0]
    runs = [
        (f"tau_epoch={tau:g}", sweep_dir.joinpath(*config.run_name(size, tau, seed)))
        for tau in sorted(config.tau_epochs)
    ]
    if any("," in str(path) or ":" in str(path) for _, path in runs):
        first = f"tensorboard --logdir {sweep_dir / config.run_name(size, config.tau_epochs[0], seed)[0]}"
        which = f"N={size}, every seed"
    else:
        first = "tensorboard --logdir_spec " + ",".join(f"{name}:{path}" for name, path in runs)
        which = f"N={size}, seed {seed}, one run per tau_epoch"
    return (
        f"Dashboards (Custom Scalars tab) of {which}:\n  {first}\n"
        "Every run (HParams tab: one row per run, tau_epoch and weight_decay first):\n"
        f"  tensorboard --logdir {sweep_dir}"
    )


# --- command line ----------------------------------------------------------------------------------------------


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``demo``."""
    d, w, t = DemoConfig(), WidthConfig(), TextDemoConfig()
    parser = subparsers.add_parser(
        "demo",
        help="Sweep weight decay x dataset size on bundled digits (a few minutes on a CPU) and plot it.",
        description=(
            "Train a small MLP on scikit-learn's bundled 8x8 digits (nothing is downloaded) for every training-set"
            " size x tau_epoch x seed, with TimescaleCallback setting AdamW's weight decay to"
            " B / (lr * N * tau_epoch), log every run to TensorBoard, and plot validation loss against weight"
            " decay and against tau_epoch. The optimal weight decay falls as N grows; the optimal tau_epoch"
            " moves much less. `--axis width` instead runs the timescale finder's width axis: μP width x base"
            " weight decay λ_base at a fixed base learning rate, TimescaleCallback(width_exponent=1) in every run,"
            " and the exponent of the best λ_base in the width with its interval and verdict (needs mup)."
            " `--task text` runs the dataset-size sweep on a small"
            " byte-level GPT over the standard library's own .py files (fractions of the corpus; nothing is"
            " downloaded); `--task text --axis width` the width sweep on a μP version of it (--widths are n_embd"
            " values). Each call writes a new OUT/sweep_K directory with a summary.json of each line's optimum."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--axis",
        choices=AXES,
        default="dataset-size",
        help="what the sweep varies: 'dataset-size' (tau_epoch x N, TimescaleCallback in every run) or 'width'"
        " (the finder's width axis: μP width x λ_base at a fixed lr; needs mup)",
    )
    parser.add_argument(
        "--task",
        choices=TASKS,
        default="digits",
        help="'digits': an MLP on scikit-learn's bundled digits; 'text': a byte-level GPT on the standard library's"
        " own sources (with --axis width: the μP width sweep, --widths being n_embd)",
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
        default=argparse.SUPPRESS,
        metavar="TAU",
        help="EMA timescales in epochs (one weight decay per size each; default: digits"
        f" {' '.join(f'{x:g}' for x in d.tau_epochs)}; --task text {' '.join(f'{x:g}' for x in t.tau_epochs)})",
    )
    parser.add_argument(
        "--seeds",
        type=random_seed,
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
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=argparse.SUPPRESS,
        help=f"batch size B (default: {d.batch_size}; --task text: {t.batch_size} windows of --block-size tokens)",
    )
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
        help="the λ_base grid; each value is the finder's tau_epoch = 1 / (lr_base M λ_base), so the hidden"
        f" matrices get s λ_base (default: {' '.join(f'{x:g}' for x in w.weight_decays)})",
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
    text = parser.add_argument_group("--task text only")
    text.add_argument(
        "--fractions",
        type=fraction_above_zero,
        nargs="+",
        default=argparse.SUPPRESS,
        metavar="F",
        help=f"shares of the corpus to train on, nested (default: {' '.join(f'{x:g}' for x in t.sizes)})",
    )
    text.add_argument(
        "--max-tokens",
        type=positive_int,
        default=argparse.SUPPRESS,
        help=f"training bytes at fraction 1 (default: {t.max_tokens:,}; the corpus holds about 4 MB)",
    )
    text.add_argument(
        "--val-tokens",
        type=positive_int,
        default=argparse.SUPPRESS,
        help=f"validation bytes, from held-out files (default: {t.val_tokens:,})",
    )
    for flag, value, what in (
        ("--block-size", t.block_size, "context length in tokens (bytes)"),
        ("--n-layer", t.n_layer, "transformer blocks"),
        ("--n-head", t.n_head, "attention heads"),
        ("--n-embd", t.n_embd, "embedding width"),
    ):
        text.add_argument(flag, type=positive_int, default=argparse.SUPPRESS, help=f"{what} (default: {value})")
    text.add_argument(
        "--accelerator",
        default=argparse.SUPPRESS,
        help=f"the Trainer's accelerator: cpu, gpu, auto, ... (default: {t.accelerator})",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small sweep that ignores the sweep options (dataset-size: 2 sizes x 3 timescales x 2 epochs,"
        f" seconds; width: widths {_ints(QUICK_WIDTH.widths)} x λ_base {_floats(QUICK_WIDTH.weight_decays)} x"
        f" {len(QUICK_WIDTH.seeds)} seeds, {QUICK_WIDTH.num_runs} runs, minutes); with --task text a small"
        f" CPU sweep, minutes ({len(QUICK_TEXT.sizes)} fractions x {len(QUICK_TEXT.tau_epochs)} timescales x"
        f" {QUICK_TEXT.epochs} epochs; with --axis width: widths {_ints(QUICK_TEXT_WIDTH.widths)} x"
        f" {len(QUICK_TEXT_WIDTH.weight_decays)} λ_base x {len(QUICK_TEXT_WIDTH.seeds)} seeds,"
        f" {QUICK_TEXT_WIDTH.num_runs} runs)",
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
    problem = output_dir_problem(args.out, "--out")
    if problem:
        return _error(problem)
    if args.task == "text":
        return _main_text(args)
    given = [f"--{name.replace('_', '-')}" for name in TEXT_ONLY if hasattr(args, name)]
    if given:
        return _error(f"{' '.join(given)} apply to `--task text` only (got --task {args.task}).")
    if args.axis == "width":
        return _main_width_preset(args, WIDTH_PRESETS[("digits", "width")])
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
            tau_epochs=list(dict.fromkeys(getattr(args, "tau_epochs", d.tau_epochs))),
            seeds=list(dict.fromkeys(getattr(args, "seeds", d.seeds))),
            epochs=getattr(args, "epochs", d.epochs),
            batch_size=getattr(args, "batch_size", d.batch_size),
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
    too_short = _too_short_timescale(config)
    if too_short:
        return _error(too_short)
    try:
        from lightning_tau.demos.digits import load_digits_tensors

        load_digits_tensors()
    except ImportError as err:
        print(f"lightning-tau demo: error: {err}", file=sys.stderr)
        return 1
    run_demo(config, args.out, plot=not args.no_plot, progress=not args.no_progress)
    return 0


#: Options that only ``--task text`` reads (argparse default ``SUPPRESS``: given means typed).
TEXT_ONLY = ("fractions", "max_tokens", "val_tokens", "block_size", "n_layer", "n_head", "n_embd", "accelerator")

#: Options of the digits MLP that ``--task text`` does not read, with their defaults (typed with another value,
#: or at all for ``--depth``, is an error).
DIGITS_ONLY = ("sizes", "hidden", "norm", "label_noise", "depth")


def _main_text(args: argparse.Namespace) -> int:
    """``--task text``: the dataset-size sweep on the byte-level GPT (:mod:`lightning_tau.demos.text`)."""
    if args.axis == "width":
        return _main_width_preset(args, WIDTH_PRESETS[("text", "width")])
    d = DemoConfig()
    given = [f"--{name.replace('_', '-')}" for name in WIDTH_ONLY if hasattr(args, name)]
    given += [
        f"--{name.replace('_', '-')}"
        for name in DIGITS_ONLY
        if getattr(args, name, getattr(d, name)) != getattr(d, name) or (name == "depth" and hasattr(args, name))
    ]
    if given:
        return _error(
            f"{' '.join(given)} do not apply to `--task text`; it takes --fractions, --max-tokens, --val-tokens,"
            " --block-size, --n-layer, --n-head, --n-embd and --accelerator."
        )
    t = QUICK_TEXT if args.quick else TextDemoConfig()
    config = TextDemoConfig(**vars(t))
    if not args.quick:
        config.sizes = sorted(dict.fromkeys(getattr(args, "fractions", t.sizes)))
        config.tau_epochs = list(dict.fromkeys(getattr(args, "tau_epochs", t.tau_epochs)))
        config.seeds = list(dict.fromkeys(getattr(args, "seeds", t.seeds)))
        config.lr, config.schedule = args.lr, args.schedule
        for name in ("epochs", "batch_size", "max_tokens", "val_tokens", "block_size", "n_layer", "n_head", "n_embd"):
            setattr(config, name, getattr(args, name, getattr(t, name)))
        config.accelerator = getattr(args, "accelerator", t.accelerator)
    if config.n_embd % config.n_head:
        return _error(f"--n-embd {config.n_embd} must be a multiple of --n-head {config.n_head} (equal head widths).")
    try:
        from lightning_tau.demos.text import load_stdlib_corpus

        steps = {}
        for fraction in config.sizes:  # every size has at least one batch, the validation set one window
            data = config.datamodule(fraction)
            steps[fraction] = data.dataset_size // data.tokens_per_step
        load_stdlib_corpus(config.max_tokens, config.val_tokens)  # the corpus holds that many bytes
    except (ValueError, FileNotFoundError) as err:
        return _error(str(err))
    fraction = min(steps, key=steps.__getitem__)
    short = [tau for tau in config.tau_epochs if tau * steps[fraction] <= 1]
    if short:
        return _error(
            f"--tau-epochs {_floats(short)}: at fraction {fraction:g} an epoch is {steps[fraction]} optimizer"
            f" step{'s' if steps[fraction] > 1 else ''}, so tau_epoch={short[0]:g} is {short[0] * steps[fraction]:.3g}"
            " steps (lr * weight_decay >= 1 zeroes or flips the weights every step). Use --tau-epochs above"
            f" {1 / steps[fraction]:.3g} (one step); good values are several epochs."
        )
    run_demo(config, args.out, plot=not args.no_plot, progress=not args.no_progress)
    return 0


def _too_short_timescale(config: DemoConfig) -> str | None:
    """The error for a ``tau_epoch`` of one optimizer step or less at some size (``lr * weight_decay >= 1``), or
    of more optimizer steps than a float holds."""
    for size in sorted(config.sizes):
        steps = math.ceil(size / config.batch_size)
        endless = [tau for tau in config.tau_epochs if not math.isfinite(tau * steps)]
        if endless:
            return (
                f"--tau-epochs {_floats(endless)}: at N={size}, B={config.batch_size} an epoch is {steps} optimizer"
                f" steps, so tau_epoch={endless[0]:g} is more optimizer steps than a float holds. Use --tau-epochs"
                f" below {sys.float_info.max / steps:.3g}; good values are several epochs."
            )
        short = [tau for tau in config.tau_epochs if tau * steps <= 1]
        if short:
            return (
                f"--tau-epochs {_floats(short)}: at N={size}, B={config.batch_size} an epoch is {steps} optimizer"
                f" step{'s' if steps > 1 else ''}, so tau_epoch={short[0]:g} is {short[0] * steps:.3g} steps"
                " (lr * weight_decay >= 1 zeroes or flips the weights every step). Use --tau-epochs above"
                f" {1 / steps:.3g} (one step); good values are several epochs."
            )
    return None


def _floats(values: Sequence[float]) -> str:
    return " ".join(f"{v:g}" for v in values)


#: What ``--task text --axis width --quick`` runs: the held-out-file regime (see ``QUICK_HELD_OUT``).
QUICK_TEXT_WIDTH = QUICK_HELD_OUT


def _width_grid_problem(config: WidthConfig | TextWidthConfig) -> str | None:
    """What is wrong with a width sweep's grid (too few widths or λ_base, a step that zeroes the weights), or None."""
    if len(config.widths) < 2:
        return f"--widths {_ints(config.widths)}: give at least two widths to compare."
    if len(config.weight_decays) < 3:
        return (
            f"--weight-decays {' '.join(f'{x:g}' for x in config.weight_decays)}: give at least three λ_base values"
            " (an interior optimum needs a worse neighbour on each side)."
        )
    if config.lr * config.weight_decays[-1] >= 1:
        return (
            f"--lr-base {config.lr:g} x --weight-decays {config.weight_decays[-1]:g} >= 1: every step would shrink"
            " the decaying weights to zero or past it (lr_base x λ_base is what the base width and the vector-like"
            " weights step with). Use a smaller --lr-base or λ_base."
        )
    return None


def _text_width_rejects(args: argparse.Namespace) -> str | None:
    """``--task text --axis width``: the options it does not read, typed."""
    d = DemoConfig()
    given = [f"--{name.replace('_', '-')}" for name in ("fractions", "tau_epochs", "n_embd") if hasattr(args, name)]
    given += [
        f"--{name.replace('_', '-')}"
        for name in (*DIGITS_ONLY, "lr")
        if getattr(args, name, getattr(d, name)) != getattr(d, name) or (name == "depth" and hasattr(args, name))
    ]
    if given:
        return (
            f"{' '.join(given)} do not apply to `--task text --axis width`; it takes --widths (the n_embd values),"
            " --weight-decays, --lr-base, --no-decay-input, --seeds, --epochs, --batch-size, --schedule,"
            " --max-tokens, --val-tokens, --block-size, --n-layer, --n-head and --accelerator."
        )
    return None


def _text_width_task_problem(config: TextWidthConfig) -> str | None:
    """``--task text --axis width``: widths the heads do not divide, sizes the corpus does not hold."""
    odd = [w for w in config.widths if w % config.n_head]
    if odd or 2 * config.base_width % config.n_head:
        return (
            f"--widths {_ints(odd or config.widths)}: every width must be a multiple of --n-head {config.n_head}"
            " (the heads are the same at every width)."
        )
    from lightning_tau.demos.text import load_stdlib_corpus

    try:
        config.datamodule()  # at least one batch, the validation set one window
        load_stdlib_corpus(config.max_tokens, config.val_tokens)  # the corpus holds that many bytes
    except (ValueError, FileNotFoundError) as err:
        return str(err)
    return None


def _digits_width_rejects(args: argparse.Namespace) -> str | None:
    """``--axis width`` on digits: the dataset-size options, typed."""
    d = DemoConfig()
    given = [
        f"--{name.replace('_', '-')}"
        for name in DATASET_SIZE_ONLY
        if getattr(args, name, getattr(d, name)) != getattr(d, name)
    ]
    if given:
        return (
            f"{' '.join(given)} apply to `--axis dataset-size` only; for `--axis width` use --widths,"
            " --weight-decays and --lr-base."
        )
    return None


def _digits_width_task_problem(config: WidthConfig) -> str | None:
    if config.depth < 2:
        return (
            f"--depth {config.depth}: the width demo needs depth >= 2 (at least one hidden width x width matrix,"
            " the only weights μP's lr / s touches)."
        )
    return None


def _load_digits() -> None:
    from lightning_tau.demos.digits import load_digits_tensors

    load_digits_tensors()


@dataclass(frozen=True)
class WidthPreset:
    """One ``(task, --axis width)`` row: the task's configuration of the finder's width axis and how argparse fills it.

    Attributes:
        config: the task's config class (:class:`~lightning_tau.demos.width.WidthConfig` or
            :class:`~lightning_tau.demos.text_width.TextWidthConfig`); its defaults are the full form.
        quick: what ``--quick`` runs (the sweep options are then ignored).
        options: ``(argparse name, config field)`` pairs copied from the command line when given (not ``--quick``).
        always: ``(argparse name, config field)`` pairs copied even with ``--quick``.
        rejects: the options of other rows typed for this one, as an error, or ``None``.
        task_problem: what the task cannot run with this config, or ``None``.
        load: imports/reads what the task needs (an ``ImportError`` is exit code 1).
    """

    config: type
    quick: Any
    options: tuple[tuple[str, str], ...]
    always: tuple[tuple[str, str], ...]
    rejects: Callable[[argparse.Namespace], str | None]
    task_problem: Callable[[Any], str | None]
    load: Callable[[], None]


#: Options every width row reads: (argparse name, config field).
_WIDTH_OPTIONS = (("widths", "widths"), ("weight_decays", "weight_decays"), ("lr_base", "lr"), ("seeds", "seeds"))
_WIDTH_OPTIONS += (("epochs", "epochs"),)

#: The width rows of ``lightning-tau demo``: ``(task, axis) -> configuration``.
WIDTH_PRESETS: dict[tuple[str, str], WidthPreset] = {
    ("digits", "width"): WidthPreset(
        config=WidthConfig,
        quick=QUICK_WIDTH,
        options=(*_WIDTH_OPTIONS, ("depth", "depth")),
        always=(("batch_size", "batch_size"), ("schedule", "schedule")),
        rejects=_digits_width_rejects,
        task_problem=_digits_width_task_problem,
        load=_load_digits,
    ),
    ("text", "width"): WidthPreset(
        config=TextWidthConfig,
        quick=QUICK_TEXT_WIDTH,
        options=(
            *_WIDTH_OPTIONS,
            ("schedule", "schedule"),
            *((name, name) for name in ("batch_size", "max_tokens", "val_tokens", "block_size", "n_layer", "n_head")),
            ("accelerator", "accelerator"),
        ),
        always=(),
        rejects=_text_width_rejects,
        task_problem=_text_width_task_problem,
        load=lambda: None,
    ),
}


def _main_width_preset(args: argparse.Namespace, preset: WidthPreset) -> int:
    """``--axis width`` on any task: fill the row's configuration from argparse, check it, run the finder's axis."""
    problem = preset.rejects(args)
    if problem:
        return _error(problem)
    config = preset.config(**vars(preset.quick if args.quick else preset.config()))
    pairs = preset.always + (() if args.quick else preset.options)
    for name, attr in pairs:
        if hasattr(args, name):  # given on the command line (or a plain option with its default)
            value = getattr(args, name)
            if attr in ("widths", "weight_decays"):
                value = sorted(dict.fromkeys(value))
            elif attr == "seeds":
                value = list(dict.fromkeys(value))
            setattr(config, attr, value)
    if not args.quick and hasattr(args, "no_decay_input"):
        config.decay_input = False
    problem = _width_grid_problem(config) or preset.task_problem(config)
    if problem:
        return _error(problem)
    try:
        from lightning_tau.demos.width import _import_mup

        preset.load()
        _import_mup()
    except ImportError as err:
        print(f"lightning-tau demo: error: {err}", file=sys.stderr)
        return 1
    run_width(config, args.out, plot=not args.no_plot, progress=not args.no_progress)
    return 0


#: Options that only ``--axis width`` reads (their argparse default is ``SUPPRESS``, so given means typed).
WIDTH_ONLY = ("widths", "weight_decays", "lr_base", "no_decay_input")

#: Options that only ``--axis dataset-size`` reads, with their defaults (typed with another value is an error).
DATASET_SIZE_ONLY = ("sizes", "tau_epochs", "lr", "hidden", "norm", "label_noise")


def run_width(config: WidthConfig | TextWidthConfig, out: Path, *, plot: bool = True, progress: bool = True) -> Path:
    """Run the finder's width axis on the config's task (:func:`~lightning_tau.demos.width.run_width_demo`) into a
    new ``out/sweep_K``; return it."""
    from lightning_tau.demos.width import run_width_demo

    sweep_dir = next_sweep_dir(out)
    sweep_dir.mkdir(parents=True)
    with quiet_sweep(single_thread=True):
        run_width_demo(config, sweep_dir, plot=plot, progress=progress)
    print(f"Open the runs with:\n  tensorboard --logdir {sweep_dir / 'tb'}")
    return sweep_dir
