"""The dataset-size demos: does the best ``tau_epoch`` move with ``N``? The finder's dataset-size axis on a demo task.

Wang & Aitchison (ICML 2025, Sec. 4.1, Figure 1) sweep weight decay at several dataset sizes and find the optimal
weight decay falling with ``N`` while the optimal EMA timescale ``tau_epoch`` stays put: "tune on a fraction, train
on all". This module is a configuration of :class:`~lightning_tau.tuner.finder.TimescaleFinder`'s dataset-size axis
(``axis="dataset_size"``): each task names its full training set, its model and its grid, and
:func:`run_size_demo` runs the finder's sweep of ``tau_epoch`` on a subset holding each fraction of that set (one
Lightning fit per ``(fraction, tau_epoch, seed)``, with :class:`~lightning_tau.TimescaleCallback` setting the weight
decay to ``B / (lr N tau_epoch)`` for the subset's ``N``, so one ``tau_epoch`` grid is a different weight-decay
grid per size). The statistics (the exponent of the best ``tau_epoch`` in ``N``, its interval or the reason there is
none, per-seed grid optima) are :mod:`lightning_tau.tuner.stats`'s and the verdict
:mod:`lightning_tau.tuner.verdicts`'s, through the finder's :class:`~lightning_tau.tuner.axes.AxisResult`.

The tasks: :class:`SizeConfig` (scikit-learn's bundled digits and :class:`~lightning_tau.demos.digits.DigitsMLP`,
``lightning-tau demo``; ``sizes`` are training digits, converted to fractions of the 1,400 not held out) and
:class:`~lightning_tau.demos.text.TextDemoConfig` (a byte-level GPT on the standard library's sources,
``lightning-tau demo --task text``; its ``sizes`` are fractions). Every run logs to TensorBoard under
``sweep_dir/tb`` with an HParams record (``dataset_size``, ``fraction``, ``batch_size``, ``lr``, ``weight_decay``,
``tau_epoch``, ... and the final ``hp/val_loss``, ``hp/val_error``) and a
:class:`~lightning_tau.diagnostics.TimescaleMonitor`, so ``lightning-tau plot`` draws Figure 1 from the sweep.

What the default digits sweep shows (``python -m lightning_tau demo``, N = 150 / 450 / 1350 x 7 ``tau_epoch`` from 2
to 200 x seeds 0-2, 40 epochs; 63 runs, 830 s on a loaded 2-core CPU, 2026-11-25): best ``tau_epoch`` on the grid
5 / 10 / 20 (smoothed 5.11 / 9.87 / 22.6; per seed at N = 1350: 5, 200, 10), best weight decay 22.2 / 4.17 / 0.758
(x29.3). The exponent of the best ``tau_epoch`` in ``N`` is +0.68 with 95 % interval [-0.97, +1.76] (+0.63 on the
grid optima), and no size's optimum beats both its neighbours in a paired test: the verdict is that "tune on a
fraction, train on all" is not rejected but not established; the interval is too wide (three seeds on a flat curve)
to say whether the best ``tau_epoch`` stays put on this task. On another 2-core CPU (2026-11-26, the same code) the
same command gives 10 / 10 / 20 (at N = 150, ``tau_epoch`` 5 and 10 differ by 0.0001 in loss) and an exponent of
+0.46 with interval [-0.03, +0.51]: the same verdict.
"""

from __future__ import annotations

import json
import math
import os
import time
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import TensorBoardLogger
from typing_extensions import override

from lightning_tau import timescale as tau_math
from lightning_tau._constants import SUMMARY_NAME
from lightning_tau.callback import TimescaleCallback
from lightning_tau.demos.digits import DIGITS_SIZE, DigitsDataModule, DigitsMLP
from lightning_tau.diagnostics import TimescaleMonitor, dashboards

__all__ = ["METRIC", "SUMMARY_NAME", "SizeConfig", "SizeTask", "run_size_demo", "size_summary", "tensorboard_commands"]

#: The metric the finder compares: the validation loss after the last epoch.
METRIC = "val/loss"

#: File name (without suffix) of the finder's axis figure.
FIGURE_STEM = "size_sweep"


class SizeTask(Protocol):
    """What :func:`run_size_demo` needs from a task's configuration (:class:`SizeConfig`,
    :class:`~lightning_tau.demos.text.TextDemoConfig`)."""

    task: ClassVar[str]
    tau_epochs: list[float]
    seeds: list[int]
    epochs: int
    lr: float
    schedule: str

    @property
    def num_runs(self) -> int: ...

    def describe(self) -> str: ...

    def fractions(self) -> list[float]: ...

    def full_datamodule(self) -> pl.LightningDataModule: ...

    def model(self) -> pl.LightningModule: ...

    def trainer_kwargs(self) -> dict[str, Any]: ...

    def task_hparams(self) -> dict[str, Any]: ...


