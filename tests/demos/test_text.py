"""``lightning-tau demo --task text``: the byte-level GPT on the standard library's sources, offline, end to end."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import torch
from demos import check_text_sweep, offline_command, text_sizes
from lightning.pytorch.callbacks import Callback

from lightning_tau._quiet import quiet_sweep
from lightning_tau.cli import main
from lightning_tau.demos.size import run_size_demo
from lightning_tau.demos.text import TextDataModule, TextDemoConfig, load_stdlib_corpus, stdlib_sources

#: A sweep that trains in seconds: 2 fractions of an 8,000-byte corpus x 2 timescales x 2 seeds x 2 epochs.
TINY = [
    "--fractions", "0.5", "1",
    "--tau-epochs", "1", "8",
    "--seeds", "0", "1",
    "--epochs", "2",
    "--max-tokens", "8000",
    "--val-tokens", "2000",
    "--block-size", "32",
    "--batch-size", "8",
    "--n-layer", "1",
    "--n-head", "2",
    "--n-embd", "16",
    "--accelerator", "cpu",
]  # fmt: skip


def test_offline_guard_refuses_connection(tmp_path: Path) -> None:
    command, env = offline_command(
        tmp_path, "-c", "import socket; socket.create_connection(('127.0.0.1', 9), timeout=1)"
    )
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "network refused by tests/demos/test_text.py" in proc.stderr or command[0].endswith("unshare")


@pytest.mark.slow
def test_offline_writes_best_tau_per_dataset_size(tmp_path: Path) -> None:
    args = ["-m", "lightning_tau", "demo", "--task", "text", *TINY, "--out", str(tmp_path / "runs"), "--no-progress"]
    command, env = offline_command(tmp_path, *args)
    proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sweep = tmp_path / "runs" / "sweep_0"
    assert (sweep / "tau_sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # N in windows of 32 tokens: the finder's share of the (8,000 - 1) // 32 training windows; B = 8 windows
    check_text_sweep(sweep, proc.stdout, runs=2 * 2 * 2, batch_size=8, sizes=text_sizes([0.5, 1.0], 8000, 32))


class _RecordSteps(Callback):
    """What every optimizer step used: the ``decay`` group's ``(initial_lr, weight_decay)``, per run."""

    def __init__(self) -> None:
        self.runs: list[tuple[int, int, list[tuple[float, float]]]] = []

    def on_train_start(self, trainer, pl_module) -> None:  # type: ignore[no-untyped-def]
        used: list[tuple[float, float]] = []
        self.runs.append((len(trainer.train_dataloader.dataset), trainer.num_training_batches, used))
        group = next(g for g in trainer.optimizers[0].param_groups if g["name"] == "decay")
        trainer.optimizers[0].register_step_post_hook(
            lambda *_: used.append((group["initial_lr"], group["weight_decay"]))
        )


@pytest.mark.slow
def test_run_holds_weight_decay_from_size_at_every_step(tmp_path: Path) -> None:
    config = TextDemoConfig(
        sizes=[0.5, 1.0], tau_epochs=[1.0], seeds=[0], epochs=2, batch_size=4, block_size=16, n_layer=1, n_head=2,
        n_embd=16, max_tokens=4000, val_tokens=1000, accelerator="cpu",
    )  # fmt: skip
    steps = _RecordSteps()
    with quiet_sweep(single_thread=True):
        run_size_demo(config, tmp_path, plot=False, progress=False, callbacks=[steps])
    assert sorted(n for n, _, _ in steps.runs) == text_sizes([0.5, 1.0], 4000, 16)
    for n, per_epoch, used in steps.runs:
        # N // B windows is the Trainer's own epoch: the loader drops the last partial batch
        assert per_epoch == n // 4 and len(used) == 2 * per_epoch
        expected = 1 / (config.lr * per_epoch * 1.0)
        for lr, weight_decay in used:
            assert lr == config.lr and weight_decay == pytest.approx(expected, rel=1e-12)


