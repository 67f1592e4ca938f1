"""``TimescaleCallback(width_exponent=alpha)``: every decaying group's timescale x ``S ** (1 - alpha)`` across muP
widths, ``S`` the model's width multiplier (issue 16, part 3; issue 36: one definition with the finder's width axis).

Real mup (``set_base_shapes``, ``MuReadout``, ``MuAdamW``) at two widths. A torch step post-hook reads every
group's weight decay as each optimizer step used it; at every step a group of width multiplier ``s`` in a model at
``S`` must hold ``s * S ** (alpha - 1) * lambda_base`` (``S ** alpha * lambda_base`` for the hidden group, ``s = S``),
with ``lambda_base = 1 / (lr_base * tau_iter)`` the base width's weight decay.
"""

from __future__ import annotations

import sys
from typing import Any

import lightning.pytorch as pl
import pytest
import torch
from tiny_model import make_loader, quiet_trainer
from mup_models import BASE_WIDTH, LR, MLP, WD, Module, mu_adamw, mup_mlp, nanogpt_mup_groups
from torch import nn

from lightning_tau import TimescaleCallback
from lightning_tau.param_groups import build_param_groups
from lightning_tau.width import param_width_mult

TAU_EPOCH = 2.0
N, B = 120, 10  # make_loader(): 12 optimizer steps per epoch
TAU_ITER = TAU_EPOCH * N / B
LAMBDA_BASE = 1 / (LR * TAU_ITER)


class PostStep(pl.Callback):
    """Per optimizer step: [(s, lr, weight_decay) per group], read by a torch step post-hook (what the step used)."""

    def __init__(self) -> None:
        self.steps: list[list[tuple[float, float, float]]] = []
        self._handles: list[Any] = []

    def on_train_start(self, trainer: pl.Trainer, pl_module: Any) -> None:
        self._handles = [o.register_step_post_hook(self._post) for o in trainer.optimizers]

    def _post(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        self.steps.append([(_group_s(g), float(g["lr"]), float(g["weight_decay"])) for g in optimizer.param_groups])

    def on_train_end(self, trainer: pl.Trainer, pl_module: Any) -> None:
        for handle in self._handles:
            handle.remove()


def _group_s(group: dict[str, Any]) -> float:
    if "width_mult" in group:
        return float(group["width_mult"])
    return max(param_width_mult(p) for p in group["params"])  # 1 without mup


def fit(
    net: nn.Module, make_optimizer: Any = mu_adamw, mode: str = "constant", **callback_kwargs: Any
) -> tuple[PostStep, TimescaleCallback]:
    log = PostStep()
    callback = TimescaleCallback(tau_epoch=TAU_EPOCH, mode=mode, verbose=False, decay_vectors=True, **callback_kwargs)
    quiet_trainer(callbacks=[callback, log], max_epochs=2).fit(
        Module(net, make_optimizer), make_loader(n=N, batch_size=B)
    )
    assert len(log.steps) == 2 * N // B  # two epochs: the epoch-1 re-decision takes the same path
    return log, callback


@pytest.mark.slow
def test_alpha_one_todays_rule_bit_for_bit() -> None:
    width = 4 * BASE_WIDTH  # at the base width every s is 1: nothing to tell apart
    default, _ = fit(mup_mlp(width))
    explicit, callback = fit(mup_mlp(width), width_exponent=1.0)
    assert explicit.steps == default.steps  # exact equality: the default path is untouched
    for step in explicit.steps:
        for group_s, _, wd in step:
            assert wd == pytest.approx(group_s * LAMBDA_BASE, rel=1e-12)  # lambda = s * lambda_base
    assert [g.width_mult for g in callback.groups] == [width / BASE_WIDTH, None]  # matrix-like, vector-like


@pytest.mark.parametrize("alpha", [0.5, 0.0])
@pytest.mark.slow
def test_alpha_scales_every_groups_weight_decay_by_models_s_at_every_step(alpha: float) -> None:
    matrix_wd, vector_wd = {}, {}
    for width in (BASE_WIDTH, 4 * BASE_WIDTH):
        log, callback = fit(mup_mlp(width), width_exponent=alpha)
        s = width / BASE_WIDTH  # the model's S: the hidden group's multiplier
        for step in log.steps:
            assert [group_s for group_s, _, _ in step] == [s, 1.0]  # MuAdamW: matrix-like, then vector-like
            for group_s, lr, wd in step:
                assert wd == pytest.approx(group_s * s ** (alpha - 1) * LAMBDA_BASE, rel=1e-12), (width, group_s, wd)
                # every group's tau_iter is S ** (1 - alpha) times the base width's, the vector group's too
                assert 1 / (lr * wd) == pytest.approx(s ** (1 - alpha) * TAU_ITER, rel=1e-12)
        hidden, vector = callback.groups
        assert (vector.width_exponent, hidden.width_exponent) == (alpha, alpha)
        assert hidden.tau_iter == pytest.approx(s ** (1 - alpha) * TAU_ITER) == vector.tau_iter
        matrix_wd[width], vector_wd[width] = log.steps[-1][0][2], log.steps[-1][1][2]
    if alpha == 0.0:  # direct muP: lambda fixed across widths for the hidden matrix, eta * lambda ∝ 1/S everywhere
        assert matrix_wd[4 * BASE_WIDTH] == pytest.approx(matrix_wd[BASE_WIDTH], rel=1e-12) == LAMBDA_BASE
        assert vector_wd[4 * BASE_WIDTH] == pytest.approx(LAMBDA_BASE / 4, rel=1e-12)
    else:
        assert matrix_wd[4 * BASE_WIDTH] == pytest.approx(2 * LAMBDA_BASE, rel=1e-12)  # sqrt(4)
        assert vector_wd[4 * BASE_WIDTH] == pytest.approx(LAMBDA_BASE / 2, rel=1e-12)  # 4 ** (0.5 - 1)
    assert vector_wd[BASE_WIDTH] == LAMBDA_BASE  # at the base width S = 1: nothing moves


@pytest.mark.slow
def test_alpha_in_per_step_mode_holds_each_groups_own_timescale() -> None:
    def cosine(net: nn.Module) -> Any:
        opt = mu_adamw(net)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=24, eta_min=LR / 10)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    log, _ = fit(mup_mlp(4 * BASE_WIDTH), cosine, mode="per_step", width_exponent=0.5)
    for step in log.steps:
        for _, lr, wd in step:  # lr_t * wd_t = 1 / (tau_iter * S ** (1 - alpha)) at every step, S = 4
            assert lr * wd == pytest.approx(1 / (TAU_ITER * 4**0.5), rel=1e-12)


