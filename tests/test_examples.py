"""Run every script in ``examples/`` at a reduced size, as a user would, and check what it prints."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from ddp_harness import DDP_TIMEOUT
from examples import run_example

pytestmark = pytest.mark.slow


def assert_no_lightning_banners(out: str) -> None:
    """A table of many fits shows its rows, not Lightning's per-fit INFO banners between them."""
    for banner in ("GPU available:", "TPU available:", "Tip:", "`Trainer.fit` stopped"):
        assert banner not in out, out


def number(pattern: str, text: str) -> float:
    match = re.search(pattern, text)
    assert match, f"{pattern!r} not found in:\n{text}"
    return float(match.group(1))


FLOAT = r"([-+0-9.e]+)"


def test_quickstart_writes_closed_form_weight_decay_and_learns(tmp_path: Path) -> None:
    out = run_example("quickstart.py", tmp_path, "--fast")
    written = number(rf"weight_decay written: {FLOAT}", out)
    # --fast: N=1024, B=128, lr=3e-3, tau_epoch=4
    assert math.isclose(written, 128 / (3e-3 * 1024 * 4.0), rel_tol=1e-5)  # B / (lr N tau_epoch) = 10.4167
    assert "TimescaleCallback: tau_epoch=4 (tau_iter=32 steps), M=8 steps/epoch, N=1,024, B=128" in out
    losses = re.search(rf"val_loss: {FLOAT} -> {FLOAT}", out)
    assert losses, out
    before, after = map(float, losses.groups())
    assert after < 0.8 * before
    # the one callback line also logged the EMA view to the default TensorBoard logger
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    files = list((tmp_path / "lightning_logs" / "quickstart").rglob("events.out.tfevents.*"))
    scalars = {tag for f in files for tag in EventAccumulator(str(f)).Reload().Tags()["scalars"]}
    assert {"timescale/tau_iter/weights", "timescale/tau_iter_target/weights", "timescale/rms_ratio/weights"} <= scalars
    assert f"tensorboard --logdir {files[0].parent.relative_to(tmp_path)}" in out


def test_dataset_size_transfer_weight_decay_falls_as_one_over_n(tmp_path: Path) -> None:
    out = run_example("dataset_size_transfer.py", tmp_path, "--fast")
    assert_no_lightning_banners(out)
    rows = {
        int(n): (float(wd), float(closed))
        for n, wd, closed in re.findall(r"^\s+(\d+)\s+4\s+([0-9.e+-]+)\s+([0-9.e+-]+)\s+[0-9.]+$", out, re.M)
    }
    assert set(rows) == {256, 1024}, out
    for n, (wd, closed) in rows.items():
        assert math.isclose(wd, 64 / (3e-3 * n * 4.0), rel_tol=1e-5)  # B / (lr N tau_epoch)
        assert math.isclose(wd, closed, rel_tol=1e-5)
    assert math.isclose(rows[256][0] / rows[1024][0], 4.0, rel_tol=1e-5)
    assert number(r"ratio N=256 / N=1024 at tau_epoch=4: ([0-9.]+)", out) == pytest.approx(4.0)


def test_mup_width_transfer_tau_rule_holds_tau_iter_fixed_rule_not(tmp_path: Path) -> None:
    out = run_example("mup_width_transfer.py", tmp_path, "--fast")
    assert_no_lightning_banners(out)
    row = r"^\s*(fixed|tau)\s+[0-9.e-]+\s+(\d+)\s+([0-9.]+)\s+([0-9.e-]+)\s+([0-9.e-]+)\s+([0-9.e+-]+)"
    rows = re.findall(row, out, re.M)
    table = {(rule, int(width)): tuple(map(float, rest)) for rule, width, *rest in rows}
    assert set(table) == {("fixed", 32), ("fixed", 128), ("tau", 32), ("tau", 128)}, out
    for rule in ("fixed", "tau"):
        s, lr, _, _ = table[rule, 128]
        assert s == 4 and lr == pytest.approx(3e-3 / 4, rel=1e-3)  # mup's lr / s for hidden matrices
    # fixed λ: same weight decay at every width, so tau_iter grows with s (the pitfall)
    assert table["fixed", 128][2] == table["fixed", 32][2] == 5.0
    assert table["fixed", 128][3] == pytest.approx(4 * table["fixed", 32][3], rel=1e-3)
    # TimescaleCallback: λ ∝ s, so tau_iter is the same at both widths and equals the base run's
    assert table["tau", 128][2] == pytest.approx(4 * 5.0, rel=1e-3)
    assert table["tau", 128][3] == pytest.approx(table["tau", 32][3], rel=1e-3)
    assert table["tau", 32][3] == pytest.approx(1 / (3e-3 * 5.0), rel=1e-3)  # 1 / (lr λ_base) = 66.7 steps


