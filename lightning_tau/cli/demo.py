"""``lightning-tau demo``: the timescale finder's axes on bundled, offline demo tasks, with figures and TensorBoard.

The command is presets and argparse over a table, :data:`PRESETS`: ``(--task, --axis)`` -> the task's configuration
of one of :class:`~lightning_tau.tuner.finder.TimescaleFinder`'s axes (:mod:`lightning_tau.demos.size`: the
dataset-size axis on digits or text; :mod:`lightning_tau.demos.width` and :mod:`lightning_tau.demos.text_width`: the
μP width axis), what ``--quick`` runs, and which options it reads. On digits ``--sizes`` are training digits,
converted to the finder's fractions of the 1,400 not held out; on text ``--fractions`` are the fractions.

Every call writes a new ``OUT/sweep_K``: the finder's study journal, every run's TensorBoard log (with an HParams
record and a :class:`~lightning_tau.diagnostics.TimescaleMonitor`), ``summary.json`` (the finder's
:class:`~lightning_tau.tuner.axes.AxisResult`: the exponent with its interval or the reason there is none, the
verdict, and every curve) and the figures: for the dataset-size axis Figure 1 of Wang & Aitchison (ICML 2025) by
``lightning-tau plot`` (the loss against weight decay and against ``tau_epoch`` per dataset size) and the finder's
axis figure.

Parsing imports neither torch nor Lightning (a usage error is printed at once): the demo tasks' modules, and the
names built from them (:data:`PRESETS`, :data:`QUICK`, ...), are imported when the command runs or a name is first
read from this module.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lightning_tau.cli._args import (
    fraction_above_zero,
    fraction_below_one,
    output_dir_problem,
    positive_float,
    positive_int,
    random_seed,
)

if TYPE_CHECKING:
    from lightning_tau.demos.size import SizeConfig
    from lightning_tau.demos.text import TextDemoConfig
    from lightning_tau.demos.text_width import TextWidthConfig
    from lightning_tau.demos.width import WidthConfig

    SUMMARY_NAME: str

__all__ = [
    "AXES",
    "PRESETS",
    "QUICK",
    "QUICK_SYNTHETIC",
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
AXES = ("dataset-size", "width")

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


# --- the table: (task, axis) -> configuration ------------------------------------------------------------------


def _run_size(config: Any, sweep_dir: Path, plot: bool, progress: bool) -> None:
    from lightning_tau.demos.size import run_size_demo, tensorboard_commands

    summary = run_size_demo(config, sweep_dir, plot=plot, progress=progress)
    if plot:  # Figure 1 of the paper, from the runs' TensorBoard logs
        from lightning_tau.diagnostics.sweep import plot_sweep

        plot_sweep(sweep_dir, sweep_dir)
    print(tensorboard_commands(summary["runs"], sweep_dir))


def _run_width(config: Any, sweep_dir: Path, plot: bool, progress: bool) -> None:
    from lightning_tau.demos.width import run_width_demo

    run_width_demo(config, sweep_dir, plot=plot, progress=progress)
    print(f"Open the runs with:\n  tensorboard --logdir {sweep_dir / 'tb'}")


@dataclass(frozen=True)
class Preset:
    """One ``(task, axis)`` row: the task's configuration of one of the finder's axes and how argparse fills it.

    Attributes:
        config: the task's config class; its defaults are the full form.
        quick: what ``--quick`` runs (the sweep options are then ignored).
        options: ``(argparse name, config field)`` pairs copied from the command line when given (not ``--quick``).
        always: ``(argparse name, config field)`` pairs copied even with ``--quick``.
        rejects: the options of other rows typed for this one, as an error, or ``None``.
        task_problem: what the task cannot run with this config, or ``None``.
        load: imports/reads what the task needs (an ``ImportError`` is exit code 1).
        run: runs the finder's axis on the config into a sweep folder (``config, sweep_dir, plot, progress``).
    """

    config: type
    quick: Any
    options: tuple[tuple[str, str], ...]
    always: tuple[tuple[str, str], ...]
    rejects: Callable[[argparse.Namespace], str | None]
    task_problem: Callable[[Any], str | None]
    load: Callable[[], None]
    run: Callable[[Any, Path, bool, bool], None]


#: The options only some rows read (typed for another row: an error, see :func:`_typed`).
TEXT_ONLY = ("fractions", "max_tokens", "val_tokens", "block_size", "n_layer", "n_head", "n_embd", "accelerator")
SYNTHETIC_REJECTS = ("label_noise",)
DIGITS_ONLY = ("sizes", "hidden", "norm", "label_noise", "depth")
WIDTH_ONLY = ("widths", "weight_decays", "lr_base", "no_decay_input")
DATASET_SIZE_ONLY = ("sizes", "tau_epochs", "lr", "hidden", "norm", "label_noise")

#: Options with a plain default (the digits demo's, the same as the synthetic task's; filled in by :func:`_main`):
#: typed means another value. The others (``--sizes`` and ``--norm`` among them: their defaults differ by task) are
#: left out of the namespace unless typed.
PLAIN = ("lr", "schedule", "hidden", "label_noise")


def _flags(names: Sequence[str]) -> str:
    return " ".join(f"--{name.replace('_', '-')}" for name in names)


def _typed(args: argparse.Namespace, names: Sequence[str]) -> list[str]:
    """Of ``names``, those typed on the command line: given (a ``SUPPRESS`` default), or for an option with a plain
    default (:data:`PLAIN`) another value than the digits demo's."""
    d = SizeConfig()
    return [n for n in names if (getattr(args, n) != getattr(d, n) if n in PLAIN else hasattr(args, n))]


