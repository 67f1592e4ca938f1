"""The finder's axes: the study of each axis point, and the fit's result from their records.

:func:`axis_points` builds the points, :func:`axis_intro` says what they are and :func:`axis_result` turns their records
into the fit's result; each takes the finder's :class:`~lightning_tau.tuner.finder_settings.FinderSettings`, not the
finder.

More: docs/architecture.rst, 'Inside tuner/: the finder's floors'.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

from torch.utils.data import DataLoader

from lightning_tau.tuner.analysis import rules
from lightning_tau.tuner.analysis.beta2_cost import beta2_cost
from lightning_tau.tuner.collect import finder_result, run_value, store_answer
from lightning_tau.tuner.analysis.axis_result import AxisResult
from lightning_tau.tuner.finder_settings import FinderSettings
from lightning_tau.tuner.analysis.grid_extension import RoundPlan, ScaleCurve, lowest_tau_epoch, plan_round
from lightning_tau.tuner.analysis.finder_result import FinderResult
from lightning_tau.tuner.checks import check_subset, check_subset_size, made_model
from lightning_tau.tuner.analysis.scaling import seed_stages, staged_level
from lightning_tau.tuner.study import GridStudy
from lightning_tau.tuner.study_key import StudyPoint, study_settings
from lightning_tau.tuner.trial import ModelCopies, configured_optimizers, subset_dataloader
from lightning_tau.tuner.batch_probe import (
    ACCUMULATION,
    BatchedModel,
    HeldBeta2,
    adam_beta2s,
    batch_setting,
    check_held_beta2,
    lr_attribute,
    rebatched,
)
from lightning_tau.tuner.width_probe import check_mup, probe_width, record_lambda_base

__all__ = [
    "SeedStaging",
    "StudyPoint",
    "axis_intro",
    "axis_points",
    "axis_result",
    "grid_round",
    "held_beta2_cost",
    "held_beta2_round",
    "lowest_point_tau",
    "seed_look",
    "seed_stages",
    "staged_level",
    "undetermined_rules",
]


def axis_points(
    settings: FinderSettings, model: Any, full_train: DataLoader, copies: ModelCopies | None
) -> list[StudyPoint]:
    """The points of the finder's axis, in axis order, each checked before any training: every subset holds a full
    batch and lets the callback set every ``tau_epoch``; along ``"width"``, the model at every width
    (:func:`~lightning_tau.tuner.width_probe.check_mup`) on one subset; along ``"dataset_size"``, one model on the
    subset of every fraction; along ``"fraction"``, one model on one subset. ``model`` is what makes each trial's
    model (``make_model`` along ``"width"``)."""
    axis = settings.axis
    if axis.scaling:  # the whole set as a subset: a loader the finder cannot subset is refused first
        subset_dataloader(full_train, 1.0)
    for fraction in settings.fractions or ():
        check_subset_size(full_train, fraction, "fractions", list(settings.fractions or ()))
    if not settings.fractions:
        check_subset_size(full_train, settings.fraction, "fraction", settings.fraction)
    if axis.model_per_point:  # every point's model on one subset
        assert settings.widths is not None
        train = subset_dataloader(full_train, settings.fraction, settings.subset_seed)
        check_subset(train, "fraction", settings.fraction, settings.tau_epochs, settings.accumulate)
        dataset_size = len(full_train.dataset)  # type: ignore[arg-type]
        probes = {w: probe_width(model, w) for w in settings.widths}
        check_mup(probes)
        points = []
        for w, probe in probes.items():
            key = study_settings(settings, probe, dataset_size, len(train.dataset), train, None)  # type: ignore[arg-type]
            key["axis"] = {"axis": axis.name, axis.value_key: w}
            points.append(StudyPoint(w, functools.partial(model, w), train, key))
        return points
    if axis.batch_per_point:
        return _batch_points(settings, model, full_train, copies)
    # the fraction axis: the dataset-size axis's points with one fraction, keyed without an "axis" (its studies' names)
    along = axis.scaling
    fractions = settings.fractions if settings.fractions is not None else (settings.fraction,)
    argument, value = ("fractions", list(fractions)) if along else ("fraction", settings.fraction)
    trains = []
    probe = made_model(model) if along else None
    for f in fractions:
        train = subset_dataloader(full_train, f, settings.subset_seed)
        check_subset(train, argument, value, settings.tau_epochs, settings.accumulate)
        trains.append(train)
    probe = probe if probe is not None else made_model(model)
    dataset_size = len(full_train.dataset)  # type: ignore[arg-type]
    points = []
    for f, train in zip(fractions, trains):
        key = study_settings(settings, probe, dataset_size, len(train.dataset), train, copies)  # type: ignore[arg-type]
        if along:
            key["fraction"] = f
            key["axis"] = {"axis": axis.name, axis.value_key: f}
        points.append(StudyPoint(f, model, train, key))
    return points


def _batch_points(
    settings: FinderSettings, model: Any, full_train: DataLoader, copies: ModelCopies | None
) -> list[StudyPoint]:
    """The batch-size axis's points: one model on one subset, at every global batch ``B`` of ``batch_sizes`` (its
    ``batch_size`` set and the loader rebuilt at ``B``, else ``B / loader batch`` accumulated), the lr times
    ``(B / B_0) ** m`` (:mod:`lightning_tau.tuner.batch_probe`). With ``β₂`` held (``beta2="held"``, or ``"both"``),
    a ``β₂`` no batch could use is refused first: here where ``configure_optimizers`` can be called without a
    trainer, else by every trial's :class:`~lightning_tau.tuner.batch_probe.HeldBeta2` at its train start, before
    a step. ``beta2="both"``'s held round (``settings.held_beta2_tau``): the largest batch's point alone, ``β₂``
    held, in a study of its own."""
    axis, sizes = settings.axis, settings.batch_sizes
    assert sizes is not None and full_train.batch_size is not None
    base = subset_dataloader(full_train, settings.fraction, settings.subset_seed)
    probe = made_model(model)
    setting = batch_setting(probe, full_train.batch_size, sizes)
    lr_name = lr_attribute(probe, settings.lr_scaling) if axis.lr_exponent else None
    largest = sizes[-1] / sizes[0]
    if settings.beta2 != "fixed":
        optimizers = configured_optimizers(probe)
        if optimizers is not None:
            check_held_beta2(adam_beta2s(optimizers), largest, settings.beta2)
    held_round = settings.held_beta2_tau is not None
    dataset_size = len(full_train.dataset)  # type: ignore[arg-type]
    points = []
    for b in sizes[-1:] if held_round else sizes:
        if setting == ACCUMULATION:
            train, accumulate = base, b // full_train.batch_size
            trainer = {**settings.trainer_kwargs, "accumulate_grad_batches": accumulate}
        else:
            train, accumulate, trainer = rebatched(base, b), 1, None
        held = settings.beta2 == "held" or held_round
        if settings.beta2 != "fixed":  # β₂ ** (B / B_0) (or as it is) at train start, after the user's callbacks' own
            trainer = dict(trainer if trainer is not None else settings.trainer_kwargs)
            callback = HeldBeta2(b / sizes[0] if held else 1.0, largest, settings.beta2)
            trainer["callbacks"] = [*(trainer.get("callbacks") or []), callback]
        check_subset(train, "batch_sizes", list(sizes), settings.tau_epochs, accumulate)
        factor = axis.lr_factor(b, sizes[0])
        key = study_settings(settings, probe, dataset_size, len(train.dataset), train, copies)  # type: ignore[arg-type]
        key["axis"] = {
            "axis": axis.name,
            axis.value_key: b,
            "set_by": setting,
            "accumulate": accumulate,
            "beta2": _beta2_key(settings.beta2, held_round),
        }
        factory = BatchedModel(model, b if setting != ACCUMULATION else None, lr_name, factor)
        shown = f"; β₂ held in samples (β₂^(B / {sizes[0]}))" if held else ""
        suffix = f"_beta2=held_{axis.name}={b:g}" if held_round else None
        points.append(StudyPoint(b, factory, train, key, trainer, setting + shown, suffix))
    return points


def _beta2_key(beta2: str, held_round: bool) -> str:
    """What a batch point's study key says of ``β₂``: ``beta2="both"``'s sweep trains the same runs as ``"fixed"``
    (its callback only checks), so it shares their studies; its held round has its own."""
    if held_round:
        return "held (beta2='both': the largest batch's best tau_epoch)"
    return "fixed" if beta2 == "both" else beta2


def held_beta2_round(settings: FinderSettings, tau_epoch: float) -> FinderSettings:
    """``beta2="both"``'s last round, after the sweep (``settings``: its last round's): the largest batch trains
    ``tau_epoch`` (its best on the grid, with the optimizer's ``β₂``) again with ``β₂`` held in samples, at the same
    seeds, so each pair of runs shares its initialization and batch order; unpruned (every pair runs in full)."""
    return dataclasses.replace(settings, tau_epochs=(tau_epoch,), held_beta2_tau=tau_epoch, pruner=None)


def held_beta2_cost(
    settings: FinderSettings, result: AxisResult, records: dict[tuple[float, int], dict[str, Any]]
) -> AxisResult:
    """``result`` with the paired cost of holding ``β₂`` (:func:`~lightning_tau.tuner.analysis.beta2_cost.beta2_cost`):
    the largest batch's runs at ``settings.held_beta2_tau`` with ``β₂`` fixed (the sweep's) against its held round's
    ``records``, seed by seed, at the finder's ``level``."""
    tau = settings.held_beta2_tau
    assert tau is not None and settings.batch_sizes is not None
    point = next(p for p in result.results[-1].curve if p.tau_epoch == tau)
    fixed = dict(zip(point.seeds, point.values))
    held = {
        seed: run_value(records[(tau, seed)], tau, seed, settings.monitor, settings.reduce, settings.mode)
        for seed in settings.seeds
    }
    cost = beta2_cost(
        fixed,
        held,
        batch_size=settings.batch_sizes[-1],
        reference_batch_size=settings.batch_sizes[0],
        tau_epoch=tau,
        monitor=settings.monitor,
        mode=settings.mode,
        level=settings.level,
    )
    return dataclasses.replace(result, beta2_cost=cost)


