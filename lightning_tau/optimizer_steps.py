"""Each optimizer's own steps per epoch: declared, counted and compared (pure; no torch, no Lightning).

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from lightning_tau import _checks
from lightning_tau.errors import TimescaleError

__all__ = [
    "StepCounter",
    "check_optimizer_indices",
    "check_steps_per_epoch",
    "count_epoch",
    "optimizer_steps_per_epoch",
]


def check_steps_per_epoch(value: Any) -> dict[int, float] | None:
    """``TimescaleCallback(steps_per_epoch=...)``: ``None`` or a mapping from optimizer index (int >= 0) to a
    positive finite number.

    Example:
        >>> check_steps_per_epoch({1: 50})
        {1: 50.0}
        >>> check_steps_per_epoch({-1: 50})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleCallback(steps_per_epoch={-1: 50})` is not valid: use a ...
    """
    if value is None:
        return None
    hint = (
        "use a mapping from optimizer index to the optimizer steps it takes per epoch, e.g. `{1: 50}` for a second"
        " optimizer stepped every other batch of 100 (manual optimization)."
    )
    if not isinstance(value, dict):
        raise _checks.invalid("TimescaleCallback", "steps_per_epoch", value, hint)
    # the inner checks' messages are replaced by the one below, which shows the whole mapping, not the one bad key
    # or value: their message arguments are never read (hence no mutation of those two lines)
    checked: dict[int, float] = {}
    try:
        for i, m in value.items():
            index = _checks.integer("TimescaleCallback", "steps_per_epoch", i, hint, minimum=0)  # pragma: no mutate
            steps = _checks.positive_number("TimescaleCallback", "steps_per_epoch", m, hint)  # pragma: no mutate
            checked[index] = steps
    except ValueError:
        raise _checks.invalid("TimescaleCallback", "steps_per_epoch", value, hint) from None
    return checked


def check_optimizer_indices(declared: Mapping[int, float] | None, num_optimizers: int) -> None:
    """Refuse declared steps per epoch (``TimescaleCallback(steps_per_epoch=...)``) for an optimizer the run lacks.

    Example:
        >>> check_optimizer_indices({0: 10, 1: 5}, 2)
        >>> check_optimizer_indices({2: 10}, 2)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleCallback(steps_per_epoch={2: 10})` names optimizer index(es) ...
    """
    bad = sorted(i for i in declared or () if i >= num_optimizers)
    if bad:
        raise TimescaleError(
            f"`TimescaleCallback(steps_per_epoch={declared!r})` names optimizer index(es) {bad},"
            f" but the LightningModule has {num_optimizers} optimizer(s) (indices from 0, in the"
            " order `configure_optimizers` returns them)."
        )


def count_epoch(
    counts: Mapping[int, int],
    batches: int,
    managed: Iterable[int],
    *,
    optimizer_m: Mapping[int, float],
    steps_per_epoch: float | None,
    measured: Mapping[int, tuple[int, int]],
) -> tuple[dict[int, tuple[int, int]], list[tuple[int, int, float]]]:
    """Manual optimization, at the end of a full epoch: each managed optimizer's steps against its assumed ``M``.

    Args:
        counts: optimizer index -> steps it took this epoch.
        batches: batches in the epoch.
        managed: indices of the managed optimizers.
        optimizer_m: optimizer index -> the ``M`` it was decided with, where not the run's.
        steps_per_epoch: the run's ``M``.
        measured: optimizer index -> ``(steps, batches)`` counted before.

    Returns:
        The counts to keep (``(steps, batches)`` per optimizer: those not stepped once per batch, and those counted
        or decided with their own ``M`` before), and ``(index, steps, assumed M)`` of every optimizer whose count
        differs from the ``M`` it was decided with. An optimizer that took no step is left out of both.

    Example:
        >>> count_epoch({0: 10, 1: 5}, 10, [0, 1, 2], optimizer_m={}, steps_per_epoch=10, measured={})
        ({1: (5, 10)}, [(1, 5, 10)])
    """
    keep: dict[int, tuple[int, int]] = {}
    wrong: list[tuple[int, int, float]] = []
    for i in sorted(managed):
        used = optimizer_m.get(i, steps_per_epoch)
        counted = counts.get(i, 0)
        if counted == 0:
            continue
        if counted != batches or i in measured or i in optimizer_m:
            keep[i] = (counted, batches)
        if used is not None and not math.isclose(counted, used, rel_tol=1e-9):
            wrong.append((i, counted, used))
    return keep, wrong


def optimizer_steps_per_epoch(
    num_optimizers: int,
    steps_per_epoch: float | None,
    *,
    measured: Mapping[int, tuple[int, int]],
    declared: Mapping[int, float] | None,
) -> dict[int, float]:
    """``M`` per optimizer index where it is not the run's: counted over the last full epoch (manual
    optimization), else declared by the user.

    Args:
        num_optimizers: how many optimizers the run has.
        steps_per_epoch: the run's ``M`` (``None``: unknown).
        measured: optimizer index -> ``(steps, batches)`` of its last full epoch; the ratio carries over to a run
            whose epoch now has another number of batches.
        declared: optimizer index -> ``M`` the user gave (``TimescaleCallback(steps_per_epoch=...)``).

    Example:
        >>> optimizer_steps_per_epoch(3, 100, measured={1: (50, 100)}, declared={1: 10, 2: 25})
        {1: 50.0, 2: 25}
        >>> optimizer_steps_per_epoch(2, 40, measured={0: (50, 100)}, declared=None)  # the ratio holds
        {0: 20.0}
    """
    out: dict[int, float] = {}
    for i in range(num_optimizers):
        if i in measured:
            steps, batches = measured[i]
            m = steps_per_epoch
            out[i] = float(steps) if m is None or m == batches else steps * m / batches
        elif declared is not None and i in declared:
            out[i] = declared[i]
    return out


class StepCounter:
    """Manual optimization: each optimizer's steps in the epoch in progress, and ``(steps, batches)`` of its last
    full epoch (:attr:`measured`), for :func:`optimizer_steps_per_epoch`.

    ``TimescaleCallback`` drives it from its hooks and keeps :meth:`state_dict` in its own checkpoint state, so a
    resumed run keeps what its epochs counted and, resumed inside an epoch, still counts that epoch whole.

    Example:
        >>> counter = StepCounter()
        >>> counter.start_epoch(0)
        >>> for batch in range(10):  # optimizer 0 steps every batch, optimizer 1 every second one
        ...     counter.step(0)
        ...     if batch % 2:
        ...         counter.step(1)
        ...     counter.end_batch()
        >>> counter.end_epoch([0, 1], planned=10, stopped=False, optimizer_m={}, steps_per_epoch=10)
        [(1, 5, 10)]
        >>> counter.measured
        {1: (5, 10)}
    """

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}  # optimizer index -> steps taken this epoch
        self.batches = 0  # batches this epoch
        self.epoch: int | None = None  # the epoch `counts` and `batches` are of
        #: optimizer index -> ``(steps, batches)`` of its last full epoch
        self.measured: dict[int, tuple[int, int]] = {}
        self._resumed: Mapping[str, Any] | None = None  # a checkpoint's partial epoch count, until continued

    def restore(self, state: Mapping[str, Any] | None) -> None:
        """At fit start: keep what a checkpoint's epochs counted (``None``: a fresh run), and hold its count of the
        epoch it stopped in until :meth:`resume`."""
        self.counts, self.batches = {}, 0
        measured = (state or {}).get("measured_steps") or {}
        self.measured = {int(i): (int(v[0]), int(v[1])) for i, v in measured.items()}
        self._resumed = (state or {}).get("epoch_counts") or None

    def resume(self, epoch: int) -> None:
        """At train start (the loop state is restored by now): a run resumed inside the checkpoint's epoch
        continues that epoch's count, so that the epoch is still counted whole."""
        resumed, self._resumed = self._resumed, None
        if resumed and resumed.get("epoch") == epoch:
            self.counts = {int(i): int(n) for i, n in (resumed.get("steps") or {}).items()}
            self.batches = int(resumed.get("batches", 0))
            self.epoch = epoch

    def start_epoch(self, epoch: int) -> None:
        """Start counting ``epoch``'s steps."""
        self.counts, self.batches = {}, 0
        self.epoch = epoch

    def step(self, index: int) -> None:
        """Count one step of optimizer ``index``."""
        self.counts[index] = self.counts.get(index, 0) + 1

    def end_batch(self) -> None:
        """Count one batch."""
        self.batches += 1

    def end_epoch(
        self,
        managed: Iterable[int],
        *,
        planned: float,
        stopped: bool,
        optimizer_m: Mapping[int, float],
        steps_per_epoch: float | None,
    ) -> list[tuple[int, int, float]]:
        """At an epoch's end: keep the counts of a full epoch and return ``(index, steps, assumed M)`` of every
        managed optimizer whose count differs from the ``M`` it was decided with (:func:`count_epoch`).

        An epoch is full when it ran its ``planned`` batches (for an epoch of unknown length: when the run was not
        ``stopped``); an epoch cut short (``max_steps``, a stop) says nothing and is not compared.
        """
        full = self.batches > 0 and (self.batches == planned if math.isfinite(planned) else not stopped)
        if not full:
            return []
        keep, wrong = count_epoch(
            self.counts,
            self.batches,
            managed,
            optimizer_m=optimizer_m,
            steps_per_epoch=steps_per_epoch,
            measured=self.measured,
        )
        self.measured.update(keep)
        return wrong

    def state_dict(self) -> dict[str, Any]:
        """The counts, as the callback's checkpoint state has always held them."""
        return {
            # optimizer index -> [steps, batches] of its last full epoch, counted
            "measured_steps": {str(i): list(v) for i, v in self.measured.items()},
            # ...and the count of the epoch in progress, so a resume inside it still counts a whole epoch
            "epoch_counts": {
                "epoch": self.epoch,
                "batches": self.batches,
                "steps": {str(i): n for i, n in self.counts.items()},
            },
        }
