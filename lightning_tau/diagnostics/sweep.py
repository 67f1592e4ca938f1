"""A sweep read back from TensorBoard: each run's hparams and last scalars, each line's optimum, Figure 1.

More: docs/diagnostics.rst, module notes.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lightning_tau._constants import Goal
from lightning_tau._table import table_lines

__all__ = [
    "DEFAULT_METRICS",
    "Optimum",
    "RunRecord",
    "SweepPlot",
    "default_metric",
    "find_optima",
    "format_optima",
    "load_runs",
    "plot_sweep",
    "setting",
    "shown_metric",
]


#: File name (without suffix) of the figure ``plot`` writes.
FIGURE_STEM = "tau_sweep"


@dataclass
class RunRecord:
    """One run directory: its hparams (first HParams record wins, as in TensorBoard) and last scalar values."""

    path: Path
    hparams: dict[str, Any] = field(default_factory=dict)
    scalars: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Optimum:
    """The best setting of one line (one value of ``group_by``), averaged over seeds.

    Attributes:
        group: the line's ``group_by`` value (e.g. the dataset size).
        weight_decay: weight decay at the optimum.
        tau_epoch: ``tau_epoch`` at the optimum.
        metric: mean metric there.
        runs: runs on this line (all settings, all seeds).
        at_edge: the optimum is the smallest or largest ``tau_epoch`` swept, so the true one may lie outside.
    """

    group: float | str
    weight_decay: float
    tau_epoch: float
    metric: float
    runs: int
    at_edge: bool


@dataclass
class SweepPlot:
    """What :func:`plot_sweep` produced."""

    optima: list[Optimum]
    table: str
    png: Path | None
    svg: Path | None


def _event_files(run_dir: Path) -> list[Path]:
    return sorted(p for p in run_dir.iterdir() if p.is_file() and "tfevents" in p.name)


def load_runs(logdir: Path) -> list[RunRecord]:
    """Every run under ``logdir`` (a directory holding event files), with its hparams and last scalars.

    Event files are read in name (creation-time) order; ``hparams`` merges every HParams record of the run with
    the first value of each key winning, and ``scalars`` keeps the value at the highest step of each tag (the last
    written on ties).
    """
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.plugins.hparams import plugin_data_pb2

    runs: list[RunRecord] = []
    # a link (e.g. in a folder of `dashboards.link_runs`) names a run found under its own folder too: skip it
    run_dirs = sorted({p.parent for p in logdir.rglob("*tfevents*") if p.is_file() and not p.is_symlink()})
    for run_dir in run_dirs:
        record = RunRecord(path=run_dir)
        steps: dict[str, int] = {}
        for event_file in _event_files(run_dir):
            for event in EventFileLoader(str(event_file)).Load():
                if not event.HasField("summary"):
                    continue
                for value in event.summary.value:
                    plugin = value.metadata.plugin_data
                    if plugin.plugin_name == "hparams":
                        data = plugin_data_pb2.HParamsPluginData.FromString(plugin.content)
                        if data.HasField("session_start_info"):
                            for key, hp in data.session_start_info.hparams.items():
                                record.hparams.setdefault(key, _hparam_value(hp))
                        continue
                    number = _scalar_value(value)
                    if number is not None and event.step >= steps.get(value.tag, -1):
                        steps[value.tag] = event.step
                        record.scalars[value.tag] = number
        runs.append(record)
    return runs


def _hparam_value(hp: Any) -> Any:
    kind = hp.WhichOneof("kind")
    return None if kind is None else getattr(hp, kind)


def _scalar_value(value: Any) -> float | None:
    """The number in a scalar summary value, whether written as ``simple_value`` or as a scalar tensor."""
    if value.HasField("simple_value"):
        return float(value.simple_value)
    if value.HasField("tensor") and value.metadata.plugin_data.plugin_name == "scalars":
        from tensorboard.util import tensor_util

        array = tensor_util.make_ndarray(value.tensor)
        return float(array.reshape(-1)[0]) if array.size == 1 else None
    return None


def setting(hparams: dict[str, Any], name: str) -> Any:
    """A run's ``name`` (``tau_epoch``, ``weight_decay`` or a ``--group-by`` hparam), or ``None``.

    Read as the demo records it (``name`` itself), else from the record of
    :class:`~lightning_tau.diagnostics.TimescaleMonitor` (what a run with ``TimescaleCallback``, the quick start or
    ``lightning-tau find`` writes; any prefix): ``tau_epoch`` is ``{prefix}/tau_epoch_target`` (the timescale the
    callback held), else the first group's ``{prefix}/tau_epoch/{group}``; ``weight_decay`` is the first decaying
    group's ``{prefix}/weight_decay/{group}`` (groups in name order); another name ``x`` is ``{prefix}/x``.
    ``weight_decay`` is read from the monitor's record first, even where the model has a ``weight_decay`` hparam:
    that is the value the optimizer used (the callback rewrote the model's placeholder).

    Example:
        >>> record = {"timescale/tau_epoch_target": 5.0, "timescale/weight_decay/bias": 0.0,
        ...           "timescale/weight_decay/pg1": 0.4, "timescale/dataset_size": 1000.0}
        >>> setting(record, "tau_epoch"), setting(record, "weight_decay"), setting(record, "dataset_size")
        (5.0, 0.4, 1000.0)
        >>> setting({"tau_epoch": 2.0, "timescale/tau_epoch_target": 5.0}, "tau_epoch")  # the demo's own first
        2.0
        >>> setting({"weight_decay": 0.01, "timescale/weight_decay/pg1": 0.4}, "weight_decay")  # not a placeholder
        0.4
    """
    if name == "weight_decay":
        written = [hparams[k] for k in sorted(hparams) if "/weight_decay/" in k and _positive(hparams[k])]
        if written:
            return written[0]
    if name in hparams:
        return hparams[name]
    keys = sorted(hparams)
    if name == "tau_epoch":
        candidates = [k for k in keys if k.endswith("/tau_epoch_target")]
        candidates += [k for k in keys if "/tau_epoch/" in k]
    elif name == "weight_decay":
        candidates = [k for k in keys if "/weight_decay/" in k and _positive(hparams[k])]
    else:
        candidates = [k for k in keys if k.endswith(f"/{name}") and k.count("/") == 1]
    return hparams[candidates[0]] if candidates else None


def _record(run: RunRecord) -> dict[str, Any]:
    """What :func:`setting` reads of a run: its hparams, and the weight decay the monitor logged as scalars
    (``{prefix}/weight_decay/{group}``) where the hparams record lacks it (``log_hparams=False``)."""
    logged = {k: v for k, v in run.scalars.items() if "/weight_decay/" in k}
    return {**logged, **run.hparams}


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


#: Metrics ``plot`` tries, in order, when ``--metric`` is not given: the demo's, then what the monitor's record
#: (``hp/...``) and plain Lightning logging name a validation loss.
DEFAULT_METRICS = ("hp/val_loss", "hp/val/loss", "val_loss", "val/loss")


def default_metric(runs: Sequence[RunRecord]) -> str:
    """The first of :data:`DEFAULT_METRICS` that some run logged (the first of them when none did).

    Example:
        >>> default_metric([RunRecord(Path("r"), scalars={"val/loss": 0.3, "hp/val/loss": 0.3})])
        'hp/val/loss'
    """
    logged = {tag for run in runs for tag in run.scalars}
    return next((m for m in DEFAULT_METRICS if m in logged), DEFAULT_METRICS[0])


def _curves(runs: Iterable[RunRecord], metric: str, group_by: str) -> dict[Any, list[tuple[float, float, list[float]]]]:
    """``{group: [(tau_epoch, weight_decay, [metric per seed]), ...]}`` sorted by ``tau_epoch``."""
    table: dict[Any, dict[float, tuple[float, list[float]]]] = defaultdict(dict)
    for run in runs:
        group, tau, wd = (setting(_record(run), name) for name in (group_by, "tau_epoch", "weight_decay"))
        if group is None or tau is None or wd is None or metric not in run.scalars:
            continue
        tau, wd, value = float(tau), float(wd), run.scalars[metric]
        if not math.isfinite(value):
            value = math.inf
        key = round(tau, 9)
        table[group].setdefault(key, (wd, []))[1].append(value)
    return {
        group: [(tau, wd, values) for tau, (wd, values) in sorted(points.items())]
        for group, points in sorted(table.items(), key=lambda item: _sort_key(item[0]))
    }


def _sort_key(group: Any) -> tuple[int, Any]:
    return (0, float(group)) if isinstance(group, (int, float)) else (1, str(group))


def shown_metric(metric: str) -> str:
    """A logged metric's name as a figure shows it: without the ``hp/`` prefix of the HParams record.

    Example:
        >>> shown_metric("hp/val_loss"), shown_metric("val/loss")
        ('val_loss', 'val/loss')
    """
    return metric.removeprefix("hp/")


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def find_optima(
    runs: Iterable[RunRecord], metric: str = "hp/val_loss", group_by: str = "dataset_size", goal: Goal = "min"
) -> list[Optimum]:
    """Per value of ``group_by``, the ``tau_epoch`` (and weight decay) with the best seed-averaged ``metric``.

    Example:
        >>> runs = [RunRecord(Path(f"r{n}_{t}"), {"dataset_size": n, "tau_epoch": t, "weight_decay": 32 / (n * t)},
        ...                   {"loss": abs(t - 10) + n / 1000}) for n in (100, 400) for t in (1.0, 10.0, 100.0)]
        >>> [(o.group, o.tau_epoch, o.weight_decay, o.at_edge) for o in find_optima(runs, "loss")]
        [(100, 10.0, 0.032, False), (400, 10.0, 0.008, False)]
    """
    optima = []
    better = min if goal == "min" else max
    for group, points in _curves(runs, metric, group_by).items():
        means = [_mean(values) for _, _, values in points]
        best = means.index(better(means))
        tau, wd, _ = points[best]
        optima.append(
            Optimum(
                group=group,
                weight_decay=wd,
                tau_epoch=tau,
                metric=means[best],
                runs=sum(len(values) for _, _, values in points),
                at_edge=len(points) > 1 and best in (0, len(points) - 1),
            )
        )
    return optima


def format_optima(optima: Sequence[Optimum], metric: str, group_by: str = "dataset_size") -> str:
    """The optimum table, and how far the optimal weight decay and ``tau_epoch`` moved across the lines.

    Example:
        >>> rows = [Optimum(200, 0.05, 10.0, 0.21, 6, False), Optimum(1400, 0.0071, 10.0, 0.05, 6, False)]
        >>> print(format_optima(rows, "hp/val_loss"))  # doctest: +NORMALIZE_WHITESPACE
        Optimum of hp/val_loss per dataset_size (mean over seeds):
          dataset_size | runs | best weight_decay | best tau_epoch | hp/val_loss
          200          | 6    | 0.05              | 10             | 0.21
          1400         | 6    | 0.0071            | 10             | 0.05
        Across dataset_size 200 -> 1400 (x7): the optimal weight decay fell x7.04, the optimal tau_epoch stayed.
    """
    header = [group_by, "runs", "best weight_decay", "best tau_epoch", metric]
    rows = [
        [
            _fmt(o.group),
            str(o.runs),
            _fmt(o.weight_decay),
            _fmt(o.tau_epoch) + (" (grid edge)" if o.at_edge else ""),
            _fmt(o.metric),
        ]
        for o in optima
    ]
    lines = [f"Optimum of {metric} per {group_by} (mean over seeds):"]
    lines += table_lines(header, rows, rule=False, indent="  ")
    numeric = [o for o in optima if isinstance(o.group, (int, float)) and o.group > 0]
    if len(numeric) >= 2:
        first, last = numeric[0], numeric[-1]
        lines.append(
            f"Across {group_by} {_fmt(first.group)} -> {_fmt(last.group)} (x{_fmt(last.group / first.group)}):"
            f" the optimal weight decay {_moved(first.weight_decay, last.weight_decay)},"
            f" the optimal tau_epoch {_moved(first.tau_epoch, last.tau_epoch)}."
        )
    if any(o.at_edge for o in optima):
        lines.append("An optimum at the grid edge may lie beyond it: widen the tau_epoch grid to be sure.")
    return "\n".join(lines)


def _moved(a: float, b: float) -> str:
    """How a positive value moved from ``a`` to ``b``, in words with the factor: it rose, fell or stayed.

    Example:
        >>> _moved(0.05, 0.0071), _moved(8.0, 5.6), _moved(5.6, 8.0), _moved(10.0, 10.0), _moved(0.0, 1.0)
        ('fell x7.04', 'fell x1.43', 'rose x1.43', 'stayed', 'moved (not comparable)')
    """
    if not (a > 0 and b > 0):
        return "moved (not comparable)"
    if _fmt(max(a, b) / min(a, b)) == "1":
        return "stayed"
    return f"{'rose' if b > a else 'fell'} x{_fmt(max(a, b) / min(a, b))}"


def _fmt(value: Any) -> str:
    """Numbers for the table: whole numbers as integers, others to 3 significant digits.

    Example:
        >>> _fmt(1350.0), _fmt(0.0071234), _fmt(10.0), _fmt("layer")
        ('1350', '0.00712', '10', 'layer')
    """
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e7:
            return str(int(value))
        return f"{value:.3g}"
    return str(value)


def plot_sweep(
    logdir: Path,
    out: Path | None = None,
    *,
    metric: str | None = None,
    group_by: str = "dataset_size",
    goal: Goal = "min",
    formats: Sequence[str] = ("png", "svg"),
    quiet: bool = False,
) -> SweepPlot:
    """Draw ``logdir``'s sweep into ``out/tau_sweep.{png,svg}`` (``out`` defaults to ``logdir``) and print the table.

    ``metric=None`` takes the first of :data:`DEFAULT_METRICS` the runs logged. Runs are read with :func:`setting`:
    a ``lightning-tau demo`` sweep, and runs logged by ``TimescaleCallback`` / ``TimescaleMonitor`` (the quick
    start, ``lightning-tau find``'s ``tb`` folder).

    Raises:
        ValueError: no run under ``logdir`` has ``tau_epoch``, ``weight_decay``, ``group_by`` and ``metric``.
    """
    runs = load_runs(logdir)
    metric = default_metric(runs) if metric is None else metric
    curves = _curves(runs, metric, group_by)
    if not curves:
        raise ValueError(_nothing_to_plot(logdir, runs, metric, group_by))
    optima = find_optima(runs, metric, group_by, goal)
    table = format_optima(optima, metric, group_by)
    out = logdir if out is None else out
    out.mkdir(parents=True, exist_ok=True)
    paths = _draw(curves, optima, metric, group_by, out, formats)
    if not quiet:
        print(table)
        for path in paths.values():
            print(f"Figure: {path}")
    return SweepPlot(optima=optima, table=table, png=paths.get("png"), svg=paths.get("svg"))


def _nothing_to_plot(logdir: Path, runs: Sequence[RunRecord], metric: str, group_by: str) -> str:
    """One line: what is missing from the runs under ``logdir``, and what to pass instead."""
    where = f"under {str(logdir)!r}"
    if not runs:
        return f"No run {where}: no TensorBoard event files. Give a `lightning-tau demo` sweep folder as LOGDIR."
    timed = [r for r in runs if setting(_record(r), "tau_epoch") is not None and setting(_record(r), "weight_decay")]
    if not timed:
        return (
            f"No run {where} records tau_epoch and weight_decay ({len(runs)} runs): log them with TimescaleCallback /"
            " TimescaleMonitor, or give a `lightning-tau demo` sweep folder."
        )
    if not any(metric in r.scalars for r in timed):
        return (
            f"No run {where} logged `{metric}` (--metric); they logged: {_some(t for r in timed for t in r.scalars)}."
        )
    return (
        f"No run {where} has the hparam `{group_by}` (--group-by); they have: "
        f"{_some(k for r in timed for k in r.hparams)}."
    )


def _some(names: Iterable[str], limit: int = 6) -> str:
    """``a, b, c (and 4 more)``: a few of ``names`` (sorted, unique), short enough for a one-line message."""
    unique = sorted(set(names))
    more = f" (and {len(unique) - limit} more)" if len(unique) > limit else ""
    return ", ".join(unique[:limit]) + more


def _draw(
    curves: dict[Any, list[tuple[float, float, list[float]]]],
    optima: Sequence[Optimum],
    metric: str,
    group_by: str,
    out: Path,
    formats: Sequence[str],
) -> dict[str, Path]:
    from lightning_tau.outputs import save_figure  # never over a file the package did not write

    fig = sweep_figure(curves, optima, metric, group_by)
    paths = {fmt: out / f"{FIGURE_STEM}.{fmt}" for fmt in formats}
    save_figure(fig, *paths.values())
    return paths


def sweep_figure(
    curves: dict[Any, list[tuple[float, float, list[float]]]], optima: Sequence[Optimum], metric: str, group_by: str
) -> Any:
    """The figure :func:`plot_sweep` saves: the seed-mean curves against the weight decay and against
    ``tau_epoch``, single seeds as small dots, each group's best grid point as a star (the legend says so), the
    metric named without its ``hp/`` prefix (:func:`shown_metric`). ``curves``: per group, ``(tau_epoch,
    weight_decay, values)`` per grid point."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    best = {o.group: o for o in optima}
    colors = plt.get_cmap("viridis")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    for k, (group, points) in enumerate(curves.items()):
        color = colors(k / max(1, len(curves) - 1) * 0.85)
        label = f"{group_by}={_fmt(group)}"
        means = [_mean(values) for _, _, values in points]
        for ax, xs in ((axes[0], [wd for _, wd, _ in points]), (axes[1], [tau for tau, _, _ in points])):
            ax.plot(xs, means, "o-", color=color, label=label, markersize=4)
            for x, (_, _, values) in zip(xs, points):
                if len(values) > 1:
                    ax.plot([x] * len(values), values, ".", color=color, alpha=0.35, markersize=3)
        o = best[group]
        for ax, x in ((axes[0], o.weight_decay), (axes[1], o.tau_epoch)):
            ax.plot([x], [o.metric], "*", color=color, markersize=15, markeredgecolor="black", zorder=3)
            ax.axvline(x, color=color, linestyle=":", alpha=0.7)
    for ax, xlabel in ((axes[0], "AdamW weight decay λ"), (axes[1], "τ_epoch = B / (η λ N)  [epochs]")):
        ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(shown_metric(metric))
        ax.grid(True, which="both", alpha=0.3)
    if all(v > 0 for points in curves.values() for _, _, values in points for v in values):
        plain = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}")
        for ax in axes:
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(plain)
            ax.yaxis.set_minor_formatter(plain)
    axes[0].set_title("against weight decay")
    axes[1].set_title("against the EMA timescale in epochs")
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, title="★ best grid point\n(seed mean)", fontsize="small", loc="outside right upper")
    fig.suptitle(f"final {shown_metric(metric)}: mean over seeds (small dots: single seeds)", fontsize="medium")
    return fig
