"""``lightning_tau.tuner.analysis.beta2_cost``: the paired cost of holding ``β₂`` in samples against keeping it fixed
at the largest batch (pure: no training)."""

from __future__ import annotations

import json
import math

import pytest

from lightning_tau.errors import TimescaleError
from lightning_tau.tuner.analysis.beta2_cost import Beta2Cost, beta2_cost

AT = {"batch_size": 256, "reference_batch_size": 64, "tau_epoch": 8.0, "monitor": "val_loss"}


def test_pairs_each_seed_with_its_own_run_not_by_position() -> None:
    # seeds far apart, each held run 0.01 worse than its own fixed run; `held` listed in another order
    cost = beta2_cost({0: 1.0, 1: 2.0, 2: 3.0}, {2: 3.01, 1: 2.01, 0: 1.01}, **AT)
    assert cost.seeds == (0, 1, 2) and cost.held == (1.01, 2.01, 3.01)
    assert cost.per_seed == pytest.approx((0.01, 0.01, 0.01))
    assert cost.ci is not None and cost.ci[1] - cost.ci[0] < 1e-9  # paired: the seeds' spread cancels


def test_cost_is_held_minus_fixed_positive_when_held_worse() -> None:
    worse = beta2_cost({0: 1.0, 1: 1.5, 2: 0.5}, {0: 1.012, 1: 1.508, 2: 0.513}, **AT)
    assert worse.mean == pytest.approx(0.011) and worse.ci is not None and worse.ci[0] > 0
    assert worse.better == "fixed"
    assert worse.decision() == "Keeping β₂ fixed is better at B=256 (the interval lies above 0)."
    better = beta2_cost({0: 1.0, 1: 1.5, 2: 0.5}, {0: 0.988, 1: 1.492, 2: 0.487}, **AT)
    assert better.mean == pytest.approx(-0.011) and better.better == "held"
    assert better.decision() == "Holding β₂'s window in samples is better at B=256 (the interval lies below 0)."
    # a metric to maximize: a lower held value is the worse one, a positive cost
    accuracy = beta2_cost({0: 0.9, 1: 0.8}, {0: 0.88, 1: 0.79}, mode="max", **AT)
    assert accuracy.per_seed == pytest.approx((0.02, 0.01)) and accuracy.mean == pytest.approx(0.015)


def test_interval_at_level_and_containing_zero_decides_nothing() -> None:
    cost = beta2_cost({0: 1.0, 1: 1.0, 2: 1.0}, {0: 1.01, 1: 0.99, 2: 1.003}, level=0.9, **AT)
    d = [0.01, -0.01, 0.003]
    half = 2.919986 * math.sqrt(sum((x - sum(d) / 3) ** 2 for x in d) / 2) / math.sqrt(3)  # t(0.95, 2 df)
    assert cost.ci == pytest.approx((sum(d) / 3 - half, sum(d) / 3 + half), rel=1e-5)
    assert cost.better is None
    assert cost.decision() == "The interval contains 0: the seeds do not tell the two apart at B=256."
    assert cost.sentence().startswith(
        "β₂ at B=256, tau_epoch=8 (val_loss, min; held minus fixed, paired over 3 seeds, 90% interval): fixed +0.00;"
        " held in samples (β₂^4) +0.00 [-0.02, +0.02]. The interval contains 0"
    )


def test_diverged_run_or_one_seed_says_why_no_decision() -> None:
    diverged = beta2_cost({0: 1.0, 1: 1.0}, {0: math.nan, 1: 1.0}, **AT)
    assert diverged.mean is None and diverged.ci is None and diverged.better is None
    assert diverged.reason == "a run diverged (no finite val_loss: seed 0 with β₂ held in samples)"
    assert "held in samples (β₂^4) not measured: a run diverged" in diverged.sentence()
    one = beta2_cost({3: 1.0}, {3: 1.2}, **AT)
    assert one.mean == pytest.approx(0.2) and one.ci is None
    assert one.decision() == "No decision at B=256: 1 seed: an interval needs at least 2."


def test_json_round_trips_with_numbers_and_sentence() -> None:
    cost = beta2_cost({0: 1.0, 1: 2.0, 2: 3.0}, {0: 1.012, 1: 2.008, 2: math.inf}, level=0.9, **AT)
    data = json.loads(json.dumps(cost.to_json()))  # strict JSON: a diverged run's value is null
    assert data["held"] == [1.012, 2.008, None] and data["mean"] is None and data["sentence"] == cost.sentence()
    back = Beta2Cost.from_json(data)
    assert back.seeds == cost.seeds and back.level == 0.9 and math.isnan(back.held[2])
    finite = beta2_cost({0: 1.0, 1: 2.0}, {0: 1.5, 1: 2.25}, **AT)
    assert Beta2Cost.from_json(json.loads(json.dumps(finite.to_json()))) == finite
    assert finite.to_json()["ci"] == list(finite.ci or ()) and finite.to_json()["better"] is None


@pytest.mark.parametrize(
    ("fixed", "held", "extra", "match"),
    [
        ({0: 1.0}, {1: 1.0}, {}, "`beta2_cost(held=...)` is not valid: got seeds [1]; use the seeds of `fixed` ([0])"),
        ({}, {}, {}, "`beta2_cost(fixed={})` is not valid: use at least one seed's value."),
        ({0: 1.0}, {0: 1.0}, {"mode": "low"}, "`beta2_cost(mode='low')` is not valid: use 'min' (a loss) or 'max'."),
        ({0: 1.0}, {0: 1.0}, {"level": 1.0}, "`beta2_cost(level=1.0)` is not valid"),
    ],
)
def test_refuses_unpaired_seeds_and_bad_settings_in_one_line(
    fixed: dict[int, float], held: dict[int, float], extra: dict[str, object], match: str
) -> None:
    with pytest.raises(TimescaleError) as err:
        beta2_cost(fixed, held, **{**AT, **extra})  # type: ignore[arg-type]
    assert str(err.value).startswith(match) and "\n" not in str(err.value)
