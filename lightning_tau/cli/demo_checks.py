"""The usage checks of ``lightning-tau demo``'s rows: which options a ``(--task, --axis)`` row does not read, and what a
filled-in configuration cannot run (too few points, a timescale of one optimizer step or less, sizes the data does not
hold), each as the one-line error the command prints (exit code 2), before any run trains.

More: docs/results.rst, module notes.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lightning_tau.demos.batch import SyntheticBatchConfig
    from lightning_tau.demos.size import SizeConfig
    from lightning_tau.demos.text import TextDemoConfig
    from lightning_tau.demos.text_width import TextWidthConfig
    from lightning_tau.demos.width import WidthConfig

__all__ = [
    "BATCH_ONLY",
    "DATASET_SIZE_ONLY",
    "DIGITS_ONLY",
    "PLAIN",
    "SYNTHETIC_REJECTS",
    "TEXT_ONLY",
    "WIDTH_ONLY",
    "batch_grid_problem",
    "digits_size_problem",
    "digits_size_rejects",
    "digits_width_rejects",
    "digits_width_task_problem",
    "join_floats",
    "join_ints",
    "synthetic_batch_rejects",
    "synthetic_size_rejects",
    "text_size_problem",
    "text_size_rejects",
    "text_width_rejects",
    "text_width_task_problem",
    "too_short_timescale",
    "two_points",
    "width_grid_problem",
]

#: The options only some rows read (typed for another row: an error, see :func:`_typed`).
TEXT_ONLY = ("fractions", "max_tokens", "val_tokens", "block_size", "n_layer", "n_head", "n_embd", "accelerator")
SYNTHETIC_REJECTS = ("label_noise",)
DIGITS_ONLY = ("sizes", "hidden", "norm", "label_noise", "depth")
WIDTH_ONLY = ("widths", "weight_decays", "lr_base", "no_decay_input")
DATASET_SIZE_ONLY = ("sizes", "tau_epochs", "lr", "hidden", "norm", "label_noise")
BATCH_ONLY = ("batch_sizes", "lr_scaling", "beta2", "train_size", "workers")

#: Options with a plain default (the digits demo's, the same as the synthetic task's; filled in by :func:`_main`):
#: typed means another value. The others (``--sizes`` and ``--norm`` among them: their defaults differ by task) are
#: left out of the namespace unless typed.
PLAIN = ("lr", "schedule", "hidden", "label_noise")


def _flags(names: Sequence[str]) -> str:
    return " ".join(f"--{name.replace('_', '-')}" for name in names)


def _typed(args: argparse.Namespace, names: Sequence[str]) -> list[str]:
    """Of ``names``, those typed on the command line: given (a ``SUPPRESS`` default), or for an option with a plain
    default (:data:`PLAIN`) another value than the digits demo's."""
    from lightning_tau.demos.size import SizeConfig

    d = SizeConfig()
    return [n for n in names if (getattr(args, n) != getattr(d, n) if n in PLAIN else hasattr(args, n))]


def _batch_typed(args: argparse.Namespace) -> str | None:
    """The batch-size row's options typed for another row, as its error, or ``None``."""
    if given := _typed(args, BATCH_ONLY):
        return f"{_flags(given)} apply to `--task synthetic --axis batch-size` only (got --axis {args.axis})."
    return None


def digits_size_rejects(args: argparse.Namespace) -> str | None:
    """``--task digits`` (dataset-size axis): the text, width and batch-size options, typed."""
    if problem := _batch_typed(args):
        return problem
    if given := _typed(args, TEXT_ONLY):
        return f"{_flags(given)} apply to `--task text` only (got --task digits)."
    if given := _typed(args, WIDTH_ONLY):
        return f"{_flags(given)} apply to `--axis width` only (got --axis dataset-size)."
    return None


def digits_size_problem(config: SizeConfig) -> str | None:
    """``--task digits``: sizes the digits do not hold, a too short timescale, fewer than two sizes."""
    try:
        config.fractions()  # the sizes fit in the digits not held out
    except ValueError as err:
        return str(err)
    return too_short_timescale(config) or two_points(config.sizes, "--sizes")


def synthetic_size_rejects(args: argparse.Namespace) -> str | None:
    """``--task synthetic``: the text, label-noise, width and batch-size options, typed."""
    if problem := _batch_typed(args):
        return problem
    if given := _typed(args, TEXT_ONLY + SYNTHETIC_REJECTS):
        return f"{_flags(given)} do not apply to `--task synthetic` (its labels are noisy by construction)."
    if given := _typed(args, WIDTH_ONLY):
        return f"{_flags(given)} apply to `--axis width` only (got --axis dataset-size)."
    return None


