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


def test_tau_iter_tensor_reads_as_number() -> None:
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
def test_other_tensors_name_argument(name: str, value: Any) -> None:
    kwargs: dict[str, Any] = {"tau_iter": 50.0} if name == "tau_iter" else dict(EPOCH)
    kwargs[name] = value
    opt = adamw()
    with pytest.raises(ValueError) as error:
        apply_timescale(opt, **kwargs)
    message = str(error.value)
    assert "\n" not in message and f"{name}=" in message, message
    assert opt.param_groups[0]["weight_decay"] == 0.1  # nothing written


@pytest.mark.parametrize(("exponent", "n"), [(0.0, 1000), (-0.5, 1000), (-1.0, 4000), (0.5, 250)])
def test_size_exponent_holds_closed_form(exponent: float, n: int) -> None:
    # tau_epoch 8 measured at N_ref = 250 (B = 10): wd = 1 / (lr * M * tau_epoch * (N / N_ref) ** e), M = N / B
    applied = apply_timescale(
        adamw(), tau_epoch=8.0, dataset_size=n, batch_size=10, size_exponent=exponent, reference_dataset_size=250
    )
    applied.remove()
    held = 8.0 * (n / 250) ** exponent
    assert applied.tau_epoch == pytest.approx(held, rel=1e-12)
    assert applied.weight_decay["pg1"] == pytest.approx(1 / (1e-3 * (n / 10) * held), rel=1e-12)


def test_size_exponent_accepts_tensor_and_zero_ignores_reference() -> None:
    tensor = apply_timescale(
        adamw(), **EPOCH, size_exponent=torch.tensor(-0.5), reference_dataset_size=np.int64(250)
    ).weight_decay
    assert tensor == pytest.approx(
        apply_timescale(adamw(), **EPOCH, size_exponent=-0.5, reference_dataset_size=250).weight_decay
    )
    assert applied_decay(**EPOCH, reference_dataset_size=250) == applied_decay(**EPOCH) == (500.0, {"pg1": 2.0})


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {**EPOCH, "size_exponent": float("nan")},
            r"^`apply_timescale\(size_exponent=nan\)` is not valid: use a finite",
        ),
        (
            {**EPOCH, "size_exponent": 2.5, "reference_dataset_size": 9},
            r"^`apply_timescale\(size_exponent=2.5\)` .*\[-2, 2\]",
        ),
        (
            {**EPOCH, "size_exponent": -0.5},
            r"^`apply_timescale\(size_exponent=-0.5\)` .* needs `reference_dataset_size`",
        ),
        (
            {**EPOCH, "size_exponent": -0.5, "reference_dataset_size": 0},
            r"^`apply_timescale\(reference_dataset_size=0\)`",
        ),
        ({"tau_iter": 50.0, "size_exponent": -0.5, "reference_dataset_size": 9}, r"Give the target as `tau_epoch`\.$"),
        (
            {"tau_epoch": 0.5, "dataset_size": 20, "batch_size": 10, "size_exponent": -1, "reference_dataset_size": 10},
            r"`tau_epoch=0.25` is 0.5 optimizer steps .* \(The tau_epoch held at this N: tau_epoch 0.5 x \(20/10\)\^-1"
            r" = 0.25\.\)$",
        ),
    ],
)
def test_bad_size_rules_one_line_errors_before_any_write(kwargs: dict[str, Any], match: str) -> None:
    opt = adamw()
    with pytest.raises(ValueError, match=match) as error:
        apply_timescale(opt, **kwargs)
    assert "\n" not in str(error.value)
    assert opt.param_groups[0]["weight_decay"] == 0.1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({**EPOCH, "batch_exponent": float("inf")}, r"^`apply_timescale\(batch_exponent=inf\)` is not valid: use a"),
        (
            {**EPOCH, "batch_exponent": 3, "reference_batch_size": 9},
            r"^`apply_timescale\(batch_exponent=3\)` .*\[-2, 2\]",
        ),
        ({**EPOCH, "batch_exponent": 1}, r"^`apply_timescale\(batch_exponent=1\)` .* needs `reference_batch_size`"),
        ({**EPOCH, "batch_exponent": 1, "reference_batch_size": -4}, r"^`apply_timescale\(reference_batch_size=-4\)`"),
        ({"tau_iter": 50.0, "batch_exponent": 1, "reference_batch_size": 9}, r"Give the target as `tau_epoch`\.$"),
        (
            {"tau_epoch": 0.5, "dataset_size": 20, "batch_size": 10, "batch_exponent": 1, "reference_batch_size": 20},
            r"`tau_epoch=0.25` is 0.5 optimizer steps .* \(The tau_epoch held at this B: tau_epoch 0.5 x \(10/20\)\^1"
            r" = 0.25\.\)$",
        ),
    ],
)
def test_bad_batch_rules_one_line_errors_before_any_write(kwargs: dict[str, Any], match: str) -> None:
    opt = adamw()
    with pytest.raises(ValueError, match=match) as error:
        apply_timescale(opt, **kwargs)
    assert "\n" not in str(error.value)
    assert opt.param_groups[0]["weight_decay"] == 0.1


@pytest.mark.parametrize("exponent", [1.0, -0.5])
def test_timescale_holds_tau_epoch_times_b_over_b_ref_to_e(exponent: float) -> None:
    # tau_epoch 5 measured at B_ref = 40; the loop runs B = 10 over N = 1000 (M = 100): held 5 x (10/40)^e
    opt = adamw()
    applied = apply_timescale(opt, **EPOCH, batch_exponent=exponent, reference_batch_size=40)
    held = 5.0 * (10 / 40) ** exponent
    assert applied.tau_epoch == pytest.approx(held) and applied.tau_iter == pytest.approx(held * 100)
    assert opt.param_groups[0]["weight_decay"] == pytest.approx(1 / (1e-3 * held * 100))
    rules = dict(size_exponent=-0.5, reference_dataset_size=250, batch_exponent=exponent, reference_batch_size=40)
    both = apply_timescale(adamw(), **EPOCH, **rules)
    assert both.tau_epoch == pytest.approx(held * 4**-0.5)
