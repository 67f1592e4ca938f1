"""The fused statistics pass: sums against float64 closed forms, memory, the cross-rank reduction (FSDP2, FSDP1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from ddp_harness import run_script

from lightning_tau.diagnostics.stats import WeightStatsPass, group_sums, magnitudes, weight_sums


def reference(tensors):
    return torch.tensor(
        [[t.double().abs().sum(), t.double().square().sum(), t.numel()] for t in tensors], dtype=torch.float64
    )


@pytest.mark.parametrize("chunk_numel", [1, 7, 64, 1 << 19])
def test_weight_sums_match_closed_form(chunk_numel):
    g = torch.Generator().manual_seed(0)
    tensors = [torch.randn(shape, generator=g) for shape in [(13, 11), (5,), (1,), (3, 4, 5), (0,)]]
    sums = weight_sums(tensors, chunk_numel=chunk_numel)
    assert sums.dtype == torch.float64 and sums.shape == (5, 3)
    torch.testing.assert_close(sums, reference(tensors), rtol=1e-6, atol=0)


def test_weight_sums_low_precision_and_float64():
    g = torch.Generator().manual_seed(1)
    tensors = [torch.randn(100, generator=g).bfloat16(), torch.randn(50, generator=g).double()]
    torch.testing.assert_close(weight_sums(tensors, chunk_numel=16), reference(tensors), rtol=1e-6, atol=0)


def test_weight_sums_rejects_integer_tensors():
    with pytest.raises(ValueError, match="needs floating-point tensors, got tensor 0 of dtype torch.int64"):
        weight_sums([torch.ones(3, dtype=torch.long)])


def test_group_sums_and_magnitudes():
    sums = weight_sums([torch.full((4,), -2.0), torch.tensor([3.0, 4.0]), torch.ones(2)])
    table = group_sums(sums, [0, 1, 0], num_groups=2)
    assert table.tolist() == [[10.0, 18.0, 6.0], [7.0, 25.0, 2.0]]
    assert magnitudes(table[1].tolist()) == (3.5, pytest.approx((25 / 2) ** 0.5))
    assert all(x != x for x in magnitudes([0.0, 0.0, 0.0]))  # NaN for an empty group


def test_pass_keeps_plan_for_same_tensors_and_remakes_it_for_others():
    """The counts and groupings are made once per list of tensors (no host->device copies on later GPU calls), and a
    different list (other sizes, a dtype, one tensor more) gets its own, so every call's sums are its tensors'."""
    g = torch.Generator().manual_seed(2)
    first = [torch.randn(10, generator=g), torch.randn(3, 4, generator=g)]
    stats_pass = WeightStatsPass(chunk_numel=5)
    torch.testing.assert_close(stats_pass(first), reference(first), rtol=1e-6, atol=0)
    plan = stats_pass._plan
    first[0].mul_(2)  # new values in the same tensors: the plan stays, the sums follow the values
    torch.testing.assert_close(stats_pass(first), reference(first), rtol=1e-6, atol=0)
    assert stats_pass._plan is plan
    for other in (
        [torch.randn(7, generator=g), torch.randn(2, 2, generator=g)],
        [first[0].double(), first[1]],
        [*first, torch.randn(4, generator=g)],
        [first[1], first[0]],
    ):
        torch.testing.assert_close(stats_pass(other), reference(other), rtol=1e-6, atol=0)
        assert stats_pass._plan is not plan


def test_pass_allocates_nothing_parameter_sized():
    """Total bytes the pass allocates (profiler) stay at its chunk buffer plus small tables, not the params."""
    params = [torch.randn(1 << 18), torch.randn(512, 512), torch.randn(1000)]  # 2 MiB, 1 MiB, 4 KB
    stats_pass = WeightStatsPass(chunk_numel=1 << 12)  # 16 KiB buffer
    stats_pass(params)  # allocate the buffer once
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        stats_pass(params)
    allocated = sum(max(e.cpu_memory_usage, 0) for e in prof.events() if e.cpu_parent is None)
    assert allocated < 64 * 1024, allocated  # the largest parameter is 2 MiB
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        [p.abs().mean() for p in params]  # the naive way, for contrast
    naive = sum(max(e.cpu_memory_usage, 0) for e in prof.events() if e.cpu_parent is None)
    assert naive >= 4 * (1 << 18)


SHARDED_SCRIPT = """
import json, os, sys, torch, torch.distributed as dist
from ddp_harness import end_process_group
from lightning_tau.diagnostics.stats import all_reduce_sums, group_sums, weight_sums

def full_tensors():
    g = torch.Generator().manual_seed(0)
    return [torch.randn(7, 5, generator=g), torch.randn(3, generator=g), torch.randn(1, generator=g)]