def synthetic_batch_rejects(args: argparse.Namespace) -> str | None:
    """``--task synthetic --axis batch-size``: the text, label-noise, width and dataset-size options, typed."""
    if given := _typed(args, TEXT_ONLY + SYNTHETIC_REJECTS):
        return f"{_flags(given)} do not apply to `--task synthetic` (its labels are noisy by construction)."
    if given := _typed(args, WIDTH_ONLY):
        return f"{_flags(given)} apply to `--axis width` only (got --axis batch-size)."
    if given := _typed(args, ("sizes", "batch_size")):
        return (
            f"{_flags(given)} apply to `--axis dataset-size` only; `--axis batch-size` trains every --batch-sizes B on"
            " the same --train-size samples."
        )
    return None


def batch_grid_problem(config: SyntheticBatchConfig) -> str | None:
    """``--axis batch-size``: fewer than two batch sizes, a batch larger than the training set, a ``tau_epoch`` of
    one optimizer step or less at the largest batch (the fewest steps per epoch)."""
    sizes = sorted(config.batch_sizes)
    if len(sizes) < 2:
        return f"--batch-sizes {join_ints(sizes)}: give at least two batch sizes to compare."
    if sizes[-1] > config.train_size:
        return (
            f"--batch-sizes {join_ints(sizes)}: B={sizes[-1]} is more than the --train-size {config.train_size}"
            " samples, so an epoch would not hold one full batch. Use batch sizes up to --train-size."
        )
    steps = config.steps_per_epoch(sizes[-1])
    short = [tau for tau in config.tau_epochs if tau * steps <= 1]
    if short:
        return _short_message(short, f"N={config.train_size}, B={sizes[-1]}", steps)
    return None


def two_points(values: Sequence[Any], flag: str) -> str | None:
    """The error for fewer than two dataset sizes in ``flag``, or ``None``."""
    if len(values) < 2:
        return f"{flag} {' '.join(f'{v:g}' for v in values)}: give at least two dataset sizes to compare."
    return None


def too_short_timescale(config: SizeConfig) -> str | None:
    """The error for a ``tau_epoch`` of one optimizer step or less at some size (``lr * weight_decay >= 1``), or
    of more optimizer steps than a float holds."""
    for size in sorted(config.sizes):
        steps = math.ceil(size / config.batch_size)
        endless = [tau for tau in config.tau_epochs if not math.isfinite(tau * steps)]
        if endless:
            return (
                f"--tau-epochs {join_floats(endless)}: at N={size}, B={config.batch_size} an epoch is {steps} optimizer"
                f" steps, so tau_epoch={endless[0]:g} is more optimizer steps than a float holds. Use --tau-epochs"
                f" below {sys.float_info.max / steps:.3g}; good values are several epochs."
            )
        short = [tau for tau in config.tau_epochs if tau * steps <= 1]
        if short:
            return _short_message(short, f"N={size}, B={config.batch_size}", steps)
    return None


def _short_message(short: Sequence[float], where: str, steps: int) -> str:
    return (
        f"--tau-epochs {join_floats(short)}: at {where} an epoch is {steps} optimizer step{'s' if steps > 1 else ''},"
        f" so tau_epoch={short[0]:g} is {short[0] * steps:.3g} steps (lr * weight_decay >= 1 zeroes or flips the"
        f" weights every step). Use --tau-epochs above {1 / steps:.3g} (one step); good values are several epochs."
    )


def text_size_rejects(args: argparse.Namespace) -> str | None:
    """``--task text`` (dataset-size axis): the width, digits and batch-size options, typed."""
    if problem := _batch_typed(args):
        return problem
    given = _typed(args, WIDTH_ONLY) + _typed(args, DIGITS_ONLY)
    if given:
        return (
            f"{_flags(given)} do not apply to `--task text`; it takes --fractions, --max-tokens, --val-tokens,"
            " --block-size, --n-layer, --n-head, --n-embd and --accelerator."
        )
    return None


