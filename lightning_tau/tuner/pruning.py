"""The finder's pruning: the Optuna pruners it names, the pruner as a study's settings hold it, and the pruned seeds.

More: docs/finder.rst, 'Pruning: stop hopeless tau_epoch runs early'.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from optuna.pruners import BasePruner

from lightning_tau.tuner.analysis.curve import PRUNER_NAMES
from lightning_tau.tuner.checks import PrunerName

__all__ = ["jsonable", "make_pruner", "pruned_sibling", "pruner_setting"]


def make_pruner(name: PrunerName, epochs: int) -> BasePruner:
    """The Optuna pruner ``TimescaleFinder(pruner=name)`` uses for runs of ``epochs`` epochs (it judges the first
    seed's runs, which go first, ``tau_epoch`` by ``tau_epoch``).

    - ``"median"``: ``MedianPruner(n_startup_trials=3, n_warmup_steps=epochs // 8)``: a run is stopped at an epoch
      after the first eighth when its best value so far is worse than the median of the finished runs' values at
      that epoch, once 3 runs have finished (the first seed's 3 smallest ``tau_epoch`` values never are).
    - ``"successive_halving"``: ``SuccessiveHalvingPruner(min_resource=max(1, epochs // 8), reduction_factor=3)``.
    - ``"hyperband"``: ``HyperbandPruner(min_resource=max(1, epochs // 8), max_resource=epochs,
      reduction_factor=3)``.

    Chosen on the digits task of ``benchmarks/eval_finder.py`` (``benchmarks/README.md``).

    Example:
        >>> type(make_pruner("median", epochs=40)).__name__
        'MedianPruner'
    """
    from optuna.pruners import HyperbandPruner, MedianPruner, SuccessiveHalvingPruner

    if name == "median":
        return MedianPruner(n_startup_trials=3, n_warmup_steps=epochs // 8)
    if name == "successive_halving":
        return SuccessiveHalvingPruner(min_resource=max(1, epochs // 8), reduction_factor=3)
    if name == "hyperband":
        return HyperbandPruner(min_resource=max(1, epochs // 8), max_resource=epochs, reduction_factor=3)
    raise ValueError(f"`make_pruner(name={name!r})` is not valid: use one of {', '.join(map(repr, PRUNER_NAMES))}.")


def pruner_setting(pruner: Any) -> Any:
    """The pruner as the study's settings hold it: its name, or an instance's class and attributes."""
    if pruner is None or isinstance(pruner, str):
        return pruner
    return jsonable({"class": f"{type(pruner).__module__}.{type(pruner).__qualname__}", **vars(pruner)})


def pruned_sibling(
    records: Mapping[tuple[float, int], Mapping[str, Any]], tau: float, seed: int
) -> tuple[int, int] | None:
    """``(seed, epochs)`` of a trained run at ``tau`` that was pruned (``None``: none was)."""
    for (other_tau, other_seed), record in sorted(records.items()):
        if other_tau == tau and other_seed != seed and "pruned" in record and "groups" in record:
            return other_seed, int(record["pruned"]["after_epoch"])
    return None


def jsonable(value: Any) -> Any:
    """``value`` as JSON-ready data: containers recursively, numbers and strings as they are, the rest as repr.

    Example:
        >>> jsonable({"a": (1, float("inf")), 2: None})
        {'a': [1, 'inf'], '2': None}
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    # the same in every process: no address, and the starting script's objects named as its own (`__main__`)
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value)).replace("__mp_main__.", "__main__.")
