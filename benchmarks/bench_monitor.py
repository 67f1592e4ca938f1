"""Benchmarks for TimescaleMonitor, printed side by side in one run.

(a) wall time of a small training run with the monitor / without it (median over repeats, interleaved), and
    of the default callback, ``TimescaleCallback(tau_epoch=...)`` alone (setting the weight decay and whatever it
    logs by default), against a no-op ``pl.Callback()``: median of paired ratios and the cost per step in us;
(b) one statistics pass over a GPT-2-small-shaped parameter set (124M) / one fused L2-norm read of the same
    parameters (``torch._foreach_norm(params, 2)``, the memory-bandwidth floor);
(c) peak extra memory of one statistics pass (CUDA: allocator peak; CPU: bytes allocated by the pass's ops,
    from the profiler, an upper bound on the peak), against the naive per-tensor ``p.abs().mean()``;
(d) CUDA only: host syncs per optimizer step of a fit with the default callback and with a no-op callback, counted by
    ``torch.cuda.set_sync_debug_mode("warn")`` from each batch's start to its end, on logging and other steps, and
    the pass's largest relative error against a float64 reference.

Usage: python benchmarks/bench_monitor.py [--device cpu|cuda] [--repeats 5] [--steps 200] [--log-dir DIR]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
import timeit
import warnings
from pathlib import Path

import lightning.pytorch as pl
import torch
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader, TensorDataset

from lightning_tau import TimescaleCallback
from lightning_tau.diagnostics import TimescaleMonitor, WeightStatsPass

GPT2_SMALL = (
    [(50257, 768), (1024, 768)]
    + [(768,), (768,), (768, 2304), (2304,), (768, 768), (768,), (768,), (768,), (768, 3072), (3072,), (3072, 768),
       (768,)] * 12
    + [(768,), (768,)]
)  # fmt: skip


class SmallMLP(pl.LightningModule):
    def __init__(self, width: int = 256) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(32, width), torch.nn.ReLU(), torch.nn.Linear(width, width), torch.nn.ReLU(),
            torch.nn.Linear(width, 10),
        )  # fmt: skip

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3, weight_decay=0.1)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


#: The arms of (a): the callbacks of each fit.
ARMS = {
    "none": lambda: [],
    "noop": lambda: [pl.Callback()],  # Lightning calls every hook of every callback: the cost of any callback
    "monitor": lambda: [TimescaleMonitor()],
    # the quick start's one line, as shipped (verbose=False only silences the pre-flight table); 0.5 epochs: the
    # one-epoch run covers two timescales, so no "less than one timescale" warning
    "default": lambda: [TimescaleCallback(tau_epoch=0.5, verbose=False)],
}


def train_seconds(arm: str, steps: int, device: torch.device, log_dir: str) -> float:
    """Seconds for one fit of ``steps`` optimizer steps with the callbacks of ``ARMS[arm]``."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(steps * 32, 32, generator=g)
    loader = DataLoader(TensorDataset(x, torch.randint(0, 10, (len(x),), generator=g)), batch_size=32)
    # a fresh log folder per fit: Lightning lists the existing version_N folders when it names a new one, which
    # would make every later fit in a shared folder a little slower than the one before
    run_dir = tempfile.mkdtemp(dir=log_dir)
    trainer = pl.Trainer(
        accelerator=device.type, devices=1, max_epochs=1, logger=CSVLogger(run_dir), enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, callbacks=ARMS[arm](),
    )  # fmt: skip
    model = SmallMLP()
    start = time.perf_counter()
    trainer.fit(model, loader)
    sync(device)
    return time.perf_counter() - start


