"""``lightning-tau demo``: the timescale finder's axes on bundled, offline demo tasks, with figures and TensorBoard.

More: docs/results.rst, module notes.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from lightning_tau.cli._args import (
    fraction_above_zero,
    fraction_below_one,
    output_dir_problem,
    positive_float,
    positive_int,
    random_seed,
)
from lightning_tau.cli.demo_checks import PLAIN
from lightning_tau.cli.demo_checks import join_floats as _floats
from lightning_tau.cli.demo_checks import join_ints as _ints

if TYPE_CHECKING:  # the rows' names, read from demo_presets on first use (__getattr__)
    from lightning_tau.cli.demo_presets import (
        PRESETS,
        QUICK,
        QUICK_SYNTHETIC,
        QUICK_SYNTHETIC_BATCH,
        QUICK_TEXT,
        QUICK_TEXT_WIDTH,
        QUICK_WIDTH,
        SUMMARY_NAME,
        DemoConfig,
        Preset,
    )

__all__ = [
    "AXES",
    "PRESETS",
    "QUICK",
    "QUICK_SYNTHETIC",
    "QUICK_SYNTHETIC_BATCH",
    "QUICK_TEXT",
    "QUICK_TEXT_WIDTH",
    "QUICK_WIDTH",
    "SUMMARY_NAME",
    "TASKS",
    "DemoConfig",
    "Preset",
    "add_parser",
    "next_sweep_dir",
    "run_preset",
]

#: Values of ``--axis``.
AXES = ("dataset-size", "width", "batch-size")

#: Values of ``--task``.
TASKS = ("digits", "synthetic", "text")


def next_sweep_dir(out: Path) -> Path:
    """``out/sweep_K`` with the smallest ``K`` not taken yet (so a second demo never overwrites the first).

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> next_sweep_dir(root).name
        'sweep_0'
        >>> (root / "sweep_0").mkdir(); (root / "sweep_3").mkdir()
        >>> next_sweep_dir(root).name
        'sweep_4'
    """
    taken = [int(m.group(1)) for p in out.glob("sweep_*") if (m := re.fullmatch(r"sweep_(\d+)", p.name))]
    return out / f"sweep_{max(taken) + 1 if taken else 0}"


#: The names built from the demo tasks' modules (torch, Lightning): :mod:`~lightning_tau.cli.demo_presets`', read from
#: this module when first needed.
_LOADED = (
    "DemoConfig",
    "Preset",
    "QUICK",
    "QUICK_SYNTHETIC",
    "QUICK_SYNTHETIC_BATCH",
    "QUICK_WIDTH",
    "QUICK_TEXT",
    "QUICK_TEXT_WIDTH",
    "PRESETS",
    "SUMMARY_NAME",
)


def _presets() -> ModuleType:
    """The rows' module, :mod:`~lightning_tau.cli.demo_presets`: importing it imports the demo tasks (torch,
    Lightning), which parsing needs none of, so a usage error comes before torch is imported."""
    from lightning_tau.cli import demo_presets

    return demo_presets


def __getattr__(name: str) -> Any:
    """The names of :data:`_LOADED`, from :mod:`~lightning_tau.cli.demo_presets` on first use (PEP 562)."""
    if name in _LOADED:
        return getattr(_presets(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run_preset(preset: Preset, config: Any, out: Path, *, plot: bool = True, progress: bool = True) -> Path:
    """Run ``config`` with the row's engine into a new ``out/sweep_K``; return it."""
    sweep_dir = next_sweep_dir(out)
    sweep_dir.mkdir(parents=True)
    from lightning_tau._quiet import quiet_sweep

    with quiet_sweep(single_thread=True):
        preset.run(config, sweep_dir, plot, progress)
    return sweep_dir


