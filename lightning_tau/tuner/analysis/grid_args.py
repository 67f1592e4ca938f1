"""The grid's arguments, checked without torch, Lightning or Optuna: ``tau_epochs``, ``seeds`` and
``max_grid_extensions``.

``TimescaleFinder`` checks them here (through :mod:`lightning_tau.tuner.checks`, which re-exports these names), and
``lightning-tau find`` runs the same checks before it imports torch, so a repeated ``--tau-epochs`` or ``--seeds`` is
a usage error in a second, in the same words as from Python.
"""

from __future__ import annotations

from collections.abc import Sequence

from lightning_tau import _checks

__all__ = ["MAX_SEED", "check_grid", "check_grid_extensions", "check_seeds", "tau_name"]

#: The largest seed ``seed_everything`` (numpy) accepts.
MAX_SEED = 2**32 - 1


def tau_name(tau: float) -> str:
    """``tau`` as the grid compares and names it: 6 significant digits."""
    return f"{tau:.6g}"


def check_grid(tau_epochs: Sequence[float]) -> tuple[float, ...]:
    """A ``tau_epochs`` argument: positive, finite and distinct (to 6 significant digits), as a sorted tuple."""
    if isinstance(tau_epochs, (str, bytes)) or not isinstance(tau_epochs, Sequence) or not tau_epochs:
        raise _checks.invalid(
            "TimescaleFinder",
            "tau_epochs",
            tau_epochs,
            "use a non-empty sequence of positive numbers (epochs), e.g. (2, 4, 8, 16, 32, 64, 128).",
        )
    for tau in tau_epochs:
        _checks.positive_number(
            "TimescaleFinder",
            "tau_epochs",
            tau,
            f"{tau!r} is not a positive finite number of epochs.",
            shown=repr(list(tau_epochs)),
        )
    grid = tuple(sorted(float(t) for t in tau_epochs))
    names = [tau_name(t) for t in grid]
    if len(set(names)) != len(names):
        raise ValueError(
            f"`TimescaleFinder(tau_epochs={list(tau_epochs)!r})` repeats a value (to 6 significant digits):"
            " give each tau_epoch once."
        )
    return grid


def check_seeds(seeds: Sequence[int]) -> tuple[int, ...]:
    """A ``seeds`` argument: distinct integers that numpy accepts as seeds."""
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence) or not seeds:
        raise _checks.invalid("TimescaleFinder", "seeds", seeds, "use a non-empty sequence of integers.")
    for seed in seeds:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise _checks.invalid(
                "TimescaleFinder", "seeds", seeds, f"{seed!r} is not an integer.", shown=repr(list(seeds))
            )
        if not 0 <= seed <= MAX_SEED:
            raise _checks.invalid(
                "TimescaleFinder",
                "seeds",
                seeds,
                f"{seed} is not a seed numpy accepts; use integers from 0 to {MAX_SEED}.",
                shown=repr(list(seeds)),
            )
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"`TimescaleFinder(seeds={list(seeds)!r})` repeats a seed: give each seed once.")
    return tuple(seeds)


def check_grid_extensions(max_grid_extensions: object) -> int:
    """A ``max_grid_extensions`` argument: an integer of at least 0, the most steps the finder adds to the grid at
    each end where an optimum sits on it (0: the grid as given, nothing added).

    Example:
        >>> check_grid_extensions(3), check_grid_extensions(0)
        (3, 0)
        >>> check_grid_extensions(-1)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleFinder(max_grid_extensions=-1)` is not valid: use an integer ...
    """
    return _checks.integer(
        "TimescaleFinder",
        "max_grid_extensions",
        max_grid_extensions,
        "use an integer >= 0, the most steps the grid grows by at each end where an optimum sits on it (0: none),"
        " e.g. 3.",
        minimum=0,
    )