def bench_overhead(args, device: torch.device) -> None:
    times: dict[str, list[float]] = {arm: [] for arm in ARMS}
    for arm in ARMS:
        train_seconds(arm, 20, device, args.log_dir)  # warm up imports and kernels
    arms = list(ARMS)
    for repeat in range(args.repeats):
        # interleaved, so drifts in machine load hit every arm alike, and rotated, so no arm always runs last
        for arm in arms[repeat % len(arms) :] + arms[: repeat % len(arms)]:
            times[arm].append(train_seconds(arm, args.steps, device, args.log_dir))
    median = {arm: statistics.median(t) for arm, t in times.items()}
    ratio = median["monitor"] / median["none"]
    paired = statistics.median(w / wo for w, wo in zip(times["monitor"], times["none"]))
    print(
        f"(a) training wall time with/without monitor ({args.steps} steps, log every 50, {args.repeats} repeats):"
        f" median {median['monitor']:.3f}s / {median['none']:.3f}s"
        f" = {ratio:.3f} (median of paired ratios {paired:.3f}; goal <= 1.02)"
    )
    print(
        f"    reference: a no-op pl.Callback() / no callback = {median['noop'] / median['none']:.3f};"
        f" monitor / no-op callback = {median['monitor'] / median['noop']:.3f}"
    )
    default_paired = statistics.median(d / n for d, n in zip(times["default"], times["noop"]))
    per_step_us = statistics.median((d - n) / args.steps for d, n in zip(times["default"], times["noop"])) * 1e6
    print(
        f"(a) default callback TimescaleCallback(tau_epoch=0.5) / no-op pl.Callback(): median of paired ratios"
        f" {default_paired:.3f} (goal <= 1.01); {per_step_us:+.1f} us per step (median paired difference over"
        f" {args.steps} steps, fit set-up included); {median['noop'] / args.steps * 1e6:.0f} us per step with"
        " the no-op callback"
    )
    hooks = time_default_hooks(device)
    interval = 50  # the Trainer's default log_every_n_steps, as in the runs above
    amortized = hooks["per_step"] + hooks["logging_step"] / interval
    print(
        f"(a) default callback, its own work timed hook by hook (timeit, the same model): {hooks['per_step']:.2f} us"
        f" per optimizer step (the re-decide check, the monitor's step post-hook, the logging-step check) +"
        f" {hooks['logging_step']:.0f} us per logging step (one read of the weights and the metrics, logger"
        f" excluded) = {amortized:.1f} us per step at log_every_n_steps={interval}:"
        f" {1 + amortized / (median['noop'] / args.steps * 1e6):.4f} x the no-op callback's step"
    )


class _HookTimer(pl.Callback):
    """Times the default ``TimescaleCallback``'s hooks in place, mid-fit, with ``timeit`` (no logger calls)."""

    def __init__(self) -> None:
        self.result: dict[str, float] = {}

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module, outputs, batch, batch_idx: int) -> None:
        if batch_idx != 10 or self.result:
            return
        (callback,) = [c for c in trainer.callbacks if isinstance(c, TimescaleCallback)]
        monitor, optimizer = callback.monitor, trainer.optimizers[0]
        assert monitor is not None
        n = 20_000

        def per_step() -> None:  # what runs every optimizer step that is not a logging step
            callback.on_before_optimizer_step(trainer, pl_module, optimizer)
            monitor._after_optimizer_step(optimizer, (), {})
            callback.on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)  # step % interval != 0

        self.result["per_step"] = timeit.timeit(per_step, number=n) / n * 1e6
        self.result["logging_step"] = timeit.timeit(lambda: monitor._collect(trainer), number=200) / 200 * 1e6


def time_default_hooks(device: torch.device) -> dict[str, float]:
    """Microseconds of the default callback's own work per step and per logging step, measured inside a fit."""
    timer = _HookTimer()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(32 * 20, 32, generator=g)
    loader = DataLoader(TensorDataset(x, torch.randint(0, 10, (len(x),), generator=g)), batch_size=32)
    trainer = pl.Trainer(
        accelerator=device.type, devices=1, max_epochs=1, logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, log_every_n_steps=1000,
        callbacks=[TimescaleCallback(tau_epoch=0.5, verbose=False), timer],
    )  # fmt: skip
    trainer.fit(SmallMLP().to(device), loader)
    return timer.result


