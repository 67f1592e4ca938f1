"""Tune small, train big: the pure transfer table, ``TimescaleCallback.from_tuned_run``, the power-law option
for single-epoch LLM pre-training, and the ``lightning-tau transfer`` command (in process and as a subprocess)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings

import pytest
import torch
from tiny_model import TinyModel, make_loader, quiet_trainer

from lightning_tau import TimescaleCallback
from lightning_tau.cli import main
from lightning_tau.decide import GroupInput, decide_groups
from lightning_tau.timescale import power_lines_tau_epoch
from lightning_tau.transfer import TargetRun, TunedRun, format_transfer_table, transfer_groups

TUNED = ["--lr", "1e-3", "--weight-decay", "0.1", "--dataset-size", "50000", "--batch-size", "100"]


def table_rows(text: str) -> dict[str, list[str]]:
    """Rows below the dashed rule, keyed by group name: [width mult, lr, weight decay, tau_iter, tau_epoch]."""
    body = text.split(re.search(r"^-+$", text, re.M).group(0), 1)[1]
    rows = ([c.strip() for c in line.split("|")] for line in body.strip().splitlines())
    return {cells[0]: cells[1:] for cells in rows}


def test_groups_closed_forms() -> None:
    tuned = TunedRun(lr=3e-3, weight_decay=0.05, dataset_size=60_000, batch_size=128, width=256)
    target = TargetRun(lr=2e-3, dataset_size=600_000, batch_size=512, width=2048)
    tau_epoch = 128 / (3e-3 * 0.05 * 60_000)
    vector, matrix = transfer_groups(tuned, target)
    assert (vector.name, matrix.name) == ("vector-like", "matrix-like")
    assert matrix.width_mult == 8.0 and matrix.lr == pytest.approx(2e-3 / 8)
    assert vector.weight_decay == pytest.approx(512 / (2e-3 * 600_000 * tau_epoch), rel=1e-12)
    assert matrix.weight_decay == pytest.approx(8 * 512 / (2e-3 * 600_000 * tau_epoch), rel=1e-12)
    assert vector.tau_epoch == matrix.tau_epoch == pytest.approx(tau_epoch)
    assert vector.tau_iter == matrix.tau_iter == pytest.approx(tau_epoch * 600_000 / 512)
    # a base width other than the tuned width, and explicit groups
    (row,) = transfer_groups(tuned, target, width_mults={"blocks": 2.0})
    assert row.weight_decay == pytest.approx(2 * vector.weight_decay)
    assert transfer_groups(tuned, target, base_width=128)[1].width_mult == 16.0


@pytest.mark.parametrize("size_exponent", [0.0, -0.5, -1.0, 0.3])
@pytest.mark.parametrize("width_exponent", [1.0, 0.5, 0.0])
def test_groups_exponents_closed_form(size_exponent: float, width_exponent: float) -> None:
    tuned = TunedRun(lr=3e-3, weight_decay=0.05, dataset_size=60_000, batch_size=128, width=256)
    target = TargetRun(lr=2e-3, dataset_size=240_000, batch_size=512, width=2048)
    tau_epoch = 128 / (3e-3 * 0.05 * 60_000)
    rows = transfer_groups(tuned, target, size_exponent=size_exponent, width_exponent=width_exponent)
    held = tau_epoch * (240_000 / 60_000) ** size_exponent
    big_s = 8.0  # the target's S: every group's timescale x S^(1 - alpha), as TimescaleCallback holds it
    for row, s in zip(rows, (1.0, 8.0)):
        # wd_g = B' s_g S^(alpha - 1) / (lr' N' tau_epoch (N'/N)^e), at lr' / s_g
        expected = 512 * s * big_s ** (width_exponent - 1) / (2e-3 * 240_000 * held)
        assert row.weight_decay == pytest.approx(expected, rel=1e-12)
        assert row.lr == pytest.approx(2e-3 / s) and row.lr * row.weight_decay * row.tau_iter == pytest.approx(1.0)
        assert row.tau_epoch == pytest.approx(held * big_s ** (1 - width_exponent), rel=1e-12)


def test_exponents_reproduce_named_rules() -> None:
    tuned = TunedRun(lr=1e-3, weight_decay=0.1, dataset_size=50_000, batch_size=100, width=256)
    # fixed lambda (-1): the same weight decay at 8x the data; the paper's 0: an eighth of it
    (fixed,) = transfer_groups(tuned, TargetRun(dataset_size=400_000), size_exponent=-1.0)
    (paper,) = transfer_groups(tuned, TargetRun(dataset_size=400_000))
    assert fixed.weight_decay == pytest.approx(0.1) and paper.weight_decay == pytest.approx(0.1 / 8)
    # width exponent 0 (Qiu et al.: lr * lambda ∝ 1/width for every parameter): the hidden weights keep the base
    # weight decay, the vector-like ones (lr kept) get a quarter of it at 4x the width
    vector, matrix = transfer_groups(tuned, TargetRun(width=1024), width_exponent=0.0)
    assert vector.weight_decay == pytest.approx(0.1 / 4) and matrix.weight_decay == pytest.approx(0.1)
    assert vector.lr * vector.weight_decay == pytest.approx(matrix.lr * matrix.weight_decay)


@pytest.mark.parametrize("width_exponent", [1.0, 0.5, 0.0, 1.5])
def test_transfer_and_callback_move_every_group_by_same_s(width_exponent: float) -> None:
    tuned = TunedRun(lr=1e-3, weight_decay=0.1, dataset_size=50_000, batch_size=100, width=256)
    rows = transfer_groups(tuned, TargetRun(width=2048), width_exponent=width_exponent)
    groups = [GroupInput(r.name, 0, j, 64, r.lr, 0.1, True, width_mult=r.width_mult) for j, r in enumerate(rows)]
    decided = decide_groups(groups, tuned.tau_iter, width_exponent=width_exponent)  # what TimescaleCallback writes
    assert [g.weight_decay for g in decided] == pytest.approx([r.weight_decay for r in rows], rel=1e-12)


def test_table_shows_exponents_arithmetic() -> None:
    tuned = TunedRun(lr=1e-3, weight_decay=0.1, dataset_size=12_500, batch_size=100, width=256)
    target = TargetRun(dataset_size=50_000, width=1024)
    rows = transfer_groups(tuned, target, size_exponent=-0.5, width_exponent=0.5)
    assert format_transfer_table(tuned, target, rows, size_exponent=-0.5, width_exponent=0.5).splitlines() == [
        "Tuned:  lr=0.001, weight_decay=0.1, N=12,500, B=100, width=256 -> tau_epoch=80 (tau_iter=10000 steps)",
        "Target: lr=0.001, N=50,000, B=100, width=1024, M=N/B=500 steps/epoch -> tau_epoch 80 x (50000/12500)^-0.5 ="
        " 40 (tau_iter=20000 steps)",
        "width_exponent=0.5 at the target's width multiplier S=4: every group holds tau_iter x S^0.5 (weight decay ∝"
        " S^0.5 for the hidden weights).",
        "Group       | Width mult | lr      | Weight decay | tau_iter | tau_epoch",
        "------------------------------------------------------------------------",
        "vector-like | 1          | 0.001   | 0.025        | 40000    | 80",
        "matrix-like | 4          | 0.00025 | 0.1          | 40000    | 80",
    ]


def test_table_whole() -> None:
    tuned = TunedRun(lr=1e-3, weight_decay=0.1, dataset_size=50_000, batch_size=100, width=256)
    target = TargetRun(lr=5e-4, dataset_size=100_000, batch_size=200, width=1024)
    assert format_transfer_table(tuned, target, transfer_groups(tuned, target)).splitlines() == [
        "Tuned:  lr=0.001, weight_decay=0.1, N=50,000, B=100, width=256 -> tau_epoch=20 (tau_iter=10000 steps)",
        "Target: lr=0.0005, N=100,000, B=200, width=1024, M=N/B=500 steps/epoch -> same tau_epoch=20 (tau_iter=10000"
        " steps)",
        "Group       | Width mult | lr       | Weight decay | tau_iter | tau_epoch",
        "-------------------------------------------------------------------------",
        "vector-like | 1          | 0.0005   | 0.2          | 10000    | 20",
        "matrix-like | 4          | 0.000125 | 0.8          | 10000    | 20",
    ]
    # no target: the tuned run's own lr, N and B
    assert format_transfer_table(tuned, None, transfer_groups(tuned, None)).splitlines()[1] == (
        "Target: lr=0.001, N=50,000, B=100, M=N/B=500 steps/epoch -> same tau_epoch=20 (tau_iter=10000 steps)"
    )


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: TunedRun(1e-3, 0.1, 50_000, 100, width=-1), "`width` must be a positive finite number, got -1."),
        (lambda: TargetRun(batch_size=0), "`batch_size` must be a positive finite number, got 0."),
        (
            lambda: transfer_groups(TunedRun(1e-3, 0.1, 50_000, 100), TargetRun(width=512)),
            "`TargetRun(width=512)` needs the tuned run's width to compare with: set `TunedRun(width=...)` or"
            " `base_width`.",
        ),
        (
            lambda: transfer_groups(TunedRun(1e-3, 0.1, 50_000, 100), TargetRun(width=512), base_width=-2),
            "`base_width` must be a positive finite number, got -2.",
        ),
        (
            lambda: transfer_groups(TunedRun(1e-3, 0.1, 50_000, 100), None, width_mults={}),
            "`width_mults` is empty: give at least one group, for example {'hidden': 4.0}.",
        ),
    ],
)
def test_messages_whole(make, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        make()


def test_errors_name_argument() -> None:
    with pytest.raises(ValueError, match=r"`TargetRun\(width=512\)` needs the tuned run's width"):
        transfer_groups(TunedRun(1e-3, 0.1, 1000, 10), TargetRun(width=512))
    with pytest.raises(ValueError, match=r"`batch_size` must be a positive finite number, got -1"):
        TunedRun(1e-3, 0.1, 1000, -1)
    with pytest.raises(ValueError, match=r"`width_mults\['h'\]` must be a positive"):
        transfer_groups(TunedRun(1e-3, 0.1, 1000, 10), width_mults={"h": 0})


@pytest.mark.slow
def test_from_tuned_run_keeps_tau_epoch_on_bigger_dataset() -> None:
    """Tuned on N=120 with (lr, wd); trained on N=240 at the same B: the callback writes wd / 2."""
    tuned = TunedRun(lr=1e-2, weight_decay=0.5, dataset_size=120, batch_size=10)
    callback = TimescaleCallback.from_tuned_run(tuned, verbose=False)
    assert callback.tau_epoch == pytest.approx(10 / (1e-2 * 0.5 * 120))
    trainer = quiet_trainer(callbacks=[callback], max_steps=2)
    trainer.fit(TinyModel(lambda m: torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.5)), make_loader(n=240))
    assert trainer.optimizers[0].param_groups[0]["weight_decay"] == pytest.approx(0.25, rel=1e-12)
    (row,) = transfer_groups(tuned, TargetRun(dataset_size=240))
    assert row.weight_decay == pytest.approx(0.25, rel=1e-12)  # the table agrees with the callback


@pytest.mark.slow
def test_from_tuned_run_with_size_exponent_measures_n_from_tuned_run() -> None:
    """Tuned on N=60, trained on N=240 by the 1/2 rules: tau_epoch x 4^-0.5, so wd x 4^-0.5 / 4 = wd / 2."""
    tuned = TunedRun(lr=1e-2, weight_decay=0.5, dataset_size=60, batch_size=10)
    callback = TimescaleCallback.from_tuned_run(tuned, size_exponent=-0.5, verbose=False)
    assert callback.reference_dataset_size == 60
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = quiet_trainer(callbacks=[callback], max_steps=2)
        trainer.fit(
            TinyModel(lambda m: torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.5)), make_loader(n=240)
        )
    assert trainer.optimizers[0].param_groups[0]["weight_decay"] == pytest.approx(0.25, rel=1e-12)
    (row,) = transfer_groups(tuned, TargetRun(dataset_size=240), size_exponent=-0.5)
    assert row.weight_decay == pytest.approx(0.25, rel=1e-12)  # the table agrees with the callback
    given = TimescaleCallback.from_tuned_run(tuned, size_exponent=-0.5, reference_dataset_size=30, verbose=False)
    assert given.reference_dataset_size == 30


@pytest.mark.parametrize("exponent", [1.0, -0.5])
def test_batch_exponent_moves_tau_epoch_by_b_over_tuned_b(exponent: float) -> None:
    """Tuned at B = 100 (tau_epoch 20); at B' = 400 the rule holds 20 x 4^e, so wd = B' / (lr N tau_epoch')."""
    tuned = TunedRun(lr=1e-3, weight_decay=0.1, dataset_size=50_000, batch_size=100)
    target = TargetRun(batch_size=400)
    (row,) = transfer_groups(tuned, target, batch_exponent=exponent)
    held = 20.0 * 4**exponent
    assert row.tau_epoch == pytest.approx(held)
    assert row.weight_decay == pytest.approx(400 / (1e-3 * 50_000 * held), rel=1e-12)
    header = format_transfer_table(tuned, target, [row], batch_exponent=exponent).splitlines()[1]
    assert f"-> tau_epoch 20 x (400/100)^{exponent:g} = {held:g} (tau_iter=" in header
    bigger = TargetRun(dataset_size=200_000, batch_size=400)
    (both,) = transfer_groups(tuned, bigger, size_exponent=-0.5, batch_exponent=exponent)
    assert both.tau_epoch == pytest.approx(held / 2)
    with pytest.raises(ValueError, match=r"^`transfer_groups\(batch_exponent=3\)` is not valid: use a finite number"):
        transfer_groups(tuned, target, batch_exponent=3)


@pytest.mark.slow
def test_from_tuned_run_with_batch_exponent_measures_b_from_tuned_run() -> None:
    """Tuned at B = 10 (N = 240), trained at B = 20 by a fixed λ (e = 1): tau_epoch x 2 at half the steps, same wd."""
    tuned = TunedRun(lr=1e-2, weight_decay=0.5, dataset_size=240, batch_size=10)
    callback = TimescaleCallback.from_tuned_run(tuned, batch_exponent=1.0, verbose=False)
    assert callback.reference_batch_size == 10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = quiet_trainer(callbacks=[callback], max_steps=2)
        trainer.fit(
            TinyModel(lambda m: torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.5)),
            make_loader(n=240, batch_size=20),
        )
    assert trainer.optimizers[0].param_groups[0]["weight_decay"] == pytest.approx(0.5, rel=1e-12)
    (row,) = transfer_groups(tuned, TargetRun(batch_size=20), batch_exponent=1.0)
    assert row.weight_decay == pytest.approx(0.5, rel=1e-12)  # the table agrees with the callback
    given = TimescaleCallback.from_tuned_run(tuned, batch_exponent=1.0, reference_batch_size=5, verbose=False)
    assert given.reference_batch_size == 5


