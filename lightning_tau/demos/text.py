"""The text task: a small byte-level GPT on the Python standard library's own source files, nothing downloaded.

More: docs/text_demo.rst, module notes.
"""

from __future__ import annotations

import functools
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader

from lightning_tau import _checks
from lightning_tau.demos.byte_gpt import VOCAB_SIZE, Block, ByteGPT
from lightning_tau.demos.digits import BatchedTensors, as_batch

__all__ = [
    "VAL_EVERY",
    "VOCAB_SIZE",
    "Block",
    "ByteGPT",
    "TextDataModule",
    "TextDemoConfig",
    "load_stdlib_corpus",
    "stdlib_sources",
]

#: Every ``VAL_EVERY``-th document (in the fixed shuffled order) is a validation document.
VAL_EVERY = 10


def stdlib_sources() -> list[Path]:
    """The standard library's top-level ``.py`` files, sorted by name: the text task's documents.

    Raises:
        FileNotFoundError: the interpreter ships no standard-library sources (an embedded or zipped stdlib).

    Example:
        >>> files = stdlib_sources()
        >>> len(files) > 100, all(f.suffix == ".py" for f in files), files == sorted(files)
        (True, True, True)
    """
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.glob("*.py") if p.is_file())
    if not files:
        raise FileNotFoundError(
            f"The text task reads the standard library's own .py files, but {str(root)!r} holds none (an embedded"
            " or zip-only Python?). Run it with a CPython that ships its standard-library sources."
        )
    return files


