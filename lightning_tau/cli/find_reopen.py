"""``lightning-tau find --study NAME``: reopen a study by its name alone, taking the options it was made with.

More: docs/finder.rst.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from lightning_tau.tuner.axes import AXES, resolve_axis

__all__ = ["CONFIG_ATTR", "REOPENED", "reopen_study"]

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
#: Of :data:`REOPENED`, what each point holds for itself along an axis whose points are subsets (its fraction).
_POINTS_OWN = frozenset({"fraction"})


def reopen_study(args: argparse.Namespace, defaults: dict[str, object]) -> str | None:
    """With ``--study NAME`` of an existing study: every option left at its default takes the study's value (grid,
    seeds, fraction, epochs, subset seed, monitor, mode, reduce, config), so the name alone reopens it. Returns a
    line saying so, or ``None`` for a study that does not exist yet (this command creates it). An axis sweep's
    points are studies of their own (``NAME_width=64``, ...): ``NAME`` alone reopens them all, with the axis and its
    points (``--axis``, ``--widths`` or ``--fractions``) taken from them too. ``defaults``: the command's option
    defaults by ``dest`` (an option equal to its default was not given).

    Raises:
        StorageError: the storage cannot be opened.
        ValueError: the study was not made by the finder, or ``NAME`` names sweeps along both axes.
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
            axis = _reopen_axis(args, backend, shown)
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
    for dest in ("monitor", "mode", "reduce"):
        if getattr(args, dest) == defaults[dest] and dest in finder and finder[dest] != getattr(args, dest):
            setattr(args, dest, finder[dest])
            taken.append(dest)
    config = attrs.get(CONFIG_ATTR)
    if args.config is None and isinstance(config, str):
        args.config = Path(config)
        taken.append("config")
    if not taken:
        return None
    return f"Reopening study {args.study!r} in {shown} with its own {', '.join('--' + t for t in taken)}."


def _reopen_axis(args: argparse.Namespace, backend: Any, shown: str) -> tuple[dict[str, Any], list[str]] | None:
    """For ``--study NAME`` of an axis sweep, whose points are the studies ``NAME_width=64``, ... (or
    ``NAME_dataset_size=0.1``, ...): the first point's user attributes and the options taken from the points (the
    axis, and its points where ``--widths`` / ``--fractions`` was not given); ``None`` if there are none."""
    import optuna

    from lightning_tau.tuner.study import SETTINGS_ATTR, settled_user_attrs

    points: dict[str, list[tuple[float, dict[str, Any]]]] = {}
    given = resolve_axis(args.axis)
    for name in optuna.get_all_study_names(backend):
        axis, equals, _ = name.removeprefix(f"{args.study}_").partition("=")
        along = AXES.get(axis)
        if not name.startswith(f"{args.study}_") or not equals or along is None or not along.scaling:
            continue
        attrs = settled_user_attrs(optuna.load_study(study_name=name, storage=backend))
        stored = attrs.get(SETTINGS_ATTR)
        point = stored.get("settings", {}).get("axis") if isinstance(stored, dict) else None
        if isinstance(point, dict) and point.get("axis") == axis and (given is along or not given.scaling):
            points.setdefault(axis, []).append((point[along.value_key], attrs))
    if not points:
        return None
    if len(points) > 1:
        raise ValueError(
            f"argument --study: {args.study!r} in {shown} names a sweep along --axis width and one along --axis"
            " dataset_size: pass --axis width or --axis dataset_size with it."
        )
    ((axis, found),) = points.items()
    found.sort(key=lambda point: point[0])
    along, taken = AXES[axis], []
    if given is not along:
        args.axis = along.name
        taken.append("axis")
    if along.values_argument is not None and getattr(args, along.values_argument) is None:
        setattr(args, along.values_argument, [along.value_type(value) for value, _ in found])
        taken.append(along.values_argument)
    return found[0][1], taken
