"""What the timescale finder found: the curve's points, the pruned ones, and the result with its table, JSON and plot.

No Lightning import (numpy only; matplotlib is imported by :meth:`FinderResult.plot` when it draws, and
:meth:`FinderResult.callback` imports the callback when asked). :meth:`FinderResult.from_curve` smooths the curve with
:mod:`lightning_tau.tuner.analysis.curve`'s maths; the Lightning side, which trains the runs, is
:mod:`lightning_tau.tuner.finder`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from lightning_tau._constants import Goal
from lightning_tau._table import table_lines
from lightning_tau.outputs import write_json  # every result file is written through the one check there
from lightning_tau.tuner.analysis.curve import optimum_range, smoothed_optimum
from lightning_tau.tuner.analysis.curve import LONG_TIMESCALE
from lightning_tau.tuner.analysis.curve import plateau as flat_top
from lightning_tau.tuner.analysis.grid_extension import MIN_TAU_ITER, AddedPoint, grid_line
from lightning_tau.tuner.analysis.plain import metric_words, plain, plain_ticks, save_figure, thin_ticks, wrap

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
            :func:`~lightning_tau.tuner.analysis.curve.smoothed_optimum`).
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
            (:func:`~lightning_tau.tuner.analysis.curve.optimum_range`); a rerun with other seeds may suggest anything in it.
        pruned: the ``tau_epoch`` values a pruner stopped (:class:`PrunedPoint`), in grid order: not on the curve,
            never the suggestion; their runs' steps count in ``cost``.
        plateau: where the curve is flat at its top and the top is longer than the run
            (:func:`~lightning_tau.tuner.analysis.curve.plateau`): the smallest ``tau_epoch`` from which every larger
            one is within one seed s.d. of the best and not measurably worse (paired over the seeds). Weight decay has no measurable effect
            there; ``tau_epoch`` (the suggestion) is then this value, and a best point on the grid's top edge is no
            edge to widen. ``None`` otherwise.

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
    plateau: float | None = None
    #: the points the finder's grid extension added to the grid given, and why
    #: (:mod:`~lightning_tau.tuner.analysis.grid_extension`)
    grid_added: tuple[AddedPoint, ...] = ()

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
        """Smooth ``curve`` (:func:`~lightning_tau.tuner.analysis.curve.smoothed_optimum` over its seed means) and derive the
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
        flat = None if stopped else flat_top([p.tau_epoch for p in points], [p.values for p in points], mode, epochs)
        suggested = opt.tau_epoch if flat is None else flat  # on a plateau: its start, as good as any larger one
        if flat is not None:
            low = min(low, flat)
        return cls(
            tau_epoch=suggested,
            grid_tau_epoch=best.tau_epoch,
            at_edge=at_edge,
            weight_decay={
                name: weight_decay_for_tau_iter(group_lr, suggested * m) for name, group_lr in lr.items()
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
            smoothed=opt.smoothed and flat is None,
            tau_epoch_range=(low, high),
            pruned=stopped,
            plateau=flat,
        )

    def callback(self, **kwargs: Any) -> Any:
        """The :class:`~lightning_tau.TimescaleCallback` for the full run: ``tau_epoch`` the suggestion.

        ``kwargs`` go to the callback (``verbose``, ``monitor``, ...). It writes ``weight_decay`` into the groups.
        Where the suggestion is at the grid's edge it says so again (a ``UserWarning`` with the :attr:`verdict`): the
        callback then holds an edge value, and the best may lie beyond it.

        Example:
            >>> curve = [CurvePoint(t, [v], [0]) for t, v in [(2.0, 0.4), (8.0, 0.2), (32.0, 0.3)]]
            >>> result = FinderResult.from_curve(curve, lr={"decay": 1e-3}, monitor="val_loss", mode="min",
            ...     reduce="last", fraction=0.25, dataset_size=1000, subset_size=250, batch_size=50, epochs=10,
            ...     full_cost=600)
            >>> round(result.callback(verbose=False).tau_epoch, 2)
            10.08
        """
        from lightning_tau.callback import TimescaleCallback  # Lightning only when asked: this module is pure

        if self.at_edge and self.plateau is None:
            warnings.warn(f"`FinderResult.callback()`: {self.verdict}.", UserWarning, stacklevel=2)
        return TimescaleCallback(tau_epoch=self.tau_epoch, **kwargs)

    @property
    def verdict(self) -> str:
        """One line, in plain words, on how far to trust the suggestion: at the grid's edge, a range as wide as the
        grid, or fine (numbers rounded to 3 significant digits; the exact ones are the attributes).

        Example:
            >>> curve = [CurvePoint(t, [v], [0]) for t, v in [(2.0, 0.4), (8.0, 0.2), (32.0, 0.3)]]
            >>> FinderResult.from_curve(curve, lr={"decay": 1e-3}, monitor="val_loss", mode="min",
            ...     reduce="last", fraction=0.25, dataset_size=1000, subset_size=250, batch_size=50, epochs=10,
            ...     full_cost=600).verdict
            'the seeds cannot tell the whole grid apart (2 to 32): run more seeds or epochs before trusting it'
            >>> curve = [CurvePoint(t, [v], [0]) for t, v in [(2.0, 0.1), (8.0, 0.2), (32.0, 0.3)]]
            >>> FinderResult.from_curve(curve, lr={"decay": 1e-3}, monitor="val_loss", mode="min",
            ...     reduce="last", fraction=0.25, dataset_size=1000, subset_size=250, batch_size=50, epochs=10,
            ...     full_cost=600).verdict
            "the best tau_epoch is the grid's smallest (2), so the best may lie below it: widen the grid"
            >>> curve = [CurvePoint(t, [v], [0]) for t, v in [(2.0, 0.3), (8.0, 0.2), (32.0, 0.1)]]
            >>> FinderResult.from_curve(curve, lr={"decay": 1e-3}, monitor="val_loss", mode="min",
            ...     reduce="last", fraction=0.25, dataset_size=1000, subset_size=250, batch_size=50, epochs=10,
            ...     full_cost=600).verdict  # doctest: +NORMALIZE_WHITESPACE
            "the best tau_epoch is the grid's largest (32), already longer than the run's 10 epochs, where weight
            decay does little: the best may lie above it, toward no decay at all; more seeds would tell whether the
            top is flat (a plateau)"
            >>> curve = [CurvePoint(t, [v], [0]) for t, v in [(0.5, 0.7), (2.0, 0.8), (8.0, 0.9)]]
            >>> FinderResult.from_curve(curve, lr={"decay": 1e-3}, monitor="val_loss", mode="min",
            ...     reduce="last", fraction=0.25, dataset_size=1400, subset_size=350, batch_size=64, epochs=2,
            ...     full_cost=600).verdict  # 6 steps per epoch: tau_epoch 0.125 is 0.75 of a step
            "the best tau_epoch is the grid's smallest (0.5), and a step lower (0.125) would be under 2 optimizer steps of this subset: the strongest decay the finder can set is the best it measured"
        """  # noqa: E501
        low, high = self.tau_epoch_range
        taus = [p.tau_epoch for p in self.curve]
        if len(taus) + len(self.pruned) == 1:
            return f"a grid of one tau_epoch ({plain(taus[0])}) compares it with nothing: give several"
        if self.plateau is not None:
            return (
                "weight decay has no measurable effect on this model at this run length; any tau_epoch >="
                f" {plain(self.plateau)} is as good"
            )
        if self.at_edge and taus and self.grid_tau_epoch == taus[-1] and taus[-1] >= LONG_TIMESCALE * self.epochs:
            return (
                f"the best tau_epoch is the grid's largest ({plain(self.grid_tau_epoch)}), already longer than the"
                f" run's {plain(float(self.epochs))} epochs, where weight decay does little: the best may lie above it,"
                " toward no decay at all; more seeds would tell whether the top is flat (a plateau)"
            )
        if self.at_edge and len(taus) > 1 and self.grid_tau_epoch == taus[0]:
            below = taus[0] ** 2 / taus[1]  # one grid step lower
            subset_steps = math.ceil(self.subset_size / self.batch_size) if self.batch_size else 0
            if subset_steps and below * subset_steps < MIN_TAU_ITER:
                return (
                    f"the best tau_epoch is the grid's smallest ({plain(self.grid_tau_epoch)}), and a step lower"
                    f" ({plain(below)}) would be under {MIN_TAU_ITER:g} optimizer steps of this subset: the strongest"
                    " decay the finder can set is the best it measured"
                )
        if self.at_edge:
            smallest = bool(taus) and self.grid_tau_epoch == taus[0]
            return (
                f"the best tau_epoch is the grid's {'smallest' if smallest else 'largest'}"
                f" ({plain(self.grid_tau_epoch)}), so the best may lie {'below' if smallest else 'above'} it: widen"
                " the grid"
            )
        if taus and low <= taus[0] and high >= taus[-1]:
            return (
                f"the seeds cannot tell the whole grid apart ({plain(low)} to {plain(high)}): run more seeds or"
                " epochs before trusting it"
            )
        return (
            f"the best tau_epoch lies inside the grid, somewhere from {plain(low)} to {plain(high)} (a factor of"
            f" {plain(high / low)})"
        )

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
        data["grid_added"] = [p.to_json() for p in self.grid_added]
        return data

    def save_json(self, path: str | Path) -> Path:
        """Write :meth:`to_json` to ``path`` (parents created); returns the path.

        Raises:
            lightning_tau.outputs.OutputError: ``path`` is an existing file the package did not write (a study's
                journal or database, a file of the user's) or a folder: nothing is written.
        """
        return write_json(path, self.to_json())

    def table(self) -> str:
        """The curve, the suggestion, the full run's weight decay and the cost, as text for a terminal.

        Numbers are rounded for people: settings (``tau_epoch``, weight decays, learning rates, the standard deviation)
        to 3 significant digits, the metric to 4 (its seed means often differ only there); :meth:`to_json` has them
        exact.
        """
        rows = [
            [
                plain(p.tau_epoch),
                _fmt(p.mean),
                plain(p.std),
                ", ".join(_fmt(v) for v in p.values),
                ", ".join(f"{name}={plain(wd)}" for name, wd in p.weight_decay.items()),
                "best on grid" if p.tau_epoch == self.grid_tau_epoch else "",
            ]
            for p in self.curve
        ]
        for p in self.pruned:  # in grid order among the curve's rows
            row = [
                plain(p.tau_epoch),
                "pruned",
                "",
                "",
                ", ".join(f"{n}={plain(wd)}" for n, wd in p.weight_decay.items()),
            ]
            at = next((i for i, q in enumerate(self.curve) if q.tau_epoch > p.tau_epoch), len(self.curve))
            rows.insert(at + sum(q.tau_epoch < p.tau_epoch for q in self.pruned), [*row, p.note])
        seeds = len(self.curve[0].seeds) if self.curve else 0
        points = len(self.curve) + len(self.pruned)
        value = "final" if self.reduce == "last" else "best"
        better = "lower" if self.mode == "min" else "higher"
        lines = [
            f"Timescale finder: {points} tau_epoch{'' if points == 1 else 's'} x"
            f" {seeds} seed{'' if seeds == 1 else 's'}"
            f" on a {plain(self.fraction)} subset ({self.subset_size} of {self.dataset_size} samples), {self.epochs}"
            f" epochs, B={self.batch_size}; {value} {self.monitor} ({better} is better):",
            *table_lines(
                ["tau_epoch", "mean", "std", "per seed", "subset weight decay", "note"], rows, rule=False, indent="  "
            ),
        ]
        suggested, grid_best = plain(self.tau_epoch), plain(self.grid_tau_epoch)
        if self.plateau is not None:
            how = (
                "where the curve's flat top starts: every larger tau_epoch is within one seed s.d. of the best and not"
                " measurably worse (paired over the seeds), and"
                " the longest is longer than the run"
            )
        elif self.smoothed:
            how = (
                f"where a smooth curve through the best grid point ({grid_best}) and its neighbours is"
                f" {'lowest' if self.mode == 'min' else 'highest'}"
            )
        else:
            how = "the best grid point"
        lines.append(f"Suggested tau_epoch: {suggested} ({how}).")
        low, high = self.tau_epoch_range
        if len(self.curve) == 1:
            lines.append("Uncertainty: unknown: a grid of one tau_epoch has nothing to compare it with.")
        elif plain(low) == plain(high):  # no width to 3 significant digits
            lines.append(
                f"Uncertainty: none that the {seeds} seed{'' if seeds == 1 else 's'} show: every resample of them"
                f" suggests {plain(low)}, and no other grid point is as good."
            )
        elif seeds == 1:
            lines.append(
                "Uncertainty: with one seed the noise is unknown, so the range is the best grid point's neighbours,"
                f" {plain(low)} to {plain(high)}."
            )
        else:
            lines.append(
                f"Uncertainty: the {seeds} seeds cannot tell tau_epoch {plain(low)} to {plain(high)} apart from it;"
                " a rerun with other seeds may suggest anything in that range."
            )
        lines.append(f"Verdict: {self.verdict}.")
        lines += [line for line in [grid_line(self.grid_added)] if line]
        if self.pruned:
            stopped = sum(bool(a) for p in self.pruned for a in p.pruned_after)
            untrained = sum(a == 0 for p in self.pruned for a in p.pruned_after)
            lines.append(
                f"Pruned: tau_epoch {', '.join(plain(p.tau_epoch) for p in self.pruned)} (runs: {stopped} stopped"
                f" early, {untrained} not trained); not on the curve: every seed of a tau_epoch must complete to be"
                " compared."
            )
        lines.append(
            f"Weight decay for the full run (N={self.dataset_size}, B={self.batch_size}, {plain(self.steps_per_epoch)}"
            f" steps per epoch), as TimescaleCallback(tau_epoch={suggested}) will set it:"
        )
        lines += table_lines(
            ["group", "lr", "weight decay", "naive (subset's best, kept)"],
            [
                [name, plain(self.lr[name]), plain(wd), plain(self.subset_weight_decay.get(name, math.nan))]
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
        """Draw :meth:`figure` into ``path`` (``.png``, ``.svg``, ...); returns it."""
        return save_figure(self.figure(), path)

    def figure(self) -> Any:  # pragma: no mutate block (drawing; tests/tuner/analysis/test_finder_result.py reads it back)
        """The matplotlib figure :meth:`plot` saves, in the paper's Figure-1 style (Agg backend).

        The metric against ``tau_epoch`` (log x): the seed mean as a line, each seed as a dot, the best grid point,
        the suggested (smoothed) ``tau_epoch`` as a star on the curve, ``tau_epoch_range`` as a band, pruned and
        diverged ``tau_epoch`` values as crosses on the bottom edge; every mark in the legend. A two-line title, the
        verdict and the full run's weight decay in a caption below; tick labels are plain numbers at the grid's
        ``tau_epoch`` values, thinned until none overlaps.
        """
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        fig = plt.figure(figsize=(9.6, 4.7), layout="constrained")
        grid = fig.add_gridspec(2, 1, height_ratios=[7, 1])
        ax, caption = fig.add_subplot(grid[0]), fig.add_subplot(grid[1])
        value = "final" if self.reduce == "last" else "best"
        taus = [p.tau_epoch for p in self.curve]
        means = [p.mean if math.isfinite(p.mean) else math.nan for p in self.curve]
        for p in self.curve:
            ax.plot([p.tau_epoch] * len(p.values), p.values, ".", color="tab:blue", alpha=0.35, markersize=5)
        ax.plot([], [], ".", color="tab:blue", alpha=0.5, markersize=5, label="each seed")
        ax.plot(taus, means, "o-", color="tab:blue", markersize=4, label=f"mean over seeds ({self.monitor})")
        low, high = self.tau_epoch_range
        seeds = len(self.curve[0].seeds) if self.curve else 0
        if math.isfinite(low) and math.isfinite(high) and plain(low) != plain(high):  # a band, when it has width
            words = (
                f"the best grid point's neighbours: {plain(low)} to {plain(high)}"
                if seeds == 1
                else f"the seeds cannot tell {plain(low)} to {plain(high)} apart"
            )
            ax.axvspan(low, high, color="gold", alpha=0.25, lw=0, label=words)
        grid_best = next((p for p in self.curve if p.tau_epoch == self.grid_tau_epoch), None)
        if grid_best is not None:
            ax.plot(
                [grid_best.tau_epoch],
                [grid_best.mean],
                "s",
                color="tab:orange",
                fillstyle="none",
                markersize=11,
                markeredgewidth=2,
                label=f"best on the grid: {plain(grid_best.tau_epoch)}",
                zorder=3,
            )
        finite = [(math.log(t), m) for t, m in zip(taus, means) if math.isfinite(m)]
        if finite:  # the star on the drawn curve (straight between points on the log axis)
            at = float(np.interp(math.log(self.tau_epoch), [x for x, _ in finite], [m for _, m in finite]))
            ax.plot(
                [self.tau_epoch],
                [at],
                "*",
                color="gold",
                markeredgecolor="black",
                markersize=16,
                zorder=4,
                label=f"suggested τ_epoch: {plain(self.tau_epoch)}",
            )
        diverged = [p.tau_epoch for p in self.curve if not math.isfinite(p.mean)]
        for taus_here, marker, color, label in (
            ([p.tau_epoch for p in self.pruned], "x", "tab:red", "pruned (not on the curve)"),
            (diverged, "v", "tab:purple", "a seed diverged (no mean)"),
        ):
            if taus_here:  # no value on the curve's scale: marked on the bottom edge
                ax.plot(
                    taus_here,
                    [0.02] * len(taus_here),
                    marker,
                    color=color,
                    linestyle="none",
                    transform=ax.get_xaxis_transform(),
                    label=label,
                    clip_on=False,
                    zorder=5,
                )
        ax.set_xscale("log")
        ax.set_xlabel("τ_epoch: the weight decay's timescale, in epochs (B / (η λ N))")
        ax.set_ylabel(f"{value} {metric_words(self.monitor)}")
        ax.ticklabel_format(axis="y", style="plain", useOffset=False)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
        ax.set_title(
            f"Timescale finder: {value} {metric_words(self.monitor)} against τ_epoch\n"
            f"{seeds} seed{'s' if seeds != 1 else ''}, each run on {self.subset_size} of {self.dataset_size} training"
            f" samples for {self.epochs} epochs",
            fontsize="medium",
        )
        caption.axis("off")
        caption.text(0.0, 1.0, wrap(self._figure_caption(), 130), va="top", ha="left", fontsize="small")
        plain_ticks(ax.xaxis, taus + [p.tau_epoch for p in self.pruned])
        fig.canvas.draw()
        for axis in (ax.xaxis, ax.yaxis):
            thin_ticks(axis)
        return fig

    def _figure_caption(self) -> str:  # pragma: no mutate block (the figure only)
        """The figure's caption: the suggestion, the verdict and the full run's weight decay per group."""
        decays = ", ".join(f"{plain(wd)} for '{name}'" for name, wd in self.weight_decay.items())
        return (
            f"Suggested τ_epoch {plain(self.tau_epoch)}: {self.verdict}. Full run (N={self.dataset_size},"
            f" B={self.batch_size}): weight decay {decays or 'none (no group decays)'}, as"
            f" TimescaleCallback(tau_epoch={plain(self.tau_epoch)}) sets it."
        )


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _fmt(value: float) -> str:
    return f"{value:.4g}" if math.isfinite(value) else "nan"