@functools.lru_cache(maxsize=8)
def load_stdlib_corpus(max_tokens: int, val_tokens: int, split_seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``(train, val)`` byte tensors (``uint8``): the first ``max_tokens`` bytes of the training documents and the
    first ``val_tokens`` bytes of the validation documents (cached; callers must not write to them).

    The documents (:func:`stdlib_sources`) are shuffled with ``split_seed``; every :data:`VAL_EVERY`-th one is
    held out, so no file is in both sets, and the same ``split_seed`` holds out the same files.

    Example:
        >>> train, val = load_stdlib_corpus(20_000, 5_000)
        >>> len(train), len(val), train.dtype
        (20000, 5000, torch.uint8)
        >>> load_stdlib_corpus(20_000, 5_000, split_seed=-1)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `load_stdlib_corpus(split_seed=-1)` is not valid: use an integer >= 0 ...
    """
    _check_sizes("load_stdlib_corpus", max_tokens=max_tokens, val_tokens=val_tokens, split_seed=split_seed)
    files = stdlib_sources()
    order = torch.randperm(len(files), generator=torch.Generator().manual_seed(split_seed)).tolist()
    train, val = bytearray(), bytearray()
    for position, index in enumerate(order):
        target, cap = (val, val_tokens) if position % VAL_EVERY == 0 else (train, max_tokens)
        if len(target) < cap:
            target += files[index].read_bytes()
        if len(train) >= max_tokens and len(val) >= val_tokens:
            break
    if len(train) < max_tokens or len(val) < val_tokens:
        short = "max_tokens" if len(train) < max_tokens else "val_tokens"
        raise _checks.invalid(
            "load_stdlib_corpus",
            short,
            max_tokens if short == "max_tokens" else val_tokens,
            f"the standard library here has {len(train):,} training and {len(val):,} validation bytes; asked for"
            f" max_tokens={max_tokens:,} and val_tokens={val_tokens:,}. Use smaller values.",
        )
    return _as_uint8(train[:max_tokens]), _as_uint8(val[:val_tokens])


def _check_sizes(owner: str, **sizes: Any) -> None:
    """The text data's integer arguments: every one positive but ``split_seed``, an integer >= 0."""
    for name, value in sizes.items():
        if name == "split_seed":
            _checks.integer(owner, name, value, "use an integer >= 0 (it picks the held-out files).", minimum=0)
        else:
            _checks.positive_int(owner, name, value)


def _as_uint8(data: bytearray) -> torch.Tensor:
    return torch.frombuffer(data, dtype=torch.uint8) if data else torch.zeros(0, dtype=torch.uint8)


def _windows(tokens: torch.Tensor, block_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Non-overlapping ``block_size`` windows ``x`` and their next-token targets ``y`` (int64)."""
    count = (len(tokens) - 1) // block_size
    used = tokens[: count * block_size + 1].long()
    x = used[:-1].view(count, block_size)
    y = used[1:].reshape(count, block_size)
    return x, y


class TextDataModule(pl.LightningDataModule):
    """``fraction`` of the standard-library corpus as next-byte windows; a fixed validation set by document.

    Args:
        fraction: share of the ``max_tokens`` training bytes to train on, in ``(0, 1]`` (nested prefixes).
        block_size: tokens per window (the context length).
        batch_size: windows per optimizer step on one device.
        max_tokens: training bytes at ``fraction=1``.
        val_tokens: validation bytes (from held-out documents), the same for every ``fraction``.
        split_seed: seed of the document order (and so of which documents are held out).

    ``dataset_size`` is in tokens: the tokens an epoch trains on (the loader drops the last, incomplete batch);
    ``tokens_per_step`` the tokens of one step on one device, so ``dataset_size / tokens_per_step`` is the steps
    per epoch.

    Example:
        >>> dm = TextDataModule(fraction=0.5, block_size=32, batch_size=8, max_tokens=20_000, val_tokens=4_000)
        >>> dm.setup("fit")
        >>> dm.num_windows, dm.dataset_size, dm.tokens_per_step, len(dm.train_dataloader())
        (312, 9984, 256, 39)
        >>> TextDataModule(fraction=1.5)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TextDataModule(fraction=1.5)` is not valid: use a share of the corpus ...
    """

    def __init__(
        self,
        fraction: float = 1.0,
        block_size: int = 64,
        batch_size: int = 32,
        max_tokens: int = 1_000_000,
        val_tokens: int = 100_000,
        split_seed: int = 0,
    ) -> None:
        super().__init__()
        owner = "TextDataModule"
        _checks.in_range(
            owner, "fraction", fraction, "use a share of the corpus in (0, 1].", low=0, high=1, high_closed=True
        )
        _check_sizes(
            owner,
            block_size=block_size,
            batch_size=batch_size,
            max_tokens=max_tokens,
            val_tokens=val_tokens,
            split_seed=split_seed,
        )
        train_tokens = int(fraction * max_tokens)
        if (train_tokens - 1) // block_size < batch_size:
            raise _checks.invalid(
                owner,
                "fraction",
                fraction,
                f"at max_tokens={max_tokens:,} it trains on {train_tokens:,} tokens, less than one batch of"
                f" batch_size={batch_size} windows of block_size={block_size}. Use a larger fraction or max_tokens, or"
                " a smaller batch or block.",
            )
        if (val_tokens - 1) // block_size < 1:
            raise _checks.invalid(
                owner, "val_tokens", val_tokens, f"it holds no window of block_size={block_size}: use more."
            )
        self.fraction = float(fraction)
        self.block_size = block_size
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self.val_tokens = val_tokens
        self.split_seed = split_seed
        self.num_windows = (train_tokens - 1) // block_size
        self.train_set: BatchedTensors | None = None
        self.val_set: BatchedTensors | None = None

    @property
    def tokens_per_step(self) -> int:
        """``B`` in tokens on one device: ``batch_size x block_size``."""
        return self.batch_size * self.block_size

    @property
    def dataset_size(self) -> int:
        """``N`` in tokens: the tokens one epoch trains on, whole batches of whole windows."""
        return self.num_windows // self.batch_size * self.tokens_per_step

    def setup(self, stage: str) -> None:
        if self.train_set is not None:
            return
        train, val = load_stdlib_corpus(self.max_tokens, self.val_tokens, self.split_seed)
        self.train_set = BatchedTensors(*_windows(train[: int(self.fraction * self.max_tokens)], self.block_size))
        self.val_set = BatchedTensors(*_windows(val, self.block_size))
        assert len(self.train_set) == self.num_windows

    def train_dataloader(self) -> DataLoader:
        assert self.train_set is not None, "call setup() first"
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, drop_last=True, collate_fn=as_batch)

    def val_dataloader(self) -> DataLoader:
        assert self.val_set is not None, "call setup() first"
        return DataLoader(self.val_set, batch_size=4 * self.batch_size, collate_fn=as_batch)


@dataclass
class TextDemoConfig:
    """The dataset-size sweep on text (``lightning-tau demo --task text``): every ``(fraction, tau_epoch, seed)`` is a
    trial of the finder's dataset-size axis (:func:`~lightning_tau.demos.size.run_size_demo`), on a fixed random
    ``fraction`` of the corpus's training windows.

    Attributes:
        sizes: fractions of the corpus (``max_tokens`` training bytes) to train on, in ``(0, 1]``.
        tau_epochs: EMA timescales in epochs; each gives ``weight_decay = B / (lr * N * tau_epoch)``, ``N`` and
            ``B`` in tokens.
        seeds: seeds (model init and batch order); runs with the same fraction and ``tau_epoch`` are averaged.
        epochs: training epochs per run, the same for every fraction (the paper's nanoGPT runs: about 4).
        batch_size: windows per optimizer step.
        lr: AdamW's peak learning rate.
        schedule: ``"cosine"`` (to ``0.1 * lr``, as in the paper) or ``"constant"``.
        warmup_fraction: share of each run's steps spent warming up linearly.
        block_size: tokens per window.
        n_layer: transformer blocks.
        n_head: attention heads.
        n_embd: embedding width.
        max_tokens: training bytes at fraction 1.
        val_tokens: validation bytes (held-out documents).
        val_every_n_epochs: validate every this many epochs (the sweep's metric is the last validation: let it divide
            ``epochs``).
        accelerator: the Trainer's ``accelerator`` (``"auto"``: a GPU when there is one).
    """

    sizes: list[float] = field(default_factory=lambda: [0.25, 0.5, 1.0])
    tau_epochs: list[float] = field(default_factory=lambda: [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0])
    seeds: list[int] = field(default_factory=lambda: [0, 1])
    epochs: int = 10
    batch_size: int = 32
    lr: float = 3e-3
    schedule: str = "cosine"
    warmup_fraction: float = 0.05
    block_size: int = 128
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    max_tokens: int = 2_000_000
    val_tokens: int = 200_000
    val_every_n_epochs: int = 1
    accelerator: str = "auto"

    #: The task's name in ``summary.json`` and ``--task``.
    task: ClassVar[str] = "text"

    @property
    def num_runs(self) -> int:
        return len(self.sizes) * len(self.tau_epochs) * len(self.seeds)

    def datamodule(self, fraction: float) -> TextDataModule:
        """The data of one fraction (checks the sizes; reads nothing until ``setup``)."""
        return TextDataModule(
            fraction=fraction,
            block_size=self.block_size,
            batch_size=self.batch_size,
            max_tokens=self.max_tokens,
            val_tokens=self.val_tokens,
        )

    def weight_decay(self, fraction: float, tau_epoch: float) -> float:
        """What ``TimescaleCallback`` sets: ``B / (lr * N * tau_epoch)`` with ``N``, ``B`` in tokens.

        Example:
            >>> config = TextDemoConfig(max_tokens=100_000, block_size=64, batch_size=16, lr=1e-3)
            >>> config.datamodule(1.0).dataset_size  # 1562 windows -> 97 whole batches of 16 x 64 tokens
            99328
            >>> round(config.weight_decay(1.0, 2.0), 4)  # 1 / (lr * 97 steps * 2 epochs)
            5.1546
        """
        data = self.datamodule(fraction)
        return data.tokens_per_step / (self.lr * data.dataset_size * tau_epoch)

    def describe(self) -> str:
        """What the sweep runs, with each fraction's ``N`` in tokens and the weight-decay grid its ``tau_epoch`` grid
        gives.

        Example:
            >>> print(TextDemoConfig(sizes=[0.5, 1.0], tau_epochs=[1.0, 4.0], seeds=[0], epochs=3,
            ...                      max_tokens=100_000).describe())  # doctest: +NORMALIZE_WHITESPACE
            Text sweep: 2 fractions x 2 tau_epochs x 1 seeds = 4 runs x 3 epochs; byte-level GPT 4 layers x 128 wide,
              block 128, B = 32 x 128 = 4096 tokens, lr=0.003 (cosine, 5% warm-up); corpus: 100,000 training bytes
              of the standard library's .py files.
              fraction 0.5: N=49,152 tokens (12 steps/epoch), weight decay 6.94 .. 27.8 (tau_epoch 4 .. 1)
              fraction 1: N=98,304 tokens (24 steps/epoch), weight decay 3.47 .. 13.9 (tau_epoch 4 .. 1)
        """
        lines = [
            f"Text sweep: {len(self.sizes)} fractions x {len(self.tau_epochs)} tau_epochs x {len(self.seeds)} seeds"
            f" = {self.num_runs} runs x {self.epochs} epochs; byte-level GPT {self.n_layer} layers x {self.n_embd}"
            f" wide, block {self.block_size}, B = {self.batch_size} x {self.block_size} ="
            f" {self.batch_size * self.block_size} tokens, lr={self.lr:g} ({self.schedule},"
            f" {self.warmup_fraction:.0%} warm-up); corpus: {self.max_tokens:,} training bytes of the standard"
            " library's .py files."
        ]
        taus = sorted(self.tau_epochs, reverse=True)
        for fraction in self.sizes:
            data = self.datamodule(fraction)
            decays = [self.weight_decay(fraction, tau) for tau in taus]
            lines.append(
                f"  fraction {fraction:g}: N={data.dataset_size:,} tokens"
                f" ({data.dataset_size // data.tokens_per_step} steps/epoch), weight decay {decays[0]:.3g} .."
                f" {decays[-1]:.3g} (tau_epoch {taus[0]:g} .. {taus[-1]:g})"
            )
        return "\n".join(lines)

    def fractions(self) -> list[float]:
        """``sizes``, the finder's fractions of the training windows, increasing."""
        return sorted(self.sizes)

    def full_datamodule(self) -> TextDataModule:
        """The whole corpus (``fraction=1``); the finder trains on a fixed random share of its windows per size."""
        return self.datamodule(1.0)

    def model(self) -> ByteGPT:
        """A fresh :class:`ByteGPT` (its ``weight_decay`` is the placeholder the callback replaces)."""
        return ByteGPT(
            block_size=self.block_size,
            n_layer=self.n_layer,
            n_head=self.n_head,
            n_embd=self.n_embd,
            lr=self.lr,
            schedule=self.schedule,  # type: ignore[arg-type]
            warmup_fraction=self.warmup_fraction,
        )

    def trainer_kwargs(self) -> dict[str, Any]:
        """The finder's ``trainer_kwargs`` (without callbacks)."""
        return {
            "max_epochs": self.epochs,
            "accelerator": self.accelerator,
            "devices": 1,
            "check_val_every_n_epoch": self.val_every_n_epochs,
        }

    def task_hparams(self) -> dict[str, Any]:
        """The task's own hparams for every run's HParams record (``dataset_size`` and ``batch_size`` there are in
        windows of ``block_size`` tokens: the finder's ``TimescaleCallback`` counts samples, which gives the same
        ``M``, and so the same weight decay, as counting tokens)."""
        return {
            "block_size": self.block_size,
            "n_layer": self.n_layer,
            "n_head": self.n_head,
            "n_embd": self.n_embd,
            "max_tokens": self.max_tokens,
            "warmup_fraction": self.warmup_fraction,
        }
