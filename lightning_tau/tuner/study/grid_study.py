"""The finder's Optuna study: the ``(tau_epoch, seed)`` grid as enqueued trials that any number of processes share.

:class:`GridStudy` enqueues, takes, finishes and reclaims them, so every grid point is trained once and the answer does
not depend on who trained what.

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.storages import BaseStorage, RDBStorage
from optuna.trial import FrozenTrial, TrialState

from lightning_tau.errors import TimescaleError
from lightning_tau.tuner.study.folder import study_folder
from lightning_tau.tuner.study.liveness import (
    HEARTBEAT_SECONDS,
    MACHINE,
    STALE_SECONDS,
    claim_token,
    heartbeat_seconds,
    is_alive,
    stop_reason,
    this_worker,
)
from lightning_tau.tuner.study.storage import (
    Log,
    StorageError,
    open_storage,
    redact_message,
    retry_races,
    signals_held,
)
from lightning_tau.tuner.study.take_lock import file_lock, sqlite_take_lock
from lightning_tau.tuner.trial import check_record

__all__ = [
    "SETTINGS_GRACE",
    "GridStudy",
    "StudyMismatchError",
    "quiet_optuna",
    "set_user_attr",
    "settled_user_attrs",
    "sqlite_take_lock",
    "study_folder",
]

#: Bumped when the study's layout (user attributes, trial records) changes.
STUDY_FORMAT = 2
#: The study's user attribute holding the sweep's settings.
SETTINGS_ATTR = "lightning_tau"
#: The user attribute of a batch-size sweep's point study holding the ``beta2`` the last sweep that opened it asked for
#: (``"fixed"``, ``"held"``, ``"both"``). ``"both"``'s sweep shares the fixed sweep's studies, whose settings say
#: ``"fixed"``: this tells ``--study NAME`` alone that a sweep stopped before its held round was asked for both.
BETA2_ATTR = "beta2_requested"
#: The user attribute a worker writes on a waiting trial before it takes it: ``CLAIM_PREFIX`` + this process's token.
CLAIM_PREFIX = "claim/"

Key = tuple[float, int]
#: The range a trial's ``tau_epoch`` parameter is recorded in: every positive finite float.
TAU_RANGE = (sys.float_info.min, sys.float_info.max)
#: The states of a trial that is done with: its record is the grid point's.
_FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)


#: Seconds a study with neither settings nor trials is given for its settings to appear: another process may have
#: created it a moment ago (Optuna creates a study and writes its attributes in two writes).
SETTINGS_GRACE = 30.0


def set_user_attr(study: optuna.Study, key: str, value: Any) -> None:
    """Set ``study``'s user attribute ``key`` to ``value`` (JSON), writing nothing where it holds ``value`` already (a
    rerun's answer, config or ``beta2`` adds no line to a journal)."""
    attrs = study.user_attrs
    if key not in attrs or attrs[key] != value:
        study.set_user_attr(key, value)


def settled_user_attrs(
    study: optuna.Study, grace: float = SETTINGS_GRACE, pause: Callable[[], None] | None = None
) -> dict[str, Any]:
    """``study``'s user attributes, once they hold the finder's settings (:data:`SETTINGS_ATTR`), or at once where
    it has trials (a study with trials and no settings is not the finder's) or after ``grace`` seconds.

    Several processes started at once on a fresh storage: one creates the study and then writes its settings; one
    that reads the study between the two writes would take it for a study the finder did not make. ``pause`` is
    called between two reads (default: a tenth of a second's sleep).
    """
    deadline = time.monotonic() + grace
    while True:
        attrs = study.user_attrs
        if SETTINGS_ATTR in attrs or study.get_trials(deepcopy=False) or time.monotonic() >= deadline:
            return attrs
        (pause or (lambda: time.sleep(0.1)))()


class StudyMismatchError(TimescaleError):
    """A named study holds a sweep with other settings (a usage error: the name or the settings are wrong)."""


@contextlib.contextmanager
def quiet_optuna() -> Iterator[None]:
    """Optuna's INFO and WARNING lines (study created, trial failed) off while the finder talks to the study."""
    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(level)


