"""Pure timescale math for AdamW's EMA view (Wang & Aitchison, ICML 2025).

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from lightning_tau.errors import TimescaleError

__all__ = [
    "check_positive",
    "coherent_norm_bound",
    "equilibrium_rms",
    "init_memory",
    "is_positive_integer",
    "power_lines_tau_epoch",
    "steps_per_epoch",
    "tau_epoch",
    "tau_epoch_from_tau_iter",
    "tau_iter",
    "tau_iter_from_tau_epoch",
    "timescales_elapsed",
    "transfer_weight_decay",
    "weight_decay_for_tau_epoch",
    "weight_decay_for_tau_iter",
]

#: Coefficients of ``tau_opt = a * TPP ** b`` fitted by Bergsma et al. 2025 ("Power Lines", arXiv 2505.13738).
POWER_LINES_COEFFICIENT = 1.084
POWER_LINES_EXPONENT = -0.527


def check_positive(name: str, value: float) -> float:
    """Return ``value`` as a float if it is a positive finite real number, else raise ``TimescaleError``."""
    message = f"`{name}` must be a positive finite number, got {value!r}."
    if isinstance(value, (bool, str, bytes)):
        raise TimescaleError(message)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TimescaleError(message) from None
    if not math.isfinite(number) or number <= 0:
        raise TimescaleError(message)
    return number


def is_positive_integer(value: float) -> bool:
    """Whether ``value`` is a positive whole number (``3`` and ``3.0`` are; ``2.5``, ``0``, ``nan`` are not).

    Example:
        >>> is_positive_integer(1e6), is_positive_integer(10.5), is_positive_integer(0)
        (True, False, False)
    """
    try:
        number = float(value)
    except (TypeError, ValueError):
        return False
    return math.isfinite(number) and number > 0 and number.is_integer()


def steps_per_epoch(dataset_size: float, batch_size: float) -> float:
    """Optimizer steps in one pass over the data, ``M = N / B``.

    Args:
        dataset_size: ``N``, samples (or tokens) in the training set.
        batch_size: ``B``, samples (or tokens) per optimizer step, summed over devices and accumulation.

    Example:
        >>> steps_per_epoch(50_000, 100)
        500.0
    """
    return check_positive("dataset_size", dataset_size) / check_positive("batch_size", batch_size)


def tau_iter(lr: float, weight_decay: float) -> float:
    """EMA timescale in optimizer steps, ``tau_iter = 1 / (lr * weight_decay)``.

    .. math:: \\tau_{iter} = \\frac{1}{\\eta \\lambda}

    Example:
        >>> tau_iter(1e-3, 0.1)
        10000.0
        >>> tau_iter(0.0, 0.1)
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `lr` must be a positive finite number, got 0.0.
    """
    return 1.0 / (check_positive("lr", lr) * check_positive("weight_decay", weight_decay))


def tau_epoch(lr: float, weight_decay: float, dataset_size: float, batch_size: float) -> float:
    """EMA timescale in epochs, ``tau_epoch = B / (lr * weight_decay * N)`` (the paper's Eq. tauepoch).

    .. math:: \\tau_{epoch} = \\frac{\\tau_{iter}}{M} = \\frac{B}{\\eta \\lambda N}

    Example:
        >>> tau_epoch(1e-3, 0.1, dataset_size=50_000, batch_size=100)
        20.0
    """
    return tau_iter(lr, weight_decay) / steps_per_epoch(dataset_size, batch_size)


def tau_iter_from_tau_epoch(tau_epoch: float, dataset_size: float, batch_size: float) -> float:
    """Convert a timescale in epochs to optimizer steps, ``tau_iter = tau_epoch * N / B``.

    Example:
        >>> tau_iter_from_tau_epoch(5.0, dataset_size=1000, batch_size=50)
        100.0
    """
    return check_positive("tau_epoch", tau_epoch) * steps_per_epoch(dataset_size, batch_size)


def tau_epoch_from_tau_iter(tau_iter: float, dataset_size: float, batch_size: float) -> float:
    """Convert a timescale in optimizer steps to epochs, ``tau_epoch = tau_iter * B / N``.

    Example:
        >>> tau_epoch_from_tau_iter(100.0, dataset_size=1000, batch_size=50)
        5.0
    """
    return check_positive("tau_iter", tau_iter) / steps_per_epoch(dataset_size, batch_size)


def weight_decay_for_tau_iter(lr: float, tau_iter: float) -> float:
    """The AdamW ``weight_decay`` that gives a timescale of ``tau_iter`` steps at learning rate ``lr``.

    .. math:: \\lambda = \\frac{1}{\\eta \\tau_{iter}}

    Example:
        >>> weight_decay_for_tau_iter(1e-3, 10_000)
        0.1
    """
    return 1.0 / (check_positive("lr", lr) * check_positive("tau_iter", tau_iter))


def weight_decay_for_tau_epoch(lr: float, tau_epoch: float, dataset_size: float, batch_size: float) -> float:
    """The AdamW ``weight_decay`` that gives a timescale of ``tau_epoch`` epochs: ``B / (lr * N * tau_epoch)``.

    .. math:: \\lambda = \\frac{B}{\\eta N \\tau_{epoch}}

    Args:
        lr: the learning rate the timescale is defined at (the initial or peak lr under a schedule).
        tau_epoch: target timescale in epochs.
        dataset_size: ``N``, samples (or tokens) in one epoch.
        batch_size: ``B``, global samples (or tokens) per optimizer step.

    Example:
        >>> weight_decay_for_tau_epoch(1e-3, 20.0, dataset_size=50_000, batch_size=100)
        0.1
        >>> # ten times the data, same timescale: ten times less weight decay
        >>> round(weight_decay_for_tau_epoch(1e-3, 20.0, dataset_size=500_000, batch_size=100), 12)
        0.01
    """
    return weight_decay_for_tau_iter(lr, tau_iter_from_tau_epoch(tau_epoch, dataset_size, batch_size))


def transfer_weight_decay(
    lr: float,
    weight_decay: float,
    dataset_size: float,
    batch_size: float,
    *,
    new_lr: float | None = None,
    new_dataset_size: float | None = None,
    new_batch_size: float | None = None,
) -> float:
    """Carry a tuned weight decay to a new run by holding ``tau_epoch`` fixed.

    A tuned ``(lr, weight_decay, dataset_size, batch_size)`` fixes ``tau_epoch``; the new run's weight decay is
    the one that gives the same ``tau_epoch`` at its own ``(new_lr, new_dataset_size, new_batch_size)``. Any
    ``new_*`` left ``None`` keeps the tuned value.

    .. math:: \\lambda' = \\lambda \\cdot \\frac{\\eta}{\\eta'} \\cdot \\frac{N}{N'} \\cdot \\frac{B'}{B}

    Example:
        >>> # 10x the data: weight decay / 10
        >>> round(transfer_weight_decay(1e-3, 0.1, 50_000, 100, new_dataset_size=500_000), 12)
        0.01
        >>> # a muP hidden layer 4x wider gets lr / 4, so weight decay x 4
        >>> round(transfer_weight_decay(1e-3, 0.1, 50_000, 100, new_lr=2.5e-4), 12)
        0.4
    """
    tuned_tau_epoch = tau_epoch(lr, weight_decay, dataset_size, batch_size)
    for name, value in (("new_lr", new_lr), ("new_dataset_size", new_dataset_size), ("new_batch_size", new_batch_size)):
        if value is not None:
            check_positive(name, value)  # a bad value is named as given, not as the tuned run's argument
    return weight_decay_for_tau_epoch(
        lr if new_lr is None else new_lr,
        tuned_tau_epoch,
        dataset_size if new_dataset_size is None else new_dataset_size,
        batch_size if new_batch_size is None else new_batch_size,
    )


def timescales_elapsed(lrs: Iterable[float], weight_decay: float) -> float:
    """Number of EMA timescales a run covers, ``sum_t lr_t * weight_decay``.

    Below about one, weight decay has barely acted and the weights still mostly remember their init.

    Example:
        >>> timescales_elapsed([1e-3] * 500, weight_decay=2.0)
        1.0
    """
    wd = check_positive("weight_decay", weight_decay)
    return math.fsum(lrs) * wd


def init_memory(lrs: Iterable[float], weight_decay: float) -> float:
    """How much of the initialization survives, ``prod_t (1 - lr_t * weight_decay)`` (about ``exp(-timescales)``).

    Example:
        >>> round(init_memory([0.01] * 100, weight_decay=1.0), 4)
        0.366
    """
    wd = check_positive("weight_decay", weight_decay)
    log_memory = 0.0
    for lr in lrs:
        factor = 1.0 - lr * wd
        if factor <= 0:
            return 0.0
        log_memory += math.log(factor)
    return math.exp(log_memory)


def equilibrium_rms(lr: float, weight_decay: float) -> float:
    """Predicted equilibrium weight RMS for uncorrelated (random-walk) AdamW updates, ``sqrt(lr / (2 wd))``.

    From the rotational-equilibrium argument (Kosson et al. 2024): Adam's normalized update has unit long-run
    variance, and decay by ``1 - lr * wd`` per step balances it at this RMS.

    Example:
        >>> equilibrium_rms(1e-3, 0.5)
        0.03162277660168379
    """
    return math.sqrt(check_positive("lr", lr) / (2.0 * check_positive("weight_decay", weight_decay)))


def coherent_norm_bound(weight_decay: float) -> float:
    """Upper bound on ``|w|`` per coordinate for perfectly coherent updates, ``1 / weight_decay``.

    Example:
        >>> coherent_norm_bound(0.1)
        10.0
    """
    return 1.0 / check_positive("weight_decay", weight_decay)


def power_lines_tau_epoch(
    tokens_per_parameter: float,
    *,
    coefficient: float = POWER_LINES_COEFFICIENT,
    exponent: float = POWER_LINES_EXPONENT,
) -> float:
    """Optimal timescale for single-epoch LLM pre-training from tokens per parameter (Bergsma et al. 2025).

    .. math:: \\tau_{opt} = a \\cdot \\mathrm{TPP}^{b}, \\quad a = 1.084, \\; b = -0.527

    ``tau`` here is the fraction of the (single) epoch, ``B / (lr_peak * wd * D)``, so it plugs straight into
    :func:`weight_decay_for_tau_epoch` with ``dataset_size = D`` tokens. The coefficients were fitted on GPT-style
    models (111M-3.3B parameters, muP, 10% warmup then linear decay to zero); override them for other setups.

    Example:
        >>> round(power_lines_tau_epoch(20.0), 4)
        0.2236
    """
    tpp = check_positive("tokens_per_parameter", tokens_per_parameter)
    coefficient = check_positive("coefficient", coefficient)
    if isinstance(exponent, bool) or not math.isfinite(float(exponent)):
        raise TimescaleError(f"`exponent` must be a finite number, got {exponent!r}.")
    return coefficient * tpp ** float(exponent)
