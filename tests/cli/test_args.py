"""``lightning_tau/cli/_args.py``: the parser class of ``lightning-tau`` and its subcommands, here on its own (the
commands' two-line usage errors, in a subprocess that checks nothing heavy was imported, are in
``tests/cli/test_errors.py``)."""

from __future__ import annotations

import pytest

from lightning_tau.cli import build_parser
from lightning_tau.cli._args import CommandParser


def _parser() -> CommandParser:
    parser = CommandParser(prog="lightning-tau transfer")
    for flag in ("--lr", "--out", "--fraction"):
        parser.add_argument(flag)
    return parser


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        (["-lr", "3"], "unknown flag -lr 3; did you mean --lr 3?"),
        (["-l", "3"], "unknown flag -l 3; did you mean --lr 3?"),  # one dash and one letter short
        (["-ot=x"], "unknown flag -ot=x; did you mean --out=x?"),
        (["-fractoin", "0.1"], "unknown flag -fractoin 0.1; did you mean --fraction 0.1?"),
    ],
)
def test_single_dash_typo_of_flag_gets_did_you_mean(typed: list[str], expected: str) -> None:
    assert _parser().unknown_words_message(typed, typed) == expected


def test_single_dash_typo_through_subcommand_usage_error_naming_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit:
        build_parser("find").parse_args(["find", "-fractoin", "0.1"])
    assert exit.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "lightning-tau find: error: unknown flag -fractoin 0.1; did you mean --fraction 0.1?"
    )


def test_typo_of_required_flag_reported_as_typo_not_as_missing(capsys: pytest.CaptureFixture[str]) -> None:
    """argparse checks required flags before it reports unknown words: `-lr` for the required `--lr` said
    "the following arguments are required: --lr"; the typo is what the user should hear about."""
    argv = ["transfer", "-lr", "1e-3", "--weight-decay", "0.1", "--dataset-size", "50000", "--batch-size", "100"]
    with pytest.raises(SystemExit) as exit:
        build_parser("transfer").parse_args(argv)
    assert exit.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "lightning-tau transfer: error: unknown flag -lr 1e-3; did you mean --lr 1e-3?"
    )
    with pytest.raises(SystemExit):  # nothing misspelt: the missing flag is named as argparse does
        build_parser("transfer").parse_args(argv[:1] + argv[3:])
    assert capsys.readouterr().err.splitlines()[-1].endswith("the following arguments are required: --lr")