def axis_intro(
    settings: FinderSettings, points: Sequence[StudyPoint], studies: Sequence[GridStudy], dataset_size: int
) -> str:
    """What a fit runs, for its first log line: the studies, the axis values, the trials of each and the data every
    trial trains on (the samples per point and the fraction, the epochs, the seeds)."""
    seeds, epochs = len(settings.seeds), settings.epochs
    trials = f"({len(settings.tau_epochs)} tau_epochs x {seeds} seed{'s' if seeds != 1 else ''})"
    for_epochs = f"for {epochs} epoch{'s' if epochs != 1 else ''}"
    sizes = [len(p.train.dataset) for p in points]  # type: ignore[arg-type]
    if not settings.axis.scaling:
        return (
            f"study {studies[0].study.study_name!r} in {studies[0].shown}: {len(settings.grid_order())} trials"
            f" {trials} on {sizes[0]} of {dataset_size} training samples (fraction {settings.fraction:g})"
            f" {for_epochs}"
        )
    if settings.held_beta2_tau is not None:
        b = (settings.batch_sizes or (0,))[-1]
        return (
            f"beta2='both': study {studies[0].study.study_name!r} in {studies[0].shown}: at B={b} the best tau_epoch"
            f" {settings.held_beta2_tau:g} trained again with β₂ held in samples ({seeds} trials, one per seed, paired"
            f" with the sweep's runs at the optimizer's β₂), {for_epochs}"
        )
    if settings.axis.batch_per_point:
        what = f"batch sizes {', '.join(str(b) for b in settings.batch_sizes or ())}, set by {points[0].batch_setting}"
        data = f"every batch size on {sizes[0]} of {dataset_size} training samples (fraction {settings.fraction:g})"
    elif settings.axis.model_per_point:
        what = f"widths {', '.join(str(w) for w in settings.widths or ())}"
        data = f"every width on {sizes[0]} of {dataset_size} training samples (fraction {settings.fraction:g})"
    else:
        what = (
            f"fractions {', '.join(f'{f:g}' for f in settings.fractions or ())} of {dataset_size} training samples:"
            f" N={', '.join(str(n) for n in sizes)}"
        )
        data = "each on its fraction"
    return (
        f"{settings.axis.name} axis: {len(studies)} studies in {studies[0].shown} ({what}),"
        f" {len(settings.tau_epochs) * seeds} trials each {trials}, {data}, {for_epochs}"
    )