def _digits_size_rejects(args: argparse.Namespace) -> str | None:
    if given := _typed(args, TEXT_ONLY):
        return f"{_flags(given)} apply to `--task text` only (got --task digits)."
    if given := _typed(args, WIDTH_ONLY):
        return f"{_flags(given)} apply to `--axis width` only (got --axis dataset-size)."
    return None


def _digits_size_problem(config: SizeConfig) -> str | None:
    try:
        config.fractions()  # the sizes fit in the digits not held out
    except ValueError as err:
        return str(err)
    return _too_short_timescale(config) or _two_points(config.sizes, "--sizes")


def _synthetic_size_rejects(args: argparse.Namespace) -> str | None:
    if given := _typed(args, TEXT_ONLY + SYNTHETIC_REJECTS):
        return f"{_flags(given)} do not apply to `--task synthetic` (its labels are noisy by construction)."
    if given := _typed(args, WIDTH_ONLY):
        return f"{_flags(given)} apply to `--axis width` only (got --axis dataset-size)."
    return None


def _two_points(values: Sequence[Any], flag: str) -> str | None:
    if len(values) < 2:
        return f"{flag} {' '.join(f'{v:g}' for v in values)}: give at least two dataset sizes to compare."
    return None


def _too_short_timescale(config: SizeConfig) -> str | None:
    """The error for a ``tau_epoch`` of one optimizer step or less at some size (``lr * weight_decay >= 1``), or
    of more optimizer steps than a float holds."""
    for size in sorted(config.sizes):
        steps = math.ceil(size / config.batch_size)
        endless = [tau for tau in config.tau_epochs if not math.isfinite(tau * steps)]
        if endless:
            return (
                f"--tau-epochs {_floats(endless)}: at N={size}, B={config.batch_size} an epoch is {steps} optimizer"
                f" steps, so tau_epoch={endless[0]:g} is more optimizer steps than a float holds. Use --tau-epochs"
                f" below {sys.float_info.max / steps:.3g}; good values are several epochs."
            )
        short = [tau for tau in config.tau_epochs if tau * steps <= 1]
        if short:
            return _short_message(short, f"N={size}, B={config.batch_size}", steps)
    return None


def _short_message(short: Sequence[float], where: str, steps: int) -> str:
    return (
        f"--tau-epochs {_floats(short)}: at {where} an epoch is {steps} optimizer step{'s' if steps > 1 else ''},"
        f" so tau_epoch={short[0]:g} is {short[0] * steps:.3g} steps (lr * weight_decay >= 1 zeroes or flips the"
        f" weights every step). Use --tau-epochs above {1 / steps:.3g} (one step); good values are several epochs."
    )


def _text_size_rejects(args: argparse.Namespace) -> str | None:
    given = _typed(args, WIDTH_ONLY) + _typed(args, DIGITS_ONLY)
    if given:
        return (
            f"{_flags(given)} do not apply to `--task text`; it takes --fractions, --max-tokens, --val-tokens,"
            " --block-size, --n-layer, --n-head, --n-embd and --accelerator."
        )
    return None


def _text_size_problem(config: TextDemoConfig) -> str | None:
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
    return _two_points(config.sizes, "--fractions")


def _width_grid_problem(config: WidthConfig | TextWidthConfig) -> str | None:
    """What is wrong with a width sweep's grid (too few widths or λ_base, a step that zeroes the weights), or None."""
    if len(config.widths) < 2:
        return f"--widths {_ints(config.widths)}: give at least two widths to compare."
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


