"""``apply_timescale``'s numeric arguments: a one-element tensor or numpy number reads as the number it holds;
anything else is a one-line ``ValueError`` naming the argument and its value, before any optimizer is touched."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from lightning_tau import apply_timescale


def adamw() -> torch.optim.AdamW:
    return torch.optim.AdamW(torch.nn.Linear(4, 4).parameters(), lr=1e-3, weight_decay=0.1)


def applied_decay(**kwargs: Any) -> tuple[float, dict[str, float]]:
    applied = apply_timescale(adamw(), **kwargs)
    applied.remove()
    return applied.tau_iter, applied.weight_decay


EPOCH = {"tau_epoch": 5.0, "dataset_size": 1000, "batch_size": 10}


@pytest.mark.parametrize(
    "kwargs",
    [
        {**EPOCH, "tau_epoch": torch.tensor(5.0)},
        {**EPOCH, "tau_epoch": torch.tensor([5.0])},
        {**EPOCH, "tau_epoch": np.float32(5.0)},
        {**EPOCH, "dataset_size": torch.tensor(1000)},
        {**EPOCH, "dataset_size": np.int64(1000)},
        {**EPOCH, "batch_size": torch.tensor(10.0)},
        {**EPOCH, "tau_epoch": torch.tensor(5.0), "dataset_size": torch.tensor(1000), "batch_size": torch.tensor(10)},
    ],
)
def test_one_element_tensors_and_numpy_numbers_read_as_numbers(kwargs: dict[str, Any]) -> None:
    tau_iter, decay = applied_decay(**kwargs)
    assert (tau_iter, decay) == applied_decay(**EPOCH) == (500.0, {"pg1": 2.0})
    assert type(tau_iter) is float and all(type(v) is float for v in decay.values())


def test_a_tau_iter_tensor_reads_as_its_number() -> None:
    assert applied_decay(tau_iter=torch.tensor(50.0)) == applied_decay(tau_iter=50.0) == (50.0, {"pg1": 20.0})


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("tau_epoch", torch.tensor([5.0, 6.0])),
        ("tau_epoch", torch.tensor(float("nan"))),
        ("tau_epoch", np.array([5.0, 6.0])),
        ("tau_iter", torch.zeros(2, 2)),
        ("tau_iter", torch.tensor(-3.0)),
        ("dataset_size", torch.tensor([1000, 2000])),
        ("dataset_size", torch.tensor(10.5)),
        ("batch_size", torch.tensor(0)),
    ],
)
def test_other_tensors_name_the_argument(name: str, value: Any) -> None:
    kwargs: dict[str, Any] = {"tau_iter": 50.0} if name == "tau_iter" else dict(EPOCH)
    kwargs[name] = value
    opt = adamw()
    with pytest.raises(ValueError) as error:
        apply_timescale(opt, **kwargs)
    message = str(error.value)
    assert "\n" not in message and f"{name}=" in message, message
    assert opt.param_groups[0]["weight_decay"] == 0.1  # nothing written