def test_from_tuned_run_rejects_second_timescale() -> None:
    with pytest.raises(ValueError, match=r"do not pass \['tau_epoch'\]"):
        TimescaleCallback.from_tuned_run(TunedRun(1e-3, 0.1, 1000, 10), tau_epoch=3.0)
    with pytest.raises(ValueError, match=r"needs a `lightning_tau.transfer.TunedRun`"):
        TimescaleCallback.from_tuned_run({"lr": 1e-3})  # type: ignore[arg-type]


def tiny_params() -> int:
    return sum(p.numel() for p in TinyModel().parameters())  # 74


@pytest.mark.slow
def test_power_law_picks_tau_from_tokens_per_parameter() -> None:
    n_params = tiny_params()
    callback = TimescaleCallback(token_budget=20 * n_params, verbose=False)
    trainer = quiet_trainer(callbacks=[callback], max_epochs=1)  # 12 optimizer steps
    trainer.fit(TinyModel(), make_loader(n=120, batch_size=10))
    tau = 1.084 * 20**-0.527  # Bergsma et al. 2025
    assert callback.resolved_num_params == n_params
    assert callback.resolved_tau_iter == pytest.approx(tau * 12, rel=1e-12)
    assert callback.resolved_tau_epoch == pytest.approx(tau, rel=1e-12)  # the run is one epoch
    assert trainer.optimizers[0].param_groups[0]["weight_decay"] == pytest.approx(1 / (1e-2 * tau * 12), rel=1e-12)


