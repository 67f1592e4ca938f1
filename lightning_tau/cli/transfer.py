"""``lightning-tau transfer``: the weight decay of a bigger run that keeps a tuned run's EMA timescale (examples:
docs/mup.rst). Target sizes accept a multiple of the tuned value with an ``x`` suffix (``10x``) or an absolute
number.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from dataclasses import asdict

from lightning_tau import _checks
from lightning_tau.cli._args import positive_float
from lightning_tau.transfer import (
    GroupTransfer,
    TargetRun,
    TunedRun,
    check_exponents,
    format_transfer_table,
    target_tau_epoch,
    transfer_groups,
)

__all__ = ["add_parser", "run"]

_EPILOG = """\
examples:
  # 10x the data, same lr and batch: weight decay / 10
  lightning-tau transfer --lr 1e-3 --weight-decay 0.1 --dataset-size 50000 --batch-size 100 --target-dataset-size 10x
  # muP model 4x wider: hidden (matrix-like) weights get lr / 4 and weight decay x 4
  lightning-tau transfer --lr 1e-3 --weight-decay 0.1 --dataset-size 50000 --batch-size 100 --width 256 \\
      --target-width 1024
  # 4x the data by the exponent the finder measured (tau_epoch x 4^-0.5), 4x wider by Fan et al. (hidden wd x 4^0.5)
  lightning-tau transfer --lr 1e-3 --weight-decay 0.1 --dataset-size 12500 --batch-size 100 --width 256 \\
      --target-dataset-size 4x --target-width 4x --size-exponent -0.5 --width-exponent 0.5
  # 4x the global batch at the same lr by a fixed weight decay (tau_epoch ∝ B^1: tau_epoch x 4)
  lightning-tau transfer --lr 1e-3 --weight-decay 0.1 --dataset-size 50000 --batch-size 100 \\
      --target-batch-size 4x --batch-exponent 1
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register the ``transfer`` subcommand on ``subparsers`` and return its parser."""
    parser = subparsers.add_parser(
        "transfer",
        help="Weight decay per param group for a bigger run that keeps a tuned run's timescale.",
        description=(
            "Tune small, train big: from a tuned AdamW run (lr, weight decay, dataset size N, global batch B,"
            " optionally width) compute tau_epoch = B / (lr * wd * N) and print the target run's per-group lr and"
            " weight decay at the same tau_epoch (muP: matrix-like groups get lr / s and weight decay x s), or by"
            " measured exponents: --size-exponent e (tau_epoch ∝ N^e), --batch-exponent e (tau_epoch ∝ B^e) and"
            " --width-exponent alpha (every group's"
            " timescale x S^(1-alpha) at the target's width multiplier S: hidden weight decay ∝ S^alpha)."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    tuned = parser.add_argument_group("tuned run")
    tuned.add_argument("--lr", type=positive_float, required=True, help="tuned base learning rate")
    tuned.add_argument("--weight-decay", type=positive_float, required=True, help="tuned base weight decay")
    tuned.add_argument(
        "--dataset-size", type=positive_float, required=True, help="tuned N (samples or tokens per epoch)"
    )
    tuned.add_argument("--batch-size", type=positive_float, required=True, help="tuned global B (same unit as N)")
    tuned.add_argument("--width", type=positive_float, default=None, help="tuned model width (for muP width transfer)")
    tuned.add_argument(
        "--base-width", type=positive_float, default=None, help="muP base width where s = 1 (default: --width)"
    )
    target = parser.add_argument_group("target run (each defaults to the tuned value; '10x' means 10 times it)")
    target.add_argument("--target-lr", type=_size, default=None, metavar="LR", help="target base learning rate")
    target.add_argument("--target-dataset-size", type=_size, default=None, metavar="N", help="target N")
    target.add_argument("--target-batch-size", type=_size, default=None, metavar="B", help="target global B")
    target.add_argument("--target-width", type=_size, default=None, metavar="WIDTH", help="target model width")
    target.add_argument(
        "--group",
        action="append",
        default=None,
        metavar="NAME=S",
        help="a target param group and its width multiplier s (repeatable); replaces the default groups",
    )
    rules = parser.add_argument_group("rules (each defaults to the paper's; give what the finder measured)")
    rules.add_argument(
        "--size-exponent",
        type=_exponent("size_exponent"),
        default=0.0,
        metavar="E",
        help="tau_epoch ∝ N^E from the tuned N to the target's (default 0: the same tau_epoch; -0.5 the 1/2 rules;"
        " -1 a fixed weight decay), in [-2, 2]",
    )
    rules.add_argument(
        "--width-exponent",
        type=_exponent("width_exponent"),
        default=1.0,
        metavar="ALPHA",
        help="every group's timescale x S^(1-ALPHA) at the target's muP width multiplier S, so the hidden weights'"
        " weight decay ∝ S^ALPHA (default 1: Wang & Aitchison; 0.5 Fan et al.; 0 a fixed hidden weight decay), in"
        f" [{WIDTH_EXPONENT_RANGE[0]:g}, {WIDTH_EXPONENT_RANGE[1]:g}]: the published rules span 0 to 1, and the range"
        " leaves room on each side for an exponent measured with `find --axis width` and its interval",
    )
    rules.add_argument(
        "--batch-exponent",
        type=_exponent("batch_exponent"),
        default=0.0,
        metavar="E",
        help="tau_epoch ∝ B^E from the tuned global B to the target's (default 0: the same tau_epoch, weight decay ∝"
        " B at a fixed lr; 1 a fixed weight decay at a fixed lr; with lr ∝ B^m and weight decay ∝ B^k, E = 1-k-m),"
        " in [-2, 2]; the tuned run is the reference B",
    )
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Print the transfer table for parsed ``args``; return the exit code."""
    try:
        tuned = TunedRun(args.lr, args.weight_decay, args.dataset_size, args.batch_size, args.width)
        target = TargetRun(
            lr=_resolve(args.target_lr, tuned.lr, "--target-lr"),
            dataset_size=_resolve(args.target_dataset_size, tuned.dataset_size, "--target-dataset-size"),
            batch_size=_resolve(args.target_batch_size, tuned.batch_size, "--target-batch-size"),
            width=_resolve(args.target_width, tuned.width, "--target-width"),
        )
        _check_tuned_timescale(tuned)
        if args.target_width is not None and not args.target_width[1] and args.width is None:
            if args.base_width is None and args.group is None:
                raise ValueError(
                    f"`--target-width {args.target_width[0]:g}` needs the tuned run's width to compare with: give"
                    " --width (the tuned width) or --base-width (mup's base width)."
                )
        groups = None if args.group is None else dict(_group(g) for g in args.group)
        exponents = {
            "size_exponent": args.size_exponent,
            "width_exponent": args.width_exponent,
            "batch_exponent": args.batch_exponent,
        }
        try:
            rows = transfer_groups(tuned, target, base_width=args.base_width, width_mults=groups, **exponents)
        except ValueError as error:
            if (problem := _width_overflow(args, error)) is not None:
                print(f"lightning-tau transfer: error: {problem}", file=sys.stderr)
                return 2
            raise
        _check_target_timescale(rows, target, tuned, args.size_exponent, args.batch_exponent)
    except ValueError as error:
        raise SystemExit(f"lightning-tau transfer: error: {error}") from None
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
    else:
        print(format_transfer_table(tuned, target, rows, **exponents))
    return 0


