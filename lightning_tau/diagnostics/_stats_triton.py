"""One multi-tensor Triton kernel that reads every parameter once for ``sum |w|`` and ``sum w**2`` (CUDA only).

More: docs/diagnostics.rst, module notes.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

try:  # Triton ships with PyTorch's CUDA builds; a CPU-only install has none
    import triton
    import triton.language as tl
except ImportError:
    triton = tl = None

#: Whether Triton imported, so that the kernel exists.
AVAILABLE = triton is not None
#: Elements one block reads per loop iteration, and the iterations per block (16K elements per block).
BLOCK = 1024
ITERS = 16
#: The dtypes the kernel reads (it sums in float32).
DTYPES = (torch.float32, torch.float16, torch.bfloat16)

if AVAILABLE:
    _TRITON_DTYPES = {torch.float32: tl.float32, torch.float16: tl.float16, torch.bfloat16: tl.bfloat16}

    @triton.jit
    def _sums_kernel(addresses, numels, tensor_of_block, start_of_block, out, DTYPE: tl.constexpr,
                     BLOCK: tl.constexpr, ITERS: tl.constexpr):  # fmt: skip
        block = tl.program_id(0)
        tensor = tl.load(tensor_of_block + block)
        start = tl.load(start_of_block + block)
        numel = tl.load(numels + tensor)
        base = tl.load(addresses + tensor).to(tl.pointer_type(DTYPE))
        abs_sum = tl.zeros([BLOCK], dtype=tl.float32)
        square_sum = tl.zeros([BLOCK], dtype=tl.float32)
        for i in range(ITERS):
            offsets = start + i * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(base + offsets, mask=offsets < numel, other=0.0).to(tl.float32)
            abs_sum += tl.abs(x)
            square_sum += x * x
        tl.store(out + 2 * block, tl.sum(abs_sum, axis=0))
        tl.store(out + 2 * block + 1, tl.sum(square_sum, axis=0))


def supported(tensors: Sequence[Tensor]) -> bool:
    """Whether the kernel takes ``tensors``: contiguous, on one CUDA device, of one float32/float16/bfloat16 dtype.

    Example:
        >>> supported([torch.zeros(3)])  # a CPU tensor
        False
    """
    return (
        AVAILABLE
        and len(tensors) > 0
        and all(t.is_cuda and t.is_contiguous() for t in tensors)
        and len({t.dtype for t in tensors}) == 1
        and tensors[0].dtype in DTYPES
        and len({t.device for t in tensors}) == 1
    )


class BlockTable:
    """The kernel's block table for one list of tensors, on their device; rebuilt when the tensors change."""

    def __init__(self, tensors: Sequence[Tensor]) -> None:
        self.key = table_key(tensors)
        per_block = BLOCK * ITERS
        owners: list[int] = []
        starts: list[int] = []
        for k, t in enumerate(tensors):
            for start in range(0, t.numel(), per_block):
                owners.append(k)
                starts.append(start)
        device = tensors[0].device
        self.addresses = torch.tensor([t.data_ptr() for t in tensors], dtype=torch.int64, device=device)
        self.numels = torch.tensor([t.numel() for t in tensors], dtype=torch.int64, device=device)
        self.tensor_of_block = torch.tensor(owners, dtype=torch.int32, device=device)
        self.start_of_block = torch.tensor(starts, dtype=torch.int64, device=device)
        self.owner_index = self.tensor_of_block.long()
        self.partial = torch.empty(len(owners), 2, dtype=torch.float32, device=device)
        self.count = len(tensors)


def table_key(tensors: Sequence[Tensor]) -> tuple:
    """What the table depends on: each tensor's address, size and dtype."""
    return tuple((t.data_ptr(), t.numel(), t.dtype) for t in tensors)


def sums(tensors: Sequence[Tensor], table: BlockTable) -> Tensor:
    """``(len(tensors), 2)`` float64 ``[sum |w|, sum w**2]`` on the tensors' device, in one launch; no host sync."""
    if table.partial.shape[0] == 0:
        return torch.zeros(table.count, 2, dtype=torch.float64, device=tensors[0].device)
    _sums_kernel[(table.partial.shape[0],)](
        table.addresses, table.numels, table.tensor_of_block, table.start_of_block, table.partial,
        DTYPE=_TRITON_DTYPES[tensors[0].dtype], BLOCK=BLOCK, ITERS=ITERS,
    )  # fmt: skip
    out = torch.zeros(table.count, 2, dtype=torch.float64, device=tensors[0].device)
    return out.index_add_(0, table.owner_index, table.partial.double())
