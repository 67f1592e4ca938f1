"""What the timescale finder found: the curve's points, the pruned ones, and the result with its table, JSON and plot.

No Lightning import (numpy only; matplotlib is imported by :meth:`FinderResult.plot` when it draws, and
:meth:`FinderResult.callback` imports the callback when asked). :meth:`FinderResult.from_curve` smooths the curve with
:mod:`lightning_tau.tuner.curve`'s maths; the Lightning side, which trains the runs, is
:mod:`lightning_tau.tuner.finder`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from lightning_tau._constants import Goal
from lightning_tau._table import table_lines
from lightning_tau.tuner.curve import optimum_range, smoothed_optimum

__all__ = ["CurvePoint", "FinderResult", "PrunedPoint", "write_json"]


@dataclass
class CurvePoint:
    """One ``tau_epoch`` of the finder's grid: the metric of every seed on the subset.

    Attributes:
        tau_epoch: the timescale the runs used.
        values: the metric per seed, in ``seeds`` order (``nan`` for a run that diverged).
        seeds: the seeds.
        weight_decay: per param group, the weight decay the subset runs used (``B / (lr * N_subset * tau)``).
        steps: optimizer steps each run took.
    """

    tau_epoch: float
    values: list[float]
    seeds: list[int]
    weight_decay: dict[str, float] = field(default_factory=dict)
    steps: list[int] = field(default_factory=list)

    @property
    def mean(self) -> float:
        """Mean over seeds; ``inf`` if any seed diverged (so a diverging setting never looks best)."""
        if not self.values or any(not math.isfinite(v) for v in self.values):
            return math.inf
        return float(np.mean(self.values))

    @property
    def std(self) -> float:
        """Sample standard deviation over seeds (``ddof=1``); 0 with one seed, ``nan`` if a seed diverged."""
        if len(self.values) < 2:
            return 0.0
        if any(not math.isfinite(v) for v in self.values):
            return math.nan
        return float(np.std(self.values, ddof=1))


@dataclass
class PrunedPoint:
    """A ``tau_epoch`` of the grid that a pruner stopped: at least one seed's run was pruned, so it is not on the
    curve (the curve pairs every seed at every point).

    Attributes:
        tau_epoch: the timescale the runs used.
        seeds: the seeds.
        pruned_after: per seed, the epochs its run trained before it was pruned (``0``: not trained, as another
            seed of this ``tau_epoch`` was pruned), or ``None`` for a run that completed.
        last_values: per seed, the last value of the metric the run reported (``nan``: none); a pruned run's is from
            an earlier epoch than the curve's, so not comparable with it.
        weight_decay: per param group, the weight decay the subset runs used (empty when none was trained).
        steps: optimizer steps each run took.

    Example:
        >>> PrunedPoint(64.0, [0, 1], [5, 0], [0.9, float("nan")], {}, [30, 0]).note
        'pruned: seed 0 after epoch 5, seed 1 not trained'
    """

    tau_epoch: float
    seeds: list[int]
    pruned_after: list[int | None]
    last_values: list[float] = field(default_factory=list)
    weight_decay: dict[str, float] = field(default_factory=dict)
    steps: list[int] = field(default_factory=list)

    @property
    def note(self) -> str:
        """What happened to each seed, in one line."""
        parts = []
        for seed, after in zip(self.seeds, self.pruned_after):
            if after is None:
                parts.append(f"seed {seed} completed")
            elif after == 0:
                parts.append(f"seed {seed} not trained")
            else:
                parts.append(f"seed {seed} after epoch {after}")
        return "pruned: " + ", ".join(parts)


@dataclass
class FinderResult:
    """What the timescale finder found: the suggestion, the full run's weight decay, the curve and the cost.

    Attributes:
        tau_epoch: the suggested ``tau_epoch`` for the full run (smoothed, see
            :func:`~lightning_tau.tuner.curve.smoothed_optimum`).
        grid_tau_epoch: the best ``tau_epoch`` on the grid (seed mean).
        at_edge: the grid's best point is its first or last: widen the grid.
        weight_decay: per param group, the weight decay for the full run: ``1 / (lr * tau_epoch * M)`` with ``M``
            the full run's optimizer steps per epoch, which is what ``TimescaleCallback(tau_epoch=tau_epoch)`` will
            write there (``M = N / B`` up to the last, partial batch, so this is ``B / (lr * N * tau_epoch)``);
            groups that do not decay are left out.
        lr: per decaying param group, the reference learning rate used above.
        subset_weight_decay: per param group, the weight decay of the best grid point on the subset: what keeping
            the subset's best weight decay as it is (the naive transfer) would use.
        monitor: the validation metric compared.
        mode: ``"min"`` or ``"max"``.
        reduce: ``"last"`` (the metric after the last epoch) or ``"best"`` (its best value over epochs).
        fraction: the subset's share of the training set.
        dataset_size: ``N``, training samples of the full run.
        subset_size: ``round(fraction * N)``, training samples of each finder run.
        batch_size: ``B``, samples per optimizer step.
        epochs: epochs per run (the same on the subset as planned for the full run).
        steps_per_epoch: ``M``, optimizer steps per epoch of the full run.
        cost: optimizer steps the finder's runs took in all.
        full_cost: optimizer steps the same grid and seeds would take on the full training set.
        curve: one :class:`CurvePoint` per ``tau_epoch``, in grid order.
        smoothed: whether a parabola gave ``tau_epoch`` (else it is the best grid point).
        tau_epoch_range: ``(low, high)``, the ``tau_epoch`` range the seeds cannot tell apart from the suggestion
            (:func:`~lightning_tau.tuner.curve.optimum_range`); a rerun with other seeds may suggest anything in it.
        pruned: the ``tau_epoch`` values a pruner stopped (:class:`PrunedPoint`), in grid order: not on the curve,
            never the suggestion; their runs' steps count in ``cost``.

    Example:
        >>> points = [(2.0, 0.4), (8.0, 0.2), (32.0, 0.3)]
        >>> curve = [CurvePoint(t, [v], [0], {"decay": 0.1 / t}, [10]) for t, v in points]
        >>> result = FinderResult.from_curve(curve, lr={"decay": 1e-3}, monitor="val_loss", mode="min",
        ...     reduce="last", fraction=0.25, dataset_size=1000, subset_size=250, batch_size=50, epochs=10,
        ...     full_cost=3 * 10 * 20)
        >>> round(result.tau_epoch, 2), result.grid_tau_epoch, result.cost, result.full_cost
        (10.08, 8.0, 30, 600)
        >>> result.tau_epoch_range  # one seed: the best grid point's neighbours
        (2.0, 32.0)
        >>> round(result.weight_decay["decay"], 2)  # 50 / (1e-3 * 1000 * 10.08)
        4.96
        >>> sorted(result.to_json())[:5]
        ['at_edge', 'batch_size', 'cost', 'cost_fraction', 'curve']
    """

    tau_epoch: float
    grid_tau_epoch: float
    at_edge: bool
    weight_decay: dict[str, float]
    lr: dict[str, float]
    subset_weight_decay: dict[str, float]
    monitor: str
    mode: Goal
    reduce: Literal["last", "best"]
    fraction: float
    dataset_size: int
    subset_size: int
    batch_size: int
    epochs: int
    steps_per_epoch: float
    cost: int
    full_cost: int
    curve: list[CurvePoint]
    smoothed: bool = False
    tau_epoch_range: tuple[float, float] = (math.nan, math.nan)
    pruned: list[PrunedPoint] = field(default_factory=list)

    @classmethod
    def from_curve(
        cls,
        curve: Sequence[CurvePoint],
        *,
        lr: Mapping[str, float],
        monitor: str,
        mode: Goal,
        reduce: Literal["last", "best"],
        fraction: float,
        dataset_size: int,
        subset_size: int,
        batch_size: int,
        epochs: int,
        full_cost: int,
        steps_per_epoch: float | None = None,
        window: int = 1,
        pruned: Sequence[PrunedPoint] = (),
    ) -> FinderResult:
        """Smooth ``curve`` (:func:`~lightning_tau.tuner.curve.smoothed_optimum` over its seed means) and derive the
        full run's weight decay.

        ``cost`` is the sum of every run's steps in ``curve`` and ``pruned``; ``weight_decay[g] = 1 / (lr[g] *
        tau_epoch * M)`` with ``M = steps_per_epoch``, by default ``N / B``. ``pruned``: the ``tau_epoch`` values a
        pruner stopped, which the curve leaves out; the best point of the curve is not at the grid's edge when a
        pruned ``tau_epoch`` lies beyond it (the pruner found that side worse), and the range then reaches that
        ``tau_epoch`` (no full run says the optimum is not between them).
        """
        from lightning_tau.timescale import steps_per_epoch as n_over_b
        from lightning_tau.timescale import weight_decay_for_tau_iter

        m = n_over_b(dataset_size, batch_size) if steps_per_epoch is None else float(steps_per_epoch)

        points = sorted(curve, key=lambda p: p.tau_epoch)
        opt = smoothed_optimum([p.tau_epoch for p in points], [p.mean for p in points], mode, window)
        low, high = optimum_range([p.tau_epoch for p in points], [p.values for p in points], mode, window)
        best = points[opt.grid_index]
        stopped = sorted(pruned, key=lambda p: p.tau_epoch)
        at_edge = opt.at_edge and not any((p.tau_epoch < best.tau_epoch) == (opt.grid_index == 0) for p in stopped)
        # a best point at the curve's end with a pruned tau_epoch beyond it: the optimum may lie up to that one
        if opt.grid_index == 0 and any(p.tau_epoch < best.tau_epoch for p in stopped):
            low = min(low, max(p.tau_epoch for p in stopped if p.tau_epoch < best.tau_epoch))
        if opt.grid_index == len(points) - 1 and any(p.tau_epoch > best.tau_epoch for p in stopped):
            high = max(high, min(p.tau_epoch for p in stopped if p.tau_epoch > best.tau_epoch))
        return cls(
            tau_epoch=opt.tau_epoch,
            grid_tau_epoch=best.tau_epoch,
            at_edge=at_edge,
            weight_decay={
                name: weight_decay_for_tau_iter(group_lr, opt.tau_epoch * m) for name, group_lr in lr.items()
            },
            lr=dict(lr),
            subset_weight_decay=dict(best.weight_decay),
            monitor=monitor,
            mode=mode,
            reduce=reduce,
            fraction=fraction,
            dataset_size=dataset_size,
            subset_size=subset_size,
            batch_size=batch_size,
            epochs=epochs,
            steps_per_epoch=m,
            cost=sum(sum(p.steps) for p in points) + sum(sum(p.steps) for p in stopped),
            full_cost=full_cost,
            curve=list(points),
            smoothed=opt.smoothed,
            tau_epoch_range=(low, high),
            pruned=stopped,
        )

    def callback(self, **kwargs: Any) -> Any:
        """The :class:`~lightning_tau.TimescaleCallback` for the full run: ``tau_epoch`` the suggestion.

        ``kwargs`` go to the callback (``verbose``, ``monitor``, ...). It writes ``weight_decay`` into the groups.

        Example:
            >>> curve = [CurvePoint(t, [v], [0]) for t, v in [(2.0, 0.4), (8.0, 0.2), (32.0, 0.3)]]
            >>> result = FinderResult.from_curve(curve, lr={"decay": 1e-3}, monitor="val_loss", mode="min",
            ...     reduce="last", fraction=0.25, dataset_size=1000, subset_size=250, batch_size=50, epochs=10,
            ...     full_cost=600)
            >>> round(result.callback(verbose=False).tau_epoch, 2)
            10.08
        """
        from lightning_tau.callback import TimescaleCallback  # Lightning only when asked: this module is pure

        return TimescaleCallback(tau_epoch=self.tau_epoch, **kwargs)

    @property
    def verdict(self) -> str:
        """One line on how far to trust the suggestion: at the grid's edge, a range as wide as the grid, or fine.

        Example:
            >>> curve = [CurvePoint(t, [v], [0]) for t, v in [(2.0, 0.4), (8.0, 0.2), (32.0, 0.3)]]
            >>> FinderResult.from_curve(curve, lr={"decay": 1e-3}, monitor="val_loss", mode="min",
            ...     reduce="last", fraction=0.25, dataset_size=1000, subset_size=250, batch_size=50, epochs=10,
            ...     full_cost=600).verdict
            'the seeds cannot tell the whole grid apart (2 to 32): run more seeds or epochs before trusting it'
        """
        low, high = self.tau_epoch_range
        taus = [p.tau_epoch for p in self.curve]
        if self.at_edge:
            return "at the edge of the grid: the optimum may lie beyond it, widen the grid"
        if taus and low <= taus[0] and high >= taus[-1]:
            return (
                f"the seeds cannot tell the whole grid apart ({low:.3g} to {high:.3g}): run more seeds or epochs"
                " before trusting it"
            )
        return f"an optimum inside the grid, in a range {high / low:.2g}x wide"

    @property
    def cost_fraction(self) -> float:
        """``cost / full_cost``: what the finder cost, as a share of the same sweep on the full data."""
        return self.cost / self.full_cost if self.full_cost else math.nan

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: every attribute, ``cost_fraction``, and per curve point ``mean`` and ``std``.

        Non-finite metric values are written as ``null`` (JSON has no ``NaN``).
        """
        data = asdict(self)
        data["cost_fraction"] = self.cost_fraction
        data["tau_epoch_range"] = [_finite_or_none(x) for x in self.tau_epoch_range]
        data["verdict"] = self.verdict
        data["curve"] = [
            {
                "tau_epoch": p.tau_epoch,
                "mean": _finite_or_none(p.mean),
                "std": _finite_or_none(p.std),
                "values": [_finite_or_none(v) for v in p.values],
                "seeds": list(p.seeds),
                "weight_decay": dict(p.weight_decay),
                "steps": list(p.steps),
            }
            for p in self.curve
        ]
        data["pruned"] = [
            {
                "tau_epoch": p.tau_epoch,
                "seeds": list(p.seeds),
                "pruned_after_epoch": list(p.pruned_after),
                "last_values": [_finite_or_none(v) for v in p.last_values],
                "weight_decay": dict(p.weight_decay),
                "steps": list(p.steps),
                "note": p.note,
            }
            for p in self.pruned
        ]
        return data

    def save_json(self, path: str | Path) -> Path:
        """Write :meth:`to_json` to ``path`` (parents created); returns the path."""
        return write_json(path, self.to_json())

    def table(self) -> str:
        """The curve, the suggestion, the full run's weight decay and the cost, as text for a terminal."""
        rows = [
            [
                f"{p.tau_epoch:g}",
                _fmt(p.mean),
                _fmt(p.std),
                ", ".join(_fmt(v) for v in p.values),
                ", ".join(f"{name}={wd:.3g}" for name, wd in p.weight_decay.items()),
                "best on grid" if p.tau_epoch == self.grid_tau_epoch else "",
            ]
            for p in self.curve
        ]
        for p in self.pruned:  # in grid order among the curve's rows
            row = [f"{p.tau_epoch:g}", "pruned", "", "", ", ".join(f"{n}={wd:.3g}" for n, wd in p.weight_decay.items())]
            at = next((i for i, q in enumerate(self.curve) if q.tau_epoch > p.tau_epoch), len(self.curve))
            rows.insert(at + sum(q.tau_epoch < p.tau_epoch for q in self.pruned), [*row, p.note])
        value = "final" if self.reduce == "last" else "best"
        lines = [
            f"Timescale finder: {len(self.curve) + len(self.pruned)} tau_epochs x"
            f" {len(self.curve[0].seeds) if self.curve else 0} seeds"
            f" on a {self.fraction:g} subset ({self.subset_size} of {self.dataset_size} samples), {self.epochs}"
            f" epochs, B={self.batch_size}; {value} {self.monitor} ({self.mode}):",
            *table_lines(
                ["tau_epoch", "mean", "std", "per seed", "subset weight decay", "note"], rows, rule=False, indent="  "
            ),
        ]
        how = (
            "parabola in log(tau_epoch) through the best grid point and its neighbours"
            if self.smoothed
            else ("best grid point")
        )
        lines.append(f"Suggested tau_epoch: {self.tau_epoch:.3g} ({how}; best on grid {self.grid_tau_epoch:g}).")
        low, high = self.tau_epoch_range
        seeds = len(self.curve[0].seeds) if self.curve else 0
        lines.append(
            f"Uncertainty: the seeds cannot tell tau_epoch {low:.3g} to {high:.3g} apart from it"
            + (" (one seed: the best grid point's neighbours)." if seeds == 1 else f" ({seeds} seeds).")
        )
        lines.append(f"Verdict: {self.verdict}.")
        if self.pruned:
            stopped = sum(bool(a) for p in self.pruned for a in p.pruned_after)
            untrained = sum(a == 0 for p in self.pruned for a in p.pruned_after)
            lines.append(
                f"Pruned: tau_epoch {', '.join(f'{p.tau_epoch:g}' for p in self.pruned)} (runs: {stopped} stopped"
                f" early, {untrained} not trained); not on the curve: every seed of a tau_epoch must complete to be"
                " compared."
            )
        lines.append(
            f"Weight decay for the full run (N={self.dataset_size}, B={self.batch_size}, {self.steps_per_epoch:g} steps"
            f" per epoch), as TimescaleCallback(tau_epoch={self.tau_epoch:.3g}) will set it:"
        )
        lines += table_lines(
            ["group", "lr", "weight decay", "naive (subset's best, kept)"],
            [
                [name, f"{self.lr[name]:.3g}", f"{wd:.4g}", _fmt(self.subset_weight_decay.get(name, math.nan))]
                for name, wd in self.weight_decay.items()
            ],
            rule=False,
            indent="  ",
        )
        lines.append(
            f"Cost: {self.cost:,} optimizer steps, {self.cost_fraction:.0%} of the {self.full_cost:,} the same sweep"
            " takes on the full data."
        )
        return "\n".join(lines)

    def plot(self, path: str | Path) -> Path:  # pragma: no mutate block (drawing; see benchmarks/mutation_survivors.md)
        """Draw the curve in the paper's Figure-1 style into ``path`` (``.png``, ``.svg``, ...); returns it.

        The metric against ``tau_epoch`` (log x): the seed mean as a line, single seeds as dots, the best grid
        point and the suggested (smoothed) ``tau_epoch`` marked, ``tau_epoch_range`` shaded. Uses matplotlib's Agg
        backend.
        """
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        taus = [p.tau_epoch for p in self.curve]
        fig, ax = plt.subplots(figsize=(6.4, 4.2), constrained_layout=True)
        ax.plot(taus, [p.mean for p in self.curve], "o-", color="tab:blue", label="mean over seeds", markersize=4)
        for p in self.curve:
            ax.plot([p.tau_epoch] * len(p.values), p.values, ".", color="tab:blue", alpha=0.35, markersize=4)
        grid_best = next(p for p in self.curve if p.tau_epoch == self.grid_tau_epoch)
        ax.plot([grid_best.tau_epoch], [grid_best.mean], "s", color="tab:orange", label="best on grid", zorder=3)
        if self.pruned:  # no value on the curve's scale: marked on the bottom edge
            ax.plot(
                [p.tau_epoch for p in self.pruned],
                [0.02] * len(self.pruned),
                "x",
                color="tab:red",
                transform=ax.get_xaxis_transform(),
                label="pruned (not on the curve)",
                clip_on=False,
            )
        ax.axvline(self.tau_epoch, color="black", linestyle=":", alpha=0.8)
        low, high = self.tau_epoch_range
        if math.isfinite(low) and math.isfinite(high):
            ax.axvspan(
                low, high, color="gold", alpha=0.2, label=f"as good as far as the seeds tell: {low:.3g}–{high:.3g}"
            )
        ax.plot(
            [self.tau_epoch],
            [grid_best.mean],
            "*",
            color="gold",
            markeredgecolor="black",
            markersize=15,
            zorder=4,
            label=f"suggested τ_epoch = {self.tau_epoch:.3g}",
        )
        ax.set_xscale("log")
        ax.set_xlabel("τ_epoch = B / (η λ N)  [epochs]")
        ax.set_ylabel(f"{'final' if self.reduce == 'last' else 'best'} {self.monitor}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
        decays = ", ".join(f"{name} {wd:.3g}" for name, wd in self.weight_decay.items())
        ax.set_title(
            f"finder: {self.subset_size} of {self.dataset_size} samples, {self.epochs} epochs\n"
            f"full run (N={self.dataset_size}): weight decay {decays}",
            fontsize="medium",
        )
        fig.savefig(path, dpi=120)
        plt.close(fig)
        return path


def write_json(path: str | Path, data: Any) -> Path:
    """Write ``data`` to ``path`` as indented strict JSON with a trailing newline (parents created); returns the path.

    Example:
        >>> import tempfile
        >>> path = write_json(Path(tempfile.mkdtemp()) / "new" / "r.json", {"tau_epoch": 8.0})
        >>> path.read_text()
        '{\\n  "tau_epoch": 8.0\\n}\\n'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n")
    return path


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _fmt(value: float) -> str:
    return f"{value:.4g}" if math.isfinite(value) else "nan"
