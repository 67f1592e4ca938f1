"""The dataset-size demos: does the best ``tau_epoch`` move with ``N``? The finder's dataset-size axis on a demo task.

More: docs/results.rst, module notes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from lightning.pytorch.callbacks import Callback

from lightning_tau import _checks
from lightning_tau import timescale as tau_math
from lightning_tau._constants import SUMMARY_NAME
from lightning_tau.demos.axis_demo import METRIC, SizeTask, run_axis_demo, size_summary
from lightning_tau.demos.digits import DIGITS_SIZE, DigitsDataModule, DigitsMLP
from lightning_tau.diagnostics import dashboards

__all__ = ["METRIC", "SUMMARY_NAME", "SizeConfig", "SizeTask", "run_size_demo", "size_summary", "tensorboard_commands"]


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
        lightning_tau.errors.TimescaleError: `SizeConfig(sizes=[200, 1500])` is not valid: 1500 is more than the ...
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
            raise _checks.invalid(
                "SizeConfig",
                "sizes",
                list(self.sizes),
                f"{too_big[0]} is more than the {self.train_size} digits left for training (the dataset has"
                f" {DIGITS_SIZE} images and {self.val_size} are held out): use sizes up to {self.train_size}.",
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
        return describe_mlp_sweep(self, "")


def describe_mlp_sweep(config: Any, task: str) -> str:
    """:meth:`SizeConfig.describe` for an MLP size sweep's config (digits, or ``task`` named after the axis: the
    synthetic one): the sweep's shape, then the weight-decay grid each dataset size gets from the ``tau_epoch`` grid."""
    lines = [
        f"Sweep (the finder's dataset-size axis){task}: {len(config.sizes)} sizes x {len(config.tau_epochs)} tau_epochs"
        f" x {len(config.seeds)} seeds = {config.num_runs} runs x {config.epochs} epochs; B={config.batch_size},"
        f" lr={config.lr:g} ({config.schedule}), MLP {config.hidden}x{config.depth}, norm={config.norm}."
    ]
    taus = sorted(config.tau_epochs, reverse=True)
    for size in sorted(config.sizes):
        decays = [demo_weight_decay(config.lr, tau, size, config.batch_size) for tau in taus]
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


def run_size_demo(
    config: SizeTask,
    sweep_dir: Path,
    *,
    plot: bool = True,
    progress: bool = True,
    callbacks: Sequence[Callback] = (),
) -> dict[str, Any]:
    """:func:`~lightning_tau.demos.axis_demo.run_axis_demo` on the dataset-size axis: run the finder's sweep of
    ``tau_epoch`` on each of ``config``'s fractions into ``sweep_dir``, print the result's table and verdict, write
    ``summary.json`` (:func:`~lightning_tau.demos.axis_demo.size_summary`), the HParams tab's config and (unless
    ``plot=False``) ``size_sweep.png`` / ``.svg``; returns the summary. ``lightning-tau plot`` (the demo runs it)
    draws Figure 1 from the TensorBoard runs. ``callbacks`` go to every trial's Trainer."""
    return run_axis_demo("dataset_size", config, sweep_dir, plot=plot, progress=progress, callbacks=callbacks)


def tensorboard_commands(runs: Sequence[dict[str, Any]], sweep_dir: Path) -> str:
    """What the demo prints last: first a TensorBoard view that opens on charts (the largest size, first seed: one
    run per ``tau_epoch``, each its own colour), then the whole sweep for the HParams tab. ``runs``: the summary's.

    TensorBoard pre-selects no run in a logdir of more than 40, so ``--logdir`` on the sweep opens on empty charts;
    one dataset size of a sweep repeats TensorBoard's 7 colours and piles up the shaded bands. Each view is a folder
    of links (:func:`~lightning_tau.diagnostics.dashboards.link_runs`) named by the runs' values
    (:func:`~lightning_tau.diagnostics.dashboards.run_name`: ``tau4_N150_s0``), so each command is short and the
    HParams tab's Trial IDs differ at a glance.

    Example:
        >>> import tempfile
        >>> sweep = Path(tempfile.mkdtemp())
        >>> runs = [{"dataset_size": 150, "tau_epoch": t, "seed": s, "path": str(sweep / "tb" / f"t{t:g}s{s}")}
        ...         for t in (20.0, 2.0) for s in (0, 1)]
        >>> for r in runs:
        ...     Path(r["path"]).mkdir(parents=True)
        >>> print(tensorboard_commands(runs, sweep).replace(str(sweep), "SWEEP"))
        Dashboards (Custom Scalars tab) of N=150, seed 0, one run per tau_epoch:
          tensorboard --logdir SWEEP/tensorboard_charts
        Every run (HParams tab: one row per run, tau_epoch and weight_decay first):
          tensorboard --logdir SWEEP/tensorboard
        >>> sorted(p.name for p in (sweep / "tensorboard_charts").iterdir())
        ['tau20_N150_s0', 'tau2_N150_s0']
    """
    size = max(r["dataset_size"] for r in runs)
    seed = min(r["seed"] for r in runs)
    first = sorted((r for r in runs if r["dataset_size"] == size and r["seed"] == seed), key=lambda r: r["tau_epoch"])
    charts = dashboards.link_runs(sweep_dir / "tensorboard_charts", {dashboards.run_name(r): r["path"] for r in first})
    every = dashboards.link_runs(
        sweep_dir / "tensorboard", {dashboards.run_name(r): r["path"] for r in runs}, experiment=sweep_dir
    )
    return (
        f"Dashboards (Custom Scalars tab) of N={size}, seed {seed}, one run per tau_epoch:\n"
        f"  tensorboard --logdir {charts}\n"
        "Every run (HParams tab: one row per run, tau_epoch and weight_decay first):\n"
        f"  tensorboard --logdir {every}"
    )
