"""One torch thread against all of them, for the finder's trials, on an idle and on a loaded machine, in one run.

The finder trains many small runs; how many torch threads each process should use depends on the model and on what
else the machine runs. This script times one Lightning fit of the digits demo's MLP (the size of a Quick start
model, and a wider one) at 1 thread and at every core's thread, each in a fresh process, interleaved and repeated,
first on the machine as it is and then with ``--load`` busy processes (pure-Python loops, one core each) running
beside it, as on a shared machine. It prints the median seconds per fit and the ratio all-threads / one-thread.

Usage: python benchmarks/bench_threads.py [--repeats 3] [--epochs 3] [--load N (default: the number of cores)]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

#: The models timed: the digits demo's MLP as the Quick start's size, and a wider one.
MODELS = {"small (hidden 128, batch 32)": (128, 32), "wide (hidden 1024, batch 256)": (1024, 256)}


def one_fit(hidden: int, batch: int, threads: int, epochs: int) -> float:
    """Seconds of one fit in this process at ``threads`` torch threads (imports and set-up excluded)."""
    import logging

    import lightning.pytorch as pl
    import torch

    from lightning_tau.demos.digits import DigitsDataModule, DigitsMLP

    torch.set_num_threads(threads)
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    pl.seed_everything(0, verbose=False)
    trainer = pl.Trainer(
        max_epochs=epochs, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False,
    )  # fmt: skip
    model, data = DigitsMLP(hidden=hidden), DigitsDataModule(batch_size=batch)
    start = time.perf_counter()
    trainer.fit(model, datamodule=data)
    return time.perf_counter() - start


def timed(hidden: int, batch: int, threads: int, epochs: int) -> float:
    """:func:`one_fit` in a fresh process, so each measurement starts with torch's thread pool unset."""
    command = [sys.executable, __file__, "--one", str(hidden), str(batch), str(threads), str(epochs)]
    out = subprocess.run(command, check=True, capture_output=True, text=True, timeout=600)
    return float(out.stdout.strip().splitlines()[-1])


def measure(args: argparse.Namespace, cores: int) -> dict[tuple[str, int], float]:
    times: dict[tuple[str, int], list[float]] = {(m, t): [] for m in MODELS for t in (1, cores)}
    for repeat in range(args.repeats):
        order = list(times) if repeat % 2 == 0 else list(reversed(times))
        for model, threads in order:
            hidden, batch = MODELS[model]
            seconds = timed(hidden, batch, threads, args.epochs)
            times[(model, threads)].append(seconds)
            print(f"    {model}, {threads} threads: {seconds:.2f} s", flush=True)
    return {key: statistics.median(values) for key, values in times.items()}


def report(label: str, medians: dict[tuple[str, int], float], cores: int) -> None:
    print(f"{label} (load average {os.getloadavg()[0]:.1f} at the end):")
    for model in MODELS:
        one, all_ = medians[(model, 1)], medians[(model, cores)]
        print(f"  {model}: 1 thread {one:.2f} s, {cores} threads {all_:.2f} s; {cores} / 1 = {all_ / one:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--load", type=int, default=None, help="busy processes for the loaded half (default: cores)")
    parser.add_argument("--one", nargs=4, type=int, metavar=("HIDDEN", "BATCH", "THREADS", "EPOCHS"), help="internal")
    args = parser.parse_args()
    if args.one:
        print(one_fit(*args.one))
        return
    cores = os.cpu_count() or 1
    load = cores if args.load is None else args.load
    print(f"{cores} cores; {args.epochs} epochs of the digits task per fit, median of {args.repeats}")
    report("As the machine is", measure(args, cores), cores)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(load)]
    try:
        report(f"With {load} busy processes beside it", measure(args, cores), cores)
    finally:
        for process in busy:
            process.kill()
            process.wait()


if __name__ == "__main__":
    main()