def _main(args: argparse.Namespace) -> int:
    """Fill the ``(--task, --axis)`` row's configuration from argparse, check it, run the finder's axis."""
    presets = _presets()
    digits = presets.SizeConfig()
    for name in PLAIN:  # not typed: the digits demo's value (the parser leaves them out so as not to import it)
        if not hasattr(args, name):
            setattr(args, name, getattr(digits, name))
    problem = output_dir_problem(args.out, "--out")
    if problem:
        return _error(problem)
    if (args.task, args.axis) not in presets.PRESETS:
        axes = " and ".join(f"--axis {a}" for t, a in presets.PRESETS if t == args.task)
        return _error(f"--task {args.task} --axis {args.axis}: the {args.task} task has {axes} only.")
    preset = presets.PRESETS[(args.task, args.axis)]
    problem = preset.rejects(args)
    if problem:
        return _error(problem)
    config = preset.config(**vars(preset.quick if args.quick else preset.config()))
    for name, attr in preset.always + (() if args.quick else preset.options):
        if hasattr(args, name):  # given on the command line (or a plain option with its default)
            value = getattr(args, name)
            if attr in ("sizes", "widths", "weight_decays", "batch_sizes"):
                value = sorted(dict.fromkeys(value))  # duplicates would train the same runs twice
            elif attr in ("seeds", "tau_epochs"):
                value = list(dict.fromkeys(value))
            setattr(config, attr, value)
    if not args.quick and hasattr(args, "no_decay_input"):
        config.decay_input = False
    problem = preset.task_problem(config)
    if problem:
        return _error(problem)
    try:
        preset.load()
    except ImportError as err:
        print(f"lightning-tau demo: error: {err}", file=sys.stderr)
        return 1
    run_preset(preset, config, args.out, plot=not args.no_plot, progress=not args.no_progress)
    return 0