def axis_result(
    settings: FinderSettings,
    points: Sequence[StudyPoint],
    records: Sequence[dict[tuple[float, int], dict[str, Any]]],
    studies: Sequence[GridStudy],
    full_train: DataLoader,
    log: Callable[[str], None],
    level: float | None = None,
) -> FinderResult | AxisResult:
    """The fit's result from every point's records, each point's answer stored on its study: on the fraction axis
    the one point's :class:`~lightning_tau.tuner.analysis.finder_result.FinderResult`; else the
    :class:`~lightning_tau.tuner.analysis.axis_result.AxisResult`, along ``"width"`` with the ``λ_base`` of each ``tau_epoch`` (read
    from the first seed's trials at the largest width) and the smallest width's multiplier."""
    dataset_size = len(full_train.dataset)  # type: ignore[arg-type]
    results = []
    for point, point_records, study in zip(points, records, studies):
        result = finder_result(settings, point_records, full_train, dataset_size, len(point.train.dataset))  # type: ignore[arg-type]
        if settings.axis.subsets_per_point:  # each point its own fraction
            result = dataclasses.replace(result, fraction=float(point.value))
        store_answer(study, result, settings, log)  # each point's answer, and what it was computed with, on its study
        results.append(result)
    if not settings.axis.scaling:
        return results[0]
    values = [p.value for p in points]
    level = settings.level if level is None else level
    if settings.axis.model_per_point:
        seed = settings.seeds[0]
        lambda_base = [record_lambda_base(records[-1][(tau, seed)])[0] for tau in settings.tau_epochs]
        base_mult = record_lambda_base(records[0][(settings.tau_epochs[0], seed)])[1]
        return AxisResult.build(
            settings.axis,
            values,
            results,
            lambda_base=lambda_base,
            base_width_mult=base_mult,
            level=level,
            window=settings.window,
            tolerance=settings.tolerance,
        )
    result = AxisResult.build(
        settings.axis, values, results, level=level, window=settings.window, tolerance=settings.tolerance
    )
    if settings.axis.batch_per_point:  # the table says how the batch was set
        result = dataclasses.replace(result, batch_setting=points[0].batch_setting)
    return result


