"""Coverage of ``fit_scaling``'s interval by simulation, over more regimes and runs than the test checks.

Curves in ``log2 x`` with the optimum ``x*(s) = x*(1) s^e``, ``e`` uniform in [-1.2, 0.2] and ``x*(1)`` anywhere
within a grid cell: parabolas (the same curvature on both sides, or not), V shapes ``|log2 x - log2 x*|``, and
parabolas whose curvature and lopsidedness change across the scales (issue 36: curvature 0.14 to 0.013 per octave²,
left/right rise 1.2 to 2.1, log-linear in the scale), on a wide grid or on the finder's default grid (``tau_epoch``
2 to 128, 7 points), plus per seed a shared offset and noise at each grid point, independent or correlated (between
neighbouring grid points, and across scales for one seed). For each regime and seed count it prints the share of 95 %
intervals that cover the true ``e`` (nominal 95 %, goal >= 93 %), beside the former interval's (``--former``; by
default issue 36's: parabolas through 1 and 2 neighbours, widened by their whole spread), the mean error of
``exponent``, the median width of both, and the share of runs with no interval. Then the staging of ``seeds="auto"``
(:func:`~lightning_tau.tuner.analysis.scaling.seed_stages` up to 12, the level of
:func:`~lightning_tau.tuner.analysis.scaling.staged_level`, stopping when :func:`~lightning_tau.tuner.analysis.rules.all_decided` at the
default tolerance): coverage where it stops, for the width rules over widths 1-16 and the dataset-size rules over
N = 0.1-1, against the interval at a fixed 12 seeds, with the mean seed count and the share of runs decided, for
both intervals.

The intervals are computed for all runs at once with the functions ``fit_scaling`` calls (``_seed_exponents``,
``_envelope``); ``--check`` first compares them with ``fit_scaling`` run by run. ``--interval`` tries another set of
smoothers (``"1,2,3;;1"``: parabolas through 1, 2 and 3 neighbours, widened by their whole spread).

    PYTHONPATH=. .venv/bin/python benchmarks/stats_coverage.py --check       # about 10 min CPU on one core
    PYTHONPATH=. .venv/bin/python benchmarks/stats_coverage.py --runs 300 --seeds 3 5 8 --regimes "shape changes"
"""

from __future__ import annotations

import argparse
import math
import time
from typing import NamedTuple

import numpy as np

from lightning_tau.tuner import axes
from lightning_tau.tuner.analysis import rules
from lightning_tau.tuner.analysis.curve import DEFAULT_TAU_EPOCHS
from lightning_tau.tuner.analysis.scaling import (
    _envelope,
    _seed_exponents,
    _smoothers,
    fit_scaling,
    seed_stages,
    staged_level,
)
from lightning_tau.tuner.analysis.tdist import t_quantile

WIDTHS = (1.0, 4.0, 16.0)
SIZES = (0.1, 0.25, 0.5, 1.0)
FINDER_GRID = np.log2(DEFAULT_TAU_EPOCHS)  # the finder's default grid in octaves: 1 .. 7 (tau_epoch 2 .. 128)


class Regime(NamedTuple):
    """A simulated regime: the curve's shape, its noise, the grid and the scales.

    ``left`` and ``right`` are the curvature (per octave², a parabola) or slope (per octave, a V) on each side of
    the optimum; a pair ``(first, last)`` changes it across the scales, log-linearly in ``log`` scale. ``grid``:
    ``"wide"`` is ``log2 x`` from -6 to 14 with the optimum at the largest scale within the cell [5, 5 + step], far
    from the edges; ``"finder"`` is the finder's default grid (``tau_epoch`` 2 .. 128, 7 points) with the optimum at
    the scales' geometric centre within the cell [3.5, 4.5] (``tau_epoch`` 11 .. 23), so the optimum reaches an
    edge (no interval) only at the steepest exponents.
    """

    shape: str
    left: float | tuple[float, float]
    right: float | tuple[float, float]
    sd_offset: float
    sd_point: float
    rho_grid: float = 0.0
    rho_scale: float = 0.0
    step: float = 1.0
    scales: tuple[float, ...] = WIDTHS
    grid: str = "wide"


def _sides(curvature: float, ratio: float) -> tuple[float, float]:
    """``(left, right)`` with geometric mean ``curvature`` and ``left / right = ratio``."""
    return curvature * math.sqrt(ratio), curvature / math.sqrt(ratio)