def gpt2_params(device: torch.device) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return [(torch.randn(s, generator=g) * 0.02).to(device) for s in GPT2_SMALL]


def bench_pass(args, device: torch.device, params: list[torch.Tensor]) -> None:
    stats_pass = WeightStatsPass()
    numel = sum(p.numel() for p in params)

    def stats() -> None:
        stats_pass(params).tolist()

    def l2_floor() -> None:
        torch.stack(torch._foreach_norm(params, 2)).tolist()

    def naive() -> None:
        [(p.abs().mean().item(), p.square().mean().sqrt().item()) for p in params]

    timings: dict[str, list[float]] = {"stats": [], "l2": [], "l1": []}
    stats(), l2_floor()
    for _ in range(args.pass_repeats):
        for name, fn in (("stats", stats), ("l2", l2_floor)):
            sync(device)
            start = time.perf_counter()
            fn()
            sync(device)
            timings[name].append(time.perf_counter() - start)
    start = time.perf_counter()
    torch.stack(torch._foreach_norm(params, 1)).tolist()
    sync(device)
    l1 = time.perf_counter() - start
    two = []  # ord 1 and ord 2: two fused reads, the CUDA path without Triton
    for _ in range(args.pass_repeats):
        sync(device)
        start = time.perf_counter()
        torch.stack([torch.stack(torch._foreach_norm(params, 1)), torch.stack(torch._foreach_norm(params, 2))]).tolist()
        sync(device)
        two.append(time.perf_counter() - start)
    start = time.perf_counter()
    naive()
    sync(device)
    naive_s = time.perf_counter() - start
    stats_s, l2_s = statistics.median(timings["stats"]), statistics.median(timings["l2"])
    print(
        f"(b) statistics pass over {numel / 1e6:.1f}M float32 params: {stats_s * 1e3:.2f} ms; fused L2-norm read"
        f" {l2_s * 1e3:.2f} ms; ratio {stats_s / l2_s:.2f} (median of {args.pass_repeats}; goal <= 1.2)."
        f" For reference: two fused reads (ord 1 and 2) {statistics.median(two) * 1e3:.2f} ms, ratio"
        f" {statistics.median(two) / l2_s:.2f}; once: _foreach_norm(ord=1) {l1 * 1e3:.1f} ms, per-tensor abs().mean()"
        f" + RMS {naive_s * 1e3:.0f} ms"
    )
    return stats_pass


def extra_bytes(fn, device: torch.device) -> int:
    if device.type == "cuda":
        sync(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        fn()
        sync(device)
        return torch.cuda.max_memory_allocated(device) - before
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    return sum(max(e.cpu_memory_usage, 0) for e in prof.events() if e.cpu_parent is None)


def bench_memory(device: torch.device, params: list[torch.Tensor], stats_pass: WeightStatsPass) -> None:
    largest = max(p.numel() * p.element_size() for p in params)
    total = sum(p.numel() * p.element_size() for p in params)
    ours = extra_bytes(lambda: stats_pass(params).tolist(), device)
    naive = extra_bytes(lambda: [p.abs().mean().item() for p in params], device)
    kind = "allocator peak" if device.type == "cuda" else "bytes allocated (profiler, >= peak)"
    print(
        f"(c) extra memory of one statistics pass, {kind}: {ours / 2**20:.2f} MiB (scratch buffer kept between"
        f" passes not counted); largest parameter {largest / 2**20:.0f} MiB, all parameters {total / 2**20:.0f} MiB;"
        f" naive per-tensor abs().mean(): {naive / 2**20:.0f} MiB (goal: no parameter-sized allocation)"
    )


class _SyncCounter(pl.Callback):
    """Counts CUDA host syncs from each training batch's start to its end (put it last: its end runs last)."""

    def __init__(self) -> None:
        self.per_step: list[tuple[int, int]] = []  # (global step after the batch, syncs)
        self._caught: warnings.catch_warnings | None = None
        self._records: list = []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx: int) -> None:
        self._caught = warnings.catch_warnings(record=True)
        self._records = self._caught.__enter__()
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx: int) -> None:
        torch.cuda.set_sync_debug_mode("default")
        assert self._caught is not None
        self._caught.__exit__(None, None, None)
        syncs = sum("synchronizing CUDA operation" in str(w.message) for w in self._records)
        self.per_step.append((trainer.global_step, syncs))


