"""Every optimizer lightning_tau calls decoupled proves it: a zero-gradient step leaves exactly ``w * (1 - lr * wd)``.

AdamW-style decay, ``w <- (1 - lr * wd) * w - lr * u``, is an EMA with timescale ``1 / (lr * wd)`` whatever the
update ``u`` is (THEORY.md §8). With every gradient zero and fresh optimizer state, ``u`` is zero for all of these
optimizers, so one step shows the decay alone. Coupled (L2) optimizers put ``wd * w`` into the gradient, where the
normalisation or the momentum changes it, and fail the same check.

``DECOUPLED_FACTORIES`` lists every installed optimizer the package recognises as decoupled, with the ``lr`` and
``weight_decay`` it is built with, for tests that run real fits.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from optimizers import DECOUPLED_FACTORIES, bnb_factory, matrix_params, zero_grad_step
from torch.optim import Optimizer

from lightning_tau.optim import (
    decay_kind,
    group_lr,
    register_decay_kind,
    unit_rms_updates,
    unsupported_message,
    unwrap_optimizer,
)

OPTIONAL_PACKAGES = ("bitsandbytes", "torchao", "lion_pytorch")
INSTALL_HINT = "an optional optimizer package: `make install` installs it (see the `optimizers` extra in setup.cfg)"


"""Every installed optimizer recognised as decoupled: name -> ``make(params)`` with its lr and weight decay."""

# Whose update has RMS about 1 per element (Adam-like, Lion's sign): the monitor's sqrt(lr / (2 wd)) applies.
NOT_UNIT_RMS = {"torch.Muon", "torch.Adafactor", "bnb.AdEMAMix"}


def decay_factor(optimizer: Optimizer) -> float:
    (group,) = optimizer.param_groups
    return 1.0 - group_lr(group) * float(group["weight_decay"])


@pytest.mark.parametrize("package", OPTIONAL_PACKAGES)
def test_optional_optimizer_packages_installed(package: str) -> None:
    pytest.importorskip(package, reason=f"{package} is {INSTALL_HINT}")


@pytest.mark.filterwarnings("ignore:Paged optimizers are not supported on CPU:UserWarning")  # bnb on CPU
@pytest.mark.filterwarnings("ignore:.*does not implement _stable_hash_for_caching:UserWarning")  # torchao's compile
@pytest.mark.parametrize(
    "name",
    # torchao compiles its step with torch.compile: about 20 s the first time on a cold inductor cache
    [pytest.param(n, marks=pytest.mark.slow) if n.startswith("torchao.") else n for n in sorted(DECOUPLED_FACTORIES)],
)
def test_zero_gradient_step_multiplies_every_weight_by_one_minus_lr_wd(name: str) -> None:
    params = matrix_params()[:1] if name.startswith("torchao.") else matrix_params()  # torchao compiles per shape
    optimizer = DECOUPLED_FACTORIES[name](params)
    assert decay_kind(optimizer) == "decoupled"
    assert unit_rms_updates(optimizer) == (name not in NOT_UNIT_RMS)
    factor = decay_factor(optimizer)
    assert factor < 1 - 1e-4  # a decay large enough that a wrong rule would show
    before = zero_grad_step(optimizer, params)
    for p, w in zip(params, before):
        # bit-exact for all but torchao, whose compiled `p - lr * wd * p` may round the last bit differently
        torch.testing.assert_close(p.detach(), w * factor, rtol=1e-6, atol=0.0)


@pytest.mark.parametrize(
    "name", [n for n in ("bnb.AdamW8bit", "bnb.Lion8bit", "torchao.AdamW8bit") if n in DECOUPLED_FACTORIES]
)
def test_low_bit_state_path_one_checked(name: str) -> None:
    params = matrix_params()[:1]
    optimizer = DECOUPLED_FACTORIES[name](params)
    zero_grad_step(optimizer, params)
    state = optimizer.state[params[0]]
    first_moment = state.get("state1", state.get("exp_avg"))
    assert first_moment.dtype == torch.uint8 or type(first_moment).__name__ == "OptimState8bit"


COUPLED = {
    "torch.Adam": lambda p: torch.optim.Adam(p, lr=1e-2, weight_decay=0.1),
    "torch.NAdam": lambda p: torch.optim.NAdam(p, lr=1e-2, weight_decay=0.1),
    "torch.RAdam": lambda p: torch.optim.RAdam(p, lr=1e-2, weight_decay=0.1),
    "torch.Adamax": lambda p: torch.optim.Adamax(p, lr=1e-2, weight_decay=0.1),
    "torch.RMSprop": lambda p: torch.optim.RMSprop(p, lr=1e-2, weight_decay=0.1),
    "torch.Adagrad": lambda p: torch.optim.Adagrad(p, lr=1e-2, weight_decay=0.1),
    "torch.Adadelta": lambda p: torch.optim.Adadelta(p, lr=1.0, weight_decay=0.1),
    "torch.ASGD": lambda p: torch.optim.ASGD(p, lr=1e-2, weight_decay=0.1, lambd=1e-2),
    # With momentum: one zero-gradient step of L2 SGD equals a decoupled one; later steps show the difference.
    "torch.SGD": lambda p: torch.optim.SGD(p, lr=1e-2, weight_decay=0.1, momentum=0.9),
    "bnb.SGD": bnb_factory("SGD", lr=1e-2, weight_decay=0.1, momentum=0.9),
    "bnb.RMSprop": bnb_factory("RMSprop", lr=1e-2, weight_decay=0.1),
    "bnb.Adagrad": bnb_factory("Adagrad", lr=1e-2, weight_decay=0.1),
    "bnb.LARS": bnb_factory("LARS", lr=1e-2, weight_decay=0.1, momentum=0.9),
}


@pytest.mark.parametrize("name", sorted(COUPLED))
def test_coupled_optimizers_classified_coupled_and_fail_zero_gradient_check(name: str) -> None:
    if name.startswith("bnb."):
        pytest.importorskip("bitsandbytes", reason=f"bitsandbytes is {INSTALL_HINT}")
    params = matrix_params()
    optimizer = COUPLED[name](params)
    assert decay_kind(optimizer) == "coupled"
    assert not unit_rms_updates(optimizer)
    factor = decay_factor(optimizer)
    # several steps: L2 SGD with momentum matches a decoupled step once, and RAdam takes un-normalised (SGD-like)
    # steps until its variance estimate is trusted (step 6 at beta2 = 0.999)
    before = zero_grad_step(optimizer, params, steps=8)
    assert not torch.allclose(params[0].detach(), before[0] * factor**8, rtol=1e-6, atol=0.0)


def test_coupled_without_decay_none_and_low_bit_adam_coupled() -> None:
    assert decay_kind(torch.optim.Adam(matrix_params(), weight_decay=0.0)) == "none"
    assert decay_kind(torch.optim.SGD(matrix_params(), lr=0.1)) == "none"
    # decaying groups decide; one coupled group makes the optimizer coupled
    p, q = matrix_params()
    mixed = torch.optim.Adam([{"params": [p], "decoupled_weight_decay": True}, {"params": [q]}], weight_decay=0.1)
    assert decay_kind(mixed) == "coupled"
    torchao = pytest.importorskip("torchao.optim", reason=f"torchao is {INSTALL_HINT}")
    adam8bit = torchao.Adam8bit(matrix_params(), weight_decay=0.1)  # torchao's Adam* add wd * w to the gradient
    assert decay_kind(adam8bit) == "coupled"
    assert "torchao's `AdamW8bit`" in unsupported_message(adam8bit, 0)


def test_lion_pytorch_lr_relative_decay_not_taken_for_torch_weight_decay() -> None:
    lion_pytorch = pytest.importorskip("lion_pytorch", reason=f"lion_pytorch is {INSTALL_HINT}")
    params = matrix_params()
    lion = lion_pytorch.Lion(params, lr=1e-3, weight_decay=0.01, decoupled_weight_decay=True)
    before = zero_grad_step(lion, params)
    # it decays by (lr / initial lr) * wd, so its weight_decay is 1 / tau_iter itself, not torch's weight_decay
    torch.testing.assert_close(params[0].detach(), before[0] * (1 - 0.01), rtol=1e-6, atol=0.0)
    assert decay_kind(lion) == "unknown"
    message = unsupported_message(lion, 2)
    assert "optimizer 2 (lion_pytorch.lion_pytorch.Lion)" in message
    assert "`1 - (lr / initial_lr) * weight_decay`" in message
    assert "Lion(decoupled_weight_decay=False)" in message


def test_composer_style_lr_relative_adamw_subclass_not_decoupled() -> None:
    # Composer's DecoupledAdamW subclasses torch's AdamW but decays by (lr / initial_lr) * wd; it is recognised by
    # module and class name (composer is not installed here), ahead of its AdamW base class in the MRO.
    DecoupledAdamW = type(
        "DecoupledAdamW", (torch.optim.AdamW,), {"__module__": "composer.optim.decoupled_weight_decay"}
    )
    optimizer = DecoupledAdamW(matrix_params(), weight_decay=1e-5)
    assert decay_kind(optimizer) == "unknown"
    assert "is already `1 / tau_iter`" in unsupported_message(optimizer, 0)


class PlainOptimizer(torch.optim.Optimizer):
    """An optimizer the package has never heard of."""

    def __init__(self, params: Any, lr: float = 1e-2, weight_decay: float = 0.0) -> None:
        super().__init__(params, {"lr": lr, "weight_decay": weight_decay})

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                p.mul_(1 - group["lr"] * group["weight_decay"]).add_(p.grad.sign(), alpha=-group["lr"])


def test_unknown_optimizers_unknown_with_message_says_how_to_declare_them() -> None:
    assert decay_kind(PlainOptimizer(matrix_params())) == "none"
    optimizer = PlainOptimizer(matrix_params(), weight_decay=0.1)
    assert decay_kind(optimizer) == "unknown"
    assert not unit_rms_updates(optimizer)
    message = unsupported_message(optimizer, 1)
    # the module as this file was imported (`tests.test_optimizer_families` under --import-mode=importlib)
    assert f"optimizer 1 ({PlainOptimizer.__module__}.PlainOptimizer) is not known to decay decoupled" in message
    assert 'lightning_tau.register_decay_kind(PlainOptimizer, "decoupled")' in message
    assert "`TimescaleCallback(skip_unsupported_optimizers=True)`" in message
    assert "apply_timescale(skip" in unsupported_message(optimizer, 1, caller="apply_timescale")


def test_messages_for_coupled_name_coupling_and_way_out() -> None:
    message = unsupported_message(torch.optim.RMSprop(matrix_params(), weight_decay=0.1), 0)
    assert "optimizer 0 (torch.optim.RMSprop) adds `weight_decay` to the gradient (coupled L2 decay)" in message
    assert "Use `torch.optim.AdamW`" in message and "skip_unsupported_optimizers=True" in message
    nadam = unsupported_message(torch.optim.NAdam(matrix_params(), weight_decay=0.1), 0)
    assert "`NAdam(..., decoupled_weight_decay=True)`" in nadam
    with pytest.raises(ValueError, match=r"optimizer 3 \(torch.optim.AdamW\) has decay kind 'decoupled'"):
        unsupported_message(torch.optim.AdamW(matrix_params()), 3)
    with pytest.raises(ValueError, match="has decay kind 'none'"):
        unsupported_message(torch.optim.SGD(matrix_params(), lr=0.1), 0)


def test_registration_declares_class_and_subclasses() -> None:
    class MyDecoupled(PlainOptimizer):
        pass

    class MySubclass(MyDecoupled):
        pass

    params = matrix_params()
    register_decay_kind(MyDecoupled, "decoupled")
    assert decay_kind(MySubclass(params, weight_decay=0.1)) == "decoupled"
    assert decay_kind(MySubclass(params)) == "decoupled"  # decoupled with no decay yet: the caller reports it
    assert not unit_rms_updates(MySubclass(params, weight_decay=0.1))  # not declared
    # the most derived registration wins, and registering again replaces the entry
    register_decay_kind(MySubclass, "coupled")
    assert decay_kind(MySubclass(params, weight_decay=0.1)) == "coupled"
    assert decay_kind(MyDecoupled(params, weight_decay=0.1)) == "decoupled"
    register_decay_kind(MySubclass, "decoupled", unit_rms_updates=True)
    assert unit_rms_updates(MySubclass(params, weight_decay=0.1))
    # and the registered class really does what it declares: the zero-gradient check passes
    optimizer = MySubclass(params, weight_decay=0.1)
    before = zero_grad_step(optimizer, params)
    torch.testing.assert_close(params[0].detach(), before[0] * decay_factor(optimizer), rtol=1e-6, atol=0.0)


def test_registration_overrides_built_in_table() -> None:
    class LrRelativeAdamW(torch.optim.AdamW):
        pass

    assert decay_kind(LrRelativeAdamW(matrix_params())) == "decoupled"  # an AdamW subclass, by default
    register_decay_kind(LrRelativeAdamW, "coupled")
    assert decay_kind(LrRelativeAdamW(matrix_params(), weight_decay=0.1)) == "coupled"
    assert decay_kind(torch.optim.AdamW(matrix_params())) == "decoupled"  # the base class is untouched


def test_register_decay_kind_rejects_bad_arguments() -> None:
    with pytest.raises(TypeError, match=r"expects an optimizer class, got an instance of AdamW"):
        register_decay_kind(torch.optim.AdamW(matrix_params()), "decoupled")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"`register_decay_kind\(kind='l2'\)` is not a decay kind"):
        register_decay_kind(PlainOptimizer, "l2")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"`register_decay_kind\(unit_rms_updates='yes'\)` expects True or False"):
        register_decay_kind(PlainOptimizer, "decoupled", unit_rms_updates="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="holds for decoupled decay only"):
        register_decay_kind(PlainOptimizer, "coupled", unit_rms_updates=True)
    assert decay_kind(PlainOptimizer(matrix_params(), weight_decay=0.1)) == "unknown"  # nothing was registered


class Wrapper:
    """A wrapper holding the optimizer that steps, under a chosen attribute."""

    def __init__(self, optimizer: Any, attribute: str = "optimizer") -> None:
        setattr(self, attribute, optimizer)


class SelfWrapping(torch.optim.SGD):
    def __init__(self, params: Any) -> None:
        super().__init__(params, lr=0.1, weight_decay=0.1)
        self.optimizer = self


def test_wrappers_judged_by_optimizer_inside() -> None:
    from lightning.pytorch.core.optimizer import LightningOptimizer

    adamw = torch.optim.AdamW(matrix_params())
    adam = torch.optim.Adam(matrix_params(), weight_decay=0.1)
    for wrapped in (
        LightningOptimizer(adamw),
        Wrapper(adamw),
        Wrapper(adamw, "base_optimizer"),
        Wrapper(Wrapper(LightningOptimizer(adamw)), "base_optimizer"),
    ):
        assert unwrap_optimizer(wrapped) is adamw
        assert decay_kind(wrapped) == "decoupled"
        assert unit_rms_updates(wrapped)
    assert decay_kind(LightningOptimizer(adam)) == "coupled"
    assert "optimizer 0 (torch.optim.Adam) adds" in unsupported_message(LightningOptimizer(adam), 0)
    assert decay_kind(Wrapper(PlainOptimizer(matrix_params(), weight_decay=0.1))) == "unknown"
    assert decay_kind(SelfWrapping(matrix_params())) == "coupled"  # no endless loop
    assert unwrap_optimizer(adamw) is adamw


def test_registered_wrapper_judged_itself() -> None:
    class AveragingWrapper(Wrapper):  # e.g. a wrapper that moves the weights itself (Lookahead's slow weights)
        param_groups: list[dict[str, Any]] = []

    register_decay_kind(AveragingWrapper, "coupled")
    inner = torch.optim.AdamW(matrix_params())
    assert decay_kind(AveragingWrapper(inner)) == "coupled"


def test_decay_kind_rejects_what_not_optimizer() -> None:
    with pytest.raises(TypeError, match=r"expects a torch optimizer \(or a wrapper holding one\), got str"):
        decay_kind("adamw")