#: the issue's shape that changes with scale: curvature 0.14 to 0.013 per octave² (the two sides' geometric mean),
#: left/right rise 1.2 to 2.1 (flatter toward long tau_epoch), from the smallest scale to the largest
CHANGING = tuple(zip(_sides(0.14, 1.2), _sides(0.013, 2.1)))
MIRRORED = (CHANGING[1], CHANGING[0])
REGIMES = {
    "demo-like parabola 0.04, noise 0.02 (former test)": Regime("parabola", 0.04, 0.04, 0.02, 0.02),
    "noisy (noise/curvature 2)": Regime("parabola", 0.04, 0.04, 0.02, 0.08),
    "x4 grid (the demo's --quick)": Regime("parabola", 0.04, 0.04, 0.02, 0.02, step=2),
    "2 scales (s = 1, 16)": Regime("parabola", 0.04, 0.04, 0.02, 0.02, scales=(1.0, 16.0)),
    "5 scales (s = 1 .. 16)": Regime("parabola", 0.04, 0.04, 0.02, 0.02, scales=(1.0, 2.0, 4.0, 8.0, 16.0)),
    "dataset sizes 0.1-1": Regime("parabola", 0.04, 0.04, 0.02, 0.02, scales=SIZES),
    "asymmetric 0.06/0.03, noise 0.01": Regime("parabola", 0.06, 0.03, 0.02, 0.01),
    "asymmetric 0.08/0.02, noise 0.01": Regime("parabola", 0.08, 0.02, 0.02, 0.01),
    "V-shaped 0.05, noise 0.01": Regime("V", 0.05, 0.05, 0.02, 0.01),
    "V-shaped 0.08/0.03, noise 0.01": Regime("V", 0.08, 0.03, 0.02, 0.01),
    "correlated noise (0.8 along grid, 0.5 across scales)": Regime("parabola", 0.04, 0.04, 0.02, 0.02, 0.8, 0.5),
    "correlated noise, asymmetric 0.06/0.03, noise 0.01": Regime("parabola", 0.06, 0.03, 0.02, 0.01, 0.8, 0.5),
    "finder's grid, demo-like parabola 0.04, noise 0.02": Regime("parabola", 0.04, 0.04, 0.02, 0.02, grid="finder"),
    "shape changes with scale, noise 0.005, finder's grid": Regime(
        "parabola", *CHANGING, 0.02, 0.005, scales=SIZES, grid="finder"
    ),
    "shape changes with scale, noise 0.002, finder's grid": Regime(
        "parabola", *CHANGING, 0.02, 0.002, scales=SIZES, grid="finder"
    ),
    "shape changes with scale, noise 0.01, finder's grid": Regime(
        "parabola", *CHANGING, 0.02, 0.01, scales=SIZES, grid="finder"
    ),
    "shape changes with scale, flatter left, finder's grid": Regime(
        "parabola", *MIRRORED, 0.02, 0.005, scales=SIZES, grid="finder"
    ),
    "shape changes with scale, noise 0.005, wide grid": Regime("parabola", *CHANGING, 0.02, 0.005, scales=SIZES),
}
#: the regimes the staging is run on (the issue's new ones, and the former test regime)
STAGED = [
    name
    for name in REGIMES
    if not name.startswith(("noisy", "x4", "2 scales", "5 scales", "dataset", "finder's grid"))
    and "noise 0.002" not in name
    and "noise 0.01," not in name
]
#: the interval of fit_scaling at window 1: the parabola through 1 neighbour and the lopsided parabola through 3,
#: their t-intervals' envelope widened on each side by half the spread of their means (``None``: fit_scaling's own
#: _envelope); ``(parabola windows, lopsided windows, widening)``
CURRENT = (*_smoothers(1), None)
#: the interval before (issue 36): the parabolas through 1 and 2 neighbours, widened by the whole spread
FORMER = ((1, 2), (), 1.0)


def _across(value, log_s):
    """A side's curvature at each scale: a constant, or ``(first, last)`` log-linear in ``log`` scale."""
    if not isinstance(value, tuple):
        return np.full(log_s.shape, float(value))
    where = (log_s - log_s[0]) / (log_s[-1] - log_s[0])
    return np.exp(np.log(value[0]) + where * (np.log(value[1]) - np.log(value[0])))


