"""The finder's width axis: its cost against the full sweep, and its wall time with 1 and with 2 workers.

    .venv/bin/python benchmarks/bench_finder_axes.py                 # widths 16 32 64, 3 x 3 grid, 5 epochs
    .venv/bin/python benchmarks/bench_finder_axes.py --epochs 30     # the width demo's epochs: slower

Each figure runs ``lightning-tau find --axis width`` (the width demo's μP MLP on digits) as a separate process in a
fresh ``--out``, so every command pays the same start-up:

1. **Cost against a full sweep**: the width axis on ``--fraction`` of the training set (default 0.25) against the
   same widths, grid and seeds on all of it (``--fraction 1``): the ratio of their optimizer steps (from the JSON:
   ``cost`` over the full sweep's ``cost``) and of their wall times.
2. **Workers**: the same width axis (on ``--fraction``) with ``--workers 1`` and with ``--workers 2``: the ratio of
   their wall times (two workers on two idle cores would give about 0.5 plus the second process's start-up).

Prints the figures and the machine's load average (a busy machine makes the ratios noisy). Tests never assert on
time; this script is where the timings live.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _find(out: Path, args: argparse.Namespace, fraction: float, workers: int) -> tuple[float, dict]:
    command = [sys.executable, "-m", "lightning_tau", "find", "--axis", "width", "--out", str(out)]
    command += ["--widths", *map(str, args.widths), "--tau-epochs", *map(str, args.tau_epochs)]
    command += ["--seeds", *map(str, range(args.seeds)), "--epochs", str(args.epochs)]
    command += ["--fraction", str(fraction), "--workers", str(workers), "--no-plot", "--no-progress"]
    command += ["--json", str(out / "finder.json")]
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-2000:])
    data = json.loads((out / "finder.json").read_text())
    print(
        f"  fraction {fraction:g}, {workers} worker(s): {seconds:.1f} s, {data['cost']:,} optimizer steps;"
        f" exponent {data['exponent']:+.3f}, interval {data['exponent_ci']}"
    )
    return seconds, data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--tau-epochs", type=float, nargs="+", default=[2.0, 8.0, 32.0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0 .. SEEDS-1")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--fraction", type=float, default=0.25)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        print("1. the width axis on a fraction against the full sweep:")
        part_s, part = _find(root / "part", args, args.fraction, 1)
        full_s, full = _find(root / "full", args, 1.0, 1)
        print("2. workers:")
        two_s, _ = _find(root / "two", args, args.fraction, 2)
    print(
        f"width axis / full sweep: optimizer steps {part['cost'] / full['cost']:.3f}"
        f" ({part['cost']:,} / {full['cost']:,}; the JSON's own full_cost is {part['full_cost']:,}),"
        f" wall time {part_s / full_s:.3f} ({part_s:.1f} s / {full_s:.1f} s)"
    )
    print(f"2 workers / 1 worker wall time: {two_s / part_s:.3f} ({two_s:.1f} s / {part_s:.1f} s)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
