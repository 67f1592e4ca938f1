"""The text task's model: :class:`ByteGPT`, a small GPT over bytes, in standard parametrization or in μP.

More: docs/text_demo.rst, module notes.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal

import lightning.pytorch as pl
import torch
from torch import nn
from torch.nn import functional as F

from lightning_tau import _checks
from lightning_tau.demos.digits import COSINE_FINAL_LR_RATIO
from lightning_tau.demos.width import import_mup
from lightning_tau.param_groups import build_param_groups

__all__ = ["INIT_STD", "VOCAB_SIZE", "Block", "ByteGPT", "CausalSelfAttention", "Schedule"]

#: Byte-level vocabulary: every byte value is a token.
VOCAB_SIZE = 256

#: GPT-2's init std of the weight matrices (at the base width under μP: the hidden ones get ``std / sqrt(s)``).
INIT_STD = 0.02

Schedule = Literal["constant", "cosine"]


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention (``scaled_dot_product_attention`` with ``is_causal=True``).

    ``scale`` multiplies ``q . k``: ``None`` is the standard ``1 / sqrt(head dim)``; μP's is ``1 / head dim``
    (:class:`ByteGPT` with ``mup=True`` sets it).
    """

    def __init__(self, n_embd: int, n_head: int) -> None:
        super().__init__()
        if n_embd % n_head:
            raise _checks.invalid(
                "CausalSelfAttention", "n_embd", n_embd, f"use a multiple of n_head={n_head} (equal head widths)."
            )
        self.n_head = n_head
        self.scale: float | None = None
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_head, c // self.n_head).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.scale)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    """Pre-LayerNorm transformer block: causal self-attention, then a 4x GELU MLP, each with a residual."""

    def __init__(self, n_embd: int, n_head: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class ByteGPT(pl.LightningModule):
    """A small GPT over bytes (vocabulary 256), trained with AdamW; with ``mup=True`` the same GPT in μP.

    Token and position embeddings, ``n_layer`` pre-LayerNorm blocks, a final LayerNorm and a linear head (GPT-2's
    normal(0, 0.02) init). AdamW's groups come from :func:`~lightning_tau.build_param_groups`: the weight matrices
    (embeddings, attention, MLP, head) in ``decay``; biases, LayerNorms and the position embedding in
    ``no_decay``. A :class:`~lightning_tau.TimescaleCallback` on the Trainer overwrites ``decay``'s weight decay
    from its timescale. The learning rate warms up linearly over ``warmup_fraction`` of the planned steps, then
    is constant or follows a cosine to ``0.1 x lr`` (the paper's nanoGPT schedule); the callback's ``tau`` is at
    the peak ``lr``.

    **μP** (``mup=True``, the text width demo's model, :mod:`~lightning_tau.demos.text_width`; needs the ``mup``
    package): the width is ``n_embd`` and the heads are the same at every width, so the head dimension grows with
    it; the head is a zero-initialised ``MuReadout``, attention is scaled by ``1 / head dim``, and the optimizer is
    ``MuAdamW``. Call :meth:`set_base_shapes` before training. The decaying parameters are the weight matrices but
    the readout: the hidden ones (attention and MLP, ``lr / s`` and ``weight_decay x s`` under μP, in the group
    ``decay_hidden``) and the token embedding (vector-like: ``lr``, in ``decay_vector_like``); the rest is in
    ``no_decay_vector_like``. A :class:`~lightning_tau.TimescaleCallback` sets each group's decay from its learning
    rate.

    Logs ``train/loss``, ``val/loss`` (cross-entropy in nats per byte) and ``val/error`` (next-byte error rate).

    Args:
        block_size: context length (the position embedding's size).
        n_layer: transformer blocks.
        n_head: attention heads (``n_embd`` must be a multiple).
        n_embd: embedding width (with ``mup=True``: the width μP scales).
        lr: AdamW's peak learning rate (with ``mup=True``: ``η_base``; ``MuAdamW`` divides it by ``s`` for the hidden
            matrices).
        weight_decay: the ``decay`` groups' weight decay (replaced by ``TimescaleCallback`` when it runs; positive
            with ``mup=True``, where mup 1.0.0 multiplies it by ``s`` on the hidden matrices).
        schedule: ``"cosine"`` or ``"constant"`` after the warm-up.
        warmup_fraction: share of the planned optimizer steps spent warming up, in ``[0, 1)``.
        mup: the μP model (see above).
        decay_input: decay the token embedding (``False``: it joins the no-decay group).

    Example:
        >>> model = ByteGPT(block_size=16, n_layer=1, n_head=2, n_embd=16)
        >>> model(torch.zeros(2, 16, dtype=torch.long)).shape
        torch.Size([2, 16, 256])
        >>> [(g["name"], g["weight_decay"]) for g in model.configure_optimizers()["optimizer"].param_groups]
        [('decay', 0.1), ('no_decay', 0.0)]
        >>> mu = ByteGPT(block_size=16, n_layer=1, n_head=2, n_embd=64, mup=True).set_base_shapes(base_width=16)
        >>> [(g["name"], g["lr"], g["weight_decay"]) for g in mu.build_optimizer().param_groups if g["params"]]
        [('decay_hidden', 0.00075, 0.4), ('decay_vector_like', 0.003, 0.1), ('no_decay_vector_like', 0.003, 0.0)]
        >>> ByteGPT(n_embd=30, n_head=4)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `ByteGPT(n_embd=30)` is not valid: use a multiple of n_head=4 (every ...
    """

    #: The width argument's name in error messages (``MuByteGPT`` calls it ``width``).
    _width_name: ClassVar[str] = "n_embd"

    def __init__(
        self,
        block_size: int = 64,
        n_layer: int = 2,
        n_head: int = 4,
        n_embd: int = 64,
        lr: float = 3e-3,
        weight_decay: float = 0.1,
        schedule: Schedule = "cosine",
        warmup_fraction: float = 0.0,
        mup: bool = False,
        decay_input: bool = True,
    ) -> None:
        super().__init__()
        owner, width = type(self).__name__, self._width_name
        for name, value in (("block_size", block_size), ("n_layer", n_layer), ("n_head", n_head), (width, n_embd)):
            _checks.positive_int(owner, name, value)
        if n_embd % n_head:
            raise _checks.invalid(
                owner, width, n_embd, f"use a multiple of n_head={n_head} (every head gets {width} / n_head)."
            )
        _checks.positive_number(owner, "lr", lr, "use a positive learning rate.")
        if _checks.flag(owner, "mup", mup):  # mup 1.0.0 scales a positive weight decay by s; its groups are named by it
            _checks.positive_number(owner, "weight_decay", weight_decay, "use a positive value.")
        else:
            _checks.in_range(
                owner, "weight_decay", weight_decay, "use a finite value >= 0.", low=0, high=math.inf, low_closed=True
            )
        _checks.choice(owner, "schedule", schedule, ("constant", "cosine"))
        _checks.in_range(
            owner, "warmup_fraction", warmup_fraction, "use a value in [0, 1).", low=0, high=1, low_closed=True
        )
        _checks.flag(owner, "decay_input", decay_input)
        mup_package = import_mup() if mup else None
        self.save_hyperparameters()
        self.tok = nn.Embedding(VOCAB_SIZE, n_embd)
        self.pos = nn.Parameter(torch.zeros(block_size, n_embd))
        self.blocks = nn.Sequential(*(Block(n_embd, n_head) for _ in range(n_layer)))
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, VOCAB_SIZE, bias=False)
        self.apply(self._init_weights)
        if mup_package is not None:
            self.head = mup_package.MuReadout(n_embd, VOCAB_SIZE, bias=False, readout_zero_init=True)
            for block in self.blocks:
                block.attn.scale = 1.0 / (n_embd // n_head)  # μP: 1 / head dim
        self.lr, self.weight_decay, self.schedule, self.warmup_fraction = lr, weight_decay, schedule, warmup_fraction
        self.mup, self.decay_input = mup, decay_input

    @property
    def block_size(self) -> int:
        """The context length."""
        return self.pos.shape[0]

    @property
    def width(self) -> int:
        """``n_embd``, the width μP scales with ``mup=True``."""
        return self.tok.embedding_dim

    def set_base_shapes(self, base_width: int) -> ByteGPT:
        """μP only: ``mup.set_base_shapes`` against the same model at ``n_embd=base_width`` (``2 x base_width`` as
        the delta), then the weight matrices re-drawn from ``N(0, 0.02^2)``, the hidden ones' variance divided by
        ``s``."""
        if not self.mup:
            raise _checks.invalid(
                type(self).__name__, "mup", False, "set_base_shapes is for the μP model: build it with mup=True."
            )
        mup = import_mup()
        shape = {"block_size": self.block_size, "n_layer": len(self.blocks), "n_head": self.blocks[0].attn.n_head}
        base = ByteGPT(n_embd=base_width, mup=True, **shape)
        delta = ByteGPT(n_embd=2 * base_width, mup=True, **shape)
        mup.set_base_shapes(self, base, delta=delta)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)) and module is not self.head:
                mup.init.normal_(module.weight, std=INIT_STD)
        return self

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

    def no_weight_decay(self) -> list[str]:
        """timm's convention, read by ``build_param_groups``: the position embedding does not decay."""
        return ["pos"]

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tok(idx) + self.pos[: idx.shape[1]]
        return self.head(self.ln_f(self.blocks(x)))

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = F.cross_entropy(self(x).flatten(0, 1), y.flatten())
        self.log("train/loss", loss, on_step=True, on_epoch=True)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        x, y = batch
        logits = self(x).flatten(0, 1)
        self.log("val/loss", F.cross_entropy(logits, y.flatten()))
        self.log("val/error", (logits.argmax(dim=1) != y.flatten()).float().mean())

    def build_optimizer(self) -> torch.optim.Optimizer:
        """AdamW (betas 0.9, 0.95) over :func:`~lightning_tau.build_param_groups`'s ``decay`` / ``no_decay``; with
        ``mup=True`` ``MuAdamW`` over the same groups, split into ``hidden`` and ``vector_like``."""
        exempt = [*(["head"] if self.mup else []), *([] if self.decay_input else ["tok"])]
        groups = build_param_groups(self, weight_decay=self.weight_decay, no_weight_decay=exempt)
        if not self.mup:
            return torch.optim.AdamW(groups, lr=self.lr, betas=(0.9, 0.95))
        # mup 1.0.0 splits each group: hidden (matrix-like) weights get lr / s and weight_decay x s
        optimizer = import_mup().MuAdamW(groups, lr=self.lr, betas=(0.9, 0.95))
        for group in optimizer.param_groups:
            group["name"] = f"{'decay' if group['weight_decay'] > 0 else 'no_decay'}_{_mup_group_kind(group)}"
            # build_param_groups' `width_mult` key (s = 1) was copied into mup's hidden split: give it that split's s
            hidden = [p.infshape.width_mult() for p in group["params"] if p.infshape.ninf() == 2]
            group["width_mult"] = float(max(hidden)) if hidden else 1.0
        return optimizer

    def configure_optimizers(self) -> dict[str, Any]:
        optimizer = self.build_optimizer()
        if self._trainer is None:
            return {"optimizer": optimizer}
        total = max(1, int(self.trainer.estimated_stepping_batches))
        warmup = int(self.warmup_fraction * total)
        cosine = self.schedule == "cosine"

        def factor(step: int) -> float:
            if step < warmup:
                return (step + 1) / warmup
            if not cosine:
                return 1.0
            progress = min(1.0, (step - warmup) / max(1, total - warmup))
            return COSINE_FINAL_LR_RATIO + (1 - COSINE_FINAL_LR_RATIO) * 0.5 * (1 + math.cos(math.pi * progress))

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


def _mup_group_kind(group: dict[str, Any]) -> str:
    """``hidden`` for mup's matrix-like (``ninf == 2``) group, ``vector_like`` for the others."""
    return "hidden" if any(p.infshape.ninf() == 2 for p in group["params"]) else "vector_like"