def _width_overflow(args: argparse.Namespace, error: ValueError) -> str | None:
    """The usage error, in flag terms, of a target width so far from the tuned one that ``s ** ALPHA`` leaves the
    floating-point range (the learning rate or weight decay becomes 0 or infinite, and the error names ``tau_iter``),
    or ``None`` for any other error."""
    if args.target_width is None or "tau_iter" not in str(error):
        return None
    number, relative = args.target_width
    shown = f"{number:g}x" if relative else f"{number:g}"
    return (
        f"argument --target-width: {shown} with --width-exponent {args.width_exponent:g} scales the learning rate or"
        " weight decay out of floating-point range: give a target width within a few orders of magnitude of the tuned"
        " one."
    )


def _check_tuned_timescale(tuned: TunedRun) -> None:
    """A tuned run with ``lr * weight_decay >= 1`` (a timescale of one step or less) is an error, as in the callback."""
    rate = tuned.lr * tuned.weight_decay
    if rate >= 1:
        raise ValueError(
            f"`--lr {tuned.lr:g} --weight-decay {tuned.weight_decay:g}` give `lr * weight_decay = {rate:.4g}` (>= 1),"
            f" a timescale of {1 / rate:.4g} optimizer steps: every step would shrink the weights to zero or past it."
            f" Check the tuned values; AdamW needs `weight_decay` below 1 / lr = {1 / tuned.lr:.4g}."
        )


