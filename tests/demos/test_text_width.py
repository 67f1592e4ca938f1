"""``lightning-tau demo --task text --axis width``: the finder's width axis on the μP byte-level GPT, end to end.

What must hold: every optimizer step of the hidden matrices uses ``s λ_base`` with μP's ``η_base / s``, the token
embedding ``λ_base`` (read by this test's own torch step post-hook, by parameter name); and ``summary.json``'s
exponent, interval or reason, per-seed optima, interior tests and verdict are the stats module's on its own curves,
which are the runs the finder logged (:func:`test_demo_width.check_width_summary`).
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import torch

pytest.importorskip("mup")
pytest.importorskip("matplotlib")

import lightning.pytorch as pl  # noqa: E402
from demos import check_width_summary  # noqa: E402  (shared with the digits sweep's test)
from lightning.pytorch.callbacks import Callback  # noqa: E402

from lightning_tau import TimescaleCallback  # noqa: E402
from lightning_tau.cli import main  # noqa: E402
from lightning_tau.demos.text import ByteGPT, TextDataModule, load_stdlib_corpus, stdlib_sources  # noqa: E402
from lightning_tau.demos.text_width import (  # noqa: E402
    QUICK_HELD_OUT,
    MuByteGPT,
    TextWidthConfig,
    run_text_width_demo,
)
from lightning_tau.tuner.analysis.scaling import MIN_SEEDS_FOR_INTERVAL  # noqa: E402

#: 2 widths (n_embd 8 and 32: s = 4) x 3 λ_base x 1 seed, one epoch of 15 steps per run.
SHAPE = ["--max-tokens", "4000", "--val-tokens", "1000", "--block-size", "16", "--batch-size", "16"]
SHAPE += ["--n-layer", "1", "--n-head", "2", "--epochs", "1", "--accelerator", "cpu"]
SWEEP = ["--widths", "8", "32", "--weight-decays", "0.5", "8", "64", "--seeds", "0", "--lr-base", "0.01", *SHAPE]
TINY = TextWidthConfig(
    widths=[8, 32], weight_decays=[0.5, 2.0, 8.0], seeds=[0], epochs=1, batch_size=16, block_size=16, n_layer=1,
    n_head=2, max_tokens=4000, val_tokens=1000, lr=0.01, warmup_fraction=0.0, accelerator="cpu",
)  # fmt: skip

HIDDEN = ("attn.qkv.weight", "attn.proj.weight", "mlp.0.weight", "mlp.2.weight")


class _EveryStep(Callback):
    """A torch step post-hook on every trial: per (width, λ_base), each parameter kind's (weight_decay, initial_lr)."""

    def __init__(self) -> None:
        self.seen: dict[tuple[int, float], dict[str, set[tuple[float, float]]]] = {}
        self.steps: dict[tuple[int, float], int] = defaultdict(int)

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        tau = next(c for c in trainer.callbacks if isinstance(c, TimescaleCallback)).tau_epoch
        key = (pl_module.width, round(1.0 / (TINY.lr * trainer.num_training_batches * tau), 9))
        seen = self.seen.setdefault(key, defaultdict(set))
        kind = {}
        for name, p in pl_module.named_parameters():
            kind[id(p)] = "hidden" if name.endswith(HIDDEN) else name.split(".")[0] if "." in name else name

        def hook(opt: Any, args: Any, kwargs: Any) -> None:
            self.steps[key] += 1
            for group in opt.param_groups:
                for p in group["params"]:
                    seen[kind[id(p)]].add((float(group["weight_decay"]), float(group["initial_lr"])))

        trainer.optimizers[0].register_step_post_hook(hook)


