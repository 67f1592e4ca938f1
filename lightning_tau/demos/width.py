"""The width demo: under μP, how does the best AdamW weight decay move with width? The finder's width axis on digits.

More: docs/width_demo.rst, module notes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback

from lightning_tau import _checks
from lightning_tau.demos.axis_demo import run_axis_demo, width_summary
from lightning_tau.demos.digits import COSINE_FINAL_LR_RATIO, DigitsDataModule, DigitsMLP

__all__ = [
    "MuDigitsMLP",
    "WidthConfig",
    "describe_width",
    "run_width_demo",
    "width_summary",
]


def import_mup() -> Any:
    """The ``mup`` package, or an ``ImportError`` that says how to install it."""
    try:
        import mup
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "The width demo needs the `mup` package (μP): `pip install --no-deps 'mup>=1.0.0' pyyaml`."
        ) from err
    return mup


class MuDigitsMLP(pl.LightningModule):
    """A μP MLP for 8x8 digits: ``64 -> width`` then ``depth - 1`` hidden ``width x width`` layers, each followed by a
    LayerNorm and a ReLU, then a ``MuReadout`` head; trained with ``MuAdamW``.

    Call :meth:`set_base_shapes` before training. The input and hidden matrices decay; LayerNorm parameters and the
    readout do not. ``weight_decay`` is the value ``configure_optimizers`` starts from (mup 1.0.0's ``MuAdamW``
    multiplies it by ``s`` on the hidden matrices); :class:`~lightning_tau.TimescaleCallback` replaces it.

    Logs ``train/loss``, ``val/loss`` and ``val/error``.

    Args:
        width: hidden width.
        depth: number of linear layers before the readout (``depth - 1`` of them are ``width x width``).
        lr: base learning rate (``MuAdamW`` divides it by ``s`` for the hidden matrices).
        weight_decay: the decaying groups' weight decay before the callback sets it.
        schedule: ``"cosine"`` (to ``0.1 * lr`` per step) or ``"constant"``.
        decay_readout: also decay the ``MuReadout`` weight (by default it does not: it is the one decayed matrix
            the output is not invariant to the scale of).
        decay_input: decay the ``64 -> width`` input matrix (the default). It is vector-like in μP (its fan-in does
            not grow), so it keeps ``lr``; ``False`` leaves only the hidden matrices decaying.
        other_lr: learning rate of the parameters that do not decay (LayerNorm, readout); ``None`` is ``lr``.

    Example:
        >>> model = MuDigitsMLP(width=64, depth=3).set_base_shapes(base_width=16)
        >>> groups = model.configure_optimizers()["optimizer"].param_groups
        >>> [(g["lr"], g["weight_decay"]) for g in groups]  # hidden (s=4), input layer, no decay (norms, readout)
        [(0.00075, 0.04), (0.003, 0.01), (0.003, 0.0)]
    """

    def __init__(
        self,
        width: int = 128,
        depth: int = 3,
        lr: float = 3e-3,
        weight_decay: float = 0.01,
        schedule: Literal["constant", "cosine"] = "cosine",
        decay_readout: bool = False,
        other_lr: float | None = None,
        decay_input: bool = True,
    ) -> None:
        super().__init__()
        owner = "MuDigitsMLP"
        _checks.positive_int(owner, "width", width)
        hint = (
            "use depth >= 2: a smaller depth has no hidden width x width matrix, the only weights μP's lr / s touches."
        )
        _checks.integer(owner, "depth", depth, hint, minimum=2)
        _checks.positive_number(owner, "lr", lr, "use a positive learning rate.")
        _checks.positive_number(owner, "weight_decay", weight_decay, "use a positive value.")
        _checks.choice(owner, "schedule", schedule, ("constant", "cosine"))
        for name, value in (("decay_readout", decay_readout), ("decay_input", decay_input)):
            _checks.flag(owner, name, value)
        if other_lr is not None:
            _checks.positive_number(owner, "other_lr", other_lr, "use a positive learning rate, or None for lr.")
        mup = import_mup()
        self.save_hyperparameters()
        layers: list[torch.nn.Module] = []
        fan_in = 64
        for _ in range(depth):
            # a LayerNorm follows, so a bias would break scale invariance (the norm's own bias takes its place)
            layers += [torch.nn.Linear(fan_in, width, bias=False), torch.nn.LayerNorm(width), torch.nn.ReLU()]
            fan_in = width
        self.body = torch.nn.Sequential(*layers)
        self.readout = mup.MuReadout(width, 10)
        self.width, self.depth, self.lr, self.weight_decay = width, depth, lr, weight_decay
        self.schedule, self.decay_readout, self.other_lr = schedule, decay_readout, other_lr
        self.decay_input = decay_input

    def set_base_shapes(self, base_width: int) -> MuDigitsMLP:
        """``mup.set_base_shapes`` against the same model at ``base_width`` (and ``2 * base_width`` as the delta)."""
        mup = import_mup()
        base = MuDigitsMLP(base_width, self.depth)
        delta = MuDigitsMLP(2 * base_width, self.depth)
        mup.set_base_shapes(self, base, delta=delta)
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.readout(self.body(x))

    # the dataset-size demo's steps: the same loss and the same logged keys
    training_step = DigitsMLP.training_step
    validation_step = DigitsMLP.validation_step

    def configure_optimizers(self) -> dict[str, Any]:
        mup = import_mup()
        kept = {id(p) for p in self.readout.parameters()} if not self.decay_readout else set()
        if not self.decay_input:
            kept.add(id(self.body[0].weight))
        matrices = [p for p in self.parameters() if p.ndim >= 2 and id(p) not in kept]
        vectors = [p for p in self.parameters() if p.ndim < 2 or id(p) in kept]
        # mup 1.0.0 splits off the hidden (matrix-like, ninf == 2) weights: lr / s and weight_decay * s
        optimizer = mup.MuAdamW(
            [
                {"params": matrices, "weight_decay": self.weight_decay},
                {"params": vectors, "weight_decay": 0.0, "lr": self.lr if self.other_lr is None else self.other_lr},
            ],
            lr=self.lr,
        )
        if self.schedule == "constant" or self._trainer is None:
            return {"optimizer": optimizer}
        total_steps = max(1, int(self.trainer.estimated_stepping_batches))
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _cosine(total_steps))
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


def _cosine(total_steps: int) -> Any:
    """Per-step factor of a cosine from 1 to ``COSINE_FINAL_LR_RATIO`` (each group keeps its own μP lr ratio)."""

    def factor(step: int) -> float:
        progress = min(step, total_steps) / total_steps
        return COSINE_FINAL_LR_RATIO + (1 - COSINE_FINAL_LR_RATIO) * 0.5 * (1 + math.cos(math.pi * progress))

    return factor


@dataclass
class WidthConfig:
    """The width demo on digits as a configuration of the finder's width axis: every ``(width, λ_base, seed)`` is a
    finder trial with ``TimescaleCallback(tau_epoch=1 / (η_base M λ_base), width_exponent=1)``.

    Attributes:
        widths: hidden widths; the smallest is μP's base width (``s = width / min(widths)``).
        weight_decays: the ``λ_base`` grid (increasing).
        lr: ``η_base``, the base learning rate, fixed for the whole sweep (the hidden matrices get ``η_base / s``).
        seeds: seeds (init and batch order); the finder pairs runs of the same seed across the grid.
        epochs: training epochs per run.
        batch_size: ``B``.
        train_size: training digits ``N`` (at most 1400); every run trains on all of them (``fraction=1``).
        depth: linear layers before the readout (``depth - 1`` hidden ``width x width`` matrices).
        schedule: ``"cosine"`` (to ``0.1 η``) or ``"constant"``; the weight decay is not scheduled.
        label_noise: fraction of training labels randomized (see :class:`~lightning_tau.demos.digits.DigitsDataModule`).
        decay_input: see :class:`MuDigitsMLP`.
        decay_readout: see :class:`MuDigitsMLP`.
        other_lr: see :class:`MuDigitsMLP`.

    Example:
        >>> config = WidthConfig(widths=[16, 64], weight_decays=[8.0, 32.0], train_size=1400, batch_size=64)
        >>> config.steps_per_epoch, [round(t, 4) for t in config.tau_epochs()]  # 1 / (3e-4 * 22 * λ_base)
        (22, [18.9394, 4.7348])
    """

    widths: list[int] = field(default_factory=lambda: [16, 64, 256])
    weight_decays: list[float] = field(default_factory=lambda: [8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0])
    lr: float = 3e-4
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    epochs: int = 30
    batch_size: int = 64
    train_size: int = 1400
    depth: int = 3
    schedule: str = "cosine"
    label_noise: float = 0.0
    decay_input: bool = True
    decay_readout: bool = False
    other_lr: float | None = None

    #: The task's name in ``summary.json`` (the digits sweep writes none).
    task: ClassVar[str | None] = None

    @property
    def base_width(self) -> int:
        return min(self.widths)

    @property
    def num_runs(self) -> int:
        """Finder trials: every ``(width, λ_base, seed)``."""
        return len(self.widths) * len(self.weight_decays) * len(self.seeds)

    @property
    def steps_per_epoch(self) -> int:
        """``M``: optimizer steps per epoch, ``ceil(N / B)`` (the last batch partial), what the callback divides by."""
        return math.ceil(self.train_size / self.batch_size)

    def describe(self) -> str:
        """:func:`describe_width` of this sweep."""
        return describe_width(self)

    def datamodule(self) -> DigitsDataModule:
        """The sweep's data."""
        return DigitsDataModule(train_size=self.train_size, batch_size=self.batch_size, label_noise=self.label_noise)

    def model(self, width: int, weight_decay: float = 0.01, arm: str = "timescale") -> MuDigitsMLP:
        """``make_model(width)``: the μP model at ``width``, its base shapes set (``weight_decay`` is the value the
        callback replaces; ``arm`` is accepted for old callers and must be ``"timescale"``)."""
        _checks.choice("WidthConfig.model", "arm", arm, ("timescale",), "The width demo has no fixed arm.")
        return MuDigitsMLP(
            width=width,
            depth=self.depth,
            lr=self.lr,
            weight_decay=weight_decay,
            schedule=self.schedule,  # type: ignore[arg-type]
            decay_readout=self.decay_readout,
            other_lr=self.other_lr,
            decay_input=self.decay_input,
        ).set_base_shapes(self.base_width)

    def tau_epochs(self) -> list[float]:
        """The finder's ``tau_epoch`` grid, one per ``λ_base`` in the same order: ``1 / (η_base M λ_base)``."""
        return [1.0 / (self.lr * self.steps_per_epoch * lam) for lam in self.weight_decays]

    def timescales_covered(self, lr: float, weight_decay: float) -> float:
        """``sum_t η_t λ`` over the run: how many EMA timescales the weights live through."""
        mean_factor = 1.0 if self.schedule == "constant" else (1 + COSINE_FINAL_LR_RATIO) / 2
        return lr * weight_decay * self.epochs * self.steps_per_epoch * mean_factor

    def trainer_kwargs(self) -> dict[str, Any]:
        """The finder's ``trainer_kwargs`` (without callbacks)."""
        return {
            "max_epochs": self.epochs,
            "accelerator": "cpu",
            "devices": 1,
            "log_every_n_steps": self.steps_per_epoch,
        }


