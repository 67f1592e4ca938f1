"""One runner for the demos: :func:`run_axis_demo` runs one of the finder's axes on a demo task's configuration.

More: docs/results.rst, module notes.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import TensorBoardLogger
from typing_extensions import override

from lightning_tau import _checks
from lightning_tau._constants import SUMMARY_NAME
from lightning_tau.callback import TimescaleCallback
from lightning_tau.diagnostics import TimescaleMonitor, dashboards
from lightning_tau.outputs import write_json
from lightning_tau.tuner.axes import BATCH_SIZE, DATASET_SIZE, WIDTH, Axis, resolve_axis

__all__ = [
    "AXES",
    "METRIC",
    "BatchTask",
    "DemoAxis",
    "SizeTask",
    "SweepRecord",
    "WidthTask",
    "batch_summary",
    "figure_stem",
    "run_axis_demo",
    "size_summary",
    "width_summary",
]

#: The metric the finder compares: the validation loss after the last epoch.
METRIC = "val/loss"

#: The finder's axes a demo runs (``TimescaleFinder(axis=...)``), by name.
DemoAxis = Literal["dataset_size", "width", "batch_size"]
AXES: tuple[str, ...] = (DATASET_SIZE.name, WIDTH.name, BATCH_SIZE.name)


def figure_stem(axis: Axis) -> str:
    """File name (without suffix) of ``axis``'s figure, in its sweep folder beside ``summary.json``: ``size_sweep``,
    ``width_sweep``, ``batch_size_sweep``."""
    return f"{str(axis.point_noun).replace(' ', '_')}_sweep"


class SizeTask(Protocol):
    """What :func:`run_axis_demo` needs from a dataset-size task's configuration
    (:class:`~lightning_tau.demos.size.SizeConfig`, :class:`~lightning_tau.demos.text.TextDemoConfig`, ...)."""

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


class WidthTask(Protocol):
    """What :func:`run_axis_demo` needs from a width task's configuration
    (:class:`~lightning_tau.demos.width.WidthConfig`, :class:`~lightning_tau.demos.text_width.TextWidthConfig`)."""

    widths: list[int]
    weight_decays: list[float]
    seeds: list[int]
    lr: float

    def describe(self) -> str: ...

    def tau_epochs(self) -> list[float]: ...

    def datamodule(self) -> pl.LightningDataModule: ...

    def model(self, width: int) -> pl.LightningModule: ...

    def trainer_kwargs(self) -> dict[str, Any]: ...


class BatchTask(Protocol):
    """What :func:`run_axis_demo` needs from a batch-size task's configuration
    (:class:`~lightning_tau.demos.batch.SyntheticBatchConfig`)."""

    task: ClassVar[str]
    batch_sizes: list[int]
    lr_scaling: str
    beta2: str
    tau_epochs: list[float]
    seeds: list[int]
    lr: float
    workers: int

    def describe(self) -> str: ...

    def datamodule(self) -> pl.LightningDataModule: ...

    def model(self) -> pl.LightningModule: ...

    def trainer_kwargs(self) -> dict[str, Any]: ...


class SweepRecord(Callback):
    """Shared by every trial of a dataset-size demo: at each run's end, write its HParams record (the sweep's knobs,
    what the run's ``TimescaleCallback`` resolved, its seed and the final ``hp/val_loss`` / ``hp/val_error``) into
    its TensorBoard run, and keep it (with the run's folder) in :attr:`runs`."""

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


def run_axis_demo(
    axis: DemoAxis,
    config: Any,
    sweep_dir: Path,
    *,
    plot: bool = True,
    progress: bool = True,
    callbacks: Sequence[Callback] = (),
) -> dict[str, Any]:
    """Run the finder's ``axis`` on ``config``'s task into ``sweep_dir`` (its study journal and, under ``tb/``, every
    trial's TensorBoard run), print the result's table and verdict, write ``summary.json`` (:func:`size_summary` or
    :func:`width_summary`) and (unless ``plot=False``) the axis figure (``size_sweep`` / ``width_sweep``, ``.png``
    and ``.svg``); returns the summary. ``callbacks`` go to every trial's Trainer.

    Args:
        axis: ``"dataset_size"`` (``config`` a :class:`SizeTask`: the sweep on each of its fractions of the full
            training set, every run's HParams record in its TensorBoard run and the HParams tab's config in
            ``sweep_dir``, for ``lightning-tau plot``), ``"width"`` (``config`` a :class:`WidthTask`: the sweep at
            each width on the whole training set) or ``"batch_size"`` (``config`` a :class:`BatchTask`: the sweep at
            each global batch size on the whole training set, with its ``lr_scaling`` and ``beta2``, by its
            ``workers`` processes).
        config: the task's configuration of the axis.
        sweep_dir: the sweep's folder (it exists).
        plot: write the axis figure.
        progress: show the finder's progress bar.
        callbacks: more callbacks for every trial's Trainer.

    Example:
        >>> run_axis_demo("depth", None, Path("sweep"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `run_axis_demo(axis='depth')` is not supported. Use 'dataset_size', ...
    """
    along = resolve_axis(_checks.choice("run_axis_demo", "axis", axis, AXES), "run_axis_demo")
    from lightning_tau.tuner.finder import TimescaleFinder

    print(config.describe())
    record: SweepRecord | None = None
    workers = 1
    if along.subsets_per_point:
        data = config.full_datamodule()
        data.prepare_data()
        data.setup("fit")
        record = SweepRecord(config, len(data.train_dataloader().dataset))  # type: ignore[arg-type]
        # the record writes each run's HParams record; TensorBoard keeps only a run's first, so the monitor logs
        # its scalars and dashboards but no record of its own
        own: list[Callback] = [record, TimescaleMonitor(log_hparams=False)]
        points = {"fractions": config.fractions(), "tau_epochs": config.tau_epochs, "study_name": config.task}
    elif along.batch_per_point:
        data, own, workers = config.datamodule(), [], config.workers
        points = {
            "batch_sizes": sorted(config.batch_sizes),
            "lr_scaling": config.lr_scaling,
            "beta2": config.beta2,
            "tau_epochs": config.tau_epochs,
            "fraction": 1.0,
        }
    else:
        data, own = config.datamodule(), []
        points = {"widths": sorted(config.widths), "tau_epochs": config.tau_epochs(), "fraction": 1.0}
    finder = TimescaleFinder(
        axis=along,
        **points,
        seeds=list(config.seeds),
        monitor=METRIC,
        mode="min",
        reduce="last",
        trainer_kwargs={**config.trainer_kwargs(), "callbacks": [*own, *callbacks]},
        root_dir=sweep_dir,
        progress=progress,
        verbose=False,
        workers=workers,
    )
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*(does not have many workers|less than one)")
        result = finder.fit(config.model, datamodule=data)
    elapsed = time.perf_counter() - start
    if record is not None:
        print(f"{finder.trained_runs} runs in {elapsed:.0f} s. TensorBoard logs: {sweep_dir}")
        summary = size_summary(result, config, record.runs, elapsed)
    elif along.batch_per_point:
        trained = finder.total_runs - finder.reused_runs
        by = f" by {workers} processes" if workers > 1 else ""
        print(f"{trained} runs trained{by} ({finder.reused_runs} reused) in {elapsed:.0f} s.")
        summary = batch_summary(result, config, elapsed)
    else:
        print(f"{finder.trained_runs} runs trained ({finder.reused_runs} reused) in {elapsed:.0f} s.")
        summary = width_summary(result, config, elapsed)
    write_json(sweep_dir / SUMMARY_NAME, summary)  # through the check every result file passes (a new folder here)
    if record is not None:  # the HParams tab's columns: the hparams that vary across the runs first
        metrics = ["hp/val_loss", "hp/val_error"]
        keys = [key for key in record.runs[0] if key not in metrics and key != "path"]
        dashboards.write_sweep_hparams_config(sweep_dir, {key: [r[key] for r in record.runs] for key in keys}, metrics)
    print(result.table())
    print(f"Summary: {sweep_dir / SUMMARY_NAME}")
    if plot:
        for fmt in ("png", "svg"):
            print(f"Figure: {result.plot(sweep_dir / f'{figure_stem(along)}.{fmt}')}")
    return summary


def _curve_rows(point: Any, x: Any = None) -> list[list[Any]]:
    """One point's curve as ``[x(tau_epoch), [final metric per seed]]`` rows (``null`` for a run that diverged),
    ``x`` increasing (``x=None``: ``tau_epoch`` itself)."""
    rows = [
        [p.tau_epoch if x is None else x(p.tau_epoch), [v if math.isfinite(v) else None for v in p.values]]
        for p in point.curve
    ]
    return sorted(rows, key=lambda row: row[0])


def size_summary(
    result: Any, config: SizeTask, runs: Sequence[dict[str, Any]], seconds: float | None = None
) -> dict[str, Any]:
    """A dataset-size sweep's ``summary.json`` from the finder's :class:`~lightning_tau.tuner.analysis.axis_result.AxisResult`: the
    task, per dataset size ``N`` the curve (``[tau_epoch, [final metric per seed]]`` rows, ``tau_epoch`` increasing,
    ``null`` for a run that diverged), the result's :meth:`~lightning_tau.tuner.analysis.axis_result.AxisResult.to_json` (the
    exponent of the best ``tau_epoch`` in ``N``, its interval or ``ci_reason``, per-seed grid optima, the verdict, per
    size the finder's result), every run's HParams record and folder (``runs``), and the config."""
    curves = {str(int(scale)): _curve_rows(point) for scale, point in zip(result.scales, result.results)}
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


def width_summary(result: Any, config: Any, seconds: float | None = None) -> dict[str, Any]:
    """A width sweep's ``summary.json`` from the finder's :class:`~lightning_tau.tuner.analysis.axis_result.AxisResult`: the task
    and its settings, per width the curve (``[λ_base, [final metric per seed]]`` rows, ``λ_base`` increasing, ``null``
    for a run that diverged), and the result's :meth:`~lightning_tau.tuner.analysis.axis_result.AxisResult.to_json` (the exponent,
    its interval or ``ci_reason``, per-seed grid optima, the paired interior tests, the verdict, per width the
    finder's result)."""
    curves = {str(width): _curve_rows(point, result.x_of_tau) for width, point in zip(result.values, result.results)}
    return {
        **({"task": config.task} if config.task else {}),
        "sweep": "lambda_base",
        "metric": METRIC,
        "lr_base": config.lr,
        "widths": sorted(config.widths),
        "seeds": list(config.seeds),
        "lambda_base": sorted(config.weight_decays),
        "curves": curves,
        **result.to_json(),
        "config": asdict(config),
        **({"seconds": round(seconds, 1)} if seconds is not None else {}),
    }


def batch_summary(result: Any, config: Any, seconds: float | None = None) -> dict[str, Any]:
    """A batch-size sweep's ``summary.json`` from the finder's
    :class:`~lightning_tau.tuner.analysis.axis_result.AxisResult`: the task and its settings (``lr_scaling``,
    ``beta2``), per global batch size ``B`` the curve (``[tau_epoch, [final metric per seed]]`` rows, ``tau_epoch``
    increasing, ``null`` for a run that diverged), and the result's
    :meth:`~lightning_tau.tuner.analysis.axis_result.AxisResult.to_json` (the exponent of the best ``tau_epoch`` in
    ``B``, its interval or ``ci_reason``, how the batch was set, each batch rule's decision and loss cost, the verdict,
    per ``B`` the finder's result)."""
    curves = {str(int(b)): _curve_rows(point) for b, point in zip(result.values, result.results)}
    return {
        "task": config.task,
        "sweep": "tau_epoch",
        "metric": METRIC,
        "batch_sizes": sorted(config.batch_sizes),
        "lr_scaling": config.lr_scaling,
        "beta2": config.beta2,
        "seeds": list(config.seeds),
        "curves": curves,
        **result.to_json(),
        "config": asdict(config),
        **({"seconds": round(seconds, 1)} if seconds is not None else {}),
    }
