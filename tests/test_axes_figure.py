"""The finder axes' figure draws the result's own numbers: read back from matplotlib's artists, not file headers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lightning_tau.tuner.axes import AxisResult
from lightning_tau.tuner.result import CurvePoint, FinderResult

pytest.importorskip("matplotlib")

TAUS = [2.0, 4.0, 8.0, 16.0, 32.0]
SIZES = [100, 400, 1600]


def _point(size: int) -> FinderResult:
    """A sweep whose best tau_epoch moves as N^-0.3, off the grid (so the grid optima move otherwise); 3 seeds."""
    best = 12.0 * (100 / size) ** 0.3
    curve = [
        CurvePoint(t, [(math.log(t / best)) ** 2 + 0.01 * s for s in range(3)], [0, 1, 2], {}, [size]) for t in TAUS
    ]
    return FinderResult.from_curve(
        curve,
        lr={"decay": 1e-3},
        monitor="val_loss",
        mode="min",
        reduce="last",
        fraction=size / 1600,
        dataset_size=1600,
        subset_size=size,
        batch_size=10,
        epochs=1,
        full_cost=500,
    )


def test_axes_figure_draws_each_curve_its_optima_and_the_fitted_line() -> None:
    import matplotlib.pyplot as plt

    result = AxisResult.build("dataset_size", [s / 1600 for s in SIZES], [_point(s) for s in SIZES])
    assert result.exponent == pytest.approx(-0.3, abs=0.05)
    assert result.fit.grid_exponent != pytest.approx(result.exponent, abs=0.05)
    fig = result.figure()
    try:
        left, right = fig.axes[:2]
        curves = [line for line in left.get_lines() if line.get_linestyle() == "-"]
        assert len(curves) == len(SIZES)
        for line, r in zip(curves, result.results):
            np.testing.assert_allclose(line.get_xdata(), [p.tau_epoch for p in r.curve])
            np.testing.assert_allclose(line.get_ydata(), [p.mean for p in r.curve])
        dotted = [line for line in left.get_lines() if line.get_linestyle() == ":"]
        np.testing.assert_allclose([line.get_xdata()[0] for line in dotted], result.fit.optima)
        by_label = {line.get_label(): line for line in right.get_lines()}
        np.testing.assert_allclose(by_label["smoothed optimum"].get_ydata(), result.fit.optima)
        np.testing.assert_allclose(by_label["grid optimum"].get_ydata(), result.fit.grid_optima)
        fitted = by_label[f"exponent {result.exponent:+.2f}"]
        x, y = np.log(fitted.get_xdata()), np.log(fitted.get_ydata())
        assert (y[-1] - y[0]) / (x[-1] - x[0]) == pytest.approx(result.exponent, rel=1e-9)
        np.testing.assert_allclose(fitted.get_xdata(), SIZES)
    finally:
        plt.close(fig)
