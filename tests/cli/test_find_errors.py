"""``lightning-tau find`` errors that name the option, and stops that say one line: a repeated grid value, a fraction
that leaves less than a batch, a subset seed out of range, a damaged default journal (not blamed on --storage),
Ctrl-C and SIGTERM while the command is still importing (real processes and signals for the latter); ``--json`` at a
study's files, inside another study's folder or at a user's file refused before torch; cross-flag mistakes in flag
terms before torch; the note on a password in ``--storage`` and the safe form on a real PostgreSQL server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from finder_procs import command, default_sigint, finish, run
from pg_server import PostgresServer, user_db

from lightning_tau.cli import main

pytest.importorskip("sklearn")

ROOT = Path(__file__).resolve().parents[2]
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
def test_refuses_repeated_value_naming_option(
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
def test_refuses_fraction_below_one_batch_naming_option_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], start: str
) -> None:
    assert main(["find", *argv, "--tau-epochs", "2", "8", "--seeds", "0", *QUICK, "--out", str(tmp_path)]) == 2
    assert _one_line(capsys.readouterr().err).startswith(f"lightning-tau find: error: {start}")
    assert not (tmp_path / "study.journal").exists()


@pytest.mark.parametrize("bad", ["99999999999999999999", "-5", "4294967296"])
def test_subset_seed_out_of_range_refused_as_seeds(
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


def test_damaged_default_journal_not_blamed_on_storage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
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
def test_signal_in_first_seconds_one_line_and_shells_exit_code(
    tmp_path: Path, signum: int, code: int, line: str
) -> None:
    done = _signal_while_importing_torch(tmp_path, signum)
    assert done.returncode == code, done.stderr[-3000:]
    assert done.stderr.strip().splitlines() == [line], done.stderr[-3000:]


# --- outputs that are not ours, and cross-flag mistakes: one line, exit 2, before torch ----------------------------

#: Runs ``lightning-tau`` argument lists in one process; prints, for each, its exit code, what it wrote to stderr and
#: which heavy packages had been imported by then.
_PROBE = """
import contextlib, io, json, sys
from lightning_tau.cli import main
HEAVY = ("torch", "lightning", "optuna", "matplotlib")
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(argv)
    print(json.dumps([code, err.getvalue(), sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))]))
"""


def _probe(tmp_path: Path, argvs: list[list[str]]) -> list[tuple[int, str, list[str]]]:
    """Each of ``argvs`` run by ``main`` in one fresh process: (exit code, stderr, the heavy packages imported)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's package, from any working directory
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(argvs)], capture_output=True, text=True, cwd=tmp_path, env=env,
        timeout=600,
    )
    results = [tuple(json.loads(line)) for line in proc.stdout.splitlines() if line.startswith("[")]
    assert len(results) == len(argvs), proc.stderr[-3000:]
    return results  # type: ignore[return-value]


def _journal_with_a_study(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(path)))
    optuna.create_study(study_name="kept", storage=storage)
    return path


def test_json_at_studys_files_or_users_file_refused_before_torch(tmp_path: Path) -> None:
    out = tmp_path / "o"
    journal = _journal_with_a_study(out / "study.journal")
    database = out / "finder.db"
    optuna.create_study(study_name="kept", storage=f"sqlite:///{database}")
    (out / "tb" / "tau_finder_other" / "version_0").mkdir(parents=True)
    (out / "tau_finder_other").mkdir()
    ours = {"tau_epoch": 8, "curve": [], "verdict": "", "tau_epoch_range": []}  # another study's summary
    (out / "tau_finder_other" / "finder.json").write_text(json.dumps(ours))
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    kept = {p: p.read_bytes() for p in (journal, database, notes, out / "tau_finder_other" / "finder.json")}
    base = ["find", *QUICK, "--tau-epochs", "2", "8", "--seeds", "0", "--out", str(out)]
    cases = [
        (journal, [], "it is the study's journal file"),
        (Path(f"{journal}.lock"), [], "it is the study's journal file"),
        (database, ["--storage", f"sqlite:///{database}"], "it is the study's SQLite database"),
        (Path(f"{database}.take-lock"), ["--storage", f"sqlite:///{database}"], "it is the study's SQLite database"),
        (out / "tau_finder_other" / "finder.json", [], "the folder of study 'tau_finder_other'"),
        (out / "tb" / "mine.json", [], "the studies' TensorBoard logs"),
        (notes, [], "it is a file the package did not write"),
    ]
    results = _probe(tmp_path, [[*base, *extra, "--json", str(path)] for path, extra, _ in cases])
    for (code, err, heavy), (path, _, why) in zip(results, cases):
        line = _one_line(err)
        assert code == 2 and heavy == [], (path, err, heavy)
        assert line.startswith(f"lightning-tau find: error: argument --json: will not write {str(path)!r}: "), line
        assert why in line, line
    assert {p: p.read_bytes() for p in kept} == kept  # byte for byte
    assert not (out / "study.journal.lock").exists() and not (out / "finder.db.take-lock").exists()


@pytest.mark.slow
def test_json_at_finished_studys_journal_keeps_every_trial_and_our_json_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "o"
    tiny = ["find", *QUICK, "--tau-epochs", "2", "8", "--seeds", "0", "--max-grid-extensions", "0", "--out", str(out)]
    summary = tmp_path / "summary.json"
    assert main([*tiny, "--json", str(summary)]) == 0
    first = summary.read_text()
    journal = out / "study.journal"
    before = journal.read_bytes()
    capsys.readouterr()
    assert main([*tiny, "--json", str(journal)]) == 2  # the command: it used to exit 0 and wipe the journal
    assert "argument --json: will not write" in _one_line(capsys.readouterr().err)
    assert journal.read_bytes() == before
    summary.write_text(first + "\n")  # our own JSON, touched
    assert main([*tiny, "--json", str(summary)]) == 0  # replaced; nothing trained again
    assert "2 of 2 trials were complete in the study before this command" in capsys.readouterr().out
    assert json.loads(summary.read_text()) == json.loads(first)
    assert journal.read_bytes().startswith(before)  # every trial kept (the rerun only appends)


