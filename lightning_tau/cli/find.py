"""``lightning-tau find``: tune ``tau_epoch`` on a fraction of the training set and print the full run's weight decay.

More: docs/finder.rst.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import sys
from pathlib import Path
from typing import Any

from lightning_tau._constants import GOALS
from lightning_tau._numbers import exponent, setting
from lightning_tau.cli.held_signals import hold_signals
from lightning_tau.cli._args import (
    MAX_SEED,
    fraction_above_zero,
    nonempty_path,
    positive_float,
    positive_int,
    random_seed,
    threads_setting,
)
from lightning_tau.cli.config import ConfigError, ConfigWidthModel, DigitsWidthModel, load_config
from lightning_tau.cli.find_reopen import CONFIG_ATTR, FINDER_REOPENED, REOPENED, reopen_study
from lightning_tau.tuner.analysis.curve import DEFAULT_TAU_EPOCHS, PRUNER_NAMES
from lightning_tau.tuner.analysis.grid_args import check_grid, check_grid_extensions, check_seeds
from lightning_tau.tuner.axes import AXES, Axis, resolve_axis
from lightning_tau.tuner.study import journal_problem

__all__ = ["DIGITS_EPOCHS", "add_parser"]

#: Epochs per run on the demo's digits task (as ``lightning-tau demo``).
DIGITS_EPOCHS = 40


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``find``."""
    parser = subparsers.add_parser(
        "find",
        help="Tune tau_epoch on a fraction of the training set; print the full run's weight decay.",
        description=(
            "Sweep tau_epoch on a fixed random subset holding FRACTION of the training set, for the epochs the full"
            " run will train, with TimescaleCallback setting each run's weight decay; suggest the tau_epoch"
            " (a parabola in log tau_epoch through the best grid point and its neighbours) and the weight decay"
            " B / (lr * N * tau_epoch) of every param group for the full run. Without --config: the demo's digits"
            " task. With --config: a LightningCLI YAML with model/data class_path entries and trainer.max_epochs."
            " Runs are trials of an Optuna study (by default the journal file OUT/study.journal): the same command"
            " run again trains nothing, and the same command started on several machines (--storage, --study) or"
            " with --workers K shares one grid. --axis width / dataset_size: the sweep at several widths (a μP"
            " model) or fractions, and the exponent of the best weight decay or tau_epoch along them."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--config",
        type=nonempty_path,
        default=None,
        help="LightningCLI YAML (model:, data:, trainer:); when not given: the demo's digits task",
    )
    parser.add_argument(
        "--fraction",
        type=fraction_above_zero,
        default=None,
        help="share of the training set per run (default 0.25; not with --axis dataset_size)",
    )
    parser.add_argument(
        "--axis",
        choices=tuple(AXES),  # the registry's names (CommandParser takes dataset-size for dataset_size)
        default=next(iter(AXES)),
        help="fraction: one sweep on one subset; width: the sweep at every --widths (a μP model whose __init__ takes"
        " `width`), giving the exponent of the best weight decay with width and the width_exponent to use;"
        " dataset_size: the sweep at every --fractions, giving how the best tau_epoch moves with N; batch_size: the"
        " sweep at every --batch-sizes, giving how the best tau_epoch moves with the global batch",
    )
    parser.add_argument(
        "--widths", type=positive_int, nargs="+", default=None, metavar="WIDTH", help="--axis width: the widths"
    )
    parser.add_argument(
        "--fractions",
        type=fraction_above_zero,
        nargs="+",
        default=None,
        metavar="FRACTION",
        help="--axis dataset_size: the fractions of the training set",
    )
    parser.add_argument(
        "--batch-sizes",
        type=positive_int,
        nargs="+",
        default=None,
        metavar="B",
        help="--axis batch_size: the global batch sizes (set through the model's batch_size, else by accumulation)",
    )
    parser.add_argument(
        "--lr-scaling",
        choices=("none", "sqrt", "linear"),
        default="none",
        help="--axis batch_size: the model's lr (its `lr` or `learning_rate`) times (B / B_0)^m across the batch"
        " sizes, m = 0, 1/2 or 1 (default none)",
    )
    parser.add_argument(
        "--beta2",
        choices=("fixed", "held", "both"),
        default="fixed",
        help="--axis batch_size: Adam's β₂ at every batch, fixed (the optimizer's), held in samples (β₂^(B / B_0)), or"
        " both: the sweep fixed, then the largest batch's best tau_epoch held too, with each choice's paired cost"
        " (default fixed)",
    )
    parser.add_argument(
        "--tau-epochs",
        type=positive_float,
        nargs="+",
        default=list(DEFAULT_TAU_EPOCHS),
        metavar="TAU",
        help="the tau_epoch grid (log-spaced)",
    )
    parser.add_argument(
        "--max-grid-extensions",
        type=_grid_extensions,
        default=3,
        metavar="N",
        help="the most steps the grid grows by at each end where a best tau_epoch sits on it (0: the grid as given)."
        " Each step is the grid's log step at that end, trained at every axis point into the same study, until the"
        " best is inside the grid; never below 2 optimizer steps of the smallest subset, never above a plateau longer"
        " than the run",
    )
    parser.add_argument(
        "--target-dataset-size",
        type=positive_float,
        default=None,
        metavar="N",
        help="--axis dataset_size: also print the best tau_epoch predicted at this training-set size, with its"
        " prediction interval",
    )
    parser.add_argument(
        "--target-width",
        type=positive_float,
        default=None,
        metavar="W",
        help="--axis width: also print the best tau_epoch predicted at this width, with its prediction interval",
    )
    parser.add_argument(
        "--seeds",
        type=_seed_or_auto,
        nargs="+",
        default=None,
        metavar="SEED",
        help="seeds per tau_epoch; when not given: 0 1 2, and 0 1 2 3 4 with --axis width / dataset_size. With"
        " --axis width / dataset_size, 'auto': seeds in stages (3, 5, 8, 12, ... up to --max-seeds) until every"
        " published rule is decided at --tolerance",
    )
    parser.add_argument(
        "--max-seeds",
        type=_max_seeds,
        default=None,
        help="with --seeds auto: the most seeds to train; when not given: 12",
    )
    parser.add_argument(
        "--tolerance",
        type=_tolerance,
        default=None,
        help="--axis width / dataset_size: the factor by which the best value may move over the axis's range and"
        " still follow a published rule (holds: the whole interval within it; excluded: wholly outside); when not"
        " given: 1.25",
    )
    parser.add_argument(
        "--epochs",
        type=positive_int,
        default=None,
        help=f"epochs per run; when not given: trainer.max_epochs of --config, else {DIGITS_EPOCHS}",
    )
    parser.add_argument(
        "--monitor",
        default=None,
        help="validation metric to compare; when not given: val/loss on digits, val_loss with --config",
    )
    parser.add_argument("--mode", choices=GOALS, default="min", help="whether lower or higher is better")
    parser.add_argument(
        "--reduce",
        choices=("last", "best"),
        default="last",
        help="compare each run's metric after the last epoch, or its best over epochs",
    )
    parser.add_argument("--subset-seed", type=random_seed, default=0, help="seed of the random subset")
    parser.add_argument(
        "--pruner",
        choices=("none", *PRUNER_NAMES),
        default="none",
        help="stop hopeless tau_epoch runs early with this Optuna pruner (pruned tau_epochs are listed, never"
        " suggested)",
    )
    parser.add_argument(
        "--out",
        type=nonempty_path,
        default=Path("tau_runs/find"),
        help="the default study journal, logs, plot and JSON",
    )
    parser.add_argument(
        "--json",
        type=nonempty_path,
        default=None,
        help="where to write the JSON summary; when not given: OUT/STUDY/finder.json",
    )
    parser.add_argument(
        "--storage",
        default=None,
        metavar="PATH_OR_URL",
        help="the study's storage: a journal file (shared file system) or an Optuna database URL such as"
        " postgresql+psycopg2://user:password@host/db (the password is never printed); when not given:"
        " OUT/study.journal",
    )
    parser.add_argument(
        "--study",
        default=None,
        metavar="NAME",
        help="the study to join; when not given: tau_finder_ and a hash of the settings",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=1,
        help="worker processes on this machine (each with --threads torch threads); more than the machine's cores"
        " or the trials left to train is capped, with a note",
    )
    parser.add_argument(
        "--threads",
        type=threads_setting,
        default=1,
        metavar="N|auto",
        help="torch threads in each process that trains trials: a number, or auto for cores // workers (a small"
        " model trains about as fast on one, and a busy machine slows more 5-30x)",
    )
    parser.add_argument(
        "--no-wait",
        action="store_true",
        help="exit as soon as no trial is left to take, without waiting for those training elsewhere",
    )
    parser.add_argument("--no-plot", action="store_true", help="skip the figure")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=_main)
    return parser


