"""The text of an axis result: :meth:`AxisResult.table <lightning_tau.tuner.analysis.axis_result.AxisResult.table>`, the curve per
point, the optima, the exponent, each published rule with its decision and loss cost, the verdict and the callback.

Pure (the standard library only). The numbers it prints are :class:`~lightning_tau.tuner.analysis.axis_data.AxisData`'s (exact
in its JSON); the figure is :mod:`lightning_tau.tuner.analysis.axis_figure`'s.
"""

from __future__ import annotations

import math

from lightning_tau._numbers import exponent, interval, kwargs_text, setting
from lightning_tau._table import table_lines
from lightning_tau.tuner.analysis.axis_data import AxisData
from lightning_tau.tuner.analysis.grid_extension import grid_line

__all__ = ["axis_table"]


def axis_table(result: AxisData) -> str:
    """The curve per point, the optima, the exponent, each published rule with its decision and loss cost, the
    verdict and the callback, as text (numbers rounded for people; :meth:`to_json` holds them exactly)."""
    first = result.results[0]
    seeds = len(first.curve[0].seeds)
    value = "final" if first.reduce == "last" else "best"
    along = result.axis_object
    x_label = along.x_name
    what = (
        f"{len(result.values)} {along.point_nouns} ({', '.join(f'{v:g}' for v in result.values)})"
        if along.scale_is_value
        else f"{len(result.values)} fractions of {first.dataset_size} training samples"
        f" ({', '.join(f'{v:.3g}' for v in result.values)}: N={', '.join(f'{s:g}' for s in result.scales)})"
    )
    data = (  # the data every run saw: the width axis trains every width on one subset
        f" on {first.subset_size} of {first.dataset_size} training samples (fraction {first.fraction:.3g}),"
        if along.scale_is_value
        else ","
    )
    if along.batch_per_point:  # how the batch was set, and the lr across it
        m = along.lr_exponent
        lr = "the same lr at every B" if m == 0 else f"lr x (B / {result.values[0]:g})^{exponent(m, sign=False)}"
        data += f" the batch set by {result.batch_setting or 'the finder'}, {lr},"
    lines = [
        f"Timescale finder, {result.axis} axis: {what} x {len(first.curve)} tau_epochs x {seeds}"
        f" seed{'s' if seeds != 1 else ''}{data} {first.epochs} epoch{'s' if first.epochs != 1 else ''} each; {value} {first.monitor} ({first.mode}), seed mean +- std:",
    ]
    rows = []
    for j, point in enumerate(first.curve):
        cells = [setting(point.tau_epoch)]
        if along.x_falls_with_tau:  # the swept x beside its tau_epoch
            cells.append(f"{result.x_of_tau(point.tau_epoch):.3g}")
        for r in result.results:
            p = r.curve[j]
            mark = "*" if p.tau_epoch == r.grid_tau_epoch else " "
            cells.append(f"{_fmt(p.mean)} +- {_fmt(p.std)}{mark}")
        rows.append(cells)
    columns = ["tau_epoch", *([along.x_name] if along.x_falls_with_tau else [])]
    columns += [result._point_name(i) for i in range(len(result.results))]
    lines += table_lines(columns, rows, rule=False, indent="  ")
    lines.append("  (* best on the grid)")
    fit = result.fit
    lines.append(f"Best {x_label} per {along.point_noun}:")
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
    scale = along.scale_symbol
    if fit.ci is not None:
        ci = f"{fit.level:.0%} interval {interval(*fit.ci)} (the estimate is its centre)"
    else:
        ci = f"no interval: {fit.ci_reason}"
    curve = exponent(result.curve_exponent)
    curve = f"; the seed-mean curves' optima give {curve}" if curve != exponent(fit.exponent) else ""
    local = ""
    if len(result.scales) > 2:
        local = (
            f"; between the last two ({result._point_name(len(result.scales) - 2)} and"
            f" {result._point_name(len(result.scales) - 1)}) the optima move as {exponent(result.local_exponent)}"
        )
    lines.append(
        f"Exponent of best {x_label} on {scale}: {exponent(fit.exponent)}, {ci}{curve}; the grid optima give"
        f" {exponent(fit.grid_exponent)}{local}."
    )
    parts = result.interval_parts
    if parts is not None:
        seeds_part, shape_part = parts["seeds"], parts["shape"]
        lines.append(
            f"  The interval's parts: the seeds' {interval(*seeds_part)} (shrinks with more seeds) and the curve's"
            f" shape {interval(*shape_part)} (the smoothers' spread: more seeds do not shrink it; grid points nearer"
            " the optimum do)."
        )
    if result.note():
        lines.append(str(result.note()))
    lines += _rules_lines(result)
    if result.beta2_cost is not None:  # beta2="both": the second decision, on the largest batch's runs
        lines.append(result.beta2_cost.sentence())
    if result.staging is not None:
        lines.append(result.staging.sentence())
    lines += [line for line in [grid_line(result.grid_added)] if line]
    lines.append(f"Verdict: {result.verdict}")
    lines += _full_run_lines(result)
    if not result.full_cost:
        lines.append(f"Cost: {result.cost:,} optimizer steps.")
    elif along.scale_is_value:
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
    along = result.axis_object
    x_label = along.x_label
    first, last = result._point_name(0), result._point_name(len(result.results) - 1)
    span = along.span_text(result.scales[0], result.scales[-1])
    delta = result.half_width  # computed once, by AxisData.build
    lines = [
        f"Published rules at tolerance x{result.tolerance:g} (a rule holds when the best {x_label} stays within"
        f" x{result.tolerance:g} of it over {span}, i.e. an exponent within ±{delta:.2f} of the rule's):"
    ]
    rows = []
    for r in result.rules:
        alpha = [] if along.alpha(r.exponent) is None else [f"{along.alpha(r.exponent):g}"]
        rows.append(
            [
                r.name,
                f"{r.exponent:g}",
                *alpha,
                r.decision,
                r.cost_text(),
            ]
        )
    monitor = result.results[0].monitor
    lines += table_lines(
        [
            "rule",
            "exponent",
            *([] if along.alpha(0.0) is None else ["α"]),
            "decision",
            f"cost over the measured range: at {last} if followed from {first} (how much worse {monitor} is; mean,"
            f" {fit.level:.0%} interval over seeds)",
        ],
        rows,
        rule=False,
        indent="  ",
    )
    return lines


