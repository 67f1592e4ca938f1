"""``lightning-tau find --study NAME``: reopen a study by its name alone, taking the options it was made with.

More: docs/finder.rst.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from lightning_tau.errors import TimescaleError
from lightning_tau.tuner.axes import BATCH_SIZE, Axis, resolve_axis

__all__ = ["CONFIG_ATTR", "FINDER_REOPENED", "REOPENED", "reopen_study"]

#: The study's user attribute holding the ``--config`` its model comes from (``None``: the digits task).
CONFIG_ATTR = "config"
#: Options ``--study NAME`` takes from the study when left at their defaults: ``(dest, settings key)``.
REOPENED = (
    ("tau_epochs", "tau_epochs"),
    ("seeds", "seeds"),
    ("fraction", "fraction"),
    ("epochs", "epochs"),
    ("subset_seed", "subset_seed"),
    ("pruner", "pruner"),
)
#: Options ``--study NAME`` takes, when left at their defaults, from what the finished answer was read with (the
#: study's ``finder`` user attribute, :func:`~lightning_tau.tuner.collect.store_answer`): not in the study's key, as
#: they change no trial, but a reopened study read or extended another way would answer otherwise.
FINDER_REOPENED = ("monitor", "mode", "reduce", "max_grid_extensions")
#: Of :data:`REOPENED`, what each point holds for itself along an axis whose points are subsets (its fraction).
_POINTS_OWN = frozenset({"fraction"})


def reopen_study(args: argparse.Namespace, defaults: dict[str, object]) -> str | None:
    """With ``--study NAME`` of an existing study: every option left at its default takes the study's value (grid,
    seeds, fraction, epochs, subset seed, monitor, mode, reduce, grid extensions, config), so the name alone reopens
    it. Returns a line saying so, or ``None`` for a study that does not exist yet (this command creates it). An axis
    sweep's points are studies of their own (``NAME_width=64``, ``NAME_batch_size_lr_sqrt=32``, ...): ``NAME``
    alone reopens them all, with the axis and its points (``--axis``, ``--widths``, ``--fractions`` or
    ``--batch-sizes``) taken from them too, and along the batch size its ``--lr-scaling`` and ``--beta2``. ``defaults``: the command's option
    defaults by ``dest`` (an option equal to its default was not given).

    Raises:
        StorageError: the storage cannot be opened.
        ValueError: the study was not made by the finder, ``NAME`` names sweeps along two axes (or at two
            ``--lr-scaling``), or ``--lr-scaling`` was given other than the sweep's.
    """
    import optuna

    from lightning_tau.tuner.study import SETTINGS_ATTR, quiet_optuna, settled_user_attrs
    from lightning_tau.tuner.study import JOURNAL_NAME, open_storage

    journal = args.out / JOURNAL_NAME if args.storage is None else Path(args.storage)
    if (args.storage is None or "://" not in args.storage) and not journal.is_file():
        return None  # no storage yet, so no study
    backend, shown = open_storage(args.storage, args.out)
    taken = []
    with quiet_optuna():
        try:
            # a study another command created a moment ago may not hold its settings yet: wait for them
            attrs = settled_user_attrs(optuna.load_study(study_name=args.study, storage=backend))
        except KeyError:
            axis = _reopen_axis(args, backend, shown, defaults)
            if axis is None:
                return None
            attrs, taken = axis
    stored = attrs.get(SETTINGS_ATTR)
    if not isinstance(stored, dict) or not isinstance(stored.get("settings"), dict):
        raise ValueError(
            f"argument --study: the study {args.study!r} in {shown} was not made by `lightning-tau find` (it holds no"
            f" {SETTINGS_ATTR!r} settings). Pass another name, or leave --study out."
        )
    settings, finder = stored["settings"], attrs.get("finder") or {}
    for dest, key in REOPENED:
        if dest in _POINTS_OWN and resolve_axis(args.axis).subsets_per_point:
            continue  # each point's own
        if getattr(args, dest) == defaults[dest] and key in settings and settings[key] != getattr(args, dest):
            setattr(args, dest, settings[key])
            taken.append(dest.replace("_", "-"))
    for dest in FINDER_REOPENED:
        if getattr(args, dest) == defaults[dest] and dest in finder and finder[dest] != getattr(args, dest):
            setattr(args, dest, finder[dest])
            taken.append(dest.replace("_", "-"))
    config = attrs.get(CONFIG_ATTR)
    if args.config is None and isinstance(config, str):
        args.config = Path(config)
        taken.append("config")
    if not taken:
        return None
    return f"Reopening study {args.study!r} in {shown} with its own {', '.join('--' + t for t in taken)}."


def _reopen_axis(
    args: argparse.Namespace, backend: Any, shown: str, defaults: dict[str, object]
) -> tuple[dict[str, Any], list[str]] | None:
    """For ``--study NAME`` of an axis sweep, whose points are the studies ``NAME_width=64``, ... (or
    ``NAME_dataset_size=0.1``, ``NAME_batch_size_lr_sqrt=32``, ...): the first point's user attributes and the
    options taken from the points (the axis, its points where ``--widths`` / ``--fractions`` / ``--batch-sizes`` was
    not given, and along the batch size ``--lr-scaling`` and ``--beta2`` where left at their defaults); ``None`` if
    there are none. ``beta2="both"``'s points say ``"fixed"`` (its sweep shares their studies): its held round's
    study ``NAME_beta2=held_<axis>=<B>`` tells it."""
    import optuna

    from lightning_tau.tuner.study import SETTINGS_ATTR, settled_user_attrs

    points: dict[Axis, list[tuple[float, dict[str, Any]]]] = {}
    given = _given_axis(args)
    names = optuna.get_all_study_names(backend)
    for name in names:
        axis, equals, _ = name.removeprefix(f"{args.study}_").partition("=")
        along = _named_axis(axis)
        if not name.startswith(f"{args.study}_") or not equals or along is None:
            continue
        if given.scaling and _family(along) is not _family(given):
            continue
        attrs = settled_user_attrs(optuna.load_study(study_name=name, storage=backend))
        stored = attrs.get(SETTINGS_ATTR)
        point = stored.get("settings", {}).get("axis") if isinstance(stored, dict) else None
        if isinstance(point, dict) and point.get("axis") == axis:
            points.setdefault(along, []).append((point[along.value_key], attrs))
    if given in points:  # the given axis (and --lr-scaling) singles out its sweep
        points = {given: points[given]}
    if not points:
        return None
    if len(points) > 1:
        flags = " and ".join(_axis_flags(along) for along in points)
        raise ValueError(
            f"argument --study: {args.study!r} in {shown} names a sweep along each of {flags}: pass one of them with it."
        )
    ((along, found),) = points.items()
    found.sort(key=lambda point: point[0])
    axis_name, lr_scaling = _cli_axis(along)
    if lr_scaling != args.lr_scaling and args.lr_scaling != defaults["lr_scaling"]:
        raise ValueError(
            f"argument --study: {args.study!r} in {shown} is a sweep at --lr-scaling {lr_scaling} (its studies"
            f" {args.study}_{along.name}=...), not --lr-scaling {args.lr_scaling}: leave --lr-scaling out to reopen it,"
            " or pass another --study."
        )
    taken = []
    if _given_axis(args) is not along:
        if axis_name != args.axis:
            args.axis = axis_name
            taken.append("axis")
        if lr_scaling != args.lr_scaling:
            args.lr_scaling = lr_scaling
            taken.append("lr-scaling")
    if along.values_argument is not None and getattr(args, along.values_argument) is None:
        setattr(args, along.values_argument, [along.value_type(value) for value, _ in found])
        taken.append(along.values_argument.replace("_", "-"))
    if along.batch_per_point and args.beta2 == defaults["beta2"]:
        beta2 = _stored_beta2(found[0][1], f"{args.study}_beta2=held_{along.name}=", names)
        if beta2 is not None and beta2 != args.beta2:
            args.beta2 = beta2
            taken.append("beta2")
    return found[0][1], taken


def _named_axis(name: str) -> Axis | None:
    """The scaling axis whose name (an axis point study's ``<axis>`` in ``NAME_<axis>=<value>``) is ``name``: one of
    the registry's, or the batch axis at a scaled lr (``batch_size_lr_sqrt``); else ``None``."""
    try:
        along = resolve_axis(name)
    except TimescaleError:
        return None
    return along if along.name == name and along.scaling else None


def _family(along: Axis) -> Axis:
    """The axis ``--axis`` names for ``along``: the batch axis for each of its ``lr_scaling`` objects."""
    return BATCH_SIZE if along.batch_per_point else along


def _given_axis(args: argparse.Namespace) -> Axis:
    """The axis object of ``--axis`` (with ``--lr-scaling`` along the batch size)."""
    given = resolve_axis(args.axis)
    return BATCH_SIZE.with_lr_scaling(args.lr_scaling) if given.batch_per_point else given


def _cli_axis(along: Axis) -> tuple[str, str]:
    """``--axis`` and ``--lr-scaling`` of the axis object ``along``.

    Example:
        >>> _cli_axis(BATCH_SIZE.with_lr_scaling("sqrt")), _cli_axis(resolve_axis("width"))
        (('batch_size', 'sqrt'), ('width', 'none'))
    """
    if isinstance(along, type(BATCH_SIZE)):  # each lr_scaling's object is a BatchSizeAxis
        return BATCH_SIZE.name, along.lr_scaling
    return along.name, "none"


def _axis_flags(along: Axis) -> str:
    """The flags that name ``along``'s sweep: ``--axis width``, ``--axis batch_size --lr-scaling sqrt``."""
    axis_name, lr_scaling = _cli_axis(along)
    return f"--axis {axis_name}" + (f" --lr-scaling {lr_scaling}" if lr_scaling != "none" else "")


def _stored_beta2(attrs: dict[str, Any], held_prefix: str, names: list[str]) -> str | None:
    """A batch sweep's ``beta2``: ``"both"`` where its held round's study (a name starting ``held_prefix``) exists,
    else what the last sweep that opened its point asked (``attrs``' ``BETA2_ATTR``: ``"both"`` stopped before its
    held round), else what the point's settings say; ``None`` where they say nothing."""
    if any(name.startswith(held_prefix) for name in names):
        return "both"
    from lightning_tau.tuner.study import BETA2_ATTR, SETTINGS_ATTR

    if isinstance(attrs.get(BETA2_ATTR), str):
        return attrs[BETA2_ATTR]

    beta2 = attrs[SETTINGS_ATTR]["settings"]["axis"].get("beta2")
    return beta2 if isinstance(beta2, str) else None
