"""The token-budget target (lightning_tau/token_budget.py): its argument checks, the parameter count and the power
law's ``tau_iter``.

Fast and without Lightning: among the tests `make mutation` runs against the module's mutants, so each message is
checked whole and each boundary from both sides.
"""

from __future__ import annotations

import math
import re

import pytest

from lightning_tau.token_budget import check_power_law, check_token_budget, power_law_num_params, power_law_tau_iter


def raises_exactly(message: str) -> pytest.RaisesContext[ValueError]:
    return pytest.raises(ValueError, match=f"^{re.escape(message)}$")


def test_power_law_tau_iter_fraction_of_planned_run() -> None:
    tau_iter, note = power_law_tau_iter(4e9, 1e8, coefficient=2.0, exponent=-0.5, planned_steps=1000)
    assert tau_iter == pytest.approx(2.0 * 40**-0.5 * 1000)
    assert note == (
        "tau from the power law: D=4,000,000,000 tokens / 100,000,000 params = 40 tokens per parameter -> tau = 2 *"
        " TPP^-0.5 = 0.3162 of the run (1,000 planned steps)."
    )


@pytest.mark.parametrize("planned", [math.inf, 0, -1.0])
def test_power_law_tau_iter_needs_finite_planned_run(planned: float) -> None:
    with raises_exactly(
        "`TimescaleCallback(token_budget=4000000000.0)` sets tau_iter = tau * planned optimizer steps, but the"
        f" Trainer plans {planned!r} steps. Set `max_steps` (or a finite `max_epochs`)."
    ):
        power_law_tau_iter(4e9, 1e8, coefficient=2.0, exponent=-0.5, planned_steps=planned)


def test_power_law_tau_iter_refuses_one_step_or_less() -> None:
    # tau = 1.0 * 1 ** -0.5 = 1 of the run: 1 planned step is 1 step (too short), 1.01 steps is fine
    message = (
        "`TimescaleCallback(token_budget=100.0)`: the power law gives tau = 1 of 1 planned steps = 1 steps, one"
        " optimizer step or less, which zeroes or flips the weights every step. Plan a longer run, or set `tau_iter`"
        " yourself."
    )
    with raises_exactly(message):
        power_law_tau_iter(100.0, 100.0, coefficient=1.0, exponent=-0.5, planned_steps=1)
    assert power_law_tau_iter(100.0, 100.0, coefficient=1.0, exponent=-0.5, planned_steps=1.01)[0] == 1.01


def test_power_law_num_params_prefers_users_count() -> None:
    assert power_law_num_params(1e9, None, 1234) == 1234.0
    assert power_law_num_params(1e9, 500, 1234) == 500.0
    assert power_law_num_params(1e9, 500, 0) == 500.0
    with raises_exactly(
        "`TimescaleCallback(token_budget=1000000000.0)` divides the tokens by the model's trainable parameters, but"
        " the LightningModule has none. Unfreeze some parameters, or pass `num_params=...` with the count to use."
    ):
        power_law_num_params(1e9, None, 0)


def test_check_token_budget_given_instead_of_other_targets() -> None:
    assert check_token_budget(None, tau_epoch=None, tau_iter=None) is None
    assert check_token_budget(None, tau_epoch=5.0, tau_iter=None) is None  # the other targets are checked elsewhere
    assert check_token_budget(20, tau_epoch=None, tau_iter=None) == 20.0
    for tau_epoch, tau_iter in ((5.0, None), (None, 100), (5.0, 100)):
        with raises_exactly(
            f"`TimescaleCallback(token_budget=2000.0)` picks the timescale from the power law; do not also pass"
            f" tau_epoch={tau_epoch!r} or tau_iter={tau_iter!r}. Give exactly one of the three."
        ):
            check_token_budget(2e3, tau_epoch=tau_epoch, tau_iter=tau_iter)
    for bad in (0, -1.0, math.inf, "x", True):
        with raises_exactly(
            f"`TimescaleCallback(token_budget={bad!r})` is not valid: `token_budget` must be a positive finite number."
        ):
            check_token_budget(bad, tau_epoch=None, tau_iter=None)


def test_check_power_law_takes_positive_coefficient_and_finite_exponent() -> None:
    assert check_power_law(2, 0) == (2.0, 0.0)
    assert check_power_law(1.0, 0.5) == (1.0, 0.5)
    with raises_exactly(
        "`TimescaleCallback(power_law_coefficient=-1.0)` is not valid: `power_law_coefficient` must be a positive"
        " finite number."
    ):
        check_power_law(-1.0, -0.5)
    with raises_exactly(
        "`TimescaleCallback(power_law_exponent=nan)` is not valid: use a finite number (default -0.527)."
    ):
        check_power_law(1.0, math.nan)
