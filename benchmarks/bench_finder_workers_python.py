"""``TimescaleFinder(workers=K).fit(MyModel, ...)`` from a user's script against ``workers=1`` (issue 21).

    PYTHONPATH=. OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_finder_workers_python.py [--repeats R]

``bench_finder_workers.py`` times the command, whose model lives in the package. From Python a user's model class
is usually defined in the script itself, which a worker imports as ``__mp_main__``: until 2026-11-26 that gave the
worker another study key, so it trained the whole grid a second time in a study of its own and ``workers=2`` was
slower than one. This runs such a script (the demo's digits MLP subclassed in the script; the default grid, 7
``tau_epoch`` x 3 seeds, ``--epochs`` 40) as fresh processes, the arms interleaved ``--repeats`` times, and prints
each arm's ``fit`` time and wall time (with the interpreter's start-up), the ratio K workers / 1, how many trials
the script's own process trained, and how many studies the journal holds (1: the grid shared, as it must be).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPT = """
import sys, time
import optuna
from lightning_tau.demos.digits import DigitsDataModule, DigitsMLP
from lightning_tau.tuner.finder import TimescaleFinder


class ScriptMLP(DigitsMLP):  # a model class of the script: `__mp_main__.ScriptMLP` in a worker
    pass


if __name__ == "__main__":
    out, workers, epochs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    start = time.perf_counter()
    finder = TimescaleFinder(root_dir=out, workers=workers, progress=False, verbose=False, monitor="val/loss",
                             trainer_kwargs={"max_epochs": epochs, "accelerator": "cpu"})
    result = finder.fit(ScriptMLP, datamodule=DigitsDataModule(train_size=1400, batch_size=64))
    seconds = time.perf_counter() - start
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(out + "/study.journal"))
    print(seconds, finder.trained_runs, len(optuna.get_all_study_names(storage)), result.tau_epoch)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    arms: dict[int, list[tuple[float, float, int, int, float]]] = {1: [], args.workers: []}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "sweep.py"
        script.write_text(SCRIPT)
        for repeat in range(args.repeats):
            for workers in arms:
                out = Path(tmp) / f"out_{workers}_{repeat}"
                start = time.perf_counter()
                proc = subprocess.run(
                    [sys.executable, str(script), str(out), str(workers), str(args.epochs)],
                    capture_output=True,
                    text=True,
                )
                wall = time.perf_counter() - start
                if proc.returncode != 0:
                    raise SystemExit(proc.stderr[-2000:])
                fit, trained, studies, suggestion = proc.stdout.split()[-4:]
                arms[workers].append((float(fit), wall, int(trained), int(studies), float(suggestion)))
    print(f"grid: 7 tau_epochs x 3 seeds, {args.epochs} epochs on digits; a model class of the script")
    medians = {}
    for workers, runs in arms.items():
        fit, wall = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
        medians[workers] = (fit, wall)
        print(
            f"workers={workers}: fit {fit:.1f} s {[round(r[0], 1) for r in runs]}, wall {wall:.1f} s; trained by the"
            f" script's process {[r[2] for r in runs]} of 21; studies in the journal {[r[3] for r in runs]};"
            f" suggestions {[round(r[4], 3) for r in runs]}"
        )
    (fit1, wall1), (fitk, wallk) = medians[1], medians[args.workers]
    print(f"ratio {args.workers} workers / 1: fit {fitk / fit1:.2f}, wall {wallk / wall1:.2f} (goal <= 0.6)")


if __name__ == "__main__":
    main()
