"""The plain finder's figure (``FinderResult.figure()``, the ``tau_finder.png`` that ``lightning-tau find`` writes)
reads at a glance: no tick label touches another, plain numbers on the log axis, a title of at most two lines, every
mark in the legend, the range as a band, axis labels in words."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest
from finder_results import finder_result

from lightning_tau.tuner.analysis.curve import log_grid
from lightning_tau.tuner.analysis.finder_result import CurvePoint, FinderResult, PrunedPoint

pytest.importorskip("matplotlib")

WIDE = list(log_grid(2.0, 200.0, 25))  # 2, 2.42, 2.93, ... 200: labels that would run into each other unthinned
NARROW = [4.0, 5.0, 6.0, 8.0]


def _result(
    taus: list[float], centre: float, monitor: str = "val/loss", pruned: list[PrunedPoint] = ()
) -> FinderResult:
    """Three seeds of a curve with its best near ``centre``, each seed a little off; two param groups, one of them
    named ``decay`` (the issue's title read "weight decay decay 2.35")."""
    curve = [
        CurvePoint(
            t,
            [0.3 + 0.05 * math.log(t / (centre * (1 + 0.1 * (s - 1)))) ** 2 + 0.004 * s for s in range(3)],
            [0, 1, 2],
            {"decay": 1 / (0.025 * t), "head": 2 / (0.025 * t)},
            [100, 100, 100],
        )
        for t in taus
    ]
    return finder_result(
        curve,
        lr={"decay": 1e-3, "head": 2e-3},
        monitor=monitor,
        batch_size=10,
        full_cost=1200 * len(taus),
        pruned=list(pruned),
    )


def _overlaps(labels) -> list[tuple[str, str]]:
    boxes = [
        (label.get_text(), label.get_window_extent()) for label in labels if label.get_visible() and label.get_text()
    ]
    return [(a, b) for i, (a, box) in enumerate(boxes) for b, other in boxes[i + 1 :] if box.overlaps(other)]


CASES = {
    "wide grid": lambda: _result(WIDE, 12.0),
    "narrow grid": lambda: _result(NARROW, 5.5),  # once read 4x10^0 ... 8x10^0
    "pruned, hp/ metric": lambda: _result(
        [2.0, 4.0, 8.0, 16.0],
        6.0,
        monitor="hp/val_loss",
        pruned=[PrunedPoint(20.0, [0, 1, 2], [3, 0, 0], [0.9, math.nan, math.nan], {}, [30, 0, 0])],
    ),
    "a seed diverged": lambda: _diverged(_result([2.0, 4.0, 8.0, 16.0, 32.0], 6.0), 32.0),
}


def _diverged(result: FinderResult, tau_epoch: float) -> FinderResult:
    """``result`` with seed 0 at ``tau_epoch`` diverged (its value ``nan``, so that point has no mean)."""
    point = next(p for p in result.curve if p.tau_epoch == tau_epoch)
    point.values[0] = math.nan
    return result


@pytest.mark.parametrize("case", list(CASES))
def test_figure_tick_labels_never_touch_and_title_fits(case: str) -> None:
    import matplotlib.pyplot as plt

    result = CASES[case]()
    fig = result.figure()
    try:
        fig.canvas.draw()
        ax = fig.axes[0]
        for axis in (ax.xaxis, ax.yaxis):
            labels = [t.label1 for t in axis.get_major_ticks()]
            assert not _overlaps(labels), (case, axis.axis_name, _overlaps(labels))
            shown = [label.get_text() for label in labels if label.get_visible() and label.get_text()]
            assert len(shown) >= 2, (case, axis.axis_name, shown)  # thinned, not emptied
            for text in shown:  # plain numbers: no 10^k, no 1e-3, no ×
                assert not re.search(r"e[+-]?\d|\\times|×|\^", text), text
        xs = [float(t.get_loc()) for t in ax.xaxis.get_major_ticks() if t.label1.get_text()]
        grid = {p.tau_epoch for p in result.curve} | {p.tau_epoch for p in result.pruned}
        assert set(xs) <= grid  # ticks at the grid's tau_epochs only
        assert not ax.xaxis.get_minor_ticks() or not any(t.label1.get_text() for t in ax.xaxis.get_minor_ticks())
        assert len(ax.get_title().splitlines()) <= 2
        assert fig._suptitle is None
        words = " ".join([ax.get_title(), *(t.get_text() for ax in fig.axes for t in ax.texts)])
        assert "weight decay decay" not in words and "'decay'" in words
    finally:
        plt.close(fig)


@pytest.mark.parametrize("case", list(CASES))
def test_figure_puts_every_mark_in_legend_and_words_on_axes(case: str) -> None:
    import matplotlib.pyplot as plt

    result = CASES[case]()
    fig = result.figure()
    try:
        ax = fig.axes[0]
        shown = {text.get_text() for text in ax.get_legend().get_texts()}
        labelled = [a.get_label() for a in [*ax.get_lines(), *ax.collections, *ax.patches]]
        assert {label for label in labelled if not label.startswith("_")} <= shown, (labelled, shown)
        # every kind of mark drawn has a legend entry with its marker (the grey single-seed dots once had none)
        markers = {line.get_marker() for line in ax.get_lines() if line.get_marker() not in ("None", None, "")}
        in_legend = {line.get_marker() for line in ax.get_lines() if line.get_label() in shown}
        assert markers <= in_legend, (markers, in_legend)
        assert ax.get_ylabel() == "final validation loss"
        assert ax.get_xlabel().startswith("τ_epoch: the weight decay's timescale, in epochs")
        assert f"mean over seeds ({result.monitor})" in shown  # the metric's own name, where a reader finds it
        if any(not math.isfinite(p.mean) for p in result.curve):
            assert "a seed diverged (no mean)" in shown
        # the range as a band whose edges are the range's ends
        low, high = result.tau_epoch_range
        band = next(p for p in ax.patches if p.get_label() == f"the seeds cannot tell {low:.3g} to {high:.3g} apart")
        edges = band.get_patch_transform().transform(band.get_path().vertices)[:, 0]  # data x (a Rectangle or Polygon)
        assert (min(edges), max(edges)) == pytest.approx((low, high))
        # the star on the drawn curve at the suggestion
        star = next(line for line in ax.get_lines() if line.get_marker() == "*")
        assert star.get_xdata()[0] == pytest.approx(result.tau_epoch)
        curve = next(line for line in ax.get_lines() if line.get_label().startswith("mean over seeds"))
        np.testing.assert_allclose(curve.get_xdata(), [p.tau_epoch for p in result.curve])
        means = [p.mean if math.isfinite(p.mean) else math.nan for p in result.curve]  # a diverged point: a gap
        np.testing.assert_allclose(curve.get_ydata(), means)
    finally:
        plt.close(fig)


def test_figure_caption_says_verdict_and_each_groups_weight_decay() -> None:
    import matplotlib.pyplot as plt

    result = _result(WIDE, 12.0)
    fig = result.figure()
    try:
        caption = " ".join(t.get_text() for ax in fig.axes for t in ax.texts).replace("\n", " ")
        assert result.verdict in caption
        decays = result.weight_decay
        assert f"weight decay {decays['decay']:.3g} for 'decay', {decays['head']:.3g} for 'head'," in caption
        assert f"TimescaleCallback(tau_epoch={result.tau_epoch:.3g})" in caption
    finally:
        plt.close(fig)


def test_plot_writes_figure(tmp_path) -> None:
    path = _result(NARROW, 5.5).plot(tmp_path / "sub" / "tau_finder.png")
    assert path == tmp_path / "sub" / "tau_finder.png" and path.stat().st_size > 10_000


def test_verdict_names_edge_and_says_which_way_to_widen() -> None:
    falling = _result([2.0, 4.0, 8.0], 50.0)
    rising = _result([16.0, 32.0, 64.0], 2.0)
    assert (
        falling.verdict == "the best tau_epoch is the grid's largest (8), so the best may lie above it: widen the grid"
    )
    assert rising.verdict == (
        "the best tau_epoch is the grid's smallest (16), so the best may lie below it: widen the grid"
    )


def test_callback_from_edge_value_repeats_edge_warning() -> None:
    edge = _result([2.0, 4.0, 8.0], 50.0)
    with pytest.warns(
        UserWarning, match=r"^`FinderResult\.callback\(\)`: the best tau_epoch is the grid's largest \(8\)"
    ):
        callback = edge.callback(verbose=False)
    assert callback.tau_epoch == edge.tau_epoch
    inside = _result([2.0, 8.0, 32.0], 8.0)
    assert not inside.at_edge
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning where the suggestion lies inside the grid
        inside.callback(verbose=False)


def _flat_seeds(values: list[tuple[float, float]]) -> FinderResult:
    """Two seeds with the same value at every ``(tau_epoch, value)``: no noise, so the range has no width."""
    curve = [CurvePoint(t, [v, v], [0, 1], {}, [3, 3]) for t, v in values]
    return finder_result(
        curve, monitor="val_acc", mode="max", reduce="best", fraction=0.1, batch_size=10, epochs=3, full_cost=10
    )


def test_range_without_width_said_so_and_drawn_without_band() -> None:
    import matplotlib.pyplot as plt

    one = _flat_seeds([(4.0, 0.9)])
    assert one.tau_epoch_range == (4.0, 4.0)
    assert one.verdict == "a grid of one tau_epoch (4) compares it with nothing: give several"
    lines = one.table().splitlines()
    assert lines[0].startswith("Timescale finder: 1 tau_epoch x 2 seeds on")
    assert "Uncertainty: unknown: a grid of one tau_epoch has nothing to compare it with." in lines
    edge = _flat_seeds([(1.0, 0.5), (2.0, 0.6), (4.0, 0.9)])  # best at the edge, the seeds agree exactly
    assert edge.tau_epoch_range == pytest.approx((4.0, 4.0))  # to a rounding error: no band either
    assert (
        "Uncertainty: none that the 2 seeds show: every resample of them suggests 4, and no other grid point is as"
        " good."
    ) in edge.table().splitlines()
    for result in (one, edge):
        fig = result.figure()
        try:
            shown = [text.get_text() for text in fig.axes[0].get_legend().get_texts()]
            assert not any("cannot tell" in text for text in shown), shown  # never "cannot tell 4 to 4 apart"
            assert fig.axes[0].get_ylabel() == "best validation accuracy"
        finally:
            plt.close(fig)


def test_flat_top_longer_than_run_plateau_not_edge() -> None:
    # a 10-epoch run whose loss falls to a floor of 0.149 from tau_epoch 32 on (seed spread 0.002), grid up to 128
    values = [0.20, 0.17, 0.155, 0.1492, 0.1491, 0.149]
    curve = [CurvePoint(t, [m + d for d in (-0.002, 0.0, 0.002)], [0, 1, 2], {}, [10] * 3)
             for t, m in zip([4.0, 8.0, 16.0, 32.0, 64.0, 128.0], values)]
    result = finder_result(curve, epochs=10)
    assert result.at_edge and result.plateau == 32.0 and result.tau_epoch == 32.0
    assert result.verdict == (
        "weight decay has no measurable effect on this model at this run length; any tau_epoch >= 32 is as good"
    )
    assert "widen" not in result.table() and result.to_json()["plateau"] == 32.0
    assert "Suggested tau_epoch: 32 (where the curve's flat top starts" in result.table()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no edge warning: a plateau is no edge to widen
        assert result.callback(verbose=False).tau_epoch == 32.0
    # the same curve in a 100-epoch run: the top (128) is not longer than the run, so an edge to widen
    edge = finder_result(curve, epochs=100)
    assert edge.plateau is None and "widen the grid" in edge.verdict and edge.to_json()["plateau"] is None