def _check_target_timescale(
    rows: list[GroupTransfer],
    target: TargetRun,
    tuned: TunedRun,
    size_exponent: float = 0.0,
    batch_exponent: float = 0.0,
) -> None:
    """A target group whose ``tau_iter`` is one step or less (``lr * weight_decay >= 1``) is an error."""
    shortest = min(rows, key=lambda r: r.tau_iter)
    tau_iter = shortest.tau_iter
    if tau_iter <= 1:
        n = tuned.dataset_size if target.dataset_size is None else target.dataset_size
        b = tuned.batch_size if target.batch_size is None else target.batch_size
        held = target_tau_epoch(tuned, n, size_exponent, batch_size=b, batch_exponent=batch_exponent)
        same = size_exponent == 0.0 and batch_exponent == 0.0
        what = f"the tuned tau_epoch={tuned.tau_epoch:.4g}" if same else f"tau_epoch={held:.4g}"
        where = "in every group" if all(r.tau_iter == tau_iter for r in rows) else f"in group {shortest.name!r}"
        raise ValueError(
            f"the target run (N={n:g}, B={b:g}: M={n / b:.4g} steps per epoch) would hold {what} as"
            f" tau_iter={tau_iter:.4g} optimizer steps, so `lr * weight_decay = {1 / tau_iter:.4g}` (>= 1) {where}:"
            " every step would shrink the weights to zero or past it. Use a larger --target-dataset-size or a"
            f" smaller --target-batch-size (M above {1 / shortest.tau_epoch:.4g} steps per epoch)."
        )


def _size(text: str) -> tuple[float, bool]:
    """``"10x"`` -> ``(10.0, True)`` (a multiple of the tuned value); ``"5e5"`` -> ``(500000.0, False)``.

    Example:
        >>> _size("10x"), _size("5e5")
        ((10.0, True), (500000.0, False))
        >>> _size("0x")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: expected a positive finite number or a positive multiple such as '10x', got '0x'
    """
    relative = text.strip().lower().endswith("x")
    number = text.strip()[:-1] if relative else text
    try:
        value = float(number)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number or a multiple such as '10x'") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(
            f"expected a positive finite number or a positive multiple such as '10x', got {text!r}"
        )
    return value, relative


#: The ``--width-exponent`` values ``transfer`` accepts (``transfer_groups`` takes any finite number): the published
#: rules' alpha is 0 (a fixed weight decay), 0.5 (Fan et al.) or 1 (Wang & Aitchison); a measured exponent may fall
#: outside that by its interval, not by more (s ** 3 is already 64x per 4x of width).
WIDTH_EXPONENT_RANGE = (-1.0, 3.0)


def _exponent(name: str) -> Callable[[str], float]:
    """An argparse type for ``--size-exponent`` / ``--batch-exponent`` / ``--width-exponent``: a finite number, the
    size and batch ones in [-2, 2], the width one in :data:`WIDTH_EXPONENT_RANGE`.

    Example:
        >>> _exponent("size_exponent")("-0.5")
        -0.5
        >>> _exponent("size_exponent")("3")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: got '3': use a finite number in [-2, 2], e of tau_epoch ∝ N ** e ...
        >>> _exponent("width_exponent")("-5")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: got '-5': use a number in [-1, 3] (the published rules' alpha is 0 to 1; ...
    """

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}") from None
        try:
            if name == "batch_exponent":
                _checks.batch_exponent("transfer", value)
            else:
                check_exponents(**{"size_exponent": 0.0, "width_exponent": 1.0, name: value})
        except ValueError as err:
            raise argparse.ArgumentTypeError(f"got {text!r}: {str(err).split(' is not valid: ', 1)[-1]}") from None
        low, high = WIDTH_EXPONENT_RANGE
        if name == "width_exponent" and not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"got {text!r}: use a number in [{low:g}, {high:g}] (the published rules' alpha is 0 to 1; a measured"
                " exponent may lie a little outside)"
            )
        return value

    return parse


def _resolve(value: tuple[float, bool] | None, tuned: float | None, flag: str) -> float | None:
    if value is None:
        return None
    number, relative = value
    if not relative:
        return number
    if tuned is None:
        raise ValueError(f"`{flag} {number:g}x` is relative to the tuned value, which was not given.")
    return number * tuned


def _group(text: str) -> tuple[str, float]:
    name, sep, mult = text.partition("=")
    try:
        if not sep or not name:
            raise ValueError
        value = float(mult)
    except ValueError:
        raise ValueError(f"`--group {text}` is not NAME=S (for example `--group hidden=4`).") from None
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(
            f"`--group {text}`: the width multiplier S must be a positive finite number (for example"
            " `--group hidden=4`)."
        )
    return name, value
