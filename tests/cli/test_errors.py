"""Bad input to ``lightning-tau``: one line naming the argument, the value and what to do, before any training.

Usage errors exit with 2, as argparse's own do; nothing is trained and no sweep directory is written.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lightning_tau.cli import build_parser, main
from lightning_tau.cli.demo import DemoConfig
from lightning_tau.cli.demo_checks import too_short_timescale, width_grid_problem
from lightning_tau.demos.width import WidthConfig

TUNED = ["--lr", "1e-3", "--weight-decay", "0.1", "--dataset-size", "50000", "--batch-size", "100"]


def _one_error_line(err: str, command: str) -> str:
    """The message of a failed command: exactly one line starting ``lightning-tau <command>: error:``."""
    lines = [line for line in err.splitlines() if line.startswith(f"lightning-tau {command}: error:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_demo_out_existing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    existing = tmp_path / "notes.txt"
    existing.write_text("mine\n")
    assert main(["demo", "--quick", "--no-progress", "--out", str(existing)]) == 2
    line = _one_error_line(capsys.readouterr().err, "demo")
    assert f"--out {existing} is an existing file" in line and "give a directory" in line
    assert existing.read_text() == "mine\n"


def test_demo_out_cannot_be_created(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # under a regular file no directory can be made, whoever runs the test (root ignores permission bits)
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "runs"
    assert main(["demo", "--quick", "--no-progress", "--out", str(out)]) == 2
    line = _one_error_line(capsys.readouterr().err, "demo")
    assert f"--out {out} cannot be written" in line and "give a directory you can write to" in line


def test_demo_negative_seed_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--seeds", "0", "-1", "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --seeds: expected an integer from 0 to 4294967295, got '-1'" in err
    assert not list(tmp_path.iterdir())


def test_demo_timescale_under_one_step_refused_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # N=100, B=64: an epoch is 2 optimizer steps, so tau_epoch=0.01 is 0.02 steps (lr * weight_decay = 50)
    argv = ["demo", "--sizes", "100", "--tau-epochs", "0.01", "5", "--epochs", "1", "--out", str(tmp_path)]
    assert main([*argv, "--no-progress", "--no-plot"]) == 2
    line = _one_error_line(capsys.readouterr().err, "demo")
    assert "--tau-epochs 0.01:" in line and "2 optimizer steps" in line and "above 0.5" in line
    assert not list(tmp_path.iterdir())  # no sweep_0: nothing was trained


def test_demo_timescale_beyond_float_refused_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # N=100, B=64: 2 steps per epoch, so tau_epoch=1e308 is 2e308 steps: inf, no weight decay to set
    argv = ["demo", "--sizes", "100", "--tau-epochs", "5", "1e308", "--epochs", "1", "--out", str(tmp_path)]
    assert main([*argv, "--no-progress", "--no-plot"]) == 2
    line = _one_error_line(capsys.readouterr().err, "demo")
    assert "--tau-epochs 1e+308: at N=100, B=64 an epoch is 2 optimizer steps" in line and "below 8.99e+307" in line
    assert not list(tmp_path.iterdir())  # nothing was trained


def test_text_demo_timescale_under_one_step_refused_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["demo", "--task", "text", "--fractions", "0.5", "--tau-epochs", "1e-5", "4", "--epochs", "1"]
    assert main([*argv, "--out", str(tmp_path), "--no-progress", "--no-plot"]) == 2
    line = _one_error_line(capsys.readouterr().err, "demo")
    assert "--tau-epochs 1e-05: at fraction 0.5 an epoch is" in line and "Use --tau-epochs above" in line
    assert not list(tmp_path.iterdir())  # no sweep_0: nothing was trained


def test_width_demo_lr_times_lambda_of_one_or_more_refused_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["demo", "--axis", "width", "--weight-decays", "1", "2", "4000", "--lr-base", "0.001"]
    assert main([*argv, "--out", str(tmp_path), "--no-progress", "--no-plot"]) == 2
    line = _one_error_line(capsys.readouterr().err, "demo")
    assert "--lr-base 0.001 x --weight-decays 4000 >= 1" in line
    assert not list(tmp_path.iterdir())


def test_plot_out_cannot_be_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "figures"
    assert main(["plot", str(tmp_path), "--out", str(out)]) == 2
    line = _one_error_line(capsys.readouterr().err, "plot")
    assert f"--out {out} cannot be written" in line


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        # the tuned run itself: lr * weight_decay = 2, half a step
        (
            ["--lr", "1", "--weight-decay", "2", "--dataset-size", "100", "--batch-size", "10"],
            "`--lr 1 --weight-decay 2`",
        ),
        # a sound tuned run (tau_epoch = 20) carried to B = 40000 x 100: M = 0.0125 steps, so tau_iter = 0.25
        ([*TUNED, "--target-batch-size", "40000x"], "tau_iter=0.25 optimizer steps"),
    ],
)
def test_transfer_refuses_timescale_under_one_step(argv: list[str], expected: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["transfer", *argv])
    message = str(exit_info.value.code)
    assert message.startswith("lightning-tau transfer: error:") and "\n" not in message
    assert expected in message and "lr * weight_decay" in message and "(>= 1)" in message


#: Runs ``lightning-tau`` argument lists in one process and prints, for each, its exit code and which of the heavy
#: packages had been imported by then.
_PROBE = """
import json, sys
from lightning_tau.cli import main
HEAVY = ("torch", "lightning", "optuna", "matplotlib", "scipy")
for argv in json.loads(sys.argv[1]):
    try:
        code = main(argv)
    except SystemExit as exit:
        code = exit.code
    print(json.dumps([code, sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))]), flush=True)