def test_char_gpt_cli_counts_tokens_and_loss_falls(tmp_path: Path) -> None:
    out = run_example(
        "char_gpt.py",
        tmp_path,
        "fit",
        "--trainer.max_steps=25",
        "--trainer.logger=false",
        "--trainer.enable_checkpointing=false",
        "--trainer.enable_progress_bar=false",
        "--trainer.enable_model_summary=false",
        "--trainer.limit_val_batches=2",
        "--data.max_tokens=40000",
        "--data.block_size=32",
        "--data.batch_size=16",
        "--model.n_embd=32",
        "--timescale.tau_epoch=0.3",
    )
    match = re.search(r"M=([\d.]+) steps/epoch, N=([\d,]+), B=([\d,]+)", out)
    assert match, out
    n_tokens, b_tokens = (int(g.replace(",", "")) for g in match.groups()[1:])
    assert float(match.group(1)) == pytest.approx(n_tokens / b_tokens, abs=0.01)  # M = N / B: both given in tokens
    # 40,000 training bytes (validation comes from other files) in whole 32-token windows (one spare token for the
    # shifted target), in whole batches of 16 windows: the tokens an epoch trains on
    assert n_tokens == (40_000 - 1) // 32 // 16 * 16 * 32
    assert float(match.group(1)) == n_tokens / b_tokens == 78  # whole steps: the Trainer's epoch too
    assert b_tokens == 16 * 32  # batch_size x block_size x 1 device x 1 accumulation, in tokens
    written = number(rf"weight_decay \(decay\): {FLOAT} at peak lr", out)
    assert math.isclose(written, b_tokens / (3e-3 * n_tokens * 0.3), rel_tol=1e-5)  # B / (lr N tau_epoch), tokens
    losses = re.search(rf"train_loss: first \d+ steps {FLOAT} -> last \d+ steps {FLOAT}", out)
    assert losses, out
    first, last = map(float, losses.groups())
    assert last < first - 0.3


def test_ddp_example_uses_global_batch_on_every_rank(tmp_path: Path) -> None:
    out = run_example("ddp.py", tmp_path, "--fast", "--accelerator=cpu", timeout=DDP_TIMEOUT)
    per_rank = {int(r): float(wd) for r, wd in re.findall(rf"rank (\d)/2: weight_decay written: {FLOAT}", out)}
    assert set(per_rank) == {0, 1}, out
    # --fast: N=512, per-device batch 64 x 2 processes = global B 128, lr=3e-3, tau_epoch=4
    expected = 128 / (3e-3 * 512 * 4.0)  # B / (lr N tau_epoch) = 20.8333
    assert per_rank[0] == per_rank[1]
    assert math.isclose(per_rank[0], expected, rel_tol=1e-5)
    assert "B = 64 per device x 2 device(s) x 1 accumulation." in out
    # 512 samples / 128 per step = 4 steps per epoch, 2 epochs
    assert number(r"optimizer steps: (\d+)", out) == 8


# the runner (tests/helpers/examples.py): a DDP example whose rank zero died must not leave its other rank waiting


def test_run_example_ends_orphaned_rank_and_shows_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    import ddp_harness
    import examples

    # Lightning's launcher picks its port with `find_free_network_port`, which takes STANDALONE_PORT when set: a port
    # another process listens on makes rank zero fail to bind it, while rank 1 (already launched) waits on it
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    monkeypatch.setenv("STANDALONE_PORT", str(holder.getsockname()[1]))
    monkeypatch.setattr(examples, "_GRACE", 3)
    monkeypatch.setattr(ddp_harness, "_PORT_TRIES", 2)
    sessions: list[int] = []
    popen = examples.subprocess.Popen

    def recording_popen(*args, **kwargs):
        proc = popen(*args, **kwargs)
        sessions.append(proc.pid)
        return proc

    monkeypatch.setattr(examples.subprocess, "Popen", recording_popen)
    try:
        with pytest.raises(AssertionError) as raised:
            run_example("fabric_gpt.py", tmp_path, "--fast", "--devices", "2", "--strategy", "ddp",
                        "--accelerator", "cpu", timeout=DDP_TIMEOUT)
    finally:
        holder.close()
    message = str(raised.value)
    assert "failed (1)" in message and "EADDRINUSE" in message, message  # rank zero's error, not a timeout
    assert "still running" not in message, message
    assert len(sessions) == 2  # a taken port is tried again, _PORT_TRIES times in all
    assert all(examples.session_processes(sid) == [] for sid in sessions)  # rank 1 killed, nothing left behind