def test_cross_flag_mistakes_one_line_in_flag_terms_before_torch(tmp_path: Path) -> None:
    base = ["find", *QUICK, "--out", str(tmp_path / "o")]
    long_name = "s" * 600
    cases = [
        (["--widths", "16", "64"], "argument --widths: 16 64 is only used with --axis width (the axis is fraction)"),
        (["--fractions", "0.1", "0.5"], "argument --fractions: 0.1 0.5 is only used with --axis dataset_size"),
        (
            ["--axis", "dataset_size", "--fractions", "0.1", "0.5", "--fraction", "0.3"],
            "argument --fraction: 0.3 is not used with --axis dataset_size",
        ),
        (
            ["--tolerance", "1.5"],
            "argument --tolerance: 1.5 is only used with --axis width, dataset_size or batch_size",
        ),
        (["--target-width", "1024"], "argument --target-width: 1024 is only used with --axis width (the axis is"),
        (
            ["--axis", "width", "--widths", "16", "64", "--target-dataset-size", "5e4"],
            "argument --target-dataset-size: 50000 is only used with --axis dataset_size (the axis is width)",
        ),
        (
            ["--study", long_name, "--storage", "postgresql+psycopg2://tau@127.0.0.1:1/db"],
            "argument --study: the name is 600 characters long; a database storage holds at most 512",
        ),
        (
            ["--study", "s" * 505, "--storage", "postgresql://tau@127.0.0.1:1/db", "--axis", "width", "--widths", "16",
             "64"],
            "argument --study: the name is 514 characters long with the axis point (_width=...) added",
        ),
    ]  # fmt: skip
    for (code, err, heavy), (argv, start) in zip(_probe(tmp_path, [[*base, *argv] for argv, _ in cases]), cases):
        assert code == 2 and heavy == [], (argv, err, heavy)
        assert _one_line(err).startswith(f"lightning-tau find: error: {start}"), err
        assert "TimescaleFinder" not in err
    assert not (tmp_path / "o" / "study.journal").exists()


def test_max_grid_extensions_below_zero_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["find", "--max-grid-extensions", "-1"])
    assert stopped.value.code == 2
    assert "argument --max-grid-extensions: expected an integer >= 0, got '-1'" in capsys.readouterr().err


def test_password_in_storage_gets_one_line_note_naming_safe_form(tmp_path: Path) -> None:
    base = ["find", *QUICK, "--out", str(tmp_path / "o"), "--widths", "16"]  # --widths: stops before torch
    with_password = ["--storage", "postgresql+psycopg2://tau:s3cret@127.0.0.1:1/db"]
    without = ["--storage", "postgresql+psycopg2://tau@127.0.0.1:1/db"]
    (code, err, _), (_, plain, _) = _probe(tmp_path, [[*base, *with_password], [*base, *without]])
    notes = [line for line in err.splitlines() if line.startswith("lightning-tau find: note:")]
    assert code == 2 and len(notes) == 1, err
    assert "visible to every user of this machine" in notes[0] and "~/.pgpass or PGPASSWORD" in notes[0]
    assert "s3cret" not in err
    assert "note:" not in plain


def test_find_without_config_says_it_trains_digits_task_and_how_many_trials(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # --fraction 0.01 is refused once the data is known: after the line, before the first trial
    argv = ["find", "--fraction", "0.01", "--tau-epochs", "2", "8", "--seeds", "0", "1", *QUICK, "--out", str(tmp_path)]
    assert main(argv) == 2
    assert capsys.readouterr().out.splitlines()[0] == (
        "No --config: training the built-in digits task (about 4 trials: 2 tau_epochs x 2 seeds). Pass --config for"
        " your own model."
    )


@pytest.mark.slow
def test_postgres_without_password_on_command_line_pgpass_or_pgpassword(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    # the safe form docs/finder.rst shows: a URL without the password, the password in a .pgpass file or PGPASSWORD
    role, password, db = user_db(postgres)
    url = postgres.url(db, role)  # no password: nothing for ps to show
    assert password not in url
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"*:*:*:{role}:{password}\n")
    pgpass.chmod(0o600)  # libpq ignores a .pgpass others can read
    first = finish(run(command(tmp_path / "out", tmp_path / "a.json", "--storage", url), PGPASSFILE=str(pgpass)))
    again = finish(run(command(tmp_path / "out", tmp_path / "b.json", "--storage", url), PGPASSWORD=password))
    assert json.loads((tmp_path / "a.json").read_text()) == json.loads((tmp_path / "b.json").read_text())
    assert "trials were complete in the study before this command" in again[0]  # the same study, reopened
    assert all("note:" not in err and password not in out + err for out, err in (first, again))
    refused = subprocess.run(
        command(tmp_path / "out", tmp_path / "c.json", "--storage", url),
        capture_output=True, text=True, env={**os.environ, "PGPASSFILE": str(tmp_path / "none")}, timeout=300,
    )  # fmt: skip
    assert refused.returncode == 2 and "password" in refused.stderr  # no password anywhere: the server says so