def simulate(regime, seeds, runs, rng, scales=None):
    """``(true exponents, grid, scales, curves)``: curves ``runs x scales x grid x seeds``."""
    scales = np.asarray(scales if scales is not None else regime.scales, dtype=float)
    log_s = np.log2(scales)
    exps = rng.uniform(-1.2, 0.2, runs)
    if regime.grid == "finder":
        log_grid = FINDER_GRID
        best = rng.uniform(3.5, 4.5, runs)[:, None] + exps[:, None] * (log_s - log_s.mean())
    else:
        log_grid = np.arange(-6.0, 14.0 + 1e-9, regime.step)
        best = rng.uniform(5.0, 5.0 + regime.step, runs)[:, None] + exps[:, None] * log_s
    d = log_grid[None, None, :, None] - best[:, :, None, None]
    left = _across(regime.left, log_s)[None, :, None, None]
    right = _across(regime.right, log_s)[None, :, None, None]
    curves = np.where(d < 0, left, right) * (d**2 if regime.shape == "parabola" else np.abs(d))
    curves = curves + regime.sd_offset * rng.standard_normal((runs, len(scales), 1, seeds))
    rho_grid, rho_scale = regime.rho_grid, regime.rho_scale

    def ar1(size):  # unit-variance noise, correlated rho_grid between neighbouring grid points
        z = rng.standard_normal(size)
        for g in range(1, size[2]):
            z[:, :, g] = rho_grid * z[:, :, g - 1] + math.sqrt(1 - rho_grid**2) * z[:, :, g]
        return z

    shared = ar1((runs, 1, len(log_grid), seeds))
    own = ar1((runs, len(scales), len(log_grid), seeds))
    curves = curves + regime.sd_point * (rho_scale * shared + math.sqrt(1 - rho_scale**2) * own)
    return exps, 2.0**log_grid, scales, curves


def batch_fits(grid, scales, curves, seeds, level, interval=CURRENT):
    """``(low, high)`` of every run on its first ``seeds`` seeds, by ``interval`` (parabola windows, lopsided
    windows, widening: as ``CURRENT``); nan where fit_scaling gives no interval (the seed-mean optimum at the grid's
    edge)."""
    runs = curves.shape[0]
    part = curves[..., :seeds]
    tables = [np.concatenate(list(part[:, i]), axis=1) for i in range(len(scales))]
    windows, lopsided, widening = interval
    exps = _seed_exponents(list(scales), list(grid), tables, "min", windows, lopsided)
    exps = exps.reshape(len(exps), runs, seeds)
    if widening is None:
        low, high, _, _ = _envelope(exps, level)
    else:
        means = exps.mean(axis=-1)
        half = t_quantile((1 + level) / 2, seeds - 1) * exps.std(axis=-1, ddof=1) / math.sqrt(seeds)
        spread = means.max(axis=0) - means.min(axis=0)
        low, high = (means - half).min(axis=0) - widening * spread, (means + half).max(axis=0) + widening * spread
    edge = np.isin(part.mean(axis=-1).argmin(axis=-1), [0, len(grid) - 1]).any(axis=-1)
    return np.where(edge, np.nan, low), np.where(edge, np.nan, high)


def covered(exps, low, high):
    given = np.isfinite(low)
    return np.mean((low <= exps) & (exps <= high) & given) / max(np.mean(given), 1e-12)


def check(rng, runs=20):
    """The batch intervals equal fit_scaling's, run by run."""
    for name, regime in REGIMES.items():
        exps, grid, scales, curves = simulate(regime, 4, runs, rng)
        low, high = batch_fits(grid, scales, curves, 4, 0.95)
        for run in range(runs):
            fit = fit_scaling(scales, grid, list(curves[run]))
            ok = np.isnan(low[run]) if fit.ci is None else np.allclose(fit.ci, (low[run], high[run]), atol=1e-12)
            assert ok, (name, run, fit.ci, low[run], high[run])
    print(f"batch intervals = fit_scaling's on {runs} runs of each regime")


def staged(regime, scales, axis_rules, runs, rng, interval, max_seeds=12, fixed_looks=False):
    """Coverage where the staging stops, coverage at a fixed max_seeds, mean seeds used, share decided; every look
    at 0.95 with ``fixed_looks``, else at staged_level's."""
    stages = seed_stages(max_seeds)
    level = 0.95 if fixed_looks else staged_level(0.95, len(stages))
    delta = rules.half_width(rules.DEFAULT_TOLERANCE, scales)
    exps, grid, scales, curves = simulate(regime, max_seeds, runs, rng, scales=scales)
    low, high = np.full(runs, np.nan), np.full(runs, np.nan)
    used, going = np.zeros(runs, dtype=int), np.ones(runs, dtype=bool)
    for k in stages:
        lo, hi = batch_fits(grid, scales, curves, k, level, interval)
        low[going], high[going], used[going] = lo[going], hi[going], k
        decided = np.array([np.isfinite(a) and rules.all_decided((a, b), axis_rules, delta) for a, b in zip(lo, hi)])
        going &= ~decided
    fixed_low, fixed_high = batch_fits(grid, scales, curves, max_seeds, 0.95, interval)
    return covered(exps, low, high), covered(exps, fixed_low, fixed_high), used.mean(), 1 - going.mean()