def _text_width_rejects(args: argparse.Namespace) -> str | None:
    """``--task text --axis width``: the options it does not read, typed."""
    given = _typed(args, ("fractions", "tau_epochs", "n_embd", *DIGITS_ONLY, "lr"))
    if given:
        return (
            f"{_flags(given)} do not apply to `--task text --axis width`; it takes --widths (the n_embd values),"
            " --weight-decays, --lr-base, --no-decay-input, --seeds, --epochs, --batch-size, --schedule,"
            " --max-tokens, --val-tokens, --block-size, --n-layer, --n-head and --accelerator."
        )
    return None


def _text_width_task_problem(config: TextWidthConfig) -> str | None:
    """``--task text --axis width``: widths the heads do not divide, sizes the corpus does not hold."""
    odd = [w for w in config.widths if w % config.n_head]
    if odd or 2 * config.base_width % config.n_head:
        return (
            f"--widths {_ints(odd or config.widths)}: every width must be a multiple of --n-head {config.n_head}"
            " (the heads are the same at every width)."
        )
    from lightning_tau.demos.text import load_stdlib_corpus

    try:
        config.datamodule()  # at least one batch, the validation set one window
        load_stdlib_corpus(config.max_tokens, config.val_tokens)  # the corpus holds that many bytes
    except (ValueError, FileNotFoundError) as err:
        return str(err)
    return None


def _digits_width_rejects(args: argparse.Namespace) -> str | None:
    """``--axis width`` on digits: the text and dataset-size options, typed."""
    if given := _typed(args, TEXT_ONLY):
        return f"{_flags(given)} apply to `--task text` only (got --task digits)."
    if given := _typed(args, DATASET_SIZE_ONLY):
        return (
            f"{_flags(given)} apply to `--axis dataset-size` only; for `--axis width` use --widths,"
            " --weight-decays and --lr-base."
        )
    return None


def _digits_width_task_problem(config: WidthConfig) -> str | None:
    if config.depth < 2:
        return (
            f"--depth {config.depth}: the width demo needs depth >= 2 (at least one hidden width x width matrix,"
            " the only weights μP's lr / s touches)."
        )
    return None


def _load_digits() -> None:
    from lightning_tau.demos.digits import load_digits_tensors

    load_digits_tensors()


def _load_mup(digits: bool = False) -> None:
    from lightning_tau.demos.width import import_mup

    if digits:
        _load_digits()
    import_mup()


#: Options every width row reads: (argparse name, config field).
_WIDTH_OPTIONS = (("widths", "widths"), ("weight_decays", "weight_decays"), ("lr_base", "lr"), ("seeds", "seeds"))
_WIDTH_OPTIONS += (("epochs", "epochs"),)

#: Options the MLP dataset-size rows (digits, synthetic) read: (argparse name, config field).
_MLP_SIZE_OPTIONS = tuple(
    (name, name)
    for name in ("sizes", "tau_epochs", "seeds", "epochs", "batch_size", "lr", "schedule", "hidden", "depth", "norm")
)

#: Options the text rows read beside the sweep's: (argparse name, config field).
_TEXT_OPTIONS = tuple((name, name) for name in ("max_tokens", "val_tokens", "block_size", "n_layer", "n_head"))
_TEXT_OPTIONS += (("accelerator", "accelerator"),)

#: The names built from the demo tasks' modules (torch, Lightning): defined by :func:`_load` when first needed.
_LOADED = (
    "DemoConfig",
    "QUICK",
    "QUICK_SYNTHETIC",
    "QUICK_WIDTH",
    "QUICK_TEXT",
    "QUICK_TEXT_WIDTH",
    "PRESETS",
    "SUMMARY_NAME",
)