def text_size_problem(config: TextDemoConfig) -> str | None:
    """``--task text``: heads that do not divide the width, sizes the corpus does not hold, a too short timescale,
    fewer than two fractions."""
    if config.n_embd % config.n_head:
        return f"--n-embd {config.n_embd} must be a multiple of --n-head {config.n_head} (equal head widths)."
    try:
        from lightning_tau.demos.text import load_stdlib_corpus

        steps = {}
        for fraction in config.sizes:  # every size has at least one batch, the validation set one window
            data = config.datamodule(fraction)
            steps[fraction] = data.dataset_size // data.tokens_per_step
        load_stdlib_corpus(config.max_tokens, config.val_tokens)  # the corpus holds that many bytes
    except (ValueError, FileNotFoundError) as err:
        return str(err)
    fraction = min(steps, key=steps.__getitem__)
    short = [tau for tau in config.tau_epochs if tau * steps[fraction] <= 1]
    if short:
        return _short_message(short, f"fraction {fraction:g}", steps[fraction])
    return two_points(config.sizes, "--fractions")


def width_grid_problem(config: WidthConfig | TextWidthConfig) -> str | None:
    """What is wrong with a width sweep's grid (too few widths or λ_base, a step that zeroes the weights), or None."""
    if len(config.widths) < 2:
        return f"--widths {join_ints(config.widths)}: give at least two widths to compare."
    if len(config.weight_decays) < 3:
        return (
            f"--weight-decays {' '.join(f'{x:g}' for x in config.weight_decays)}: give at least three λ_base values"
            " (an interior optimum needs a worse neighbour on each side)."
        )
    if config.lr * config.weight_decays[-1] >= 1:
        return (
            f"--lr-base {config.lr:g} x --weight-decays {config.weight_decays[-1]:g} >= 1: every step would shrink"
            " the decaying weights to zero or past it (lr_base x λ_base is what the base width and the vector-like"
            " weights step with). Use a smaller --lr-base or λ_base."
        )
    return None


def text_width_rejects(args: argparse.Namespace) -> str | None:
    """``--task text --axis width``: the options it does not read, typed."""
    if problem := _batch_typed(args):
        return problem
    given = _typed(args, ("fractions", "tau_epochs", "n_embd", *DIGITS_ONLY, "lr"))
    if given:
        return (
            f"{_flags(given)} do not apply to `--task text --axis width`; it takes --widths (the n_embd values),"
            " --weight-decays, --lr-base, --no-decay-input, --seeds, --epochs, --batch-size, --schedule,"
            " --max-tokens, --val-tokens, --block-size, --n-layer, --n-head and --accelerator."
        )
    return None


def text_width_task_problem(config: TextWidthConfig) -> str | None:
    """``--task text --axis width``: widths the heads do not divide, sizes the corpus does not hold."""
    odd = [w for w in config.widths if w % config.n_head]
    if odd or 2 * config.base_width % config.n_head:
        return (
            f"--widths {join_ints(odd or config.widths)}: every width must be a multiple of --n-head {config.n_head}"
            " (the heads are the same at every width)."
        )
    from lightning_tau.demos.text import load_stdlib_corpus

    try:
        config.datamodule()  # at least one batch, the validation set one window
        load_stdlib_corpus(config.max_tokens, config.val_tokens)  # the corpus holds that many bytes
    except (ValueError, FileNotFoundError) as err:
        return str(err)
    return None


def digits_width_rejects(args: argparse.Namespace) -> str | None:
    """``--axis width`` on digits: the text, dataset-size and batch-size options, typed."""
    if problem := _batch_typed(args):
        return problem
    if given := _typed(args, TEXT_ONLY):
        return f"{_flags(given)} apply to `--task text` only (got --task digits)."
    if given := _typed(args, DATASET_SIZE_ONLY):
        return (
            f"{_flags(given)} apply to `--axis dataset-size` only; for `--axis width` use --widths,"
            " --weight-decays and --lr-base."
        )
    return None


def digits_width_task_problem(config: WidthConfig) -> str | None:
    """``--axis width`` on digits: a depth without a hidden width x width matrix."""
    if config.depth < 2:
        return (
            f"--depth {config.depth}: the width demo needs depth >= 2 (at least one hidden width x width matrix,"
            " the only weights μP's lr / s touches)."
        )
    return None


def join_ints(values: Sequence[int]) -> str:
    """``values`` as the command line writes them: ``16 64 256``."""
    return " ".join(str(v) for v in values)


def join_floats(values: Sequence[float]) -> str:
    """``values`` as the command line writes them: ``0.5 2 8``."""
    return " ".join(f"{v:g}" for v in values)
