"""``lightning_tau.tuner.analysis.staging``: the seed counts at which ``seeds="auto"`` looks and the level of each look; bad
input is a one-line error naming the argument. (The coverage of the interval where the staging stops is simulated in
``tests/tuner/analysis/test_scaling.py``.)"""

from __future__ import annotations

import re

import pytest

from lightning_tau.tuner.analysis.staging import seed_stages, staged_level


def test_seed_stages_and_staged_level():
    assert seed_stages(3) == [3]
    assert seed_stages(4) == [3, 4]
    assert seed_stages(5) == [3, 5]
    assert seed_stages(8) == [3, 5, 8]
    assert seed_stages(12) == [3, 5, 8, 12]
    assert seed_stages(13) == [3, 5, 8, 12, 13]
    assert seed_stages(18) == [3, 5, 8, 12, 18]
    assert seed_stages(40) == [3, 5, 8, 12, 18, 27, 40]  # 27 x 1.5 = 40.5 rounds up to 41, past 40: capped there
    assert seed_stages(50) == [3, 5, 8, 12, 18, 27, 41, 50]  # 40.5 rounded up (not truncated to 40)
    assert staged_level(0.95, len(seed_stages(12))) == pytest.approx(0.975)  # 4 looks: 1 - 0.05 / 2
    assert staged_level(0.9, 1) == pytest.approx(0.9)  # one look: no staging, no correction
    assert staged_level(0.95, 9) == pytest.approx(1 - 0.05 / 3)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: seed_stages(2),
            "`seed_stages(max_seeds=2)` is not valid: use an integer of at least 3 (the first stage).",
        ),
        (
            lambda: seed_stages(8.0),
            "`seed_stages(max_seeds=8.0)` is not valid: use an integer of at least 3 (the first stage).",
        ),
        (
            lambda: staged_level(1.5, 4),
            "`staged_level(level=1.5)` is not valid: use a number strictly between 0 and 1.",
        ),
        (
            lambda: staged_level(0.95, 0),
            "`staged_level(looks=0)` is not valid: use the number of looks, e.g. len(seed_stages(12)).",
        ),
    ],
)
def test_bad_input_one_line_naming_argument(call, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        call()