@pytest.mark.slow
def test_mapping_sets_alpha_per_group_and_others_keep_one() -> None:
    # nanoGPT-mup style groups, with the readout held apart in its own width-scaled group
    def groups(net: MLP) -> torch.optim.Optimizer:
        return torch.optim.AdamW(
            [
                {"params": [net.hidden.weight], "lr": LR / 4, "weight_decay": WD, "width_mult": 4.0, "name": "hidden"},
                {"params": [net.out.weight], "lr": LR / 4, "weight_decay": WD, "width_mult": 4.0, "name": "readout"},
                {"params": [net.inp.weight], "weight_decay": WD, "name": "embed"},
            ],
            lr=LR,
        )

    with pytest.warns(UserWarning, match=r"fixed-λ muP pitfall.*'readout' \(s=4"):
        log, callback = fit(MLP(32, readout=False), groups, width_exponent={"hidden": 0.0})
    for step in log.steps:
        (_, _, hidden), (_, _, readout), (_, _, embed) = step
        assert hidden == pytest.approx(LAMBDA_BASE, rel=1e-12)  # alpha 0: the base weight decay
        assert readout == pytest.approx(4 * LAMBDA_BASE, rel=1e-12)  # not named: alpha 1, s * lambda_base
        assert embed == pytest.approx(LAMBDA_BASE, rel=1e-12)  # no width_mult key, but alpha 1 needs no s
    assert [g.width_exponent for g in callback.groups] == [0.0, 1.0, 1.0]
    # both were configured lr / s with the base weight decay; alpha 0 on 'hidden' is a choice, not the pitfall
    assert [p.name for p in callback.fixed_lambda_pitfalls] == ["readout"]


def assert_fit_raises(match: str, net: nn.Module, make_optimizer: Any, **callback_kwargs: Any) -> None:
    model = Module(net, make_optimizer)
    before = [p.detach().clone() for p in model.parameters()]
    callback = TimescaleCallback(tau_epoch=TAU_EPOCH, verbose=False, decay_vectors=True, **callback_kwargs)
    with pytest.raises(ValueError, match=match):
        quiet_trainer(callbacks=[callback], max_epochs=1).fit(model, make_loader(n=N, batch_size=B))
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


