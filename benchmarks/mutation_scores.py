"""Mutation score per module from the last ``mutmut run`` (``make mutation`` runs it, then this).

Reads ``mutants/<module>.py.meta`` (mutmut 3 writes one per mutated file: each mutant's exit code) and prints a
Markdown table: mutants, killed (a failing test or a timeout), survived, no tests (no selected test calls the
mutated function), not yet checked, and the score ``killed / (mutants - not checked)``. With ``--survivors`` it
lists the mutants that were not killed, one per line, for ``mutmut show <name>``.

Usage: python benchmarks/mutation_scores.py [--survivors] [--goal 0.9]
Exit status 1 when a module with checked mutants scores below ``--goal``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

# mutmut 3's exit codes (mutmut/stats.py): 1 and 3 a failing test, 36/24/-24/152/255 a timeout (a kill too),
# 0 survived, 5/33 no test selected, None not run yet; anything else mutmut calls suspicious.
KILLED = {1, 3, 36, 24, -24, 152, 255}
SURVIVED = {0}
NO_TESTS = {5, 33}


def status(exit_code: int | None) -> str:
    if exit_code is None:
        return "not checked"
    if exit_code in KILLED:
        return "killed"
    if exit_code in SURVIVED:
        return "survived"
    if exit_code in NO_TESTS:
        return "no tests"
    return "suspicious"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutants", type=Path, default=Path("mutants"), help="mutmut's folder (default: mutants)")
    parser.add_argument("--survivors", action="store_true", help="also list every mutant that was not killed")
    parser.add_argument("--goal", type=float, default=0.9, help="lowest acceptable score per module (default 0.9)")
    args = parser.parse_args()
    metas = sorted(args.mutants.rglob("*.py.meta"))
    if not metas:
        print(f"no mutmut results under {args.mutants}/: run `make mutation` first", file=sys.stderr)
        return 2
    print("| module | mutants | killed | survived | no tests | suspicious | not checked | score |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    below = []
    not_killed: list[tuple[str, str]] = []
    for meta in metas:
        exit_codes = json.loads(meta.read_text())["exit_code_by_key"]
        counts = Counter(status(code) for code in exit_codes.values())
        checked = len(exit_codes) - counts["not checked"]
        score = counts["killed"] / checked if checked else float("nan")
        module = str(meta.relative_to(args.mutants))[: -len(".meta")]
        print(
            f"| `{module}` | {len(exit_codes)} | {counts['killed']} | {counts['survived']} | {counts['no tests']} "
            f"| {counts['suspicious']} | {counts['not checked']} | {score:.1%} |"
        )
        if checked and score < args.goal:
            below.append(module)
        not_killed += [(name, status(code)) for name, code in exit_codes.items() if status(code) != "killed"]
    if args.survivors:
        print()
        for name, what in not_killed:
            print(f"{name}: {what}")
    if below:
        print(f"\nbelow the goal of {args.goal:.0%}: {', '.join(below)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
