"""Run the ZeRO 2-process gloo fit of ``tests/test_callback_ddp.py`` N times in a row and count the runs a rank aborted.

    PYTHONPATH=. .venv/bin/python benchmarks/ddp_exit_loop.py              # 30 runs
    PYTHONPATH=. .venv/bin/python benchmarks/ddp_exit_loop.py --runs 5 --load 2

Each run is the test's own script (``ZERO_CHANGES``: three 2-process ``Trainer(strategy="ddp")`` fits with a
``ZeroRedundancyOptimizer``, then :func:`ddp_harness.end_process_group`), started through the test harness, one
process per rank. A run *aborted* when a rank died by SIGABRT or wrote "terminate called" (C++ ``std::terminate``,
seen at interpreter exit after the fit had finished); any other failure is counted apart, and so is a run whose
ranks had to leave through :func:`ddp_harness.end_process_group`'s fallback (gloo threads still alive).
``--load K`` starts K busy-looping processes for the whole loop (the abort was seen only on a loaded machine) and
stops them at the end.
Prints one line per run (seconds, outcome, load average) and "A of N aborted".
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

from ddp_harness import run_script  # noqa: E402
from test_callback_ddp import ZERO_CHANGES  # noqa: E402


def one_run(folder: Path) -> str:
    """``"ok"``, ``"aborted: ..."`` or ``"failed: ..."`` for one 2-process run of the ZeRO script in ``folder``."""
    try:
        proc = run_script(ZERO_CHANGES, folder)
    except AssertionError as error:
        text = str(error)
        first = text.splitlines()[0]
        if "SIGABRT" in first or "terminate called" in text:
            return f"aborted: {first}"
        return f"failed: {first}"
    if "terminate called" in proc.stderr:
        return "aborted: exit status 0 but 'terminate called' in stderr"
    if "end_process_group: gloo threads" in proc.stderr:
        return "failed: gloo threads still alive at the end (left without finalizing)"
    return "ok"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="how many 2-process runs (default 30)")
    parser.add_argument("--load", type=int, default=0, help="busy-looping processes to start meanwhile (default 0)")
    args = parser.parse_args()
    if args.runs < 1 or args.load < 0:
        parser.error(f"--runs must be at least 1 and --load at least 0, got --runs {args.runs} --load {args.load}")
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.load)]
    aborted = failed = 0
    try:
        print(f"load average at start: {os.getloadavg()[0]:.1f}; {args.load} busy loops started", flush=True)
        for i in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="ddp_exit_loop_") as folder:
                start = time.monotonic()
                outcome = one_run(Path(folder))
            aborted += outcome.startswith("aborted")
            failed += outcome.startswith("failed")
            print(
                f"run {i + 1:3d}: {time.monotonic() - start:5.1f} s  {outcome}  (load {os.getloadavg()[0]:.1f})",
                flush=True,
            )
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
    print(f"{aborted} of {args.runs} aborted" + (f" ({failed} failed otherwise)" if failed else ""))


if __name__ == "__main__":
    main()