class GridStudy:
    """An Optuna study holding one trial per ``(tau_epoch, seed)`` of the finder's grid (see the module's rules).

    Open it with :meth:`open`; then, in any number of processes, :meth:`reclaim` and :meth:`enqueue_missing`,
    :meth:`take` a trial, train it and :meth:`finish` it; :meth:`records` gives every grid point's record.
    """

    def __init__(
        self,
        study: optuna.Study,
        storage: BaseStorage,
        shown: str,
        grid: Sequence[Key],
        *,
        stale_after: float = STALE_SECONDS,
        heartbeat: float = HEARTBEAT_SECONDS,
        log: Log | None = None,
    ) -> None:
        self.study = study
        self.storage = storage
        #: the storage, printable (a URL's password as ``***``)
        self.shown = shown
        self.grid = list(grid)
        self._grid = set(self.grid)
        self.stale_after = float(stale_after)
        self.heartbeat = float(heartbeat)
        self.log: Log = log or (lambda message: None)
        #: the grid's seeds may grow between processes (see :meth:`open`)
        self.seeds_grow = False
        self._reported: set[int] = set()
        #: trials this process took and has not finished: :meth:`release` fails them
        self._held: dict[int, optuna.Trial] = {}
        self._take_lock = sqlite_take_lock(storage)
        self._beats = isinstance(storage, RDBStorage) and storage.get_heartbeat_interval() is not None
        #: seconds without a sign of life after which another worker takes over a trial: the database heartbeat's
        #: grace where there is one, else ``stale_after`` (a journal file on another machine)
        self.grace = float(_grace(storage)) if self._beats else self.stale_after

    @classmethod
    def open(
        cls,
        storage: str | Path | BaseStorage | None,
        root_dir: Path,
        study_name: str,
        settings: Mapping[str, Any],
        grid: Sequence[Key],
        *,
        direction: str = "minimize",
        stale_after: float = STALE_SECONDS,
        heartbeat: float | None = None,
        log: Log | None = None,
        pruner: optuna.pruners.BasePruner | None = None,
        seeds_grow: bool = False,
    ) -> GridStudy:
        """Create or load ``study_name`` in ``storage`` and check that it holds this sweep.

        ``heartbeat``: seconds between a worker's signs of life (``None``: :func:`heartbeat_seconds`). Several
        processes may open the same new study at once: the one that loses a race to create it tries again.
        ``pruner``: the study's Optuna pruner (``None``: none; a pruner is not stored, each process gives its own).
        ``seeds_grow``: later processes may add seeds to the grid (``seeds="auto"``): a trial's seed is then recorded
        as an integer parameter, since Optuna refuses a categorical parameter whose choices change within a study.

        Raises:
            ValueError: the storage cannot be opened or written, or the study holds a sweep with other settings
                (the message names each difference).
        """
        heartbeat = heartbeat_seconds() if heartbeat is None else heartbeat
        backend, shown = open_storage(storage, root_dir, max(1, round(heartbeat)), log=log)
        mine = {"format": STUDY_FORMAT, "settings": dict(settings)}

        def create() -> tuple[optuna.Study, Any]:
            study = optuna.create_study(
                storage=backend,
                study_name=study_name,
                direction=direction,
                load_if_exists=True,
                sampler=optuna.samplers.RandomSampler(seed=0),  # never samples: every trial is enqueued
                pruner=pruner if pruner is not None else optuna.pruners.NopPruner(),
            )
            stored = study.user_attrs.get(SETTINGS_ATTR)
            if stored is None:
                # two first openers at once: a journal keeps the last write, a database refuses the second
                # (a duplicate key), whose opener then tries again and reads the first
                study.set_user_attr(SETTINGS_ATTR, mine)
                stored = study.user_attrs.get(SETTINGS_ATTR)
            return study, stored

        with quiet_optuna(), file_lock(sqlite_take_lock(backend)):  # SQLite: one opener at a time, as one take
            try:
                study, stored = retry_races(create)
            except StorageError:
                raise
            except Exception as err:
                raise StorageError(
                    shown,
                    f"cannot open the study {study_name!r}: {type(err).__name__}:"
                    f" {redact_message(str(err), str(storage))[:300]}.",
                ) from None
        if stored != mine:
            raise StudyMismatchError(
                f"`TimescaleFinder(study_name={study_name!r})`: the study in {shown} holds a sweep with other"
                f" settings: {_differences(stored, mine)}. Use another study name (the default is named after"
                " the settings), or the study's settings."
            )
        opened = cls(study, backend, shown, grid, stale_after=stale_after, heartbeat=heartbeat, log=log)
        opened.seeds_grow = seeds_grow
        return opened

    # --- reading ------------------------------------------------------------------------------------------------

    def _trials(self, states: tuple[TrialState, ...] | None = None) -> list[FrozenTrial]:
        return sorted(self.study.get_trials(deepcopy=False, states=states), key=lambda t: t.number)

    def _valid(self, trial: FrozenTrial) -> bool:
        """A complete trial whose record a result can be computed from, or a pruned one whose record says so (a
        malformed one is reported once)."""
        record = trial.user_attrs.get("record")
        why = check_record(record)
        if why is None and (trial.state == TrialState.PRUNED) != ("pruned" in record):  # type: ignore[operator]
            why = f"it is {trial.state.name.lower()}, and its record says otherwise"
        if why is not None and trial.number not in self._reported:
            self._reported.add(trial.number)
            self.log(
                f"trial #{trial.number} ({_describe(trial)}) is complete but its stored result is not usable ({why});"
                " training that grid point again."
            )
        return why is None

    def _live(self, trial: FrozenTrial) -> bool:
        if trial.state in (TrialState.WAITING, TrialState.RUNNING):
            return True
        return trial.state in _FINISHED and self._valid(trial)

    def records(self) -> dict[Key, dict[str, Any]]:
        """Every finished grid point's record: the lowest-numbered complete or pruned trial with a valid one (a
        pruned trial's record holds ``"pruned"``)."""
        out: dict[Key, dict[str, Any]] = {}
        for trial in self._trials(_FINISHED):
            key = _key(trial)
            if key in self._grid and key not in out and self._valid(trial):
                out[key] = trial.user_attrs["record"]  # type: ignore[index]
        return {key: out[key] for key in sorted(out)}

    def running_elsewhere(self) -> list[FrozenTrial]:
        """Running grid trials whose worker is not this process."""
        me = this_worker()
        return [
            t
            for t in self._trials((TrialState.RUNNING,))
            if _key(t) in self._grid and t.user_attrs.get("worker", {}).get("pid") != me["pid"]
        ]

    # --- the queue ----------------------------------------------------------------------------------------------

    def reclaim(self) -> int:
        """Fail every running trial whose worker is dead; returns how many (their points get enqueued again)."""
        failed = 0
        if self._beats:
            before = {t.number for t in self._trials((TrialState.FAIL,))}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                optuna.storages.fail_stale_trials(self.study)  # Optuna's heartbeat, on a database storage
            for trial in self._trials((TrialState.FAIL,)):
                if trial.number not in before:
                    failed += 1
                    self.log(
                        f"trial #{trial.number} ({_describe(trial)}): its worker's heartbeat stopped (none for"
                        f" {self.grace:g} s); handing it on."
                    )
        now = time.time()
        for trial in self._trials((TrialState.RUNNING,)):
            why = self._dead(trial, now)
            if why is None:
                continue
            try:
                self.study.tell(trial.number, state=TrialState.FAIL, skip_if_finished=True)
            except StorageError:
                raise
            except (ValueError, UpdateFinishedTrialError):  # finished meanwhile
                continue
            failed += 1
            self.log(f"trial #{trial.number} ({_describe(trial)}): {why}; handing it to another worker.")
        return failed

    def _dead(self, trial: FrozenTrial, now: float) -> str | None:
        worker = trial.user_attrs.get("worker")
        if not isinstance(worker, dict):
            why = _untagged_dead(trial)
            if why is not None:
                return why
            worker = {}
        if worker.get("machine") == this_worker()["machine"] and isinstance(worker.get("pid"), int):
            alive = is_alive(worker["pid"], worker.get("started"))
            if alive is False:
                return f"its worker (pid {worker['pid']} on this machine) is gone"
            if alive is True:
                return None
        if self._beats and worker:
            return None  # Optuna's heartbeat decides (fail_stale_trials)
        last = trial.user_attrs.get("alive_at")
        if not isinstance(last, (int, float)):
            last = trial.datetime_start.timestamp() if trial.datetime_start is not None else now
        if now - float(last) > self.stale_after:
            where = f"{worker.get('host', '?')}, pid {worker.get('pid', '?')}"
            return f"no sign of life from its worker ({where}) for {now - float(last):.0f} s (> {self.stale_after:g} s)"
        return None

    def enqueue_missing(self) -> int:
        """Enqueue every grid point with no live trial; returns how many (on SQLite, under the take's lock: two
        processes inserting trials at once there can give two trials one number, and the lowest number decides)."""
        with file_lock(self._take_lock):
            live = {_key(t) for t in self._trials() if self._live(t)}
            missing = [key for key in self.grid if key not in live]
            for tau, seed in missing:
                self.study.enqueue_trial({"tau_epoch": tau, "seed": seed}, user_attrs={"tau_epoch": tau, "seed": seed})
        return len(missing)

    def take(self) -> tuple[optuna.Trial, Key] | None:
        """Take the first waiting trial that is its grid point's trial (duplicates met on the way are failed).

        On SQLite, whose WAITING -> RUNNING is not atomic across processes (Optuna's ``SELECT ... FOR UPDATE`` is
        a no-op there: two processes can both take one trial), the take holds a file lock beside the database
        (:func:`~lightning_tau.tuner.study.take_lock.sqlite_take_lock`), so processes on one machine sharing a SQLite
        file
        take trials one at a time (processes on several machines need a journal file or a database server).
        """
        # Ctrl-C or SIGTERM held until the trial taken is this process's to hand back (`_held`): raised between the
        # RUNNING write and that, it left a RUNNING trial no process held (the next run reclaims it, but not now)
        with signals_held(), file_lock(self._take_lock):
            return self._take()

    def _take(self) -> tuple[optuna.Trial, Key] | None:
        trials = self._trials()
        owner: dict[Key, int] = {}
        for trial in trials:
            key = _key(trial)
            if key in self._grid and key not in owner and self._live(trial):
                owner[key] = trial.number
        claim_key, claim = CLAIM_PREFIX + claim_token(), this_worker()
        for frozen in trials:
            key = _key(frozen)
            if frozen.state != TrialState.WAITING or key not in self._grid:
                continue
            try:  # visible before the take: a process killed between the take and its tag leaves its claim
                self.storage.set_trial_user_attr(frozen._trial_id, claim_key, claim)
            except UpdateFinishedTrialError:
                continue
            if not _pop(self.study, frozen):
                with contextlib.suppress(UpdateFinishedTrialError):
                    self.storage.set_trial_user_attr(frozen._trial_id, claim_key, {**claim, "lost": True})
                continue
            trial = optuna.Trial(self.study, frozen._trial_id)
            self._held[trial.number] = trial
            if owner[key] != frozen.number:
                trial.set_user_attr("duplicate_of", owner[key])
                self.study.tell(trial, state=TrialState.FAIL)
                del self._held[trial.number]
                continue
            tau, seed = key
            seeds = sorted({k[1] for k in self.grid})
            _record_tau(trial, tau, trials)  # the enqueued values, recorded as the trial's params
            if self.seeds_grow:
                trial.suggest_int("seed", 0, 2**32 - 1)  # the same distribution whatever seeds a stage adds
            else:
                trial.suggest_categorical("seed", seeds)
            return trial, key
        return None

    @contextlib.contextmanager
    def working_on(self, trial: optuna.Trial) -> Iterator[None]:
        """Mark ``trial`` as this process's and keep signs of life coming while the block trains it; a failure
        in the block fails the trial (its ``error`` attribute says why) and is raised.

        The first sign of life comes before the tag: Optuna's heartbeat never judges a trial with none recorded, and a
        tagged trial is left to it, so a worker killed between the two would hold its grid point for good."""
        stop = threading.Event()
        trial_id = trial._trial_id  # Optuna's heartbeat is recorded by id; `Trial` has no public one

        def beat() -> None:
            if self._beats:
                self.storage.record_heartbeat(trial_id)  # type: ignore[attr-defined]
            else:
                trial.set_user_attr("alive_at", time.time())

        def loop() -> None:
            while not stop.wait(self.heartbeat):
                with contextlib.suppress(Exception):  # a storage hiccup: the next beat tries again
                    beat()

        beat()
        trial.set_user_attr("worker", this_worker())
        thread = threading.Thread(target=loop, name="tau-finder-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        except BaseException as err:
            stop.set()
            thread.join()
            self._fail(trial, stop_reason(err))
            raise
        stop.set()
        thread.join()

    def release(self, why: str) -> int:
        """Fail every trial this process took and has not finished (it stops: SIGTERM, Ctrl-C), so another worker
        takes its grid point at once instead of waiting for its heartbeat to go stale; returns how many."""
        held = list(self._held.values())
        for trial in held:
            self._fail(trial, why)
        return len(held)

    def _fail(self, trial: optuna.Trial, why: str) -> None:
        self._held.pop(trial.number, None)
        with contextlib.suppress(Exception):
            trial.set_user_attr("error", why)
            self.study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)

    def finish(self, trial: optuna.Trial, record: dict[str, Any], value: float) -> bool:
        """Store ``record`` on ``trial`` and tell it COMPLETE (PRUNED for a pruned record); ``False`` if another
        worker was handed it meanwhile."""
        try:
            trial.set_user_attr("record", record)
            if "pruned" in record:
                self.study.tell(trial, state=TrialState.PRUNED)
            else:
                self.study.tell(trial, value)
            self._held.pop(trial.number, None)
        except StorageError:
            raise
        except (ValueError, UpdateFinishedTrialError):
            self._held.pop(trial.number, None)
            self.log(
                f"trial #{trial.number}: was handed to another worker while this one trained it"
                f" ({'no heartbeat' if self._beats else 'no sign of life'} for {self.grace:g} s); its result is"
                " dropped."
            )
            return False
        return True