# --- the grid extension: the points a round adds (tuner/analysis/grid_extension.py decides) ----------------------------


def lowest_point_tau(settings: FinderSettings, points: Sequence[StudyPoint]) -> float:
    """The smallest ``tau_epoch`` the grid extension adds: two optimizer steps at the axis point with the fewest
    (:func:`~lightning_tau.tuner.analysis.grid_extension.lowest_tau_epoch`), counted as
    :func:`~lightning_tau.tuner.checks.check_subset` counts a subset's steps."""
    return lowest_tau_epoch([math.ceil(len(p.train) / _accumulate(settings, p)) for p in points])


def _accumulate(settings: FinderSettings, point: StudyPoint) -> int:
    """``accumulate_grad_batches`` of ``point``'s trials: its own (the batch-size axis's) or the finder's."""
    kwargs = point.trainer_kwargs if point.trainer_kwargs is not None else settings.trainer_kwargs
    return int(kwargs.get("accumulate_grad_batches", 1))


def grid_round(
    settings: FinderSettings,
    result: FinderResult | AxisResult,
    *,
    lowest: float,
    at_round: int,
    midpoints: bool,
) -> RoundPlan:
    """The points to add to the grid of ``settings`` after the round whose result is ``result``
    (:func:`~lightning_tau.tuner.analysis.grid_extension.plan_round`): each axis point's curve, and along an axis where each
    published rule puts the largest point's best ``tau_epoch`` when that is off the grid (its cost not measured).
    ``midpoints``: whether the seeds are settled; the midpoints are then added when only the shape part of the
    interval leaves rules undetermined (:meth:`~lightning_tau.tuner.analysis.axis_result.AxisResult.shape_undetermined`)."""
    if isinstance(result, AxisResult):
        results = result.results
        names = [result.axis_object.point_name(v, s) for v, s in zip(result.values, result.scales)]
        rule_taus = _off_grid_rules(result)
        undetermined = undetermined_rules(result)
        shape = result.shape_undetermined()
        shape_only = bool(undetermined) and set(undetermined) <= set(shape)
    else:
        results, names, rule_taus, shape_only = [result], [f"N={result.subset_size}"], [], False
    return plan_round(
        settings.base_tau_epochs,
        settings.tau_epochs,
        [_scale_curve(r, name) for r, name in zip(results, names)],
        mode=settings.mode,
        epochs=settings.epochs,
        lowest=lowest,
        max_extensions=settings.max_grid_extensions,
        at_round=at_round,
        rule_taus=rule_taus,
        midpoints=midpoints and shape_only,
    )


