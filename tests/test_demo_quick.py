"""The ``--quick`` forms of the demos as a user runs them (issue 16's "done when"): each a few minutes on 2 CPUs.

- ``lightning-tau demo --axis width --quick``: its ``summary.json``'s ``best_lambda_base``, ``interior`` and
  ``exponent`` follow from its own ``curves``, and the curves are the runs it logged to TensorBoard.
- ``lightning-tau demo --task text --quick`` with the network off writes the best ``tau_epoch`` per dataset size,
  consistent with its runs.
"""

from __future__ import annotations

import json
import math
import statistics
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

pytest.importorskip("mup")
pytest.importorskip("sklearn")

from test_demo_text import _offline_command, check_text_sweep  # noqa: E402
from test_demo_width import _hparams, _last_scalar, _vertex  # noqa: E402

from lightning_tau.cli.demo import QUICK_TEXT, QUICK_WIDTH  # noqa: E402
from lightning_tau.demos.width import ARMS, BASE_ARM  # noqa: E402


def _run_quick(tmp_path: Path, *args: str) -> tuple[Path, str]:
    command, env = _offline_command(tmp_path, "-m", "lightning_tau", "demo", *args, "--quick", "--no-progress")
    proc = subprocess.run(
        [*command, "--out", str(tmp_path / "runs")], env=env, capture_output=True, text=True, timeout=1500
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return tmp_path / "runs" / "sweep_0", proc.stdout


@pytest.mark.slow
def test_quick_width_demo_summary_follows_from_its_curves_and_its_logs(tmp_path: Path) -> None:
    sweep, printed = _run_quick(tmp_path, "--axis", "width")
    summary = json.loads((sweep / "summary.json").read_text())
    widths, grid = QUICK_WIDTH.widths, sorted(QUICK_WIDTH.weight_decays)
    assert len(widths) >= 3 and widths[-1] / widths[0] >= 16 and len(QUICK_WIDTH.seeds) >= 3
    assert (summary["sweep"], summary["lr_base"]) == ("lambda_base", QUICK_WIDTH.lr)

    # the runs it logged: per (arm, width), per λ_base, the final hp/val_loss of each seed
    logged: dict[tuple[str, str], dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    run_dirs = sorted({p.parent for p in sweep.rglob("events.out.tfevents.*")} - {sweep})
    assert len(run_dirs) == len(grid) * len(QUICK_WIDTH.seeds) * (1 + 2 * (len(widths) - 1))
    for run_dir in run_dirs:
        hp = _hparams(run_dir)
        for arm in ARMS if hp["arm"] == BASE_ARM else (hp["arm"],):
            logged[(arm, str(int(hp["width"])))][hp["weight_decay_base"]].append(_last_scalar(run_dir, "hp/val_loss"))

    for arm, part in summary["arms"].items():
        best = {}
        for width, rows in part["curves"].items():
            assert [row[0] for row in rows] == grid
            for lam, mean, std in rows:  # the curves are the logged runs: seed mean and sample std
                values = logged[(arm, width)][lam]
                assert len(values) == len(QUICK_WIDTH.seeds)
                assert mean == pytest.approx(statistics.fmean(values), rel=1e-6)
                assert std == pytest.approx(statistics.stdev(values), rel=1e-5, abs=1e-7)
            best[width] = _vertex(rows)
            assert part["best_lambda_base"][width] == pytest.approx(best[width], rel=1e-9), (arm, width)
            i = min(range(len(rows)), key=lambda j: rows[j][1])
            interior = 0 < i < len(rows) - 1 and all(
                rows[j][1] - rows[i][1] > max(rows[i][2], rows[j][2]) for j in (i - 1, i + 1)
            )
            assert part["interior"][width] is interior, (arm, width)
        # the exponent: least-squares slope of log best λ_base on log s, written out
        xs = [math.log(int(w) / widths[0]) for w in best]
        ys = [math.log(b) for b in best.values()]
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        assert part["exponent"] == pytest.approx(slope, abs=1e-9), arm
        low, high = part["exponent_ci"]
        assert low <= high
    assert "Exponent of best λ_base in s" in printed


@pytest.mark.slow
def test_quick_text_demo_offline_writes_the_best_tau_per_dataset_size(tmp_path: Path) -> None:
    sweep, printed = _run_quick(tmp_path, "--task", "text")
    sizes = {QUICK_TEXT.datamodule(f).dataset_size for f in QUICK_TEXT.sizes}
    runs = len(QUICK_TEXT.sizes) * len(QUICK_TEXT.tau_epochs) * len(QUICK_TEXT.seeds)
    check_text_sweep(sweep, printed, runs=runs, batch_tokens=QUICK_TEXT.batch_size * QUICK_TEXT.block_size, sizes=sizes)
