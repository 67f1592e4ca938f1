"""``lightning-tau find`` as a user's shell runs it, against its journal: a disk that fills up mid-run and Ctrl-C while
waiting for a trial that trains elsewhere (real processes, real signals, a real full file system)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.trial import TrialState

pytest.importorskip("sklearn")

from finder_procs import default_sigint  # noqa: E402
from finder_study import DROP, copy_study, with_attrs  # noqa: E402

from lightning_tau.cli import main  # noqa: E402

TINY = ["--epochs", "2", "--tau-epochs", "2", "8", "32", "--seeds", "0", "--no-progress", "--no-plot"]


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished TINY sweep: its ``--out`` folder (``study.journal``, ``STUDY/finder.json``)."""
    out = tmp_path_factory.mktemp("done")
    assert main(["find", *TINY, "--out", str(out)]) == 0
    return out


def _study(journal: Path) -> optuna.Study:
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(journal)))
    (summary,) = optuna.get_all_study_summaries(storage)
    return optuna.load_study(study_name=summary.study_name, storage=storage)


def _command(out: Path, journal: Path) -> list[str]:
    return [sys.executable, "-m", "lightning_tau", "find", *TINY, "--out", str(out), "--storage", str(journal)]


def _small_disk(folder: Path) -> list[str] | None:
    """A command prefix that runs a shell script in a mount namespace of its own where ``folder`` is a 16 KiB tmpfs
    (root, or a user namespace); ``None`` where this machine allows neither."""
    for prefix in (["unshare", "--mount"], ["unshare", "--user", "--map-root-user", "--mount"]):
        if shutil.which(prefix[0]) is None:
            return None
        probe = subprocess.run(
            [*prefix, "sh", "-c", 'mount -t tmpfs -o size=16k tmpfs "$0"', str(folder)], capture_output=True
        )
        if probe.returncode == 0:
            return prefix
    return None


#: In the namespace: a 16 KiB tmpfs on $1 holding the journal $2 and a filler that leaves only the rest of the
#: journal's last page free; runs the command after $4 there, then copies the journal out to $3.
_FULL_DISK = """
set -e
mount -t tmpfs -o size=16k tmpfs "$1"
cp "$2" "$1/study.journal"
size=$(stat -c %s "$1/study.journal")
head -c $(( (4 - (size + 4095) / 4096) * 4096 )) /dev/zero > "$1/filler"
folder=$1; copy=$3; shift 4
set +e
"$@"; code=$?
cp "$folder/study.journal" "$copy"
exit $code
"""


@pytest.mark.slow
def test_full_disk_mid_run_ends_in_one_line_naming_journal_and_next_run_finishes(
    tmp_path: Path, done: Path
) -> None:
    # the sweep's first five operations (the study, its settings, three enqueued trials), none trained yet
    start = tmp_path / "start.journal"
    start.write_bytes(b"".join((done / "study.journal").read_bytes().splitlines(keepends=True)[:5]))
    after, disk = tmp_path / "after.journal", tmp_path / "disk"
    disk.mkdir()
    prefix = _small_disk(disk)
    journal = disk / "study.journal"
    if prefix is not None:  # the journal on a file system that fills up (ENOSPC) a few operations later
        command = [*prefix, "sh", "-c", _FULL_DISK, "sh", str(disk), str(start), str(after), "--"]
        command += _command(tmp_path / "o", journal)
        why = "No space left on device"
    else:  # no mount namespace here: a file size limit, 600 bytes past the journal's size (EFBIG), mid-write
        shutil.copy(start, journal)
        limit = start.stat().st_size + 600

        def limited() -> None:
            import resource

            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        command, why = _command(tmp_path / "o", journal), "File too large"
    proc = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=None if prefix is not None else limited,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    if prefix is None:
        shutil.copy(journal, after)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"lightning-tau find: error: {journal}: cannot write the journal file: {why}. The"), last
    assert "the study keeps its complete trials: free some space (or pass another storage) and run the same" in last
    # the failed write was undone: every line whole, nothing half written
    text = after.read_bytes()
    assert text.endswith(b"\n") and all(json.loads(line)["op_code"] >= 0 for line in text.splitlines())
    # the same command with room to write: the sweep finishes with the answer of the uninterrupted run
    assert main(["find", *TINY, "--out", str(tmp_path / "o"), "--storage", str(after)]) == 0
    (again,), (first,) = (tmp_path / "o").glob("*/finder.json"), done.glob("*/finder.json")  # OUT/STUDY/finder.json
    assert json.loads(again.read_text()) == json.loads(first.read_text())
    assert not list(tmp_path.glob("**/*.corrupt-*"))


