"""Wall time of the README's Python Quick start against ``lightning-tau find`` for the same grid (issue 21).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_quickstart.py                 # 3 tau_epochs x 1 seed, 10 epochs
    PYTHONPATH=. .venv/bin/python benchmarks/bench_quickstart.py --epochs 40 --seeds 0 1 2

Both arms train the demo's digits task (``DigitsMLP``, ``DigitsDataModule(train_size=1400, batch_size=64)``) on
the same grid, each in a fresh process and a fresh ``--out``, as a user starts them: the Python arm is
``TimescaleFinder(...).fit(DigitsMLP, datamodule=...)`` with the threads ``fit`` sets (``cores // workers``;
``OMP_NUM_THREADS`` is removed from its environment; ``--threads N`` calls ``torch.set_num_threads(N)`` first, which
``fit`` keeps), the CLI arm the command (which runs the tiny MLP on one thread). The arms are
interleaved ``--repeats`` times; prints each arm's median and the ratio Python / CLI (goal <= 1.5 on 2 cores).
Timings on a shared machine are noisy; the load average is printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYTHON_ARM = """
import sys
import torch
from lightning_tau import TimescaleFinder
from lightning_tau.demos.digits import DigitsDataModule, DigitsMLP
out, epochs, taus, seeds = sys.argv[1], int(sys.argv[2]), eval(sys.argv[3]), eval(sys.argv[4])
if int(sys.argv[5]):
    torch.set_num_threads(int(sys.argv[5]))
finder = TimescaleFinder(fraction=0.25, tau_epochs=taus, seeds=seeds, monitor="val/loss", root_dir=out,
                         trainer_kwargs={"max_epochs": epochs, "accelerator": "cpu", "devices": 1}, progress=False)
finder.fit(DigitsMLP, datamodule=DigitsDataModule(train_size=1400, batch_size=64))
"""


def _run(command: list[str]) -> float:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-2000:])
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--tau-epochs", type=float, nargs="+", default=[2.0, 8.0, 32.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--threads", type=int, default=0, help="torch.set_num_threads(N) in the Python arm before fit (0: not called)"
    )
    args = parser.parse_args()
    python_s, cli_s = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            python_out, cli_out = Path(tmp) / f"py{i}", Path(tmp) / f"cli{i}"
            python_s.append(
                _run(
                    [sys.executable, "-c", PYTHON_ARM, str(python_out), str(args.epochs)]
                    + [repr(tuple(args.tau_epochs)), repr(tuple(args.seeds)), str(args.threads)]
                )
            )
            cli_s.append(
                _run(
                    [sys.executable, "-m", "lightning_tau", "find", "--out", str(cli_out), "--no-plot", "--no-progress"]
                    + ["--epochs", str(args.epochs), "--tau-epochs", *map(str, args.tau_epochs)]
                    + ["--seeds", *map(str, args.seeds)]
                )
            )
    py, cli = statistics.median(python_s), statistics.median(cli_s)
    grid = f"{len(args.tau_epochs)} tau_epochs x {len(args.seeds)} seeds, {args.epochs} epochs"
    grid += f"; Python arm threads: {args.threads or 'as fit sets them (cores // workers)'}"
    print(f"grid: {grid}; cores: {len(os.sched_getaffinity(0))}; load average: {os.getloadavg()}")
    print(f"Python Quick start: median {py:.1f} s  {[round(s, 1) for s in python_s]}")
    print(f"lightning-tau find: median {cli:.1f} s  {[round(s, 1) for s in cli_s]}")
    print(f"ratio Python / CLI: {py / cli:.2f}  (goal <= 1.5)")


if __name__ == "__main__":
    main()
