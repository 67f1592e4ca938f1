"""What a scaling fit says about the published rules, as data and in plain words: each rule holds, is excluded or is
undetermined at a tolerance, what following it costs, and what to do.

Pure (the standard library only).

More: docs/finder.rst, 'Along width and dataset size: measure the rule on your model'.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lightning_tau._numbers import cost as cost_text  # re-exported: the one formatter (lightning_tau._numbers)
from lightning_tau._numbers import exponent as exponent_text
from lightning_tau._numbers import signed as signed  # re-exported: the one formatter
from lightning_tau.tuner.analysis.rule_costs import RuleCost
from lightning_tau.tuner.analysis.rules import DEFAULT_TOLERANCE, Decision, decide, half_width
from lightning_tau.tuner.analysis.scaling import ScalingFit
from lightning_tau.tuner.axes import DATASET_SIZE, WIDTH, Axis, resolve_axis
from lightning_tau.tuner.axes.base import frac

__all__ = [
    "RuleVerdict",
    "advice",
    "axis_verdict",
    "judge",
    "rule_to_follow",
    "shape_undetermined",
    "size_verdict",
    "width_verdict",
]

@dataclass(frozen=True)
class RuleVerdict:
    """One published rule, decided: its exponent, the decision at the tolerance, and the loss following it costs.

    Attributes:
        name: e.g. ``"Wang & Aitchison"``.
        exponent: the rule's exponent of the best ``x`` in the scale on this axis.
        decision: ``"holds"``, ``"excluded"`` or ``"undetermined"`` (:func:`~lightning_tau.tuner.analysis.rules.decide`).
        band: the exponents within the tolerance of the rule's, ``(exponent - δ, exponent + δ)``.
        tolerance: the factor by which the best ``x`` may move over the measured range and still follow the rule.
        loss_cost: the mean loss following the rule costs at the largest scale (positive: worse than the best
            there), or ``None`` (``loss_cost_reason`` says why).
        loss_cost_ci: its paired interval over seeds at the fit's level, or ``None``.
        loss_cost_reason: why ``loss_cost`` or ``loss_cost_ci`` is ``None``, else ``None``.
        x_rule: where the rule puts the best ``x`` at the largest scale (``None`` when no cost was computed).
        source: where the rule is published.
        says: what following it means, in words.
        same_point: the rule lands on the grid point that is best at the largest scale, so ``loss_cost`` is 0 by
            construction (:attr:`~lightning_tau.tuner.analysis.rule_costs.RuleCost.same_point`), said in words.
    """

    name: str
    exponent: float
    decision: Decision
    band: tuple[float, float]
    tolerance: float
    loss_cost: float | None
    loss_cost_ci: tuple[float, float] | None
    loss_cost_reason: str | None
    x_rule: float | None
    source: str
    says: str
    same_point: bool = False

    def cost_text(self) -> str:
        """What following the rule costs, as people read it (:func:`lightning_tau._numbers.cost`).

        Example:
            >>> fit = ScalingFit(0.0, (-0.05, 0.05), None, 0.95, [], [], [], 0.0, False, [], scales=[1, 8])
            >>> judge("dataset_size", fit)[0].cost_text()
            'not measured'
        """
        return cost_text(self.loss_cost, self.loss_cost_ci, self.loss_cost_reason, same_point=self.same_point)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of every attribute (``None`` for a cost not measured)."""
        return {
            "name": self.name,
            "exponent": self.exponent,
            "decision": self.decision,
            "band": list(self.band),
            "tolerance": self.tolerance,
            "loss_cost": self.loss_cost,
            "loss_cost_ci": list(self.loss_cost_ci) if self.loss_cost_ci is not None else None,
            "loss_cost_reason": self.loss_cost_reason,
            "x_rule": self.x_rule,
            "source": self.source,
            "says": self.says,
            "same_point": self.same_point,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RuleVerdict:
        """The record :meth:`to_json` wrote (e.g. a rule of a ``summary.json``), back (one written before
        ``same_point`` was kept reads ``False``).

        Example:
            >>> fit = ScalingFit(0.0, (-0.05, 0.05), None, 0.95, [], [], [], 0.0, False, [], scales=[1, 8])
            >>> rule = judge("dataset_size", fit)[0]
            >>> RuleVerdict.from_json(rule.to_json()) == rule
            True
        """
        ci = data["loss_cost_ci"]
        return cls(**{**data, "band": tuple(data["band"]), "loss_cost_ci": tuple(ci) if ci is not None else None})


def judge(
    axis: Axis | str,
    fit: ScalingFit,
    tolerance: float = DEFAULT_TOLERANCE,
    costs: Sequence[RuleCost] | None = None,
    *,
    delta: float | None = None,
) -> list[RuleVerdict]:
    """Every published rule of ``axis`` decided by ``fit.ci`` at ``tolerance`` over ``fit.scales``, with its cost.

    Args:
        axis: the axis (:mod:`lightning_tau.tuner.axes`), or its name: ``"width"`` or ``"dataset_size"``.
        fit: the scaling fit (its ``ci`` and ``scales`` are used).
        tolerance: the factor by which the best ``x`` may move over the measured range and still follow a rule.
            A factor above 1, checked where the user gave it (``TimescaleFinder``, ``AxisResult.build``), not here.
        costs: one :class:`~lightning_tau.tuner.analysis.rule_costs.RuleCost` per rule of ``axis``, in order, or ``None``
            (no cost measured).
        delta: ``tolerance``'s half-width over ``fit.scales`` where the caller computed it already (an axis
            result's, :attr:`~lightning_tau.tuner.analysis.axis_data.AxisData.half_width`); else computed here
            (:func:`~lightning_tau.tuner.analysis.rules.half_width`).

    Raises:
        ValueError: ``axis`` invalid, the fit has no ``scales``, or ``costs`` has another length.

    Example:
        >>> fit = ScalingFit(-0.03, (-0.06, 0.0), None, 0.95, [], [], [], 0.0, False, [], scales=[100, 800])
        >>> [(v.name, v.decision) for v in judge("dataset_size", fit)]
        [('Wang & Aitchison', 'holds'), ('the 1/2 rules', 'excluded'), ('fixed λ', 'excluded')]
    """
    rules = resolve_axis(axis, "judge").rules
    if not fit.scales:
        raise ValueError("`judge(fit=...)` is not valid: the fit has no `scales`; make it with `fit_scaling`.")
    delta = half_width(tolerance, fit.scales) if delta is None else delta
    if costs is not None and len(costs) != len(rules):
        raise ValueError(
            f"`judge(costs=...)` is not valid: got {len(costs)} costs for the {len(rules)} rules of the {axis} axis;"
            " pass one per rule, in order."
        )
    verdicts = []
    for i, rule in enumerate(rules):
        cost = costs[i] if costs is not None else None
        verdicts.append(
            RuleVerdict(
                name=rule.name,
                exponent=rule.exponent,
                decision=decide(fit.ci, rule.exponent, delta),
                band=(rule.exponent - delta, rule.exponent + delta),
                tolerance=float(tolerance),
                loss_cost=cost.mean if cost is not None else None,
                loss_cost_ci=cost.ci if cost is not None else None,
                loss_cost_reason=cost.reason if cost is not None else "not measured",
                x_rule=cost.x_rule if cost is not None else None,
                source=rule.source,
                says=rule.says,
                same_point=cost.same_point if cost is not None else False,
            )
        )
    return verdicts


def rule_to_follow(rules: Sequence[RuleVerdict], estimate: float) -> RuleVerdict | None:
    """The rule the full run follows: the one that holds; where several hold (their bands overlap over a short range),
    the one nearest ``estimate``; ``None`` when none holds (the run then follows the measured exponent).

    Example:
        >>> fit = ScalingFit(-0.28, (-0.31, -0.25), None, 0.95, [], [], [], 0.0, False, [], scales=[1, 2])
        >>> [v.decision for v in judge("width", fit)], rule_to_follow(judge("width", fit), -0.28).name
        (['holds', 'holds', 'excluded'], 'Fan et al.')
    """
    holding = [r for r in rules if r.decision == "holds"]
    if not holding:
        return None
    return min(holding, key=lambda r: abs(r.exponent - estimate))


def shape_undetermined(fit: ScalingFit, rules: Sequence[RuleVerdict]) -> list[str]:
    """The names of the undetermined rules whose band edge the interval's shape part alone straddles
    (:attr:`ScalingFit.interval_parts`): more seeds shrink only the seeds part, so they cannot decide these; points
    nearer the optimum can. Empty without an interval or its parts.

    Example:
        >>> fit = ScalingFit(0.1, (-0.05, 0.25), None, 0.95, [], [], [], 0.0, False, [], scales=[100, 800],
        ...     interval_parts={"seeds": (0.05, 0.15), "shape": (0.0, 0.2)})
        >>> shape_undetermined(fit, judge("dataset_size", fit))  # the shape part crosses 0's band edge +0.107
        ['Wang & Aitchison']
    """
    parts = getattr(fit, "interval_parts", None)
    if fit.ci is None or not parts:
        return []
    shape = parts["shape"]
    return [
        r.name
        for r in rules
        if r.decision == "undetermined" and decide(shape, r.exponent, (r.band[1] - r.band[0]) / 2) == "undetermined"
    ]


# --- sentences ------------------------------------------------------------------------------------------------------


def _span(axis: Axis, fit: ScalingFit) -> str:
    return f"over {axis.span_text(fit.scales[0], fit.scales[-1])}"


def _from_to(axis: Axis, fit: ScalingFit) -> str:
    return axis.from_to_text(fit.scales[0], fit.scales[-1])


def _cap(text: str) -> str:
    """A sentence's first letter in capitals ("the 1/2 rules" opening a sentence)."""
    return text[:1].upper() + text[1:]


def _rule_sentence(axis: Axis, fit: ScalingFit, rule: RuleVerdict, monitor: str) -> str:
    """One rule's decision in words, with what following it costs (``fit.ci`` is not ``None``)."""
    assert fit.ci is not None  # the caller says "no interval" once for every rule instead
    x = axis.x_label
    ratio = fit.scales[-1] / fit.scales[0]
    plural = rule.name.endswith("rules")  # "the 1/2 rules are excluded"
    head = f"{_cap(rule.name)} ({rule.says}; exponent {frac(rule.exponent)})"
    target = f"x{rule.tolerance:g} of the rule's factor of {ratio**rule.exponent:.3g}"
    moves = f"{_span(axis, fit)} the best {x} moves by a factor of {ratio ** fit.ci[0]:.3g} to {ratio ** fit.ci[1]:.3g}"
    if rule.decision == "holds":
        body = f"{head} {'hold' if plural else 'holds'}: {moves}, within {target}"
    elif rule.decision == "excluded":
        body = f"{head} {'are' if plural else 'is'} excluded: {moves}, more than {target} away"
    elif rule.name in shape_undetermined(fit, [rule]):
        body = (
            f"{head} {'are' if plural else 'is'} undetermined: {moves}, reaching both within and beyond {target}"
            " (the curve's shape alone reaches both, so more seeds would not decide it: grid points nearer the"
            " optimum would)"
        )
    else:
        body = (
            f"{head} {'are' if plural else 'is'} undetermined: {moves}, reaching both within and beyond {target}"
            " (more seeds would decide it)"
        )
    if rule.loss_cost_reason == "not measured":
        return f"{body}."
    cost = rule.cost_text()
    if rule.same_point:
        return f"{body}; following it {_from_to(axis, fit)} costs {cost}."
    if rule.loss_cost is not None:
        return f"{body}; following it {_from_to(axis, fit)} costs {cost} {monitor}."
    return f"{body}; what following it costs is {cost}."


def advice(axis: Axis | str, fit: ScalingFit, rules: Sequence[RuleVerdict]) -> str:
    """What to do, in one sentence: follow the rule that holds, or the measured exponent, and why.

    Example:
        >>> fit = ScalingFit(-0.03, (-0.06, 0.0), None, 0.95, [], [], [], 0.0, False, [], scales=[100, 800])
        >>> advice("dataset_size", fit, judge("dataset_size", fit))
        "Follow Wang & Aitchison: result.callback() keeps the largest fraction's best tau_epoch at every N (size_exponent = 0)."
        >>> advice("width", fit, judge("width", fit))
        'Follow Wang & Aitchison: result.callback() uses width_exponent = 1 (α).'
    """  # noqa: E501
    axis = resolve_axis(axis, "advice")
    chosen = rule_to_follow(rules, fit.exponent)
    holding = [r.name for r in rules if r.decision == "holds"]
    if chosen is not None:
        if len(holding) == 1:
            lead = f"Follow {chosen.name}"
        else:
            every = "both" if len(holding) == 2 else "all"
            lead = (
                f"{_cap(_join(holding))} {every} hold (their bands overlap over this range): follow {chosen.name},"
                f" the nearest to the estimate {exponent_text(fit.exponent)}"
            )
        return f"{lead}: {axis.follow_text(chosen.exponent)}."
    measured = axis.measured_text(fit.exponent)
    if fit.ci is None:
        paper = axis.paper_setting.replace("=", " = ")
        return (
            f"No rule is decided without an interval ({fit.ci_reason}): result.callback() follows the paper's rule,"
            f" Wang & Aitchison ({paper}), as nothing here backs the measured {measured}."
        )
    if all(r.decision == "excluded" for r in rules):
        return f"None of the published rules holds: result.callback() uses the measured {measured}."
    wider = axis.range_noun
    undetermined = [r.name for r in rules if r.decision == "undetermined"]
    shape = shape_undetermined(fit, rules)
    if shape and len(shape) == len(undetermined):
        what = "grid points nearer the optimum (not more seeds: the curve's shape alone leaves it open) would decide it"
    elif shape:
        what = (
            f"more seeds would decide {_join([n for n in undetermined if n not in shape])}, grid points nearer the"
            f" optimum {_join(shape)} (the curve's shape alone leaves it open)"
        )
    else:
        what = f"more seeds (or a wider range of {wider}) would decide it"
    return f"No rule holds yet: {what}; meanwhile result.callback() uses the measured {measured}."


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _verdict(axis: Axis, fit: ScalingFit, rules: Sequence[RuleVerdict] | None, tolerance: float, monitor: str) -> str:
    rules = judge(axis, fit, tolerance) if rules is None else rules
    if fit.ci is not None:
        sentences = [_rule_sentence(axis, fit, r, monitor) for r in rules]
    else:  # every rule undetermined for one reason: said once, in the advice; the costs stand without an interval
        costs = [
            f"{r.name} {r.cost_text()}"
            for r in rules
            if r.loss_cost_reason != "not measured"
        ]
        sentences = (
            [f"Following each rule {_from_to(axis, fit)} costs ({monitor}): {'; '.join(costs)}."] if costs else []
        )
    return " ".join([*sentences, advice(axis, fit, rules)])


def axis_verdict(
    axis: Axis | str,
    fit: ScalingFit,
    rules: Sequence[RuleVerdict] | None = None,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    monitor: str = "loss",
) -> str:
    """The verdict along ``axis`` (an axis or its name): :func:`width_verdict` or :func:`size_verdict`'s sentences.

    Example:
        >>> fit = ScalingFit(0.02, (-0.05, 0.09), None, 0.95, [], [], [], 0.0, False, [], scales=[150, 1350])
        >>> axis_verdict("dataset_size", fit) == size_verdict(fit) != axis_verdict("width", fit)
        True
    """
    return _verdict(resolve_axis(axis, "axis_verdict"), fit, rules, tolerance, monitor)


def width_verdict(
    fit: ScalingFit,
    rules: Sequence[RuleVerdict] | None = None,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    monitor: str = "loss",
) -> str:
    """The width axis's verdict: one sentence per published width rule (holds, is excluded or is undetermined at the
    tolerance, and what following it costs), then what to do.

    Args:
        fit: the scaling fit of the best ``λ_base`` in the width.
        rules: the rules as :func:`judge` decided them (with their costs); by default judged here at ``tolerance``,
            without costs.
        tolerance: used when ``rules`` is ``None``.
        monitor: the metric the costs are in.

    Example:
        >>> fit = ScalingFit(-0.07, (-0.15, -0.01), None, 0.95, [], [], [], 0.0, False, [], scales=[64, 512])
        >>> print(width_verdict(fit).replace(". F", ".\\nF").replace(". Q", ".\\nQ").replace(". N", ".\\nN"))
        Wang & Aitchison (α = 1: λ ∝ s, tau_iter held; exponent 0) is undetermined: over widths 64 to 512 the best λ_base moves by a factor of 0.732 to 0.979, reaching both within and beyond x1.25 of the rule's factor of 1 (more seeds would decide it).
        Fan et al. (α = 1/2: λ ∝ √s; exponent -1/2) is excluded: over widths 64 to 512 the best λ_base moves by a factor of 0.732 to 0.979, more than x1.25 of the rule's factor of 0.354 away.
        Qiu et al. (α = 0: the same λ at every width under μP's lr / s; exponent -1) is excluded: over widths 64 to 512 the best λ_base moves by a factor of 0.732 to 0.979, more than x1.25 of the rule's factor of 0.125 away.
        No rule holds yet: more seeds (or a wider range of widths) would decide it; meanwhile result.callback() uses the measured width_exponent = 0.93 (exponent -0.07).
    """  # noqa: E501
    return _verdict(WIDTH, fit, rules, tolerance, monitor)


def size_verdict(
    fit: ScalingFit,
    rules: Sequence[RuleVerdict] | None = None,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    monitor: str = "loss",
) -> str:
    """The dataset-size axis's verdict: one sentence per published rule (Wang & Aitchison's constant ``tau_epoch``, the
    1/2 rules, a fixed ``λ``), then what to do. Arguments as :func:`width_verdict`.

    Example:
        >>> fit = ScalingFit(0.02, (-0.05, 0.09), None, 0.95, [], [], [], 0.0, False, [], scales=[150, 1350])
        >>> print(size_verdict(fit).replace(". ", ".\\n"))
        Wang & Aitchison (tau_epoch constant, so λ ∝ 1/N; exponent 0) holds: over N = 150 to 1350 the best tau_epoch moves by a factor of 0.896 to 1.22, within x1.25 of the rule's factor of 1.
        The 1/2 rules (tau_epoch ∝ 1/√N, so λ ∝ 1/√N; exponent -1/2) are excluded: over N = 150 to 1350 the best tau_epoch moves by a factor of 0.896 to 1.22, more than x1.25 of the rule's factor of 0.333 away.
        Fixed λ (the same λ at every N, so tau_epoch ∝ 1/N; exponent -1) is excluded: over N = 150 to 1350 the best tau_epoch moves by a factor of 0.896 to 1.22, more than x1.25 of the rule's factor of 0.111 away.
        Follow Wang & Aitchison: result.callback() keeps the largest fraction's best tau_epoch at every N (size_exponent = 0).
        >>> none = ScalingFit(0.3, None, "1 seed: an interval needs at least 2", 0.95, [], [], [], 0.0, False, [],
        ...     scales=[150, 1350])
        >>> size_verdict(none)
        "No rule is decided without an interval (1 seed: an interval needs at least 2): result.callback() follows the paper's rule, Wang & Aitchison (size_exponent = 0), as nothing here backs the measured size_exponent = +0.30."
    """  # noqa: E501
    return _verdict(DATASET_SIZE, fit, rules, tolerance, monitor)