@pytest.mark.slow
def test_power_law_coefficients_and_parameter_count_overridable() -> None:
    callback = TimescaleCallback(
        token_budget=1000, num_params=10, power_law_coefficient=2.0, power_law_exponent=-0.5, verbose=False
    )
    trainer = quiet_trainer(callbacks=[callback], max_steps=10)
    trainer.fit(TinyModel(), make_loader(n=120, batch_size=10))
    assert callback.resolved_tau_iter == pytest.approx(2.0 * 100**-0.5 * 10, rel=1e-12)  # 0.2 of 10 steps
    assert power_lines_tau_epoch(100, coefficient=2.0, exponent=-0.5) == pytest.approx(0.2)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"token_budget": 1e9, "tau_epoch": 1.0}, r"`TimescaleCallback\(token_budget=1000000000.0\)` picks"),
        ({"token_budget": 0}, r"`TimescaleCallback\(token_budget=0\)` is not valid"),
        ({"token_budget": 1e9, "power_law_exponent": float("nan")}, r"`TimescaleCallback\(power_law_exponent=nan\)`"),
        ({"token_budget": 1e9, "power_law_coefficient": -1.0}, r"`TimescaleCallback\(power_law_coefficient=-1.0\)`"),
        ({"token_budget": 1e9, "num_params": 0}, r"`TimescaleCallback\(num_params=0\)` is not valid"),
    ],
)
def test_power_law_bad_arguments_raise_at_construction(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        TimescaleCallback(**kwargs)


@pytest.mark.slow
def test_power_law_needs_planned_run() -> None:
    trainer = quiet_trainer(callbacks=[TimescaleCallback(token_budget=1e4)], max_epochs=-1, max_steps=-1)
    model = TinyModel()
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(ValueError, match=r"token_budget=10000.0\)` sets tau_iter = tau \* planned .* Set `max_steps`"):
        trainer.fit(model, make_loader())
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))  # no step was taken


