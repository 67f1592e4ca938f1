"""One fused pass over parameters for weight-magnitude statistics, returned as sums so they can be all-reduced.

More: docs/diagnostics.rst, module notes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

from lightning_tau import _checks

__all__ = [
    "COUNT",
    "DEFAULT_CHUNK_NUMEL",
    "SUM_ABS",
    "SUM_SQUARES",
    "WeightStatsPass",
    "all_reduce_sums",
    "group_sums",
    "local_tensor",
    "magnitudes",
    "real_numel",
    "weight_sums",
]

#: Column of :func:`weight_sums`'s result holding ``sum |w|``.
SUM_ABS = 0
#: Column holding ``sum w**2``.
SUM_SQUARES = 1
#: Column holding the number of elements.
COUNT = 2

#: Elements per chunk on CPU: a 1 MiB float32 scratch buffer, half a core's L2 cache here (64K-1M elements measured,
#: 256K and 512K fastest on the 2-core Xeon of 2026-11-28; 1M fell out of cache: 1.19x the fused L2 read).
DEFAULT_CHUNK_NUMEL = 1 << 18


class WeightStatsPass:
    """A reusable statistics pass that keeps its small scratch buffers and its plan between calls.

    Args:
        chunk_numel: elements per chunk on CPU (the scratch buffer's size). Larger chunks mean fewer kernel
            launches; smaller ones keep the buffer in a smaller cache.

    Example:
        >>> stats_pass = WeightStatsPass()
        >>> stats_pass([torch.tensor([3.0, -4.0]), torch.tensor([[1.0, -1.0]])])
        tensor([[ 7., 25.,  2.],
                [ 2.,  2.,  2.]], dtype=torch.float64)
    """

    def __init__(self, chunk_numel: int = DEFAULT_CHUNK_NUMEL) -> None:
        self.chunk_numel = _checks.positive_int("WeightStatsPass", "chunk_numel", chunk_numel, "use a positive int.")
        self._buffers: dict[torch.dtype, Tensor] = {}
        self._plan: _Plan | None = None

    @torch.no_grad()
    def __call__(self, tensors: Sequence[Tensor]) -> Tensor:
        """Per-tensor ``[sum |w|, sum w**2, numel]`` as a ``(len(tensors), 3)`` float64 tensor; no host sync.

        DTensors (FSDP2) contribute their local shard (see :func:`local_tensor`), FSDP1's padded ``FlatParameter``
        shards their real elements only (see :func:`real_numel`). The result lives on the first tensor's device
        (CPU when ``tensors`` is empty). What moves between the host and the device (the element counts, the
        tensors' grouping, the CUDA kernel's block table) is made once per list of tensors and kept, so on a GPU
        later calls only launch kernels.
        """
        local = [local_tensor(t) for t in tensors]
        device = local[0].device if local else torch.device("cpu")
        key = tuple((t.data_ptr(), t.numel(), t.dtype, t.device, real_numel(t)) for t in local)
        if self._plan is None or self._plan.key != key:
            self._plan = _Plan(key, local, device)
        plan = self._plan
        out = torch.zeros(len(local), 3, dtype=torch.float64, device=device)
        out[:, COUNT] = plan.counts
        for (dev, dtype), rows in plan.buckets.items():
            members = [local[k] for k in rows]
            if dev.type == "cpu":
                partial = self._cpu_sums(members, dtype)
            elif plan.triton_tables.get((dev, dtype)) is not None:
                partial = _stats_triton().sums(members, plan.triton_tables[(dev, dtype)])
            else:
                acc = torch.float64 if dtype == torch.float64 else torch.float32
                l1 = torch.stack(torch._foreach_norm(members, 1, dtype=acc))
                l2 = torch.stack(torch._foreach_norm(members, 2, dtype=acc))
                partial = torch.stack([l1.double(), l2.double().square()], dim=1)
            out[:, :2].index_add_(0, plan.indices[(dev, dtype)], partial.to(device))
        return out

    def _cpu_sums(self, tensors: list[Tensor], dtype: torch.dtype) -> Tensor:
        """``(len(tensors), 2)`` float64 sums, reading each tensor once in cache-sized chunks."""
        chunk = self.chunk_numel
        acc_dtype = torch.float64 if dtype == torch.float64 else torch.float32
        buffer = self._buffers.get(acc_dtype)
        if buffer is None:
            buffer = self._buffers[acc_dtype] = torch.empty(chunk, dtype=acc_dtype)
        abs_sums: list[Tensor] = []
        square_sums: list[Tensor] = []
        owner: list[int] = []
        for k, t in enumerate(tensors):
            flat = t.reshape(-1)  # a view for the contiguous tensors parameters are
            for start in range(0, flat.numel(), chunk):
                piece = flat[start : start + chunk]
                scratch = buffer[: piece.numel()]
                if piece.dtype == acc_dtype:
                    torch.abs(piece, out=scratch)
                else:  # bf16 / fp16: widen while copying, then abs in place
                    scratch.copy_(piece).abs_()
                abs_sums.append(scratch.sum())
                square_sums.append(torch.dot(scratch, scratch))
                owner.append(k)
        partial = torch.stack([torch.stack(abs_sums), torch.stack(square_sums)], dim=1).double()
        sums = torch.zeros(len(tensors), 2, dtype=torch.float64)
        return sums.index_add_(0, torch.tensor(owner), partial)


class _Plan:
    """What one list of tensors needs on its device, made once: counts, buckets by (device, dtype), their indices."""

    def __init__(self, key: tuple, local: list[Tensor], device: torch.device) -> None:
        self.key = key
        self.counts = torch.tensor([float(real_numel(t)) for t in local], dtype=torch.float64).to(device)
        self.buckets: dict[tuple[torch.device, torch.dtype], list[int]] = {}
        for k, t in enumerate(local):
            if t.numel() == 0:
                continue
            if not t.is_floating_point():
                raise ValueError(f"`WeightStatsPass` needs floating-point tensors, got tensor {k} of dtype {t.dtype}.")
            self.buckets.setdefault((t.device, t.dtype), []).append(k)
        self.indices = {
            bucket: torch.tensor(rows, dtype=torch.long).to(device) for bucket, rows in self.buckets.items()
        }
        self.triton_tables: dict[tuple[torch.device, torch.dtype], object | None] = {}
        for (dev, dtype), rows in self.buckets.items():
            if dev.type == "cuda":
                triton = _stats_triton()
                members = [local[k] for k in rows]
                usable = triton is not None and triton.supported(members)
                self.triton_tables[(dev, dtype)] = triton.BlockTable(members) if usable else None


def _stats_triton():  # noqa: ANN202 - a module or None
    """:mod:`lightning_tau.diagnostics._stats_triton`, or None where Triton does not import (CPU-only torch)."""
    from lightning_tau.diagnostics import _stats_triton as module

    return module if module.AVAILABLE else None


def weight_sums(tensors: Sequence[Tensor], *, chunk_numel: int = DEFAULT_CHUNK_NUMEL) -> Tensor:
    """Per-tensor ``[sum |w|, sum w**2, numel]`` in one pass; see :class:`WeightStatsPass` to reuse buffers.

    Example:
        >>> weight_sums([torch.tensor([1.0, -2.0, 2.0])])
        tensor([[5., 9., 3.]], dtype=torch.float64)
    """
    return WeightStatsPass(chunk_numel)(tensors)


def local_tensor(tensor: Tensor) -> Tensor:
    """The part of ``tensor`` this rank holds: a DTensor's local shard (FSDP2), else the tensor itself.

    FSDP1 with ``use_orig_params=True`` already hands the optimizer views of the local shard, so those pass through.
    """
    to_local = getattr(tensor, "to_local", None)
    if to_local is not None and type(tensor).__name__ == "DTensor":
        return to_local()
    return tensor


def real_numel(tensor: Tensor) -> int:
    """The elements of ``tensor`` that belong to parameters, padding left out.

    FSDP1 with ``use_orig_params=False`` hands the optimizer ``FlatParameter`` shards padded with zeros to an equal
    size on every rank; only the elements its shard metadata (``_shard_param_infos``) places in a parameter are
    counted, so the counts all-reduced over the ranks add up to the unsharded model's. The zero padding adds nothing
    to the sums. Any other tensor counts all its elements (a DTensor's local shard holds no padding).

    Example:
        >>> real_numel(torch.zeros(3, 4))
        12
    """
    infos = getattr(tensor, "_shard_param_infos", None)
    if infos is None or not getattr(tensor, "_is_flat_param", False):
        return tensor.numel()
    sharded = getattr(tensor, "_sharded_size", None)
    if sharded is not None and tensor.numel() == sharded.numel():  # the local shard, as between steps
        return sum(info.numel_in_shard for info in infos if info.in_shard)
    numels = getattr(tensor, "_numels", None)  # unsharded (inside forward or `summon_full_params`): every parameter
    return tensor.numel() if numels is None else sum(numels)


def all_reduce_sums(sums: Tensor, group: object | None = None) -> Tensor:
    """Sum ``sums`` over the ranks of ``group`` (in place) so sharded tensors' figures cover the whole tensor.

    Every element must live on exactly one rank of ``group`` (FSDP's shards). One collective for the whole
    table; a no-op when ``torch.distributed`` is not initialized.
    """
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.all_reduce(sums, op=torch.distributed.ReduceOp.SUM, group=group)
    return sums


def group_sums(sums: Tensor, group_of_tensor: Sequence[int], num_groups: int) -> Tensor:
    """Add per-tensor sums up into ``num_groups`` groups; ``group_of_tensor[k]`` is tensor ``k``'s group.

    Example:
        >>> sums = weight_sums([torch.ones(2), -torch.ones(3), torch.full((1,), 2.0)])
        >>> group_sums(sums, [0, 0, 1], num_groups=2)
        tensor([[5., 5., 5.],
                [2., 4., 1.]], dtype=torch.float64)
    """
    out = torch.zeros(num_groups, sums.shape[1], dtype=sums.dtype, device=sums.device)
    index = torch.tensor(list(group_of_tensor), dtype=torch.long, device=sums.device)
    return out.index_add_(0, index, sums)


def magnitudes(row: Sequence[float]) -> tuple[float, float]:
    """``(mean |w|, RMS)`` from one row ``[sum |w|, sum w**2, numel]`` (NaN for an empty tensor).

    Example:
        >>> magnitudes([5.0, 9.0, 3.0])
        (1.6666666666666667, 1.7320508075688772)
    """
    count = row[COUNT]
    if count <= 0:
        return math.nan, math.nan
    return row[SUM_ABS] / count, math.sqrt(row[SUM_SQUARES] / count)
