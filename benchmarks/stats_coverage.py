"""Coverage of ``fit_scaling``'s interval by simulation, over more regimes and runs than the test checks.

Curves in ``log2 x`` with the optimum ``x*(s) = x*(1) s^e``, ``e`` uniform in [-1.2, 0.2] and ``x*(1)`` anywhere
within a grid cell: parabolas (the same curvature on both sides, or not), V shapes ``|log2 x - log2 x*|``, plus per
seed a shared offset and noise at each grid point, independent or correlated (between neighbouring grid points, and
across scales for one seed). For each regime and seed count it prints the share of 95 % intervals that cover the
true ``e`` (nominal 95 %, goal >= 93 %), beside the former interval's (a t-interval over per-seed exponents at
window 1 alone), the mean error of ``exponent``, the median width of both, and the share of runs with no interval.
Then the staging of ``seeds="auto"`` (:func:`~lightning_tau.tuner.stats.seed_stages` up to 12, the level of
:func:`~lightning_tau.tuner.stats.staged_level`, stopping when :func:`~lightning_tau.tuner.rules.all_decided` at the
default tolerance): coverage where it stops, for the width rules over widths 1-16 and the dataset-size rules over
N = 0.1-1, against the interval at a fixed 12 seeds, with the mean seed count and the share of runs decided.

The intervals are computed for all runs at once with the functions ``fit_scaling`` calls (``_seed_exponents``,
``_envelope``); ``--check`` first compares them with ``fit_scaling`` run by run.

    PYTHONPATH=. .venv/bin/python benchmarks/stats_coverage.py               # about 30 s on one core
    PYTHONPATH=. .venv/bin/python benchmarks/stats_coverage.py --runs 300 --check
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from lightning_tau.tuner import rules
from lightning_tau.tuner.stats import _envelope, _seed_exponents, fit_scaling, seed_stages, staged_level

WIDTHS = (1.0, 4.0, 16.0)
SIZES = (0.1, 0.25, 0.5, 1.0)
REGIMES = {
    # name: (shape, curvature or slope left, right [per octave^2, or per octave for a V], seed offset sd, point
    #        noise sd, noise correlation between neighbouring grid points, across scales, grid step [octaves], scales)
    "demo-like parabola 0.04, noise 0.02 (former test)": ("parabola", 0.04, 0.04, 0.02, 0.02, 0, 0, 1, WIDTHS),
    "noisy (noise/curvature 2)": ("parabola", 0.04, 0.04, 0.02, 0.08, 0, 0, 1, WIDTHS),
    "x4 grid (the demo's --quick)": ("parabola", 0.04, 0.04, 0.02, 0.02, 0, 0, 2, WIDTHS),
    "2 scales (s = 1, 16)": ("parabola", 0.04, 0.04, 0.02, 0.02, 0, 0, 1, (1.0, 16.0)),
    "5 scales (s = 1 .. 16)": ("parabola", 0.04, 0.04, 0.02, 0.02, 0, 0, 1, (1.0, 2.0, 4.0, 8.0, 16.0)),
    "dataset sizes 0.1-1": ("parabola", 0.04, 0.04, 0.02, 0.02, 0, 0, 1, SIZES),
    "asymmetric 0.06/0.03, noise 0.01": ("parabola", 0.06, 0.03, 0.02, 0.01, 0, 0, 1, WIDTHS),
    "asymmetric 0.08/0.02, noise 0.01": ("parabola", 0.08, 0.02, 0.02, 0.01, 0, 0, 1, WIDTHS),
    "V-shaped 0.05, noise 0.01": ("V", 0.05, 0.05, 0.02, 0.01, 0, 0, 1, WIDTHS),
    "V-shaped 0.08/0.03, noise 0.01": ("V", 0.08, 0.03, 0.02, 0.01, 0, 0, 1, WIDTHS),
    "correlated noise (0.8 along grid, 0.5 across scales)": ("parabola", 0.04, 0.04, 0.02, 0.02, 0.8, 0.5, 1, WIDTHS),
    "correlated noise, asymmetric 0.06/0.03, noise 0.01": ("parabola", 0.06, 0.03, 0.02, 0.01, 0.8, 0.5, 1, WIDTHS),
}
#: the regimes the staging is run on (the issue's new ones, and the former test regime)
STAGED = [name for name in REGIMES if not name.startswith(("noisy", "x4", "2 scales", "5 scales", "dataset"))]


def simulate(regime, seeds, runs, rng, scales=None):
    """``(true exponents, grid, scales, curves)``: curves ``runs x scales x grid x seeds``."""
    shape, left, right, sd_offset, sd_point, rho_grid, rho_scale, step, own_scales = regime
    scales = np.asarray(scales if scales is not None else own_scales, dtype=float)
    log_grid = np.arange(-6.0, 14.0 + 1e-9, step)
    exps = rng.uniform(-1.2, 0.2, runs)
    best = rng.uniform(5.0, 5.0 + step, runs)[:, None] + exps[:, None] * np.log2(scales)
    d = log_grid[None, None, :, None] - best[:, :, None, None]
    curves = np.where(d < 0, left, right) * (d**2 if shape == "parabola" else np.abs(d))
    curves = curves + sd_offset * rng.standard_normal((runs, len(scales), 1, seeds))

    def ar1(size):  # unit-variance noise, correlated rho_grid between neighbouring grid points
        z = rng.standard_normal(size)
        for g in range(1, size[2]):
            z[:, :, g] = rho_grid * z[:, :, g - 1] + math.sqrt(1 - rho_grid**2) * z[:, :, g]
        return z

    shared = ar1((runs, 1, len(log_grid), seeds))
    own = ar1((runs, len(scales), len(log_grid), seeds))
    curves = curves + sd_point * (rho_scale * shared + math.sqrt(1 - rho_scale**2) * own)
    return exps, 2.0**log_grid, scales, curves


def batch_fits(grid, scales, curves, seeds, level):
    """``(low, high, former_low, former_high)`` of every run on its first ``seeds`` seeds; nan where fit_scaling
    gives no interval (the seed-mean optimum at the grid's edge)."""
    runs = curves.shape[0]
    part = curves[..., :seeds]
    tables = [np.concatenate(list(part[:, i]), axis=1) for i in range(len(scales))]
    exps = _seed_exponents(list(scales), list(grid), tables, "min", (1, 2)).reshape(2, runs, seeds)
    low, high, lows, highs = _envelope(exps, level)
    edge = np.isin(part.mean(axis=-1).argmin(axis=-1), [0, len(grid) - 1]).any(axis=-1)
    return tuple(np.where(edge, np.nan, v) for v in (low, high, lows[0], highs[0]))


def covered(exps, low, high):
    given = np.isfinite(low)
    return np.mean((low <= exps) & (exps <= high) & given) / max(np.mean(given), 1e-12)


def check(rng, runs=20):
    """The batch intervals equal fit_scaling's, run by run."""
    for name, regime in REGIMES.items():
        exps, grid, scales, curves = simulate(regime, 4, runs, rng)
        low, high, _, _ = batch_fits(grid, scales, curves, 4, 0.95)
        for run in range(runs):
            fit = fit_scaling(scales, grid, list(curves[run]))
            ok = np.isnan(low[run]) if fit.ci is None else np.allclose(fit.ci, (low[run], high[run]), atol=1e-12)
            assert ok, (name, run, fit.ci, low[run], high[run])
    print(f"batch intervals = fit_scaling's on {runs} runs of each regime")


def staged(regime, scales, axis_rules, runs, rng, max_seeds=12):
    """Coverage where the staging stops, coverage at a fixed max_seeds, mean seeds used, share decided."""
    stages = seed_stages(max_seeds)
    level = staged_level(0.95, len(stages))
    delta = rules.half_width(rules.DEFAULT_TOLERANCE, scales)
    exps, grid, scales, curves = simulate(regime, max_seeds, runs, rng, scales=scales)
    low, high = np.full(runs, np.nan), np.full(runs, np.nan)
    used, going = np.zeros(runs, dtype=int), np.ones(runs, dtype=bool)
    for k in stages:
        lo, hi, _, _ = batch_fits(grid, scales, curves, k, level)
        low[going], high[going], used[going] = lo[going], hi[going], k
        decided = np.array([np.isfinite(a) and rules.all_decided((a, b), axis_rules, delta) for a, b in zip(lo, hi)])
        going &= ~decided
    fixed_low, fixed_high, _, _ = batch_fits(grid, scales, curves, max_seeds, 0.95)
    return covered(exps, low, high), covered(exps, fixed_low, fixed_high), used.mean(), 1 - going.mean()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[2, 3, 4, 5, 6, 8, 12])
    parser.add_argument("--check", action="store_true", help="first compare the batch with fit_scaling")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    start = time.process_time()
    if args.check:
        check(rng)
    se = math.sqrt(0.95 * 0.05 / args.runs) * 100
    print(f"{args.runs} runs per row; nominal 95 %, goal >= 93 %; binomial SE {se:.1f} points")
    print("coverage % (former interval's), per seed count; then mean error, median width (former) at each count")
    for name, regime in REGIMES.items():
        cells, errors, widths = [], [], []
        for seeds in args.seeds:
            exps, grid, scales, curves = simulate(regime, seeds, args.runs, rng)
            low, high, old_low, old_high = batch_fits(grid, scales, curves, seeds, 0.95)
            cells.append(f"{covered(exps, low, high) * 100:5.1f} ({covered(exps, old_low, old_high) * 100:4.1f})")
            errors.append(f"{np.nanmean((low + high) / 2 - exps):+.3f}")
            widths.append(f"{np.nanmedian(high - low):.2f} ({np.nanmedian(old_high - old_low):.2f})")
        no_ci = np.mean(np.isnan(low)) * 100
        print(f"\n{name} (no interval in {no_ci:.1f} % at {args.seeds[-1]} seeds)")
        print("  " + " | ".join(f"{k}: {c}" for k, c in zip(args.seeds, cells)), flush=True)
        print("  error " + " ".join(errors) + "; width " + " ".join(widths), flush=True)
    print("\nstaging 3, 5, 8, 12 (seeds='auto'), stopping when every rule is decided at tolerance x1.25:")
    for name in STAGED:
        for axis, scales, axis_rules in (("width", WIDTHS, rules.WIDTH_RULES), ("size", SIZES, rules.SIZE_RULES)):
            cov, fixed, mean_seeds, decided = staged(REGIMES[name], scales, axis_rules, args.runs, rng)
            print(
                f"  {name}, {axis} rules: coverage where it stops {cov * 100:5.1f} % (at a fixed 12 seeds"
                f" {fixed * 100:5.1f} %), mean seeds {mean_seeds:.1f}, decided {decided * 100:.0f} %",
                flush=True,
            )
    print(f"\n{time.process_time() - start:.0f} s CPU")


if __name__ == "__main__":
    main()
