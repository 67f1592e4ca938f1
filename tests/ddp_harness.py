"""Run a script as a real 2-process DDP fit on CPU (gloo), in a clean subprocess.

Lightning's ``ddp`` launcher re-runs the parent command once per extra rank, so the fit must live in its own
script. Distributed variables from any outer launcher are stripped so the child starts a fresh process group.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

#: Variables that would make the child think it is already part of a distributed job.
_STRIPPED = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "NODE_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK")

#: Seconds before a hung process group is killed (a 2-process gloo fit of a tiny model takes ~15 s here).
DDP_TIMEOUT = 240


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _STRIPPED and not k.endswith("RANK")}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parent), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_script(source: str, tmp_path: Path, *args: str, timeout: float = DDP_TIMEOUT) -> subprocess.CompletedProcess:
    """Write ``source`` to ``tmp_path/script.py`` and run it; fail the test with its output if it fails."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source))
    proc = subprocess.run(
        [sys.executable, str(script), *args],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise AssertionError(f"script failed ({proc.returncode}):\nSTDOUT:\n{proc.stdout}\nSTDERR:\n{proc.stderr}")
    return proc
