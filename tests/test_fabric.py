"""Loops beyond the Trainer: ``timescale_metrics`` / ``TimescaleTracker`` against closed forms, real Fabric, and
``examples/fabric_gpt.py`` as a real 2-process DDP run on CPU (gloo)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import lightning as L
import pytest
import torch
from ddp_harness import DDP_TIMEOUT
from examples import run_example
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from lightning_tau import apply_timescale
from lightning_tau.couplings import window_direct
from lightning_tau.diagnostics import TimescaleTracker, WeightStatsPass, timescale_metrics

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "fabric_gpt.py"


def two_group_optimizer(lr: float = 0.1, weight_decay: float = 0.5) -> tuple[torch.optim.AdamW, torch.Tensor]:
    """A decaying 2x3 matrix of known values (mean |w| 2, RMS sqrt(14/3)) and a non-decaying bias of ones."""
    weight = torch.nn.Parameter(torch.tensor([[1.0, -2.0, 3.0], [-1.0, 2.0, -3.0]]))
    bias = torch.nn.Parameter(torch.ones(4))
    opt = torch.optim.AdamW(
        [
            {"params": [weight], "name": "decay", "width_mult": 2.0},
            {"params": [bias], "name": "no_decay", "weight_decay": 0.0},
        ],
        lr=lr,
        weight_decay=weight_decay,
    )
    return opt, weight


def zero_grad_step(opt: torch.optim.Optimizer) -> None:
    """An optimizer step with all gradients zero: AdamW's update is 0, so only the decay acts."""
    for group in opt.param_groups:
        for p in group["params"]:
            p.grad = torch.zeros_like(p)
    opt.step()


def test_timescale_metrics_match_closed_forms() -> None:
    opt, _ = two_group_optimizer(lr=0.1, weight_decay=0.5)
    m = timescale_metrics(opt, steps_per_epoch=4.0, tau_iter_target=25.0, tau_epoch_target=6.25, prefix="ts")
    d = {k.split("/")[1]: v for k, v in m.items() if k.endswith("/decay")}
    rms = math.sqrt(28 / 6)
    assert d["lr"] == 0.1 and d["weight_decay"] == 0.5 and d["width_mult"] == 2.0
    assert d["tau_iter"] == pytest.approx(1 / (0.1 * 0.5))
    assert d["tau_epoch"] == pytest.approx(20.0 / 4.0)
    assert (d["tau_iter_target"], d["tau_epoch_target"]) == (25.0, 6.25)
    assert d["weight_mean_abs"] == pytest.approx(2.0) and d["weight_rms"] == pytest.approx(rms)
    assert d["coherent_bound"] == pytest.approx(2.0) and d["wd_mean_abs"] == pytest.approx(1.0)
    assert d["rms_equilibrium"] == pytest.approx(math.sqrt(0.1 / (2 * 0.5)))
    assert d["rms_ratio"] == pytest.approx(rms / math.sqrt(0.1))
    assert "init_memory" not in d and "timescales_elapsed" not in d  # they need a tracker
    no_decay = sorted(k for k in m if k.endswith("/no_decay"))
    assert no_decay == [
        "ts/lr/no_decay",
        "ts/weight_decay/no_decay",
        "ts/weight_mean_abs/no_decay",
        "ts/weight_rms/no_decay",
    ]
    assert m["ts/weight_rms/no_decay"] == pytest.approx(1.0)


def test_timescale_metrics_names_several_optimizers_and_drops_band_for_muon() -> None:
    net = torch.nn.Linear(4, 4)
    muon = torch.optim.Muon([net.weight], lr=0.02, weight_decay=0.1)
    adamw = torch.optim.AdamW([net.bias], lr=1e-3, weight_decay=0.1)
    m = timescale_metrics([muon, adamw], stats_pass=WeightStatsPass(chunk_numel=3))
    assert m["timescale/tau_iter/optimizer0/pg1"] == pytest.approx(1 / (0.02 * 0.1))
    assert m["timescale/tau_iter/optimizer1/pg1"] == pytest.approx(1 / (1e-3 * 0.1))
    # Muon's update RMS is not ~1: no equilibrium prediction; AdamW keeps it
    assert "timescale/rms_equilibrium/optimizer0/pg1" not in m
    assert m["timescale/rms_equilibrium/optimizer1/pg1"] == pytest.approx(math.sqrt(1e-3 / 0.2))
    expected_mean_abs = net.weight.detach().abs().mean().item()
    assert m["timescale/weight_mean_abs/optimizer0/pg1"] == pytest.approx(expected_mean_abs, rel=1e-6)