def _record_tau(trial: optuna.Trial, tau: float, trials: Sequence[FrozenTrial]) -> None:
    """Record ``tau`` as ``trial``'s ``tau_epoch`` parameter: a float on a log scale, one range (:data:`TAU_RANGE`)
    for every trial, since the finder's grid extension adds points to a study and Optuna refuses a categorical
    parameter whose choices change within it. In a study that recorded it as a categorical of its grid (made by an
    earlier version), as that categorical, and a point beyond that grid as ``added_tau_epoch``."""
    recorded = next((t.distributions["tau_epoch"] for t in trials if "tau_epoch" in t.distributions), None)
    if not isinstance(recorded, optuna.distributions.CategoricalDistribution):
        trial.suggest_float("tau_epoch", *TAU_RANGE, log=True)
    elif tau in recorded.choices:
        trial.suggest_categorical("tau_epoch", recorded.choices)  # type: ignore[arg-type]
    else:
        trial.suggest_float("added_tau_epoch", tau, tau)


def _grace(storage: RDBStorage) -> int:
    """The heartbeat grace of ``storage``: Optuna's default is two beats where none was given."""
    interval = storage.get_heartbeat_interval()
    grace = getattr(storage, "grace_period", None)  # a public attribute of RDBStorage, with no getter
    return int(grace) if grace is not None else 2 * int(interval or 0)


