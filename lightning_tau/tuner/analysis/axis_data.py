"""The data of an axis result: the sweep at every point, the fitted exponent, each published rule decided, and the
numbers the full run takes from them (:meth:`~AxisData.callback_kwargs`, :meth:`~AxisData.to_json`).

No Lightning import (numpy).

More: docs/finder.rst, 'Along width and dataset size: measure the rule on your model'.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from lightning_tau import _checks
from lightning_tau._numbers import exponent as exponent_text
from lightning_tau._numbers import setting
from lightning_tau.tuner.analysis.beta2_cost import Beta2Cost
from lightning_tau.tuner.analysis.curve import smoothed_optimum
from lightning_tau.tuner.analysis.grid_extension import AddedPoint
from lightning_tau.tuner.analysis.prediction import Prediction, predict_tau_epoch
from lightning_tau.tuner.analysis.finder_result import FinderResult, write_json
from lightning_tau.tuner.analysis.rule_costs import read_curve, rule_cost
from lightning_tau.tuner.analysis.rules import DEFAULT_TOLERANCE, decide
from lightning_tau.tuner.analysis.scaling import ScalingFit, fit_scaling
from lightning_tau.tuner.analysis.verdicts import (
    RuleVerdict,
    axis_verdict,
    judge,
    rule_to_follow,
    shape_undetermined,
)
from lightning_tau.tuner.axes import AXES, Axis, resolve_axis

__all__ = ["AxisData"]

_Axis = TypeVar("_Axis", bound="AxisData")


@dataclass
class AxisData:
    """What the finder found along the width or dataset-size axis, as data: one :class:`FinderResult` per point, the
    exponent of the best ``λ_base`` (width) or ``tau_epoch`` (dataset size) against the scale, each published rule
    decided at a tolerance with the loss it costs, the verdict, and the full run's settings. The public class is
    :class:`~lightning_tau.tuner.analysis.axis_result.AxisResult` (this data with its table, figure and callback).

    Attributes:
        axis: the axis's name, ``"width"`` or ``"dataset_size"`` (:attr:`axis_object` is the axis itself, from
            :mod:`lightning_tau.tuner.axes`).
        values: the axis points as given: widths, or fractions of the training set.
        scales: what the exponent is fitted against: the widths, or the training samples ``N`` of each point.
        x_name: the swept quantity the optima are given in: ``"lambda_base"`` (width) or ``"tau_epoch"``.
        xs: its grid, increasing (for the width axis ``λ_base = 1 / (lr_base * M * tau_epoch)``, so the
            ``tau_epoch`` grid reversed).
        results: per point, the :class:`FinderResult` of its ``tau_epoch`` sweep (its curve, suggestion, cost).
        fit: the statistics (:func:`~lightning_tau.tuner.analysis.scaling.fit_scaling`) of the best ``x`` against ``scales``.
        verdict: a sentence per published rule and what to do (:func:`~lightning_tau.tuner.analysis.verdicts.width_verdict`
            or ``size_verdict``).
        base_width_mult: width axis: the μP width multiplier ``s`` of the smallest width (1 when it is μP's base
            width); ``result.callback()`` carries the best ``tau_epoch`` there to ``s = 1``.
        tolerance: the factor by which the best ``x`` may move over the measured range and still follow a rule
            (:mod:`lightning_tau.tuner.analysis.rules`).
        rules: each published rule of the axis decided at ``tolerance``, with the loss following it costs
            (:class:`~lightning_tau.tuner.analysis.verdicts.RuleVerdict`; the cost is
            :func:`~lightning_tau.tuner.analysis.rule_costs.rule_cost`'s).
        staging: with ``seeds="auto"``, how the seeds were staged and why it stopped (the finder's
            :class:`~lightning_tau.tuner.axis_runner.SeedStaging`, set by ``fit``), else ``None``.
        half_width: ``tolerance`` in exponent units over ``scales``, ``δ`` of the rules' bands
            (:func:`~lightning_tau.tuner.analysis.rules.half_width`): computed once by :meth:`build`; the verdicts,
            the table, the note and ``seeds="auto"`` read it.
    """

    axis: str
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
    #: the points the finder's grid extension added to the grid given, and why
    #: (:mod:`~lightning_tau.tuner.analysis.grid_extension`)
    grid_added: tuple[AddedPoint, ...] = ()
    half_width: float = math.nan
    #: batch-size axis: how each point's batch was set (``"the model's batch_size"`` or ``"gradient accumulation"``)
    batch_setting: str = ""
    #: batch-size axis with ``beta2="both"``: the paired cost of holding ``β₂`` in samples against keeping it fixed
    #: at the largest batch (:class:`~lightning_tau.tuner.analysis.beta2_cost.Beta2Cost`), else ``None``
    beta2_cost: Beta2Cost | None = None

    @classmethod
    def build(
        cls: type[_Axis],
        axis: Axis | str,
        values: Sequence[float],
        results: Sequence[FinderResult],
        *,
        lambda_base: Sequence[float] | None = None,
        base_width_mult: float = 1.0,
        level: float = 0.95,
        window: int = 1,
        tolerance: float = DEFAULT_TOLERANCE,
    ) -> _Axis:
        """Fit the exponent over ``results`` (one per axis point, the same ``tau_epoch`` grid and seeds in each),
        decide each published rule at ``tolerance`` and measure what following it costs.

        Args:
            axis: the axis (:mod:`lightning_tau.tuner.axes`) or its name, ``"width"`` or ``"dataset_size"``.
            values: the widths, or the fractions.
            results: one :class:`FinderResult` per value, in the same order.
            lambda_base: width axis: ``λ_base`` at each ``tau_epoch`` of the grid (grid order).
            base_width_mult: width axis: μP's ``s`` at the smallest width.
            level: the interval's level (the exponent's and each rule's loss cost's).
            window: grid points on each side of the best one that each parabola is fitted to.
            tolerance: the factor by which the best ``x`` may move over the measured range and still follow a rule
                (a number above 1; :data:`~lightning_tau.tuner.analysis.rules.DEFAULT_TOLERANCE` says why 1.25).

        Raises:
            ValueError: lengths differ, fewer than 2 points, the points have other grids or seeds, or ``tolerance``
                is not above 1.
        """
        along = _scaling_axis(axis)
        # the one check of `tolerance` below TimescaleFinder's (a user may build an axis result of their own runs);
        # fit_scaling, judge and half_width take it checked
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
        if along.x_falls_with_tau:
            if lambda_base is None or len(lambda_base) != len(taus):
                raise ValueError(
                    f"`AxisResult(axis={along.name!r})` needs `lambda_base`, one per tau_epoch of the grid."
                )
            # λ_base falls as tau_epoch grows: reverse the grid so that x increases
            xs = [float(x) for x in reversed(lambda_base)]
            curves = [c[::-1] for c in curves]
        else:
            xs = [float(t) for t in taus]
        # the scale is the value itself where the axis changes the model or the batch, else the samples each trained on
        scales = [float(v) for v in values] if along.scale_is_value else [float(r.subset_size) for r in results]
        x_name = along.x_name
        mode = results[0].mode
        fit = fit_scaling(scales, xs, curves, mode=mode, level=level, window=window, tolerance=tolerance)
        fit = _plateau_reason(fit, scales, results)
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
                x_label=along.x_label,
            )
            for rule in along.rules
        ]
        delta = fit.half_width  # δ, computed once here
        rules = judge(along, fit, tolerance, costs, delta=delta)
        return cls(
            axis=along.name,
            values=[along.value_type(v) for v in values],
            scales=scales,
            x_name=x_name,
            xs=xs,
            results=list(results),
            fit=fit,
            verdict=axis_verdict(along, fit, rules, monitor=results[0].monitor),
            base_width_mult=float(base_width_mult),
            tolerance=tolerance,
            rules=rules,
            half_width=delta,
        )

    # --- the numbers ------------------------------------------------------------------------------------------

    @property
    def axis_object(self) -> Axis:
        """The axis :attr:`axis` names (:mod:`lightning_tau.tuner.axes`): its rules, words and callback settings."""
        return resolve_axis(self.axis, "AxisResult")

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
        return self.axis_object.alpha(self.exponent)

    @property
    def rule_used(self) -> RuleVerdict | None:
        """The published rule the full run follows: the one that holds (where several do, the one nearest the
        estimate), or ``None`` when none holds (:func:`~lightning_tau.tuner.analysis.verdicts.rule_to_follow`)."""
        return rule_to_follow(self.rules, self.exponent)

    @property
    def exponent_used(self) -> float:
        """The exponent :meth:`callback_kwargs` applies: :attr:`rule_used`'s; else the measured :attr:`exponent` when it
        has an interval; else 0, the paper's rule (Wang & Aitchison: ``size_exponent = 0``, ``width_exponent = 1``),
        as nothing backs the measured one (:attr:`unbacked`)."""
        rule = self.rule_used
        if rule is not None:
            return rule.exponent
        return self.exponent if self.fit.ci is not None else 0.0

    @property
    def unbacked(self) -> str | None:
        """Why the measured exponent is not applied (it has no interval: :attr:`ci_reason`), else ``None``."""
        if self.rule_used is None and self.fit.ci is None:
            return f"the measured exponent {exponent_text(self.exponent)} has no interval ({self.fit.ci_reason})"
        return None

    @property
    def snap_excludes(self) -> RuleVerdict | None:
        """The rule followed when its band holds the interval although the interval excludes the rule's exponent
        itself (the callback snaps to it; its ``loss_cost`` is what that costs over the measured range), else
        ``None``."""
        rule = self.rule_used
        ci = self.fit.ci
        if rule is None or ci is None or ci[0] <= rule.exponent <= ci[1]:
            return None
        return rule

    @property
    def tau_epoch(self) -> float:
        """The ``tau_epoch`` :meth:`callback` uses.

        Width axis: the best ``tau_epoch`` at the smallest width times ``base_width_mult ** exponent_used``, the best
        ``λ_base`` carried by the rule followed (or the measured exponent) to μP's base width ``s = 1`` (the best
        ``tau_epoch`` at the smallest width itself when that is μP's base width). Dataset-size axis: the best
        ``tau_epoch`` at the largest fraction, which the callback carries to the full ``N`` as
        ``(N / N_ref) ** exponent_used`` (:attr:`full_tau_epoch`).
        """
        anchor = self.results[self.axis_object.anchor(len(self.results))].tau_epoch
        if self.axis_object.model_per_point:  # carried to μP's base width
            return anchor * self.base_width_mult**self.exponent_used
        return anchor

    @property
    def full_tau_epoch(self) -> float:
        """The ``tau_epoch`` the full run holds: on the dataset-size axis :attr:`tau_epoch` carried from the largest
        fraction's ``N`` to the full ``N`` by :attr:`exponent_used` (:meth:`predict` at the full ``N``); on the width
        axis :attr:`tau_epoch`."""
        if self.axis_object.scale_is_value:  # the full run's data is the points' own
            return self.tau_epoch
        first = self.results[-1]
        return self.tau_epoch * (first.dataset_size / first.subset_size) ** self.exponent_used

    @property
    def full_scale(self) -> float:
        """The scale of the full run: the full ``N`` (dataset size), or μP's base width ``widths[0] /
        base_width_mult`` (width), where :attr:`full_tau_epoch` applies."""
        if self.axis_object.scale_is_value:  # μP's base width; the smallest batch (base_width_mult 1)
            return self.scales[0] / self.base_width_mult
        return float(self.results[-1].dataset_size)

    @property
    def full_tau_epoch_range(self) -> tuple[float, float] | None:
        """The prediction interval of :attr:`full_tau_epoch` (:meth:`predict` at :attr:`full_scale`), or ``None``
        without one: the exponent's interval, the lack of fit of one power law and the distance beyond the measured
        range (:mod:`lightning_tau.tuner.analysis.prediction`)."""
        p = self.predict(self.full_scale)
        return None if p.low is None or p.high is None else (p.low, p.high)

    def predict(self, scale: float) -> Prediction:
        """The best ``tau_epoch`` at ``scale`` with its prediction interval (:func:`~lightning_tau.tuner.analysis.prediction.
        predict_tau_epoch`): a dataset size ``N`` on the dataset-size axis, a width on the width axis.

        The centre is what the callback applies there: the largest fraction's best ``tau_epoch`` carried by
        :attr:`exponent_used` (size), or the ``tau_epoch`` a trial at that width uses with ``width_exponent=1``,
        ``tau_epoch(S) = tau_at_s1 * S ** -exponent_used`` with ``S = base_width_mult * width / widths[0]`` (width).

        Raises:
            ValueError: ``scale`` is not a positive number.
        """
        scale = _checks.positive_number("AxisResult.predict", "scale", scale)
        taus = [p.tau_epoch for p in self.results[0].curve]
        along = self.axis_object
        # along width λ_base · tau_epoch is fixed
        to_tau = (lambda x: self.xs[-1] * taus[0] / x) if along.x_falls_with_tau else (lambda x: x)
        seed_optima = []
        for r in self.results:
            table = np.array([p.values for p in r.curve], dtype=float)
            row = []
            for j in range(table.shape[1]):
                column = table[:, j]
                if np.any(np.isfinite(column)):
                    row.append(smoothed_optimum(taus, list(column), r.mode).tau_epoch)
            seed_optima.append(row)
        ci = self.fit.ci
        sign = along.sign
        anchor = along.anchor(len(self.results))
        rule = self.rule_used
        if rule is not None:
            basis = f"{rule.name} (exponent {rule.exponent:g})"
        elif ci is not None:
            basis = f"the measured exponent {exponent_text(self.exponent)}"
        else:
            basis = "Wang & Aitchison (exponent 0), the paper's rule: the measured exponent has no interval"
        return predict_tau_epoch(
            self.scales,
            [to_tau(x) for x in self.fit.optima],
            seed_optima,
            anchor=anchor,
            anchor_tau=self.results[anchor].tau_epoch,
            exponent=sign * self.exponent_used,
            exponent_ci=None if ci is None else tuple(sorted((sign * ci[0], sign * ci[1]))),  # type: ignore[arg-type]
            target=scale,
            level=self.fit.level,
            anchor_range=self.results[anchor].tau_epoch_range,
            basis=basis,
            sign=sign,
            no_interval=self.fit.ci_reason,
        )

    @property
    def local_exponent(self) -> float:
        """The exponent between the last two scales (slope of log optimum on log scale there), beside the global
        :attr:`exponent`: how the best moved where the measured range ends."""
        optima, scales = self.fit.optima, self.scales
        return math.log(optima[-1] / optima[-2]) / math.log(scales[-1] / scales[-2])

    def flat_range(self) -> tuple[float, float] | None:
        """At the largest scale, where moving ``tau_epoch`` by :attr:`tolerance` either way from the optimum costs less
        than one seed standard deviation (the choice barely matters there): the ``tau_epoch`` range around the optimum
        over which the seed-mean curve (read as :func:`~lightning_tau.tuner.analysis.rule_costs.read_curve` reads it) stays
        within one seed s.d. of its value there, within the grid; else ``None`` (also with one seed). The seed s.d. is
        the best grid point's, over seeds."""
        point = self.results[-1]
        taus = [p.tau_epoch for p in point.curve]
        sign = 1.0 if point.mode == "min" else -1.0
        means = [sign * p.mean for p in point.curve]
        if len(point.curve[0].values) < 2 or not all(math.isfinite(m) for m in means):
            return None
        best = int(np.argmin(means))
        sd = point.curve[best].std
        if not sd > 0:
            return None
        opt = self.fit.optima[-1]
        opt = min(max(self.xs[-1] * taus[0] / opt if self.axis_object.x_falls_with_tau else opt, taus[0]), taus[-1])
        at_opt = read_curve(taus, means, opt, best)
        sides = [opt * self.tolerance, opt / self.tolerance]
        costs = [read_curve(taus, means, x, best) - at_opt for x in sides if taus[0] <= x <= taus[-1]]
        if not costs or max(costs) >= sd:
            return None
        dense = np.exp(np.linspace(math.log(taus[0]), math.log(taus[-1]), 401))
        within = [read_curve(taus, means, min(max(float(t), taus[0]), taus[-1]), best) - at_opt <= sd for t in dense]
        i = int(np.argmin(np.abs(np.log(dense) - math.log(opt))))
        lo = hi = i
        while lo > 0 and within[lo - 1]:
            lo -= 1
        while hi < len(dense) - 1 and within[hi + 1]:
            hi += 1
        return (float(dense[lo]) if lo > 0 else taus[0], float(dense[hi]) if hi < len(dense) - 1 else taus[-1])

    @property
    def interval_parts(self) -> dict[str, tuple[float, float]] | None:
        """The exponent's interval split into the part the seeds make and the part the curve's shape makes
        (:attr:`ScalingFit.interval_parts`; only the seeds part shrinks with more seeds), or ``None``."""
        return getattr(self.fit, "interval_parts", None)

    def shape_undetermined(self) -> list[str]:
        """The rules left undetermined that only the curve's shape leaves so: the shape part of the interval alone
        straddles the rule's band edge, so more seeds cannot decide them (points nearer the optimum can). Empty
        without an interval. ``seeds="auto"`` stops adding seeds when every undetermined rule is here."""
        return shape_undetermined(self.fit, self.rules)

    @property
    def plateau(self) -> float | None:
        """The plateau of the point the callback's ``tau_epoch`` comes from (the smallest width, or the largest
        fraction): :attr:`FinderResult.plateau`, any ``tau_epoch`` at or above it as good; else ``None``."""
        return self.results[self.axis_object.anchor(len(self.results))].plateau

    @property
    def cost(self) -> int:
        """Optimizer steps every point's runs took in all."""
        return sum(r.cost for r in self.results)

    @property
    def full_cost(self) -> int:
        """Optimizer steps the same sweeps take on the full training set (width: at every width; size: once)."""
        if self.axis_object.scale_is_value:
            return sum(r.full_cost for r in self.results)
        return self.results[-1].full_cost

    def note(self) -> str | None:
        """The fit's caution about where the exponent comes from (:meth:`ScalingFit.note`), else ``None``."""
        return self.fit.note(None if math.isnan(self.half_width) else self.half_width)

    def edge_warning(self) -> str | None:
        """The grid-edge warning of the point the callback's ``tau_epoch`` comes from (the smallest width, or the
        largest fraction), else ``None``."""
        i = self.axis_object.anchor(len(self.results))
        point = self.results[i]
        if not point.at_edge or point.plateau is not None:  # a flat top longer than the run is no edge to widen
            return None
        verdict = point.verdict
        if "widen the grid" not in verdict:  # an edge the grid cannot pass (2 steps; a top longer than the run)
            return f"at {self._point_name(i)}, {verdict}."
        return (
            f"the best tau_epoch at {self._point_name(i)} ({point.tau_epoch:.3g}) is at the edge of the grid, so the"
            " callback's tau_epoch comes from an edge value and the best may lie beyond it: widen the grid before"
            " trusting it."
        )

    def callback_kwargs(self) -> dict[str, Any]:
        """The :class:`~lightning_tau.TimescaleCallback` settings for the full run, as the verdict says.

        The exponent is :attr:`exponent_used`: the rule that holds (where several hold, the one nearest the estimate),
        else the measured exponent where it has an interval, else the paper's rule (exponent 0: :attr:`unbacked`
        says why). Width axis: ``tau_epoch`` (:attr:`tau_epoch`) and ``width_exponent = 1 +
        exponent_used`` (``1`` where Wang & Aitchison holds, not ``0.908`` from noise); the callback applies it to
        every decaying group, each group's timescale times ``S ** (1 - width_exponent)`` with ``S`` the model's μP
        width multiplier: what the axis measured at ``width_exponent=1``. Dataset-size axis:
        ``tau_epoch`` (the largest fraction's best), ``size_exponent = exponent_used`` and
        ``reference_dataset_size`` (the largest fraction's ``N``): the callback holds
        ``tau_epoch * (N / reference_dataset_size) ** size_exponent``.
        """
        along = self.axis_object
        # the reference: the anchor's scale where it is the value (a batch size), else the largest fraction's N
        anchor = along.anchor(len(self.scales))
        reference = self.scales[anchor] if along.scale_is_value else self.results[-1].subset_size
        return along.callback_kwargs(self.tau_epoch, self.exponent_used, int(reference))

    # --- output -----------------------------------------------------------------------------------------------

    def _point_name(self, i: int) -> str:
        return self.axis_object.point_name(self.values[i], self.scales[i])

    def x_of_tau(self, tau: float) -> float:
        """The swept quantity at ``tau``, a ``tau_epoch`` of the grid: along width its ``λ_base``, else ``tau``."""
        taus = [p.tau_epoch for p in self.results[0].curve]
        if self.axis_object.x_falls_with_tau:
            return self.xs[len(taus) - 1 - taus.index(tau)]
        return tau

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: the axis, the exponent and its interval, the tolerance and each published rule (its
        decision and loss cost), the verdict, the optima, the callback's settings, the cost, and per point its
        :meth:`FinderResult.to_json`. Numbers exact (the table rounds them)."""
        fit = self.fit
        rule = self.rule_used
        full = self.predict(self.full_scale)
        full_range = None if full.low is None or full.high is None else [full.low, full.high]
        parts = self.interval_parts
        flat = self.flat_range()
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
            "full_tau_epoch_range": full_range,
            "prediction": full.to_json(),
            "local_exponent": _finite_or_none(self.local_exponent),
            "interval_parts": {k: list(v) for k, v in parts.items()} if parts is not None else None,
            "shape_undetermined": self.shape_undetermined(),
            "unbacked": self.unbacked,
            "flat_range": list(flat) if flat is not None else None,
            "plateau": self.plateau,
            "callback": {
                k: _finite_or_none(v) if isinstance(v, float) else v for k, v in self.callback_kwargs().items()
            },
            "edge_warning": self.edge_warning(),
            "base_width_mult": self.base_width_mult,
            "cost": self.cost,
            "full_cost": self.full_cost,
            "staging": self.staging.to_json() if self.staging is not None else None,
            "grid_added": [p.to_json() for p in self.grid_added],
            "results": [r.to_json() for r in self.results],
        } | ({"batch_setting": self.batch_setting} if self.batch_setting else {}) | (
            {"beta2_cost": self.beta2_cost.to_json()} if self.beta2_cost is not None else {}
        )

    def save_json(self, path: str | Path) -> Path:
        """Write :meth:`to_json` to ``path`` (parents created); returns the path."""
        return write_json(path, self.to_json())


def _scaling_axis(axis: Any) -> Axis:
    """The axis ``axis`` names (or is) when it fits an exponent; else the one-line error listing those that do."""
    scaling = [a for a in AXES.values() if a.scaling]
    try:
        along: Axis | None = resolve_axis(axis, "AxisResult")
    except ValueError:
        along = None
    if along is None or not along.scaling:
        raise ValueError(
            f"`AxisResult(axis={axis!r})` is not supported. Use"
            f" {', '.join(repr(a.name) for a in scaling[:-1])} or {scaling[-1].name!r}."
        )
    return along


def _plateau_reason(fit: ScalingFit, scales: Sequence[float], results: Sequence[FinderResult]) -> ScalingFit:
    """``fit`` with its ``ci_reason`` saying so where the grid edge that left it without an interval is a plateau
    (:attr:`FinderResult.plateau`): a flat top longer than the run is no edge to widen, and its optimum no point."""
    if fit.ci is not None or not fit.ci_reason or "edge" not in fit.ci_reason or True not in fit.at_edge:
        return fit
    i = fit.at_edge.index(True)  # the scale the reason names: the first at an edge
    if results[i].plateau is None:
        return fit
    reason = (
        f"the best at scale {scales[i]:g} is a plateau (any tau_epoch >= {setting(results[i].plateau)} is as good):"
        " its optimum is not a point, so the exponent has no interval"
    )
    return dataclasses.replace(fit, ci_reason=reason)


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None
