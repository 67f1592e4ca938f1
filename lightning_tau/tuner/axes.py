"""The finder's width and dataset-size axes: the result of a ``tau_epoch`` sweep at several widths or data sizes.

No Lightning import (numpy; matplotlib when :meth:`AxisResult.plot` draws). The statistics (the exponent, its
interval, the paired interior tests) come from :mod:`lightning_tau.tuner.stats`, the verdicts from
:mod:`lightning_tau.tuner.verdicts`; the Lightning side,
which trains the runs, is :class:`~lightning_tau.tuner.finder.TimescaleFinder` with ``axis="width"`` or
``axis="dataset_size"``.

- **Width** (``axis="width"``): at every width the finder sweeps ``tau_epoch`` with
  ``TimescaleCallback(tau_epoch=..., width_exponent=1)`` on a μP model. Each group's weight decay is then
  ``s / (lr_base * M * tau_epoch)`` for a group of width multiplier ``s``, so the sweep is a sweep of
  ``λ_base = 1 / (lr_base * M * tau_epoch)`` at a fixed ``lr_base``, the same grid at every width (Wang & Aitchison,
  ICML 2025, Sec. 4.2). ``exponent`` is the slope of log best ``λ_base`` on log width: 0 if the best timescale is
  the same at every width (``width_exponent = 1``, Wang & Aitchison), -1/2 for Fan et al. (arXiv 2510.15262,
  ``width_exponent = 1/2``), -1 for independent decay ∝ 1/width (Qiu et al., arXiv 2512.05620,
  ``width_exponent = 0``). The ``width_exponent`` to use is ``1 + exponent``.
- **Dataset size** (``axis="dataset_size"``): the sweep on subsets holding each fraction of the training set;
  ``exponent`` is the slope of log best ``tau_epoch`` on log ``N``: 0 when "tune on a fraction, train on all"
  holds (Wang & Aitchison, Sec. 4.1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from lightning_tau import _checks
from lightning_tau._table import table_lines
from lightning_tau.tuner.result import FinderResult, write_json
from lightning_tau.tuner.stats import ScalingFit, fit_scaling
from lightning_tau.tuner.verdicts import size_verdict, width_verdict

__all__ = ["AxisName", "AxisResult"]

AxisName = Literal["width", "dataset_size"]


@dataclass
class AxisResult:
    """What the finder found along the width or dataset-size axis: one :class:`FinderResult` per point, the
    exponent of the best ``λ_base`` (width) or ``tau_epoch`` (dataset size) against the scale, and the verdict.

    Attributes:
        axis: ``"width"`` or ``"dataset_size"``.
        values: the axis points as given: widths, or fractions of the training set.
        scales: what the exponent is fitted against: the widths, or the training samples ``N`` of each point.
        x_name: the swept quantity the optima are given in: ``"lambda_base"`` (width) or ``"tau_epoch"``.
        xs: its grid, increasing (for the width axis ``λ_base = 1 / (lr_base * M * tau_epoch)``, so the
            ``tau_epoch`` grid reversed).
        results: per point, the :class:`FinderResult` of its ``tau_epoch`` sweep (its curve, suggestion, cost).
        fit: the statistics (:func:`~lightning_tau.tuner.stats.fit_scaling`) of the best ``x`` against ``scales``.
        verdict: one sentence (:func:`~lightning_tau.tuner.verdicts.width_verdict` or ``size_verdict``).
        base_width_mult: width axis: the μP width multiplier ``s`` of the smallest width (1 when it is μP's base
            width); ``result.callback()`` carries the best ``tau_epoch`` there to ``s = 1``.

    Example:
        A dataset-size axis whose best ``tau_epoch`` is 8 at every size (three seeds, exact parabolas):

        >>> import math
        >>> from lightning_tau.tuner.result import CurvePoint
        >>> taus = [2.0, 4.0, 8.0, 16.0, 32.0]
        >>> def point(size):
        ...     curve = [CurvePoint(t, [(math.log(t / 8)) ** 2 + 0.01 * s for s in range(3)], [0, 1, 2], {}, [size])
        ...              for t in taus]
        ...     return FinderResult.from_curve(curve, lr={"decay": 1e-3}, monitor="val_loss", mode="min",
        ...         reduce="last", fraction=size / 1000, dataset_size=1000, subset_size=size, batch_size=10,
        ...         epochs=1, full_cost=500)
        >>> result = AxisResult.build("dataset_size", [0.1, 0.5], [point(100), point(500)])
        >>> round(result.exponent, 6) + 0, round(result.tau_epoch, 6)
        (0.0, 8.0)
    """

    axis: AxisName
    values: list[float]
    scales: list[float]
    x_name: str
    xs: list[float]
    results: list[FinderResult]
    fit: ScalingFit
    verdict: str
    base_width_mult: float = 1.0

    @classmethod
    def build(
        cls,
        axis: AxisName,
        values: Sequence[float],
        results: Sequence[FinderResult],
        *,
        lambda_base: Sequence[float] | None = None,
        base_width_mult: float = 1.0,
        level: float = 0.95,
        window: int = 1,
    ) -> AxisResult:
        """Fit the exponent over ``results`` (one per axis point, the same ``tau_epoch`` grid and seeds in each).

        Args:
            axis: ``"width"`` or ``"dataset_size"``.
            values: the widths, or the fractions.
            results: one :class:`FinderResult` per value, in the same order.
            lambda_base: width axis: ``λ_base`` at each ``tau_epoch`` of the grid (grid order).
            base_width_mult: width axis: μP's ``s`` at the smallest width.
            level: the interval's level.
            window: grid points on each side of the best one that each parabola is fitted to.

        Raises:
            ValueError: lengths differ, fewer than 2 points, or the points have other grids or seeds.
        """
        _checks.choice("AxisResult", "axis", axis, ("width", "dataset_size"))
        if len(values) != len(results) or len(results) < 2:
            raise ValueError(
                f"`AxisResult` needs one result per axis point and at least 2 points, got {len(values)} values and"
                f" {len(results)} results."
            )
        taus = [p.tau_epoch for p in results[0].curve]
        seeds = results[0].curve[0].seeds
        for r in results:
            if [p.tau_epoch for p in r.curve] != taus or any(p.seeds != seeds for p in r.curve):
                raise ValueError(
                    "`AxisResult`: every axis point must sweep the same tau_epoch grid with the same seeds."
                )
        curves = [np.array([p.values for p in r.curve], dtype=float) for r in results]
        if axis == "width":
            if lambda_base is None or len(lambda_base) != len(taus):
                raise ValueError("`AxisResult(axis='width')` needs `lambda_base`, one per tau_epoch of the grid.")
            # λ_base falls as tau_epoch grows: reverse the grid so that x increases
            xs = [float(x) for x in reversed(lambda_base)]
            curves = [c[::-1] for c in curves]
            scales = [float(v) for v in values]
            x_name = "lambda_base"
        else:
            xs = [float(t) for t in taus]
            scales = [float(r.subset_size) for r in results]
            x_name = "tau_epoch"
        mode = results[0].mode
        fit = fit_scaling(scales, xs, curves, mode=mode, level=level, window=window)
        verdict = width_verdict(fit) if axis == "width" else size_verdict(fit)
        return cls(
            axis=axis,
            values=[float(v) if axis == "dataset_size" else int(v) for v in values],
            scales=scales,
            x_name=x_name,
            xs=xs,
            results=list(results),
            fit=fit,
            verdict=verdict,
            base_width_mult=float(base_width_mult),
        )

    # --- the numbers ------------------------------------------------------------------------------------------

    @property
    def exponent(self) -> float:
        """Slope of log best ``x`` (smoothed optimum of the seed mean) on log scale."""
        return self.fit.exponent

    @property
    def exponent_ci(self) -> tuple[float, float] | None:
        """The exponent's interval at ``fit.level``, or ``None`` (``ci_reason`` says why)."""
        return self.fit.ci

    @property
    def ci_reason(self) -> str | None:
        """Why there is no interval (too few seeds or points), else ``None``."""
        return self.fit.ci_reason

    @property
    def width_exponent(self) -> float | None:
        """Width axis: the measured ``alpha = 1 + exponent`` (``lambda ∝ s ** alpha``); ``None`` on the size axis."""
        return 1.0 + self.exponent if self.axis == "width" else None

    @property
    def tau_epoch(self) -> float:
        """The ``tau_epoch`` :meth:`callback` uses.

        Width axis: the best ``tau_epoch`` at the smallest width times ``base_width_mult ** exponent``, the best
        ``λ_base`` carried along the fitted line to μP's base width ``s = 1`` (the best ``tau_epoch`` at the
        smallest width itself when that is μP's base width). Dataset-size axis: the best ``tau_epoch`` at the
        largest fraction, the point nearest the full run (no extrapolation to the full ``N``; if ``exponent``'s
        interval excludes 0, the verdict says the best ``tau_epoch`` moves with ``N`` and this is a lower-``N``
        value).
        """
        if self.axis == "width":
            return self.results[0].tau_epoch * self.base_width_mult**self.exponent
        return self.results[-1].tau_epoch

    @property
    def cost(self) -> int:
        """Optimizer steps every point's runs took in all."""
        return sum(r.cost for r in self.results)

    @property
    def full_cost(self) -> int:
        """Optimizer steps the same sweeps take on the full training set (width: at every width; size: once)."""
        if self.axis == "width":
            return sum(r.full_cost for r in self.results)
        return self.results[-1].full_cost

    def note(self) -> str | None:
        """The sign-disagreement sentence (grid vs smoothed exponent), else ``None``."""
        return self.fit.note()

    def callback(self, **kwargs: Any) -> Any:
        """The :class:`~lightning_tau.TimescaleCallback` for the full run.

        Width axis: ``TimescaleCallback(tau_epoch=self.tau_epoch, width_exponent=self.width_exponent)``.
        Dataset-size axis: ``TimescaleCallback(tau_epoch=self.tau_epoch)`` (see :attr:`tau_epoch`). ``kwargs`` go to
        the callback.
        """
        from lightning_tau.callback import TimescaleCallback  # Lightning only when asked: this module is pure

        if self.axis == "width":
            kwargs.setdefault("width_exponent", self.width_exponent)
        return TimescaleCallback(tau_epoch=self.tau_epoch, **kwargs)

    # --- output -----------------------------------------------------------------------------------------------

    def _point_name(self, i: int) -> str:
        return f"width {self.values[i]:g}" if self.axis == "width" else f"N={int(self.scales[i])}"

    def x_of_tau(self, tau: float) -> float:
        """The swept quantity at ``tau``, a ``tau_epoch`` of the grid: along width its ``λ_base``, else ``tau``."""
        taus = [p.tau_epoch for p in self.results[0].curve]
        if self.axis == "width":
            return self.xs[len(taus) - 1 - taus.index(tau)]
        return tau

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: the axis, the exponent and its interval, the verdict, the optima, the callback's
        settings, the cost, and per point its :meth:`FinderResult.to_json`."""
        fit = self.fit
        return {
            "axis": self.axis,
            "values": list(self.values),
            "scales": list(self.scales),
            "x_name": self.x_name,
            "xs": list(self.xs),
            "exponent": _finite_or_none(fit.exponent),
            "exponent_ci": list(fit.ci) if fit.ci is not None else None,
            "ci_reason": fit.ci_reason,
            "level": fit.level,
            "width_exponent": _finite_or_none(self.width_exponent) if self.width_exponent is not None else None,
            "verdict": self.verdict,
            "note": self.note(),
            "optima": [_finite_or_none(v) for v in fit.optima],
            "grid_optima": list(fit.grid_optima),
            "per_seed_grid_optima": [list(v) for v in fit.per_seed_grid_optima],
            "grid_exponent": _finite_or_none(fit.grid_exponent),
            "sign_disagrees": bool(fit.sign_disagrees),
            "interior": [asdict(t) for t in fit.interior],
            "tau_epoch": self.tau_epoch,
            "base_width_mult": self.base_width_mult,
            "cost": self.cost,
            "full_cost": self.full_cost,
            "results": [r.to_json() for r in self.results],
        }

    def save_json(self, path: str | Path) -> Path:
        """Write :meth:`to_json` to ``path`` (parents created); returns the path."""
        return write_json(path, self.to_json())

    def table(self) -> str:
        """The curve per point, the optima, the exponent line, the verdict and the callback, as text."""
        first = self.results[0]
        seeds = len(first.curve[0].seeds)
        value = "final" if first.reduce == "last" else "best"
        x_label = "lambda_base" if self.axis == "width" else "tau_epoch"
        what = (
            f"{len(self.values)} widths ({', '.join(f'{v:g}' for v in self.values)})"
            if self.axis == "width"
            else f"{len(self.values)} fractions ({', '.join(f'{v:.3g}' for v in self.values)}:"
            f" N={', '.join(f'{s:g}' for s in self.scales)})"
        )
        lines = [
            f"Timescale finder, {self.axis} axis: {what} x {len(first.curve)} tau_epochs x {seeds} seeds,"
            f" {first.epochs} epochs; {value} {first.monitor} ({first.mode}), seed mean +- std:",
        ]
        rows = []
        for j, point in enumerate(first.curve):
            cells = [f"{point.tau_epoch:g}"]
            if self.axis == "width":
                cells.append(f"{self.x_of_tau(point.tau_epoch):.3g}")
            for r in self.results:
                p = r.curve[j]
                mark = "*" if p.tau_epoch == r.grid_tau_epoch else " "
                cells.append(f"{_fmt(p.mean)} +- {_fmt(p.std)}{mark}")
            rows.append(cells)
        columns = ["tau_epoch", *(["lambda_base"] if self.axis == "width" else [])]
        columns += [self._point_name(i) for i in range(len(self.results))]
        lines += table_lines(columns, rows, rule=False, indent="  ")
        lines.append("  (* best on the grid)")
        fit = self.fit
        lines.append(f"Best {x_label} per {'width' if self.axis == 'width' else 'size'}:")
        opt_rows = []
        for i in range(len(self.results)):
            test = fit.interior[i]
            opt_rows.append(
                [
                    self._point_name(i),
                    f"{fit.optima[i]:.3g}",
                    f"{fit.grid_optima[i]:.3g}",
                    ", ".join(f"{v:.3g}" for v in fit.per_seed_grid_optima[i]),
                    ("interior" if test.interior else "not interior") + f" ({test.reason})",
                ]
            )
        lines += table_lines(
            ["point", "smoothed", "grid (seed mean)", "grid per seed", f"paired test at {fit.interior[0].level:g}"],
            opt_rows,
            rule=False,
            indent="  ",
        )
        ci = (
            f"{fit.level:.0%} interval [{fit.ci[0]:+.2f}, {fit.ci[1]:+.2f}]"
            if fit.ci is not None
            else f"no interval: {fit.ci_reason}"
        )
        scale = "width" if self.axis == "width" else "N"
        lines.append(
            f"Exponent of best {x_label} on {scale}: {fit.exponent:+.3f} ({ci}); on the grid optima"
            f" {fit.grid_exponent:+.3f}."
        )
        if self.note():
            lines.append(str(self.note()))
        lines.append(f"Verdict: {self.verdict}")
        if self.axis == "width":
            lines.append(
                f"Measured width_exponent = 1 + exponent = {self.width_exponent:.3g}. Full run:"
                f" TimescaleCallback(tau_epoch={self.tau_epoch:.3g}, width_exponent={self.width_exponent:.3g})."
            )
        else:
            lines.append(
                f"Full run: TimescaleCallback(tau_epoch={self.tau_epoch:.3g}) (the best tau_epoch at the largest"
                f" fraction, {self.values[-1]:g})."
            )
        lines.append(
            f"Cost: {self.cost:,} optimizer steps, {self.cost / self.full_cost:.0%} of the {self.full_cost:,} the same"
            f" sweep{'s take' if self.axis == 'width' else ' takes'} on the full data."
            if self.full_cost
            else f"Cost: {self.cost:,} optimizer steps."
        )
        return "\n".join(lines)

    def plot(self, path: str | Path) -> Path:  # pragma: no mutate block (drawing; see benchmarks/mutation_survivors.md)
        """Draw :meth:`figure` into ``path`` (``.png``, ``.svg``, ...); returns it."""
        import matplotlib.pyplot as plt

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig = self.figure()
        try:
            fig.savefig(path, dpi=120)
        finally:
            plt.close(fig)
        return path

    def figure(self) -> Any:  # pragma: no mutate block (drawing; tests/test_axes_figure.py reads it back)
        """The matplotlib figure :meth:`plot` saves: the curve per point (left, its smoothed optimum dotted) and log
        best ``x`` against log scale with the per-seed grid optima and the fitted line (right). Agg backend."""
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
        colors = plt.cm.viridis(np.linspace(0.0, 0.85, len(self.results)))
        for i, (r, color) in enumerate(zip(self.results, colors)):
            xs = [self.x_of_tau(p.tau_epoch) for p in r.curve]
            left.plot(xs, [p.mean for p in r.curve], "o-", color=color, markersize=4, label=self._point_name(i))
            left.axvline(self.fit.optima[i], color=color, linestyle=":", alpha=0.8)
        left.set_xscale("log")
        left.set_xlabel("λ_base = 1 / (lr_base M τ_epoch)" if self.axis == "width" else "τ_epoch [epochs]")
        first = self.results[0]
        left.set_ylabel(f"{'final' if first.reduce == 'last' else 'best'} {first.monitor} (seed mean)")
        left.grid(True, which="both", alpha=0.3)
        left.legend(fontsize="small")
        scales = np.asarray(self.scales)
        right.plot(scales, self.fit.optima, "o", color="tab:blue", label="smoothed optimum")
        right.plot(scales, self.fit.grid_optima, "s", color="tab:orange", fillstyle="none", label="grid optimum")
        for s, seed_optima in zip(scales, self.fit.per_seed_grid_optima):
            right.plot([s] * len(seed_optima), seed_optima, ".", color="gray", alpha=0.5)
        line = np.exp(np.polyval(np.polyfit(np.log(scales), np.log(self.fit.optima), 1), np.log(scales)))
        right.plot(scales, line, "-", color="black", label=f"exponent {self.exponent:+.2f}")
        right.set_xscale("log")
        right.set_yscale("log")
        # ticks at the axis points, the swept grid and the smoothed optima's ends, written plainly (log axes' default
        # labels crowd here)
        from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

        optima = self.fit.optima
        shown = [*optima, *self.fit.grid_optima, *line]
        low, high = min(shown) / 1.5, max(shown) * 1.5
        for axis, ticks in (
            (left.xaxis, list(self.xs)),
            (right.xaxis, list(scales)),
            (right.yaxis, sorted({*(x for x in self.xs if low <= x <= high), min(optima), max(optima)})),
        ):
            axis.set_major_locator(FixedLocator(ticks))
            axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.4g}"))
            axis.set_minor_locator(NullLocator())
            axis.set_minor_formatter(NullFormatter())
        right.set_xlabel("width" if self.axis == "width" else "training samples N")
        right.set_ylabel(f"best {'λ_base' if self.axis == 'width' else 'τ_epoch'}")
        right.grid(True, which="both", alpha=0.3)
        right.legend(fontsize="small")
        right.set_title(_wrap(self.verdict, 70), fontsize="small")
        return fig


def _wrap(text: str, width: int) -> str:  # pragma: no mutate block (the figure title only)
    import textwrap

    return "\n".join(textwrap.wrap(text, width))


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _fmt(value: float) -> str:
    return f"{value:.4g}" if math.isfinite(value) else "nan"