def test_cli_ten_times_data(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["transfer", *TUNED, "--target-dataset-size", "10x"]) == 0
    out = capsys.readouterr().out
    assert "-> tau_epoch=20 (tau_iter=10000 steps)" in out  # 100 / (1e-3 * 0.1 * 50000)
    assert table_rows(out) == {"all": ["1", "0.001", "0.01", "100000", "20"]}


def test_cli_four_times_wider(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["transfer", *TUNED, "--width", "256", "--target-width", "1024", "--target-batch-size", "4x"]) == 0
    rows = table_rows(capsys.readouterr().out)
    # B x4 -> wd x4 (tau_iter / 4: 2500 steps); matrix-like s = 4 -> lr / 4 and wd x another 4
    assert rows == {
        "vector-like": ["1", "0.001", "0.4", "2500", "20"],
        "matrix-like": ["4", "0.00025", "1.6", "2500", "20"],
    }


def test_cli_json_and_groups(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["transfer", *TUNED, "--group", "attn=2", "--group", "mlp=8", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["name"], r["lr"], r["weight_decay"]) for r in rows] == [
        ("attn", 5e-4, pytest.approx(0.2)),
        ("mlp", 1.25e-4, pytest.approx(0.8)),
    ]


def test_cli_errors_exit_with_message(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match=r"`--target-width 4x` is relative to the tuned value"):
        main(["transfer", *TUNED, "--target-width", "4x"])
    with pytest.raises(SystemExit, match=r"`--group hidden` is not NAME=S"):
        main(["transfer", *TUNED, "--group", "hidden"])
    with pytest.raises(SystemExit):
        main(["transfer", *TUNED, "--target-dataset-size", "lots"])
    assert "'lots' is not a number or a multiple such as '10x'" in capsys.readouterr().err


