"""The token-budget target: the timescale of single-epoch LLM pre-training from tokens per parameter (pure; no
torch, no Lightning).

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import math

from lightning_tau import _checks, timescale
from lightning_tau.errors import TimescaleError

__all__ = ["check_power_law", "check_token_budget", "power_law_num_params", "power_law_tau_iter"]


def check_token_budget(token_budget: object, *, tau_epoch: object, tau_iter: object) -> float | None:
    """``TimescaleCallback(token_budget=...)``: ``None``, or a positive finite number given instead of
    ``tau_epoch`` and ``tau_iter``.

    Example:
        >>> check_token_budget(2e9, tau_epoch=None, tau_iter=None), check_token_budget(None, tau_epoch=5, tau_iter=None)
        (2000000000.0, None)
        >>> check_token_budget(2e9, tau_epoch=5, tau_iter=None)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleCallback(token_budget=2000000000.0)` picks the timescale ...
    """
    if token_budget is not None and (tau_epoch is not None or tau_iter is not None):
        raise TimescaleError(
            f"`TimescaleCallback(token_budget={token_budget!r})` picks the timescale from the power law; do not"
            f" also pass tau_epoch={tau_epoch!r} or tau_iter={tau_iter!r}. Give exactly one of the three."
        )
    return None if token_budget is None else _positive("token_budget", token_budget)


def check_power_law(coefficient: object, exponent: object) -> tuple[float, float]:
    """``TimescaleCallback(power_law_coefficient=..., power_law_exponent=...)``: ``a`` a positive finite number,
    ``b`` a finite one.

    Example:
        >>> check_power_law(1.084, -0.527)
        (1.084, -0.527)
        >>> check_power_law(0, -0.527)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_tau.errors.TimescaleError: `TimescaleCallback(power_law_coefficient=0)` is not valid: ...
    """
    return _positive("power_law_coefficient", coefficient), _checks.finite_number(
        "TimescaleCallback",
        "power_law_exponent",
        exponent,
        f"use a finite number (default {timescale.POWER_LINES_EXPONENT}).",
    )


def power_law_tau_iter(
    token_budget: float, num_params: float, *, coefficient: float, exponent: float, planned_steps: float
) -> tuple[float, str]:
    """``tau_iter`` from tokens per parameter (Bergsma et al. 2025), as a fraction of the planned run, and a
    summary line saying how it was found.

    ``tau = coefficient * (token_budget / num_params) ** exponent`` of the run, ``tau_iter = tau * planned_steps``.

    Raises:
        ValueError: the run plans no finite positive number of steps, or the timescale is one step or less.

    Example:
        >>> tau_iter, note = power_law_tau_iter(2e9, 1e8, coefficient=1.0, exponent=-0.5, planned_steps=2000)
        >>> round(tau_iter, 6)
        447.213595
        >>> note
        'tau from the power law: D=2,000,000,000 tokens / 100,000,000 params = 20 tokens per parameter -> tau = 1 * \
TPP^-0.5 = 0.2236 of the run (2,000 planned steps).'
    """
    tokens_per_param = token_budget / num_params
    tau = timescale.power_lines_tau_epoch(tokens_per_param, coefficient=coefficient, exponent=exponent)
    if not math.isfinite(planned_steps) or planned_steps <= 0:
        raise TimescaleError(
            f"`TimescaleCallback(token_budget={token_budget!r})` sets tau_iter = tau * planned optimizer"
            f" steps, but the Trainer plans {planned_steps!r} steps. Set `max_steps` (or a finite `max_epochs`)."
        )
    tau_iter = tau * float(planned_steps)
    if tau_iter <= 1:
        raise TimescaleError(
            f"`TimescaleCallback(token_budget={token_budget!r})`: the power law gives tau = {tau:.4g} of"
            f" {planned_steps:,.0f} planned steps = {tau_iter:.4g} steps, one optimizer step or less, which zeroes or"
            " flips the weights every step. Plan a longer run, or set `tau_iter` yourself."
        )
    return tau_iter, (
        f"tau from the power law: D={token_budget:,.0f} tokens / {num_params:,.0f} params ="
        f" {tokens_per_param:.4g} tokens per parameter -> tau = {coefficient:g} *"
        f" TPP^{exponent:g} = {tau:.4g} of the run ({planned_steps:,.0f} planned steps)."
    )


def power_law_num_params(token_budget: float, num_params: int | None, counted: int) -> float:
    """The parameter count the power law divides the tokens by: the user's, else the ``counted`` trainable ones.

    Raises:
        ValueError: no count given and no trainable parameter counted.

    Example:
        >>> power_law_num_params(1e9, None, 1000), power_law_num_params(1e9, 500, 1000)
        (1000.0, 500.0)
    """
    if num_params is None and counted == 0:
        raise TimescaleError(
            f"`TimescaleCallback(token_budget={token_budget!r})` divides the tokens by the model's"
            " trainable parameters, but the LightningModule has none. Unfreeze some parameters, or pass"
            " `num_params=...` with the count to use."
        )
    return float(num_params or counted)


def _positive(name: str, value: object) -> float:
    """A positive finite number, with the callback's name in the message."""
    return _checks.positive_number("TimescaleCallback", name, value, f"`{name}` must be a positive finite number.")
