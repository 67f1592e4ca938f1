"""The ``--quick`` forms of the demos as a user runs them (issue 16's "done when"): each a few minutes on 2 CPUs.

- ``lightning-tau demo --axis width --quick``: its ``summary.json``'s exponent, interval (or reason), per-seed
  optima, interior tests and verdict are the stats module's on its own ``curves``, and the curves are the runs the
  finder logged to TensorBoard.
- ``lightning-tau demo --task text --quick`` with the network off: the same for the finder's dataset-size axis.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytest.importorskip("mup")
pytest.importorskip("sklearn")

from demos import check_text_sweep, check_width_summary, offline_command, text_sizes  # noqa: E402

from lightning_tau.cli.demo import QUICK_TEXT, QUICK_WIDTH  # noqa: E402


def _run_quick(tmp_path: Path, *args: str) -> tuple[Path, str]:
    command, env = offline_command(tmp_path, "-m", "lightning_tau", "demo", *args, "--quick", "--no-progress")
    proc = subprocess.run(
        [*command, "--out", str(tmp_path / "runs")], env=env, capture_output=True, text=True, timeout=1500
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return tmp_path / "runs" / "sweep_0", proc.stdout


@pytest.mark.slow
def test_width_demo_summary_follows_from_curves_and_logs(tmp_path: Path) -> None:
    sweep, printed = _run_quick(tmp_path, "--axis", "width")
    widths, grid = QUICK_WIDTH.widths, sorted(QUICK_WIDTH.weight_decays)
    assert len(widths) >= 3 and widths[-1] / widths[0] >= 16 and len(QUICK_WIDTH.seeds) >= 3
    summary = check_width_summary(sweep, printed, widths, grid, QUICK_WIDTH.seeds)
    assert summary["exponent_ci"] is not None or summary["ci_reason"]


@pytest.mark.slow
def test_text_demo_offline_writes_best_tau_per_dataset_size(tmp_path: Path) -> None:
    sweep, printed = _run_quick(tmp_path, "--task", "text")
    sizes = text_sizes(QUICK_TEXT.sizes, QUICK_TEXT.max_tokens, QUICK_TEXT.block_size)
    runs = len(QUICK_TEXT.sizes) * len(QUICK_TEXT.tau_epochs) * len(QUICK_TEXT.seeds)
    check_text_sweep(sweep, printed, runs=runs, batch_size=QUICK_TEXT.batch_size, sizes=sizes)
