"""The batch-size demo: how does the best ``tau_epoch`` move with the global batch ``B``? The finder's batch-size axis
on the synthetic teacher-student task (``lightning-tau demo --task synthetic --axis batch-size``).

More: docs/results.rst, module notes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from lightning.pytorch.callbacks import Callback

from lightning_tau import timescale as tau_math
from lightning_tau.demos.axis_demo import batch_summary, run_axis_demo
from lightning_tau.demos.digits import DigitsMLP
from lightning_tau.demos.synthetic import SyntheticDataModule
from lightning_tau.tuner.axes import LR_SCALINGS

__all__ = ["BatchMLP", "SyntheticBatchConfig", "batch_summary", "run_batch_demo"]


class BatchMLP(DigitsMLP):
    """The synthetic task's student MLP (:class:`~lightning_tau.demos.digits.DigitsMLP`) with a ``batch_size``
    attribute, as Lightning's ``BatchSizeFinder`` expects: the finder's batch-size axis sets it on each trial's model
    and rebuilds the trial's training loader at that batch (without one, the axis would set the batch by gradient
    accumulation over the loader's batch). It is not an hparam, so the run's logged hparams hold no batch (its lr,
    an hparam, is logged at the value the trial trains with).

    Example:
        >>> from lightning.pytorch.utilities.parsing import lightning_hasattr, lightning_setattr
        >>> model = BatchMLP(hidden=8, inputs=16, classes=4)
        >>> lightning_hasattr(model, "batch_size"), "batch_size" in model.hparams
        (True, False)
        >>> lightning_setattr(model, "batch_size", 64); model.batch_size
        64
    """

    #: The global batch the model trains at, set by the finder on each trial's model (this value: none set yet).
    batch_size: int | None = None


@dataclass
class SyntheticBatchConfig:
    """The synthetic batch-size demo (``lightning-tau demo --task synthetic --axis batch-size``): every
    ``(B, tau_epoch, seed)`` is a finder trial on the same ``train_size`` samples for the same ``epochs``, so a larger
    ``B`` takes fewer steps.

    The defaults were chosen so that the exponent's interval decides both published batch rules at the default
    tolerance on two CPU cores (``workers=2``; docs/results.rst says what they decided and how long they took):
    ``B`` = 16, 64 and 256 (a range of 16, so the tolerance band is narrow), 20 epochs, a x2 ``tau_epoch`` grid that
    the finder extends where an optimum sits on its edge, and 4 seeds.

    Attributes:
        batch_sizes: global batch sizes ``B``, increasing; the smallest is ``B_0``, where the lr is ``lr``.
        lr_scaling: the lr across the batch sizes, ``lr * (B / B_0) ** m``: ``"none"`` (``m = 0``), ``"sqrt"``
            (``m = 1/2``) or ``"linear"`` (``m = 1``); the rules' exponents depend on it.
        beta2: Adam's ``β₂`` at every batch: ``"fixed"`` (AdamW's 0.999) or ``"held"`` (its window held in samples,
            ``β₂^(B / B_0)``).
        tau_epochs: EMA timescales in epochs.
        seeds: seeds (model init and batch order).
        epochs: training epochs per run, the same at every batch size.
        train_size: training samples ``N``, the same at every batch size.
        lr: AdamW's initial learning rate at ``B_0``.
        schedule: ``"cosine"`` (to ``0.1 * lr``) or ``"constant"``.
        hidden: student MLP width.
        depth: student MLP hidden layers.
        norm: ``"none"`` (a plain MLP) or ``"layer"``.
        workers: processes that train trials at once (the finder's ``workers``; each one torch thread).
        val_size: validation inputs.
        dim: input dimension.
        teacher_hidden: the teacher's hidden units.
        classes: classes.
        sharpness: scale of the teacher's logits (lower: noisier labels).
        data_seed: seed of the teacher and the data.

    Example:
        >>> config = SyntheticBatchConfig()
        >>> config.num_runs, config.steps_per_epoch(16), config.steps_per_epoch(256)
        (60, 128, 8)
    """

    batch_sizes: list[int] = field(default_factory=lambda: [16, 64, 256])
    lr_scaling: str = "none"
    beta2: str = "fixed"
    tau_epochs: list[float] = field(default_factory=lambda: [2.0, 4.0, 8.0, 16.0, 32.0])
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2, 3])
    epochs: int = 20
    train_size: int = 2048
    lr: float = 3e-3
    schedule: str = "cosine"
    hidden: int = 128
    depth: int = 2
    norm: str = "none"
    workers: int = 2
    val_size: int = 2048
    dim: int = 16
    teacher_hidden: int = 32
    classes: int = 4
    sharpness: float = 6.0
    data_seed: int = 0

    #: The task's name in ``summary.json`` and ``--task``.
    task: ClassVar[str] = "synthetic"

    @property
    def num_runs(self) -> int:
        """The trials of the grid as given (the finder may add ``tau_epoch`` points where an optimum is on its edge)."""
        return len(self.batch_sizes) * len(self.tau_epochs) * len(self.seeds)

    def steps_per_epoch(self, batch_size: int) -> int:
        """Optimizer steps of an epoch of ``train_size`` samples at ``batch_size`` (the last batch may be partial)."""
        return math.ceil(self.train_size / batch_size)

    def datamodule(self) -> SyntheticDataModule:
        """The training set at the smallest batch; the finder rebuilds its loader at every ``B``."""
        return SyntheticDataModule(
            train_size=self.train_size,
            val_size=self.val_size,
            batch_size=min(self.batch_sizes),
            dim=self.dim,
            teacher_hidden=self.teacher_hidden,
            classes=self.classes,
            sharpness=self.sharpness,
            data_seed=self.data_seed,
        )

    def model(self) -> BatchMLP:
        """A fresh student MLP at ``lr`` (the finder sets each trial's ``batch_size`` and scales its ``lr``; its
        ``weight_decay`` is the placeholder the callback replaces)."""
        return BatchMLP(
            hidden=self.hidden,
            depth=self.depth,
            norm=self.norm,
            lr=self.lr,
            schedule=self.schedule,
            inputs=self.dim,
            classes=self.classes,
        )

    def trainer_kwargs(self) -> dict[str, Any]:
        """The finder's ``trainer_kwargs`` (without callbacks)."""
        return {"max_epochs": self.epochs, "accelerator": "cpu", "devices": 1}

    def lr_at(self, batch_size: int) -> float:
        """The lr a trial at ``batch_size`` trains with: ``lr * (B / B_0) ** m``."""
        return self.lr * (batch_size / min(self.batch_sizes)) ** LR_SCALINGS[self.lr_scaling]

    def describe(self) -> str:
        """What the sweep runs: its shape, then per ``B`` the steps, the lr and the weight decay of the grid.

        Example:
            >>> config = SyntheticBatchConfig(batch_sizes=[16, 64], tau_epochs=[2.0, 8.0], seeds=[0], epochs=5,
            ...                               lr_scaling="sqrt")
            >>> print(config.describe())  # doctest: +NORMALIZE_WHITESPACE
            Sweep (the finder's batch-size axis) on a synthetic task (a teacher network's noisy labels, generated by
              lightning_tau.demos.synthetic): 2 batch sizes x 2 tau_epochs x 1 seeds = 4 runs x 5 epochs on the same
              N=2048 samples; lr ∝ B^1/2 from lr=0.003 at B=16 (cosine), β₂ fixed, MLP 128x2, norm=none.
              B=16: 128 steps/epoch, lr 0.003, weight decay 1.3 .. 0.326 (tau_epoch 2 .. 8)
              B=64: 32 steps/epoch, lr 0.006, weight decay 2.6 .. 0.651 (tau_epoch 2 .. 8)
        """
        b0 = min(self.batch_sizes)
        lr = {"none": f"lr={self.lr:g} at every B", "sqrt": "lr ∝ B^1/2", "linear": "lr ∝ B"}[self.lr_scaling]
        if self.lr_scaling != "none":
            lr += f" from lr={self.lr:g} at B={b0}"
        lines = [
            "Sweep (the finder's batch-size axis) on a synthetic task (a teacher network's noisy labels, generated by"
            f" lightning_tau.demos.synthetic): {len(self.batch_sizes)} batch sizes x {len(self.tau_epochs)} tau_epochs"
            f" x {len(self.seeds)} seeds = {self.num_runs} runs x {self.epochs} epochs on the same N={self.train_size}"
            f" samples; {lr} ({self.schedule}), β₂ {self.beta2}, MLP {self.hidden}x{self.depth}, norm={self.norm}."
        ]
        taus = sorted(self.tau_epochs)
        for b in sorted(self.batch_sizes):
            steps, lr_b = self.steps_per_epoch(b), self.lr_at(b)
            decays = [tau_math.weight_decay_for_tau_iter(lr_b, tau * steps) for tau in taus]
            lines.append(
                f"  B={b}: {steps} steps/epoch, lr {lr_b:.3g}, weight decay {decays[0]:.3g} .. {decays[-1]:.3g}"
                f" (tau_epoch {taus[0]:g} .. {taus[-1]:g})"
            )
        return "\n".join(lines)


def run_batch_demo(
    config: SyntheticBatchConfig,
    sweep_dir: Path,
    *,
    plot: bool = True,
    progress: bool = True,
    callbacks: Sequence[Callback] = (),
) -> dict[str, Any]:
    """:func:`~lightning_tau.demos.axis_demo.run_axis_demo` on the batch-size axis: run the finder's sweep of
    ``tau_epoch`` at every batch size of ``config`` into ``sweep_dir``, print the result's table (each batch rule's
    decision and loss cost) and verdict, write ``summary.json``
    (:func:`~lightning_tau.demos.axis_demo.batch_summary`) and (unless ``plot=False``) ``batch_size_sweep.png`` /
    ``.svg``; returns the summary. ``callbacks`` go to every trial's Trainer (they must pickle where
    ``config.workers`` > 1)."""
    return run_axis_demo("batch_size", config, sweep_dir, plot=plot, progress=progress, callbacks=callbacks)