def test_tracker_folds_scheduled_lr_and_metrics_use_step_values() -> None:
    opt, weight = two_group_optimizer(lr=0.1, weight_decay=0.5)
    before = weight.detach().clone()
    scheduler = torch.optim.lr_scheduler.LinearLR(opt, start_factor=1.0, end_factor=0.2, total_iters=5)
    tracker = TimescaleTracker(opt)
    lrs = []
    for _ in range(4):
        lrs.append(opt.param_groups[0]["lr"])
        zero_grad_step(opt)
        scheduler.step()
    memory = math.prod(1 - lr * 0.5 for lr in lrs)  # prod_t (1 - lr_t wd)
    assert tracker.steps == 4
    assert tracker.init_memory == {"decay": pytest.approx(memory), "no_decay": 1.0}
    assert tracker.timescales_elapsed == {"decay": pytest.approx(0.5 * sum(lrs)), "no_decay": 0.0}
    # the weights really shrank by the folded product (a zero-gradient AdamW step only decays)
    torch.testing.assert_close(weight.detach(), before * memory)
    m = timescale_metrics(opt, tracker=tracker)
    assert m["timescale/init_memory/decay"] == pytest.approx(memory)
    assert m["timescale/weight_mean_abs/decay"] == pytest.approx(2.0 * memory)
    # lr as the last step used it, not the lr the scheduler has moved on to since
    assert m["timescale/lr/decay"] == pytest.approx(lrs[-1])
    assert opt.param_groups[0]["lr"] != pytest.approx(lrs[-1])
    assert "timescale/init_memory/no_decay" not in m
    # the window: the mean age of the four updates, each weighted by its lr and the decay after it
    window = window_direct(lrs, [lr * 0.5 for lr in lrs])
    assert tracker.window_steps["decay"] == pytest.approx(window)
    assert "timescale/window_epochs/decay" not in m  # no steps per epoch given: no epochs
    in_epochs = timescale_metrics(opt, tracker=tracker, steps_per_epoch=2)
    assert in_epochs["timescale/window_epochs/decay"] == pytest.approx(window / 2)
    tracker.remove()
    zero_grad_step(opt)
    assert tracker.steps == 4


def test_tracker_state_dict_continues_products() -> None:
    opt, _ = two_group_optimizer(lr=0.1, weight_decay=0.5)
    tracker = TimescaleTracker(opt)
    for _ in range(3):
        zero_grad_step(opt)
    state = json.loads(json.dumps(tracker.state_dict()))  # plain numbers: survives any checkpoint format
    tracker.remove()
    resumed = TimescaleTracker(opt)
    resumed.load_state_dict(state)
    zero_grad_step(opt)
    assert resumed.steps == 4
    assert resumed.init_memory["decay"] == pytest.approx(0.95**4)
    assert resumed.timescales_elapsed["decay"] == pytest.approx(4 * 0.05)
    assert resumed.window_steps["decay"] == pytest.approx(window_direct([0.1] * 4, [0.05] * 4))  # the window goes on
    fresh = TimescaleTracker(opt)
    fresh.load_state_dict({})  # tolerant: missing keys start afresh
    assert fresh.init_memory["decay"] == 1.0 and fresh.steps == 0


def test_per_step_apply_timescale_holds_tau_iter_in_logged_metrics() -> None:
    opt, _ = two_group_optimizer(lr=0.1, weight_decay=0.5)
    scheduler = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0 / (1 + step))
    applied = apply_timescale(opt, tau_epoch=5.0, dataset_size=1000, batch_size=100, mode="per_step")
    tracker = TimescaleTracker(opt)  # after apply_timescale: its post-hook sees the decay the pre-hook wrote
    for _ in range(3):
        zero_grad_step(opt)
        scheduler.step()
    m = timescale_metrics(opt, tracker=tracker, steps_per_epoch=applied.shape.steps_per_epoch)
    assert applied.tau_iter == 50.0
    assert m["timescale/lr/decay"] == pytest.approx(0.1 / 3)
    assert m["timescale/tau_iter/decay"] == pytest.approx(50.0)
    assert m["timescale/tau_epoch/decay"] == pytest.approx(5.0)
    assert tracker.timescales_elapsed["decay"] == pytest.approx(3 / 50)
    applied.remove()
    tracker.remove()


def test_timescale_metrics_through_real_fabric_optimizer() -> None:
    fabric = L.Fabric(accelerator="cpu", devices=1)
    net = torch.nn.Linear(4, 2)
    model = fabric.setup(net)
    optimizer = fabric.setup_optimizers(torch.optim.AdamW(net.parameters(), lr=0.01, weight_decay=0.1))
    applied = apply_timescale(optimizer, tau_iter=20.0)
    tracker = TimescaleTracker(optimizer)
    for _ in range(2):
        fabric.backward(model(torch.randn(8, 4)).square().mean())
        optimizer.step()
        optimizer.zero_grad()
    assert applied.weight_decay == {"pg1": pytest.approx(5.0)}
    m = timescale_metrics(optimizer, tracker=tracker)
    assert m["timescale/tau_iter/pg1"] == pytest.approx(20.0)
    assert m["timescale/init_memory/pg1"] == pytest.approx((1 - 1 / 20) ** 2)
    assert timescale_metrics(optimizer.optimizer, tracker=tracker) == m  # the wrapper and the inner one agree


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"prefix": "ts/"}, r"`timescale_metrics\(prefix='ts/'\)` is not valid"),
        ({"steps_per_epoch": 0}, r"`timescale_metrics\(steps_per_epoch=0\)` is not valid: use a positive number"),
        ({"tau_iter_target": float("nan")}, r"`timescale_metrics\(tau_iter_target=nan\)` is not valid"),
        ({"tracker": "t"}, r"`timescale_metrics\(tracker='t'\)` is not valid: use a `TimescaleTracker`"),
        ({"stats_pass": 3}, r"`timescale_metrics\(stats_pass=3\)` is not valid"),
        ({"sharded": 1}, r"`timescale_metrics\(sharded=1\)` is not valid"),
    ],
)
def test_timescale_metrics_rejects_bad_arguments(kwargs: dict, match: str) -> None:
    opt, _ = two_group_optimizer()
    with pytest.raises(ValueError, match=match):
        timescale_metrics(opt, **kwargs)


