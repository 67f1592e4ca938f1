"""What a new user meets first: the install commands, ``lightning-tau --help``, the examples' output."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lightning_tau.cli import SUBCOMMANDS, build_parser

REPO = Path(__file__).resolve().parents[2]


def _make_dry_run(*variables: str) -> list[str]:
    """The commands ``make install`` would run (``-n``: printed, not run; ``-B``: as on a fresh clone)."""
    make = shutil.which("make")
    assert make is not None, "`make` is missing: the README's two commands need it"
    done = subprocess.run(
        [make, "-n", "-B", "-C", str(REPO), "install", "VENV=/nonexistent/venv", *variables],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return [line for line in done.stdout.splitlines() if " torch==" in line and "pip install" in line]


def test_make_installs_torch_from_pip_s_index_unless_torch_index_given() -> None:
    (default,) = _make_dry_run()
    assert "--index-url" not in default and "--extra-index-url" not in default
    (cpu,) = _make_dry_run("TORCH_INDEX=https://download.pytorch.org/whl/cpu")
    assert "--index-url https://download.pytorch.org/whl/cpu torch==2.13.0" in cpu


def test_help_imports_neither_lightning_nor_torch() -> None:
    """``lightning-tau --help`` lists every command without importing the heavy modules (a wall clock is not
    asserted: the module list is what makes it fast)."""
    code = (
        "import sys\n"
        "from lightning_tau.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 0, exit.code\n"
        "print('HEAVY', sorted(m for m in ('lightning', 'torch', 'tensorboard', 'matplotlib') if m in sys.modules))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    for name in SUBCOMMANDS:
        assert f"    {name}" in done.stdout
    assert "HEAVY []" in done.stdout


def test_listed_help_each_subcommand_s_own() -> None:
    """The one-line help ``--help`` shows without importing a command is the one its module registers."""
    parser = build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    registered = {choice.dest: choice.help for choice in action._choices_actions}
    assert registered == {name: help_text for name, (help_text, _) in SUBCOMMANDS.items()}
    for name, (_, aliases) in SUBCOMMANDS.items():
        for alias in aliases:
            assert action.choices[alias] is action.choices[name]


@pytest.mark.parametrize(("typed", "command"), [*((name, name) for name in SUBCOMMANDS), ("report", "plot")])
def test_each_command_parses_with_only_module(typed: str, command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser(command).parse_args([typed, "--help"])
    assert exit_info.value.code == 0
    assert f"usage: lightning-tau {command}" in capsys.readouterr().out