def _full_run_lines(result: AxisData) -> list[str]:
    """The callback for the full run, which exponent it uses and why, its prediction interval, what a snap to a rule
    costs, whether the choice matters at the largest scale, a plateau, and the grid-edge warning."""
    rule = result.rule_used
    kwargs = result.callback_kwargs()
    unbacked = result.unbacked
    if rule is not None:
        holding = [r for r in result.rules if r.decision == "holds"]
        verb = "hold" if rule.name.endswith("rules") else "holds"  # "the 1/2 rules hold"
        why = (
            f"{rule.name} {verb}"
            if len(holding) == 1
            else f"{rule.name} {verb} and {'are' if verb == 'hold' else 'is'} the nearest to the estimate"
        )
    elif unbacked is not None:
        why = unbacked
    elif all(r.decision == "excluded" for r in result.rules):
        why = "no published rule holds"
    else:
        why = "no rule holds yet"
    full = result.predict(result.full_scale)
    predicted = (
        f"{full.level:.0%} prediction interval {setting(full.low)} to {setting(full.high)}"
        if full.low is not None and full.high is not None
        else "no prediction interval"
    )
    if full.extrapolation > 1:
        predicted += f", x{full.extrapolation:.3g} beyond the measured range"
    call = f"TimescaleCallback({kwargs_text(kwargs)})"  # rounded for people; to_json keeps them exact
    along = result.axis_object
    if along.model_per_point:
        w, measured = exponent(kwargs["width_exponent"], sign=False), exponent(1 + result.exponent, sign=False)
        if rule:
            which = f"its α = {w}" + (f" rather than the measured {measured}" if measured != w else ", as measured")
        elif unbacked is not None:
            which = "the paper's rule, Wang & Aitchison's α = 1"
        else:
            which = "the measured α"
        lines = [f"Full run: {call}: {why}, so {which} ({predicted} at μP's base width {result.full_scale:g})."]
    elif along.batch_per_point:
        e_text, measured = exponent(kwargs["batch_exponent"], sign=False), exponent(result.exponent)
        if rule:
            which = f"its exponent {e_text}" + (
                f" rather than the measured {measured}" if measured.lstrip("+") != e_text else ", as measured"
            )
        elif unbacked is not None:
            which = "the paper's rule, tau_epoch constant (exponent 0)"
        else:
            which = "the measured exponent"
        there = (
            f"at B_ref = {kwargs['reference_batch_size']} (the smallest batch) that is tau_epoch"
            f" {setting(result.full_tau_epoch)} ({predicted})"
        )
        lines = [f"Full run: {call}: {why}, so {which}; {there}."]
    else:
        e_text, measured = exponent(kwargs["size_exponent"], sign=False), exponent(result.exponent)
        if rule:
            which = f"its exponent {e_text}" + (
                f" rather than the measured {measured}" if measured.lstrip("+") != e_text else ", as measured"
            )
        elif unbacked is not None:
            which = "the paper's rule, Wang & Aitchison's exponent 0"
        else:
            which = "the measured exponent"
        last = result.results[-1]
        at_full = f"at the full N = {last.dataset_size}"
        if last.dataset_size == last.subset_size:
            there = (
                f"{at_full} (the largest fraction) that is tau_epoch {setting(result.full_tau_epoch)} as found"
                f" ({predicted})"
            )
        else:
            there = f"{at_full} that is tau_epoch {setting(result.full_tau_epoch)} ({predicted})"
        lines = [f"Full run: {call}: {why}, so {which}; {there}."]
    if full.extrapolation > 1 and full.low is not None:
        anchor = result._point_name(along.anchor(len(result.results)))
        lines.append(
            f"  The prediction interval holds the exponent's interval and the seeds' range of the best at {anchor},"
            f" both grown with the distance, and the lack of fit of one power law. {full.notes}"
        )
    snap = result.snap_excludes
    if snap is not None and result.fit.ci is not None:
        lo, hi = result.fit.ci
        first, end = result._point_name(0), result._point_name(len(result.results) - 1)
        cost = snap.cost_text()
        whose = f"{snap.name}'" if snap.name.endswith("s") else f"{snap.name}'s"  # the 1/2 rules' band
        lines.append(
            f"  {whose} band holds the interval {interval(lo, hi)}, which excludes its exponent"
            f" {snap.exponent:g} itself: following it over the measured range, from {first} to {end}, costs {cost}"
            f" {result.results[0].monitor}."
        )
    flat = result.flat_range()
    if flat is not None:
        lines.append(
            f"At {result._point_name(len(result.results) - 1)} the choice barely matters: moving tau_epoch"
            f" x{result.tolerance:g} from its best costs less than one seed s.d.; tau_epoch {flat[0]:.3g} to"
            f" {flat[1]:.3g} is within one seed s.d. of the best there."
        )
    if result.plateau is not None:
        i = along.anchor(len(result.results))
        lines.append(
            f"Plateau at {result._point_name(i)}: weight decay has no measurable effect on this model at this run"
            f" length; any tau_epoch >= {result.plateau:.3g} is as good (the callback uses {result.plateau:.3g})."
        )
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


def _fmt(value: float) -> str:
    return f"{value:.4g}" if math.isfinite(value) else "nan"