def run(rank, init_file, out_file):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=2)
    result = {}
    # 1. each rank holds a row shard of every tensor (uneven: 4 + 3 rows, 2 + 1, 1 + 0 elements)
    shards = [t.tensor_split(2)[rank].contiguous() for t in full_tensors()]
    sums = all_reduce_sums(weight_sums(shards, chunk_numel=3))
    result["manual"] = sums.tolist()
    result["manual_groups"] = group_sums(sums, [0, 0, 1], 2).tolist()
    # 2. FSDP2 fully_shard on CPU: the optimizer sees DTensors; the pass reads their local shards
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Linear(7, 3))
    fully_shard(model, mesh=init_device_mesh("cpu", (2,)))
    params = list(model.parameters())
    result["fsdp_types"] = [type(p).__name__ for p in params]
    result["fsdp_local_numel"] = [p.to_local().numel() for p in params]
    result["fsdp"] = all_reduce_sums(weight_sums(params)).tolist()
    full = [p.full_tensor().detach().double() for p in params]
    result["fsdp_reference"] = [[f.abs().sum().item(), f.square().sum().item(), f.numel()] for f in full]
    # 3. FSDP1 with use_orig_params=False: the optimizer steps padded FlatParameter shards. The inner unit holds
    #    6 * 3 + 3 = 21 elements, split 11 + 10 and padded to 11 + 11; the root unit 3 + 1 = 4, split 2 + 2.
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from lightning_tau.diagnostics.metrics import timescale_metrics
    torch.manual_seed(0)
    cpu = torch.device("cpu")  # FSDP1 runs on CPU (gloo) when told the device
    model = torch.nn.Sequential(torch.nn.Linear(6, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    model[0] = FSDP(model[0], use_orig_params=False, device_id=cpu)
    model = FSDP(model, use_orig_params=False, device_id=cpu)
    opt = torch.optim.AdamW(model.parameters(), lr=0.1, weight_decay=0.5)
    g = torch.Generator().manual_seed(1)
    for _ in range(2):  # real steps: the padding must stay out of the count after training too
        model(torch.randn(8, 6, generator=g)).square().mean().backward()
        opt.step()
        opt.zero_grad()
    params = opt.param_groups[0]["params"]
    result["fsdp1_local_numel"] = [p.numel() for p in params]
    result["fsdp1"] = all_reduce_sums(weight_sums(params)).tolist()
    metrics = timescale_metrics(opt, sharded=True)
    result["fsdp1_metrics"] = [metrics["timescale/weight_mean_abs/pg1"], metrics["timescale/weight_rms/pg1"]]
    with FSDP.summon_full_params(model):
        flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).double()
    result["fsdp1_reference"] = [flat.abs().mean().item(), flat.square().mean().sqrt().item(), flat.numel()]
    if rank == 0:
        with open(out_file, "w") as f:
            json.dump(result, f)
    end_process_group()

if __name__ == "__main__":
    run(int(os.environ["RANK"]), sys.argv[1], sys.argv[2])  # the harness starts one process per rank
"""


@pytest.fixture(scope="module")
def sharded_result(tmp_path_factory):
    """Rank zero's figures from one 2-process gloo run of SHARDED_SCRIPT (shared by the tests below)."""
    tmp_path = tmp_path_factory.mktemp("sharded")
    out = tmp_path / "result.json"
    run_script(SHARDED_SCRIPT, tmp_path, str(tmp_path / "init"), str(out))
    return json.loads(out.read_text())


@pytest.mark.slow
def test_sharded_sums_reduce_to_whole_tensor(sharded_result):
    result = sharded_result
    g = torch.Generator().manual_seed(0)
    full = [torch.randn(7, 5, generator=g), torch.randn(3, generator=g), torch.randn(1, generator=g)]
    expected = reference(full)
    torch.testing.assert_close(torch.tensor(result["manual"], dtype=torch.float64), expected, rtol=1e-6, atol=0)
    torch.testing.assert_close(
        torch.tensor(result["manual_groups"], dtype=torch.float64),
        torch.stack([expected[:2].sum(0), expected[2]]),
        rtol=1e-6,
        atol=0,
    )
    assert result["fsdp_types"] == ["DTensor"] * 4
    # rank 0 holds rows 0-3 of the 7x5 weight, 4 of the 7 biases, rows 0-1 of the 3x7 weight, 2 of the 3 biases
    assert result["fsdp_local_numel"] == [20, 4, 14, 2]
    torch.testing.assert_close(
        torch.tensor(result["fsdp"], dtype=torch.float64),
        torch.tensor(result["fsdp_reference"], dtype=torch.float64),
        rtol=1e-6,
        atol=0,
    )


@pytest.mark.slow
def test_fsdp1_flat_parameters_count_real_elements_only(sharded_result):
    result = sharded_result
    assert result["fsdp1_local_numel"] == [2, 11]  # rank 0's shards: the root unit's, then the padded inner one
    assert [row[2] for row in result["fsdp1"]] == [4, 21]  # all-reduced counts: the unsharded model's, no padding
    mean_abs, rms, numel = result["fsdp1_reference"]
    assert numel == 25
    assert result["fsdp1_metrics"] == pytest.approx([mean_abs, rms], rel=1e-6)


@pytest.mark.parametrize(
    "statement",
    [
        "import lightning_tau.diagnostics.stats",
        "import lightning_tau.diagnostics.metrics",
        "from lightning_tau.diagnostics import TimescaleTracker, WeightStatsPass, timescale_metrics",
    ],
)
def test_torch_only_modules_load_no_lightning(statement):
    """The modules documented as torch-only (a plain PyTorch or Fabric loop) do not load Lightning through the
    package's ``__init__``."""
    loaded = "sorted(m for m in ('lightning', 'pytorch_lightning') if m in sys.modules)"
    code = f"import sys\n{statement}\nprint('LOADED', {loaded})"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "LOADED []" in done.stdout
