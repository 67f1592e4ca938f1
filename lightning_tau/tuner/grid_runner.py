"""The loop that takes and trains one study's trials in this process, until none is left to take (or, waiting, until
the grid is complete): each trial is one ``(tau_epoch, seed)`` trained by :func:`~lightning_tau.tuner.trial.run_trial`
and finished on its study with the value Optuna is told (:func:`~lightning_tau.tuner.collect.tell_value`). It reads the
finder's :class:`~lightning_tau.tuner.finder_settings.FinderSettings`, not the finder. The module map:
``docs/architecture.rst``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from lightning.pytorch.utilities import rank_zero_only

from lightning_tau._quiet import quiet_sweep
from lightning_tau.tuner.collect import tell_value
from lightning_tau.tuner.finder_settings import FinderSettings
from lightning_tau.tuner.pruning import pruned_sibling
from lightning_tau.tuner.checks import tau_name
from lightning_tau.tuner.study import GridStudy, study_folder
from lightning_tau.tuner.study_key import StudyPoint
from lightning_tau.tuner.trial import pruned_record, run_trial, warn_once
from lightning_tau.tuner.workers import Workers, sigint_seen, unguarded_script

__all__ = ["POLL_SECONDS", "FitProgress", "work_study"]

#: Seconds between looks at the study while waiting for trials that train elsewhere.
POLL_SECONDS = 1.0

class FitProgress:
    """One progress line for every study a run of the finder trains (``TimescaleFinder._run``: every point of the
    axis), in epochs: its total is the epochs of the runs not complete when it was made (this process's and its
    workers'), and its ETA tqdm's average rate over all of them (``smoothing=0``), not one study's. The line says
    which point trains and which run: ``tau finder, size 2 of 2: ... run 70 of 128: tau_epoch=5 seed=3``. Made
    anew for each ``_run`` call (a later seed stage or grid round: its own total); the bar itself appears with the
    first trial this process trains (none on a rerun that trains nothing); silent with ``settings.progress`` off
    or off rank zero.

    Args:
        settings: the finder's settings (``epochs``, ``progress``, ``axis``).
        studies: the studies, in axis order.
    """

    def __init__(
        self, settings: FinderSettings, studies: list[GridStudy], samples: Sequence[int] | None = None
    ) -> None:
        self.epochs = settings.epochs
        self.enabled = bool(settings.progress) and rank_zero_only.rank == 0
        self.studies = studies
        # what one point is called on the progress line ("size 2 of 2"); the fraction axis has one point
        self.noun = settings.axis.point_noun if len(studies) > 1 else None
        self.runs = sum(len(study.grid) for study in studies)
        # an epoch's weight per study: its samples where the points train on different sizes (an epoch at N=2048
        # costs 4 at N=512: counted in epochs, the ETA while the small size trains was a third of the truth), else 1
        sizes = list(samples) if samples is not None else [1] * len(studies)
        self.unit = "sample" if len(set(sizes)) > 1 else "epoch"
        self.weights = sizes if self.unit == "sample" else [1] * len(studies)
        # per study, the grid points whose epochs the bar holds (or that were complete before it)
        self.counted: list[set[tuple[float, int]]] = [set(study.records()) for study in studies]
        self.total = sum(
            (len(study.grid) - len(counted)) * self.epochs * weight
            for study, counted, weight in zip(studies, self.counted, self.weights)
        )
        self.bar: Any = None

    @property
    def done(self) -> int:
        """The runs complete, in every study (by any process)."""
        return sum(len(c) for c in self.counted)

    def description(self, study: GridStudy) -> str:
        """``"tau finder"``, and which point: ``"tau finder, size 2 of 2"``."""
        if self.noun is None:
            return "tau finder"
        return f"tau finder, {self.noun} {self.studies.index(study) + 1} of {len(self.studies)}"

    def start(self, study: GridStudy, tau: float, seed: int) -> Any:
        """The bar, made on the first call, showing ``study``'s point and the run about to train; returned for the
        trial to tick per epoch."""
        from tqdm.auto import tqdm

        if self.bar is None:
            self.bar = tqdm(
                total=max(1, self.total),
                unit=self.unit,
                unit_scale=self.unit == "sample",  # 1.2M/20.5M samples
                desc=self.description(study),
                smoothing=0,  # the ETA from the average rate of the whole fit, not of the last few epochs
                disable=not self.enabled,
            )
        self.bar.set_description_str(self.description(study), refresh=False)
        self.bar.set_postfix_str(f"run {min(self.done + 1, self.runs)} of {self.runs}: tau_epoch={tau:g} seed={seed}")
        weight = self.weights[self.studies.index(study)]
        return self.bar if weight == 1 else _Weighted(self.bar, weight)

    def finished_elsewhere(self, study: GridStudy) -> None:
        """Tick the epochs of ``study``'s runs that other processes finished since the last look."""
        i = self.studies.index(study)
        finished = study.records()
        new = set(finished) - self.counted[i]
        if self.bar is not None and new:
            epochs = sum(int(finished[key].get("epochs_run", self.epochs)) for key in new)
            self.bar.update(epochs * self.weights[i])
        self.counted[i] |= new

    def count(self, study: GridStudy, key: tuple[float, int]) -> None:
        """``key``'s run is complete (its epochs ticked as it trained, or none: a pruned sibling)."""
        self.counted[self.studies.index(study)].add(key)

    def close(self) -> None:
        """Close the bar at what it counted (pruned runs end early)."""
        if self.bar is not None:
            self.bar.total = self.bar.n
            self.bar.close()


class _Weighted:
    """The fit's bar as one trial ticks it: each epoch counts ``weight`` (the point's samples)."""

    def __init__(self, bar: Any, weight: int) -> None:
        self.bar, self.weight = bar, weight

    def update(self, n: float = 1) -> None:
        self.bar.update(n * self.weight)

    def external_write_mode(self) -> Any:
        return self.bar.external_write_mode()


def work_study(
    study: GridStudy,
    settings: FinderSettings,
    point: StudyPoint,
    val: Any,
    *,
    wait: bool,
    log: Callable[[str], None],
    trained: Callable[[], None],
    warned: set[tuple[type, str]],
    progress: FitProgress,
    show_warnings: bool = True,
    workers: Workers | None = None,
) -> None:
    """Take and train ``study``'s trials on ``point`` (its model factory and training subset) until none is left to
    take; with ``wait``, then until the grid is complete. ``trained()`` is called for each trial this process
    finished; ``warned`` holds the warnings the fit's trials have shown (each shown once, and only with
    ``show_warnings``); ``progress``: the fit's one progress line (:class:`FitProgress`), ticked per epoch;
    ``workers``: this fit's worker processes, whose trials are waited for even without ``wait``."""
    told_waiting: set[int] = set()
    while True:
        if workers is not None and workers.unguarded():  # stop now: no worker can start with this script
            raise SystemExit(unguarded_script(settings.workers))
        if sigint_seen():  # a worker's Ctrl-C whose KeyboardInterrupt was swallowed on its way: no trial after it
            raise KeyboardInterrupt
        study.reclaim()
        study.enqueue_missing()
        progress.finished_elsewhere(study)  # trials other processes (this fit's workers too) finished: their epochs
        taken = study.take()
        if taken is not None:
            trial, (tau, seed) = taken
            sibling = pruned_sibling(study.records(), tau, seed) if settings.pruner is not None else None
            if sibling is not None:  # a tau_epoch with a pruned seed has no place on the paired curve
                study.finish(trial, pruned_record(*sibling), math.nan)
                progress.count(study, (tau, seed))
                continue
            bar = progress.start(study, tau, seed)
            shown = warn_once(warned, show=show_warnings, writing=bar.external_write_mode)
            with study.working_on(trial), shown, quiet_sweep():
                # the point's own Trainer arguments where it has them (the batch-size axis's accumulation)
                own = point.trainer_kwargs
                record = run_trial(
                    point.factory,
                    point.train,
                    val,
                    tau_epoch=tau,
                    seed=seed,
                    monitor=settings.monitor,
                    trainer_kwargs=own if own is not None else settings.trainer_kwargs,
                    log_dir=settings.root_dir / "tb" / study_folder(study.study.study_name),
                    log_name=f"tau_epoch={tau_name(tau)}_seed{seed}_trial{trial.number}",
                    bar=bar,
                    # the pruner judges a tau_epoch by its first seed's run (against the first seed's runs
                    # at the other tau_epochs); the other seeds of a tau_epoch it kept train in full
                    trial=trial if settings.pruner is not None and seed == settings.seeds[0] else None,
                    interrupted=sigint_seen,
                )
            minimize = study.study.direction.name == "MINIMIZE"
            value = tell_value(record, settings.monitor, settings.reduce, settings.mode, minimize)
            if study.finish(trial, record, value):
                trained()
            progress.count(study, (tau, seed))  # its epochs ticked as it trained
            continue
        if len(study.records()) == len(study.grid):
            return
        if not wait:
            if workers is not None and workers.alive():  # this command's own workers: theirs is ours
                time.sleep(POLL_SECONDS)
                continue
            return
        running = study.running_elsewhere()
        new = [t for t in running if t.number not in told_waiting]
        if new:
            told_waiting.update(t.number for t in new)
            where = ", ".join(
                f"#{t.number} on {t.user_attrs.get('worker', {}).get('host', '?')}"
                f" pid {t.user_attrs.get('worker', {}).get('pid', '?')}"
                for t in new[:4]
            )
            log(f"waiting for {len(running)} trials training elsewhere ({where}).")
        time.sleep(POLL_SECONDS)
