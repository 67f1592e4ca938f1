"""muP across widths: real mup (``set_base_shapes``, ``MuReadout``, ``MuAdamW``), nanoGPT-mup style groups, and
the fixed-λ pitfall. After ``TimescaleCallback`` every decaying group must have the same ``lr * weight_decay``
at every width (the paper's Eq. improved_mup), i.e. matrix-like groups get ``s`` times the base weight decay."""

from __future__ import annotations

import math
import warnings
from typing import Any

import mup
import pytest
import torch
from tiny_model import make_loader, quiet_trainer
from loggers import MemoryLogger
from mup_models import BASE_WIDTH, LR, MLP, TAU_EPOCH, WD, Module, mup_mlp, nanogpt_mup_groups
from torch import nn

from lightning_tau import TimescaleCallback
from lightning_tau.param_groups import build_param_groups
from lightning_tau.width import GroupRate, find_fixed_lambda_pitfall, param_width_mult

N, B = 120, 10  # make_loader(): 12 steps per epoch
TAU_ITER = TAU_EPOCH * N / B


def fit(net: nn.Module, make_optimizer: Any, **trainer_kwargs: Any) -> tuple[TimescaleCallback, torch.optim.Optimizer]:
    callback = TimescaleCallback(tau_epoch=TAU_EPOCH, verbose=False)
    trainer = quiet_trainer(callbacks=[callback], max_steps=3, **trainer_kwargs)
    trainer.fit(Module(net, make_optimizer), make_loader(n=N, batch_size=B))
    return callback, trainer.optimizers[0]


def mu_adamw(net: nn.Module) -> torch.optim.Optimizer:
    return mup.MuAdamW(net.parameters(), lr=LR, weight_decay=WD)


def decaying(optimizer: torch.optim.Optimizer) -> list[dict[str, Any]]:
    return [g for g in optimizer.param_groups if g["weight_decay"] > 0]


