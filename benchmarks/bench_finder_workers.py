"""Wall time of ``lightning-tau find`` with 1 and with K workers, the workers' start-up, and the per-trial cost of
going through the study.

    .venv/bin/python benchmarks/bench_finder_workers.py              # the default grid (7 x 3, 40 epochs): minutes
    .venv/bin/python benchmarks/bench_finder_workers.py --epochs 5   # quicker, same ratios' meaning
    .venv/bin/python benchmarks/bench_finder_workers.py --repeats 3  # each arm 3 times, interleaved: medians

1. The same ``lightning-tau find`` command (the demo's digits task) in a fresh ``--out``, as three arms run one after
   the other (interleaved, in a rotating order, with ``--repeats``): ``--workers 1``; ``--workers K`` (default 2)
   with the workers started as they are by default (on Linux: forks of a forkserver that imports torch and Lightning
   while the command does its own imports); and ``--workers K`` with ``LIGHTNING_TAU_WORKER_START=spawn`` (fresh
   interpreters, each importing torch and Lightning itself: how workers started before). Prints each arm's wall
   time (until the command's own process exits) and the ratios to one worker (goal <= 0.6 with 2 workers on 2 idle
   cores). Each is a separate process, so all pay the same start-up.
2. The workers' start-up, from the study: for each K-worker arm, when the command's own process started its first
   trial and when the first trial of another process started, in seconds after the command was launched; their
   difference is the start-up lag of the second worker (0 would be a worker ready as soon as the command is).
3. The study's bookkeeping per trial, without training: open the study in a fresh journal, then for each of 21
   trials take it, mark it running (worker, first sign of life), store a digits-sized record and tell it complete,
   and compute the records; divided by 21, as a share of one digits trial's wall time from step 1 (goal <= 2 %).

Prints the figures and the machine's load average before and after each run (a busy machine makes the ratios
pessimistic; the start-up lag is less sensitive to load than the ratios).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

#: (arm name, --workers from the command line?, LIGHTNING_TAU_WORKER_START)
ARMS = (("1 worker", False, None), ("K workers", True, None), ("K workers, spawn", True, "spawn"))


def _find(out: Path, workers: int, epochs: int, start: str | None) -> tuple[float, float | None, float | None]:
    """``(wall seconds, first trial of this process, first trial of another process)``, the last two in seconds
    after the launch (``None``: no such trial)."""
    out.mkdir(parents=True)
    command = [sys.executable, "-m", "lightning_tau", "find", "--out", str(out), "--no-plot", "--no-progress"]
    command += ["--epochs", str(epochs), "--workers", str(workers)]
    env = {k: v for k, v in os.environ.items() if k != "LIGHTNING_TAU_WORKER_START"}
    if start is not None:
        env["LIGHTNING_TAU_WORKER_START"] = start
    # output to files, not pipes: the wall time ends when the command exits (its workers' server, which shares the
    # command's stdout, exits a moment after it)
    with open(out / "stdout.txt", "w") as stdout, open(out / "stderr.txt", "w") as stderr:
        launched = time.time()
        start_clock = time.perf_counter()
        proc = subprocess.Popen(command, stdout=stdout, stderr=stderr, env=env)
        proc.wait()
        seconds = time.perf_counter() - start_clock
    if proc.returncode != 0:
        raise SystemExit((out / "stderr.txt").read_text()[-2000:])
    print(next(line for line in (out / "stdout.txt").read_text().splitlines() if line.startswith("Suggested")))
    own, other = _first_trials(out / "study.journal", proc.pid)
    return seconds, *(None if moment is None else moment.timestamp() - launched for moment in (own, other))


def _first_trials(journal: Path, pid: int) -> tuple[datetime | None, datetime | None]:
    """When the first trial of process ``pid`` and the first of any other process started."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(journal)))
    starts: dict[bool, list[datetime]] = {True: [], False: []}
    for name in optuna.get_all_study_names(storage):
        for trial in optuna.load_study(study_name=name, storage=storage).trials:
            worker = trial.user_attrs.get("worker")
            if isinstance(worker, dict) and trial.datetime_start is not None:
                starts[worker.get("pid") == pid].append(trial.datetime_start)
    return min(starts[True], default=None), min(starts[False], default=None)


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


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1, help="runs of each arm, interleaved (medians printed)")
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.1f}")
    runs: dict[str, list[tuple[float, float | None, float | None]]] = {name: [] for name, _, _ in ARMS}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            for i in range(len(ARMS)):
                name, many, start = ARMS[(i + repeat) % len(ARMS)]
                load = os.getloadavg()[0]
                workers = args.workers if many else 1
                run = _find(Path(tmp) / f"{repeat}-{i}", workers, args.epochs, start)
                runs[name].append(run)
                print(f"  {name.replace('K', str(args.workers))}: {run[0]:.1f} s (load average {load:.1f} before)")
        per_trial = _study_overhead(Path(tmp) / "bookkeeping")
    one = statistics.median(r[0] for r in runs["1 worker"])
    print(f"default grid (7 tau_epochs x 3 seeds, {args.epochs} epochs), medians of {args.repeats}:")
    for name, _, _ in ARMS:
        wall = statistics.median(r[0] for r in runs[name])
        shown = name.replace("K", str(args.workers))
        own = _median([r[1] for r in runs[name]])
        line = f"  {shown}: {wall:.1f} s, ratio to 1 worker {wall / one:.2f}; first trial here {_seconds(own)}"
        if name != "1 worker":
            other = _median([r[2] for r in runs[name]])
            lags = [r[2] - r[1] for r in runs[name] if r[1] is not None and r[2] is not None]
            line += f" and of another worker {_seconds(other)} after launch: start-up lag {_seconds(_median(lags))}"
        else:
            line += " after launch"
        print(line)
    print(f"  (goal: ratio <= 0.6 for {args.workers} workers on 2 idle cores)")
    trial_seconds = one / 21
    print(
        f"study bookkeeping per trial: {per_trial * 1000:.1f} ms = {per_trial / trial_seconds:.2%} of one digits trial"
        f" ({trial_seconds:.2f} s, including its share of process start-up) (goal <= 2%)"
    )
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
