"""``lightning-tau demo --task text --axis width``: the λ_base width sweep on the μP byte-level GPT, end to end.

What must hold: every optimizer step of the hidden matrices uses ``λ_base`` in the ``fixed`` arm and ``s λ_base``
in the ``timescale`` arm (read by this test's own torch step post-hook, by parameter name), with μP's ``η_base / s``;
and ``summary.json``'s ``best_lambda_base`` and ``interior`` follow from its own ``curves`` (recomputed here
without the package's functions).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mup")
pytest.importorskip("matplotlib")

import lightning.pytorch as pl  # noqa: E402
from lightning.pytorch.callbacks import Callback  # noqa: E402
from test_demo_width import _vertex  # noqa: E402  (the best λ written out, shared with the digits sweep's test)

from lightning_tau.cli import main  # noqa: E402
from lightning_tau.demos.text_width import MuByteGPT, TextWidthConfig, run_one_text_width  # noqa: E402

#: 2 widths (n_embd 8 and 32: s = 4) x 3 λ_base x 1 seed, one epoch of 15 steps per run.
SHAPE = ["--max-tokens", "4000", "--val-tokens", "1000", "--block-size", "16", "--batch-size", "16"]
SHAPE += ["--n-layer", "1", "--n-head", "2", "--epochs", "1", "--accelerator", "cpu"]
SWEEP = ["--widths", "8", "32", "--weight-decays", "0.5", "8", "64", "--seeds", "0", "--lr-base", "0.01", *SHAPE]
TINY = TextWidthConfig(
    widths=[8, 32], weight_decays=[2.0], seeds=[0], epochs=1, batch_size=16, block_size=16, n_layer=1, n_head=2,
    max_tokens=4000, val_tokens=1000, lr=0.01, warmup_fraction=0.0, accelerator="cpu",
)  # fmt: skip

HIDDEN = ("attn.qkv.weight", "attn.proj.weight", "mlp.0.weight", "mlp.2.weight")


class _EveryStep(Callback):
    """A torch step post-hook: each named parameter kind's (weight_decay, lr, initial_lr) at every step."""

    def __init__(self) -> None:
        self.seen: dict[str, set[tuple[float, float]]] = defaultdict(set)
        self.steps = 0

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        kind = {}
        for name, p in pl_module.named_parameters():
            kind[id(p)] = "hidden" if name.endswith(HIDDEN) else name.split(".")[0] if "." in name else name

        def hook(opt: Any, args: Any, kwargs: Any) -> None:
            self.steps += 1
            for group in opt.param_groups:
                for p in group["params"]:
                    self.seen[kind[id(p)]].add((float(group["weight_decay"]), float(group["initial_lr"])))

        trainer.optimizers[0].register_step_post_hook(hook)


@pytest.mark.parametrize("arm", ["fixed", "timescale"])
def test_hidden_matrices_step_with_the_arms_weight_decay_at_every_step(arm: str) -> None:
    lam, lr, s = TINY.weight_decays[0], TINY.lr, 4
    every = _EveryStep()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*(fixed-λ muP pitfall|does not have many workers)")
        run = run_one_text_width(TINY, arm, 32, lam, 0, None, extra_callbacks=[every])
    assert every.steps == run["optimizer_steps"] == (4000 - 1) // 16 // 16  # whole batches of 16 windows of 16
    hidden_wd = lam * s if arm == "timescale" else lam
    # one (weight_decay, lr) pair over every step of the run, per kind of parameter
    assert len(every.seen["hidden"]) == 1 and next(iter(every.seen["hidden"])) == pytest.approx((hidden_wd, lr / s))
    assert len(every.seen["tok"]) == 1 and next(iter(every.seen["tok"])) == pytest.approx((lam, lr))  # vector-like
    for kind in ("head", "pos", "ln_f"):  # the MuReadout, the position embedding, the norms: no decay
        assert {wd for wd, _ in every.seen[kind]} == {0.0}, kind
    assert run["hidden_weight_decay"] == pytest.approx(hidden_wd) and run["task"] == "text"


def test_text_width_sweep_summary_follows_from_its_curves(tmp_path: Path) -> None:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["demo", "--task", "text", "--axis", "width", *SWEEP, "--out", str(tmp_path), "--no-progress"])
    assert code == 0
    sweep = tmp_path / "sweep_0"
    summary = json.loads((sweep / "summary.json").read_text())
    assert (summary["task"], summary["axis"], summary["sweep"]) == ("text", "width", "lambda_base")
    assert summary["lr_base"] == 0.01
    assert summary["widths"] == [8, 32] and set(summary["arms"]) == {"fixed", "timescale"}
    for arm, part in summary["arms"].items():
        best = {}
        for width, rows in part["curves"].items():
            assert [row[0] for row in rows] == [0.5, 8.0, 64.0]
            best[width] = _vertex(rows)
            assert part["best_lambda_base"][width] == pytest.approx(best[width], rel=1e-9), (arm, width)
            i = min(range(3), key=lambda j: math.inf if rows[j][1] is None else rows[j][1])
            interior = i == 1 and all(rows[j][1] is None or rows[j][1] > rows[1][1] for j in (0, 2))  # 1 seed: std 0
            assert part["interior"][width] is interior, (arm, width)
        assert part["exponent"] == pytest.approx(math.log(best["32"] / best["8"]) / math.log(4), abs=1e-9)
    assert summary["arms"]["fixed"]["curves"]["8"] == summary["arms"]["timescale"]["curves"]["8"]
    # the base width once (3 runs), each arm at width 32 (3 runs each), all logged to TensorBoard
    assert len({p.parent for p in sweep.rglob("events.out.tfevents.*")}) == 9
    assert (sweep / "width_sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Exponent of best λ_base in s" in buffer.getvalue()


def test_mu_byte_gpt_scales_attention_and_init_with_width() -> None:
    model = MuByteGPT(width=64, block_size=8, n_layer=1, n_head=2).set_base_shapes(base_width=16)
    assert model.blocks[0].attn.scale == 1 / 32  # μP: 1 / head dim
    assert float(model.head.weight.detach().abs().max()) == 0.0  # zero-initialised readout
    # hidden matrices: std 0.02 / sqrt(s); the token embedding (vector-like) keeps 0.02
    assert float(model.blocks[0].mlp[2].weight.detach().std()) == pytest.approx(0.02 / 2, rel=0.05)
    assert float(model.tok.weight.detach().std()) == pytest.approx(0.02, rel=0.05)
    with pytest.raises(ValueError, match=r"`MuByteGPT\(width=30, n_head=4\)`: width must be a multiple of n_head"):
        MuByteGPT(width=30, n_head=4)


def test_full_form_fits_the_corpus_and_keeps_lr_times_lambda_below_one() -> None:
    from lightning_tau.demos.text import load_stdlib_corpus

    config = TextWidthConfig()
    train, val = load_stdlib_corpus(config.max_tokens, config.val_tokens)
    assert (len(train), len(val)) == (config.max_tokens, config.val_tokens)
    assert config.lr * max(config.weight_decays) < 1
    assert config.widths == [128, 256, 512, 1024] and config.num_runs == 7 * 3 * (1 + 2 * 3)