# --- command line ----------------------------------------------------------------------------------------------


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``demo``.

    The help texts that show the demo tasks' defaults are functions, called only for ``--help`` (:class:`_Later`):
    parsing imports no demo task, so torch is not imported before a usage error.
    """
    d, w, t = _Later("SizeConfig"), _Later("WidthConfig"), _Later("TextDemoConfig")
    syn, batch = _Later("SyntheticSizeConfig"), _Later("SyntheticBatchConfig")
    quick_width, quick_text, quick_text_width = _Later("QUICK_WIDTH"), _Later("QUICK_TEXT"), _Later("QUICK_TEXT_WIDTH")
    quick_batch = _Later("QUICK_SYNTHETIC_BATCH")
    parser = subparsers.add_parser(
        "demo",
        help="The timescale finder's dataset-size (width, batch-size) axis on bundled or synthetic data: runs, figures,"
        " verdict.",
        description=(
            "Run the timescale finder's dataset-size axis on a small MLP over scikit-learn's bundled 8x8 digits"
            " (nothing is downloaded): for every training-set size x tau_epoch x seed a Lightning fit with"
            " TimescaleCallback setting AdamW's weight decay to B / (lr * N * tau_epoch), every run logged to"
            " TensorBoard; print the exponent of the best tau_epoch in N with its interval and the verdict on 'tune on"
            " a fraction, train on all', and plot validation loss against weight decay and against tau_epoch."
            " `--axis width` runs the finder's width axis instead: μP width x base weight decay λ_base at a fixed"
            " base learning rate, TimescaleCallback(width_exponent=1) in every run, and the exponent of the best"
            " λ_base in the width (needs mup). `--task text` runs the same on a small byte-level GPT over the"
            " standard library's own .py files (--fractions of the corpus; with --axis width, --widths are n_embd"
            " values). `--task synthetic --axis batch-size` runs the finder's batch-size axis on the synthetic"
            " teacher-student task: the tau_epoch grid at every global batch size B (--batch-sizes) on the same"
            " samples for the same epochs, so fewer steps at a larger B, the batch set through the model's"
            " batch_size as Lightning's BatchSizeFinder sets it; it prints the exponent of the best tau_epoch in B and"
            " decides each published batch rule (tau_epoch constant; a fixed λ) with its loss cost. Each call writes a"
            " new OUT/sweep_K directory with the runs, the figures and a summary.json (the finder's result and every"
            " curve)."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--axis",
        choices=AXES,
        default="dataset-size",
        help="what the sweep varies: 'dataset-size' (tau_epoch x N, TimescaleCallback in every run), 'width'"
        " (the finder's width axis: μP width x λ_base at a fixed lr; needs mup) or 'batch-size' (--task synthetic:"
        " the finder's batch-size axis, tau_epoch x global batch B on the same data and epochs, deciding the batch"
        " rules; 'batch_size' too)",
    )
    parser.add_argument(
        "--task",
        choices=TASKS,
        default="digits",
        help="'digits': an MLP on scikit-learn's bundled digits; 'synthetic': an MLP on a teacher network's noisy"
        " labels, generated by lightning_tau.demos.synthetic (N not capped by a dataset; what `make demo` runs;"
        " the dataset-size and batch-size axes); 'text': a byte-level GPT on the standard library's own sources (with"
        " --axis width: the μP width sweep, --widths being n_embd)",
    )
    parser.add_argument("--out", type=Path, default=Path("tau_runs"), help="root directory for the sweep's logs")

    def add(group: Any, flag: str, help: Help, kind: Any = positive_int, many: str = "", **kwargs: Any) -> None:
        """An option left out of the namespace unless typed; ``many``: its metavar, nargs +."""
        if many:
            kwargs.update(nargs="+", metavar=many)
        group.add_argument(flag, type=kind, help=help, default=argparse.SUPPRESS, **kwargs)

    add(
        parser,
        "--sizes",
        lambda: (
            "training-set sizes, at least two (digits: at most 1797 - 397 = 1400, each the finder's fraction"
            f" N / 1400 of the digits not held out; default {_ints(d.sizes)}; --task synthetic: any, default"
            f" {_ints(syn.sizes)})"
        ),
        many="N",
    )
    add(
        parser,
        "--tau-epochs",
        lambda: (
            "EMA timescales in epochs (one weight decay per size each; default: digits"
            f" {_floats(d.tau_epochs)}; --task synthetic {_floats(syn.tau_epochs)}; --task text"
            f" {_floats(t.tau_epochs)}; --axis batch-size {_floats(batch.tau_epochs)})"
        ),
        positive_float,
        "TAU",
    )
    add(
        parser,
        "--seeds",
        lambda: (
            f"seeds per setting; the plot averages over them (default: {_ints(d.seeds)}; --task synthetic:"
            f" {_ints(syn.seeds)}; --axis width: {_ints(w.seeds)}; --axis batch-size: {_ints(batch.seeds)})"
        ),
        random_seed,
        "SEED",
    )
    add(
        parser,
        "--epochs",
        lambda: (
            f"epochs per run, the same for every run (default: {d.epochs}; --axis width: {w.epochs}; --axis"
            f" batch-size: {batch.epochs})"
        ),
    )
    add(
        parser,
        "--batch-size",
        lambda: f"batch size B (default: {d.batch_size}; --task text: {t.batch_size} windows of --block-size tokens)",
    )
    add(parser, "--lr", lambda: f"AdamW's initial learning rate (default: {d.lr:g})", positive_float)
    add(
        parser,
        "--schedule",
        lambda: f"learning-rate schedule (cosine decays to 0.1 x lr; weight decay stays fixed; default: {d.schedule})",
        None,
        choices=("cosine", "constant"),
    )
    add(parser, "--hidden", lambda: f"MLP width (default: {d.hidden})")
    add(
        parser,
        "--depth",
        lambda: f"MLP linear layers before the output layer (default: {d.depth}; --axis width: {w.depth})",
    )
    add(
        parser,
        "--norm",
        lambda: (
            "'layer': a LayerNorm after every linear layer (scale-invariant); 'none': plain MLP (default: digits"
            f" {d.norm}; --task synthetic {syn.norm})"
        ),
        None,
        choices=("layer", "none"),
    )
    add(
        parser,
        "--label-noise",
        lambda: f"fraction of training labels randomized (default: {d.label_noise:g})",
        fraction_below_one,
    )
    width = parser.add_argument_group("--axis width only")
    add(
        width,
        "--widths",
        lambda: f"hidden widths; the smallest is μP's base width (default: {_ints(w.widths)})",
        many="WIDTH",
    )
    add(
        width,
        "--weight-decays",
        lambda: (
            "the λ_base grid; each value is the finder's tau_epoch = 1 / (lr_base M λ_base), so"
            f" the hidden matrices get s λ_base (default: {_floats(w.weight_decays)})"
        ),
        positive_float,
        "LAMBDA",
    )
    add(
        width,
        "--lr-base",
        lambda: f"η_base, fixed for the whole sweep; hidden matrices get η_base / s (default: {w.lr:g})",
        positive_float,
    )
    width.add_argument(
        "--no-decay-input",
        action="store_true",
        default=argparse.SUPPRESS,
        help="decay only the hidden width x width matrices, not the 64 -> width input matrix",
    )
    batch_group = parser.add_argument_group("--task synthetic --axis batch-size only")
    add(
        batch_group,
        "--batch-sizes",
        lambda: (
            "global batch sizes B, at least two; each trains the tau_epoch grid on the same --train-size samples for"
            " the same --epochs (fewer steps at a larger B), set through the model's batch_size (default:"
            f" {_ints(batch.batch_sizes)})"
        ),
        many="B",
    )
    add(
        batch_group,
        "--lr-scaling",
        lambda: (
            "the lr across the batch sizes, --lr times (B / B_0)^m from the smallest B_0: none (m = 0), sqrt (1/2) or"
            " linear (1); the rules' exponents are 0 (tau_epoch constant) and 1 - m (a fixed λ) (default:"
            f" {batch.lr_scaling})"
        ),
        None,
        choices=("none", "sqrt", "linear"),
    )
    add(
        batch_group,
        "--beta2",
        lambda: (
            "Adam's β₂ at every batch: fixed (AdamW's 0.999), held in samples (β₂^(B / B_0), Marek et al. 2025),"
            " or both (the sweep fixed, then the largest B's best held too: each choice's paired cost)"
            f" (default: {batch.beta2})"
        ),
        None,
        choices=("fixed", "held", "both"),
    )
    add(batch_group, "--train-size", lambda: f"training samples N, the same at every B (default: {batch.train_size})")
    add(
        batch_group,
        "--workers",
        lambda: f"processes that train trials at once, one torch thread each (default: {batch.workers})",
    )
    text = parser.add_argument_group("--task text only")
    add(
        text,
        "--fractions",
        lambda: (
            "shares of the corpus's training windows to train on, at least two: the finder's"
            f" fractions (default: {_floats(t.sizes)})"
        ),
        fraction_above_zero,
        "F",
    )
    add(
        text,
        "--max-tokens",
        lambda: f"training bytes at fraction 1 (default: {t.max_tokens:,}; the corpus holds about 4 MB)",
    )
    add(text, "--val-tokens", lambda: f"validation bytes, from held-out files (default: {t.val_tokens:,})")
    for flag, field, what in (
        ("--block-size", "block_size", "context length in tokens (bytes)"),
        ("--n-layer", "n_layer", "transformer blocks"),
        ("--n-head", "n_head", "attention heads"),
        ("--n-embd", "n_embd", "embedding width"),
    ):
        add(text, flag, lambda field=field, what=what: f"{what} (default: {getattr(t, field)})")
    add(
        text,
        "--accelerator",
        lambda: f"the Trainer's accelerator: cpu, gpu, auto, ... (default: {t.accelerator})",
        str,
    )
    qw, qt, qtw, qb = quick_width, quick_text, quick_text_width, quick_batch
    parser.add_argument(
        "--quick",
        action="store_true",
        help=lambda: (
            "small sweep that ignores the sweep options (dataset-size: 2 sizes x 3 timescales x 2 epochs,"
            f" seconds; width: widths {_ints(qw.widths)} x λ_base {_floats(qw.weight_decays)} x {len(qw.seeds)} seeds,"
            f" {qw.num_runs} runs, minutes); with --task text a small CPU sweep, minutes ({len(qt.sizes)} fractions x"
            f" {len(qt.tau_epochs)} timescales x {qt.epochs} epochs; with --axis width: widths {_ints(qtw.widths)} x"
            f" {len(qtw.weight_decays)} λ_base x {len(qtw.seeds)} seeds, {qtw.num_runs} runs); --axis batch-size: B"
            f" {_ints(qb.batch_sizes)} x {len(qb.tau_epochs)} timescales x {len(qb.seeds)} seeds x {qb.epochs} epochs,"
            " seconds, --lr-scaling, --beta2 and --workers still apply"
        ),
    )
    parser.add_argument("--no-plot", action="store_true", help="log the runs but skip the figure")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=_main)
    return parser


#: A help text, or a function that makes it when ``--help`` is shown (:class:`~lightning_tau.cli._args.HelpFormatter`).
Help = Any


class _Later:
    """Attributes of one of :mod:`~lightning_tau.cli.demo_presets`' names (or of a new instance of a demo config
    class) read when first asked for: a ``--help`` text shows the demo tasks' defaults without parsing importing
    them."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        value = getattr(_presets(), self._name)
        return getattr(value() if isinstance(value, type) else value, attr)


def _error(message: str) -> int:
    print(f"lightning-tau demo: error: {message}", file=sys.stderr)
    return 2