def _interval(text):
    """``"1,2;3;0.5"``: parabola windows 1 and 2, lopsided window 3, envelope widened by 0.5 spread on each side
    (``"1,2;;1"``: no lopsided one; no third field: fit_scaling's widening)."""
    parabolas, lopsided, *widening = text.split(";")
    windows = tuple(int(w) for w in parabolas.split(",") if w), tuple(int(w) for w in lopsided.split(",") if w)
    return (*windows, float(widening[0]) if widening and widening[0] else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[2, 3, 4, 5, 6, 8, 12])
    parser.add_argument("--check", action="store_true", help="first compare the batch with fit_scaling")
    parser.add_argument(
        "--interval",
        type=_interval,
        default=CURRENT,
        help="parabola windows;lopsided windows;widening (default fit_scaling's at window 1: '1;3')",
    )
    parser.add_argument("--former", type=_interval, default=FORMER, help="the interval in brackets ('1,2;;1')")
    parser.add_argument("--regimes", nargs="+", help="only the regimes whose name contains one of these")
    parser.add_argument("--no-staging", action="store_true")
    parser.add_argument("--staging-only", action="store_true", help="skip the table of seed counts")
    parser.add_argument("--fixed-looks", action="store_true", help="every look of the staging at 0.95")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    start = time.process_time()
    if args.check:
        check(rng)
    regimes = {n: r for n, r in REGIMES.items() if not args.regimes or any(k in n for k in args.regimes)}
    se = math.sqrt(0.95 * 0.05 / args.runs) * 100
    print(f"{args.runs} runs per row; nominal 95 %, goal >= 93 %; binomial SE {se:.1f} points")
    print(f"interval {args.interval} (former {args.former}): parabola windows, lopsided windows, widening")
    print("coverage % (former interval's), per seed count; then mean error, median width (former) at each count")
    for name, regime in {} if args.staging_only else regimes.items():
        cells, errors, widths = [], [], []
        for seeds in args.seeds:
            exps, grid, scales, curves = simulate(regime, seeds, args.runs, rng)
            low, high = batch_fits(grid, scales, curves, seeds, 0.95, args.interval)
            old_low, old_high = batch_fits(grid, scales, curves, seeds, 0.95, args.former)
            cells.append(f"{covered(exps, low, high) * 100:5.1f} ({covered(exps, old_low, old_high) * 100:4.1f})")
            errors.append(f"{np.nanmean((low + high) / 2 - exps):+.3f}")
            widths.append(f"{np.nanmedian(high - low):.2f} ({np.nanmedian(old_high - old_low):.2f})")
        no_ci = np.mean(np.isnan(low)) * 100
        print(f"\n{name} (no interval in {no_ci:.1f} % at {args.seeds[-1]} seeds)")
        print("  " + " | ".join(f"{k}: {c}" for k, c in zip(args.seeds, cells)), flush=True)
        print("  error " + " ".join(errors) + "; width " + " ".join(widths), flush=True)
    if not args.no_staging:
        looks = "0.95" if args.fixed_looks else "staged_level's"
        print(f"\nstaging 3, 5, 8, 12 (seeds='auto', each look at {looks}), stopping when every rule is decided at"
              " tolerance x1.25:")
    for name in [] if args.no_staging else [n for n in STAGED if n in regimes]:
        for axis, scales, axis_rules in (("width", WIDTHS, axes.WIDTH_RULES), ("size", SIZES, axes.SIZE_RULES)):
            for label, interval in (("", args.interval), ("former ", args.former)):
                cov, fixed, mean_seeds, decided = staged(
                    REGIMES[name], scales, axis_rules, args.runs, rng, interval, fixed_looks=args.fixed_looks
                )
                print(
                    f"  {label}{name}, {axis} rules: coverage where it stops {cov * 100:5.1f} % (at a fixed 12 seeds"
                    f" {fixed * 100:5.1f} %), mean seeds {mean_seeds:.1f}, decided {decided * 100:.0f} %",
                    flush=True,
                )
    print(f"\n{time.process_time() - start:.0f} s CPU")


if __name__ == "__main__":
    main()
