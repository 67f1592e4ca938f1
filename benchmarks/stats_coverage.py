"""Coverage of ``fit_scaling``'s interval by simulation, over more regimes than the test checks.

Curves ``c (log2 x - log2 x*(s))^2`` on a grid of powers of ``step`` (in octaves), ``x*(s) = x*(1) s^e`` with
``e`` uniform in [-1.2, 0.2] and ``x*(1)`` anywhere within a grid cell, plus per seed a shared offset and
independent noise at each grid point. For each regime and seed count it prints the share of intervals that cover
the true ``e`` (nominal 95 %), the mean error of ``exponent``, the median interval width, and the share of
intervals that contain the reported ``exponent``. ``--bootstrap`` adds the width demo's former percentile seed
bootstrap (:func:`bootstrap_exponent` below, kept here since the demo dropped it) for contrast (slow: one fit per
resample).

    PYTHONPATH=. .venv/bin/python benchmarks/stats_coverage.py               # about a minute on one core
    PYTHONPATH=. .venv/bin/python benchmarks/stats_coverage.py --runs 300 --bootstrap
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from lightning_tau.tuner.stats import fit_scaling

REGIMES = {
    # name: (curvature left, curvature right [per octave^2], seed offset sd, point noise sd, grid step [octaves],
    #        scales)
    "test regime (demo-like, noise/curvature 0.5)": (0.04, 0.04, 0.02, 0.02, 1.0, (1.0, 4.0, 16.0)),
    "noisy (noise/curvature 2)": (0.04, 0.04, 0.02, 0.08, 1.0, (1.0, 4.0, 16.0)),
    "x4 grid (the demo's --quick)": (0.04, 0.04, 0.02, 0.02, 2.0, (1.0, 4.0, 16.0)),
    "2 scales": (0.04, 0.04, 0.02, 0.02, 1.0, (1.0, 16.0)),
    "5 scales": (0.04, 0.04, 0.02, 0.02, 1.0, (1.0, 2.0, 4.0, 8.0, 16.0)),
    "dataset sizes 0.1-1": (0.04, 0.04, 0.02, 0.02, 1.0, (0.1, 0.25, 0.5, 1.0)),
    "asymmetric curve 0.06/0.03, low noise (not a parabola)": (0.06, 0.03, 0.02, 0.01, 1.0, (1.0, 4.0, 16.0)),
}


def simulate(regime, seeds, runs, rng):
    """``(true exponents, curves per run)``: curves ``runs x scales x grid x seeds``."""
    left, right, sd_offset, sd_point, step, scales = regime
    grid = np.arange(-6.0, 14.0 + 1e-9, step)  # log2 x
    exps = rng.uniform(-1.2, 0.2, runs)
    best = rng.uniform(5.0, 5.0 + step, runs)[:, None] + exps[:, None] * np.log2(scales)
    d = grid[None, None, :, None] - best[:, :, None, None]
    curves = np.where(d < 0, left, right) * d**2
    curves = curves + sd_offset * rng.standard_normal((runs, len(scales), 1, seeds))
    curves = curves + sd_point * rng.standard_normal((runs, len(scales), len(grid), seeds))
    return exps, 2.0**grid, np.asarray(scales), curves


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[2, 3, 5, 8])
    parser.add_argument("--bootstrap", action="store_true", help="also the percentile seed bootstrap (slow)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    start = time.process_time()
    print(f"{args.runs} runs per row; nominal 95 %; binomial SE {np.sqrt(0.95 * 0.05 / args.runs) * 100:.1f} points")
    for name, regime in REGIMES.items():
        print(f"\n{name}")
        for seeds in args.seeds:
            exps, xs, scales, curves = simulate(regime, seeds, args.runs, rng)
            fits = [fit_scaling(scales, xs, list(c)) for c in curves]
            ok = [f.ci is not None for f in fits]
            low = np.array([f.ci[0] if f.ci else np.nan for f in fits])
            high = np.array([f.ci[1] if f.ci else np.nan for f in fits])
            expo = np.array([f.exponent for f in fits])
            line = (
                f"  {seeds} seeds: coverage {np.mean((low <= exps) & (exps <= high)) * 100:5.1f} %,"
                f" exponent error {np.mean(expo - exps):+.4f}, median width {np.nanmedian(high - low):.3f},"
                f" contains exponent {np.mean((low <= expo) & (expo <= high)) * 100:5.1f} %, no interval"
                f" {100 - np.mean(ok) * 100:.1f} %"
            )
            if args.bootstrap:
                covered = []
                for e, c in zip(exps, curves):
                    lines = {s: {x: list(c[i][g]) for g, x in enumerate(xs)} for i, s in enumerate(scales)}
                    lo, hi = bootstrap_exponent(lines, resamples=200)
                    covered.append(lo <= e <= hi)
                line += f"; percentile bootstrap {np.mean(covered) * 100:5.1f} %"
            print(line, flush=True)
    print(f"\n{time.process_time() - start:.0f} s CPU")


def bootstrap_exponent(lines: dict, resamples: int = 1000, seed: int = 0, level: float = 0.95) -> list[float]:
    """The width demo's former percentile seed bootstrap of the exponent: ``[low, high]``.

    ``lines`` is ``{width_mult: {lambda_base: [metric per seed]}}``. Each resample draws, per width independently,
    as many seeds as it has with replacement (the same draw for every ``lambda_base``), and refits the slope of
    log smoothed best ``lambda_base`` on log ``s``.
    """
    from lightning_tau.tuner.curve import smoothed_optimum

    rng = np.random.default_rng(seed)
    mults = sorted(lines)
    tables = []
    for mult in mults:
        lams = sorted(lines[mult])
        tables.append((lams, np.asarray([list(lines[mult][lam]) for lam in lams], dtype=float)))
    slopes = []
    for _ in range(resamples):
        best = []
        for lams, table in tables:
            sample = table[:, rng.integers(0, table.shape[1], table.shape[1])]
            means = np.where(np.all(np.isfinite(sample), axis=1), sample.mean(axis=1), np.inf)
            best.append(float(smoothed_optimum(lams, list(means)).tau_epoch))
        slopes.append(float(np.polyfit(np.log(mults), np.log(best), 1)[0]))
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(slopes, [tail, 100 - tail])
    return [float(low), float(high)]


if __name__ == "__main__":
    main()