def bench_syncs(device: torch.device, log_dir: str) -> None:
    interval = 10
    for arm in ("noop", "default"):
        counter = _SyncCounter()
        g = torch.Generator().manual_seed(0)
        x = torch.randn(32 * 40, 32, generator=g)
        loader = DataLoader(TensorDataset(x, torch.randint(0, 10, (len(x),), generator=g)), batch_size=32)
        trainer = pl.Trainer(
            accelerator="cuda", devices=1, max_epochs=1, logger=CSVLogger(tempfile.mkdtemp(dir=log_dir)),
            enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
            log_every_n_steps=interval, callbacks=[*ARMS[arm](), counter],
        )  # fmt: skip
        trainer.fit(SmallMLP(), loader)
        logging_steps = [n for step, n in counter.per_step[1:] if step % interval == 0]
        other_steps = [n for step, n in counter.per_step[1:] if step % interval != 0]
        name = "TimescaleCallback(tau_epoch=0.5)" if arm == "default" else "a no-op callback"
        print(
            f"(d) host syncs per step with {name}"
            f" (CUDA sync debug mode, {len(counter.per_step) - 1} steps after the first, log every {interval}):"
            f" other steps max {max(other_steps)} (median {statistics.median(other_steps)}), logging steps max"
            f" {max(logging_steps)} (median {statistics.median(logging_steps)})"
        )


def check_accuracy(params: list[torch.Tensor]) -> None:
    got = WeightStatsPass()(params).cpu()
    ref = torch.stack([torch.stack([p.double().abs().sum(), p.double().square().sum()]) for p in params]).cpu()
    error = ((got[:, :2] - ref).abs() / ref).max().item()
    half = [p.bfloat16() for p in params[:20]]
    got_half = WeightStatsPass()(half).cpu()
    ref_half = torch.stack([torch.stack([p.double().abs().sum(), p.double().square().sum()]) for p in half]).cpu()
    error_half = ((got_half[:, :2] - ref_half).abs() / ref_half).max().item()
    print(f"(d) largest relative error of the pass against float64: float32 {error:.1e}, bfloat16 {error_half:.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--repeats", type=int, default=5, help="training runs per arm for (a)")
    parser.add_argument("--steps", type=int, default=200, help="optimizer steps per training run for (a)")
    parser.add_argument("--pass-repeats", type=int, default=7, help="timed repeats for (b)")
    parser.add_argument(
        "--log-dir", default=None, help="where the fits of (a) log (created if missing; default: a temporary folder)"
    )
    parser.add_argument("--skip-training", action="store_true", help="skip (a)")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device is available")
    device = torch.device(args.device)
    logging.getLogger("lightning.pytorch").setLevel(logging.WARNING)  # no per-fit banners between the figures
    print(f"device={device} torch={torch.__version__} threads={torch.get_num_threads()}")
    if not args.skip_training:
        with tempfile.TemporaryDirectory(prefix="lightning_tau_bench_") as scratch:
            args.log_dir = args.log_dir or scratch
            Path(args.log_dir).mkdir(parents=True, exist_ok=True)
            bench_overhead(args, device)
    params = gpt2_params(device)
    stats_pass = bench_pass(args, device, params)
    bench_memory(device, params, stats_pass)
    if device.type == "cuda":
        check_accuracy(params)
        with tempfile.TemporaryDirectory(prefix="lightning_tau_bench_") as scratch:
            bench_syncs(device, scratch)


if __name__ == "__main__":
    main()
