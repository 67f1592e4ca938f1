"""The rows of ``lightning-tau demo``: ``(--task, --axis)`` -> the task's configuration of one of the finder's axes.

More: docs/results.rst, module notes.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lightning_tau.cli.demo_checks import (
    batch_grid_problem,
    digits_size_problem,
    digits_size_rejects,
    digits_width_rejects,
    digits_width_task_problem,
    synthetic_batch_rejects,
    synthetic_size_rejects,
    text_size_problem,
    text_size_rejects,
    text_width_rejects,
    text_width_task_problem,
    too_short_timescale,
    two_points,
    width_grid_problem,
)
from lightning_tau.demos.axis_demo import run_axis_demo
from lightning_tau.demos.batch import SyntheticBatchConfig
from lightning_tau.demos.size import SUMMARY_NAME, SizeConfig, tensorboard_commands
from lightning_tau.demos.synthetic import SyntheticSizeConfig
from lightning_tau.demos.text import TextDemoConfig
from lightning_tau.demos.text_width import QUICK_HELD_OUT, TextWidthConfig
from lightning_tau.demos.width import WidthConfig, import_mup

__all__ = [
    "PRESETS",
    "QUICK",
    "QUICK_SYNTHETIC",
    "QUICK_SYNTHETIC_BATCH",
    "QUICK_TEXT",
    "QUICK_TEXT_WIDTH",
    "QUICK_WIDTH",
    "SUMMARY_NAME",
    "DemoConfig",
    "Preset",
    "SizeConfig",
    "SyntheticBatchConfig",
    "SyntheticSizeConfig",
    "TextDemoConfig",
    "TextWidthConfig",
    "WidthConfig",
]


@dataclass(frozen=True)
class Preset:
    """One ``(task, axis)`` row: the task's configuration of one of the finder's axes and how argparse fills it.

    Attributes:
        config: the task's config class; its defaults are the full form.
        quick: what ``--quick`` runs (the sweep options are then ignored).
        options: ``(argparse name, config field)`` pairs copied from the command line when given (not ``--quick``).
        always: ``(argparse name, config field)`` pairs copied even with ``--quick``.
        rejects: the options of other rows typed for this one, as an error, or ``None``.
        task_problem: what the task cannot run with this config, or ``None``.
        load: imports/reads what the task needs (an ``ImportError`` is exit code 1).
        run: runs the finder's axis on the config into a sweep folder (``config, sweep_dir, plot, progress``).
    """

    config: type
    quick: Any
    options: tuple[tuple[str, str], ...]
    always: tuple[tuple[str, str], ...]
    rejects: Callable[[argparse.Namespace], str | None]
    task_problem: Callable[[Any], str | None]
    load: Callable[[], None]
    run: Callable[[Any, Path, bool, bool], None]


def _run_size(config: Any, sweep_dir: Path, plot: bool, progress: bool) -> None:
    """The dataset-size rows: the finder's axis, then Figure 1 and the TensorBoard views."""
    summary = run_axis_demo("dataset_size", config, sweep_dir, plot=plot, progress=progress)
    if plot:  # Figure 1 of the paper, from the runs' TensorBoard logs
        from lightning_tau.diagnostics.sweep import plot_sweep

        plot_sweep(sweep_dir, sweep_dir)
    print(tensorboard_commands(summary["runs"], sweep_dir))


def _run_width(config: Any, sweep_dir: Path, plot: bool, progress: bool) -> None:
    """The width rows: the finder's axis, then the TensorBoard command."""
    run_axis_demo("width", config, sweep_dir, plot=plot, progress=progress)
    print(f"Open the runs with:\n  tensorboard --logdir {sweep_dir / 'tb'}")


def _run_batch(config: Any, sweep_dir: Path, plot: bool, progress: bool) -> None:
    """The batch-size rows: the finder's axis, then the TensorBoard command."""
    run_axis_demo("batch_size", config, sweep_dir, plot=plot, progress=progress)
    print(f"Open the runs with:\n  tensorboard --logdir {sweep_dir / 'tb'}")


def _load_digits() -> None:
    from lightning_tau.demos.digits import load_digits_tensors

    load_digits_tensors()


def _load_mup(digits: bool = False) -> None:
    if digits:
        _load_digits()
    import_mup()


#: Options every width row reads: (argparse name, config field).
_WIDTH_OPTIONS = (("widths", "widths"), ("weight_decays", "weight_decays"), ("lr_base", "lr"), ("seeds", "seeds"))
_WIDTH_OPTIONS += (("epochs", "epochs"),)

#: Options the MLP dataset-size rows (digits, synthetic) read: (argparse name, config field).
_MLP_SIZE_OPTIONS = tuple(
    (name, name)
    for name in ("sizes", "tau_epochs", "seeds", "epochs", "batch_size", "lr", "schedule", "hidden", "depth", "norm")
)

#: Options the text rows read beside the sweep's: (argparse name, config field).
_TEXT_OPTIONS = tuple((name, name) for name in ("max_tokens", "val_tokens", "block_size", "n_layer", "n_head"))
_TEXT_OPTIONS += (("accelerator", "accelerator"),)

#: The digits dataset-size demo's configuration (``lightning-tau demo``), under its old name.
DemoConfig = SizeConfig

