"""The digits task (``lightning_tau.demos.digits``): its data module's and MLP's argument checks name the argument,
echo the value and say what to pass (``lightning_tau._checks``' form)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("sklearn")

from lightning_tau.demos.digits import DigitsDataModule, DigitsMLP  # noqa: E402


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"train_size": 0}, "`DigitsDataModule(train_size=0)` is not valid: use a positive integer."),
        ({"batch_size": 2.0}, "`DigitsDataModule(batch_size=2.0)` is not valid: use a positive integer."),
        (
            {"train_size": 1500},
            "`DigitsDataModule(train_size=1500)` is not valid: with val_size=397 at most 1400 digits of 1797 are left"
            " for training: use a smaller train_size or val_size.",
        ),
        ({"split_seed": "0"}, "`DigitsDataModule(split_seed='0')` is not valid: use an integer."),
        ({"label_noise": 1.0}, "`DigitsDataModule(label_noise=1.0)` is not valid: use a value in [0, 1)."),
    ],
)
def test_datamodule_rejects_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as info:
        DigitsDataModule(**kwargs)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"hidden": 0}, "`DigitsMLP(hidden=0)` is not valid: use a positive integer."),
        ({"classes": True}, "`DigitsMLP(classes=True)` is not valid: use a positive integer."),
        ({"norm": "batch"}, "`DigitsMLP(norm='batch')` is not supported. Use 'none' or 'layer'."),
        ({"schedule": "step"}, "`DigitsMLP(schedule='step')` is not supported. Use 'constant' or 'cosine'."),
        ({"lr": 0.0}, "`DigitsMLP(lr=0.0)` is not valid: use a positive learning rate."),
        ({"weight_decay": float("inf")}, "`DigitsMLP(weight_decay=inf)` is not valid: use a finite value >= 0."),
    ],
)
def test_mlp_rejects_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as info:
        DigitsMLP(**kwargs)
    assert str(info.value) == message


def test_mlp_takes_zero_weight_decay() -> None:
    assert DigitsMLP(hidden=8, depth=1, weight_decay=0.0).weight_decay == 0.0