@pytest.mark.slow
def test_group_of_unknown_width_error_naming_it() -> None:
    # the 'decay' group has no `width_mult` key and no mup infshape: s is unknown
    assert_fit_raises(
        r"`width_exponent=0.5` for param group 'decay' needs its muP width multiplier s, but it has no `width_mult`"
        r" key and its parameters carry no mup `infshape`\. Call `mup.set_base_shapes`.*`width_mult` key.*"
        r"`width_exponent=\{\.\.\., 'decay': 1.0\}`",
        MLP(32, readout=False),
        nanogpt_mup_groups,
        width_exponent=0.5,
    )
    # plain AdamW over a mup model puts s = 1 and s = 4 parameters in one group: no single s
    assert_fit_raises(
        r"param group 'pg1' .* different width multipliers \(1, 4\)",
        mup_mlp(4 * BASE_WIDTH),
        lambda net: torch.optim.AdamW(net.parameters(), lr=LR, weight_decay=WD),
        width_exponent=0.0,
    )


@pytest.mark.slow
def test_mapping_naming_unknown_group_error_naming_known_ones() -> None:
    assert_fit_raises(
        r"`width_exponent` names param group\(s\) \['hiden'\] that this run does not have\. Its groups are"
        r" \['pg1', 'pg2'\]",
        mup_mlp(4 * BASE_WIDTH),
        mu_adamw,
        width_exponent={"hiden": 0.5},
    )


@pytest.mark.slow
def test_build_param_groups_declares_every_width() -> None:
    net = MLP(32, readout=False)
    log, _ = fit(
        net,
        lambda net: torch.optim.AdamW(build_param_groups(net, WD, LR, width_mult={"hidden": 4.0}), lr=LR),
        width_exponent=0.5,
    )
    for step in log.steps:  # the model is at S = 4: the s = 1 'decay' group moves by 4 ** (0.5 - 1) too
        decay, hidden, no_decay = (wd for _, _, wd in step)
        assert (decay, hidden, no_decay) == (pytest.approx(LAMBDA_BASE / 2), pytest.approx(2 * LAMBDA_BASE), 0.0)


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (float("nan"), r"`TimescaleCallback\(width_exponent=nan\)` is not valid: use a finite number alpha"),
        (float("inf"), r"width_exponent=inf\)` is not valid"),
        ("half", r"width_exponent='half'\)` is not valid"),
        (True, r"width_exponent=True\)` is not valid"),
        ({"hidden": None}, r"width_exponent=\{'hidden': None\}\)` is not valid: entry 'hidden': None"),
        ({0: 0.5}, r"entry 0: 0.5"),
    ],
)
def test_bad_width_exponent_error_at_construction(value: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        TimescaleCallback(tau_epoch=TAU_EPOCH, width_exponent=value)


@pytest.mark.parametrize(
    ("text", "expected"), [("0.5", 0.5), ("{hidden: 0.0, readout: 1}", {"hidden": 0.0, "readout": 1.0})]
)
def test_lightning_cli_parses_number_and_mapping(monkeypatch: pytest.MonkeyPatch, text: str, expected: Any) -> None:
    from lightning.pytorch.cli import LightningCLI

    from lightning_tau.demos.digits import DigitsDataModule, DigitsMLP

    monkeypatch.setattr(sys, "argv", ["lightning-tau-test"])
    cli = LightningCLI(
        DigitsMLP,
        DigitsDataModule,
        args=[
            "--trainer.callbacks+=lightning_tau.TimescaleCallback",
            "--trainer.callbacks.tau_epoch=5",
            f"--trainer.callbacks.width_exponent={text}",
            "--trainer.logger=false",
        ],
        run=False,
    )
    (callback,) = [c for c in cli.trainer.callbacks if isinstance(c, TimescaleCallback)]
    assert callback.width_exponent == expected and type(callback.width_exponent) is type(expected)


@pytest.mark.slow
def test_model_without_mup_ignores_exponent_with_one_warning() -> None:
    # plain AdamW over a plain model: no group has a width multiplier, so every group is at s = 1 and needs none
    def plain(net: nn.Module) -> torch.optim.Optimizer:
        return torch.optim.AdamW(net.parameters(), lr=LR, weight_decay=WD)

    default, _ = fit(MLP(32, readout=False), plain)
    with pytest.warns(
        UserWarning, match=r"`TimescaleCallback\(width_exponent=0.5\)` has no effect: no param group"
    ) as record:
        log, callback = fit(MLP(32, readout=False), plain, width_exponent=0.5)
    assert sum("has no effect" in str(w.message) for w in record) == 1
    assert log.steps == default.steps  # the weight decay the default writes, at every step
    assert all(wd == pytest.approx(LAMBDA_BASE, rel=1e-12) for step in log.steps for _, _, wd in step)