#: What ``--quick`` runs: 2 sizes x 3 timescales x 2 epochs, a few seconds (for tests and a first look).
QUICK = SizeConfig(sizes=[100, 300], tau_epochs=[1.0, 10.0, 100.0], seeds=[0], epochs=2, hidden=32)

#: What ``--task synthetic --quick`` runs: 2 sizes x 3 timescales x 2 epochs, one seed, a few seconds.
QUICK_SYNTHETIC = SyntheticSizeConfig(
    sizes=[64, 256], tau_epochs=[2.0, 8.0, 64.0], seeds=[0], epochs=2, hidden=32, val_size=256
)

#: Options the batch-size row reads: (argparse name, config field).
_BATCH_OPTIONS = tuple(
    (name, name)
    for name in ("batch_sizes", "tau_epochs", "seeds", "epochs", "train_size", "lr", "schedule", "hidden", "depth")
) + (("norm", "norm"),)

#: What ``--task synthetic --axis batch-size --quick`` runs: B = 16 and 64 x 3 timescales (x4 apart) x 2 seeds x 2
#: epochs of 256 samples, one process: seconds (for tests and a first look; it decides nothing).
QUICK_SYNTHETIC_BATCH = SyntheticBatchConfig(
    batch_sizes=[16, 64], tau_epochs=[2.0, 8.0, 32.0], seeds=[0, 1], epochs=2, train_size=256, hidden=32,
    val_size=256, workers=1,
)  # fmt: skip

#: What ``--axis width --quick`` runs: widths 16 / 64 / 256 (s up to 16) x 4 λ_base (x4 steps) x 3 seeds, 30 epochs:
#: the full form's task on a coarser λ_base grid (36 finder trials).
QUICK_WIDTH = WidthConfig(weight_decays=[8.0, 32.0, 128.0, 512.0])

#: What ``--task text --quick`` runs: 3 fractions of a 32,000-byte corpus x 4 timescales (x4 apart) x 32 epochs,
#: one seed, validation at the end only; about 5 CPU-minutes (one thread).
QUICK_TEXT = TextDemoConfig(
    sizes=[0.25, 0.5, 1.0], tau_epochs=[0.5, 2.0, 8.0, 32.0], seeds=[0], epochs=32, batch_size=16,
    warmup_fraction=0.0, block_size=64, n_layer=2, n_head=4, n_embd=64, max_tokens=32_000, val_tokens=32_000,
    val_every_n_epochs=32, accelerator="cpu",
)  # fmt: skip

#: What ``--task text --axis width --quick`` runs: the held-out-file regime (``demos/text_width.py``).
QUICK_TEXT_WIDTH = QUICK_HELD_OUT

#: The rows of ``lightning-tau demo``: ``(task, axis) -> configuration``.
PRESETS = {
    ("digits", "dataset-size"): Preset(
        config=SizeConfig,
        quick=QUICK,
        options=_MLP_SIZE_OPTIONS + (("label_noise", "label_noise"),),
        always=(),
        rejects=digits_size_rejects,
        task_problem=digits_size_problem,
        load=_load_digits,
        run=_run_size,
    ),
    ("synthetic", "dataset-size"): Preset(
        config=SyntheticSizeConfig,
        quick=QUICK_SYNTHETIC,
        options=_MLP_SIZE_OPTIONS,
        always=(),
        rejects=synthetic_size_rejects,
        task_problem=lambda config: too_short_timescale(config) or two_points(config.sizes, "--sizes"),
        load=lambda: None,
        run=_run_size,
    ),
    ("synthetic", "batch-size"): Preset(
        config=SyntheticBatchConfig,
        quick=QUICK_SYNTHETIC_BATCH,
        options=_BATCH_OPTIONS,
        always=(("lr_scaling", "lr_scaling"), ("beta2", "beta2"), ("workers", "workers")),
        rejects=synthetic_batch_rejects,
        task_problem=batch_grid_problem,
        load=lambda: None,
        run=_run_batch,
    ),
    ("text", "dataset-size"): Preset(
        config=TextDemoConfig,
        quick=QUICK_TEXT,
        options=(
            ("fractions", "sizes"),
            *((name, name) for name in ("tau_epochs", "seeds", "epochs", "batch_size", "lr", "schedule", "n_embd")),
            *_TEXT_OPTIONS,
        ),
        always=(),
        rejects=text_size_rejects,
        task_problem=text_size_problem,
        load=lambda: None,
        run=_run_size,
    ),
    ("digits", "width"): Preset(
        config=WidthConfig,
        quick=QUICK_WIDTH,
        options=(*_WIDTH_OPTIONS, ("depth", "depth")),
        always=(("batch_size", "batch_size"), ("schedule", "schedule")),
        rejects=digits_width_rejects,
        task_problem=lambda config: width_grid_problem(config) or digits_width_task_problem(config),
        load=lambda: _load_mup(digits=True),
        run=_run_width,
    ),
    ("text", "width"): Preset(
        config=TextWidthConfig,
        quick=QUICK_TEXT_WIDTH,
        options=(*_WIDTH_OPTIONS, ("schedule", "schedule"), ("batch_size", "batch_size"), *_TEXT_OPTIONS),
        always=(),
        rejects=text_width_rejects,
        task_problem=lambda config: width_grid_problem(config) or text_width_task_problem(config),
        load=_load_mup,
        run=_run_width,
    ),
}
