"""Adam's ``β₂`` window held in epochs (``TimescaleCallback(beta2_epochs=...)``): the argument checked, the optimizers
checked at fit start, ``β₂ = 1 - 1 / (beta2_epochs · M)`` checked and written into ``betas[1]`` at each decision
(torch only, no Lightning). What holding it means: docs/couplings.rst.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from lightning_tau import _checks
from lightning_tau.apply import adam_beta2s, write_beta2
from lightning_tau.callback_decision import Decision
from lightning_tau.couplings import beta_for_epochs

__all__ = ["MAX_BETA2_STEPS", "check_adam_groups", "check_beta2_epochs", "checked_beta2", "hold_beta2"]

#: The longest ``β₂`` window, in optimizer steps, that a float64 ``β₂`` below 1 expresses: ``1 - 2**-53`` is the largest
#: double under 1. A window of ``2**54`` steps or more rounds ``β₂ = 1 - 1 / steps`` to exactly 1, which torch's Adam
#: refuses at construction and which, written later, turns the weights non-finite (``1 - β₂**t = 0``).
MAX_BETA2_STEPS = 2.0**53


def check_beta2_epochs(beta2_epochs: object) -> float | None:
    """``TimescaleCallback(beta2_epochs=...)``: a positive number of epochs, or ``None`` (``betas`` left alone).

    Example:
        >>> check_beta2_epochs(10), check_beta2_epochs(None)
        (10.0, None)
        >>> check_beta2_epochs(0)
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleCallback(beta2_epochs=0)` is not valid: use a positive number of epochs, or None.
    """
    if beta2_epochs is None:
        return None
    return _checks.positive_number(
        "TimescaleCallback", "beta2_epochs", beta2_epochs, "use a positive number of epochs, or None."
    )


def check_adam_groups(
    optimizers: Sequence[torch.optim.Optimizer], managed_optimizers: set[int], beta2_epochs: float | None
) -> None:
    """At fit start: ``beta2_epochs`` needs an Adam-like group (one with a ``betas`` pair) in the optimizers managed.

    Raises:
        ValueError: ``beta2_epochs`` given and no such group.
    """
    if beta2_epochs is not None and not adam_beta2s(optimizers, managed_optimizers):
        raise ValueError(
            f"`TimescaleCallback(beta2_epochs={beta2_epochs!r})` found no Adam-like param group (one with a"
            " `betas` pair) in the optimizers it manages; leave `beta2_epochs` out for an optimizer without"
            " a second-moment EMA."
        )


def hold_beta2(
    optimizers: Sequence[torch.optim.Optimizer],
    decision: Decision,
    managed_optimizers: set[int],
    beta2_epochs: float | None,
) -> dict[tuple[int, int], float]:
    """Write ``β₂ = 1 - 1 / (beta2_epochs · M)`` into every Adam-like group of the managed optimizers, ``M`` its
    optimizer's at ``decision``; return the values written per ``(optimizer, group)`` (none, and nothing written,
    at ``beta2_epochs=None``). Every value is checked (:func:`checked_beta2`) before any is written.

    Example:
        >>> from lightning_tau.decide import RunShape
        >>> opt = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters())
        >>> decision = Decision(RunShape(100), 500.0, None, [], [], {}, 500.0)
        >>> hold_beta2([opt], decision, {0}, beta2_epochs=10.0), opt.param_groups[0]["betas"]
        ({(0, 0): 0.999}, (0.9, 0.999))

    Raises:
        ValueError: an epoch length that could not be read, or a ``β₂`` window that cannot be held.
    """
    beta2: dict[tuple[int, int], float] = {}
    if beta2_epochs is None:
        return beta2
    when = "" if decision.epoch is None else f" at epoch {decision.epoch} ({' '.join(decision.shape.sources)})"
    for i, j in adam_beta2s(optimizers, managed_optimizers):
        m = decision.optimizer_steps_per_epoch.get(i, decision.shape.steps_per_epoch)
        if not m:
            raise ValueError(
                f"`TimescaleCallback(beta2_epochs={beta2_epochs!r})` needs the epoch length in optimizer"
                " steps, which could not be read: give `dataset_size` (or `batch_size`), or leave `beta2_epochs`"
                " out."
            )
        own = f", optimizer {i}" if i in decision.optimizer_steps_per_epoch else ""
        beta2[(i, j)] = checked_beta2(beta2_epochs, m, where=when + own)
    write_beta2(optimizers, beta2)
    return beta2


def checked_beta2(beta2_epochs: float, steps_per_epoch: float, *, where: str = "") -> float:
    """``β₂ = 1 - 1 / (beta2_epochs · M)``, refused unless it lies in ``(0, 1)`` in float64: a window of one step or
    less gives ``β₂ <= 0``; one past :data:`MAX_BETA2_STEPS` steps may round ``β₂`` to exactly 1.

    Args:
        beta2_epochs: the window in epochs.
        steps_per_epoch: ``M``, the optimizer's steps per epoch.
        where: said after the argument in the message (the epoch of a decision mid-fit, the optimizer).

    Raises:
        ValueError: one line naming ``beta2_epochs``, its value, the window in steps at this ``M`` and the largest
            (smallest) ``beta2_epochs`` that works at this ``M``.

    Example:
        >>> checked_beta2(1.0, 12)
        0.9166666666666666
        >>> checked_beta2(1e20, 12)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: `TimescaleCallback(beta2_epochs=1e+20)` is 1.2e+21 optimizer steps at M=12 steps per epoch, so ...
    """
    steps = beta2_epochs * steps_per_epoch
    beta2 = beta_for_epochs(beta2_epochs, steps_per_epoch) if steps > 1 else 1.0 - 1.0 / steps
    if 0.0 < beta2 < 1.0:
        return beta2
    head = (
        f"`TimescaleCallback(beta2_epochs={beta2_epochs!r})`{where} is {steps:.4g} optimizer steps at"
        f" M={steps_per_epoch:.4g} steps per epoch, so β₂ = 1 - 1/(beta2_epochs·M)"
    )
    if beta2 >= 1.0:
        raise ValueError(
            f"{head} rounds to 1 in float64: torch's Adam refuses β₂ = 1 and its steps would turn the weights"
            f" non-finite. Use `beta2_epochs` of at most {MAX_BETA2_STEPS / steps_per_epoch:.4g} at this M (2^53"
            " steps, the longest window a float64 β₂ below 1 expresses)."
        )
    raise ValueError(
        f"{head} = {beta2:.4g} (<= 0: no average at all). Use `beta2_epochs` above {1 / steps_per_epoch:.4g} at this M"
        " (one optimizer step)."
    )
