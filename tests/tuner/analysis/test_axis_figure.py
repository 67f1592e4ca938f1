"""The finder axes' figure draws the result's own numbers, read back from matplotlib's artists, and reads at a glance:
no tick label touches another, every mark is in a legend, the interval is a band, titles fit in two lines."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from finder_results import finder_result

from lightning_tau.tuner.analysis.axis_result import AxisResult
from lightning_tau.tuner.analysis.finder_result import CurvePoint, FinderResult

pytest.importorskip("matplotlib")

TAUS = [2.0, 4.0, 8.0, 16.0, 32.0]
SIZES = [100, 400, 1600]


def _point(size: int, taus: list[float] = TAUS, monitor: str = "val_loss") -> FinderResult:
    """A sweep whose best tau_epoch moves as N^-0.3 (seed s: N^-(0.3 + 0.03 (s - 1))), off the grid (so the grid optima
    move otherwise); 3 seeds."""
    curve = [
        CurvePoint(
            t,
            [(math.log(t / (12.0 * (100 / size) ** (0.3 + 0.03 * (s - 1))))) ** 2 + 0.01 * s for s in range(3)],
            [0, 1, 2],
            {},
            [size],
        )
        for t in taus
    ]
    return finder_result(
        curve,
        monitor=monitor,
        fraction=size / 1600,
        dataset_size=1600,
        subset_size=size,
        batch_size=10,
        epochs=1,
        full_cost=500,
    )


def _size_result(taus: list[float] = TAUS, sizes: list[int] = SIZES, monitor: str = "val_loss") -> AxisResult:
    return AxisResult.build("dataset_size", [s / 1600 for s in sizes], [_point(s, taus, monitor) for s in sizes])


def _width_result() -> AxisResult:
    points = [_point(s) for s in SIZES]
    lambda_base = [1 / (0.01 * 10 * t) for t in TAUS]
    return AxisResult.build("width", [64, 128, 256], points, lambda_base=lambda_base)


def _overlaps(labels) -> list[tuple[str, str]]:
    boxes = [
        (label.get_text(), label.get_window_extent()) for label in labels if label.get_visible() and label.get_text()
    ]
    return [(a, b) for i, (a, box) in enumerate(boxes) for b, other in boxes[i + 1 :] if box.overlaps(other)]


def test_axes_figure_draws_each_curve_optima_fitted_line_and_band() -> None:
    import matplotlib.pyplot as plt

    result = _size_result()
    assert result.exponent == pytest.approx(-0.3, abs=0.05)
    assert result.fit.grid_exponent != pytest.approx(result.exponent, abs=0.05)
    fig = result.figure()
    try:
        left, right = fig.axes[:2]
        curves = [line for line in left.get_lines() if line.get_linestyle() == "-" and len(line.get_xdata())]
        assert len(curves) == len(SIZES)
        for line, r in zip(curves, result.results):
            np.testing.assert_allclose(line.get_xdata(), [p.tau_epoch for p in r.curve])
            np.testing.assert_allclose(line.get_ydata(), [p.mean for p in r.curve])
        dotted = [line for line in left.get_lines() if line.get_linestyle() == ":" and len(line.get_xdata())]
        np.testing.assert_allclose([line.get_xdata()[0] for line in dotted], result.fit.optima)
        by_label = {line.get_label(): line for line in right.get_lines()}
        np.testing.assert_allclose(by_label["smoothed optimum"].get_ydata(), result.fit.optima)
        np.testing.assert_allclose(by_label["grid optimum"].get_ydata(), result.fit.grid_optima)
        fitted = by_label[f"the interval's centre: exponent {result.exponent:+.2f}"]
        x, y = np.log(fitted.get_xdata()), np.log(fitted.get_ydata())
        assert (y[-1] - y[0]) / (x[-1] - x[0]) == pytest.approx(result.exponent, rel=1e-9)
        assert (y[-1] - y[0]) / (x[-1] - x[0]) == pytest.approx(sum(result.fit.ci) / 2, rel=1e-9)  # labelled as it is
        assert fitted.get_xdata()[0] == pytest.approx(SIZES[0]) and fitted.get_xdata()[-1] == pytest.approx(SIZES[-1])
        # the interval as a band around the fitted line: its edges at the largest N follow the interval's ends
        lo, hi = result.fit.ci
        band = next(c for c in right.collections if c.get_label().startswith("95% interval"))
        assert band.get_label() == f"95% interval [{lo:+.2f}, {hi:+.2f}]"
        vertices = band.get_paths()[0].vertices
        at_largest = vertices[np.isclose(vertices[:, 0], SIZES[-1]), 1]
        mean_x, mean_y = np.mean(np.log(SIZES)), np.mean(np.log(result.fit.optima))
        expected = [math.exp(mean_y + e * (math.log(SIZES[-1]) - mean_x)) for e in (lo, hi)]
        np.testing.assert_allclose(sorted(set(np.round(at_largest, 9))), expected, rtol=1e-6)
        # the per-seed grid optima (grey dots) drawn at every N
        seeds = [line for line in right.get_lines() if line.get_label().startswith("_") and line.get_marker() == "."]
        assert sorted(y for line in seeds for y in line.get_ydata()) == sorted(
            y for ys in result.fit.per_seed_grid_optima for y in ys
        )
    finally:
        plt.close(fig)


def test_axes_figure_draws_each_rule_with_decision_and_cost() -> None:
    import matplotlib.pyplot as plt

    result = _size_result()
    fig = result.figure()
    try:
        right = fig.axes[1]
        labels = [line.get_label() for line in right.get_lines()]
        for rule in result.rules:
            label = next(text for text in labels if text.startswith(f"{rule.name} ({rule.exponent:g}): "))
            assert f": {rule.decision}; " in label
            line = next(line for line in right.get_lines() if line.get_label() == label)
            drawn = np.isfinite(line.get_ydata())  # up to where it leaves the panel
            x, y = np.log(line.get_xdata()[drawn]), np.log(line.get_ydata()[drawn])
            assert (y[-1] - y[0]) / (x[-1] - x[0]) == pytest.approx(rule.exponent, abs=1e-9)  # carried from the
            assert line.get_ydata()[0] == pytest.approx(result.fit.optima[0])  # smallest N's best tau_epoch
        caption = fig.axes[2].texts[0].get_text().replace("\n", " ")
        assert "Exponent -0.30" in caption and "result.callback()" in caption
    finally:
        plt.close(fig)


def _edge_result() -> AxisResult:
    """Every width's best at the grid's smallest λ_base, as in the demo whose panel ran to 15.2 with every point at
    its bottom edge: the rules of exponent -1/2 and -1 leave the points' range at once."""
    taus = [2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
    point = finder_result(
        [CurvePoint(t, [1 - 0.1 * math.log(t) + 0.001 * s for s in range(3)], [0, 1, 2], {}, [400]) for t in taus],
        monitor="val_loss", fraction=0.25, dataset_size=1600, subset_size=400, batch_size=10, epochs=1, full_cost=500,
    )  # fmt: skip
    return AxisResult.build("width", [64, 128, 256], [point] * 3, lambda_base=[1 / (0.1 * t) for t in taus])


@pytest.mark.parametrize("case", ["size", "width", "edge"])
def test_axes_figure_y_limits_points_with_margin(case: str) -> None:
    import matplotlib.pyplot as plt

    result = {"size": _size_result, "width": _width_result, "edge": _edge_result}[case]()
    fig = result.figure()
    try:
        right = fig.axes[1]
        low, high = right.get_ylim()
        fit = result.fit
        points = [*fit.optima, *fit.grid_optima, *(y for ys in fit.per_seed_grid_optima for y in ys)]
        assert low < min(points) and max(points) < high  # every point inside
        assert high / low <= max(4.0, (max(points) / min(points)) * 1.35**2 * 1.6)  # and no room far beyond them
        if case == "edge":  # every point at 0.156: not a panel running to the grid's 5 * 1.3
            assert max(points) == min(points) and high <= 2 * max(points)
    finally:
        plt.close(fig)


def test_axes_figure_clips_rules_leave_and_says_where() -> None:
    import matplotlib.pyplot as plt

    result = _edge_result()
    fig = result.figure()
    try:
        right = fig.axes[1]
        low, high = right.get_ylim()
        notes = [t.get_text() for t in right.texts]
        for rule in result.rules:
            line = next(ln for ln in right.get_lines() if ln.get_label().startswith(f"{rule.name} ("))
            ys = line.get_ydata()
            assert np.all((ys[np.isfinite(ys)] >= low * (1 - 1e-9)) & (ys[np.isfinite(ys)] <= high * (1 + 1e-9)))
            leaves = "leaves through the bottom at" in line.get_label().replace("\n", " ")
            assert leaves == (rule.exponent < 0) == (not np.isfinite(ys).all()), (rule.name, line.get_label())
            assert any(rule.name in note and "↓" in note for note in notes) == leaves
        legend = " ".join(t.get_text() for t in right.get_legend().get_texts()).replace("\n", " ")
        qiu = "Qiu et al. (-1): undetermined; cost not measured (off the grid) (its line leaves through the bottom"
        assert qiu in legend
    finally:
        plt.close(fig)


def test_axes_figure_puts_every_mark_in_legend_and_words_on_axes() -> None:
    import matplotlib.pyplot as plt

    result = _size_result(monitor="hp/val_loss")
    fig = result.figure()
    try:
        left, right = fig.axes[:2]
        for ax in (left, right):
            shown = {text.get_text() for text in ax.get_legend().get_texts()}
            markers = {line.get_marker() for line in ax.get_lines() if line.get_marker() not in ("None", None, "")}
            in_legend = {line.get_marker() for line in ax.get_lines() if line.get_label() in shown}
            assert markers <= in_legend, (markers, in_legend)
        assert "each seed" in {t.get_text() for t in left.get_legend().get_texts()}
        # the optima drawn are the smoothed ones, and both legends say so (tau_sweep.png's stars are grid optima)
        assert "smoothed optimum" in {t.get_text() for t in left.get_legend().get_texts()}
        assert "smoothed optimum" in {t.get_text() for t in right.get_legend().get_texts()}
        assert "grid best per seed" in {t.get_text() for t in right.get_legend().get_texts()}
        assert left.get_ylabel() == "final validation loss (seed mean)" and left.get_xlabel() == "τ_epoch (epochs)"
        assert (right.get_xlabel(), right.get_ylabel()) == ("training samples N", "best τ_epoch")
        assert all(
            "hp/" not in t and "val_loss" not in t for ax in fig.axes for t in (ax.get_xlabel(), ax.get_ylabel())
        )
    finally:
        plt.close(fig)


@pytest.mark.parametrize(
    "case",
    [
        "size",
        "width",
        "narrow grid",  # x ticks 4 ... 8 once read 4x10^0 ... 8x10^0
        "crowded sizes",  # N = 1300, 1350, 1400 on one axis
    ],
)
def test_axes_figure_tick_labels_never_touch_and_titles_fit_in_two_lines(case: str) -> None:
    import matplotlib.pyplot as plt

    result = {
        "size": lambda: _size_result(),
        "width": _width_result,
        "narrow grid": lambda: _size_result(taus=[4.0, 4.5, 5.0, 5.5, 6.0, 6.5, 7.0, 7.5, 8.0]),
        "crowded sizes": lambda: _size_result(sizes=[100, 1300, 1350, 1400]),
    }[case]()
    fig = result.figure()
    try:
        fig.canvas.draw()
        for ax in fig.axes:
            for axis in (ax.xaxis, ax.yaxis):
                labels = [t.label1 for t in axis.get_major_ticks()]
                assert not _overlaps(labels), (case, ax.get_title(), _overlaps(labels))
                for label in labels:  # plain numbers: no 10^k, no 1e-3
                    assert not re.search(r"e[+-]?\d|\\times|\^", label.get_text()), label.get_text()
            assert len(ax.get_title().splitlines()) <= 2
        assert fig._suptitle is None or len(fig._suptitle.get_text().splitlines()) <= 2
        shown = [t.label1.get_text() for t in fig.axes[1].yaxis.get_major_ticks() if t.label1.get_visible()]
        assert len([s for s in shown if s]) >= 2  # thinned, not emptied
    finally:
        plt.close(fig)


def test_axes_plot_writes_figure(tmp_path) -> None:
    path = _size_result().plot(tmp_path / "sub" / "axis.png")
    assert path == tmp_path / "sub" / "axis.png" and path.stat().st_size > 10_000