"""


def test_find_help_and_usage_errors_import_no_heavy_package(tmp_path: Path) -> None:
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    out = ["--out", str(tmp_path / "o")]
    fast = ["--epochs", "1", "--tau-epochs", "4", "--no-plot", "--no-progress"]  # should a bug let one train
    cases = [
        (["--help"], 0, ""),
        ([*out, "--seeds", "-1"], 2, "argument --seeds: expected an integer from 0 to 4294967295, got '-1'"),
        ([*out, "--seeds", "0", "4294967296"], 2, "argument --seeds: expected an integer from 0 to 4294967295"),
        (["--seeds", "0", "--out", ""], 2, "argument --out: expected a path, got '' (an empty path would mean the"),
        (
            ["--seeds", "0", "--out", str(tmp_path / "dangling")],
            2,
            f"argument --out: cannot write to '{tmp_path / 'dangling'}': {tmp_path / 'dangling'} is a symbolic link"
            f" to '{tmp_path / 'nowhere'}', which does not exist. Pass a writable path.",
        ),
        (
            [*out, "--seeds", "0", "--storage", str(notes)],
            2,
            f"argument --storage: '{notes}': it is not an Optuna journal file (its first line is not a journal"
            " record); nothing was written to it. Pass a new file path",
        ),
        ([*out, "--workers", "0"], 2, "argument --workers: expected a positive integer, got '0'"),
        ([*out, "--threads", "all"], 2, "argument --threads: expected a positive integer or auto, got 'all'"),
        (
            [*out, "--tau-epochs", "4", "4"],
            2,
            "argument --tau-epochs: `TimescaleFinder(tau_epochs=[4.0, 4.0])` repeats a value (to 6 significant",
        ),
        ([*out, "--seeds", "0", "0"], 2, "argument --seeds: `TimescaleFinder(seeds=[0, 0])` repeats a seed"),
        ([*out, "--config", str(tmp_path / "no.yaml")], 2, f"--config '{tmp_path / 'no.yaml'}' is not a file."),
    ]
    argvs = [["find", *(fast if argv != ["--help"] else []), *argv] for argv, _, _ in cases]  # argv wins
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(argvs)], capture_output=True, text=True, cwd=tmp_path, timeout=600
    )
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("[")]
    assert [code for code, _ in results] == [code for _, code, _ in cases], proc.stderr
    assert all(heavy == [] for _, heavy in results), results  # --help and every usage error: none of them
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(errors) == len(cases) - 1 and "Traceback" not in proc.stderr, proc.stderr
    for line, (_, _, expected) in zip(errors, cases[1:]):
        assert line.startswith("lightning-tau find: error: ") and expected in line, line
    assert notes.read_text() == "my notes\n"  # not appended to
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "notes.txt"]  # nothing written, here or in o/


@pytest.mark.parametrize("bad", ["-1", "0", "nan", "inf"])
@pytest.mark.parametrize(
    "flag",
    [
        "--lr",
        "--weight-decay",
        "--dataset-size",
        "--batch-size",
        "--width",
        "--base-width",
        "--target-lr",
        "--target-dataset-size",
        "--target-batch-size",
        "--target-width",
    ],
)
def test_transfer_refuses_number_not_positive(
    flag: str, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # --base-width -1 used to be accepted silently (it is read only with --target-width); every number is checked
    argv = [*TUNED, "--width", "256"]
    argv = [*argv[: argv.index(flag)], *argv[argv.index(flag) + 2 :]] if flag in argv else argv
    with pytest.raises(SystemExit) as exit_info:
        main(["transfer", *argv, f"{flag}={bad}"])
    assert exit_info.value.code == 2
    line = _one_error_line(capsys.readouterr().err, "transfer")
    assert f"argument {flag}:" in line and repr(bad) in line and "positive" in line


@pytest.mark.parametrize("bad", ["0x", "-2x", "nanx"])
def test_transfer_refuses_multiple_not_positive(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["transfer", *TUNED, f"--target-dataset-size={bad}"])
    assert exit_info.value.code == 2
    line = _one_error_line(capsys.readouterr().err, "transfer")
    assert "argument --target-dataset-size:" in line and repr(bad) in line and "positive" in line


@pytest.mark.parametrize("bad", ["hidden=0", "hidden=-2", "hidden=nan"])
def test_transfer_group_multiplier_named_as_given(bad: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["transfer", *TUNED, "--group", bad])
    message = str(exit_info.value.code)
    assert message.startswith("lightning-tau transfer: error:") and "\n" not in message
    assert f"`--group {bad}`" in message and "positive" in message


def test_transfer_target_width_without_tuned_width_names_flags() -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["transfer", *TUNED, "--target-width", "1024"])
    message = str(exit_info.value.code)
    assert message.startswith("lightning-tau transfer: error:") and "\n" not in message
    assert "`--target-width 1024`" in message and "--width" in message and "--base-width" in message
    assert "TunedRun" not in message


# --- exact boundaries: the value equal to the limit is refused, the one just inside it accepted ----------------------


def test_demo_seeds_up_to_two_to_32_minus_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert build_parser("demo").parse_args(["demo", "--seeds", "0", "4294967295"]).seeds == [0, 2**32 - 1]
    with pytest.raises(SystemExit) as exit_info:
        build_parser("demo").parse_args(["demo", "--seeds", "0", "4294967296"])
    assert exit_info.value.code == 2
    line = _one_error_line(capsys.readouterr().err, "demo")
    assert "argument --seeds: expected an integer from 0 to 4294967295, got '4294967296'" in line


def test_demo_tau_epoch_of_exactly_one_step_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # N=100, B=64: an epoch is 2 optimizer steps, so tau_epoch=0.5 is exactly 1 step (lr * weight_decay = 1)
    argv = ["demo", "--sizes", "100", "--tau-epochs", "0.5", "5", "--epochs", "1", "--out", str(tmp_path)]
    assert main([*argv, "--no-progress", "--no-plot"]) == 2
    assert "--tau-epochs 0.5: at N=100, B=64 an epoch is 2 optimizer steps" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
    # just above one step is a valid (if useless) timescale: the check lets it through
    assert too_short_timescale(DemoConfig(sizes=[100], tau_epochs=[0.5000001, 5.0], batch_size=64)) is None
    assert too_short_timescale(DemoConfig(sizes=[100], tau_epochs=[0.5, 5.0], batch_size=64)) is not None


def test_width_demo_lr_times_lambda_of_exactly_one_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["demo", "--axis", "width", "--weight-decays", "0.5", "1", "2", "--lr-base", "0.5"]  # 0.5 x 2 = 1
    argv += ["--widths", "8", "16", "--seeds", "0", "--epochs", "1", "--batch-size", "512"]  # small if it trains
    assert main([*argv, "--out", str(tmp_path), "--no-progress", "--no-plot"]) == 2
    assert "--lr-base 0.5 x --weight-decays 2 >= 1" in _one_error_line(capsys.readouterr().err, "demo")
    assert not list(tmp_path.iterdir())
    assert width_grid_problem(WidthConfig(widths=[8, 32], weight_decays=[0.5, 1.0, 1.999999], lr=0.5)) is None
    assert width_grid_problem(WidthConfig(widths=[8, 32], weight_decays=[0.5, 1.0, 2.0], lr=0.5)) is not None


def test_transfer_lr_times_weight_decay_of_exactly_one_refused(capsys: pytest.CaptureFixture[str]) -> None:
    run = ["--dataset-size", "100", "--batch-size", "10"]
    with pytest.raises(SystemExit, match=r"`--lr 0.5 --weight-decay 2` give `lr \* weight_decay = 1` \(>= 1\)"):
        main(["transfer", "--lr", "0.5", "--weight-decay", "2", *run])
    assert main(["transfer", "--lr", "0.5", "--weight-decay", "1.999999", *run]) == 0
    # the target: tau_epoch = 10 / (1e-3 * 0.1 * 100) = 1000 epochs; B = 100,000 makes M = 1e-3, tau_iter = 1
    with pytest.raises(SystemExit, match=r"tau_iter=1 optimizer steps"):
        main(["transfer", "--lr", "1e-3", "--weight-decay", "0.1", *run, "--target-batch-size", "100000"])
    assert main(["transfer", "--lr", "1e-3", "--weight-decay", "0.1", *run, "--target-batch-size", "99999"]) == 0


# --- argparse's usage errors: two lines in the subcommand's terms, exit 2, before torch ----------------------------

#: Runs ``lightning-tau`` argument lists in one process; prints, for each, its exit code, what it wrote to stderr and
#: which heavy packages had been imported by then.
_USAGE_PROBE = """
import contextlib, io, json, sys
from lightning_tau.cli import main
HEAVY = ("torch", "lightning", "optuna", "matplotlib", "scipy")
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit:
            code = exit.code
    print(json.dumps([code, err.getvalue(), sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))]))