def _scale_curve(result: FinderResult, name: str) -> ScaleCurve:
    """One axis point's curve as the grid extension reads it; its edge is the result's (a pruned point beyond the
    curve's end is no edge)."""
    taus = [p.tau_epoch for p in result.curve]
    edge = None if not result.at_edge else "bottom" if result.grid_tau_epoch == taus[0] else "top"
    return ScaleCurve(name, taus, [p.values for p in result.curve], result.grid_tau_epoch, edge)


def _off_grid_rules(result: AxisResult) -> list[tuple[str, float]]:
    """``(rule name, tau_epoch)`` for each rule that puts the largest point's best ``x`` off the grid (along width
    ``x`` is ``λ_base ∝ 1 / tau_epoch``, so a ``λ_base`` below the grid is a ``tau_epoch`` above it)."""
    taus = [p.tau_epoch for p in result.results[0].curve]
    out = []
    for rule in result.rules:
        x = rule.x_rule
        if x is None or not math.isfinite(x) or x <= 0 or result.xs[0] <= x <= result.xs[-1]:
            continue
        tau = result.x_of_tau(taus[0]) * taus[0] / x if result.axis_object.x_falls_with_tau else x
        out.append((rule.name, tau))
    return out


# --- seeds="auto": seeds in stages until every published rule is decided ---------------------------------------


def undetermined_rules(result: AxisResult, tolerance: float | None = None) -> list[str]:
    """The names of the published rules of ``result``'s axis that its interval leaves undetermined at
    ``tolerance`` (:func:`~lightning_tau.tuner.analysis.rules.decide`): none when every rule holds or is excluded.
    At the result's own tolerance (``None``, the finder's) the band is the result's half-width, computed once by
    ``AxisResult.build``; only another tolerance computes its own."""
    delta = result.half_width
    if tolerance is not None and tolerance != result.tolerance:
        delta = rules.half_width(tolerance, result.scales)
    return [
        r.name
        for r in result.axis_object.rules
        if rules.decide(result.fit.ci, r.exponent, delta) == "undetermined"
    ]