def _load() -> None:
    """Import the demo tasks and define the names built from them (:data:`_LOADED`) in this module: parsing
    needs none of them, so a usage error comes before torch is imported."""
    if "PRESETS" in globals():
        return
    from lightning_tau.demos.size import SUMMARY_NAME, SizeConfig
    from lightning_tau.demos.synthetic import SyntheticSizeConfig
    from lightning_tau.demos.text import TextDemoConfig
    from lightning_tau.demos.text_width import QUICK_HELD_OUT, TextWidthConfig
    from lightning_tau.demos.width import WidthConfig

    global DemoConfig, QUICK, QUICK_SYNTHETIC, QUICK_WIDTH, QUICK_TEXT, QUICK_TEXT_WIDTH, PRESETS
    globals().update(SizeConfig=SizeConfig, TextDemoConfig=TextDemoConfig, SUMMARY_NAME=SUMMARY_NAME)
    globals().update(SyntheticSizeConfig=SyntheticSizeConfig)
    globals().update(TextWidthConfig=TextWidthConfig, WidthConfig=WidthConfig)

    #: The digits dataset-size demo's configuration (``lightning-tau demo``), under its old name.
    DemoConfig = SizeConfig

    #: What ``--quick`` runs: 2 sizes x 3 timescales x 2 epochs, a few seconds (for tests and a first look).
    QUICK = SizeConfig(sizes=[100, 300], tau_epochs=[1.0, 10.0, 100.0], seeds=[0], epochs=2, hidden=32)

    #: What ``--task synthetic --quick`` runs: 2 sizes x 3 timescales x 2 epochs, one seed, a few seconds.
    QUICK_SYNTHETIC = SyntheticSizeConfig(
        sizes=[64, 256], tau_epochs=[2.0, 8.0, 64.0], seeds=[0], epochs=2, hidden=32, val_size=256
    )

    #: What ``--axis width --quick`` runs: widths 16 / 64 / 256 (s up to 16) x 4 λ_base (x4 steps) x 3 seeds, 30 epochs:
    #: the full form's task on a coarser λ_base grid (36 finder trials).
    QUICK_WIDTH = WidthConfig(weight_decays=[8.0, 32.0, 128.0, 512.0])

    #: What ``--task text --quick`` runs: 3 fractions of a 32,000-byte corpus x 4 timescales (x4 apart) x 32 epochs,
    #: one seed, validation at the end only; about 5 CPU-minutes (one thread).
    QUICK_TEXT = TextDemoConfig(
        sizes=[0.25, 0.5, 1.0], tau_epochs=[0.5, 2.0, 8.0, 32.0], seeds=[0], epochs=32, batch_size=16,
        warmup_fraction=0.0, block_size=64, n_layer=2, n_head=4, n_embd=64, max_tokens=32_000, val_tokens=32_000,
        val_every_n_epochs=32, accelerator="cpu",
    )  # fmt: skip

    #: What ``--task text --axis width --quick`` runs: the held-out-file regime (``demos/text_width.py``).
    QUICK_TEXT_WIDTH = QUICK_HELD_OUT

    #: The rows of ``lightning-tau demo``: ``(task, axis) -> configuration``.
    PRESETS = {
        ("digits", "dataset-size"): Preset(
            config=SizeConfig,
            quick=QUICK,
            options=_MLP_SIZE_OPTIONS + (("label_noise", "label_noise"),),
            always=(),
            rejects=_digits_size_rejects,
            task_problem=_digits_size_problem,
            load=_load_digits,
            run=_run_size,
        ),
        ("synthetic", "dataset-size"): Preset(
            config=SyntheticSizeConfig,
            quick=QUICK_SYNTHETIC,
            options=_MLP_SIZE_OPTIONS,
            always=(),
            rejects=_synthetic_size_rejects,
            task_problem=lambda config: _too_short_timescale(config) or _two_points(config.sizes, "--sizes"),
            load=lambda: None,
            run=_run_size,
        ),
        ("text", "dataset-size"): Preset(
            config=TextDemoConfig,
            quick=QUICK_TEXT,
            options=(
                ("fractions", "sizes"),
                *((name, name) for name in ("tau_epochs", "seeds", "epochs", "batch_size", "lr", "schedule", "n_embd")),
                *_TEXT_OPTIONS,
            ),
            always=(),
            rejects=_text_size_rejects,
            task_problem=_text_size_problem,
            load=lambda: None,
            run=_run_size,
        ),
        ("digits", "width"): Preset(
            config=WidthConfig,
            quick=QUICK_WIDTH,
            options=(*_WIDTH_OPTIONS, ("depth", "depth")),
            always=(("batch_size", "batch_size"), ("schedule", "schedule")),
            rejects=_digits_width_rejects,
            task_problem=lambda config: _width_grid_problem(config) or _digits_width_task_problem(config),
            load=lambda: _load_mup(digits=True),
            run=_run_width,
        ),
        ("text", "width"): Preset(
            config=TextWidthConfig,
            quick=QUICK_TEXT_WIDTH,
            options=(*_WIDTH_OPTIONS, ("schedule", "schedule"), ("batch_size", "batch_size"), *_TEXT_OPTIONS),
            always=(),
            rejects=_text_width_rejects,
            task_problem=lambda config: _width_grid_problem(config) or _text_width_task_problem(config),
            load=_load_mup,
            run=_run_width,
        ),
    }