@pytest.mark.slow
def test_hidden_matrices_step_with_s_lambda_base_at_every_step(tmp_path: Path) -> None:
    every = _EveryStep()
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.filterwarnings("ignore", message=r".*(does not have many workers|less than one)")
        summary = run_text_width_demo(TINY, tmp_path, plot=False, progress=False, callbacks=[every])
    # the configured grid, and the points the finder's grid extension added at every width (summary["grid_added"])
    assert {(w, lam) for w in TINY.widths for lam in TINY.weight_decays} <= set(every.seen)
    assert len(every.seen) == len(TINY.widths) * len(summary["xs"]) and summary["task"] == "text"
    assert len(summary["xs"]) == len(TINY.weight_decays) + len(summary["grid_added"])
    for (width, lam), seen in every.seen.items():
        s = width / TINY.base_width
        assert every.steps[(width, lam)] == (4000 - 1) // 16 // 16  # whole batches of 16 windows of 16
        # one (weight_decay, lr) pair over every step of the run, per kind of parameter
        assert len(seen["hidden"]) == 1 and next(iter(seen["hidden"])) == pytest.approx((lam * s, TINY.lr / s))
        assert len(seen["tok"]) == 1 and next(iter(seen["tok"])) == pytest.approx((lam, TINY.lr))  # vector-like
        for kind in ("head", "pos", "ln_f"):  # the MuReadout, the position embedding, the norms: no decay
            assert {wd for wd, _ in seen[kind]} == {0.0}, kind


