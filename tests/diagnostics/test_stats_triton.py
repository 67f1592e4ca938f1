"""``lightning_tau.diagnostics._stats_triton``: the CUDA pass's block table, built on the host (the kernel itself runs
only on a CUDA machine: ``benchmarks/gpu_figures.sh`` checks its sums against float64 there)."""

from __future__ import annotations

import torch

from lightning_tau.diagnostics import _stats_triton
from lightning_tau.diagnostics._stats_triton import BLOCK, ITERS, BlockTable, supported, table_key


def test_every_element_belongs_to_exactly_one_block_of_own_tensor() -> None:
    per_block = BLOCK * ITERS
    tensors = [torch.zeros(3), torch.zeros(per_block), torch.zeros(per_block + 1), torch.zeros(2 * per_block, 2)]
    table = BlockTable(tensors)
    owners, starts = table.tensor_of_block.tolist(), table.start_of_block.tolist()
    assert list(zip(owners, starts)) == [
        (0, 0),
        (1, 0),
        (2, 0),
        (2, per_block),
        (3, 0),
        (3, per_block),
        (3, 2 * per_block),
        (3, 3 * per_block),
    ]
    assert table.numels.tolist() == [3, per_block, per_block + 1, 4 * per_block]
    assert table.addresses.tolist() == [t.data_ptr() for t in tensors]
    assert table.partial.shape == (8, 2) and table.count == 4
    assert table.key == table_key(tensors) != table_key(tensors[:3])


def test_cpu_tensors_not_kernels_and_pass_knows_whether_triton_imported() -> None:
    assert not supported([torch.zeros(3)])
    assert not supported([])
    assert _stats_triton.AVAILABLE == (_stats_triton.triton is not None)