def test_cli_size_and_width_exponents(capsys: pytest.CaptureFixture[str]) -> None:
    tuned = ["--lr", "1e-3", "--weight-decay", "0.1", "--dataset-size", "12500", "--batch-size", "100"]
    args = [*tuned, "--width", "256", "--target-width", "4x", "--target-dataset-size", "4x"]
    assert main(["transfer", *args, "--size-exponent", "-0.5", "--width-exponent", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "-> tau_epoch 80 x (50000/12500)^-0.5 = 40 (tau_iter=20000 steps)" in out
    assert table_rows(out) == {
        "vector-like": ["1", "0.001", "0.025", "40000", "80"],
        "matrix-like": ["4", "0.00025", "0.1", "40000", "80"],
    }
    assert main(["transfer", *args, "--json"]) == 0  # the defaults are the paper's rules: 0 and 1
    paper = json.loads(capsys.readouterr().out)
    assert [r["weight_decay"] for r in paper] == pytest.approx([0.025, 0.1])


def test_cli_batch_exponent(capsys: pytest.CaptureFixture[str]) -> None:
    # 4x the batch at a fixed lr: a fixed weight decay is tau_epoch ∝ B^1 (20 -> 80); B^0 is weight decay x 4
    tuned = ["--lr", "1e-3", "--weight-decay", "0.1", "--dataset-size", "50000", "--batch-size", "100"]
    assert main(["transfer", *tuned, "--target-batch-size", "4x", "--batch-exponent", "1"]) == 0
    out = capsys.readouterr().out
    assert "-> tau_epoch 20 x (400/100)^1 = 80 (tau_iter=10000 steps)" in out
    assert table_rows(out) == {"all": ["1", "0.001", "0.1", "10000", "80"]}
    assert main(["transfer", *tuned, "--target-batch-size", "4x", "--batch-exponent", "-0.5", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["tau_epoch"] == pytest.approx(10.0) and row["weight_decay"] == pytest.approx(400 / (1e-3 * 50000 * 10))
    assert main(["transfer", *tuned, "--target-batch-size", "4x", "--json"]) == 0  # the default: tau_epoch held
    (row,) = json.loads(capsys.readouterr().out)
    assert row["tau_epoch"] == pytest.approx(20.0) and row["weight_decay"] == pytest.approx(0.4)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--batch-exponent", "nan"], "argument --batch-exponent: got 'nan': use a finite number in [-2, 2]"),
        (["--batch-exponent", "-3"], "argument --batch-exponent: got '-3': use a finite number in [-2, 2]"),
        (["--batch-exponent", "one"], "argument --batch-exponent: expected a finite number, got 'one'"),
        (["--size-exponent", "nan"], "argument --size-exponent: got 'nan': use a finite number in [-2, 2]"),
        (["--size-exponent", "2.5"], "argument --size-exponent: got '2.5': use a finite number in [-2, 2]"),
        (["--size-exponent", "half"], "argument --size-exponent: expected a finite number, got 'half'"),
        (["--width-exponent", "inf"], "argument --width-exponent: got 'inf': use a finite number alpha"),
    ],
)
def test_cli_exponent_errors_name_flag(flags: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["transfer", *TUNED, *flags])
    assert message in capsys.readouterr().err


def test_cli_refuses_group_width_exponent_takes_below_one_step() -> None:
    # tau_iter 100 at S = 1; alpha = 3 at S = 1000 gives every group tau_iter 100 x 1000^-2 = 1e-4 steps
    flags = ["--target-dataset-size", "0.01x", "--width", "1", "--target-width", "1000", "--width-exponent", "3"]
    with pytest.raises(SystemExit, match=r"tau_iter=0.0001 optimizer steps, .* \(>= 1\) in every group"):
        main(["transfer", *TUNED, *flags])


def test_cli_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["transfer", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--target-dataset-size" in out and "tune small, train big" in out.lower()


@pytest.mark.slow
def test_cli_as_subprocess() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "lightning_tau", "transfer", *TUNED, "--target-dataset-size", "500000"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert table_rows(result.stdout) == {"all": ["1", "0.001", "0.01", "100000", "20"]}