@pytest.mark.slow
def test_sweep_summary_follows_from_curves(tmp_path: Path) -> None:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["demo", "--task", "text", "--axis", "width", *SWEEP, "--out", str(tmp_path), "--no-progress"])
    assert code == 0
    sweep = tmp_path / "sweep_0"
    summary = check_width_summary(sweep, buffer.getvalue(), [8, 32], [0.5, 8.0, 64.0], [0])
    assert summary["task"] == "text" and summary["lr_base"] == 0.01
    # validated on held-out files, and says so
    assert "validation: 1,000 bytes of held-out files (split_seed 0)" in buffer.getvalue()
    assert summary["config"]["split_seed"] == 0 and summary["config"]["val_tokens"] == 1000
    assert summary["exponent_ci"] is None and "1 seed" in summary["ci_reason"]
    assert (sweep / "width_sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_mu_byte_gpt_scales_attention_and_init_with_width() -> None:
    model = MuByteGPT(width=64, block_size=8, n_layer=1, n_head=2).set_base_shapes(base_width=16)
    assert model.blocks[0].attn.scale == 1 / 32  # μP: 1 / head dim
    assert float(model.head.weight.detach().abs().max()) == 0.0  # zero-initialised readout
    # hidden matrices: std 0.02 / sqrt(s); the token embedding (vector-like) keeps 0.02
    assert float(model.blocks[0].mlp[2].weight.detach().std()) == pytest.approx(0.02 / 2, rel=0.05)
    assert float(model.tok.weight.detach().std()) == pytest.approx(0.02, rel=0.05)
    # the message names the argument as MuByteGPT calls it (was "`MuByteGPT(width=30, n_head=4)`: width must be a
    # multiple of n_head": now in _checks' form, saying what to pass)
    with pytest.raises(ValueError, match=r"^`MuByteGPT\(width=30\)` is not valid: use a multiple of n_head=4 "):
        MuByteGPT(width=30, n_head=4)


def test_mu_byte_gpt_byte_gpt_with_mup_true() -> None:
    """The width sweep's model is ``ByteGPT(mup=True)``; ``MuByteGPT(width=w)`` is the same model, draw for draw."""
    shape = {"block_size": 8, "n_layer": 1, "n_head": 2, "decay_input": False}
    torch.manual_seed(0)
    alias = MuByteGPT(width=64, **shape).set_base_shapes(base_width=16)
    torch.manual_seed(0)
    model = ByteGPT(n_embd=64, mup=True, **shape).set_base_shapes(base_width=16)
    assert alias.state_dict().keys() == model.state_dict().keys()
    assert all(torch.equal(a, b) for a, b in zip(alias.state_dict().values(), model.state_dict().values()))
    groups = [[(g["name"], g["lr"], g["weight_decay"], len(g["params"])) for g in m.build_optimizer().param_groups]
              for m in (alias, model)]  # fmt: skip
    assert groups[0] == groups[1] and ("no_decay_vector_like", 0.003, 0.0, 13) in groups[0]  # tok does not decay
    config = TextWidthConfig(widths=[16, 64], block_size=8, n_layer=1, n_head=2)
    assert type(config.model(64)) is ByteGPT and config.model(64).mup


def test_full_form_fits_corpus_and_keeps_lr_times_lambda_below_one() -> None:
    from lightning_tau.demos.text import load_stdlib_corpus

    config = TextWidthConfig()
    train, val = load_stdlib_corpus(config.max_tokens, config.val_tokens)
    assert (len(train), len(val)) == (config.max_tokens, config.val_tokens)
    assert config.lr * max(config.weight_decays) < 1
    assert config.widths == [128, 256, 512, 1024] and config.num_runs == 4 * 7 * 3


def _files_in(data: torch.Tensor, fingerprints: dict[int, bytes]) -> set[int]:
    """The files (by index) whose fingerprint is in ``data``'s bytes."""
    raw = data.flatten().to(torch.uint8).numpy().tobytes()
    return {index for index, fingerprint in fingerprints.items() if fingerprint in raw}


def test_validation_held_out_files_picked_by_seed() -> None:
    # each file's first 200 bytes identify it (files this short are left out)
    fingerprints = {i: f.read_bytes()[:200] for i, f in enumerate(stdlib_sources())}
    fingerprints = {i: fp for i, fp in fingerprints.items() if len(fp) == 200}
    load = load_stdlib_corpus.__wrapped__  # uncached: the same seed must give the same split, not the same object
    held_out = {}
    for seed in (0, 1):
        train, val = load(48_000, 16_000, seed)
        assert (len(train), len(val)) == (48_000, 16_000)
        in_train, in_val = _files_in(train, fingerprints), _files_in(val, fingerprints)
        assert in_train and in_val and not in_train & in_val  # no file in both sets
        again_train, again_val = load(48_000, 16_000, seed)
        assert torch.equal(train, again_train) and torch.equal(val, again_val)  # deterministic from the seed
        held_out[seed] = in_val
    assert held_out[0] != held_out[1]  # the seed picks the files
    # the width sweep's data module reads its config's split
    dm = TextWidthConfig(max_tokens=48_000, val_tokens=16_000, block_size=32, batch_size=8, split_seed=1).datamodule()
    dm.setup("fit")
    assert dm.val_set is not None and _files_in(dm.val_set.tensors[0], fingerprints) == held_out[1]


def test_quick_text_width_held_out_file_regime() -> None:
    from lightning_tau.cli.demo import PRESETS

    quick = PRESETS[("text", "width")].quick
    assert quick is QUICK_HELD_OUT
    assert quick.widths[-1] / quick.widths[0] >= 8 and len(quick.seeds) >= MIN_SEEDS_FOR_INTERVAL
    data = quick.datamodule()
    assert 45_000 <= data.dataset_size <= 50_000 and 700 <= quick.epochs * quick.steps_per_epoch <= 800
    assert not quick.decay_input  # only the hidden matrices decay
    lams = sorted(quick.weight_decays)
    i = lams.index(4.0)
    assert 0 < i < len(lams) - 1 and lams[i - 1] in (1.0, 2.0) and lams[i + 1] in (8.0, 16.0)  # around 4, x2 or x4
    assert quick.lr * lams[-1] < 1


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: TextDataModule(split_seed=-1), r"`TextDataModule\(split_seed=-1\)` is not valid: use an integer >= 0"),
        (lambda: TextDataModule(split_seed=True), r"`TextDataModule\(split_seed=True\)` is not valid"),
        (lambda: TextDataModule(split_seed=0.5), r"`TextDataModule\(split_seed=0.5\)` is not valid"),
        (lambda: TextWidthConfig(split_seed=-3).datamodule(), r"`TextDataModule\(split_seed=-3\)` is not valid"),
        (lambda: load_stdlib_corpus(1000, 100, -1), r"`load_stdlib_corpus\(split_seed=-1\)` is not valid"),
        (lambda: load_stdlib_corpus(0, 100), r"`load_stdlib_corpus\(max_tokens=0\)` is not valid: use a positive"),
        (lambda: load_stdlib_corpus(1000, "9"), r"`load_stdlib_corpus\(val_tokens='9'\)` is not valid"),
    ],
    ids=["negative", "bool", "float", "config", "corpus-seed", "corpus-max-tokens", "corpus-val-tokens"],
)
def test_bad_split_arguments_one_line_errors(build: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        build()
    assert "\n" not in str(info.value)
