"""``lightning-tau find`` errors that name the option, and stops that say one line: a repeated grid value, a fraction
that leaves less than a batch, a subset seed out of range, a damaged default journal (not blamed on --storage),
Ctrl-C and SIGTERM while the command is still importing (real processes and signals for the latter)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from finder_procs import default_sigint

from lightning_tau.cli import main

pytest.importorskip("sklearn")

QUICK = ["--epochs", "1", "--no-progress", "--no-plot"]


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("lightning-tau find: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize(
    ("argv", "start"),
    [
        (
            ["--tau-epochs", "4", "4", "--seeds", "0", "0"],
            "argument --tau-epochs: `TimescaleFinder(tau_epochs=[4.0, 4.0])`",
        ),
        (
            ["--tau-epochs", "2", "4", "--seeds", "0", "0"],
            "argument --seeds: `TimescaleFinder(seeds=[0, 0])` repeats a seed",
        ),
        (["--axis", "width", "--widths", "32", "32"], "argument --widths: `TimescaleFinder(widths=[32, 32])`"),
    ],
)
def test_find_refuses_a_repeated_value_naming_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], start: str
) -> None:
    assert main(["find", *argv, *QUICK, "--out", str(tmp_path)]) == 2
    assert _one_line(capsys.readouterr().err).startswith(f"lightning-tau find: error: {start}")
    assert not (tmp_path / "study.journal").exists()


@pytest.mark.parametrize(
    ("argv", "start"),
    [
        (
            ["--axis", "dataset_size", "--fractions", "0.0001", "0.5"],
            "argument --fractions: `TimescaleFinder(fractions=[0.0001, 0.5])`: a fraction of 0.0001 keeps 0 of the 1400"
            " training samples, fewer than one batch of 64: use a fraction of at least 0.0458",
        ),
        (
            ["--fraction", "0.01"],
            "argument --fraction: `TimescaleFinder(fraction=0.01)`: a fraction of 0.01 keeps 14 of the 1400 training"
            " samples, fewer than one batch of 64",
        ),
    ],
)
def test_find_refuses_a_fraction_below_one_batch_naming_the_option_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], start: str
) -> None:
    assert main(["find", *argv, "--tau-epochs", "2", "8", "--seeds", "0", *QUICK, "--out", str(tmp_path)]) == 2
    assert _one_line(capsys.readouterr().err).startswith(f"lightning-tau find: error: {start}")
    assert not (tmp_path / "study.journal").exists()


@pytest.mark.parametrize("bad", ["99999999999999999999", "-5", "4294967296"])
def test_find_subset_seed_out_of_range_is_refused_as_seeds_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["find", "--subset-seed", bad, "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --subset-seed: expected an integer from 0 to 4294967295, got '{bad}'" in err, err
    with pytest.raises(SystemExit):
        main(["find", "--seeds", bad, "--out", str(tmp_path)])
    seeds = capsys.readouterr().err
    assert err.splitlines()[-1].replace("--subset-seed", "--seeds") == seeds.splitlines()[-1]


def test_a_damaged_default_journal_is_not_blamed_on_storage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "study.journal").write_text("not a journal\n")
    assert main(["find", *QUICK, "--out", str(tmp_path)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "--storage" not in line, line
    assert line.startswith(f"lightning-tau find: error: the study journal {str(tmp_path / 'study.journal')!r} (the")


def _signal_while_importing_torch(tmp_path: Path, signum: int) -> subprocess.CompletedProcess[str]:
    """``find`` signalled once torch's library is mapped (the command is importing it: the first seconds)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "lightning_tau", "find", *QUICK, "--out", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    maps = Path(f"/proc/{proc.pid}/maps")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if "libtorch" in maps.read_text():
            break
        time.sleep(0.005)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="watches /proc/<pid>/maps (Linux)")
@pytest.mark.parametrize(
    ("signum", "code", "line"),
    [
        (signal.SIGINT, 130, "lightning-tau find: interrupted."),
        (signal.SIGTERM, 143, "lightning-tau find: stopped by SIGTERM."),
    ],
)
def test_a_signal_in_the_first_seconds_is_one_line_and_the_shells_exit_code(
    tmp_path: Path, signum: int, code: int, line: str
) -> None:
    done = _signal_while_importing_torch(tmp_path, signum)
    assert done.returncode == code, done.stderr[-3000:]
    assert done.stderr.strip().splitlines() == [line], done.stderr[-3000:]
