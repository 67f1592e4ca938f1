"""How a weight-decay schedule couples to the learning-rate schedule, and every timescale that coupling implies
(pure: the standard library only).

More: docs/couplings.rst.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from lightning_tau import _checks

__all__ = [
    "COUPLINGS",
    "Coupling",
    "Ledger",
    "Plan",
    "beta_for_epochs",
    "decay_at",
    "ema_window_steps",
    "plan",
    "rate_at",
    "window_direct",
]

Coupling = Literal["constant", "per_step", "lr_ratio", "lr_squared"]
#: The couplings, in the table's order.
COUPLINGS: tuple[str, ...] = ("constant", "per_step", "lr_ratio", "lr_squared")


def _check_coupling(owner: str, coupling: object) -> str:
    return _checks.choice(owner, "coupling", coupling, COUPLINGS)


def decay_at(coupling: Coupling, weight_decay_ref: float, lr: float, lr_ref: float) -> float:
    """``λ_t``: the weight decay a coupling writes at learning rate ``lr``, given ``weight_decay_ref`` at ``lr_ref``.

    ``per_step`` at ``lr = 0`` keeps ``weight_decay_ref`` (the step moves nothing; the callback leaves it as is).

    Example:
        >>> [decay_at(c, 0.1, 5e-4, 1e-3) for c in COUPLINGS]
        [0.1, 0.2, 0.05, 0.025]
    """
    _check_coupling("decay_at", coupling)
    ratio = lr / lr_ref
    if coupling == "constant":
        return weight_decay_ref
    if coupling == "per_step":
        return weight_decay_ref / ratio if ratio > 0 else weight_decay_ref
    if coupling == "lr_ratio":
        return weight_decay_ref * ratio
    return weight_decay_ref * ratio * ratio


def rate_at(coupling: Coupling, tau_iter: float, lr: float, lr_ref: float) -> float:
    """The EMA rate ``η_t λ_t`` (per step) under ``coupling`` when ``tau_iter`` is held at ``lr_ref``.

    Example:
        >>> [rate_at(c, 100.0, 5e-4, 1e-3) for c in COUPLINGS]
        [0.005, 0.01, 0.0025, 0.00125]
        >>> rate_at("per_step", 100.0, 0.0, 1e-3)  # a step at lr 0 moves nothing
        0.0
    """
    _check_coupling("rate_at", coupling)
    ratio = lr / lr_ref
    if ratio <= 0:
        return 0.0
    power = {"constant": 1, "per_step": 0, "lr_ratio": 2, "lr_squared": 3}[coupling]
    return ratio**power / tau_iter


def ema_window_steps(beta: float) -> float:
    """Steps an EMA of factor ``beta`` averages over, ``1 / (1 - beta)`` (Adam's ``β₂``, a model EMA's decay).

    Example:
        >>> round(ema_window_steps(0.999), 6)
        1000.0
    """
    b = _checks.in_range(
        "ema_window_steps", "beta", beta, "use a number in [0, 1), e.g. 0.999.", low=0, high=1, low_closed=True
    )
    return 1.0 / (1.0 - b)


def beta_for_epochs(epochs: float, steps_per_epoch: float) -> float:
    """The ``β`` whose window is ``epochs`` epochs of ``steps_per_epoch`` steps: ``1 - 1 / (epochs · M)``.

    Raises:
        ValueError: ``epochs`` or ``steps_per_epoch`` not positive, or a window under one step (``β`` would be < 0).

    Example:
        >>> beta_for_epochs(0.5, 2000)  # half an epoch of 2000 steps: 1000 steps
        0.999
    """
    owner = "beta_for_epochs"
    e = _checks.in_range(owner, "epochs", epochs, "use a positive number of epochs.", low=0, high=math.inf)
    m = _checks.in_range(owner, "steps_per_epoch", steps_per_epoch, "use a positive number.", low=0, high=math.inf)
    steps = e * m
    if steps < 1:
        raise ValueError(
            f"`{owner}(epochs={epochs!r})` is not valid: {epochs!r} epochs of {steps_per_epoch!r} steps is"
            f" {steps:.3g} steps, under one; use at least {1 / m:.3g} epochs."
        )
    return 1.0 - 1.0 / steps


@dataclass
class Ledger:
    """The EMA's running account, one optimizer step at a time, in O(1): init memory, timescales, window.

    Attributes:
        steps: steps folded so far.
        init_memory: ``prod_t (1 - r_t)``, the share of the initialization still in the weights.
        timescales_elapsed: ``sum_t r_t``.
        held: ``S = sum_t c_t``, the updates' total weight in the current weights (``c_t = η_t prod_{k>t}(1-r_k)``).
        age: ``A = sum_t c_t (T - t)``, their age-weighted total.

    Example:
        >>> ledger = Ledger()
        >>> for _ in range(3):
        ...     ledger.step(lr=1.0, rate=0.5)
        >>> ledger.window_steps  # ages 2, 1, 0 with weights 1/4, 1/2, 1
        0.5714285714285714
    """

    steps: int = 0
    init_memory: float = 1.0
    timescales_elapsed: float = 0.0
    held: float = 0.0
    age: float = 0.0

    def step(self, lr: float, rate: float) -> None:
        """Fold one optimizer step of learning rate ``lr`` and EMA rate ``rate = lr * weight_decay``."""
        keep = 1.0 - rate if rate < 1.0 else 0.0
        self.age = keep * (self.age + self.held)
        self.held = keep * self.held + lr
        self.init_memory *= keep
        self.timescales_elapsed += rate
        self.steps += 1

    @property
    def window_steps(self) -> float:
        """The mean age, in steps, of the updates the weights hold (``nan`` before any update has weight)."""
        return self.age / self.held if self.held > 0 else math.nan


def window_direct(lrs: Sequence[float], rates: Sequence[float]) -> float:
    """:attr:`Ledger.window_steps` by the direct sum over every update (O(T²); for checks).

    Example:
        >>> window_direct([1.0, 1.0, 1.0], [0.5, 0.5, 0.5])
        0.5714285714285714
    """
    total = len(lrs)
    weights = []
    for t in range(total):
        c = lrs[t]
        for k in range(t + 1, total):
            c *= max(0.0, 1.0 - rates[k])
        weights.append(c)
    held = math.fsum(weights)
    return math.fsum(w * (total - 1 - t) for t, w in enumerate(weights)) / held if held > 0 else math.nan


@dataclass(frozen=True)
class Plan:
    """What a coupling does to a run's timescale under its schedule, before training.

    Attributes:
        coupling: the coupling.
        tau_iter: ``1 / rate`` at each step (``inf`` where the rate is 0).
        tau_start, tau_middle, tau_end: ``tau_iter`` at the first, middle and last step.
        timescales: ``sum_t r_t``, the timescales the run covers.
        init_memory: ``prod_t (1 - r_t)`` at the end.
        window_epochs: the mean age, in epochs, of the updates the final weights hold.
        epoch_shares: per epoch, the share of the final weights' update mass from that epoch's updates (sums to 1).
    """

    coupling: str
    tau_iter: list[float]
    tau_start: float
    tau_middle: float
    tau_end: float
    timescales: float
    init_memory: float
    window_epochs: float
    epoch_shares: list[float]


def plan(coupling: Coupling, lrs: Sequence[float], lr_ref: float, tau_iter: float, steps_per_epoch: float) -> Plan:
    """The :class:`Plan` of ``coupling`` for a run whose learning rate at each optimizer step is ``lrs``.

    Args:
        coupling: one of :data:`COUPLINGS`.
        lrs: the learning rate of every optimizer step of the run (the schedule, looked ahead).
        lr_ref: the learning rate at which ``tau_iter`` is held (the group's base lr).
        tau_iter: the held timescale in steps (``tau_epoch * steps_per_epoch``).
        steps_per_epoch: optimizer steps per epoch ``M``.

    Raises:
        ValueError: an unknown coupling, no steps, or ``lr_ref``, ``tau_iter`` or ``steps_per_epoch`` not positive.

    Example:
        A constant lr of 1e-3 for 4 epochs of 100 steps at ``tau_epoch = 1``: 4 timescales, init memory about
        ``e^-4``, and a window just under one epoch (``tau_iter`` less what 4 timescales truncate), the same under
        every coupling (the lr never moves):

        >>> p = plan("lr_ratio", [1e-3] * 400, lr_ref=1e-3, tau_iter=100.0, steps_per_epoch=100)
        >>> round(p.timescales, 6), round(p.init_memory, 4), round(p.window_epochs, 2), p.tau_end
        (4.0, 0.018, 0.92, 100.0)
    """
    owner = "plan"
    _check_coupling(owner, coupling)
    ref = _checks.in_range(owner, "lr_ref", lr_ref, "use the group's base learning rate (> 0).", low=0, high=math.inf)
    tau = _checks.in_range(owner, "tau_iter", tau_iter, "use a positive number of steps.", low=0, high=math.inf)
    m = _checks.in_range(owner, "steps_per_epoch", steps_per_epoch, "use a positive number.", low=0, high=math.inf)
    if len(lrs) == 0:
        raise ValueError(f"`{owner}(lrs=[])` is not valid: give the learning rate of every optimizer step.")
    ledger = Ledger()
    taus: list[float] = []
    rates: list[float] = []
    for lr in lrs:
        rate = rate_at(coupling, tau, lr, ref)  # type: ignore[arg-type]
        rates.append(rate)
        taus.append(1.0 / rate if rate > 0 else math.inf)
        ledger.step(lr, rate)
    # each update's weight in the final weights, from the last step back, then summed per epoch
    weights = [0.0] * len(lrs)
    survive = 1.0
    for t in range(len(lrs) - 1, -1, -1):
        weights[t] = lrs[t] * survive
        survive *= max(0.0, 1.0 - rates[t])
    total = math.fsum(weights)
    epochs = max(1, math.ceil(len(lrs) / m))
    shares = [0.0] * epochs
    for t, w in enumerate(weights):
        shares[min(epochs - 1, int(t // m))] += w / total if total > 0 else 0.0
    return Plan(
        coupling=str(coupling),
        tau_iter=taus,
        tau_start=taus[0],
        tau_middle=taus[len(taus) // 2],
        tau_end=taus[-1],
        timescales=ledger.timescales_elapsed,
        init_memory=ledger.init_memory,
        window_epochs=ledger.window_steps / m,
        epoch_shares=shares,
    )
