"""Run a script of ``examples/`` as a user would (a subprocess) and return what it printed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ddp_harness import clean_env

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


#: Seconds before a single-process example is killed (each takes a few seconds at these sizes).
TIMEOUT = 180


def run_example(name: str, tmp_path: Path, *args: str, timeout: float = TIMEOUT) -> str:
    """Run ``examples/<name>`` in ``tmp_path`` and return stdout + stderr; fail with the output if it fails."""
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise AssertionError(f"examples/{name} {' '.join(args)} failed ({proc.returncode}):\n{output}")
    return output
