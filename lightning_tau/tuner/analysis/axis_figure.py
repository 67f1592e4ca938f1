"""The figure of an axis result: :meth:`AxisResult.figure <lightning_tau.tuner.analysis.axis_result.AxisResult.figure>`, the curve
per point beside the best ``x`` against the scale with the fitted exponent and each published rule.

No Lightning import; matplotlib (Agg backend) only when it draws. The numbers it draws are
:class:`~lightning_tau.tuner.analysis.axis_data.AxisData`'s; the text is :mod:`lightning_tau.tuner.analysis.axis_table`'s.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lightning_tau._numbers import exponent, interval, setting
from lightning_tau.tuner.analysis.axis_data import AxisData
from lightning_tau.tuner.analysis.plain import metric_words, plain_ticks, thin_ticks, wrap
from lightning_tau.tuner.analysis.verdicts import advice

__all__ = ["axis_figure", "y_limits"]

#: The right panel's margin around its points, as a factor (log axes), and the least span it shows (a factor).
Y_MARGIN, Y_SPAN = 1.35, 4.0


def y_limits(values: list[float]) -> tuple[float, float]:
    """The right panel's y limits: the plotted points (positive, finite) with a margin of :data:`Y_MARGIN` either side
    on the log axis, widened about their middle to a span of at least :data:`Y_SPAN`.

    Example:
        >>> y_limits([0.473, 0.473])  # every point at one value: a span of 4 around it
        (0.2365, 0.946)
        >>> [round(v, 3) for v in y_limits([2.0, 20.0])]
        [1.481, 27.0]
    """
    shown = [v for v in values if math.isfinite(v) and v > 0]
    low, high = min(shown) / Y_MARGIN, max(shown) * Y_MARGIN
    if high / low < Y_SPAN:
        middle = math.sqrt(low * high)
        low, high = middle / math.sqrt(Y_SPAN), middle * math.sqrt(Y_SPAN)
    return low, high


def _y_ticks(grid: list[float], low: float, high: float) -> list[float]:
    """The right panel's y ticks: the grid's values within ``[low, high]``; with fewer than two there, the round
    numbers (1, 2, 5 x 10^k) within it as well."""
    inside = [x for x in grid if low <= x <= high]
    if len(inside) >= 2:
        return inside
    decades = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
    rounds = [m * 10.0**k for k in decades for m in (1, 2, 5)]
    return sorted({*inside, *(x for x in rounds if low <= x <= high)})


def _clip(xs: np.ndarray, ys: np.ndarray, low: float, high: float) -> tuple[np.ndarray, str | None]:
    """``ys`` with the part beyond ``[low, high]`` after the line first leaves it set to ``nan`` (the line drawn
    until it leaves the panel), and where it leaves, in words (``None``: it stays in)."""
    outside = (ys < low) | (ys > high)
    if not outside.any():
        return ys, None
    k = int(np.argmax(outside))
    clipped = ys.astype(float).copy()
    clipped[k:] = np.nan
    side = "bottom" if ys[k] < low else "top"
    return clipped, f"leaves through the {side} at {setting(float(xs[k]))}"


def axis_figure(result: AxisData) -> Any:  # pragma: no mutate block (drawing; tests/tuner/analysis/test_axis_figure.py reads it back)
    """The matplotlib figure :meth:`plot` saves (Agg backend).

    Left: the curve per point (seed mean as a line, each seed as a dot, the smoothed optimum dotted). Right: the
    best ``x`` against the scale on log axes: the smoothed optima, the grid optima, each seed's grid optimum, the
    fitted line with its interval as a band, and each published rule carried from the smallest scale's best
    ``x`` (a dashed line in the band of its tolerance), labelled with its decision and loss cost; the y limits are
    the points' (:func:`y_limits`), and a rule's line that leaves them stops there, with an arrow on the edge and
    its legend entry saying where. Below: what to
    do (:func:`~lightning_tau.tuner.analysis.verdicts.advice`). Tick labels are plain numbers, thinned until none
    overlaps.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(13, 5.2), layout="constrained")
    grid = fig.add_gridspec(2, 2, height_ratios=[9, 1], width_ratios=[1, 1.25])
    left, right = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    caption = fig.add_subplot(grid[1, :])
    first = result.results[0]
    metric = f"{'final' if first.reduce == 'last' else 'best'} {metric_words(first.monitor)}"
    along = result.axis_object
    x_words, best_words, scale_words = along.x_words, along.best_words, along.scale_words

    colors = plt.cm.viridis(np.linspace(0.0, 0.85, len(result.results)))
    for i, (r, color) in enumerate(zip(result.results, colors)):
        xs = [result.x_of_tau(p.tau_epoch) for p in r.curve]
        for x, p in zip(xs, r.curve):
            left.plot([x] * len(p.values), p.values, ".", color=color, alpha=0.35, markersize=4)
        left.plot(xs, [p.mean for p in r.curve], "o-", color=color, markersize=4, label=result._point_name(i))
        left.axvline(result.fit.optima[i], color=color, linestyle=":", alpha=0.8)
    left.plot([], [], ".", color="gray", alpha=0.6, label="each seed")
    left.plot([], [], ":", color="gray", label="smoothed optimum")
    left.set_xscale("log")
    left.set_xlabel(x_words)
    left.set_ylabel(f"{metric} (seed mean)")
    left.set_title(f"{metric} at each {along.point_noun}", fontsize="medium")
    left.grid(True, which="major", alpha=0.3)
    left.legend(fontsize="small")

    fit = result.fit
    scales = np.asarray(result.scales, dtype=float)
    log_s = np.log(scales)
    centre_x, centre_y = float(log_s.mean()), float(np.mean(np.log(fit.optima)))
    dense = np.exp(np.linspace(log_s[0], log_s[-1], 50))

    def line(slope: float, at_x: float = centre_x, at_y: float = centre_y) -> np.ndarray:
        return np.exp(at_y + slope * (np.log(dense) - at_x))

    # the y limits from the points drawn and the fitted line (not the grid, not the rules: a rule that leaves them
    # is drawn until it does, and says where)
    points = [*fit.optima, *fit.grid_optima, *(y for ys in fit.per_seed_grid_optima for y in ys)]
    low, high = y_limits([*points, *line(fit.exponent)[[0, -1]]])
    rule_colors = ["tab:green", "tab:purple", "tab:brown", "tab:pink"]
    x0 = fit.optima[0]
    for r, color in zip(result.rules, rule_colors):
        anchor = (float(log_s[0]), math.log(x0))
        right.fill_between(dense, line(r.band[0], *anchor), line(r.band[1], *anchor), color=color, alpha=0.1, lw=0)
        cost = r.cost_text()
        if r.loss_cost is None:
            cost = "cost not measured" + (" (off the grid)" if "grid" in (r.loss_cost_reason or "") else "")
        ys, leaves = _clip(dense, line(r.exponent, *anchor), low, high)
        label = f"{r.name} ({r.exponent:g}): {r.decision}; {cost}"
        label = wrap(label + (f" (its line {leaves})" if leaves else ""), 62)  # a legend as narrow as the panel
        right.plot(dense, ys, "--", color=color, label=label)
        if leaves is not None:  # where it leaves: an arrow on the panel's edge, in the rule's colour
            k = int(np.argmax(np.isnan(ys)))
            down = line(r.exponent, *anchor)[k] < low
            late = k > len(dense) / 2  # near the panel's right edge: the note to the left of the arrow
            right.annotate(
                f"{r.name} {'↓' if down else '↑'}" if late else f"{'↓' if down else '↑'} {r.name}",
                (float(dense[k]), low if down else high),
                xytext=(-2 if late else 2, 3 if down else -3),
                textcoords="offset points",
                va="bottom" if down else "top",
                ha="right" if late else "left",
                fontsize="x-small",
                color=color,
            )
    if fit.ci is not None:
        right.fill_between(
            dense,
            np.minimum(line(fit.ci[0]), line(fit.ci[1])),
            np.maximum(line(fit.ci[0]), line(fit.ci[1])),
            color="black",
            alpha=0.15,
            lw=0,
            label=f"{fit.level:.0%} interval {interval(*fit.ci)}",
        )
    centre = "the interval's centre" if fit.ci is not None else "the estimate (no interval)"
    right.plot(dense, line(fit.exponent), "-", color="black", label=f"{centre}: exponent {exponent(fit.exponent)}")
    for s, seed_optima in zip(scales, fit.per_seed_grid_optima):
        right.plot([s] * len(seed_optima), seed_optima, ".", color="gray", alpha=0.5)
    right.plot([], [], ".", color="gray", alpha=0.5, label="grid best per seed")
    right.plot(scales, fit.grid_optima, "s", color="tab:orange", fillstyle="none", label="grid optimum")
    right.plot(scales, fit.optima, "o", color="tab:blue", label="smoothed optimum")
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_ylim(low, high)
    right.set_xlim(scales[0] / 1.15, scales[-1] * 1.15)
    right.set_xlabel(scale_words)
    right.set_ylabel(best_words)
    right.set_title(
        f"{best_words} against {along.scale_symbol}; rules at tolerance x{result.tolerance:g}",
        fontsize="medium",
    )
    right.grid(True, which="major", alpha=0.3)
    right.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)

    caption.axis("off")
    caption.text(0.0, 1.0, wrap(_figure_caption(result), 170), va="top", ha="left", fontsize="small")

    plain_ticks(left.xaxis, result.xs)
    plain_ticks(right.xaxis, list(scales))
    plain_ticks(right.yaxis, _y_ticks(result.xs, low, high))
    fig.canvas.draw()
    for axis in (left.xaxis, left.yaxis, right.xaxis, right.yaxis):
        thin_ticks(axis)
    return fig


def _figure_caption(result: AxisData) -> str:  # pragma: no mutate block (the figure only)
    """The figure's caption: the exponent and what to do."""
    fit = result.fit
    ci = f"{fit.level:.0%} interval {interval(*fit.ci)}" if fit.ci is not None else "no interval"
    return f"Exponent {exponent(fit.exponent)} ({ci}). {advice(result.axis, fit, result.rules)}"
