"""``build_param_groups``: which parameters decay on a small transformer and a ResNet-style block, the muP
split without mup, and the errors."""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

from lightning_tau.param_groups import build_param_groups, decays


class TinyTransformer(nn.Module):
    """Token embedding + learned positions + one encoder layer + head; timm-style ``no_weight_decay()``."""

    def __init__(self, width: int = 8, vocab: int = 11) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.pos_embed = nn.Parameter(torch.zeros(1, 5, width))
        self.layer = nn.TransformerEncoderLayer(width, nhead=2, dim_feedforward=2 * width, batch_first=True)
        self.frozen_table = nn.Parameter(torch.zeros(3, 3), requires_grad=False)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab)

    def no_weight_decay(self) -> set[str]:
        return {"pos_embed"}


class ResidualBlock(nn.Module):
    """ResNet basic block with a 1x1 projection shortcut, then a classifier."""

    def __init__(self, cin: int = 3, cout: int = 4) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.fc = nn.Linear(cout, 2)


def names_by_group(model: nn.Module, groups: list[dict]) -> dict[str, set[str]]:
    name_of = {id(p): n for n, p in model.named_parameters()}
    return {g["name"]: {name_of[id(p)] for p in g["params"]} for g in groups}


def test_transformer_decays_matrices_only() -> None:
    model = TinyTransformer()
    groups = build_param_groups(model, weight_decay=0.1)
    by_name = names_by_group(model, groups)
    assert by_name["decay"] == {
        "embed.weight",
        "layer.self_attn.in_proj_weight",
        "layer.self_attn.out_proj.weight",
        "layer.linear1.weight",
        "layer.linear2.weight",
        "head.weight",
    }
    assert by_name["no_decay"] == {
        "pos_embed",  # the model's own no_weight_decay()
        "layer.self_attn.in_proj_bias",
        "layer.self_attn.out_proj.bias",
        "layer.linear1.bias",
        "layer.linear2.bias",
        "layer.norm1.weight",
        "layer.norm1.bias",
        "layer.norm2.weight",
        "layer.norm2.bias",
        "norm.weight",
        "norm.bias",
        "head.bias",
    }
    assert [(g["name"], g["weight_decay"], g["width_mult"]) for g in groups] == [
        ("decay", 0.1, 1.0),
        ("no_decay", 0.0, 1.0),
    ]
    assert "lr" not in groups[0]  # the optimizer's default lr applies
    # every trainable parameter exactly once, the frozen one left out
    listed = [p for g in groups for p in g["params"]]
    assert len(listed) == len({id(p) for p in listed}) == sum(p.requires_grad for p in model.parameters())
    assert all(p is not model.frozen_table for p in listed)
    torch.optim.AdamW(groups, lr=1e-3)  # accepted as is


def test_resnet_block_decays_convs_and_fc_weight() -> None:
    model = ResidualBlock()
    by_name = names_by_group(model, build_param_groups(model, weight_decay=5e-4, lr=0.1))
    assert by_name["decay"] == {"conv1.weight", "conv2.weight", "downsample.0.weight", "fc.weight"}
    assert by_name["no_decay"] == {
        "bn1.weight",
        "bn1.bias",
        "bn2.weight",
        "bn2.bias",
        "downsample.1.weight",
        "downsample.1.bias",
        "fc.bias",
    }


def test_extra_no_weight_decay_prefixes_and_globs() -> None:
    model = TinyTransformer()
    by_name = names_by_group(model, build_param_groups(model, 0.1, no_weight_decay=["embed", "layer.*_proj*"]))
    assert by_name["decay"] == {"layer.linear1.weight", "layer.linear2.weight", "head.weight"}
    assert not decays("bias", torch.zeros(2, 2))  # a parameter named bias never decays, whatever its shape


def test_width_mult_split_without_mup() -> None:
    model = TinyTransformer()
    groups = build_param_groups(model, weight_decay=0.1, lr=1e-3, width_mult={"layer": 4.0, "head": 2.0})
    by_name = names_by_group(model, groups)
    assert by_name["decay_s4"] == {
        "layer.self_attn.in_proj_weight",
        "layer.self_attn.out_proj.weight",
        "layer.linear1.weight",
        "layer.linear2.weight",
    }
    assert by_name["decay_s2"] == {"head.weight"}
    assert by_name["decay"] == {"embed.weight"}
    assert "layer.linear1.bias" in by_name["no_decay"]  # vectors keep s = 1 under Adam-style muP
    lr_wd = {g["name"]: (g["lr"], g["weight_decay"]) for g in groups}
    assert lr_wd == {
        "decay": (1e-3, 0.1),
        "decay_s2": (pytest.approx(5e-4), pytest.approx(0.2)),
        "decay_s4": (pytest.approx(2.5e-4), pytest.approx(0.4)),
        "no_decay": (1e-3, 0.0),
    }
    # the muP rule holds tau_iter: the same lr * weight_decay in every decaying group
    assert {round(g["lr"] * g["weight_decay"], 15) for g in groups if g["weight_decay"]} == {1e-4}
    # a function works as well as a mapping
    same = build_param_groups(model, 0.1, 1e-3, width_mult=lambda name, p: 4.0 if name.startswith("layer") else 1.0)
    assert names_by_group(model, same)["decay_s4"] == by_name["decay_s4"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"weight_decay": -0.1}, r"`build_param_groups\(weight_decay=-0.1\)` is not valid"),
        ({"weight_decay": 0.1, "lr": 0.0}, r"`build_param_groups\(lr=0.0\)` is not valid"),
        ({"weight_decay": 0.1, "mup": True}, r"needs the base `lr`"),
        ({"weight_decay": 0.1, "lr": 1e-3, "mup": True}, r"Did you forget to call `mup.set_base_shapes"),
        ({"weight_decay": 0.1, "lr": 1e-3, "width_mult": {"head": 0}}, r"gave 0.0 for parameter 'head.weight'"),
    ],
)
def test_bad_arguments_raise(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        build_param_groups(TinyTransformer(), **kwargs)


def test_no_trainable_parameter_raises() -> None:
    frozen = nn.Linear(2, 2).requires_grad_(False)
    with pytest.raises(ValueError, match="no parameter with `requires_grad=True` in Linear"):
        build_param_groups(frozen, 0.1)


def test_matrix_named_bias_not_decay_and_bad_multiplier_message_whole() -> None:
    assert not decays("proj.bias", torch.zeros(2, 2)) and not decays("bias", torch.zeros(2, 2))
    assert decays("proj.weight", torch.zeros(2, 2))
    model = nn.Sequential(nn.Linear(2, 2))
    message = (
        "`build_param_groups(width_mult=...)` gave -1.0 for parameter '0.weight': multipliers must be positive finite"
        " numbers (the model's width over the base model's width)."
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        build_param_groups(model, 0.1, 1e-3, width_mult={"0": -1.0})