"""

#: ``(argv, the command that reports it, what its error line says)``.
USAGE_ERRORS = [
    (["find", "--fractoin", "0.1"], "find", "unknown flag --fractoin 0.1; did you mean --fraction 0.1?"),
    (["find", "--fraction", "1.5"], "find", "argument --fraction: expected a number in (0, 1], got '1.5'"),
    (["find", "--axis", "widht"], "find", "argument --axis: invalid choice: 'widht'"),
    (["find", "--tau_epochs", "2", "4"], "find", "unknown flag --tau_epochs 2 4; did you mean --tau-epochs 2 4?"),
    (["find", "0.1"], "find", "unexpected value '0.1' (lightning-tau find takes flags only"),
    (["demo", "--axsi", "width"], "demo", "unknown flag --axsi width; did you mean --axis width?"),
    (["demo", "--sizes", "100", "x"], "demo", "argument --sizes: expected a positive integer, got 'x'"),
    (
        ["demo", "--task", "txt"],
        "demo",
        "invalid choice: 'txt' (choose from 'digits', 'synthetic', 'text'); did you mean text?",
    ),
    (["demo", "--zzz=3"], "demo", "unknown flag --zzz=3 (lightning-tau demo --help lists the flags)"),
    (["plot"], "plot", "the following arguments are required: logdir"),
    (["plot", "runs", "--metrc", "val/loss"], "plot", "unknown flag --metrc val/loss; did you mean --metric val/loss?"),
    (["transfer", "--lr", "x"], "transfer", "argument --lr: expected a positive finite number, got 'x'"),
    (["fnd"], "", "invalid choice: 'fnd'"),
    (["--bogus", "find"], "", "unknown flag --bogus (lightning-tau --help lists the flags)"),
]


def test_usage_errors_two_lines_in_subcommand_s_terms(tmp_path: Path) -> None:
    argvs = [argv for argv, _, _ in USAGE_ERRORS]
    proc = subprocess.run(
        [sys.executable, "-c", _USAGE_PROBE, json.dumps(argvs)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(results) == len(USAGE_ERRORS), proc.stderr
    for (argv, command, expected), (code, err, heavy) in zip(USAGE_ERRORS, results):
        prog = f"lightning-tau {command}".strip()
        usage, error = err.splitlines()  # exactly two lines
        assert usage.startswith(f"usage: {prog} ") and f"{prog} " in usage[len("usage: ") + len(prog) :], usage
        assert error.startswith(f"{prog}: error: ") and expected in error, (argv, error)
        assert code == 2, argv
        assert heavy == [], (argv, heavy)  # before torch, Lightning, Optuna, matplotlib are imported
    assert "did you mean find?" in results[USAGE_ERRORS.index((["fnd"], "", "invalid choice: 'fnd'"))][1]
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(("command", "typed", "parsed"), [("demo", "dataset_size", "dataset-size"),
                                                          ("demo", "dataset-size", "dataset-size"),
                                                          ("find", "dataset-size", "dataset_size"),
                                                          ("find", "dataset_size", "dataset_size")])  # fmt: skip
def test_both_spellings_of_axis_accepted(command: str, typed: str, parsed: str) -> None:
    assert build_parser(command).parse_args([command, "--axis", typed]).axis == parsed


def test_find_help_shows_one_default_per_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser("find").parse_args(["find", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    fraction = text[text.index("--fraction FRACTION share") :].split(" --axis ")[0]
    assert fraction.count("default") == 1, fraction
    assert "(default: None)" not in text and "(default: False)" not in text


@pytest.mark.parametrize("bad", ["-5", "3.5", "1e308"])
def test_transfer_width_exponent_outside_documented_range_usage_error(
    bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["transfer", *TUNED, "--width", "64", "--target-width", "4x", "--width-exponent", bad])
    assert exit_info.value.code == 2
    line = _one_error_line(capsys.readouterr().err, "transfer")
    assert f"argument --width-exponent: got {bad!r}: use a number in [-1, 3]" in line
    assert main(["transfer", *TUNED, "--width", "64", "--target-width", "4x", "--width-exponent", "3"]) == 0
    assert main(["transfer", *TUNED, "--width", "64", "--target-width", "4x", "--width-exponent", "-1"]) == 0


def test_transfer_target_width_out_of_float_range_names_flag(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["transfer", *TUNED, "--width", "64", "--target-width", "1e308", "--width-exponent", "3"]
    assert main(argv) == 2
    line = _one_error_line(capsys.readouterr().err, "transfer")
    assert line.startswith("lightning-tau transfer: error: argument --target-width: 1e+308 with --width-exponent 3")
    assert "tau_iter" not in line


def test_no_help_text_gives_default_twice() -> None:
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    doubled = []
    for name, sub in commands.choices.items():
        formatter = sub._get_formatter()
        for action in sub._actions:
            action = copy.copy(action)
            action.help = action.help() if callable(action.help) else action.help  # demo's: computed for --help
            shown = formatter._get_help_string(action) or ""  # the help with the formatter's "(default: ...)"
            if "when not given" in shown and "(default:" in shown:
                doubled.append(f"{name} {action.option_strings}: {shown}")
    assert doubled == []
    find_help = " ".join(commands.choices["find"].format_help().split())
    assert "suggested) (default: none)" in find_help  # --pruner's default, said once