def matrix_group(optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    (group,) = [g for g in optimizer.param_groups if any(p.infshape.ninf() == 2 for p in g["params"])]
    return group


def test_width_mult_read_from_infshape() -> None:
    net = mup_mlp(4 * BASE_WIDTH)
    assert param_width_mult(net.hidden.weight) == 4.0
    assert param_width_mult(net.inp.weight) == 1.0  # one infinite dimension: vector-like
    assert param_width_mult(net.out.weight) == 1.0  # MuReadout: vector-like
    assert param_width_mult(net.hidden.bias) == 1.0


@pytest.mark.parametrize("width", [BASE_WIDTH, 4 * BASE_WIDTH])
@pytest.mark.slow
def test_mu_adamw_groups_get_same_lr_times_weight_decay_at_every_width(width: int) -> None:
    s = width / BASE_WIDTH
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*pitfall")  # mup 1.0.0 scales the weight decay: no pitfall
        callback, optimizer = fit(mup_mlp(width), mu_adamw)
    assert callback.fixed_lambda_pitfalls == []
    for group in decaying(optimizer):
        assert group["lr"] * group["weight_decay"] == pytest.approx(1 / TAU_ITER, rel=1e-12)
    hidden = matrix_group(optimizer)
    assert hidden["lr"] == pytest.approx(LR / s)
    # base model's matrix-like weight decay is B / (lr N tau_epoch); the s-times-wider one's is s times that
    assert hidden["weight_decay"] == pytest.approx(s * B / (LR * N * TAU_EPOCH), rel=1e-12)
    (summary_row,) = [g for g in callback.groups if g.group_index == optimizer.param_groups.index(hidden)]
    assert summary_row.width_mult == s


@pytest.mark.slow
def test_matrix_weight_decay_scales_with_width_across_two_models() -> None:
    _, base = fit(mup_mlp(BASE_WIDTH), mu_adamw)
    _, wide = fit(mup_mlp(4 * BASE_WIDTH), mu_adamw)
    assert matrix_group(wide)["weight_decay"] == pytest.approx(4 * matrix_group(base)["weight_decay"], rel=1e-12)
    rates = {round(g["lr"] * g["weight_decay"], 15) for opt in (base, wide) for g in decaying(opt)}
    assert rates == {round(1 / TAU_ITER, 15)}


def mu_adamw_decoupled_wd(net: nn.Module) -> torch.optim.Optimizer:
    """What mup's newer ``MuAdamW(decoupled_wd=True)`` builds: ``lr / s`` but the base weight decay."""
    optimizer = mup.MuAdamW(net.parameters(), lr=LR, weight_decay=WD)
    for group in optimizer.param_groups:
        s = max([param_width_mult(p) for p in group["params"]], default=1.0)
        group["weight_decay"] /= s
    return optimizer


@pytest.mark.slow
def test_decoupled_wd_pitfall_reported_and_fixed() -> None:
    match = r"fixed-λ muP pitfall.*s=4, lr\*weight_decay=0\.00025, weight_decay 0\.1 -> 16\.67"
    with pytest.warns(UserWarning, match=match):
        callback, optimizer = fit(mup_mlp(4 * BASE_WIDTH), mu_adamw_decoupled_wd)
    (pitfall,) = callback.fixed_lambda_pitfalls
    assert pitfall.width_mult == 4.0
    assert pitfall.lr_times_weight_decay == pytest.approx(LR / 4 * WD)
    assert pitfall.base_lr_times_weight_decay == pytest.approx(LR * WD)
    assert matrix_group(optimizer)["weight_decay"] == pytest.approx(4 * B / (LR * N * TAU_EPOCH), rel=1e-12)
    for group in decaying(optimizer):
        assert group["lr"] * group["weight_decay"] == pytest.approx(1 / TAU_ITER, rel=1e-12)


@pytest.mark.slow
def test_nanogpt_mup_groups_pitfall_reported_and_fixed() -> None:
    logger = MemoryLogger()
    with pytest.warns(UserWarning, match=r"fixed-λ muP pitfall.*'mup_decay' \(s=4, .*weight_decay 0\.1 -> 16\.67\)"):
        callback, optimizer = fit(MLP(32, readout=False), nanogpt_mup_groups, logger=logger)
    assert [p.name for p in callback.fixed_lambda_pitfalls] == ["mup_decay"]
    hidden, embed, nodecay = optimizer.param_groups
    assert embed["weight_decay"] == pytest.approx(B / (LR * N * TAU_EPOCH))  # 4.1667
    assert hidden["weight_decay"] == pytest.approx(4 * B / (LR * N * TAU_EPOCH))  # 16.667 = s x the base group's
    assert nodecay["weight_decay"] == 0.0
    assert logger.metrics["timescale/width_mult/mup_decay"] == 4.0


def test_param_groups_helper_matches_mu_adamw() -> None:
    """Without MuAdamW, ``build_param_groups(mup=True)`` gives the same decaying groups' lr and weight decay."""
    net = mup_mlp(4 * BASE_WIDTH)
    reference = mup.MuAdamW(net.parameters(), lr=LR, weight_decay=WD)
    groups = build_param_groups(net, weight_decay=WD, lr=LR, mup=True)
    ref = {id(p): (g["lr"], g["weight_decay"]) for g in reference.param_groups for p in g["params"]}
    ours = {id(p): (g["lr"], g["weight_decay"]) for g in groups for p in g["params"]}
    for name, p in net.named_parameters():
        if p.ndim >= 2:  # MuAdamW decays everything; the helper exempts biases and norms
            assert ours[id(p)] == pytest.approx(ref[id(p)]), name
        else:
            assert ours[id(p)] == (pytest.approx(LR), 0.0), name
    hidden = next(g for g in groups if g["name"] == "decay_s4")
    assert hidden["params"] == [net.hidden.weight]


@pytest.mark.slow
def test_param_groups_helper_without_mup_gives_rule_through_callback() -> None:
    net = MLP(32, readout=False)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*pitfall")
        callback, optimizer = fit(
            net, lambda net: torch.optim.AdamW(build_param_groups(net, WD, LR, width_mult={"hidden": 4.0}), lr=LR)
        )
    names = [g["name"] for g in optimizer.param_groups]
    assert names == ["decay", "decay_s4", "no_decay"]
    decay, hidden, _ = optimizer.param_groups
    assert hidden["params"] == [net.hidden.weight] and hidden["lr"] == LR / 4
    assert hidden["weight_decay"] == pytest.approx(4 * decay["weight_decay"], rel=1e-12)
    assert decay["weight_decay"] == pytest.approx(B / (LR * N * TAU_EPOCH))
    assert [g.width_mult for g in callback.groups] == [1.0, 4.0, 1.0]
    assert callback.fixed_lambda_pitfalls == []


def test_pitfall_logic_without_base_group() -> None:
    """Only width-scaled decaying groups: s * lr * wd constant across two multipliers is the fixed-λ signature."""
    fixed = [GroupRate("a", LR / 2, WD, 2.0), GroupRate("b", LR / 4, WD, 4.0)]
    assert [p.name for p in find_fixed_lambda_pitfall(fixed)] == ["a", "b"]
    assert find_fixed_lambda_pitfall([GroupRate("a", LR / 2, 2 * WD, 2.0), GroupRate("b", LR / 4, 4 * WD, 4.0)]) == []
    # a single scaled group with nothing to compare against is not judged
    assert find_fixed_lambda_pitfall([GroupRate("a", LR / 2, WD, 2.0)]) == []
    # s close to 1: the muP-correct reading wins when it fits better
    assert find_fixed_lambda_pitfall([GroupRate("a", LR / 1.02, 1.02 * WD, 1.02), GroupRate("b", LR, WD, 1.0)]) == []
    assert math.isclose(find_fixed_lambda_pitfall(fixed)[0].corrected_weight_decay, 2 * WD)


def test_model_without_mup_true_gets_unsplit_groups() -> None:
    """``p.infshape`` is read only with ``mup=True``: without it a mup model gets the plain two groups at s = 1."""
    groups = build_param_groups(mup_mlp(4 * BASE_WIDTH), 0.1, 1e-3)
    assert [(g["name"], g["width_mult"], g["lr"], g["weight_decay"]) for g in groups] == [
        ("decay", 1.0, 1e-3, 0.1),
        ("no_decay", 1.0, 1e-3, 0.0),
    ]