def _grid_extensions(text: str) -> int:
    """``--max-grid-extensions``: an integer of at least 0 (:func:`~lightning_tau.tuner.analysis.grid_args.check_grid_extensions`,
    before torch is imported).

    Example:
        >>> _grid_extensions("0"), _grid_extensions("3")
        (0, 3)
        >>> _grid_extensions("-1")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: expected an integer >= 0, got '-1'
    """
    try:
        return check_grid_extensions(int(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None


def _seed_or_auto(text: str) -> int | str:
    """A ``--seeds`` entry: a seed, or ``auto``.

    Example:
        >>> _seed_or_auto("3"), _seed_or_auto("auto")
        (3, 'auto')
    """
    return "auto" if text == "auto" else random_seed(text)


def _max_seeds(text: str) -> int:
    """A ``--max-seeds`` value: an integer of at least 3, the first stage of ``--seeds auto``.

    Example:
        >>> _max_seeds("8")
        8
        >>> _max_seeds("2")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: expected an integer >= 3 (the first stage of --seeds auto trains 3), got '2'
    """
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 3 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(
            f"expected an integer >= 3 (the first stage of --seeds auto trains 3), got {text!r}"
        )
    return value


def _tolerance(text: str) -> float:
    """A ``--tolerance`` value: a finite factor above 1.

    Example:
        >>> _tolerance("1.25")
        1.25
        >>> _tolerance("0.8")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: expected a factor above 1 such as 1.25, got '0.8'
    """
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 1 < value < math.inf:
        raise argparse.ArgumentTypeError(f"expected a factor above 1 such as 1.25, got {text!r}")
    return value


def _seed_options(args: argparse.Namespace) -> str | None:
    """The usage error of ``--seeds``, ``--max-seeds`` and ``--tolerance`` together with ``--axis``, or ``None``
    (``--seeds auto`` becomes ``args.seeds == "auto"``)."""
    seeds = args.seeds
    if isinstance(seeds, list) and "auto" in seeds:
        if seeds != ["auto"]:
            return f"argument --seeds: 'auto' stands alone (got {' '.join(map(str, seeds))}): pass --seeds auto."
        args.seeds = seeds = "auto"
    on_axis = resolve_axis(args.axis).scaling
    if seeds == "auto" and not on_axis:
        return (
            "argument --seeds: 'auto' is only used with --axis width, dataset_size or batch_size (it adds seeds until"
            " the published rules are decided): give the seeds, e.g. --seeds 0 1 2."
        )
    if args.max_seeds is not None and seeds != "auto":
        return (
            f"argument --max-seeds: {args.max_seeds} is only used with --seeds auto: pass --seeds auto, or leave it"
            " out."
        )
    if args.tolerance is not None and not on_axis:
        return (
            f"argument --tolerance: {args.tolerance:g} is only used with --axis width, dataset_size or batch_size (it"
            " decides the published rules along an axis): leave it out."
        )
    return None


def _axis_options(args: argparse.Namespace) -> str | None:
    """The usage error of ``--widths``, ``--fractions`` or ``--fraction`` given with an ``--axis`` that does not use
    them, in flag terms, or ``None`` (before torch is imported; ``TimescaleFinder`` makes the same checks).

    Example:
        >>> print(_axis_options(argparse.Namespace(axis="fraction", widths=[16, 64], fractions=None, fraction=None)))
        ... # doctest: +ELLIPSIS
        argument --widths: 16 64 is only used with --axis width (the axis is fraction): add --axis width, or leave ...
    """
    given = resolve_axis(args.axis)
    scaling = [a for a in AXES.values() if a.scaling]
    for axis in scaling:  # its points' flag (--widths, --fractions)
        argument = str(axis.values_argument)
        flag, values = f"--{argument.replace('_', '-')}", getattr(args, argument, None)
        if values is not None and given is not axis:
            shown = " ".join(f"{v:g}" for v in values)
            return (
                f"argument {flag}: {shown} is only used with --axis {axis.name} (the axis is {given.name}): add"
                f" --axis {axis.name}, or leave {flag} out."
            )
    for axis in scaling:  # its --target-... flag
        flag, value = _target_flag(axis), _target(args, axis)
        if value is not None and given is not axis:
            return (
                f"argument {flag}: {value:g} is only used with --axis {axis.name} (the axis is {given.name}): add"
                f" --axis {axis.name}, or leave {flag} out."
            )
    if args.fraction is not None and given.subsets_per_point:
        return (
            f"argument --fraction: {args.fraction:g} is not used with --axis {given.name}, which trains on each of"
            f" --{given.values_argument}: leave --fraction out."
        )
    return None


def _target_flag(axis: Axis) -> str:
    """The flag that asks for a prediction at a scale of ``axis``: ``--target-width``, ``--target-dataset-size``."""
    return f"--target-{axis.name.replace('_', '-')}"


def _target(args: argparse.Namespace, axis: Axis) -> float | None:
    """The value of ``axis``'s ``--target-...`` flag, or ``None`` (none given, or the axis has none)."""
    return getattr(args, f"target_{axis.name}", None)


def _points(args: argparse.Namespace) -> list[float] | None:
    """The axis points given (``--widths`` or ``--fractions``, as ``--axis`` uses), or ``None``."""
    axis = resolve_axis(args.axis)
    return None if axis.values_argument is None else getattr(args, axis.values_argument, None)


#: The longest study name a database storage holds (Optuna's ``studies.study_name`` is a ``VARCHAR(512)``).
STUDY_NAME_LIMIT = 512


def _study_name_problem(args: argparse.Namespace) -> str | None:
    """A ``--study`` longer than a database storage holds (with the axis point's ``_width=64`` added), in
    ``--study``'s terms, or ``None``; a journal file and SQLite hold any length.

    Example:
        >>> print(_study_name_problem(argparse.Namespace(study="s" * 600, storage="postgresql://u@h/db",
        ...     axis="fraction", widths=None, fractions=None)))
        argument --study: the name is 600 characters long; a database storage holds at most 512: pass a shorter --study.
    """
    url = str(args.storage)
    if args.study is None or "://" not in url or url.split(":", 1)[0].split("+")[0] == "sqlite":
        return None
    name = resolve_axis(args.axis).name
    longest = max((len(args.study) + len(f"_{name}={v:g}") for v in _points(args) or ()), default=len(args.study))
    if longest <= STUDY_NAME_LIMIT:
        return None
    point = f" with the axis point (_{name}=...) added" if longest != len(args.study) else ""
    return (
        f"argument --study: the name is {longest} characters long{point}; a database storage holds at most"
        f" {STUDY_NAME_LIMIT}: pass a shorter --study."
    )


#: A password in a storage URL: ``scheme://user:PASSWORD@host`` or a ``password=`` query parameter (as
#: :func:`lightning_tau.tuner.study.storage.redact_url` masks it).
_URL_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://[^:/@?#]*:[^?#]*@|[?&](?:password|passwd|pwd)=", re.I)


def _storage_password_notice(storage: str | None) -> None:
    """Say on stderr, in one line, that a password in ``--storage`` is readable by every local user (the command
    line is in ``ps``), and the form that keeps it off the command line."""
    if storage is not None and _URL_PASSWORD.search(storage):
        print(
            "lightning-tau find: note: the password in --storage is visible to every user of this machine (ps shows"
            " the command line): leave it out of the URL and put it in ~/.pgpass or PGPASSWORD (docs/finder.rst).",
            file=sys.stderr,
        )


def _digits_notice(args: argparse.Namespace) -> str:
    """The line ``find`` prints before training the built-in task when no ``--config`` is given: what it trains and
    about how many trials.

    Example:
        >>> print(_digits_notice(argparse.Namespace(tau_epochs=[1, 2, 4], seeds=None, axis="fraction", widths=None,
        ...     fractions=None)))
        ... # doctest: +ELLIPSIS
        No --config: training the built-in digits task (about 9 trials: 3 tau_epochs x 3 seeds). Pass --config ...
    """
    points = _points(args)
    seeds = 3 if args.seeds == "auto" else len(args.seeds) if args.seeds else 5 if points else 3
    trials = len(args.tau_epochs) * seeds * len(points or [0])
    counts = [(len(args.tau_epochs), "tau_epoch"), (seeds, "seed")]
    if points:
        counts.append((len(points), str(resolve_axis(args.axis).value_key)))
    parts = [f"{n} {word}{'s' if n != 1 else ''}" for n, word in counts]
    about = "at least" if args.seeds == "auto" else "about"
    return (
        f"No --config: training the built-in digits task ({about} {trials} trials: {' x '.join(parts)}). Pass --config"
        " for your own model."
    )


def _grid_options(args: argparse.Namespace) -> str | None:
    """A repeated ``--tau-epochs`` or ``--seeds`` value, in ``TimescaleFinder``'s words under the flag (the same
    checks, :mod:`lightning_tau.tuner.analysis.grid_args`, run here before torch is imported), or ``None``."""
    try:
        if args.tau_epochs is not None:
            check_grid(list(args.tau_epochs))
        if isinstance(args.seeds, list) and "auto" not in args.seeds:  # 'auto': _seed_options' to check
            check_seeds(list(args.seeds))
    except ValueError as err:
        return _option_error(str(err))
    return None


def _writable(path: Path, *, folder: bool) -> str | None:
    """Why ``path`` (a folder, or a file to write) cannot be written, or ``None``; creates nothing."""
    if folder and path.exists() and not path.is_dir():
        return "it is a file, not a folder"
    if not folder and path.is_dir():
        return "it is a folder"
    existing = path if folder else path.parent
    while not existing.exists():  # the nearest folder that exists: the rest will be created in it
        if existing.is_symlink():
            return f"{existing} is a symbolic link to {os.readlink(existing)!r}, which does not exist"
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a folder"
    probe = existing / f".lightning-tau-write-test-{os.getpid()}"
    try:  # a real write: os.access says yes to root on read-only file systems (/sys, /proc, a read-only mount)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as err:
        return f"cannot write in {existing}: {err.strerror or err}"
    return None


def _output_problem(args: argparse.Namespace) -> str | None:
    """Why a file ``find`` would write must not be written (:func:`lightning_tau.outputs.output_problem`: the
    study's storage, another study's folder, a file the package did not write), in ``--json``'s terms, or ``None``.

    Checked before torch is imported: ``--json``, and with ``--study`` the study folder's JSON and figure (without
    it the folder's name is known only once the model is built; :func:`_write_results` checks those again).
    """
    from lightning_tau.outputs import output_problem, study_files
    from lightning_tau.tuner.study import study_folder

    storage = args.storage if args.storage is not None else args.out / "study.journal"
    own = study_folder(args.study) if args.study is not None else None
    where: list[tuple[str, Path]] = [("--json", args.json)] if args.json is not None else []
    if own is not None:
        where += [("--out", args.out / own / "finder.json")] * (args.json is None)
        where += [("--out", args.out / own / "tau_finder.png")] * (not args.no_plot)
    for option, path in where:
        problem = output_problem(path, studies=[study_files(storage)], out=args.out, own_folder=own)
        if problem is not None:
            return f"argument {option}: will not write {str(path)!r}: {problem}"
    return None


def _reopen(args: argparse.Namespace) -> str | None:
    """:func:`~lightning_tau.cli.find_reopen.reopen_study` against ``find``'s own defaults."""
    return reopen_study(args, _defaults())


def _defaults() -> dict[str, object]:
    """The defaults of ``find``'s options (a parser built for the purpose; nothing heavy is imported)."""
    parser = argparse.ArgumentParser()
    find = add_parser(parser.add_subparsers())
    return {dest: find.get_default(dest) for dest, _ in REOPENED} | {
        dest: find.get_default(dest) for dest in (*FINDER_REOPENED, "lr_scaling", "beta2")
    }


def result_folder(finder: Any) -> str:
    """The folder inside ``--out`` a fit's JSON and figure go to: named after its study
    (:func:`~lightning_tau.tuner.study.grid_study.study_folder` of ``study_name``, or of the auto name without its
    axis point),
    so a later study with other settings writes beside it, not over it."""
    from lightning_tau.tuner.study import study_folder

    name = finder.study.study.study_name
    if finder.axis.scaling:
        name = finder.study_name or name.rpartition(f"_{finder.axis.name}=")[0]
    return study_folder(name)


def _sentence(err: Exception) -> str:
    """``err``'s message ending in one full stop (a checked argument's message has its own).

    Example:
        >>> _sentence(ValueError("`M(hidden=-3)` is not valid: use a positive integer.")), _sentence(ValueError("bad"))
        ('`M(hidden=-3)` is not valid: use a positive integer.', 'bad.')
    """
    return f"{str(err).rstrip('.')}."


def _error(message: str, code: int) -> int:
    print(f"lightning-tau find: error: {message}", file=sys.stderr)
    return code


#: The option of each ``TimescaleFinder`` argument ``find`` passes on (a checked argument's error names the option).
_OPTIONS = {
    "fraction": "--fraction",
    "fractions": "--fractions",
    "tau_epochs": "--tau-epochs",
    "seeds": "--seeds",
    "widths": "--widths",
    "batch_sizes": "--batch-sizes",
    "lr_scaling": "--lr-scaling",
    "beta2": "--beta2",
    "subset_seed": "--subset-seed",
    "monitor": "--monitor",
    "study_name": "--study",
    "workers": "--workers",
    "threads": "--threads",
    "pruner": "--pruner",
    "storage": "--storage",
}


def _option_error(message: str) -> str:
    """A ``TimescaleFinder(name=value)`` error as the option's (``argument --name: ...``), the way argparse names
    it; other messages as they are.

    Example:
        >>> _option_error("`TimescaleFinder(tau_epochs=[4.0, 4.0])` repeats a value: give each tau_epoch once.")
        'argument --tau-epochs: `TimescaleFinder(tau_epochs=[4.0, 4.0])` repeats a value: give each tau_epoch once.'
    """
    name = message.removeprefix("`TimescaleFinder(").partition("=")[0]
    if message.startswith("`TimescaleFinder(") and name in _OPTIONS:
        return f"argument {_OPTIONS[name]}: {message}"
    return message


def _storage_error(args: argparse.Namespace, shown: str, reason: str) -> str:
    """A storage's error, blamed on ``--storage`` only where it was given (else on the default journal in ``--out``)."""
    if args.storage is None:
        return f"the study journal {shown!r} (the default in --out): {reason}"
    return f"argument --storage: {shown!r}: {reason}"


def _main(args: argparse.Namespace) -> int:
    # the checks that need no data come first: a usage error imports neither torch, Lightning nor Optuna
    _storage_password_notice(args.storage)
    for option, where, folder in (("--out", args.out, True), ("--json", args.json, False)):
        if where is not None and (why := _writable(where, folder=folder)) is not None:
            return _error(f"argument {option}: cannot write to {str(where)!r}: {why}. Pass a writable path.", 2)
    if (problem := _output_problem(args)) is not None:
        return _error(problem, 2)
    if args.config is not None and not args.config.is_file():
        return _error(f"--config {str(args.config)!r} is not a file.", 2)
    if args.study is None and (problem := _seed_options(args) or _axis_options(args)) is not None:
        return _error(problem, 2)
    if (problem := _grid_options(args) or _study_name_problem(args)) is not None:
        return _error(problem, 2)
    journal = args.out / "study.journal" if args.storage is None else Path(args.storage)
    if "://" not in str(args.storage) and journal.is_file() and (problem := journal_problem(journal)) is not None:
        return _error(_storage_error(args, str(journal), problem), 2)
    if args.workers > 1:  # the workers' server imports torch and Lightning on another core while this process does
        from lightning_tau.tuner.workers import start_server

        try:
            start_server()
        except ValueError as err:
            return _error(str(err), 2)

    from lightning.pytorch.utilities.exceptions import SIGTERMException

    from lightning_tau.tuner.finder import SIGTERM_EXIT, SettingError, TimescaleFinder
    from lightning_tau.tuner.study import StudyMismatchError
    from lightning_tau.tuner.study import JournalWriteError, StorageError
    from lightning_tau.tuner.trial import MonitorError

    if args.study is not None:
        try:
            reopened = _reopen(args)
        except StorageError as err:
            return _error(_storage_error(args, err.shown, err.reason), 2)
        except ValueError as err:
            return _error(str(err), 2)
        if reopened:
            print(reopened)
        if (problem := _seed_options(args) or _axis_options(args)) is not None:  # with the study's axis and seeds
            return _error(problem, 2)
    if args.config is not None:
        try:
            model_factory, datamodule, trainer_kwargs, notes = load_config(args.config)
        except ConfigError as err:
            return _error(f"{_sentence(err)} Fix the config (see examples/configs/find_digits.yaml).", 2)
        if notes:
            print(f"Not carried over from {args.config} (the finder sets its own): {', '.join(notes)}.")
        if args.epochs is not None:
            trainer_kwargs["max_epochs"] = args.epochs
        if trainer_kwargs.get("max_epochs") in (None, -1):
            return _error(
                f"{args.config} sets no trainer.max_epochs: set it to the epochs of the full run, or pass --epochs.", 2
            )
        monitor = args.monitor or "val_loss"
        if resolve_axis(args.axis).model_per_point:
            width_model = ConfigWidthModel(args.config)
            width_model._cli = model_factory._cli  # type: ignore[attr-defined]
            if not width_model.takes_width():
                return _error(
                    f"--axis width: the model of --config {str(args.config)!r} has no `width` argument: --axis width"
                    " builds the model at each --widths value through its `__init__(width=...)`.",
                    2,
                )
            model_factory = width_model
    else:
        from lightning_tau.demos.digits import DigitsDataModule, DigitsMLP, load_digits_tensors

        try:
            load_digits_tensors()
        except ImportError as err:
            return _error(str(err), 1)
        print(_digits_notice(args))
        model_factory, datamodule = DigitsMLP, DigitsDataModule(train_size=1400, batch_size=64)
        trainer_kwargs = {"max_epochs": args.epochs or DIGITS_EPOCHS, "accelerator": "cpu", "devices": 1}
        monitor = args.monitor or "val/loss"
        if resolve_axis(args.axis).model_per_point and args.widths:
            from lightning_tau.demos.width import WidthConfig

            demo = WidthConfig()  # the width demo's task: its data, epochs and μP MLP
            model_factory = DigitsWidthModel(min(args.widths))
            datamodule = DigitsDataModule(train_size=demo.train_size, batch_size=demo.batch_size)
            trainer_kwargs["max_epochs"] = args.epochs or demo.epochs
    try:
        finder = TimescaleFinder(
            fraction=args.fraction,
            tau_epochs=list(args.tau_epochs),  # a repeat is refused, as from Python
            seeds=args.seeds if args.seeds in (None, "auto") else list(args.seeds),
            max_seeds=args.max_seeds,
            tolerance=args.tolerance,
            monitor=monitor,
            mode=args.mode,
            reduce=args.reduce,
            trainer_kwargs=trainer_kwargs,
            root_dir=args.out,
            subset_seed=args.subset_seed,
            progress=not args.no_progress,
            storage=args.storage,
            study_name=args.study,
            workers=args.workers,
            threads=args.threads,
            axis=args.axis,
            widths=args.widths,
            fractions=args.fractions,
            batch_sizes=args.batch_sizes,
            lr_scaling=args.lr_scaling,
            beta2=args.beta2,
            pruner=None if args.pruner == "none" else args.pruner,
            max_grid_extensions=args.max_grid_extensions,
        )
    except ValueError as err:
        return _error(_option_error(str(err)), 2)
    try:
        result = finder.fit(model_factory, datamodule=datamodule, wait=not args.no_wait)
    except (KeyboardInterrupt, SIGTERMException) as err:
        hold_signals()  # a second Ctrl-C or SIGTERM while this says what the study kept: held (`main` reads it)
        kept = ""
        with contextlib.suppress(Exception):
            if finder.study is not None:
                kept = f" in {finder.study.shown} ({len(finder.study.records())} complete)"
        how, code = ("interrupted", 130) if isinstance(err, KeyboardInterrupt) else ("stopped by SIGTERM", SIGTERM_EXIT)
        return _error(f"{how}. The study{kept} keeps its complete trials: run the same command again to resume.", code)
    except JournalWriteError as err:
        return _error(f"{err.shown}: {err.reason}", 1)
    except StorageError as err:
        return _error(_storage_error(args, err.shown, err.reason), 2)
    except SettingError as err:
        return _error(f"argument --{err.argument.replace('_', '-')}: {err}", 2)
    except StudyMismatchError as err:
        return _error(f"argument --study: {err}", 2)
    except MonitorError as err:  # at the first validation, before the rest of the grid trained
        return _error(
            f"argument --monitor: {err.monitor!r} is not a metric the model logs at validation; it logs"
            f" {', '.join(err.logged) or 'none'}. Pass one of those as --monitor.",
            2,
        )
    except ConfigError as err:
        return _error(f"{_sentence(err)} Fix the config.", 2)
    except (ValueError, TypeError) as err:
        return _error(str(err), 1)
    if finder.study is not None:  # for `--study NAME` alone: the config this study's model comes from
        from lightning_tau.tuner.study import set_user_attr  # here: the grid study imports Optuna

        set_user_attr(finder.study.study, CONFIG_ATTR, str(args.config.resolve()) if args.config is not None else None)
    grid = finder.total_runs  # the last round's: with the seeds (seeds="auto") and the points the fit added
    if result is None:
        elsewhere = len(finder.study.running_elsewhere()) if finder.study is not None else 0
        print(
            f"No trial left to take: {finder.trained_runs} trained here, {grid - finder.pending_runs} of {grid}"
            f" complete, {elsewhere} still training elsewhere. Run the command again (without --no-wait) for the"
            " suggestion."
        )
        return 0
    if finder.reused_runs:
        print(f"({finder.reused_runs} of {grid} trials were complete in the study before this command.)")
    studies = finder.studies if finder.axis.scaling else [finder.study]
    for study in studies:  # the names `--study` and `TimescaleFinder(study_name=...)` reopen
        print(f"Study: {study.study.study_name} (in {study.shown})")
    target = _target(args, finder.axis)
    if target is not None:
        print(target_line(result.predict(target), finder.axis))
    code = _write_results(args, result, args.out / result_folder(finder))
    if code == 0:
        print(f"TensorBoard logs: tensorboard --logdir {args.out / 'tb'}")
    return code


def target_line(prediction: Any, axis: Axis | str) -> str:
    """What ``--target-dataset-size`` / ``--target-width`` print: the best ``tau_epoch`` predicted there
    (:meth:`AxisResult.predict <lightning_tau.tuner.analysis.axis_result.AxisResult.predict>`), its interval and what it rests on.

    Example:
        >>> from lightning_tau.tuner.analysis.prediction import Prediction
        >>> p = Prediction(8000.0, 6.96, 4.9, 9.8, 0.9, 2.0, "the measured exponent -0.39", -0.39, -0.29,
        ...                notes="4 scales: the lack of fit rests on 1 degree of freedom.")
        >>> print(target_line(p, "dataset_size"))
        At N = 8000 (x2 beyond the measured range): tau_epoch 6.96, 90% prediction interval 4.9 to 9.8 (the measured exponent -0.39; between the last two measured sizes the best tau_epoch moved as N^-0.29). 4 scales: the lack of fit rests on 1 degree of freedom.
    """  # noqa: E501
    axis = resolve_axis(axis, "target_line")
    where = axis.scale_text(setting(prediction.scale))
    beyond = (
        f" (x{setting(prediction.extrapolation)} beyond the measured range)" if prediction.extrapolation > 1 else ""
    )
    interval = (
        f"{prediction.level:.0%} prediction interval {setting(prediction.low)} to {setting(prediction.high)}"
        if prediction.low is not None and prediction.high is not None
        else "no prediction interval"
    )
    moved = f"best {axis.x_label} moved as {axis.scale_symbol}^"
    last_two = axis.point_nouns
    text = (
        f"At {where}{beyond}: tau_epoch {setting(prediction.tau_epoch)}, {interval} ({prediction.basis}; between the"
        f" last two measured {last_two} the {moved}{exponent(prediction.local_exponent, sign=False)})."
    )
    return f"{text} {prediction.notes}".rstrip()


def _write_results(args: argparse.Namespace, result: Any, folder: Path) -> int:
    """Write the JSON summary and the figure (into the study's ``folder`` under ``--out``, each study's own: none
    overwrites another's), each through :mod:`lightning_tau.outputs`' check; the exit code."""
    from lightning_tau.outputs import OutputError

    kept = "The trials are stored: run the command again to write it."
    try:
        print(f"JSON: {result.save_json(args.json or folder / 'finder.json')}")
        if not args.no_plot:
            print(f"Figure: {result.plot(folder / 'tau_finder.png')}")
    except OutputError as err:
        option = "--json" if args.json is not None and err.path == args.json else "--out"
        return _error(f"argument {option}: {err} {kept}", 2)
    except OSError as err:
        return _error(f"cannot write the result: {err}. {kept}", 1)
    return 0