def test_corpus_splits_by_document_and_nests_fractions() -> None:
    train, val = load_stdlib_corpus(30_000, 10_000)
    files = [f.read_bytes() for f in stdlib_sources()]
    # each held-out document is absent from the training bytes (their first 200 bytes, as a fingerprint)
    starts = [f[:200] for f in files if len(f) > 200]
    train_bytes, val_bytes = train.numpy().tobytes(), val.numpy().tobytes()  # once: bytes(tensor) is slow
    in_val = [s for s in starts if s in val_bytes]
    assert in_val and not any(s in train_bytes for s in in_val)
    small, large = TextDataModule(fraction=0.25, max_tokens=30_000), TextDataModule(fraction=1.0, max_tokens=30_000)
    for dm in (small, large):
        dm.setup("fit")
    assert small.train_set is not None and large.train_set is not None and small.val_set is not None
    assert torch.equal(small.train_set.tensors[0], large.train_set.tensors[0][: len(small.train_set)])
    assert large.val_set is not None and torch.equal(small.val_set.tensors[0], large.val_set.tensors[0])
    # inputs and targets are the same bytes shifted by one
    x, y = large.train_set.tensors
    assert torch.equal(x[:, 1:], y[:, :-1]) and torch.equal(x.flatten()[: 30_000 - 64], train[: 30_000 - 64].long())


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: TextDataModule(fraction=0.001, max_tokens=20_000, batch_size=8, block_size=32),
            "`TextDataModule(fraction=0.001)` is not valid: at max_tokens=20,000 it trains on 20 tokens, less than one"
            " batch of batch_size=8 windows of block_size=32. Use a larger fraction or max_tokens, or a smaller batch"
            " or block.",
        ),
        (
            lambda: TextDataModule(val_tokens=32, block_size=64),
            "`TextDataModule(val_tokens=32)` is not valid: it holds no window of block_size=64: use more.",
        ),
        (
            lambda: TextDataModule(fraction=True),
            "`TextDataModule(fraction=True)` is not valid: use a share of the corpus in (0, 1].",
        ),
        (lambda: TextDataModule(block_size=0), "`TextDataModule(block_size=0)` is not valid: use a positive integer."),
        (
            lambda: load_stdlib_corpus(1000, 10**12),
            "`load_stdlib_corpus(val_tokens=1000000000000)` is not valid: the standard library here has",
        ),
    ],
    ids=["one-batch", "val-window", "fraction-bool", "block-size", "corpus-too-small"],
)
def test_data_rejects_bad_sizes_naming_argument(build: Any, message: str) -> None:
    with pytest.raises(ValueError) as info:
        build()
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--axis", "width", "--n-embd", "64"], "--n-embd do not apply to `--task text --axis width`"),
        (["--axis", "width", "--fractions", "0.5"], "--fractions do not apply to `--task text --axis width`"),
        (["--axis", "width", "--lr", "0.01"], "--lr do not apply to `--task text --axis width`"),
        (["--axis", "width", "--widths", "32", "100", "--n-head", "8"], "--widths 100: every width must be a multiple"),
        (["--axis", "width", "--widths", "32"], "--widths 32: give at least two widths to compare"),
        (
            ["--axis", "width", "--lr-base", "0.1", "--weight-decays", "1", "4", "16"],
            "--lr-base 0.1 x --weight-decays 16 >= 1",
        ),
        (["--axis", "width", "--weight-decays", "1", "2"], "--weight-decays 1 2: give at least three λ_base values"),
        (["--hidden", "64"], "--hidden do not apply to `--task text`"),
        (["--sizes", "100"], "--sizes do not apply to `--task text`"),
        (["--n-embd", "30", "--n-head", "4"], "--n-embd 30 must be a multiple of --n-head 4"),
        (["--max-tokens", "100000000"], "max_tokens=100,000,000"),
        (["--fractions", "0.001", "--max-tokens", "20000"], "less than one batch"),
    ],
)
def test_bad_options_fail_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code = main(["demo", "--task", "text", *args, "--out", str(tmp_path)])
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_digits_rejects_text_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--fractions", "0.5", "--n-embd", "32", "--out", str(tmp_path)]) == 2
    assert "--fractions --n-embd apply to `--task text` only" in capsys.readouterr().err