@dataclass
class SizeConfig:
    """The digits dataset-size demo: every ``(size, tau_epoch, seed)`` is a finder trial.

    Attributes:
        sizes: training-set sizes ``N`` (digits; at most ``1797 - val_size``); the finder trains on that share of
            the ``1797 - val_size`` digits not held out (nested random subsets).
        tau_epochs: EMA timescales in epochs; each gives ``weight_decay = B / (lr * N * tau_epoch)``.
        seeds: seeds (model init and batch order); the finder pairs runs of the same seed across the grid.
        epochs: training epochs per run, the same for every size (as in the paper).
        batch_size: ``B``.
        lr: AdamW's initial learning rate.
        schedule: ``"cosine"`` (to ``0.1 * lr``, as in the paper) or ``"constant"``.
        hidden: MLP width.
        depth: MLP hidden layers.
        norm: ``"layer"`` (a LayerNorm after every linear layer: scale-invariant) or ``"none"``.
        label_noise: fraction of training labels randomized.
        val_size: held-out digits, the same for every run.

    Example:
        >>> SizeConfig(sizes=[140, 700]).fractions()
        [0.1, 0.5]
        >>> SizeConfig(sizes=[200, 1500]).fractions()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: `SizeConfig(sizes=[200, 1500])` is not valid: 1500 is more than the 1400 digits left for ...
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

    @property
    def train_size(self) -> int:
        """The digits not held out: the training set the fractions are shares of."""
        return DIGITS_SIZE - self.val_size

    def fractions(self) -> list[float]:
        """``sizes`` as the finder's fractions of :attr:`train_size`, increasing (each keeps exactly its ``N``)."""
        too_big = [n for n in self.sizes if n > self.train_size]
        if too_big:
            raise ValueError(
                f"`SizeConfig(sizes={list(self.sizes)})` is not valid: {too_big[0]} is more than the {self.train_size}"
                f" digits left for training (the dataset has {DIGITS_SIZE} images and {self.val_size} are held out):"
                f" use sizes up to {self.train_size}."
            )
        return [n / self.train_size for n in sorted(self.sizes)]

    def full_datamodule(self) -> DigitsDataModule:
        """All the training digits; the finder subsets them."""
        return DigitsDataModule(
            train_size=self.train_size, val_size=self.val_size, batch_size=self.batch_size, label_noise=self.label_noise
        )

    def model(self) -> DigitsMLP:
        """A fresh MLP (its ``weight_decay`` is the placeholder the callback replaces)."""
        return DigitsMLP(
            hidden=self.hidden,
            depth=self.depth,
            norm=self.norm,  # type: ignore[arg-type]
            lr=self.lr,
            schedule=self.schedule,  # type: ignore[arg-type]
        )

    def trainer_kwargs(self) -> dict[str, Any]:
        """The finder's ``trainer_kwargs`` (without callbacks)."""
        return {"max_epochs": self.epochs, "accelerator": "cpu", "devices": 1}

    def task_hparams(self) -> dict[str, Any]:
        """The task's own hparams for every run's HParams record."""
        return {"hidden": self.hidden, "depth": self.depth, "norm": self.norm, "label_noise": self.label_noise}

    def describe(self) -> str:
        """What the sweep runs, with the weight-decay grid each dataset size gets from the ``tau_epoch`` grid.

        Example:
            >>> print(SizeConfig(sizes=[100, 400], tau_epochs=[1.0, 10.0], seeds=[0], epochs=5).describe())
            Sweep (the finder's dataset-size axis): 2 sizes x 2 tau_epochs x 1 seeds = 4 runs x 5 epochs; B=64, lr=0.003 (cosine), MLP 128x2, norm=layer.
              N=100: weight decay 16.7 .. 167 (tau_epoch 10 .. 1)
              N=400: weight decay 4.76 .. 47.6 (tau_epoch 10 .. 1)
        """  # noqa: E501
        lines = [
            f"Sweep (the finder's dataset-size axis): {len(self.sizes)} sizes x {len(self.tau_epochs)} tau_epochs x"
            f" {len(self.seeds)} seeds = {self.num_runs} runs x {self.epochs} epochs; B={self.batch_size},"
            f" lr={self.lr:g} ({self.schedule}), MLP {self.hidden}x{self.depth}, norm={self.norm}."
        ]
        taus = sorted(self.tau_epochs, reverse=True)
        for size in sorted(self.sizes):
            decays = [demo_weight_decay(self.lr, tau, size, self.batch_size) for tau in taus]
            lines.append(
                f"  N={size}: weight decay {decays[0]:.3g} .. {decays[-1]:.3g} (tau_epoch {taus[0]:g} .. {taus[-1]:g})"
            )
        return "\n".join(lines)


