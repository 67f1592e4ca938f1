"""The text of an axis result: :meth:`AxisResult.table <lightning_tau.tuner.axes.AxisResult.table>`, the curve per
point, the optima, the exponent, each published rule with its decision and loss cost, the verdict and the callback.

Pure (the standard library only). The numbers it prints are :class:`~lightning_tau.tuner.axis_data.AxisData`'s (exact
in its JSON); the figure is :mod:`lightning_tau.tuner.axis_figure`'s.
"""

from __future__ import annotations

import math

from lightning_tau._table import table_lines
from lightning_tau.tuner.axis_data import AxisData
from lightning_tau.tuner.grid_extension import grid_line
from lightning_tau.tuner.rules import half_width
from lightning_tau.tuner.verdicts import cost_text, signed

__all__ = ["axis_table"]


def axis_table(result: AxisData) -> str:
    """The curve per point, the optima, the exponent, each published rule with its decision and loss cost, the
    verdict and the callback, as text (numbers rounded for people; :meth:`to_json` holds them exactly)."""
    first = result.results[0]
    seeds = len(first.curve[0].seeds)
    value = "final" if first.reduce == "last" else "best"
    x_label = "lambda_base" if result.axis == "width" else "tau_epoch"
    what = (
        f"{len(result.values)} widths ({', '.join(f'{v:g}' for v in result.values)})"
        if result.axis == "width"
        else f"{len(result.values)} fractions ({', '.join(f'{v:.3g}' for v in result.values)}:"
        f" N={', '.join(f'{s:g}' for s in result.scales)})"
    )
    lines = [
        f"Timescale finder, {result.axis} axis: {what} x {len(first.curve)} tau_epochs x {seeds} seeds,"
        f" {first.epochs} epochs; {value} {first.monitor} ({first.mode}), seed mean +- std:",
    ]
    rows = []
    for j, point in enumerate(first.curve):
        cells = [f"{point.tau_epoch:g}"]
        if result.axis == "width":
            cells.append(f"{result.x_of_tau(point.tau_epoch):.3g}")
        for r in result.results:
            p = r.curve[j]
            mark = "*" if p.tau_epoch == r.grid_tau_epoch else " "
            cells.append(f"{_fmt(p.mean)} +- {_fmt(p.std)}{mark}")
        rows.append(cells)
    columns = ["tau_epoch", *(["lambda_base"] if result.axis == "width" else [])]
    columns += [result._point_name(i) for i in range(len(result.results))]
    lines += table_lines(columns, rows, rule=False, indent="  ")
    lines.append("  (* best on the grid)")
    fit = result.fit
    lines.append(f"Best {x_label} per {'width' if result.axis == 'width' else 'size'}:")
    opt_rows = [
        [
            result._point_name(i),
            f"{fit.optima[i]:.3g}",
            f"{fit.grid_optima[i]:.3g}",
            ", ".join(f"{v:.3g}" for v in fit.per_seed_grid_optima[i]),
            _neighbours(result, i),
        ]
        for i in range(len(result.results))
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
    scale = "width" if result.axis == "width" else "N"
    if fit.ci is not None:
        ci = f"{fit.level:.0%} interval [{signed(fit.ci[0])}, {signed(fit.ci[1])}] (the estimate is its centre)"
    else:
        ci = f"no interval: {fit.ci_reason}"
    curve = signed(result.curve_exponent)
    curve = f"; the seed-mean curves' optima give {curve}" if curve != signed(fit.exponent) else ""
    lines.append(
        f"Exponent of best {x_label} on {scale}: {signed(fit.exponent)}, {ci}{curve}; the grid optima give"
        f" {signed(fit.grid_exponent)}."
    )
    if result.note():
        lines.append(str(result.note()))
    lines += _rules_lines(result)
    if result.staging is not None:
        lines.append(result.staging.sentence())
    lines += [line for line in [grid_line(result.grid_added)] if line]
    lines.append(f"Verdict: {result.verdict}")
    lines += _full_run_lines(result)
    if not result.full_cost:
        lines.append(f"Cost: {result.cost:,} optimizer steps.")
    elif result.axis == "width":
        lines.append(
            f"Cost: {result.cost:,} optimizer steps, {result.cost / result.full_cost:.0%} of the"
            f" {result.full_cost:,} the same sweeps take on the full data."
        )
    else:
        lines.append(
            f"Cost: {result.cost:,} optimizer steps for the sweeps at the {len(result.results)} sizes,"
            f" {result.cost / result.full_cost:.0%} of one sweep at the full N ({result.full_cost:,} steps), which"
            " would give the best tau_epoch at one N but not how it moves with N."
        )
    return "\n".join(lines)


def _rules_lines(result: AxisData) -> list[str]:
    """The published rules at the tolerance: decision and loss cost, one row each."""
    if not result.rules:
        return []
    fit = result.fit
    x_label = "λ_base" if result.axis == "width" else "tau_epoch"
    first, last = result._point_name(0), result._point_name(len(result.results) - 1)
    span = (
        f"widths {result.scales[0]:g} to {result.scales[-1]:g}"
        if result.axis == "width"
        else f"N = {result.scales[0]:g} to {result.scales[-1]:g}"
    )
    delta = half_width(result.tolerance, result.scales)
    lines = [
        f"Published rules at tolerance x{result.tolerance:g} (a rule holds when the best {x_label} stays within"
        f" x{result.tolerance:g} of it over {span}, i.e. an exponent within ±{delta:.2f} of the rule's):"
    ]
    rows = []
    for r in result.rules:
        alpha = [f"{1 + r.exponent:g}"] if result.axis == "width" else []
        rows.append(
            [
                r.name,
                f"{r.exponent:g}",
                *alpha,
                r.decision,
                cost_text(r.loss_cost, r.loss_cost_ci, r.loss_cost_reason),
            ]
        )
    monitor = result.results[0].monitor
    lines += table_lines(
        [
            "rule",
            "exponent",
            *(["α"] if result.axis == "width" else []),
            "decision",
            f"cost at {last} if followed from {first} (how much worse {monitor} is; mean, {fit.level:.0%}"
            " interval over seeds)",
        ],
        rows,
        rule=False,
        indent="  ",
    )
    return lines


def _full_run_lines(result: AxisData) -> list[str]:
    """The callback for the full run, which exponent it uses and why, and the grid-edge warning."""
    rule = result.rule_used
    kwargs = result.callback_kwargs()
    if rule is not None:
        holding = [r for r in result.rules if r.decision == "holds"]
        verb = "hold" if rule.name.endswith("rules") else "holds"  # "the 1/2 rules hold"
        why = (
            f"{rule.name} {verb}"
            if len(holding) == 1
            else f"{rule.name} {verb} and {'are' if verb == 'hold' else 'is'} the nearest to the estimate"
        )
    elif result.fit.ci is None:
        why = "no rule is decided without an interval"
    elif all(r.decision == "excluded" for r in result.rules):
        why = "no published rule holds"
    else:
        why = "no rule holds yet"
    if result.axis == "width":
        w = _short(kwargs["width_exponent"])
        which = f"its α = {w} rather than the measured {_short(1 + result.exponent)}" if rule else "the measured α"
        lines = [
            f"Full run: TimescaleCallback(tau_epoch={kwargs['tau_epoch']:.3g}, width_exponent={w}): {why}, so {which}."
        ]
    else:
        e_text = _short(kwargs["size_exponent"])
        which = (
            f"its exponent {e_text} rather than the measured {signed(result.exponent)}"
            if rule
            else "the measured exponent"
        )
        last = result.results[-1]
        full = f"at the full N = {last.dataset_size}"
        if last.dataset_size == last.subset_size:
            there = f"{full} (the largest fraction) that is tau_epoch {result.full_tau_epoch:.3g} as found"
        else:
            span = result.full_tau_epoch_range
            implied = f" (the interval gives {span[0]:.3g} to {span[1]:.3g})" if span is not None else ""
            there = f"{full} that is tau_epoch {result.full_tau_epoch:.3g}{implied}"
        lines = [
            f"Full run: TimescaleCallback(tau_epoch={kwargs['tau_epoch']:.3g}, size_exponent={e_text},"
            f" reference_dataset_size={kwargs['reference_dataset_size']}): {why}, so {which}; {there}."
        ]
    edge = result.edge_warning()
    if edge is not None:
        lines.append(f"Warning: {edge}")
    return lines


def _neighbours(result: AxisData, i: int) -> str:
    """Whether the seeds tell point ``i``'s best grid point from its grid neighbours, in words."""
    fit = result.fit
    test = fit.interior[i]
    if len(fit.per_seed_grid_optima[i]) < 2:
        return "1 seed: nothing to compare"
    if test.p_lower is None or test.p_upper is None:
        return "at the grid's edge: the best may lie beyond it"
    k = result.xs.index(fit.grid_optima[i])
    lower, upper = result.xs[k - 1], result.xs[k + 1]
    if test.interior:
        return f"yes, from both {lower:.3g} and {upper:.3g} (p = {test.p_lower:.2g}, {test.p_upper:.2g})"
    level = test.level
    untold = [(x, p) for x, p in ((lower, test.p_lower), (upper, test.p_upper)) if p >= level]
    return "no: they cannot tell it from " + " or ".join(f"{x:.3g} (p = {p:.2g})" for x, p in untold)


def _short(value: float) -> str:
    """A setting rounded for people: three decimals, no ``-0`` (``0.908``, ``1``, ``0``; never ``1.44e-16``)."""
    return f"{round(value, 3) + 0.0:g}"


def _fmt(value: float) -> str:
    return f"{value:.4g}" if math.isfinite(value) else "nan"