def _pop(study: optuna.Study, trial: FrozenTrial) -> bool:
    """Take the waiting ``trial``: the storage's WAITING -> RUNNING is atomic across processes.

    Optuna has no public call for it: ``Study.ask()`` takes the first waiting trial but, when none is left, creates a
    new one from the sampler, which a grid must never do. This is ``Study._pop_waiting_trial_id`` for one trial.
    """
    try:
        return bool(study._storage.set_trial_state_values(trial._trial_id, state=TrialState.RUNNING))
    except UpdateFinishedTrialError:
        return False


def _untagged_dead(trial: FrozenTrial) -> str | None:
    """Why a running trial that no worker tagged is dead: every process that claimed it on this machine (and did not
    lose the take) is gone; ``None`` when one may still hold it, or when a claimer is elsewhere (time decides)."""
    claims = [
        value
        for name, value in trial.user_attrs.items()
        if name.startswith(CLAIM_PREFIX) and isinstance(value, dict) and not value.get("lost")
    ]
    if not claims or any(c.get("machine") != MACHINE or not isinstance(c.get("pid"), int) for c in claims):
        return None
    if all(is_alive(c["pid"], c.get("started")) is False for c in claims):
        pids = ", ".join(str(c["pid"]) for c in claims)
        return f"the process that took it (pid {pids} on this machine) is gone before it marked it as its own"
    return None


