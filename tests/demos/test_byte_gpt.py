"""The text task's model (``lightning_tau.demos.byte_gpt``): which weights ``ByteGPT`` decays, that it is causal, and
its argument checks. Its μP form against ``MuByteGPT`` and the width sweep: ``tests/demos/test_text_width.py``."""

from __future__ import annotations

import pytest
import torch

from lightning_tau.demos.byte_gpt import ByteGPT


def test_decays_matrices_only() -> None:
    model = ByteGPT(block_size=16, n_layer=1, n_head=2, n_embd=16)
    groups = {g["name"]: g for g in model.configure_optimizers()["optimizer"].param_groups}
    names = {id(p): n for n, p in model.named_parameters()}
    no_decay = {names[id(p)] for p in groups["no_decay"]["params"]}
    assert "pos" in no_decay and all(n == "pos" or n.endswith(".bias") or ".ln" in n or "ln_f" in n for n in no_decay)
    assert {names[id(p)] for p in groups["decay"]["params"]} >= {
        "tok.weight",
        "head.weight",
        "blocks.0.attn.qkv.weight",
    }
    # causal: the first position's output does not depend on later tokens
    x = torch.randint(0, 256, (1, 16))
    changed = x.clone()
    changed[0, 5:] = (changed[0, 5:] + 1) % 256
    assert torch.allclose(model(x)[0, :5], model(changed)[0, :5]) and not torch.allclose(model(x), model(changed))


def test_decay_input_false_moves_token_embedding_to_no_decay() -> None:
    model = ByteGPT(block_size=16, n_layer=1, n_head=2, n_embd=16, decay_input=False)
    groups = {g["name"]: g for g in model.build_optimizer().param_groups}
    assert any(p is model.tok.weight for p in groups["no_decay"]["params"])
    assert not any(p is model.tok.weight for p in groups["decay"]["params"])
    assert any(p is model.head.weight for p in groups["decay"]["params"])  # without μP the head decays


def test_set_base_shapes_needs_mup_true() -> None:
    with pytest.raises(ValueError, match=r"^`ByteGPT\(mup=False\)` is not valid: set_base_shapes is for the μP model"):
        ByteGPT(block_size=16, n_layer=1, n_head=2, n_embd=16).set_base_shapes(base_width=8)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_layer": 0}, "`ByteGPT(n_layer=0)` is not valid: use a positive integer."),
        (
            {"n_embd": 30},
            "`ByteGPT(n_embd=30)` is not valid: use a multiple of n_head=4 (every head gets n_embd / n_head).",
        ),
        ({"lr": float("inf")}, "`ByteGPT(lr=inf)` is not valid: use a positive learning rate."),
        ({"weight_decay": -0.1}, "`ByteGPT(weight_decay=-0.1)` is not valid: use a finite value >= 0."),
        ({"weight_decay": 0.0, "mup": True}, "`ByteGPT(weight_decay=0.0)` is not valid: use a positive value."),
        ({"schedule": "linear"}, "`ByteGPT(schedule='linear')` is not supported. Use 'constant' or 'cosine'."),
        ({"warmup_fraction": 1.0}, "`ByteGPT(warmup_fraction=1.0)` is not valid: use a value in [0, 1)."),
        ({"mup": 1}, "`ByteGPT(mup=1)` is not valid: use True or False."),
    ],
)
def test_rejects_bad_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError) as info:
        ByteGPT(**kwargs)
    assert str(info.value) == message
