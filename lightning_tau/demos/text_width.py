"""The width demo on the text task: the finder's width axis on a μP byte-level GPT.

More: docs/text_demo.rst, module notes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from lightning_tau.demos.byte_gpt import ByteGPT, Schedule
from lightning_tau.demos.digits import COSINE_FINAL_LR_RATIO
from lightning_tau.demos.text import TextDataModule
from lightning_tau.demos.width import describe_width, run_width_demo

__all__ = ["QUICK_HELD_OUT", "MuByteGPT", "TextWidthConfig", "run_text_width_demo"]


class MuByteGPT(ByteGPT):
    """:class:`~lightning_tau.demos.text.ByteGPT` in μP (``mup=True``) under the width axis's name for ``n_embd``:
    ``MuByteGPT(width=w, ...)`` is ``ByteGPT(n_embd=w, mup=True, ...)``, for code (a ``--config`` of ``lightning-tau
    find --axis width``) that builds its model through ``__init__(width=...)``. Call :meth:`set_base_shapes` before
    training.

    Example:
        >>> model = MuByteGPT(width=64, block_size=16, n_layer=1, n_head=2).set_base_shapes(base_width=16)
        >>> [(g["name"], g["lr"], g["weight_decay"]) for g in model.build_optimizer().param_groups if g["params"]]
        [('decay_hidden', 0.00075, 0.4), ('decay_vector_like', 0.003, 0.1), ('no_decay_vector_like', 0.003, 0.0)]
        >>> MuByteGPT(width=30, n_head=4)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `MuByteGPT(width=30)` is not valid: use a multiple of n_head=4 (every ...
    """

    _width_name: ClassVar[str] = "width"

    def __init__(
        self,
        width: int = 64,
        block_size: int = 64,
        n_layer: int = 2,
        n_head: int = 4,
        lr: float = 3e-3,
        weight_decay: float = 0.1,
        schedule: Schedule = "cosine",
        warmup_fraction: float = 0.0,
        decay_input: bool = True,
    ) -> None:
        super().__init__(
            block_size,
            n_layer,
            n_head,
            width,
            lr,
            weight_decay,
            schedule,
            warmup_fraction,
            mup=True,
            decay_input=decay_input,
        )


@dataclass
class TextWidthConfig:
    """The λ_base sweep on text as a configuration of the finder's width axis: every ``(width, λ_base, seed)`` is a
    finder trial with ``TimescaleCallback(tau_epoch=1 / (η_base M λ_base), width_exponent=1)``.

    Attributes:
        widths: ``n_embd`` values; the smallest is μP's base width (``s = width / min(widths)``).
        weight_decays: the ``λ_base`` grid.
        lr: ``η_base``, fixed for the whole sweep.
        seeds: seeds (init and batch order).
        epochs: epochs per run over ``max_tokens`` training bytes.
        batch_size: windows per optimizer step.
        block_size: tokens per window.
        n_layer: transformer blocks.
        n_head: attention heads at every width (the head dimension grows with width).
        max_tokens: training bytes.
        val_tokens: validation bytes, read from the held-out files (every
            :data:`~lightning_tau.demos.text.VAL_EVERY`-th file in the ``split_seed`` order; no file is in both sets).
        split_seed: seed of the file order, and so of which files are held out for validation.
        schedule: ``"cosine"`` (to ``0.1 η``) or ``"constant"``; the weight decay is not scheduled.
        warmup_fraction: share of each run's steps spent warming up linearly.
        decay_input: decay the token embedding (see :class:`~lightning_tau.demos.text.ByteGPT`).
        val_every_n_epochs: validate every this many epochs (the metric is the last validation).
        accelerator: the Trainer's ``accelerator``.
    """

    widths: list[int] = field(default_factory=lambda: [128, 256, 512, 1024])
    weight_decays: list[float] = field(default_factory=lambda: [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0])
    lr: float = 3e-3
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    epochs: int = 4
    batch_size: int = 32
    block_size: int = 256
    n_layer: int = 4
    n_head: int = 4
    max_tokens: int = 3_500_000
    val_tokens: int = 200_000
    split_seed: int = 0
    schedule: str = "cosine"
    warmup_fraction: float = 0.02
    decay_input: bool = True
    val_every_n_epochs: int = 1
    accelerator: str = "auto"

    #: The task's name in ``summary.json`` and each run's hparams.
    task: ClassVar[str] = "text"
    #: The figure's title.
    title: ClassVar[str] = (
        "μP byte-level GPT on the standard library's sources: final loss against the base weight decay"
    )

    @property
    def num_runs(self) -> int:
        """Finder trials: every ``(width, λ_base, seed)``."""
        return len(self.widths) * len(self.weight_decays) * len(self.seeds)

    @property
    def base_width(self) -> int:
        return min(self.widths)

    def datamodule(self) -> TextDataModule:
        """The sweep's data (checks the sizes; reads nothing until ``setup``)."""
        return TextDataModule(
            fraction=1.0,
            block_size=self.block_size,
            batch_size=self.batch_size,
            max_tokens=self.max_tokens,
            val_tokens=self.val_tokens,
            split_seed=self.split_seed,
        )

    def model(self, width: int) -> ByteGPT:
        """``make_model(width)``: the μP model at ``width``, its base shapes set."""
        return ByteGPT(
            n_embd=width,
            mup=True,
            block_size=self.block_size,
            n_layer=self.n_layer,
            n_head=self.n_head,
            lr=self.lr,
            schedule=self.schedule,  # type: ignore[arg-type]
            warmup_fraction=self.warmup_fraction,
            decay_input=self.decay_input,
        ).set_base_shapes(self.base_width)

    def trainer_kwargs(self) -> dict[str, Any]:
        """The finder's ``trainer_kwargs`` (without callbacks)."""
        return {
            "max_epochs": self.epochs,
            "accelerator": self.accelerator,
            "devices": 1,
            "log_every_n_steps": max(1, self.steps_per_epoch // 4),
            "check_val_every_n_epoch": self.val_every_n_epochs,
        }

    @property
    def steps_per_epoch(self) -> int:
        data = self.datamodule()
        return data.dataset_size // data.tokens_per_step

    def tau_epochs(self) -> list[float]:
        """The finder's ``tau_epoch`` grid, one per ``λ_base`` in the same order: ``1 / (η_base M λ_base)``, ``M``
        the optimizer steps per epoch.

        Example:
            >>> config = TextWidthConfig(max_tokens=100_000, block_size=64, batch_size=16, lr=1e-3,
            ...                          weight_decays=[2.0, 4.0])
            >>> config.steps_per_epoch, [round(t, 4) for t in config.tau_epochs()]  # 1562 windows: 97 whole batches
            (97, [5.1546, 2.5773])
        """
        return [1.0 / (self.lr * self.steps_per_epoch * lam) for lam in self.weight_decays]

    def timescales_covered(self, lr: float, weight_decay: float) -> float:
        """``sum_t η_t λ`` over a run whose peak lr is ``lr``: how many EMA timescales the weights live through."""
        cosine_mean = 1.0 if self.schedule == "constant" else (1 + COSINE_FINAL_LR_RATIO) / 2
        mean_factor = self.warmup_fraction / 2 + (1 - self.warmup_fraction) * cosine_mean
        return lr * weight_decay * self.epochs * self.steps_per_epoch * mean_factor

    def describe_task(self) -> str:
        """The task's part of :meth:`describe`'s first line."""
        data = self.datamodule()
        return (
            f"μP byte-level GPT {self.n_layer} layers, {self.n_head} heads, block {self.block_size},"
            f" B = {self.batch_size} x {self.block_size} = {data.tokens_per_step} tokens, N = {data.dataset_size:,}"
            f" tokens ({self.steps_per_epoch} steps/epoch), {self.schedule}, {self.warmup_fraction:.0%} warm-up;"
            f" validation: {self.val_tokens:,} bytes of held-out files (split_seed {self.split_seed});"
            f" {'the token embedding decays with λ_base' if self.decay_input else 'only the hidden matrices decay'}."
        )

    def describe(self) -> str:
        """What the sweep runs (:func:`~lightning_tau.demos.width.describe_width`).

        Example:
            >>> config = TextWidthConfig(widths=[16, 64], weight_decays=[1.0, 16.0], seeds=[0], epochs=2,
            ...                          batch_size=16, block_size=32, n_layer=1, n_head=2, max_tokens=32_000,
            ...                          warmup_fraction=0.0)
            >>> print(config.describe())  # doctest: +NORMALIZE_WHITESPACE
            Text width sweep of λ_base at η_base = 0.003 (the finder's width axis): 2 widths x 2 λ_base x 1 seeds =
              4 runs x 2 epochs; μP byte-level GPT 1 layers, 2 heads, block 32, B = 16 x 32 = 512 tokens, N = 31,744
              tokens (62 steps/epoch), cosine, 0% warm-up; validation: 200,000 bytes of held-out files (split_seed 0);
              the token embedding decays with λ_base.
              hidden matrices: lr η_base / s, weight decay s λ_base (TimescaleCallback, width_exponent=1); tau_epoch =
              1 / (η_base M λ_base) from 5.38 (λ_base 1) to 0.336 (λ_base 16).
              timescales the hidden weights cover (sum of η_t λ over the run, every width): 0.205 .. 3.27
        """
        return describe_width(self)


#: ``lightning-tau demo --task text --axis width --quick``: the held-out-file regime of issue 20, where one
#: exploration saw an optimum at ``λ_base`` = 4 at widths 16 and 64. Widths 16 / 64 / 128 (``s`` up to 8), 2 layers,
#: 2 heads; 48 KiB of training files (49,152 bytes: 191 steps of 8 windows of 32 bytes per epoch) x 4 epochs =
#: 764 steps per run; validation on 16,000 bytes of held-out files; only the hidden matrices decay
#: (``decay_input=False``); ``λ_base`` 1 .. 16 (x2 apart, around 4); 2 seeds (the fewest an interval needs): 30 runs,
#: 514 s of CPU time when measured (width 32 is left out to stay under 10 minutes); what it showed:
#: ``docs/text_demo.rst``.
QUICK_HELD_OUT = TextWidthConfig(
    widths=[16, 64, 128],
    weight_decays=[1.0, 2.0, 4.0, 8.0, 16.0],
    lr=3e-3,
    seeds=[0, 1],
    epochs=4,
    batch_size=8,
    block_size=32,
    n_layer=2,
    n_head=2,
    max_tokens=49_152,
    val_tokens=16_000,
    split_seed=0,
    warmup_fraction=0.02,
    decay_input=False,
    val_every_n_epochs=4,
    accelerator="cpu",
)

# the whole sweep is the digits width demo's, with this config's task
run_text_width_demo = run_width_demo