def test_timescale_metrics_rejects_tracker_of_other_optimizers_and_non_optimizers() -> None:
    opt, _ = two_group_optimizer()
    other, _ = two_group_optimizer()
    with pytest.raises(ValueError, match=r"does not track optimizer 0 \(AdamW\).*TimescaleTracker\(\[optimizer"):
        timescale_metrics(opt, tracker=TimescaleTracker(other))
    with pytest.raises(ValueError, match=r"`timescale_metrics`: optimizers\[1\] is str, not a `torch.optim.Optimizer`"):
        timescale_metrics([opt, "adamw"])
    with pytest.raises(ValueError, match=r"`TimescaleTracker\(optimizers=\[\]\)` is not valid"):
        TimescaleTracker([])


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["constant", "per_step"])
def test_gpt_example_as_two_process_ddp(tmp_path: Path, mode: str) -> None:
    args = ["--fast", "--devices", "2", "--strategy", "ddp", "--accelerator", "cpu", "--mode", mode, "--dump", "dump"]
    out = run_example(EXAMPLE.name, tmp_path, *args, timeout=DDP_TIMEOUT)
    ranks = [json.loads((tmp_path / "dump" / f"rank{r}.json").read_text()) for r in (0, 1)]

    # --fast: 40,000 training bytes in whole batches of 8 windows of 32 tokens (the data module's dataset_size);
    # B = 8 sequences x 32 tokens x 2 processes x 2 micro-batches
    n_tokens, b_tokens = (40_000 - 1) // 32 // 8 * 8 * 32, 8 * 32 * 2 * 2
    tau_iter = 0.4 * n_tokens / b_tokens
    for record in ranks:
        assert record["world_size"] == 2 and record["mode"] == mode
        assert (record["dataset_size"], record["batch_size"]) == (n_tokens, b_tokens)
        assert record["tau_iter"] == pytest.approx(tau_iter)
        assert record["decays"] == ["decay"]
        assert record["written"]["no_decay"] == 0.0
        closed = b_tokens / (record["reference_lr"]["decay"] * n_tokens * 0.4)  # B / (lr N tau_epoch)
        assert record["written"]["decay"] == pytest.approx(closed, rel=1e-12)
        assert record["reference_lr"]["decay"] == 3e-3  # the peak (`initial_lr`), not the warm-up's first lr
        assert len(record["used"]) == 30  # one entry per optimizer step
    assert ranks[0]["written"] == ranks[1]["written"]
    assert ranks[0]["used"] == ranks[1]["used"]

    # the weight decay every optimizer step used
    lrs = [step["decay"][0] for step in ranks[0]["used"]]
    assert min(lrs) < 0.5 * max(lrs)  # the schedule really moved the lr
    for step in ranks[0]["used"]:
        lr, wd = step["decay"]
        assert step["no_decay"][1] == 0.0
        if mode == "constant":
            assert wd == ranks[0]["written"]["decay"]
        else:
            assert lr * wd == pytest.approx(1 / tau_iter, rel=1e-12)

    # one line from every rank; the table from rank zero only
    assert f"rank 0/2: weight_decay written: decay={ranks[0]['written']['decay']:.6g}" in out
    assert f"rank 1/2: weight_decay written: decay={ranks[1]['written']['decay']:.6g}" in out
    assert out.count("B/(lr*N*tau_epoch)") == 1, out

    # the logged metrics, read back from rank zero's TensorBoard event file
    events = EventAccumulator(str(tmp_path / ranks[0]["log_dir"]))
    events.Reload()
    logged = events.Scalars("timescale/tau_iter/decay")
    assert [e.step for e in logged] == [5, 10, 15, 20, 25, 30]
    for event in logged:
        lr, wd = ranks[0]["used"][event.step - 1]["decay"]
        assert event.value == pytest.approx(1 / (lr * wd), rel=1e-6)  # float32 in the event file
        if mode == "per_step":
            assert event.value == pytest.approx(tau_iter, rel=1e-6)
    tags = set(events.Tags()["scalars"])
    assert {"timescale/tau_epoch/decay", "timescale/init_memory/decay", "timescale/weight_rms/no_decay"} <= tags
    assert "timescale/tau_iter/no_decay" not in tags

    losses = ranks[0]["losses"]
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5 - 0.5
