"""``beta2="both"`` on the batch-size axis: what holding Adam's ``β₂`` window in samples costs at the largest batch
against keeping the optimizer's ``β₂``, paired by seed.

At the largest batch ``B`` the best grid ``tau_epoch`` is trained twice per seed: with the optimizer's ``β₂``
("fixed", the sweep's own runs) and with ``β₂ ** (B / B_0)`` ("held in samples", Marek et al. 2025). The two runs of
a seed share the initialization and the batch order, so their difference is the choice's cost on that seed; the mean
over seeds has a paired Student t-interval. Pure (the standard library only).

More: docs/finder.rst, "Along the batch size".
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lightning_tau import _checks
from lightning_tau._constants import GOALS, Goal
from lightning_tau._numbers import cost as cost_text
from lightning_tau._numbers import setting, signed
from lightning_tau.tuner.analysis.tdist import paired_half_width

__all__ = ["Beta2Cost", "beta2_cost"]


@dataclass(frozen=True)
class Beta2Cost:
    """The paired comparison of ``β₂`` fixed and held in samples at the largest batch (see the module's text).

    Attributes:
        batch_size: the largest batch ``B``, where both were trained.
        reference_batch_size: the smallest batch ``B_0``; held in samples, ``β₂`` became ``β₂ ** (B / B_0)``.
        tau_epoch: the ``tau_epoch`` both were trained at (the best on the grid at ``B`` with ``β₂`` fixed).
        monitor: the metric compared.
        mode: ``"min"`` (a loss) or ``"max"``; a cost is positive when the choice is worse either way.
        seeds: the seeds, each a pair of runs.
        fixed: each seed's value with the optimizer's ``β₂``.
        held: each seed's value with ``β₂`` held in samples.
        level: the interval's level.

    Example:
        Three seeds whose held runs are each about 0.01 worse than their fixed ones (the seeds far apart, the pairs
        not):

        >>> c = beta2_cost({0: 1.0, 1: 2.0, 2: 3.0}, {2: 3.013, 0: 1.012, 1: 2.008}, batch_size=256,
        ...                reference_batch_size=64, tau_epoch=8.0, monitor="val_loss")
        >>> [round(d, 6) for d in c.per_seed], round(c.mean, 6), c.better
        ([0.012, 0.008, 0.013], 0.011, 'fixed')
        >>> print(c.sentence())
        β₂ at B=256, tau_epoch=8 (val_loss, min; held minus fixed, paired over 3 seeds, 95% interval): fixed +0.000; held in samples (β₂^4) +0.011 [+0.004, +0.018]. Keeping β₂ fixed is better at B=256 (the interval lies above 0).
    """  # noqa: E501

    batch_size: int
    reference_batch_size: int
    tau_epoch: float
    monitor: str
    mode: Goal
    seeds: tuple[int, ...]
    fixed: tuple[float, ...]
    held: tuple[float, ...]
    level: float = 0.95

    @property
    def ratio(self) -> float:
        """``B / B_0``: held in samples, ``β₂`` is raised to this power."""
        return self.batch_size / self.reference_batch_size

    @property
    def per_seed(self) -> tuple[float, ...]:
        """Each seed's cost of holding ``β₂`` in samples: held minus fixed (fixed minus held where ``mode`` is
        ``"max"``), so positive is worse."""
        sign = 1.0 if self.mode == "min" else -1.0
        return tuple(sign * (h - f) for f, h in zip(self.fixed, self.held))

    @property
    def reason(self) -> str | None:
        """Why there is no mean (a run that diverged) or no interval (one seed), else ``None``."""
        bad = [
            f"seed {s} with β₂ {'fixed' if not math.isfinite(f) else 'held in samples'}"
            for s, f, h in zip(self.seeds, self.fixed, self.held)
            if not (math.isfinite(f) and math.isfinite(h))
        ]
        if bad:
            return f"a run diverged (no finite {self.monitor}: {', '.join(bad)})"
        if len(self.seeds) < 2:
            return "1 seed: an interval needs at least 2"
        return None

    @property
    def mean(self) -> float | None:
        """The mean of :attr:`per_seed`, or ``None`` where a run diverged."""
        costs = self.per_seed
        if not all(math.isfinite(c) for c in costs):
            return None
        return math.fsum(costs) / len(costs)

    @property
    def ci(self) -> tuple[float, float] | None:
        """The paired t-interval of :attr:`mean` at :attr:`level`, or ``None`` (:attr:`reason` says why)."""
        mean = self.mean
        if mean is None or len(self.seeds) < 2:
            return None
        half = paired_half_width(self.per_seed, self.level)
        return (mean - half, mean + half)

    @property
    def better(self) -> str | None:
        """``"fixed"`` or ``"held"`` where the interval lies on one side of 0, else ``None`` (it contains 0, or
        there is no interval)."""
        ci = self.ci
        if ci is None or ci[0] <= 0 <= ci[1]:
            return None
        return "fixed" if ci[0] > 0 else "held"

    def decision(self) -> str:
        """Which choice is better, in words, or why the runs do not say."""
        at = f"at B={self.batch_size}"
        if self.mean is None or self.ci is None:
            return f"No decision {at}: {self.reason}."
        if self.better == "fixed":
            return f"Keeping β₂ fixed is better {at} (the interval lies above 0)."
        if self.better == "held":
            return f"Holding β₂'s window in samples is better {at} (the interval lies below 0)."
        return f"The interval contains 0: the seeds do not tell the two apart {at}."

    def sentence(self) -> str:
        """The line the table prints: the cost of each choice (fixed is the reference) and the decision."""
        seeds = len(self.seeds)
        what = (
            f"{self.monitor}, {self.mode}; held minus fixed, paired over {seeds} seed{'s' if seeds != 1 else ''},"
            f" {self.level:.0%} interval"
        )
        held = cost_text(self.mean, self.ci, None if self.mean is not None else self.reason)
        decimals = re.match(r"[+-]\d+\.(\d+)", held)  # the reference's zero at the cost's precision
        fixed = signed(0.0, len(decimals.group(1)) if decimals else 3)
        return (
            f"β₂ at B={self.batch_size}, tau_epoch={setting(self.tau_epoch)} ({what}): fixed {fixed};"
            f" held in samples (β₂^{setting(self.ratio)}) {held}. {self.decision()}"
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: the fields (which :meth:`from_json` reads back), then the cost per seed, its mean and
        interval (``None`` where there is none), the reason, which is better and the sentence."""
        ci = self.ci
        return {
            "batch_size": self.batch_size,
            "reference_batch_size": self.reference_batch_size,
            "tau_epoch": self.tau_epoch,
            "monitor": self.monitor,
            "mode": self.mode,
            "seeds": list(self.seeds),
            "fixed": [_finite_or_none(v) for v in self.fixed],
            "held": [_finite_or_none(v) for v in self.held],
            "level": self.level,
            "per_seed": [_finite_or_none(v) for v in self.per_seed],
            "mean": self.mean,
            "ci": list(ci) if ci is not None else None,
            "reason": self.reason,
            "better": self.better,
            "sentence": self.sentence(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Beta2Cost:
        """The comparison :meth:`to_json` wrote (a value written as ``None``, a run that diverged, reads as nan).

        Example:
            >>> c = beta2_cost({0: 1.0, 1: 2.0}, {0: 1.5, 1: 2.25}, batch_size=64, reference_batch_size=16,
            ...                tau_epoch=4.0, monitor="val_loss")
            >>> Beta2Cost.from_json(c.to_json()) == c
            True
        """
        return cls(
            batch_size=int(data["batch_size"]),
            reference_batch_size=int(data["reference_batch_size"]),
            tau_epoch=float(data["tau_epoch"]),
            monitor=str(data["monitor"]),
            mode=data["mode"],
            seeds=tuple(int(s) for s in data["seeds"]),
            fixed=tuple(math.nan if v is None else float(v) for v in data["fixed"]),
            held=tuple(math.nan if v is None else float(v) for v in data["held"]),
            level=float(data["level"]),
        )


def beta2_cost(
    fixed: Mapping[int, float],
    held: Mapping[int, float],
    *,
    batch_size: int,
    reference_batch_size: int,
    tau_epoch: float,
    monitor: str,
    mode: Goal = "min",
    level: float = 0.95,
) -> Beta2Cost:
    """The paired comparison of ``fixed`` and ``held`` (each seed's value, by seed): every seed of ``fixed`` is
    paired with its own run in ``held``.

    Raises:
        ValueError: the two hold other seeds (a pair is two runs of one seed), none at all, or a bad ``mode`` or
            ``level``.

    Example:
        >>> beta2_cost({0: 1.0}, {1: 1.0}, batch_size=64, reference_batch_size=16, tau_epoch=4.0, monitor="loss")
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `beta2_cost(held=...)` is not valid: got seeds [1]; use the seeds of `fixed` ([0]): each pair is two runs of one seed.
    """  # noqa: E501
    owner = "beta2_cost"
    if mode not in GOALS:
        raise _checks.invalid(owner, "mode", mode, "use 'min' (a loss) or 'max'.")
    level = _checks.in_range(owner, "level", level, "use a number strictly between 0 and 1.", low=0, high=1)
    seeds = sorted(fixed)
    if not seeds:
        raise _checks.invalid(owner, "fixed", dict(fixed), "use at least one seed's value.")
    if sorted(held) != seeds:
        raise _checks.invalid(
            owner,
            "held",
            held,
            f"got seeds {sorted(held)}; use the seeds of `fixed` ({seeds}): each pair is two runs of one seed.",
            shown="...",
        )
    return Beta2Cost(
        batch_size=int(batch_size),
        reference_batch_size=int(reference_batch_size),
        tau_epoch=float(tau_epoch),
        monitor=monitor,
        mode=mode,
        seeds=tuple(seeds),
        fixed=tuple(float(fixed[s]) for s in seeds),
        held=tuple(float(held[s]) for s in seeds),
        level=level,
    )


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None