def __getattr__(name: str) -> Any:
    """The names of :data:`_LOADED`, defined on first use (PEP 562)."""
    if name in _LOADED:
        _load()
        return globals()[name]
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
    _load()
    digits = SizeConfig()
    for name in PLAIN:  # not typed: the digits demo's value (the parser leaves them out so as not to import it)
        if not hasattr(args, name):
            setattr(args, name, getattr(digits, name))
    problem = output_dir_problem(args.out, "--out")
    if problem:
        return _error(problem)
    if (args.task, args.axis) not in PRESETS:
        axes = " and ".join(f"--axis {a}" for t, a in PRESETS if t == args.task)
        return _error(f"--task {args.task} --axis {args.axis}: the {args.task} task has {axes} only.")
    preset = PRESETS[(args.task, args.axis)]
    problem = preset.rejects(args)
    if problem:
        return _error(problem)
    config = preset.config(**vars(preset.quick if args.quick else preset.config()))
    for name, attr in preset.always + (() if args.quick else preset.options):
        if hasattr(args, name):  # given on the command line (or a plain option with its default)
            value = getattr(args, name)
            if attr in ("sizes", "widths", "weight_decays"):
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
    syn = _Later("SyntheticSizeConfig")
    quick_width, quick_text, quick_text_width = _Later("QUICK_WIDTH"), _Later("QUICK_TEXT"), _Later("QUICK_TEXT_WIDTH")
    parser = subparsers.add_parser(
        "demo",
        help="The timescale finder's dataset-size (or width) axis on bundled digits or text: runs, figures, verdict.",
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
            " values). Each call writes a new OUT/sweep_K directory with the runs, the figures and a summary.json"
            " (the finder's result and every curve)."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--axis",
        choices=AXES,
        default="dataset-size",
        help="what the sweep varies: 'dataset-size' (tau_epoch x N, TimescaleCallback in every run) or 'width'"
        " (the finder's width axis: μP width x λ_base at a fixed lr; needs mup)",
    )
    parser.add_argument(
        "--task",
        choices=TASKS,
        default="digits",
        help="'digits': an MLP on scikit-learn's bundled digits; 'synthetic': an MLP on a teacher network's noisy"
        " labels, generated by lightning_tau.demos.synthetic (N not capped by a dataset; what `make demo` runs;"
        " dataset-size axis only); 'text': a byte-level GPT on the standard library's own sources (with --axis"
        " width: the μP width sweep, --widths being n_embd)",
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
            f" {_floats(t.tau_epochs)})"
        ),
        positive_float,
        "TAU",
    )
    add(
        parser,
        "--seeds",
        lambda: (
            f"seeds per setting; the plot averages over them (default: {_ints(d.seeds)}; --task synthetic:"
            f" {_ints(syn.seeds)}; --axis width: {_ints(w.seeds)})"
        ),
        random_seed,
        "SEED",
    )
    add(
        parser,
        "--epochs",
        lambda: f"epochs per run, the same for every run (default: {d.epochs}; --axis width: {w.epochs})",
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
    qw, qt, qtw = quick_width, quick_text, quick_text_width
    parser.add_argument(
        "--quick",
        action="store_true",
        help=lambda: (
            "small sweep that ignores the sweep options (dataset-size: 2 sizes x 3 timescales x 2 epochs,"
            f" seconds; width: widths {_ints(qw.widths)} x λ_base {_floats(qw.weight_decays)} x {len(qw.seeds)} seeds,"
            f" {qw.num_runs} runs, minutes); with --task text a small CPU sweep, minutes ({len(qt.sizes)} fractions x"
            f" {len(qt.tau_epochs)} timescales x {qt.epochs} epochs; with --axis width: widths {_ints(qtw.widths)} x"
            f" {len(qtw.weight_decays)} λ_base x {len(qtw.seeds)} seeds, {qtw.num_runs} runs)"
        ),
    )
    parser.add_argument("--no-plot", action="store_true", help="log the runs but skip the figure")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=_main)
    return parser


#: A help text, or a function that makes it when ``--help`` is shown (:class:`~lightning_tau.cli._args.HelpFormatter`).
Help = Any


class _Later:
    """Attributes of one of this module's :data:`_LOADED` names (or of a new instance of a demo config class) read
    when first asked for: a ``--help`` text shows the demo tasks' defaults without parsing importing them."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        _load()
        value = globals()[self._name]
        return getattr(value() if isinstance(value, type) else value, attr)


def _ints(values: Sequence[int]) -> str:
    return " ".join(str(v) for v in values)


def _floats(values: Sequence[float]) -> str:
    return " ".join(f"{v:g}" for v in values)


def _error(message: str) -> int:
    print(f"lightning-tau demo: error: {message}", file=sys.stderr)
    return 2
