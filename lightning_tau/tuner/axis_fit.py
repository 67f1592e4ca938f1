"""The finder's width and dataset-size axes: the study of each axis point, and the axis's result from their answers.

Along ``axis="width"`` or ``"dataset_size"``, :meth:`~lightning_tau.tuner.finder.TimescaleFinder.fit` runs the same
sweep at every point of the axis, each point a study of its own: :func:`axis_points` builds the points
(a model factory, a training subset and the study's settings each, checked before any training), :func:`axis_intro`
says what they are, and :func:`axis_result` turns the points' records into their answers and the
:class:`~lightning_tau.tuner.axes.AxisResult`. The trials themselves run as on the fraction axis (one study).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import lightning.pytorch as pl
from torch.utils.data import DataLoader

from lightning_tau.tuner import rules
from lightning_tau.tuner.answer import finder_result, store_answer
from lightning_tau.tuner.axes import AxisResult
from lightning_tau.tuner.settings import check_subset, made_model
from lightning_tau.tuner.stats import seed_stages, staged_level
from lightning_tau.tuner.study import GridStudy
from lightning_tau.tuner.study_key import study_settings
from lightning_tau.tuner.trial import ModelCopies, subset_dataloader
from lightning_tau.tuner.width_probe import check_mup, probe_width, record_lambda_base

if TYPE_CHECKING:
    from lightning_tau.tuner.finder import TimescaleFinder

__all__ = [
    "SeedStaging",
    "StudyPoint",
    "axis_intro",
    "axis_points",
    "axis_result",
    "seed_stages",
    "staged_level",
    "undetermined_rules",
]


class StudyPoint(NamedTuple):
    """One study of a fit: the fraction axis has one, the width and dataset-size axes one per point."""

    #: the axis value (a width or a fraction; on the fraction axis, ``fraction``)
    value: float
    #: what makes each trial's model
    factory: Callable[[], pl.LightningModule]
    #: the training subset's loader
    train: DataLoader
    #: the study's settings (:func:`~lightning_tau.tuner.study_key.study_settings`)
    settings: dict[str, Any]


def axis_points(
    finder: TimescaleFinder, model: Any, full_train: DataLoader, copies: ModelCopies | None
) -> list[StudyPoint]:
    """The points of ``finder``'s axis, in axis order, each checked before any training: along ``"width"``, the
    model at every width (:func:`~lightning_tau.tuner.width_probe.check_mup`) on one subset; along
    ``"dataset_size"``, one model on the subset of every fraction."""
    dataset_size = len(full_train.dataset)  # type: ignore[arg-type]
    accumulate = int(finder.trainer_kwargs.get("accumulate_grad_batches", 1))
    points: list[StudyPoint] = []
    if finder.axis == "width":
        assert finder.widths is not None
        train = subset_dataloader(full_train, finder.fraction, finder.subset_seed)
        check_subset(train, "fraction", finder.fraction, finder.tau_epochs, accumulate)
        probes = {w: probe_width(model, w) for w in finder.widths}
        check_mup(probes)
        for w, probe in probes.items():
            settings = study_settings(finder, probe, dataset_size, len(train.dataset), train, None)  # type: ignore[arg-type]
            settings["axis"] = {"axis": "width", "width": w}
            points.append(StudyPoint(w, functools.partial(model, w), train, settings))
        return points
    assert finder.fractions is not None
    factory: Callable[[], pl.LightningModule] = copies if copies is not None else model
    probe = made_model(factory)
    for f in finder.fractions:
        train = subset_dataloader(full_train, f, finder.subset_seed)
        check_subset(train, "fractions", list(finder.fractions), finder.tau_epochs, accumulate)
        settings = study_settings(finder, probe, dataset_size, len(train.dataset), train, copies)  # type: ignore[arg-type]
        settings["fraction"] = f
        settings["axis"] = {"axis": "dataset_size", "fraction": f}
        points.append(StudyPoint(f, factory, train, settings))
    return points


def axis_intro(finder: TimescaleFinder, studies: Sequence[GridStudy], dataset_size: int) -> str:
    """What an axis fit runs, for its first log line: the studies, the axis values and the trials of each."""
    what = (
        f"widths {', '.join(str(w) for w in finder.widths or ())}"
        if finder.axis == "width"
        else f"fractions {', '.join(f'{f:g}' for f in finder.fractions or ())} of {dataset_size} samples"
    )
    return (
        f"{finder.axis} axis: {len(studies)} studies in {studies[0].shown} ({what}),"
        f" {len(finder.tau_epochs) * len(finder.seeds)} trials each ({len(finder.tau_epochs)} tau_epochs x"
        f" {len(finder.seeds)} seeds) for {finder.epochs} epochs"
    )


def axis_result(
    finder: TimescaleFinder,
    points: Sequence[StudyPoint],
    records: Sequence[dict[tuple[float, int], dict[str, Any]]],
    full_train: DataLoader,
    log: Callable[[str], None],
    level: float | None = None,
) -> AxisResult:
    """The :class:`~lightning_tau.tuner.axes.AxisResult` of ``finder``'s axis from every point's records (each
    point's answer stored on its study, :attr:`TimescaleFinder.studies`); along ``"width"`` with the ``λ_base`` of
    each ``tau_epoch`` (read from the first seed's trials at the largest width) and the smallest width's multiplier."""
    dataset_size = len(full_train.dataset)  # type: ignore[arg-type]
    results = []
    for point, point_records, study in zip(points, records, finder.studies):
        result = finder_result(finder, point_records, full_train, dataset_size, len(point.train.dataset))  # type: ignore[arg-type]
        if finder.axis == "dataset_size":
            result = dataclasses.replace(result, fraction=float(point.value))
        store_answer(study, result, finder, log)  # each point's answer, and what it was computed with, on its study
        results.append(result)
    values = [p.value for p in points]
    level = finder.level if level is None else level
    if finder.axis == "width":
        seed = finder.seeds[0]
        lambda_base = [record_lambda_base(records[-1][(tau, seed)])[0] for tau in finder.tau_epochs]
        base_mult = record_lambda_base(records[0][(finder.tau_epochs[0], seed)])[1]
        return AxisResult.build(
            "width",
            values,
            results,
            lambda_base=lambda_base,
            base_width_mult=base_mult,
            level=level,
            window=finder.window,
            tolerance=finder.tolerance,
        )
    return AxisResult.build(
        "dataset_size", values, results, level=level, window=finder.window, tolerance=finder.tolerance
    )


# --- seeds="auto": seeds in stages until every published rule is decided ---------------------------------------


def undetermined_rules(result: AxisResult, tolerance: float) -> list[str]:
    """The names of the published rules of ``result``'s axis that its interval leaves undetermined at
    ``tolerance`` (:func:`~lightning_tau.tuner.rules.decide`): none when every rule holds or is excluded."""
    delta = rules.half_width(tolerance, result.scales)
    return [
        r.name for r in rules.rules_for(result.axis) if rules.decide(result.fit.ci, r.exponent, delta) == "undetermined"
    ]


@dataclasses.dataclass(frozen=True)
class SeedStaging:
    """How ``seeds="auto"`` went: the seeds it used, the stages it looked at, and why it stopped.

    Attributes:
        seeds: the seeds the result holds (``0 .. seeds - 1``).
        max_seeds: the most it would have used.
        stages: the seed counts it looked at, in order (the last is ``seeds``).
        level: each look's interval level (:func:`~lightning_tau.tuner.stats.staged_level` of the finder's ``level``
            over the planned looks).
        tolerance: the tolerance the rules were decided at.
        undetermined: the rules still undetermined at the last look (empty: every rule decided).

    Example:
        >>> SeedStaging(8, 12, (3, 5, 8), 0.9875, 1.25, ()).reason
        'stopped at 8 seeds: every published rule decided'
        >>> SeedStaging(12, 12, (3, 5, 8, 12), 0.9875, 1.25, ("Fan et al.",)).reason
        'reached max_seeds=12 with Fan et al. undetermined'
    """

    seeds: int
    max_seeds: int
    stages: tuple[int, ...]
    level: float
    tolerance: float
    undetermined: tuple[str, ...]

    @property
    def decided(self) -> bool:
        """Whether every published rule was decided."""
        return not self.undetermined

    @property
    def reason(self) -> str:
        """Why it stopped, in words."""
        if self.decided:
            return f"stopped at {self.seeds} seeds: every published rule decided"
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
