"""The decoupled-decay optimizer families (torch, bitsandbytes, torchao, lion-pytorch) as factories, and the
zero-gradient step that shows each one's decay is ``w * (1 - lr * wd)``."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

import torch
from torch.nn import Parameter
from torch.optim import Optimizer


def _installed(package: str) -> bool:
    return importlib.util.find_spec(package) is not None


def bnb_factory(name: str, **kwargs: Any) -> Callable[[list[Parameter]], Optimizer]:
    return lambda params: getattr(importlib.import_module("bitsandbytes.optim"), name)(params, **kwargs)


def _torchao(name: str, **kwargs: Any) -> Callable[[list[Parameter]], Optimizer]:
    return lambda params: getattr(importlib.import_module("torchao.optim"), name)(params, **kwargs)


def _lion(**kwargs: Any) -> Callable[[list[Parameter]], Optimizer]:
    return lambda params: importlib.import_module("lion_pytorch").Lion(params, **kwargs)


# name -> (optional package or None, factory). Muon takes 2-D parameters only; the 8-bit and 4-bit states need
# tensors of at least 4096 elements (a multiple of the block size for torchao), so the test uses a 64 x 64 matrix.
_ADAM = {"lr": 1e-2, "weight_decay": 0.1}


_ALL_DECOUPLED: dict[str, tuple[str | None, Callable[[list[Parameter]], Optimizer]]] = {
    "torch.AdamW": (None, lambda params: torch.optim.AdamW(params, **_ADAM)),
    "torch.Adam(decoupled)": (None, lambda p: torch.optim.Adam(p, **_ADAM, decoupled_weight_decay=True)),
    "torch.NAdam(decoupled)": (None, lambda p: torch.optim.NAdam(p, **_ADAM, decoupled_weight_decay=True)),
    "torch.RAdam(decoupled)": (None, lambda p: torch.optim.RAdam(p, **_ADAM, decoupled_weight_decay=True)),
    "torch.Muon": (None, lambda params: torch.optim.Muon(params, lr=2e-2, weight_decay=0.1)),
    "torch.Adafactor": (None, lambda params: torch.optim.Adafactor(params, lr=1e-2, weight_decay=0.1)),
    "bnb.Adam": ("bitsandbytes", bnb_factory("Adam", **_ADAM)),
    "bnb.Adam8bit": ("bitsandbytes", bnb_factory("Adam8bit", **_ADAM)),
    "bnb.AdamW": ("bitsandbytes", bnb_factory("AdamW", **_ADAM)),
    "bnb.AdamW8bit": ("bitsandbytes", bnb_factory("AdamW8bit", **_ADAM)),
    "bnb.AdamW32bit": ("bitsandbytes", bnb_factory("AdamW32bit", **_ADAM)),
    "bnb.PagedAdamW": ("bitsandbytes", bnb_factory("PagedAdamW", **_ADAM)),
    "bnb.PagedAdamW8bit": ("bitsandbytes", bnb_factory("PagedAdamW8bit", **_ADAM)),
    "bnb.PagedAdamW32bit": ("bitsandbytes", bnb_factory("PagedAdamW32bit", **_ADAM)),
    "bnb.Lion": ("bitsandbytes", bnb_factory("Lion", lr=1e-3, weight_decay=1.0)),
    "bnb.Lion8bit": ("bitsandbytes", bnb_factory("Lion8bit", lr=1e-3, weight_decay=1.0)),
    "bnb.AdEMAMix": ("bitsandbytes", bnb_factory("AdEMAMix", **_ADAM)),
    "torchao.AdamW8bit": ("torchao", _torchao("AdamW8bit", **_ADAM)),
    "torchao.AdamW4bit": ("torchao", _torchao("AdamW4bit", **_ADAM)),
    "torchao.AdamWFp8": ("torchao", _torchao("AdamWFp8", **_ADAM)),
    "lion_pytorch.Lion": ("lion_pytorch", _lion(lr=1e-3, weight_decay=1.0)),
}


DECOUPLED_FACTORIES: dict[str, Callable[[list[Parameter]], Optimizer]] = {
    name: make for name, (package, make) in _ALL_DECOUPLED.items() if package is None or _installed(package)
}


def matrix_params() -> list[Parameter]:
    """A 64 x 64 matrix (large enough for the low-bit states) and a small non-square one, seeded."""
    generator = torch.Generator().manual_seed(0)
    return [Parameter(torch.randn(64, 64, generator=generator)), Parameter(torch.randn(3, 5, generator=generator))]


def zero_grad_step(optimizer: Optimizer, params: list[Parameter], steps: int = 1) -> list[torch.Tensor]:
    """Step ``steps`` times with every gradient exactly zero; return the weights as they were before."""
    before = [p.detach().clone() for p in params]
    for _ in range(steps):
        for p in params:
            p.grad = torch.zeros_like(p)
        optimizer.step()
    return before