def demo_weight_decay(lr: float, tau_epoch: float, dataset_size: int, batch_size: int) -> float:
    """The weight decay ``TimescaleCallback`` sets in a digits run: ``1 / (lr * M * tau_epoch)`` with ``M`` the
    optimizer steps an epoch really has, ``ceil(N / B)`` (the digits loaders keep the last, partial batch).

    Example:
        >>> demo_weight_decay(3e-3, 10.0, 1280, 64)  # M = 20 = N / B: the same as B / (lr * N * tau_epoch)
        1.6666666666666667
        >>> round(demo_weight_decay(3e-3, 10.0, 100, 64), 4)  # M = 2, not 100 / 64
        16.6667
    """
    return tau_math.weight_decay_for_tau_iter(lr, tau_epoch * math.ceil(dataset_size / batch_size))


class SweepRecord(Callback):
    """Shared by every finder trial: at each run's end, write its HParams record (the sweep's knobs, what the run's
    ``TimescaleCallback`` resolved, its seed and the final ``hp/val_loss`` / ``hp/val_error``) into its TensorBoard
    run, and keep it (with the run's folder) in :attr:`runs`."""

    def __init__(self, config: SizeTask, full_size: int) -> None:
        self.config = config
        self.full_size = full_size
        self.runs: list[dict[str, Any]] = []

    @override
    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        cb = next(c for c in trainer.callbacks if isinstance(c, TimescaleCallback))  # type: ignore[attr-defined]
        config = self.config
        n = int(cb.resolved_dataset_size or 0)
        hparams: dict[str, Any] = {
            "dataset_size": n,
            "fraction": round(n / self.full_size, 6),
            "batch_size": cb.resolved_batch_size,
            "lr": config.lr,
            "schedule": config.schedule,
            "weight_decay": next(g for g in cb.groups if g.decays).weight_decay,
            "tau_epoch": cb.resolved_tau_epoch,
            "tau_iter": cb.resolved_tau_iter,
            "epochs": config.epochs,
            "seed": int(os.environ.get("PL_GLOBAL_SEED", -1)),  # set by the finder's seed_everything(seed)
            **config.task_hparams(),
        }
        metrics = {key: float(trainer.callback_metrics[f"val/{key[7:]}"]) for key in ("hp/val_loss", "hp/val_error")}
        logger = trainer.logger
        assert isinstance(logger, TensorBoardLogger)  # the finder's
        dashboards.write_sweep_run_hparams(logger, hparams, metrics, trainer.global_step)
        self.runs.append({**hparams, **metrics, "path": str(logger.log_dir)})


def run_size_demo(
    config: SizeTask,
    sweep_dir: Path,
    *,
    plot: bool = True,
    progress: bool = True,
    callbacks: Sequence[Callback] = (),
) -> dict[str, Any]:
    """Run the finder's dataset-size axis on ``config``'s task into ``sweep_dir`` (its study journal and, under
    ``tb/``, every trial's TensorBoard run), print the result's table and verdict, write ``summary.json`` (see
    :func:`size_summary`), the HParams tab's config and (unless ``plot=False``) the finder's axis figure
    (``size_sweep.png`` / ``.svg``); returns the summary. ``lightning-tau plot`` (the demo runs it) draws Figure 1
    from the TensorBoard runs. ``callbacks`` go to every trial's Trainer."""
    from lightning_tau.tuner.finder import TimescaleFinder

    print(config.describe())
    data = config.full_datamodule()
    data.prepare_data()
    data.setup("fit")
    record = SweepRecord(config, len(data.train_dataloader().dataset))  # type: ignore[arg-type]
    finder = TimescaleFinder(
        axis="dataset_size",
        fractions=config.fractions(),
        tau_epochs=config.tau_epochs,
        seeds=list(config.seeds),
        monitor=METRIC,
        mode="min",
        reduce="last",
        # the record writes each run's HParams record; TensorBoard keeps only a run's first, so the monitor logs
        # its scalars and dashboards but no record of its own
        trainer_kwargs={
            **config.trainer_kwargs(),
            "callbacks": [record, TimescaleMonitor(log_hparams=False), *callbacks],
        },
        root_dir=sweep_dir,
        study_name=config.task,
        progress=progress,
        verbose=False,
    )
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*(does not have many workers|less than one)")
        result = finder.fit(config.model, datamodule=data)
    elapsed = time.perf_counter() - start
    print(f"{finder.trained_runs} runs in {elapsed:.0f} s. TensorBoard logs: {sweep_dir}")
    summary = size_summary(result, config, record.runs, elapsed)
    (sweep_dir / SUMMARY_NAME).write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
    # the HParams tab's columns: the hparams that vary across the runs first (tau_epoch, weight_decay, ...)
    metrics = ["hp/val_loss", "hp/val_error"]
    keys = [key for key in record.runs[0] if key not in metrics and key != "path"]
    dashboards.write_sweep_hparams_config(sweep_dir, {key: [r[key] for r in record.runs] for key in keys}, metrics)
    print(result.table())
    print(f"Summary: {sweep_dir / SUMMARY_NAME}")
    if plot:
        for fmt in ("png", "svg"):
            print(f"Figure: {result.plot(sweep_dir / f'{FIGURE_STEM}.{fmt}')}")
    return summary