def describe_width(config: Any) -> str:
    """What the width sweep runs, and how many EMA timescales the hidden weights cover (the same at every width).

    Example:
        >>> config = WidthConfig(widths=[16, 256], weight_decays=[8.0, 512.0], seeds=[0, 1], epochs=30)
        >>> print(describe_width(config))  # doctest: +NORMALIZE_WHITESPACE
        Width sweep of λ_base at η_base = 0.0003 (the finder's width axis): 2 widths x 2 λ_base x 2 seeds = 8 runs
          x 30 epochs; N=1400, B=64 (M=22 steps/epoch), cosine, depth 3, label noise 0.
          hidden matrices: lr η_base / s, weight decay s λ_base (TimescaleCallback, width_exponent=1); tau_epoch =
          1 / (η_base M λ_base) from 18.9 (λ_base 8) to 0.296 (λ_base 512).
          timescales the hidden weights cover (sum of η_t λ over the run, every width): 0.871 .. 55.8
    """
    lams = sorted(config.weight_decays)
    taus = config.tau_epochs()
    if getattr(config, "task", None) == "text":
        first = config.describe_task()
    else:
        first = (
            f"N={config.train_size}, B={config.batch_size} (M={config.steps_per_epoch} steps/epoch), {config.schedule},"
            f" depth {config.depth}, label noise {config.label_noise:g}."
        )
    lines = [
        f"{'Text w' if getattr(config, 'task', None) == 'text' else 'W'}idth sweep of λ_base at η_base ="
        f" {config.lr:g} (the finder's width axis): {len(config.widths)} widths x {len(lams)} λ_base x"
        f" {len(config.seeds)} seeds = {config.num_runs} runs x {config.epochs} epochs; {first}",
        "  hidden matrices: lr η_base / s, weight decay s λ_base (TimescaleCallback, width_exponent=1); tau_epoch ="
        f" 1 / (η_base M λ_base) from {max(taus):.3g} (λ_base {lams[0]:g}) to {min(taus):.3g} (λ_base {lams[-1]:g}).",
        "  timescales the hidden weights cover (sum of η_t λ over the run, every width):"
        f" {config.timescales_covered(config.lr, lams[0]):.3g} .. {config.timescales_covered(config.lr, lams[-1]):.3g}",
    ]
    return "\n".join(lines)


def run_width_demo(
    config: Any,
    sweep_dir: Path,
    *,
    plot: bool = True,
    progress: bool = True,
    callbacks: Sequence[Callback] = (),
) -> dict[str, Any]:
    """:func:`~lightning_tau.demos.axis_demo.run_axis_demo` on the width axis: run the finder's sweep at every width
    of ``config``'s task into ``sweep_dir`` (its study journal and, under ``tb/``, every trial's TensorBoard run),
    print the result's table and verdict, write ``summary.json`` (:func:`~lightning_tau.demos.axis_demo.width_summary`)
    and (unless ``plot=False``) ``width_sweep.png`` / ``.svg``; returns the summary.

    ``config`` is a :class:`WidthConfig` or the text task's
    :class:`~lightning_tau.demos.text_width.TextWidthConfig`; ``callbacks`` go to every trial's Trainer.
    """
    return run_axis_demo("width", config, sweep_dir, plot=plot, progress=progress, callbacks=callbacks)
