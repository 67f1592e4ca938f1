"""The loop that takes and trains one study's trials in this process, until none is left to take (or, waiting, until
the grid is complete): each trial is one ``(tau_epoch, seed)`` trained by :func:`~lightning_tau.tuner.trial.run_trial`
and finished on its study with the value Optuna is told (:func:`~lightning_tau.tuner.answer.tell_value`). It reads the
finder's :class:`~lightning_tau.tuner.finder_settings.FinderSettings`, not the finder. The module map:
``docs/architecture.rst``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from lightning.pytorch.utilities import rank_zero_only

from lightning_tau._quiet import quiet_sweep
from lightning_tau.tuner.answer import tell_value
from lightning_tau.tuner.finder_settings import FinderSettings
from lightning_tau.tuner.pruning import pruned_sibling
from lightning_tau.tuner.settings import tau_name
from lightning_tau.tuner.study.grid_study import GridStudy, study_folder
from lightning_tau.tuner.study_key import StudyPoint
from lightning_tau.tuner.trial import pruned_record, run_trial, warn_once
from lightning_tau.tuner.workers import Workers, unguarded_script

__all__ = ["POLL_SECONDS", "work_study"]

#: Seconds between looks at the study while waiting for trials that train elsewhere.
POLL_SECONDS = 1.0


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
    show_warnings: bool = True,
    workers: Workers | None = None,
) -> None:
    """Take and train ``study``'s trials on ``point`` (its model factory and training subset) until none is left to
    take; with ``wait``, then until the grid is complete. ``trained()`` is called for each trial this process
    finished; ``warned`` holds the warnings the fit's trials have shown (each shown once, and only with
    ``show_warnings``); ``workers``: this fit's worker processes, whose trials are waited for even without ``wait``."""
    from tqdm.auto import tqdm

    bar = None
    counted: set[tuple[float, int]] = set()  # grid points whose epochs the bar holds
    told_waiting: set[int] = set()
    try:
        while True:
            if workers is not None and workers.unguarded():  # stop now: no worker can start with this script
                raise SystemExit(unguarded_script(settings.workers))
            study.reclaim()
            study.enqueue_missing()
            if bar is not None:  # trials other processes (this fit's workers too) finished: their epochs
                finished = study.records()
                done = set(finished) - counted
                bar.update(sum(int(finished[key].get("epochs_run", settings.epochs)) for key in done))
                counted |= done
            taken = study.take()
            if taken is not None:
                trial, (tau, seed) = taken
                sibling = pruned_sibling(study.records(), tau, seed) if settings.pruner is not None else None
                if sibling is not None:  # a tau_epoch with a pruned seed has no place on the paired curve
                    study.finish(trial, pruned_record(*sibling), math.nan)
                    counted.add((tau, seed))
                    continue
                if bar is None:
                    counted = set(study.records())
                    left = len(study.grid) - len(counted)
                    bar = tqdm(
                        total=max(1, left) * settings.epochs,
                        unit="epoch",
                        desc="tau finder",
                        disable=not settings.progress or rank_zero_only.rank != 0,
                    )
                bar.set_postfix_str(f"tau_epoch={tau:g} seed={seed}")
                shown = warn_once(warned, show=show_warnings, writing=bar.external_write_mode)
                with study.working_on(trial), shown, quiet_sweep():
                    record = run_trial(
                        point.factory,
                        point.train,
                        val,
                        tau_epoch=tau,
                        seed=seed,
                        monitor=settings.monitor,
                        trainer_kwargs=settings.trainer_kwargs,
                        log_dir=settings.root_dir / "tb" / study_folder(study.study.study_name),
                        log_name=f"tau_epoch={tau_name(tau)}_seed{seed}_trial{trial.number}",
                        bar=bar,
                        # the pruner judges a tau_epoch by its first seed's run (against the first seed's runs
                        # at the other tau_epochs); the other seeds of a tau_epoch it kept train in full
                        trial=trial if settings.pruner is not None and seed == settings.seeds[0] else None,
                    )
                minimize = study.study.direction.name == "MINIMIZE"
                value = tell_value(record, settings.monitor, settings.reduce, settings.mode, minimize)
                if study.finish(trial, record, value):
                    trained()
                counted.add((tau, seed))  # its epochs ticked as it trained
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
    finally:
        if bar is not None:
            bar.total = bar.n
            bar.close()
