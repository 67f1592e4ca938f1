"""Hand-made axis results for the tests of :mod:`lightning_tau.tuner.analysis.axis_result` and its text: sweeps of parabolas in
``log tau_epoch``, each seed's vertex a little off the point's, so every number they give is known."""

from __future__ import annotations

import math

from finder_results import finder_result
from lightning_tau.tuner.analysis.axis_result import AxisResult
from lightning_tau.tuner.analysis.finder_result import CurvePoint, FinderResult

TAUS = [2.0, 4.0, 8.0, 16.0, 32.0]
LR, M = 0.01, 10.0  # steps per epoch: N / B = 1000 / 100
LAMBDA_BASE = [1 / (LR * M * t) for t in TAUS]  # 5, 2.5, 1.25, 0.625, 0.3125


def sweep(
    best: float, shifts: tuple[float, ...], size: int = 1000, full_cost: int = 500, fraction: float = 1.0
) -> FinderResult:
    """Seed ``s``: ``log(t / (best * shifts[s]))^2 + 0.1 s`` on ``TAUS``; 10 steps per run."""
    curve = [
        CurvePoint(
            t,
            [math.log(t / (best * f)) ** 2 + 0.1 * s for s, f in enumerate(shifts)],
            list(range(len(shifts))),
            {"decay": 1 / (LR * M * t)},
            [10] * len(shifts),
        )
        for t in TAUS
    ]
    return finder_result(
        curve, lr={"decay": LR}, fraction=fraction, subset_size=size, batch_size=100, epochs=2, full_cost=full_cost
    )


def width_result(**kwargs) -> AxisResult:
    """Best tau_epoch 6, 8.5, 12 at widths 64, 128, 256: best lambda_base falls as width^-1/2."""
    points = [sweep(6.0, (1, 1.1, 0.95)), sweep(8.5, (1, 0.9, 1.05)), sweep(12.0, (1, 1.05, 1.0))]
    return AxisResult.build("width", [64, 128, 256], points, lambda_base=LAMBDA_BASE, base_width_mult=0.5, **kwargs)


def size_result(full_cost: int = 2000) -> AxisResult:
    """Best tau_epoch about 5 at N=250 and 5.5 at N=1000."""
    points = [
        sweep(5.0, (1, 1.1, 0.95), size=250, full_cost=full_cost, fraction=0.25),
        sweep(5.5, (1, 0.9, 1.05), full_cost=full_cost),
    ]
    return AxisResult.build("dataset_size", [0.25, 1], points)
