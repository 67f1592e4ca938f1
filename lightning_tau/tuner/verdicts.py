"""What a scaling fit says, in one sentence: which published width rules its interval admits, and whether "tune on a
fraction, train on all" holds.

The fit is :func:`lightning_tau.tuner.stats.fit_scaling`'s (:class:`~lightning_tau.tuner.stats.ScalingFit`);
:func:`width_verdict` compares its interval with the published width rules (:data:`WIDTH_RULES`),
:func:`size_verdict` with the grid step of the dataset-size axis. Pure (numpy and the standard library only).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from lightning_tau.tuner.stats import ScalingFit

__all__ = ["WIDTH_RULES", "WIDTH_RULE_SOURCES", "size_verdict", "width_verdict"]

#: The published width rules, as the exponent of the best ``λ_base`` in the width multiplier ``s`` when the
#: callback runs at ``width_exponent=1`` (``λ = s λ_base`` on μP hidden matrices); the rule's ``α`` is
#: ``1 + exponent``. Sources in :data:`WIDTH_RULE_SOURCES`.
WIDTH_RULES: dict[str, float] = {
    "Wang & Aitchison": 0.0,  # tau_iter fixed across widths: λ ∝ s (α = 1); u-μP's independent decay is the same
    "Fan et al.": -0.5,  # λ ∝ √s (α = 1/2)
    "Qiu et al.": -1.0,  # independent decay ∝ 1/width, i.e. η λ ∝ 1/s (α = 0)
}

#: Where each rule of :data:`WIDTH_RULES` is published.
WIDTH_RULE_SOURCES: dict[str, str] = {
    "Wang & Aitchison": "ICML 2025, Sec. 4.2",
    "Fan et al.": "arXiv 2510.15262",
    "Qiu et al.": "arXiv 2512.05620",
}


def _frac(value: float) -> str:
    """``-0.5`` as ``-1/2``; a whole number without a point."""
    f = Fraction(value).limit_denominator(8)
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def _rule(name: str) -> str:
    e = WIDTH_RULES[name]
    return f"{name} ({_frac(e)}, α = {_frac(1 + e)})"


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _level(fit: ScalingFit) -> str:
    return f"{fit.level * 100:g} %"


def width_verdict(fit: ScalingFit) -> str:
    """One sentence: which of the published width rules (:data:`WIDTH_RULES`) the interval admits and excludes.

    With no interval it says so and why, and names the rule the point estimate is nearest to without claiming it.

    Example:
        >>> fit = ScalingFit(-0.07, (-0.15, -0.01), None, 0.95, [], [], [], 0.0, False, [])
        >>> width_verdict(fit)
        'The 95 % interval [-0.15, -0.01] of the exponent admits none of the published rules, excluding Wang & Aitchison (0, α = 1), Fan et al. (-1/2, α = 1/2) and Qiu et al. (-1, α = 0): the measured α is 0.93.'
        >>> fit = ScalingFit(-0.4, (-0.7, 0.1), None, 0.95, [], [], [], 0.0, False, [])
        >>> width_verdict(fit)
        'The 95 % interval [-0.70, +0.10] of the exponent admits Wang & Aitchison (0, α = 1) and Fan et al. (-1/2, α = 1/2) and excludes Qiu et al. (-1, α = 0).'
        >>> fit = ScalingFit(-0.4, None, "1 seed: an interval needs at least 2", 0.95, [], [], [], 0.0, False, [])
        >>> width_verdict(fit)
        "No interval (1 seed: an interval needs at least 2); the exponent -0.40 is nearest Fan et al.'s -1/2 (α = 1/2), which this does not establish."
    """  # noqa: E501
    if fit.ci is None:
        nearest = min(WIDTH_RULES, key=lambda name: abs(WIDTH_RULES[name] - fit.exponent))
        e = WIDTH_RULES[nearest]
        return (
            f"No interval ({fit.ci_reason}); the exponent {fit.exponent:+.2f} is nearest {nearest}'s {_frac(e)}"
            f" (α = {_frac(1 + e)}), which this does not establish."
        )
    lo, hi = fit.ci
    admitted = [name for name, e in WIDTH_RULES.items() if lo <= e <= hi]
    excluded = [name for name in WIDTH_RULES if name not in admitted]
    head = f"The {_level(fit)} interval [{lo:+.2f}, {hi:+.2f}] of the exponent"
    if not admitted:
        return (
            f"{head} admits none of the published rules, excluding {_join([_rule(n) for n in excluded])}: the"
            f" measured α is {1 + fit.exponent:.2f}."
        )
    if not excluded:
        return (
            f"{head} admits all of the published rules, {_join([_rule(n) for n in admitted])}: it cannot tell them"
            " apart (more seeds or a wider range of widths would narrow it)."
        )
    return f"{head} admits {_join([_rule(n) for n in admitted])} and excludes {_join([_rule(n) for n in excluded])}."


def size_verdict(fit: ScalingFit) -> str:
    """One sentence for the dataset-size axis (``x = tau_epoch``, scale ``N``): does "tune on a fraction, train on
    all" hold for this model?

    It holds when the interval admits 0 and lets the best ``tau_epoch`` move by at most one grid step over the
    range of ``N``; it fails when the interval excludes 0; otherwise it is not established (too wide). With no
    interval it says so and how far the point estimate moves.

    Example:
        >>> fit = ScalingFit(0.02, (-0.05, 0.09), None, 0.95, [], [], [], 0.0, False, [], scales=[100, 250, 500],
        ...     xs=[2.0, 4.0, 8.0, 16.0])
        >>> size_verdict(fit)
        "'Tune on a fraction, train on all' holds for this model: the 95 % interval [-0.05, +0.09] of the exponent of the best tau_epoch in N admits 0, and over N = 100 to 500 the best tau_epoch moves by a factor of 1.03 (0.923 to 1.16 within the interval, inside one grid step of x2)."
    """  # noqa: E501
    if not fit.scales:
        raise ValueError("`size_verdict(fit=...)` is not valid: the fit has no `scales`; make it with `fit_scaling`.")
    n_lo, n_hi = fit.scales[0], fit.scales[-1]
    ratio = n_hi / n_lo
    moves = ratio**fit.exponent
    span = f"over N = {n_lo:g} to {n_hi:g}"
    if fit.ci is None:
        return (
            f"No interval ({fit.ci_reason}); {span} the best tau_epoch moves by a factor of {moves:.3g} (exponent"
            f" {fit.exponent:+.2f}), so whether 'tune on a fraction, train on all' holds is not established."
        )
    lo, hi = fit.ci
    head = f"the {_level(fit)} interval [{lo:+.2f}, {hi:+.2f}] of the exponent of the best tau_epoch in N"
    if not lo <= 0 <= hi:
        return (
            f"'Tune on a fraction, train on all' fails for this model: {head} excludes 0, and {span} the best"
            f" tau_epoch moves by a factor of {moves:.3g}; tune at full size, or scale a fraction's best tau_epoch"
            f" by (N / N_fraction)^{fit.exponent:.2f}."
        )
    step = float(np.median(np.diff(np.log(fit.xs)))) if len(fit.xs) > 1 else math.log(2.0)
    f_lo, f_hi = ratio**lo, ratio**hi
    within = f"{f_lo:.3g} to {f_hi:.3g} within the interval"
    if max(abs(lo), abs(hi)) * math.log(ratio) <= step + 1e-12:
        return (
            f"'Tune on a fraction, train on all' holds for this model: {head} admits 0, and {span} the best"
            f" tau_epoch moves by a factor of {moves:.3g} ({within}, inside one grid step of x{math.exp(step):.3g})."
        )
    return (
        f"'Tune on a fraction, train on all' is not rejected but not established: {head} admits 0, yet {span} the"
        f" best tau_epoch could move by a factor of {within}, more than one grid step (x{math.exp(step):.3g});"
        " more seeds would narrow it."
    )