def size_summary(
    result: Any, config: SizeTask, runs: Sequence[dict[str, Any]], seconds: float | None = None
) -> dict[str, Any]:
    """The sweep's ``summary.json`` from the finder's :class:`~lightning_tau.tuner.axes.AxisResult`: the task, per
    dataset size ``N`` the curve (``[tau_epoch, [final metric per seed]]`` rows, ``tau_epoch`` increasing, ``null``
    for a run that diverged), the result's :meth:`~lightning_tau.tuner.axes.AxisResult.to_json` (the exponent of the
    best ``tau_epoch`` in ``N``, its interval or ``ci_reason``, per-seed grid optima, the verdict, per size the
    finder's result), every run's HParams record and folder (``runs``), and the config."""
    curves = {}
    for scale, point in zip(result.scales, result.results):
        rows = [[p.tau_epoch, [v if math.isfinite(v) else None for v in p.values]] for p in point.curve]
        curves[str(int(scale))] = sorted(rows, key=lambda row: row[0])
    return {
        "task": config.task,
        "sweep": "tau_epoch",
        "metric": METRIC,
        "sizes": [int(s) for s in result.scales],
        "seeds": list(config.seeds),
        "curves": curves,
        **result.to_json(),
        "runs": [dict(r) for r in runs],
        "config": asdict(config),  # type: ignore[call-overload]
        **({"seconds": round(seconds, 1)} if seconds is not None else {}),
    }


def tensorboard_commands(runs: Sequence[dict[str, Any]], sweep_dir: Path) -> str:
    """What the demo prints last: first a TensorBoard view that opens on charts (the largest size, first seed: one
    run per ``tau_epoch``, each its own colour), then the whole sweep for the HParams tab. ``runs``: the summary's.

    TensorBoard pre-selects no run in a logdir of more than 40, so ``--logdir`` on the sweep opens on empty charts;
    one dataset size of the default sweep is 21 runs, which repeat TensorBoard's 7 colours and pile up the shaded
    bands. ``--logdir_spec`` names each run (``tau_epoch=5``); it cannot take a path with a comma or a colon, so
    then the first view is the whole sweep.

    Example:
        >>> runs = [{"dataset_size": 150, "tau_epoch": t, "seed": s, "path": f"r/tb/t{t:g}s{s}"}
        ...         for t in (20.0, 2.0) for s in (0, 1)]
        >>> print(tensorboard_commands(runs, Path("r")))
        Dashboards (Custom Scalars tab) of N=150, seed 0, one run per tau_epoch:
          tensorboard --logdir_spec tau_epoch=2:r/tb/t2s0,tau_epoch=20:r/tb/t20s0
        Every run (HParams tab: one row per run, tau_epoch and weight_decay first):
          tensorboard --logdir r
    """
    size = max(r["dataset_size"] for r in runs)
    seed = min(r["seed"] for r in runs)
    first = sorted((r for r in runs if r["dataset_size"] == size and r["seed"] == seed), key=lambda r: r["tau_epoch"])
    if any("," in r["path"] or ":" in r["path"] for r in first):
        view, which = f"tensorboard --logdir {sweep_dir}", "every run"
    else:
        view = "tensorboard --logdir_spec " + ",".join(f"tau_epoch={r['tau_epoch']:g}:{r['path']}" for r in first)
        which = f"N={size}, seed {seed}, one run per tau_epoch"
    return (
        f"Dashboards (Custom Scalars tab) of {which}:\n  {view}\n"
        "Every run (HParams tab: one row per run, tau_epoch and weight_decay first):\n"
        f"  tensorboard --logdir {sweep_dir}"
    )
