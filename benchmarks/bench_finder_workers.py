"""Wall time of ``lightning-tau find`` with 1 and with K workers, and the per-trial cost of going through the study.

    .venv/bin/python benchmarks/bench_finder_workers.py              # the default grid (7 x 3, 40 epochs): minutes
    .venv/bin/python benchmarks/bench_finder_workers.py --epochs 5   # quicker, same ratios' meaning

1. The same ``lightning-tau find`` command (the demo's digits task) in a fresh ``--out`` with ``--workers 1`` and
   with ``--workers K`` (default 2), one after the other in this run: the ratio of their wall times (goal <= 0.6
   with 2 workers on 2 idle cores). Each is a separate process, so both pay the same start-up.
2. The study's bookkeeping per trial, without training: open the study in a fresh journal, then for each of 21
   trials take it, mark it running (worker, first sign of life), store a digits-sized record and tell it complete,
   and compute the records; divided by 21, as a share of one digits trial's wall time from step 1 (goal <= 2 %).

Prints the figures; the machine's load average is printed too (a busy machine makes the ratios pessimistic).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _find(out: Path, workers: int, epochs: int) -> float:
    command = [sys.executable, "-m", "lightning_tau", "find", "--out", str(out), "--no-plot", "--no-progress"]
    command += ["--epochs", str(epochs), "--workers", str(workers)]
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-2000:])
    print(next(line for line in proc.stdout.splitlines() if line.startswith("Suggested")))
    return seconds


def _study_overhead(root: Path, trials: int = 21) -> float:
    """Seconds of study bookkeeping per trial (no training)."""
    from lightning_tau.tuner.study import GridStudy

    grid = [(float(2**i), seed) for i in range(1, 8) for seed in range(3)][:trials]
    record = {
        "format": 2,
        "steps": 240,
        "epochs_run": 40,
        "dataset_size_seen": 350,
        "global_batch_size": 64,
        "world_size": 1,
        "groups": {"decay": {"lr": 3e-3, "weight_decay": 1.0, "decays": True}},
        "metrics": [{"val/loss": 0.3, "val/error": 0.1, "train/loss": 0.2} for _ in range(40)],
    }
    start = time.perf_counter()
    study = GridStudy.open(None, root, "bench", {"x": 1}, grid)
    for _ in grid:
        study.reclaim()
        study.enqueue_missing()
        taken = study.take()
        assert taken is not None
        trial, _key = taken
        with study.working_on(trial):
            pass
        assert study.finish(trial, record, 0.3)
    study.reclaim()
    study.enqueue_missing()
    assert study.take() is None and len(study.records()) == len(grid)
    return (time.perf_counter() - start) / len(grid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        one = _find(Path(tmp) / "one", 1, args.epochs)
        many = _find(Path(tmp) / "many", args.workers, args.epochs)
        per_trial = _study_overhead(Path(tmp) / "bookkeeping")
    trial_seconds = one / 21
    print(
        f"default grid (7 tau_epochs x 3 seeds, {args.epochs} epochs): 1 worker {one:.1f} s,"
        f" {args.workers} workers {many:.1f} s"
    )
    print(f"  ratio {args.workers} workers / 1 worker: {many / one:.2f} (goal <= 0.6 for 2 workers on 2 idle cores)")
    print(
        f"study bookkeeping per trial: {per_trial * 1000:.1f} ms = {per_trial / trial_seconds:.2%} of one digits trial"
        f" ({trial_seconds:.2f} s, including its share of process start-up) (goal <= 2%)"
    )
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
