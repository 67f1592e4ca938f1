"""The best ``tau_epoch`` at a scale nobody measured (the full data, the wider model), with a prediction interval.

Pure (numpy and the standard library). The centre carries the anchor's best by the exponent used; the half-width joins
the exponent's interval, the anchor's own uncertainty and the lack of fit of one power law.

More: docs/finder.rst, module notes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lightning_tau import _checks
from lightning_tau.tuner.analysis.tdist import t_quantile

__all__ = ["Prediction", "predict_tau_epoch"]


@dataclass(frozen=True)
class Prediction:
    """The best ``tau_epoch`` predicted at a scale, with its interval (:func:`predict_tau_epoch`).

    Attributes:
        scale: the target: a dataset size ``N``, or a width.
        tau_epoch: the centre: what the callback applies there.
        low: the interval's lower end, or ``None`` (``notes`` says why).
        high: its upper end, or ``None``.
        level: the interval's nominal coverage.
        extrapolation: how far beyond the measured scales the target lies, as a factor (``s* / s_max`` above the
            range, ``s_min / s*`` below it); 1 inside the range.
        basis: the rule or the exponent the centre follows, in words (``"Wang & Aitchison (exponent 0)"``, ``"the
            measured exponent +0.31"``).
        exponent: that exponent, in the axis's units (of the best ``λ_base`` on the width axis).
        local_exponent: the exponent between the last two measured scales, in the same units: how the best moved
            where the range ends.
        parts: the interval's parts as log half-widths: ``"exponent"`` (low side, high side), ``"anchor"`` and
            ``"lack_of_fit"`` (each one number, at the target); empty without an interval.
        notes: what the interval rests on, in words (the number of scales; why there is none).
    """

    scale: float
    tau_epoch: float
    low: float | None
    high: float | None
    level: float
    extrapolation: float
    basis: str
    exponent: float
    local_exponent: float
    parts: dict[str, Any] = field(default_factory=dict)
    notes: str = ""

    @property
    def factor(self) -> float | None:
        """How wide the interval is, as the larger of ``tau_epoch / low`` and ``high / tau_epoch`` (``None``
        without one)."""
        if self.low is None or self.high is None:
            return None
        return max(self.tau_epoch / self.low, self.high / self.tau_epoch)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of every attribute (tuples as lists)."""
        return {
            "scale": self.scale,
            "tau_epoch": self.tau_epoch,
            "low": self.low,
            "high": self.high,
            "level": self.level,
            "extrapolation": self.extrapolation,
            "basis": self.basis,
            "exponent": self.exponent,
            "local_exponent": self.local_exponent,
            "parts": {k: list(v) if isinstance(v, tuple) else v for k, v in self.parts.items()},
            "notes": self.notes,
        }


def predict_tau_epoch(
    scales: Sequence[float],
    optima: Sequence[float],
    seed_optima: Sequence[Sequence[float]],
    *,
    anchor: int,
    anchor_tau: float,
    exponent: float,
    exponent_ci: tuple[float, float] | None,
    target: float,
    level: float = 0.95,
    anchor_range: tuple[float, float] | None = None,
    basis: str = "",
    sign: float = 1.0,
    no_interval: str | None = None,
) -> Prediction:
    """The best ``tau_epoch`` at ``target`` and its interval (see the module's text for the formula).

    Args:
        scales: the measured scales, increasing (dataset sizes, or widths), at least 2.
        optima: per scale, the best ``tau_epoch`` (the seed-mean curve's smoothed optimum).
        seed_optima: per scale, each seed's own best ``tau_epoch`` (non-finite values are left out).
        anchor: the index of the scale the carried ``tau_epoch`` starts from.
        anchor_tau: the ``tau_epoch`` there, as the callback reads it.
        exponent: the exponent carried, of ``tau_epoch`` in the scale (``-e`` for a width axis's ``λ_base``
            exponent ``e``, as ``tau_epoch ∝ 1 / λ_base``).
        exponent_ci: its interval at ``level``, in the same units, or ``None`` (then no interval).
        target: the scale to predict at.
        level: the interval's nominal coverage.
        anchor_range: the anchor's ``tau_epoch`` range (``FinderResult.tau_epoch_range``), or ``None``.
        basis: the rule or exponent followed, in words.
        sign: ``-1`` to report :attr:`Prediction.exponent` and ``local_exponent`` in ``λ_base`` units, else ``1``.
        no_interval: why there is no interval (with ``exponent_ci`` ``None``).

    Raises:
        ValueError: fewer than 2 scales, scales not positive and increasing, lengths that differ, a non-positive
            optimum, ``anchor`` out of range, ``target`` not positive, or ``level`` not in (0, 1).

    Example:
        Optima on one power law, ``tau_epoch ∝ N^-0.3``, measured at N = 1000 to 8000 with three seeds each, predicted
        at twice the largest N:

        >>> sizes = [1000.0, 2000.0, 4000.0, 8000.0]
        >>> optima = [20.0 * (n / 1000) ** -0.3 for n in sizes]
        >>> seeds = [[o * f for f in (0.9, 1.0, 1.1)] for o in optima]
        >>> p = predict_tau_epoch(sizes, optima, seeds, anchor=3, anchor_tau=optima[3], exponent=-0.3,
        ...     exponent_ci=(-0.35, -0.25), target=16000.0, basis="the measured exponent -0.30")
        >>> round(p.tau_epoch, 3), round(p.low, 2), round(p.high, 2), p.extrapolation, round(p.local_exponent, 6)
        (8.706, 5.81, 13.05, 2.0, -0.3)
        >>> p.notes
        'The lack of fit rests on the curvature of a parabola in log scale through the 4 optima (1 degree of freedom left to check it), with the seeds’ noise.'
    """  # noqa: E501
    owner = "predict_tau_epoch"
    level = _checks.in_range(owner, "level", level, "use a number strictly between 0 and 1.", low=0, high=1)
    s = [float(v) for v in scales]
    if len(s) < 2 or any(not (math.isfinite(v) and v > 0) for v in s) or any(b <= a for a, b in zip(s, s[1:])):
        raise _checks.invalid(owner, "scales", list(scales), "use at least 2 positive scales in increasing order.")
    if len(optima) != len(s) or len(seed_optima) != len(s):
        raise ValueError(
            f"`{owner}` needs one optimum and one list of seed optima per scale: got {len(s)} scales, {len(optima)}"
            f" optima and {len(seed_optima)} lists."
        )
    y_opt = [float(v) for v in optima]
    if any(not (math.isfinite(v) and v > 0) for v in y_opt):
        raise _checks.invalid(owner, "optima", list(optima), "use positive tau_epoch values.")
    if isinstance(anchor, bool) or not isinstance(anchor, int) or not 0 <= anchor < len(s):
        raise _checks.invalid(owner, "anchor", anchor, f"use an index of `scales` (0 to {len(s) - 1}).")
    target = _checks.positive_number(owner, "target", target)
    anchor_tau = _checks.positive_number(owner, "anchor_tau", anchor_tau)

    u = np.log(np.asarray(s))
    y = np.log(np.asarray(y_opt))
    k = len(s)
    u_bar = float(u.mean())
    s_uu = float(((u - u_bar) ** 2).sum())
    u_a, u_t = float(u[anchor]), math.log(target)
    distance = u_t - u_a
    centre = math.log(anchor_tau) + exponent * distance
    local = sign * float((y[-1] - y[-2]) / (u[-1] - u[-2]))
    if target > s[-1]:
        extrapolation = target / s[-1]
    elif target < s[0]:
        extrapolation = s[0] / target
    else:
        extrapolation = 1.0
    if k == 2:
        rests = "2 scales give no lack-of-fit information: the interval assumes one power law across and beyond them."
    elif k == 3:
        rests = (
            "The lack of fit rests on the curvature of a parabola in log scale through the 3 optima (it passes through"
            " them: nothing is left to check it by), with the seeds’ noise."
        )
    else:
        rests = (
            f"The lack of fit rests on the curvature of a parabola in log scale through the {k} optima ({k - 3}"
            f" degree{'s' if k > 4 else ''} of freedom left to check it), with the seeds’ noise."
        )
    common = dict(
        scale=float(target),
        tau_epoch=math.exp(centre),
        level=level,
        extrapolation=extrapolation,
        basis=basis,
        exponent=sign * float(exponent),
        local_exponent=local,
    )
    if exponent_ci is None:
        why = no_interval or "the exponent has none"
        return Prediction(low=None, high=None, notes=f"No interval: {why}.", **common)

    # E: the exponent's interval carried over the distance from the anchor (one side each)
    offsets = [(float(end) - exponent) * distance for end in exponent_ci] + [0.0]
    e_low, e_high = -min(offsets), max(offsets)

    # A: the anchor's own uncertainty, grown as a regression prediction interval's outside the measured range
    logs = [np.log([v for v in row if math.isfinite(v) and v > 0]) for row in seed_optima]
    t_half = 0.0
    at_anchor = logs[anchor]
    if at_anchor.size >= 2:
        t_half = t_quantile((1 + level) / 2, at_anchor.size - 1) * float(at_anchor.std(ddof=1)) / math.sqrt(
            at_anchor.size
        )
    a_low = a_high = t_half
    if anchor_range is not None and all(math.isfinite(v) and v > 0 for v in anchor_range):
        a_low = max(a_low, math.log(anchor_tau / anchor_range[0]))
        a_high = max(a_high, math.log(anchor_range[1] / anchor_tau))
    end = min(max(u_t, float(u[0])), float(u[-1]))  # the nearer end of the measured range (the target itself inside)

    def spread(at: float) -> float:
        return 1 + 1 / k + (at - u_bar) ** 2 / s_uu

    m = spread(u_t) / spread(end)

    # C: the lack of fit, from the curvature of a parabola through the optima and its noise
    lack = 0.0
    if k >= 3:
        design = np.vander(u - u_bar, 3)
        curvature = float(np.linalg.lstsq(design, y, rcond=None)[0][0])
        pooled = [row.var(ddof=1) for row in logs if row.size >= 2]
        counts = [row.size for row in logs if row.size >= 2]
        se = 0.0
        if pooled:
            noise = math.sqrt(float(np.mean(pooled)) / float(np.mean(counts)))  # one optimum's: a seed mean's
            se = noise * math.sqrt(float(np.linalg.inv(design.T @ design)[0, 0]))
            df = sum(c - 1 for c in counts)
            se *= t_quantile((1 + level) / 2, df)
        lack = (abs(curvature) + se) * abs(distance * (u_t + u_a - 2 * u_bar))

    low = math.sqrt(e_low**2 + a_low**2 * m + lack**2)
    high = math.sqrt(e_high**2 + a_high**2 * m + lack**2)
    return Prediction(
        low=math.exp(centre - low),
        high=math.exp(centre + high),
        parts={
            "exponent": (e_low, e_high),
            "anchor": (a_low * math.sqrt(m), a_high * math.sqrt(m)),
            "lack_of_fit": lack,
        },
        notes=rests,
        **common,
    )