def seed_look(
    result: AxisResult, tolerance: float, stages: Sequence[int], looked: int, level: float
) -> SeedStaging | None:
    """``seeds="auto"`` after its look at ``stages[looked - 1]`` seeds: the staging record where it stops adding
    seeds, else ``None`` (train the next stage's). It stops when every published rule is decided, when every rule
    left undetermined is so only by the shape part of the interval (more seeds cannot decide it; the grid's
    midpoints may), or at the last stage (``max_seeds``)."""
    undetermined = undetermined_rules(result, tolerance)
    shape_only = bool(undetermined) and set(undetermined) <= set(result.shape_undetermined())
    if undetermined and not shape_only and looked < len(stages):
        return None
    return SeedStaging(
        stages[looked - 1], stages[-1], tuple(stages[:looked]), level, tolerance, tuple(undetermined), shape_only
    )


@dataclasses.dataclass(frozen=True)
class SeedStaging:
    """How ``seeds="auto"`` went: the seeds it used, the stages it looked at, and why it stopped.

    Attributes:
        seeds: the seeds the result holds (``0 .. seeds - 1``).
        max_seeds: the most it would have used.
        stages: the seed counts it looked at, in order (the last is ``seeds``).
        level: each look's interval level (:func:`~lightning_tau.tuner.analysis.scaling.staged_level` of the finder's ``level``
            over the planned looks).
        tolerance: the tolerance the rules were decided at.
        undetermined: the rules still undetermined at the last look (empty: every rule decided).
        shape_only: every rule left undetermined is so only by the shape part of the interval: more seeds would not
            decide it, so none were added (:func:`seed_look`).

    Example:
        >>> SeedStaging(8, 12, (3, 5, 8), 0.9875, 1.25, ()).reason
        'stopped at 8 seeds: every published rule decided'
        >>> SeedStaging(12, 12, (3, 5, 8, 12), 0.9875, 1.25, ("Fan et al.",)).reason
        'reached max_seeds=12 with Fan et al. undetermined'
        >>> SeedStaging(5, 12, (3, 5), 0.9875, 1.25, ("Fan et al.",), shape_only=True).reason
        'stopped at 5 seeds: Fan et al. undetermined only by the shape part of the interval, which more seeds do not narrow (points nearer the optimum do)'
    """  # noqa: E501

    seeds: int
    max_seeds: int
    stages: tuple[int, ...]
    level: float
    tolerance: float
    undetermined: tuple[str, ...]
    shape_only: bool = False

    @property
    def decided(self) -> bool:
        """Whether every published rule was decided."""
        return not self.undetermined

    @property
    def reason(self) -> str:
        """Why it stopped, in words."""
        if self.decided:
            return f"stopped at {self.seeds} seeds: every published rule decided"
        if self.shape_only:
            return (
                f"stopped at {self.seeds} seeds: {' and '.join(self.undetermined)} undetermined only by the shape part"
                " of the interval, which more seeds do not narrow (points nearer the optimum do)"
            )
        return f"reached max_seeds={self.max_seeds} with {' and '.join(self.undetermined)} undetermined"

    def sentence(self) -> str:
        """The line the finder prints: the reason, the stages and the level of each look."""
        return (
            f"Seeds (seeds='auto'): {self.reason} (looked at {', '.join(map(str, self.stages))} seeds of at most"
            f" {self.max_seeds}; each look's interval at {self.level:.4g}, tolerance x{self.tolerance:g})."
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: the fields, ``decided`` and ``reason``."""
        return {
            **dataclasses.asdict(self),
            "stages": list(self.stages),
            "undetermined": list(self.undetermined),
            "decided": self.decided,
            "reason": self.reason,
        }