def _key(trial: FrozenTrial) -> Key | None:
    tau, seed = trial.user_attrs.get("tau_epoch"), trial.user_attrs.get("seed")
    if isinstance(tau, (int, float)) and not isinstance(tau, bool) and isinstance(seed, int):
        return (float(tau), int(seed))
    return None


def _describe(trial: FrozenTrial) -> str:
    key = _key(trial)
    return f"tau_epoch={key[0]:g}, seed={key[1]}" if key else "not a grid point"


def _differences(stored: Any, mine: Mapping[str, Any]) -> str:
    if not isinstance(stored, dict) or not isinstance(stored.get("settings"), dict):
        return f"it was not made by this version of lightning_tau (its {SETTINGS_ATTR!r} is {stored!r:.80})"
    if stored.get("format") != mine["format"]:
        return f"its format is {stored.get('format')!r}, this version writes {mine['format']!r}"
    there, here = _flatten(stored["settings"]), _flatten(mine["settings"])
    keys = [k for k in sorted(set(there) | set(here)) if there.get(k, "(none)") != here.get(k, "(none)")]
    parts = [f"{k} is {there.get(k, '(none)')!r} there, {here.get(k, '(none)')!r} here" for k in keys[:4]]
    if len(keys) > 4:
        parts.append(f"and {len(keys) - 4} more")
    return "; ".join(parts)


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value}
