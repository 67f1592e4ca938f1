"""The best grid point of a ``grid x seeds`` curve: each seed's, and whether the seed mean's beats its grid neighbours
seed by seed (a paired interior test).

Pure (numpy and the standard library).

More: docs/finder.rst, module notes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lightning_tau import _checks
from lightning_tau._constants import GOALS, Goal
from lightning_tau.tuner.analysis.tdist import t_sf

__all__ = ["InteriorTest", "paired_interior", "per_seed_optima"]


# --- input checks (fit_scaling's too) -------------------------------------------------------------------------------


def _check_mode(mode: Any, owner: str) -> None:
    if mode not in GOALS:
        raise _checks.invalid(owner, "mode", mode, "use 'min' (a loss) or 'max'.")


def _check_level(level: Any, owner: str, name: str = "level") -> float:
    return _checks.in_range(owner, name, level, "use a number strictly between 0 and 1.", low=0, high=1)


def _as_table(values: Any, owner: str, name: str = "values") -> np.ndarray:
    """``values`` as a float ``grid x seeds`` array with at least one row and one column."""
    try:
        table = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"`{owner}({name}=...)` is not valid: use numbers, one row per grid point and one column per seed."
        ) from None
    if table.ndim != 2 or table.shape[0] < 1 or table.shape[1] < 1:
        raise ValueError(
            f"`{owner}({name}=...)` is not valid: got shape {table.shape}; use one row per grid point and one"
            " column per seed (grid x seeds), e.g. [[0.5], [0.4], [0.6]] for 3 grid points and 1 seed."
        )
    return table


def _check_positive_increasing(seq: Any, owner: str, name: str, min_len: int) -> list[float]:
    try:
        values = [float(v) for v in seq]
    except (TypeError, ValueError):
        raise ValueError(f"`{owner}({name}={seq!r})` is not valid: use a sequence of positive numbers.") from None
    if len(values) < min_len:
        raise ValueError(f"`{owner}({name}={values!r})` is not valid: it needs at least {min_len} values.")
    if any(not (math.isfinite(v) and v > 0) for v in values) or any(b <= a for a, b in zip(values, values[1:])):
        raise ValueError(f"`{owner}({name}={values!r})` is not valid: use positive numbers in increasing order.")
    return values


def _scores(table: np.ndarray, mode: Goal) -> np.ndarray:
    """Lower is better; a non-finite value (a diverged run) is the worst (``+inf``)."""
    scores = table if mode == "min" else -table
    return np.where(np.isfinite(scores), scores, np.inf)


# --- the paired interior test ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InteriorTest:
    """Whether a curve's best grid point beats each grid neighbour, in pairs of runs with the same seed.

    Attributes:
        interior: the best point beats each neighbour (one-sided paired t-test on the per-seed differences,
            ``p < level`` for both).
        level: the level of each one-sided test, e.g. 0.05.
        p_lower: p-value against the lower neighbour (``None`` at the grid's low edge or with one seed).
        p_upper: p-value against the upper neighbour (``None`` at the grid's high edge or with one seed).
        reason: one short phrase saying why, e.g. ``"beats both neighbours (paired, p<0.05)"``.
    """

    interior: bool
    level: float
    p_lower: float | None
    p_upper: float | None
    reason: str


def _paired_p(best: np.ndarray, neighbour: np.ndarray) -> float:
    """One-sided p-value that ``best`` scores lower than ``neighbour`` (paired over seeds; ``+inf`` = diverged)."""
    best_bad, nb_bad = ~np.isfinite(best), ~np.isfinite(neighbour)
    if np.any(best_bad & ~nb_bad):  # the best point diverged where the neighbour did not
        return 1.0
    finite = ~best_bad & ~nb_bad
    diffs = neighbour[finite] - best[finite]
    if np.any(nb_bad & ~best_bad) and diffs.size == 0:  # the neighbour diverged on every seed it could be compared
        return 0.0
    if diffs.size < 2:
        return 1.0
    mean, sd = float(diffs.mean()), float(diffs.std(ddof=1))
    if sd == 0.0:
        return 0.0 if mean > 0 else 1.0
    return t_sf(mean / (sd / math.sqrt(diffs.size)), diffs.size - 1)


def paired_interior(
    values: Any, best_index: int | None = None, mode: Goal = "min", level: float = 0.05
) -> InteriorTest:
    r"""Whether the best grid point of a ``grid x seeds`` curve beats each of its grid neighbours, seed by seed.

    For a neighbour ``n`` of the best point ``b`` the per-seed differences ``d_j = y_{n,j} - y_{b,j}`` (sign
    flipped for ``mode="max"``) are tested with a one-sided paired t-test, :math:`t = \bar d / (s_d / \sqrt{k})`
    on ``k - 1`` degrees of freedom, ``H0: mean d <= 0``. The point is interior when both neighbours' p-values are
    below ``level``. Pairing removes what a seed shares across the grid (its initialisation and batch order): a
    seed that is 0.1 worse everywhere does not hide a gap of 0.01 that every seed shows.

    With one seed there is no paired test and the point is not interior. A best point at the grid's edge is not
    interior. A diverged run (non-finite value) is the worst: a pair where only the neighbour diverged is left
    out of the t statistic (conservative), a neighbour that diverged on every seed is beaten (``p = 0``), and a
    pair where only the best point diverged gives ``p = 1``. With all differences equal the p-value is 0 when they
    are positive, else 1.

    Args:
        values: ``grid x seeds``: row ``i`` is grid point ``i``, column ``j`` seed ``j``.
        best_index: the row to test; by default the best row of the seed mean (a row with a non-finite value has
            mean ``inf``).
        mode: ``"min"`` (lower is better, a loss) or ``"max"``.
        level: the level of each one-sided test.

    Raises:
        ValueError: ``values`` not a non-empty 2-D array of numbers, ``best_index`` out of range, ``mode`` or
            ``level`` invalid, or (without ``best_index``) no row with every value finite.

    Example:
        The seeds sit 0.1 apart at every grid point, and the middle point is 0.01-0.03 better than its
        neighbours for every seed. The pairs see it (an unpaired t-test of the middle row against the first gives
        p = 0.39):

        >>> curve = [[0.62, 0.52, 0.43], [0.60, 0.50, 0.40], [0.63, 0.51, 0.42]]  # 3 grid points x 3 seeds
        >>> test = paired_interior(curve)
        >>> test.interior, test.reason, round(test.p_lower, 4), round(test.p_upper, 4)
        (True, 'beats both neighbours (paired, p<0.05)', 0.0099, 0.0371)
        >>> paired_interior([[0.6], [0.5], [0.7]]).reason
        '1 seed: no paired test'
        >>> paired_interior([[0.4, 0.5], [0.5, 0.6], [0.7, 0.8]]).reason
        'at the grid edge'
    """
    owner = "paired_interior"
    _check_mode(mode, owner)
    level = _check_level(level, owner)
    table = _as_table(values, owner)
    scores = _scores(table, mode)
    rows = scores.shape[0]
    if best_index is None:
        finite = np.isfinite(scores)
        means = np.where(np.all(finite, axis=1), np.where(finite, scores, 0.0).mean(axis=1), np.inf)
        if not np.any(np.isfinite(means)):
            raise ValueError(
                f"`{owner}(values=...)` is not valid: every grid point has a non-finite value (a diverged run);"
                " there is no best point to test."
            )
        best = int(np.argmin(means))
    else:
        if isinstance(best_index, bool) or not isinstance(best_index, (int, np.integer)) or not 0 <= best_index < rows:
            raise ValueError(
                f"`{owner}(best_index={best_index!r})` is not valid: use a row index from 0 to {rows - 1}."
            )
        best = int(best_index)
    return _interior_test(scores, best, level)


def _interior_test(scores: np.ndarray, best: int, level: float) -> InteriorTest:
    """:func:`paired_interior` on checked input: ``scores`` lower is better, ``+inf`` for a diverged run."""
    rows, seeds = scores.shape
    if seeds == 1:
        return InteriorTest(False, level, None, None, "1 seed: no paired test")
    p_lower = _paired_p(scores[best], scores[best - 1]) if best > 0 else None
    p_upper = _paired_p(scores[best], scores[best + 1]) if best < rows - 1 else None
    if p_lower is None or p_upper is None:
        reason = "at the grid edge" if rows > 1 else "1 grid point: no neighbour"
        return InteriorTest(False, level, p_lower, p_upper, reason)
    lower_ok, upper_ok = p_lower < level, p_upper < level
    if lower_ok and upper_ok:
        reason = f"beats both neighbours (paired, p<{level:g})"
    elif lower_ok or upper_ok:
        side, p = ("upper", p_upper) if lower_ok else ("lower", p_lower)
        reason = f"does not beat the {side} neighbour (paired, p={p:.2g})"
    else:
        reason = f"beats neither neighbour (paired, p={p_lower:.2g} and {p_upper:.2g})"
    return InteriorTest(lower_ok and upper_ok, level, p_lower, p_upper, reason)


def per_seed_optima(xs: Sequence[float], values: Any, mode: Goal = "min") -> list[float]:
    """The grid's best ``x`` for each seed (column) of a ``grid x seeds`` curve.

    A non-finite value (a diverged run) is the worst; a seed with no finite value gets ``nan``. Ties go to the
    smaller ``x``.

    Raises:
        ValueError: ``xs`` not positive and increasing, ``values`` not ``len(xs) x seeds``, or ``mode`` invalid.

    Example:
        >>> per_seed_optima([8.0, 16.0, 32.0], [[0.9, 0.5], [0.7, 0.6], [0.8, 0.7]])
        [16.0, 8.0]
        >>> per_seed_optima([8.0, 16.0, 32.0], [[0.9, 0.5], [0.7, 0.6], [0.8, 0.7]], mode="max")
        [8.0, 32.0]
    """
    owner = "per_seed_optima"
    _check_mode(mode, owner)
    grid = _check_positive_increasing(xs, owner, "xs", 1)
    scores = _scores(_as_table(values, owner), mode)
    if scores.shape[0] != len(grid):
        raise ValueError(
            f"`{owner}(values=...)` is not valid: it has {scores.shape[0]} rows for {len(grid)} grid points in `xs`."
        )
    return _grid_argbest(grid, scores)


def _grid_argbest(grid: list[float], scores: np.ndarray) -> list[float]:
    """:func:`per_seed_optima` on checked input: ``scores`` lower is better, ``+inf`` for a diverged run."""
    best = np.argmin(scores, axis=0)
    return [grid[i] if np.isfinite(scores[i, j]) else math.nan for j, i in enumerate(best.tolist())]