@pytest.mark.slow
def test_ctrl_c_while_waiting_for_trial_elsewhere_one_line_and_exit_130(tmp_path: Path, done: Path) -> None:
    journal = tmp_path / "copy.journal"
    far = {"host": "far", "machine": "far/1", "pid": 4242}

    def elsewhere(trial: Any) -> Any:  # training on another machine, alive a moment ago
        return with_attrs(trial, state=TrialState.RUNNING, record=DROP, worker=far, alive_at=time.time())

    copy_study(_study(done / "study.journal"), journal, {(32.0, 0): elsewhere})
    proc = subprocess.Popen(
        _command(tmp_path / "o", journal),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
        preexec_fn=default_sigint,
    )
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:  # wait until it says it waits
        seen.append(line)
        if "waiting for 1 trials training elsewhere (#2 on far pid 4242)" in line:
            break
    else:
        pytest.fail("".join(seen))
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=120)
    printed = "".join(seen) + rest
    assert proc.returncode == 130, printed
    assert "Traceback" not in printed and "KeyboardInterrupt" not in printed, printed
    assert printed.strip().splitlines()[-1] == (
        f"lightning-tau find: error: interrupted. The study in {journal} (2 complete) keeps its complete trials: run"
        " the same command again to resume."
    )
    # TINY's grid (the points the grid extension added to it in `done` were copied complete)
    given = [t.state for t in _study(journal).trials if t.user_attrs["tau_epoch"] in (2.0, 8.0, 32.0)]
    assert given == [TrialState.COMPLETE] * 2 + [TrialState.RUNNING]


SLOW_TWO = ["--epochs", "300", "--tau-epochs", "2", "8", "--seeds", "0", "--no-progress", "--no-plot"]


def _terminate_once_training(proc: subprocess.Popen, tb: Path) -> None:
    """SIGTERM ``proc`` once a trial has logged its first scalar (its first epoch's end: inside Lightning's fit,
    where Lightning's own SIGTERM handler is in place; it is installed only after the run's folder appears)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        for run in tb.glob("*/*/") if tb.is_dir() else []:  # tb/<study>/<run>
            accumulator = EventAccumulator(str(run))
            accumulator.Reload()
            if accumulator.Tags()["scalars"]:
                proc.send_signal(signal.SIGTERM)
                return
        time.sleep(0.05)
    proc.kill()
    pytest.fail(f"no trial logged a scalar (exit {proc.poll()})")


def test_sigterm_mid_trial_exits_143_in_one_line_and_rerun_trains_trial_again(tmp_path: Path) -> None:
    """Lightning ends a fit on SIGTERM with a SystemExit that has no code (exit 0): the command must not look
    finished to a scheduler or a `find && train` chain."""
    out = tmp_path / "o"
    command = [sys.executable, "-m", "lightning_tau", "find", *SLOW_TWO, "--out", str(out)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    _terminate_once_training(proc, out / "tb")
    printed, _ = proc.communicate(timeout=120)
    assert proc.returncode == 143, printed
    assert "Traceback" not in printed, printed
    journal = out / "study.journal"
    assert printed.strip().splitlines()[-1] == (
        f"lightning-tau find: error: stopped by SIGTERM. The study in {journal} (0 complete) keeps its complete"
        " trials: run the same command again to resume."
    )
    assert [t.state for t in _study(journal).trials] == [TrialState.FAIL, TrialState.WAITING]  # the grid is queued
    again = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    states = [t.state for t in _study(journal).trials if t.user_attrs["tau_epoch"] in (2.0, 8.0)]  # the grid given
    assert states.count(TrialState.COMPLETE) == 2 and states.count(TrialState.FAIL) == 1


def test_sigterm_mid_trial_ends_python_fit_with_exit_143(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from lightning_tau import TimescaleFinder\n"
        "from lightning_tau.demos.digits import DigitsDataModule, DigitsMLP\n"
        "finder = TimescaleFinder(tau_epochs=(2, 8), seeds=(0,), root_dir=sys.argv[1], progress=False,\n"
        "                         monitor='val/loss', trainer_kwargs={'max_epochs': 300, 'accelerator': 'cpu'})\n"
        "finder.fit(DigitsMLP, datamodule=DigitsDataModule(train_size=1400, batch_size=64))\n"
        "print('fit returned')\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    _terminate_once_training(proc, tmp_path / "tb")
    printed, _ = proc.communicate(timeout=120)
    assert proc.returncode == 143, printed
    assert "fit returned" not in printed
