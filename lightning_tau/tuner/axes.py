"""The finder's width and dataset-size axes: the result of a ``tau_epoch`` sweep at several widths or data sizes.

No Lightning import (numpy; matplotlib when :meth:`AxisResult.plot` draws). The statistics (the exponent, its
interval, the paired interior tests) come from :mod:`lightning_tau.tuner.stats`, the verdicts from
:mod:`lightning_tau.tuner.verdicts`; the Lightning side,
which trains the runs, is :class:`~lightning_tau.tuner.finder.TimescaleFinder` with ``axis="width"`` or
``axis="dataset_size"``.

- **Width** (``axis="width"``): at every width the finder sweeps ``tau_epoch`` with
  ``TimescaleCallback(tau_epoch=..., width_exponent=1)`` on a μP model. Each group's weight decay is then
  ``s / (lr_base * M * tau_epoch)`` for a group of width multiplier ``s``, so the sweep is a sweep of
  ``λ_base = 1 / (lr_base * M * tau_epoch)`` at a fixed ``lr_base``, the same grid at every width (Wang & Aitchison,
  ICML 2025, Sec. 4.2). ``exponent`` is the slope of log best ``λ_base`` on log width: 0 if the best timescale is
  the same at every width (``width_exponent = 1``, Wang & Aitchison), -1/2 for Fan et al. (arXiv 2510.15262,
  ``width_exponent = 1/2``), -1 for independent decay ∝ 1/width (Qiu et al., arXiv 2512.05620,
  ``width_exponent = 0``). The ``width_exponent`` to use is ``1 + exponent``.
- **Dataset size** (``axis="dataset_size"``): the sweep on subsets holding each fraction of the training set;
  ``exponent`` is the slope of log best ``tau_epoch`` on log ``N``: 0 when "tune on a fraction, train on all"
  holds (Wang & Aitchison, Sec. 4.1).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from lightning_tau import _checks
from lightning_tau._table import table_lines
from lightning_tau.tuner.plain import metric_words, plain_ticks, save_figure, thin_ticks, wrap
from lightning_tau.tuner.result import FinderResult, write_json
from lightning_tau.tuner.rule_costs import rule_cost
from lightning_tau.tuner.rules import DEFAULT_TOLERANCE, half_width, rules_for
from lightning_tau.tuner.stats import ScalingFit, fit_scaling
from lightning_tau.tuner.verdicts import (
    RuleVerdict,
    advice,
    cost_text,
    judge,
    rule_to_follow,
    signed,
    size_verdict,
    width_verdict,
)

__all__ = ["AxisName", "AxisResult"]

AxisName = Literal["width", "dataset_size"]


@dataclass
class AxisResult:
    """What the finder found along the width or dataset-size axis: one :class:`FinderResult` per point, the
    exponent of the best ``λ_base`` (width) or ``tau_epoch`` (dataset size) against the scale, each published rule
    decided at a tolerance with the loss it costs, and the verdict.

    Attributes:
        axis: ``"width"`` or ``"dataset_size"``.
        values: the axis points as given: widths, or fractions of the training set.
        scales: what the exponent is fitted against: the widths, or the training samples ``N`` of each point.
        x_name: the swept quantity the optima are given in: ``"lambda_base"`` (width) or ``"tau_epoch"``.
        xs: its grid, increasing (for the width axis ``λ_base = 1 / (lr_base * M * tau_epoch)``, so the
            ``tau_epoch`` grid reversed).
        results: per point, the :class:`FinderResult` of its ``tau_epoch`` sweep (its curve, suggestion, cost).
        fit: the statistics (:func:`~lightning_tau.tuner.stats.fit_scaling`) of the best ``x`` against ``scales``.
        verdict: a sentence per published rule and what to do (:func:`~lightning_tau.tuner.verdicts.width_verdict`
            or ``size_verdict``).
        base_width_mult: width axis: the μP width multiplier ``s`` of the smallest width (1 when it is μP's base
            width); ``result.callback()`` carries the best ``tau_epoch`` there to ``s = 1``.
        tolerance: the factor by which the best ``x`` may move over the measured range and still follow a rule
            (:mod:`lightning_tau.tuner.rules`).
        rules: each published rule of the axis decided at ``tolerance``, with the loss following it costs
            (:class:`~lightning_tau.tuner.verdicts.RuleVerdict`; the cost is
            :func:`~lightning_tau.tuner.rule_costs.rule_cost`'s).
        staging: with ``seeds="auto"``, how the seeds were staged and why it stopped (the finder's
            :class:`~lightning_tau.tuner.axis_fit.SeedStaging`, set by ``fit``), else ``None``.

    Example:
        A dataset-size axis whose best ``tau_epoch`` is 8 at every size (three seeds, exact parabolas):

        >>> import math
        >>> from lightning_tau.tuner.result import CurvePoint
        >>> taus = [2.0, 4.0, 8.0, 16.0, 32.0]
        >>> def point(size):
        ...     curve = [CurvePoint(t, [(math.log(t / 8)) ** 2 + 0.01 * s for s in range(3)], [0, 1, 2], {}, [size])
        ...              for t in taus]
        ...     return FinderResult.from_curve(curve, lr={"decay": 1e-3}, monitor="val_loss", mode="min",
        ...         reduce="last", fraction=size / 1000, dataset_size=1000, subset_size=size, batch_size=10,
        ...         epochs=1, full_cost=500)
        >>> result = AxisResult.build("dataset_size", [0.1, 0.5], [point(100), point(500)])
        >>> round(result.exponent, 6) + 0, round(result.tau_epoch, 6)
        (0.0, 8.0)
        >>> for r in result.rules:  # the decision at x1.25 over N = 100 to 500, and the loss following it costs
        ...     print(f"{r.name}: {r.decision}, {cost_text(r.loss_cost, r.loss_cost_ci, r.loss_cost_reason)}")
        Wang & Aitchison: holds, +0.000 [+0.000, +0.000]
        the 1/2 rules: excluded, +0.7125 [+0.7125, +0.7125]
        fixed λ: excluded, not measured: the rule puts tau_epoch at 1.6, below the grid (from 2)
        >>> {k: round(v, 6) for k, v in result.callback_kwargs().items()}  # Wang & Aitchison's exponent 0
        {'tau_epoch': 8.0, 'size_exponent': 0.0, 'reference_dataset_size': 500}
    """

    axis: AxisName
    values: list[float]
    scales: list[float]
    x_name: str
    xs: list[float]
    results: list[FinderResult]
    fit: ScalingFit
    verdict: str
    base_width_mult: float = 1.0
    tolerance: float = DEFAULT_TOLERANCE
    rules: list[RuleVerdict] = field(default_factory=list)
    staging: Any = None

    @classmethod
    def build(
        cls,
        axis: AxisName,
        values: Sequence[float],
        results: Sequence[FinderResult],
        *,
        lambda_base: Sequence[float] | None = None,
        base_width_mult: float = 1.0,
        level: float = 0.95,
        window: int = 1,
        tolerance: float = DEFAULT_TOLERANCE,
    ) -> AxisResult:
        """Fit the exponent over ``results`` (one per axis point, the same ``tau_epoch`` grid and seeds in each),
        decide each published rule at ``tolerance`` and measure what following it costs.

        Args:
            axis: ``"width"`` or ``"dataset_size"``.
            values: the widths, or the fractions.
            results: one :class:`FinderResult` per value, in the same order.
            lambda_base: width axis: ``λ_base`` at each ``tau_epoch`` of the grid (grid order).
            base_width_mult: width axis: μP's ``s`` at the smallest width.
            level: the interval's level (the exponent's and each rule's loss cost's).
            window: grid points on each side of the best one that each parabola is fitted to.
            tolerance: the factor by which the best ``x`` may move over the measured range and still follow a rule
                (a number above 1; :data:`~lightning_tau.tuner.rules.DEFAULT_TOLERANCE` says why 1.25).

        Raises:
            ValueError: lengths differ, fewer than 2 points, the points have other grids or seeds, or ``tolerance``
                is not above 1.
        """
        _checks.choice("AxisResult", "axis", axis, ("width", "dataset_size"))
        tolerance = _checks.in_range(
            "AxisResult", "tolerance", tolerance, "use a factor above 1, e.g. 1.25.", low=1, high=math.inf
        )
        if len(values) != len(results) or len(results) < 2:
            raise ValueError(
                f"`AxisResult` needs one result per axis point and at least 2 points, got {len(values)} values and"
                f" {len(results)} results."
            )
        taus = [p.tau_epoch for p in results[0].curve]
        seeds = results[0].curve[0].seeds
        for r in results:
            if [p.tau_epoch for p in r.curve] != taus or any(p.seeds != seeds for p in r.curve):
                raise ValueError(
                    "`AxisResult`: every axis point must sweep the same tau_epoch grid with the same seeds."
                )
        curves = [np.array([p.values for p in r.curve], dtype=float) for r in results]
        if axis == "width":
            if lambda_base is None or len(lambda_base) != len(taus):
                raise ValueError("`AxisResult(axis='width')` needs `lambda_base`, one per tau_epoch of the grid.")
            # λ_base falls as tau_epoch grows: reverse the grid so that x increases
            xs = [float(x) for x in reversed(lambda_base)]
            curves = [c[::-1] for c in curves]
            scales = [float(v) for v in values]
            x_name = "lambda_base"
        else:
            xs = [float(t) for t in taus]
            scales = [float(r.subset_size) for r in results]
            x_name = "tau_epoch"
        mode = results[0].mode
        fit = fit_scaling(scales, xs, curves, mode=mode, level=level, window=window, tolerance=tolerance)
        costs = [
            rule_cost(
                xs,
                curves[-1],
                x_from=fit.optima[0],
                x_best=fit.optima[-1],
                scale_ratio=scales[-1] / scales[0],
                exponent=rule.exponent,
                mode=mode,
                level=fit.level,
                x_label="λ_base" if axis == "width" else "tau_epoch",
            )
            for rule in rules_for(axis)
        ]
        rules = judge(axis, fit, tolerance, costs)
        say = width_verdict if axis == "width" else size_verdict
        return cls(
            axis=axis,
            values=[float(v) if axis == "dataset_size" else int(v) for v in values],
            scales=scales,
            x_name=x_name,
            xs=xs,
            results=list(results),
            fit=fit,
            verdict=say(fit, rules, monitor=results[0].monitor),
            base_width_mult=float(base_width_mult),
            tolerance=tolerance,
            rules=rules,
        )

    # --- the numbers ------------------------------------------------------------------------------------------

    @property
    def exponent(self) -> float:
        """The exponent of the best ``x`` in the scale (the fit's estimate, the centre of its interval)."""
        return self.fit.exponent

    @property
    def curve_exponent(self) -> float:
        """The slope of the seed-mean curves' smoothed optima on log scale (the fit's ``curve_exponent`` where it has
        one, else its ``exponent``)."""
        return float(getattr(self.fit, "curve_exponent", self.fit.exponent))

    @property
    def exponent_ci(self) -> tuple[float, float] | None:
        """The exponent's interval at ``fit.level``, or ``None`` (``ci_reason`` says why)."""
        return self.fit.ci

    @property
    def ci_reason(self) -> str | None:
        """Why there is no interval (too few seeds or points), else ``None``."""
        return self.fit.ci_reason

    @property
    def width_exponent(self) -> float | None:
        """Width axis: the measured ``alpha = 1 + exponent`` (``lambda ∝ s ** alpha``); ``None`` on the size axis.
        The callback's is :attr:`exponent_used`'s (a rule's where one holds)."""
        return 1.0 + self.exponent if self.axis == "width" else None

    @property
    def rule_used(self) -> RuleVerdict | None:
        """The published rule the full run follows: the one that holds (where several do, the one nearest the
        estimate), or ``None`` when none holds (:func:`~lightning_tau.tuner.verdicts.rule_to_follow`)."""
        return rule_to_follow(self.rules, self.exponent)

    @property
    def exponent_used(self) -> float:
        """The exponent :meth:`callback_kwargs` applies: :attr:`rule_used`'s, else the measured :attr:`exponent`."""
        rule = self.rule_used
        return rule.exponent if rule is not None else self.exponent

    @property
    def tau_epoch(self) -> float:
        """The ``tau_epoch`` :meth:`callback` uses.

        Width axis: the best ``tau_epoch`` at the smallest width times ``base_width_mult ** exponent_used``, the best
        ``λ_base`` carried by the rule followed (or the measured exponent) to μP's base width ``s = 1`` (the best
        ``tau_epoch`` at the smallest width itself when that is μP's base width). Dataset-size axis: the best
        ``tau_epoch`` at the largest fraction, which the callback carries to the full ``N`` as
        ``(N / N_ref) ** exponent_used`` (:attr:`full_tau_epoch`).
        """
        if self.axis == "width":
            return self.results[0].tau_epoch * self.base_width_mult**self.exponent_used
        return self.results[-1].tau_epoch

    @property
    def full_tau_epoch(self) -> float:
        """The ``tau_epoch`` the full run holds: on the dataset-size axis :attr:`tau_epoch` carried from the largest
        fraction's ``N`` to the full ``N`` by :attr:`exponent_used`; on the width axis :attr:`tau_epoch`."""
        if self.axis == "width":
            return self.tau_epoch
        first = self.results[-1]
        return self.tau_epoch * (first.dataset_size / first.subset_size) ** self.exponent_used

    @property
    def full_tau_epoch_range(self) -> tuple[float, float] | None:
        """:attr:`full_tau_epoch` at the ends of the exponent's interval instead of :attr:`exponent_used` (``None``
        without an interval): how far the full run's ``tau_epoch`` could be from it as far as the seeds tell."""
        if self.fit.ci is None:
            return None
        if self.axis == "width":
            base, ratio = self.results[0].tau_epoch, self.base_width_mult
        else:
            base, ratio = self.tau_epoch, self.results[-1].dataset_size / self.results[-1].subset_size
        ends = sorted(base * ratio**e for e in self.fit.ci)
        return (ends[0], ends[1])

    @property
    def cost(self) -> int:
        """Optimizer steps every point's runs took in all."""
        return sum(r.cost for r in self.results)

    @property
    def full_cost(self) -> int:
        """Optimizer steps the same sweeps take on the full training set (width: at every width; size: once)."""
        if self.axis == "width":
            return sum(r.full_cost for r in self.results)
        return self.results[-1].full_cost

    def note(self) -> str | None:
        """The fit's caution about where the exponent comes from (:meth:`ScalingFit.note`), else ``None``."""
        return self.fit.note()

    def edge_warning(self) -> str | None:
        """The grid-edge warning of the point the callback's ``tau_epoch`` comes from (the smallest width, or the
        largest fraction), else ``None``."""
        i = 0 if self.axis == "width" else len(self.results) - 1
        point = self.results[i]
        if not point.at_edge:
            return None
        return (
            f"the best tau_epoch at {self._point_name(i)} ({point.tau_epoch:.3g}) is at the edge of the grid, so the"
            " callback's tau_epoch comes from an edge value and the best may lie beyond it: widen the grid before"
            " trusting it."
        )

    def callback_kwargs(self) -> dict[str, Any]:
        """The :class:`~lightning_tau.TimescaleCallback` settings for the full run, as the verdict says.

        The exponent is :attr:`exponent_used`: the rule that holds (where several hold, the one nearest the estimate),
        else the measured exponent. Width axis: ``tau_epoch`` (:attr:`tau_epoch`) and ``width_exponent = 1 +
        exponent_used`` (``1`` where Wang & Aitchison holds, not ``0.908`` from noise). Dataset-size axis:
        ``tau_epoch`` (the largest fraction's best), ``size_exponent = exponent_used`` and
        ``reference_dataset_size`` (the largest fraction's ``N``): the callback holds
        ``tau_epoch * (N / reference_dataset_size) ** size_exponent``.
        """
        if self.axis == "width":
            return {"tau_epoch": self.tau_epoch, "width_exponent": 1.0 + self.exponent_used}
        return {
            "tau_epoch": self.tau_epoch,
            "size_exponent": float(self.exponent_used),
            "reference_dataset_size": int(self.results[-1].subset_size),
        }

    def callback(self, **kwargs: Any) -> Any:
        """The :class:`~lightning_tau.TimescaleCallback` for the full run: :meth:`callback_kwargs`, with ``kwargs``
        added or put in their place. Warns (``UserWarning``) when its ``tau_epoch`` comes from a grid-edge value
        (:meth:`edge_warning`)."""
        from lightning_tau.callback import TimescaleCallback  # Lightning only when asked: this module is pure

        edge = self.edge_warning()
        if edge is not None:
            warnings.warn(f"`AxisResult.callback()`: {edge}", UserWarning, stacklevel=2)
        return TimescaleCallback(**{**self.callback_kwargs(), **kwargs})

    # --- output -----------------------------------------------------------------------------------------------

    def _point_name(self, i: int) -> str:
        return f"width {self.values[i]:g}" if self.axis == "width" else f"N={int(self.scales[i])}"

    def x_of_tau(self, tau: float) -> float:
        """The swept quantity at ``tau``, a ``tau_epoch`` of the grid: along width its ``λ_base``, else ``tau``."""
        taus = [p.tau_epoch for p in self.results[0].curve]
        if self.axis == "width":
            return self.xs[len(taus) - 1 - taus.index(tau)]
        return tau

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: the axis, the exponent and its interval, the tolerance and each published rule (its
        decision and loss cost), the verdict, the optima, the callback's settings, the cost, and per point its
        :meth:`FinderResult.to_json`. Numbers exact (the table rounds them)."""
        fit = self.fit
        rule = self.rule_used
        full_range = self.full_tau_epoch_range
        return {
            "axis": self.axis,
            "values": list(self.values),
            "scales": list(self.scales),
            "x_name": self.x_name,
            "xs": list(self.xs),
            "exponent": _finite_or_none(fit.exponent),
            "exponent_ci": list(fit.ci) if fit.ci is not None else None,
            "ci_reason": fit.ci_reason,
            "level": fit.level,
            "curve_exponent": _finite_or_none(self.curve_exponent),
            "width_exponent": _finite_or_none(self.width_exponent) if self.width_exponent is not None else None,
            "tolerance": self.tolerance,
            "rules": [r.to_json() for r in self.rules],
            "rule_used": rule.name if rule is not None else None,
            "exponent_used": _finite_or_none(self.exponent_used),
            "verdict": self.verdict,
            "note": self.note(),
            "optima": [_finite_or_none(v) for v in fit.optima],
            "grid_optima": list(fit.grid_optima),
            "per_seed_grid_optima": [list(v) for v in fit.per_seed_grid_optima],
            "grid_exponent": _finite_or_none(fit.grid_exponent),
            "sign_disagrees": bool(fit.sign_disagrees),
            "interior": [asdict(t) for t in fit.interior],
            "tau_epoch": _finite_or_none(self.tau_epoch),
            "full_tau_epoch": _finite_or_none(self.full_tau_epoch),
            "full_tau_epoch_range": list(full_range) if full_range is not None else None,
            "callback": {
                k: _finite_or_none(v) if isinstance(v, float) else v for k, v in self.callback_kwargs().items()
            },
            "edge_warning": self.edge_warning(),
            "base_width_mult": self.base_width_mult,
            "cost": self.cost,
            "full_cost": self.full_cost,
            "staging": self.staging.to_json() if self.staging is not None else None,
            "results": [r.to_json() for r in self.results],
        }

    def save_json(self, path: str | Path) -> Path:
        """Write :meth:`to_json` to ``path`` (parents created); returns the path."""
        return write_json(path, self.to_json())

    def _neighbours(self, i: int) -> str:
        """Whether the seeds tell point ``i``'s best grid point from its grid neighbours, in words."""
        fit = self.fit
        test = fit.interior[i]
        if len(fit.per_seed_grid_optima[i]) < 2:
            return "1 seed: nothing to compare"
        if test.p_lower is None or test.p_upper is None:
            return "at the grid's edge: the best may lie beyond it"
        k = self.xs.index(fit.grid_optima[i])
        lower, upper = self.xs[k - 1], self.xs[k + 1]
        if test.interior:
            return f"yes, from both {lower:.3g} and {upper:.3g} (p = {test.p_lower:.2g}, {test.p_upper:.2g})"
        level = test.level
        untold = [(x, p) for x, p in ((lower, test.p_lower), (upper, test.p_upper)) if p >= level]
        return "no: they cannot tell it from " + " or ".join(f"{x:.3g} (p = {p:.2g})" for x, p in untold)

    def table(self) -> str:
        """The curve per point, the optima, the exponent, each published rule with its decision and loss cost, the
        verdict and the callback, as text (numbers rounded for people; :meth:`to_json` holds them exactly)."""
        first = self.results[0]
        seeds = len(first.curve[0].seeds)
        value = "final" if first.reduce == "last" else "best"
        x_label = "lambda_base" if self.axis == "width" else "tau_epoch"
        what = (
            f"{len(self.values)} widths ({', '.join(f'{v:g}' for v in self.values)})"
            if self.axis == "width"
            else f"{len(self.values)} fractions ({', '.join(f'{v:.3g}' for v in self.values)}:"
            f" N={', '.join(f'{s:g}' for s in self.scales)})"
        )
        lines = [
            f"Timescale finder, {self.axis} axis: {what} x {len(first.curve)} tau_epochs x {seeds} seeds,"
            f" {first.epochs} epochs; {value} {first.monitor} ({first.mode}), seed mean +- std:",
        ]
        rows = []
        for j, point in enumerate(first.curve):
            cells = [f"{point.tau_epoch:g}"]
            if self.axis == "width":
                cells.append(f"{self.x_of_tau(point.tau_epoch):.3g}")
            for r in self.results:
                p = r.curve[j]
                mark = "*" if p.tau_epoch == r.grid_tau_epoch else " "
                cells.append(f"{_fmt(p.mean)} +- {_fmt(p.std)}{mark}")
            rows.append(cells)
        columns = ["tau_epoch", *(["lambda_base"] if self.axis == "width" else [])]
        columns += [self._point_name(i) for i in range(len(self.results))]
        lines += table_lines(columns, rows, rule=False, indent="  ")
        lines.append("  (* best on the grid)")
        fit = self.fit
        lines.append(f"Best {x_label} per {'width' if self.axis == 'width' else 'size'}:")
        opt_rows = [
            [
                self._point_name(i),
                f"{fit.optima[i]:.3g}",
                f"{fit.grid_optima[i]:.3g}",
                ", ".join(f"{v:.3g}" for v in fit.per_seed_grid_optima[i]),
                self._neighbours(i),
            ]
            for i in range(len(self.results))
        ]
        lines += table_lines(
            [
                "point",
                "smoothed",
                "grid (seed mean)",
                "grid per seed",
                "do the seeds tell the grid's best from its neighbours?",
            ],
            opt_rows,
            rule=False,
            indent="  ",
        )
        lines.append(
            f"  (p: the chance of differences this consistent across seeds if the two were equally good; the seeds"
            f" tell them apart below {fit.interior[0].level:g})"
        )
        scale = "width" if self.axis == "width" else "N"
        if fit.ci is not None:
            ci = f"{fit.level:.0%} interval [{signed(fit.ci[0])}, {signed(fit.ci[1])}] (the estimate is its centre)"
        else:
            ci = f"no interval: {fit.ci_reason}"
        curve = signed(self.curve_exponent)
        curve = f"; the seed-mean curves' optima give {curve}" if curve != signed(fit.exponent) else ""
        lines.append(
            f"Exponent of best {x_label} on {scale}: {signed(fit.exponent)}, {ci}{curve}; the grid optima give"
            f" {signed(fit.grid_exponent)}."
        )
        if self.note():
            lines.append(str(self.note()))
        lines += self._rules_lines()
        if self.staging is not None:
            lines.append(self.staging.sentence())
        lines.append(f"Verdict: {self.verdict}")
        lines += self._full_run_lines()
        if not self.full_cost:
            lines.append(f"Cost: {self.cost:,} optimizer steps.")
        elif self.axis == "width":
            lines.append(
                f"Cost: {self.cost:,} optimizer steps, {self.cost / self.full_cost:.0%} of the {self.full_cost:,} the"
                " same sweeps take on the full data."
            )
        else:
            lines.append(
                f"Cost: {self.cost:,} optimizer steps for the sweeps at the {len(self.results)} sizes,"
                f" {self.cost / self.full_cost:.0%} of one sweep at the full N ({self.full_cost:,} steps), which would"
                " give the best tau_epoch at one N but not how it moves with N."
            )
        return "\n".join(lines)

    def _rules_lines(self) -> list[str]:
        """The published rules at the tolerance: decision and loss cost, one row each."""
        if not self.rules:
            return []
        fit = self.fit
        x_label = "λ_base" if self.axis == "width" else "tau_epoch"
        first, last = self._point_name(0), self._point_name(len(self.results) - 1)
        span = (
            f"widths {self.scales[0]:g} to {self.scales[-1]:g}"
            if self.axis == "width"
            else f"N = {self.scales[0]:g} to {self.scales[-1]:g}"
        )
        delta = half_width(self.tolerance, self.scales)
        lines = [
            f"Published rules at tolerance x{self.tolerance:g} (a rule holds when the best {x_label} stays within"
            f" x{self.tolerance:g} of it over {span}, i.e. an exponent within ±{delta:.2f} of the rule's):"
        ]
        rows = []
        for r in self.rules:
            alpha = [f"{1 + r.exponent:g}"] if self.axis == "width" else []
            rows.append(
                [
                    r.name,
                    f"{r.exponent:g}",
                    *alpha,
                    r.decision,
                    cost_text(r.loss_cost, r.loss_cost_ci, r.loss_cost_reason),
                ]
            )
        monitor = self.results[0].monitor
        lines += table_lines(
            [
                "rule",
                "exponent",
                *(["α"] if self.axis == "width" else []),
                "decision",
                f"cost at {last} if followed from {first} (how much worse {monitor} is; mean, {fit.level:.0%}"
                " interval over seeds)",
            ],
            rows,
            rule=False,
            indent="  ",
        )
        return lines

    def _full_run_lines(self) -> list[str]:
        """The callback for the full run, which exponent it uses and why, and the grid-edge warning."""
        rule = self.rule_used
        kwargs = self.callback_kwargs()
        if rule is not None:
            holding = [r for r in self.rules if r.decision == "holds"]
            verb = "hold" if rule.name.endswith("rules") else "holds"  # "the 1/2 rules hold"
            why = (
                f"{rule.name} {verb}"
                if len(holding) == 1
                else f"{rule.name} {verb} and {'are' if verb == 'hold' else 'is'} the nearest to the estimate"
            )
        elif self.fit.ci is None:
            why = "no rule is decided without an interval"
        elif all(r.decision == "excluded" for r in self.rules):
            why = "no published rule holds"
        else:
            why = "no rule holds yet"
        if self.axis == "width":
            w = _short(kwargs["width_exponent"])
            which = f"its α = {w} rather than the measured {_short(1 + self.exponent)}" if rule else "the measured α"
            lines = [
                f"Full run: TimescaleCallback(tau_epoch={kwargs['tau_epoch']:.3g}, width_exponent={w}): {why}, so"
                f" {which}."
            ]
        else:
            e_text = _short(kwargs["size_exponent"])
            which = (
                f"its exponent {e_text} rather than the measured {signed(self.exponent)}"
                if rule
                else "the measured exponent"
            )
            last = self.results[-1]
            full = f"at the full N = {last.dataset_size}"
            if last.dataset_size == last.subset_size:
                there = f"{full} (the largest fraction) that is tau_epoch {self.full_tau_epoch:.3g} as found"
            else:
                span = self.full_tau_epoch_range
                implied = f" (the interval gives {span[0]:.3g} to {span[1]:.3g})" if span is not None else ""
                there = f"{full} that is tau_epoch {self.full_tau_epoch:.3g}{implied}"
            lines = [
                f"Full run: TimescaleCallback(tau_epoch={kwargs['tau_epoch']:.3g}, size_exponent={e_text},"
                f" reference_dataset_size={kwargs['reference_dataset_size']}): {why}, so {which}; {there}."
            ]
        edge = self.edge_warning()
        if edge is not None:
            lines.append(f"Warning: {edge}")
        return lines

    def plot(self, path: str | Path) -> Path:  # pragma: no mutate block (drawing; see benchmarks/mutation_survivors.md)
        """Draw :meth:`figure` into ``path`` (``.png``, ``.svg``, ...); returns it."""
        return save_figure(self.figure(), path)

    def figure(self) -> Any:  # pragma: no mutate block (drawing; tests/test_axes_figure.py reads it back)
        """The matplotlib figure :meth:`plot` saves (Agg backend).

        Left: the curve per point (seed mean as a line, each seed as a dot, the smoothed optimum dotted). Right: the
        best ``x`` against the scale on log axes: the smoothed optima, the grid optima, each seed's grid optimum, the
        fitted line with its interval as a band, and each published rule carried from the smallest scale's best
        ``x`` (a dashed line in the band of its tolerance), labelled with its decision and loss cost. Below: what to
        do (:func:`~lightning_tau.tuner.verdicts.advice`). Tick labels are plain numbers, thinned until none
        overlaps.
        """
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        fig = plt.figure(figsize=(13, 5.2), layout="constrained")
        grid = fig.add_gridspec(2, 2, height_ratios=[9, 1], width_ratios=[1, 1.25])
        left, right = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
        caption = fig.add_subplot(grid[1, :])
        first = self.results[0]
        metric = f"{'final' if first.reduce == 'last' else 'best'} {metric_words(first.monitor)}"
        x_words = "base weight decay λ_base" if self.axis == "width" else "τ_epoch (epochs)"
        best_words = "best λ_base" if self.axis == "width" else "best τ_epoch"
        scale_words = "width" if self.axis == "width" else "training samples N"

        colors = plt.cm.viridis(np.linspace(0.0, 0.85, len(self.results)))
        for i, (r, color) in enumerate(zip(self.results, colors)):
            xs = [self.x_of_tau(p.tau_epoch) for p in r.curve]
            for x, p in zip(xs, r.curve):
                left.plot([x] * len(p.values), p.values, ".", color=color, alpha=0.35, markersize=4)
            left.plot(xs, [p.mean for p in r.curve], "o-", color=color, markersize=4, label=self._point_name(i))
            left.axvline(self.fit.optima[i], color=color, linestyle=":", alpha=0.8)
        left.plot([], [], ".", color="gray", alpha=0.6, label="each seed")
        left.plot([], [], ":", color="gray", label="smoothed best")
        left.set_xscale("log")
        left.set_xlabel(x_words)
        left.set_ylabel(f"{metric} (seed mean)")
        left.set_title(f"{metric} at each {'width' if self.axis == 'width' else 'size'}", fontsize="medium")
        left.grid(True, which="major", alpha=0.3)
        left.legend(fontsize="small")

        fit = self.fit
        scales = np.asarray(self.scales, dtype=float)
        log_s = np.log(scales)
        centre_x, centre_y = float(log_s.mean()), float(np.mean(np.log(fit.optima)))
        dense = np.exp(np.linspace(log_s[0], log_s[-1], 50))

        def line(slope: float, at_x: float = centre_x, at_y: float = centre_y) -> np.ndarray:
            return np.exp(at_y + slope * (np.log(dense) - at_x))

        rule_colors = ["tab:green", "tab:purple", "tab:brown", "tab:pink"]
        x0 = fit.optima[0]
        for r, color in zip(self.rules, rule_colors):
            anchor = (float(log_s[0]), math.log(x0))
            right.fill_between(dense, line(r.band[0], *anchor), line(r.band[1], *anchor), color=color, alpha=0.1, lw=0)
            cost = cost_text(r.loss_cost, r.loss_cost_ci, r.loss_cost_reason)
            if r.loss_cost is None:
                cost = "cost not measured" + (" (off the grid)" if "grid" in (r.loss_cost_reason or "") else "")
            right.plot(
                dense,
                line(r.exponent, *anchor),
                "--",
                color=color,
                label=f"{r.name} ({r.exponent:g}): {r.decision}; {cost}",
            )
        if fit.ci is not None:
            right.fill_between(
                dense,
                np.minimum(line(fit.ci[0]), line(fit.ci[1])),
                np.maximum(line(fit.ci[0]), line(fit.ci[1])),
                color="black",
                alpha=0.15,
                lw=0,
                label=f"{fit.level:.0%} interval [{signed(fit.ci[0])}, {signed(fit.ci[1])}]",
            )
        right.plot(dense, line(fit.exponent), "-", color="black", label=f"fitted: exponent {signed(fit.exponent)}")
        for s, seed_optima in zip(scales, fit.per_seed_grid_optima):
            right.plot([s] * len(seed_optima), seed_optima, ".", color="gray", alpha=0.5)
        right.plot([], [], ".", color="gray", alpha=0.5, label="grid best per seed")
        right.plot(scales, fit.grid_optima, "s", color="tab:orange", fillstyle="none", label="grid optimum")
        right.plot(scales, fit.optima, "o", color="tab:blue", label="smoothed optimum")
        right.set_xscale("log")
        right.set_yscale("log")
        right.set_ylim(min(self.xs) / 1.3, max(self.xs) * 1.3)  # the grid: a rule beyond it is not measured there
        right.set_xlim(scales[0] / 1.15, scales[-1] * 1.15)
        right.set_xlabel(scale_words)
        right.set_ylabel(best_words)
        right.set_title(
            f"{best_words} against {'width' if self.axis == 'width' else 'N'}; rules at tolerance x{self.tolerance:g}",
            fontsize="medium",
        )
        right.grid(True, which="major", alpha=0.3)
        right.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)

        caption.axis("off")
        caption.text(0.0, 1.0, wrap(self._figure_caption(), 170), va="top", ha="left", fontsize="small")

        plain_ticks(left.xaxis, self.xs)
        plain_ticks(right.xaxis, list(scales))
        plain_ticks(right.yaxis, list(self.xs))
        fig.canvas.draw()
        for axis in (left.xaxis, left.yaxis, right.xaxis, right.yaxis):
            thin_ticks(axis)
        return fig

    def _figure_caption(self) -> str:  # pragma: no mutate block (the figure only)
        """The figure's caption: the exponent and what to do."""
        fit = self.fit
        ci = (
            f"{fit.level:.0%} interval [{signed(fit.ci[0])}, {signed(fit.ci[1])}]"
            if fit.ci is not None
            else "no interval"
        )
        return f"Exponent {signed(fit.exponent)} ({ci}). {advice(self.axis, fit, self.rules)}"


def _short(value: float) -> str:
    """A setting rounded for people: three decimals, no ``-0`` (``0.908``, ``1``, ``0``; never ``1.44e-16``)."""
    return f"{round(value, 3) + 0.0:g}"


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _fmt(value: float) -> str:
    return f"{value:.4g}" if math.isfinite(value) else "nan"
