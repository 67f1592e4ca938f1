"""What TimescaleCallback says (lightning_tau/summary.py): pure text builders, each message checked whole."""

from __future__ import annotations

import torch

from lightning_tau.decide import NO_MUP, GroupInput, GroupTimescale, RunShape
from lightning_tau.summary import (
    batch_note,
    describe_target,
    fixed_lambda_warning,
    format_summary,
    manual_note,
    resume_warning,
    short_run_warning,
    size_note,
    start_summary,
    start_warnings,
    two_callbacks_message,
    vectors_warning,
    width_exponent_unused_warning,
    width_note,
)


def group(name: str = "pg1", index: int = 0, *, managed: bool = True, **fields: object) -> GroupTimescale:
    values: dict = dict(num_params=10, reference_lr=1e-3, weight_decay_before=0.1, weight_decay=2.0)
    values.update(fields)
    return GroupTimescale(name, 0, index, managed=managed, **values)


def test_describe_target_names_first_target_given() -> None:
    assert describe_target(5.0, None, None) == "tau_epoch=5"
    assert describe_target(None, 300.0, None) == "tau_iter=300"
    assert describe_target(None, None, 2e9) == "token_budget=2e+09"
    assert describe_target(5.0, 300.0, 2e9) == "tau_epoch=5"
    assert describe_target(None, None, None) == "?"
    assert two_callbacks_message(["tau_epoch=5", "?"]) == (
        "This Trainer has 2 `TimescaleCallback`s (tau_epoch=5, ?). Each rewrites the same param groups' weight"
        " decay, so the last one would silently win. Keep one (a `TimescaleMonitor` next to it is fine, for"
        " diagnostics alone)."
    )


def test_short_run_warning_names_each_decaying_group_under_one_timescale() -> None:
    groups = [
        group("short", planned_timescales=0.5),
        group("just", 1, planned_timescales=1.0),
        group("unknown", 2, planned_timescales=None),
        group("off", 3, managed=False, planned_timescales=0.1),
        group("tiny", 4, planned_timescales=0.004),
    ]
    assert short_run_warning(groups) == (
        "`TimescaleCallback`: the run covers less than one EMA timescale for short (0.50), tiny (0.00), so weight"
        " decay barely acts and the weights mostly remember their initialization. Train longer or use a smaller"
        " `tau_epoch`."
    )
    assert short_run_warning(groups[1:4]) is None


def test_width_note_names_models_s_and_every_group_it_moved() -> None:
    scaled = group("hidden", width_mult=4.0, width_exponent=0.5)
    at_one = group("embed", 1, width_mult=1.0, width_exponent=0.5)  # s = 1, moved with the model's S = 4
    vector = group("readout", 2, width_mult=None, width_exponent=0.0)  # mup's vector-like group: no multiplier read
    unscaled = group("head", 3, width_mult=4.0, width_exponent=1.0)
    off = group("bias", 4, managed=False, width_mult=8.0, width_exponent=0.5)  # S = 8 even though it does not decay
    head = (
        "at the model's width multiplier S={S} (the largest muP multiplier of its groups): each decaying group holds"
        " tau_iter x S^(1 - alpha), so weight decay ∝ S^alpha for a hidden group (lr / S): "
    )
    assert width_note(0.5, [scaled, at_one, vector, unscaled]) == (
        "width_exponent=0.5 " + head.format(S=4) + "hidden (s=4, alpha=0.5: x2), embed (s=1, alpha=0.5: x2),"
        " readout (s=1, alpha=0: x4)."
    )
    assert width_note({"embed": 0.5}, [unscaled, at_one, off]) == (
        "width_exponent={'embed': 0.5} " + head.format(S=8) + "embed (s=1, alpha=0.5: x2.828)."
    )
    assert width_note(0.5, [at_one, group("none", 4, width_exponent=0.5)]) == (
        "width_exponent=0.5: no param group has a width multiplier other than 1 (S = 1), so it changes nothing."
    )
    assert width_note({"head": 1.0}, [unscaled]) == (
        "width_exponent={'head': 1.0}: every decaying group keeps exponent 1, so it changes nothing."
    )
    assert width_note(1.0, [scaled]) is None
    assert width_note({}, [scaled]) is None


def test_manual_note_says_what_each_optimizer_assumed_to_take() -> None:
    tail = " until an epoch's steps are counted (warned and re-decided at the next epoch if they differ)."
    head = "Manual optimization: tau_epoch is held in each optimizer's own steps per epoch; "
    assert manual_note(manual=True, tau_epoch=5.0, steps_per_epoch=100, optimizer_steps_per_epoch={}) == (
        head + "each optimizer assumed to step once per batch (M=100)" + tail
    )
    declared = {2: 25.0, 1: 50.0}
    assert manual_note(manual=True, tau_epoch=5.0, steps_per_epoch=None, optimizer_steps_per_epoch=declared) == (
        head
        + "optimizer 1: M=50, optimizer 2: M=25 as declared, the others assumed to step once per batch (M=?)"
        + tail
    )
    assert manual_note(manual=False, tau_epoch=5.0, steps_per_epoch=100, optimizer_steps_per_epoch={}) is None
    assert manual_note(manual=True, tau_epoch=None, steps_per_epoch=100, optimizer_steps_per_epoch={}) is None


def test_vectors_warning_names_decaying_1d_parameters() -> None:
    matrix, bias = torch.zeros(2, 2), torch.zeros(2)
    vectors = [torch.zeros(3) for _ in range(8)]
    groups = [group("mixed", weight_decay=1.5), group("many", 1), group("off", 2, managed=False)]
    param_groups = [[{"params": [matrix, bias]}, {"params": vectors}, {"params": [torch.zeros(4)]}]]
    names = {id(bias): "net.bias", **{id(v): f"v{k}" for k, v in enumerate(vectors[:5])}}
    assert vectors_warning(groups, param_groups, names) == (
        "`TimescaleCallback`: these decaying param groups hold 1-D parameters (biases, norm weights), which get the"
        " same weight decay as the matrices and are pulled toward zero: 'mixed' (1 of 2: net.bias; weight decay 1.5);"
        " 'many' (8 of 8: v0, v1, v2, v3, v4, <(3,) tensor> and 2 more; weight decay 2). Usually they should not"
        " decay: give them a group with `weight_decay=0`, e.g. `torch.optim.AdamW(lightning_tau.build_param_groups("
        "model, weight_decay=0.1), lr=...)` (biases and norms in `no_decay`). If you mean to decay them, pass"
        " `TimescaleCallback(decay_vectors=True)`."
    )
    six = [[{"params": vectors[:6]}]]
    assert "(6 of 6: v0, v1, v2, v3, v4, <(3,) tensor>; weight decay 2)" in str(vectors_warning([group()], six, names))
    scalar = [[{"params": [torch.tensor(1.0)]}]]
    assert "(1 of 1: <() tensor>;" in str(vectors_warning([group()], scalar, {}))
    assert vectors_warning([group()], [[{"params": [matrix]}]], names) is None
    assert vectors_warning([group(managed=False)], [[{"params": [bias]}]], names) is None


def test_fixed_lambda_warning_checks_only_groups_follow_mup_rule() -> None:
    # muP: lr / s at s = 4, but the same weight decay before: lambda was kept fixed across widths
    base = group("embed", reference_lr=1e-2, weight_decay_before=0.1, weight_decay=0.05, width_mult=1.0)
    hidden = group("hidden", 1, reference_lr=2.5e-3, weight_decay_before=0.1, weight_decay=0.2, width_mult=4.0)
    pitfalls, message = fixed_lambda_warning([base, hidden])
    assert [p.name for p in pitfalls] == ["hidden"]
    assert message is not None and "'hidden'" in message and "0.2" in message
    chosen = group("hidden", 1, reference_lr=2.5e-3, weight_decay_before=0.1, width_mult=4.0, width_exponent=0.5)
    assert fixed_lambda_warning([base, chosen]) == ([], None)
    off = group("hidden", 1, managed=False, reference_lr=2.5e-3, weight_decay_before=0.1, width_mult=4.0)
    assert fixed_lambda_warning([base, off]) == ([], None)


def test_one_line_warnings() -> None:
    assert width_exponent_unused_warning({"hidden": 0.5}) == (
        "`TimescaleCallback(width_exponent={'hidden': 0.5})` has no effect: no param group has a muP width multiplier"
        " other than 1 (no `width_mult` key, no mup `infshape`), so every group keeps the timescale. Leave"
        " width_exponent out, or call `mup.set_base_shapes` on a μP model."
    )
    assert resume_warning(["world_size 1 -> 2", "tau_iter 50.0 -> 100.0"]) == (
        "`TimescaleCallback` resumed a run whose shape changed since the checkpoint: world_size 1 -> 2, tau_iter"
        " 50.0 -> 100.0. Weight decay is recomputed for the new values."
    )


def test_size_note_whole_and_only_exponent_not_zero() -> None:
    assert size_note(8.0, 50_000, size_exponent=-0.5, reference_dataset_size=12_500) == (
        "Held at this N: tau_epoch 8 x (50000/12500)^-0.5 = 4 (size_exponent=-0.5: tau_epoch ∝ N^-0.5 from"
        " reference_dataset_size=12500)."
    )
    assert size_note(8.0, 3_125, size_exponent=1.0, reference_dataset_size=12_500) == (
        "Held at this N: tau_epoch 8 x (3125/12500)^1 = 2 (size_exponent=1: tau_epoch ∝ N^1 from"
        " reference_dataset_size=12500)."
    )
    assert size_note(8.0, 50_000, size_exponent=0.0, reference_dataset_size=12_500) is None
    # a measured width exponent in the pre-flight: rounded the same way
    hidden = GroupTimescale("hidden", 0, 0, 10, 1e-3, 0.1, 2.0, True, width_mult=4.0, width_exponent=0.90812)
    assert width_note(0.90812, [hidden]).startswith("width_exponent=0.91 at the model's width multiplier S=4")
    assert "hidden (s=4, alpha=0.91: x1.136)" in width_note(0.90812, [hidden])
    # a measured exponent in the pre-flight: as the finder's table spells it (2 decimals, 0 within 0.005 of zero)
    assert size_note(5.13842, 1347, size_exponent=-0.000760685, reference_dataset_size=1347) == (
        "Held at this N: tau_epoch 5.138 x (1347/1347)^0 = 5.138 (size_exponent=0: tau_epoch ∝ N^0 from"
        " reference_dataset_size=1347)."
    )
    assert "x (1347/337)^-0.39 = " in size_note(5.0, 1347, size_exponent=-0.391234, reference_dataset_size=337)
    assert "(size_exponent=-0.39: tau_epoch ∝ N^-0.39 from" in size_note(
        5.0, 1347, size_exponent=-0.391234, reference_dataset_size=337
    )
    assert size_note(None, 50_000, size_exponent=-0.5, reference_dataset_size=12_500) is None


def test_start_summary_puts_size_note_first() -> None:
    table = dict(tau_iter=500.0, tau_epoch=4.0, shape=RunShape(125), planned_steps=None, optimizer_steps_per_epoch={})
    said = start_summary(
        [group()],
        **table,
        note="A note.",
        width_exponent=1.0,
        manual_tau_epoch=None,  # type: ignore[arg-type]
        size_scaling="Held at this N: ...",
    )
    assert said.splitlines()[0].startswith("TimescaleCallback: tau_epoch=4 (tau_iter=500 steps)")
    assert said.splitlines()[-2:] == ["Held at this N: ...", "A note."]


def test_batch_note_whole_and_only_exponent_not_zero() -> None:
    assert batch_note(8.0, 256, batch_exponent=1.0, reference_batch_size=128) == (
        "Held at this B: tau_epoch 8 x (256/128)^1 = 16 (batch_exponent=1: tau_epoch ∝ B^1 from"
        " reference_batch_size=128)."
    )
    assert batch_note(8.0, 32, batch_exponent=-0.5, reference_batch_size=128) == (
        "Held at this B: tau_epoch 8 x (32/128)^-0.5 = 16 (batch_exponent=-0.5: tau_epoch ∝ B^-0.5 from"
        " reference_batch_size=128)."
    )
    assert "(batch_exponent=0.62: tau_epoch ∝ B^0.62 from" in batch_note(
        5.0, 64, batch_exponent=0.6234, reference_batch_size=16
    )
    assert batch_note(8.0, 256, batch_exponent=0.0, reference_batch_size=128) is None
    assert batch_note(None, 256, batch_exponent=1.0, reference_batch_size=128) is None
    assert batch_note(8.0, None, batch_exponent=1.0, reference_batch_size=128) is None


def test_start_summary_puts_batch_note_after_size_note() -> None:
    table = dict(tau_iter=500.0, tau_epoch=4.0, shape=RunShape(125), planned_steps=None, optimizer_steps_per_epoch={})
    said = start_summary(
        [group()],
        **table,
        note="A note.",
        width_exponent=1.0,
        manual_tau_epoch=None,  # type: ignore[arg-type]
        size_scaling="Held at this N: ...",
        batch_scaling="Held at this B: ...",
    )
    assert said.splitlines()[-3:] == ["Held at this N: ...", "Held at this B: ...", "A note."]


def test_start_warnings_come_in_order_and_only_due() -> None:
    bias = torch.zeros(2)
    plain = GroupInput("pg1", 0, 0, 2, 1e-3, 0.1, True, width_problem=NO_MUP)
    base = group("embed", reference_lr=1e-2, weight_decay_before=0.1, weight_decay=0.05, width_mult=1.0)
    hidden = group(
        "hidden",
        1,
        reference_lr=2.5e-3,
        weight_decay_before=0.1,
        weight_decay=0.2,
        width_mult=4.0,
        planned_timescales=0.5,
    )
    param_groups = [[{"params": [bias]}, {"params": [torch.zeros(2, 2)]}]]
    pitfalls, warnings = start_warnings(
        [base, hidden],
        [plain],
        resume=["world_size 1 -> 2"],
        width_exponent=0.5,
        param_groups=param_groups,
        names={id(bias): "b"},
    )
    assert [p.name for p in pitfalls] == ["hidden"]
    assert warnings == [
        resume_warning(["world_size 1 -> 2"]),
        width_exponent_unused_warning(0.5),
        fixed_lambda_warning([base, hidden])[1],
        vectors_warning([base, hidden], param_groups, {id(bias): "b"}),
        short_run_warning([base, hidden]),
    ]
    assert None not in warnings
    # nothing due: no resume change, the paper's exponent (or none named), 1-D parameters declared, a long run
    long = group("pg1", planned_timescales=2.0)
    for exponent in (1.0, {}):
        none = start_warnings([long], [plain], resume=[], width_exponent=exponent, param_groups=None, names={})
        assert none == ([], [])
    # a width exponent acts when some group has a multiplier, or when no managed group lacks one
    mup = GroupInput("hidden", 0, 1, 2, 1e-3, 0.1, True, width_mult=4.0)
    unmanaged = GroupInput("pg1", 0, 0, 2, 1e-3, 0.0, False, width_problem=NO_MUP)
    other = GroupInput("pg1", 0, 0, 2, 1e-3, 0.1, True, width_problem="its parameters have several multipliers")
    for inputs in ([plain, mup], [unmanaged], [other]):
        assert start_warnings([long], inputs, resume=[], width_exponent=0.5, param_groups=None, names={}) == ([], [])


def test_start_summary_table_with_decisions_note_width_note_and_manual_note_in_order() -> None:
    # optimizer 1 steps 50 times an epoch (declared), the run's M is 100; the group holds tau_iter = 500 x 4^(1 - 0.5)
    # = 1000 steps: weight decay 1 / (0.001 x 1000) = 1, and tau_epoch 1000 / 50 = 20 in its optimizer's own steps
    hidden = GroupTimescale(
        "hidden",
        1,
        0,
        managed=True,
        num_params=10,
        reference_lr=1e-3,
        weight_decay_before=0.1,
        weight_decay=1.0,
        width_mult=4.0,
        width_exponent=0.5,
        tau_iter=1000.0,
        planned_timescales=1.0,
    )
    shape = RunShape(100, 1000, 10)
    table = dict(tau_iter=500.0, tau_epoch=5.0, shape=shape, planned_steps=500, optimizer_steps_per_epoch={1: 50})
    rule = (
        "at the model's width multiplier S=4 (the largest muP multiplier of its groups): each decaying group holds"
        " tau_iter x S^(1 - alpha), so weight decay ∝ S^alpha for a hidden group (lr / S)"
    )
    head = [
        "TimescaleCallback: tau_epoch=5 (tau_iter=500 steps), M=100 steps/epoch, N=1,000, B=10",
        "  | Group  | Params | Width mult | Ref lr | Weight decay | tau_iter | tau_epoch | Timescales planned",
        "-" * 100,
        "0 | hidden | 10     | 4          | 0.001  | 0.1 -> 1     | 1000     | 20        | 1",
        "Planned: 500 optimizer steps.",
    ]
    said = start_summary([hidden], **table, note="A note.", width_exponent=0.5, manual_tau_epoch=5.0)  # type: ignore[arg-type]
    assert said.splitlines() == [
        *head,
        "A note.",
        f"width_exponent=0.5 {rule}: hidden (s=4, alpha=0.5: x2).",
        "Manual optimization: tau_epoch is held in each optimizer's own steps per epoch; optimizer 1: M=50 as"
        " declared, the others assumed to step once per batch (M=100) until an epoch's steps are counted (warned and"
        " re-decided at the next epoch if they differ).",
    ]
    said = start_summary([hidden], **table, note=None, width_exponent=1.0, manual_tau_epoch=None)  # type: ignore[arg-type]
    assert said == "\n".join(head)
    assert format_summary([hidden], **table) == said  # type: ignore[arg-type]


def test_start_summary_adds_plan_and_windows_under_table() -> None:
    from lightning_tau.couplings import plan
    from lightning_tau.summary import Window, plan_lines, windows_lines

    g = group("pg1", planned_timescales=1.0, tau_iter=500.0)
    table = dict(tau_iter=500.0, tau_epoch=5.0, shape=RunShape(100, 1000, 10), planned_steps=400)
    common = dict(optimizer_steps_per_epoch={}, note=None, width_exponent=1.0, manual_tau_epoch=None)
    p = plan("per_step", [1e-3] * 400, lr_ref=1e-3, tau_iter=500.0, steps_per_epoch=100)
    windows = [Window("AdamW tau (pg1)", 500.0), Window("model EMA (Ema)", 50.0, "decay=0.98")]
    said = start_summary([g], **table, **common, coupling="per_step", plans={"pg1": p}, windows=windows)  # type: ignore[arg-type]
    plain = format_summary([g], **table)  # type: ignore[arg-type]
    assert said == "\n".join([plain, *plan_lines("per_step", {"pg1": p}), *windows_lines(windows, **WINDOW_SHAPE)])
    assert plan_lines("per_step", {"pg1": p})[3].split("|") == [
        "  pg1   ",
        " 500            ",
        " 500             ",
        " 500          ",
        " 0.8        ",
        " 0.45             ",
        " 1.73",  # sum_k k q^k / sum_k q^k over k < 400, q = 1 - 1/500: 173 steps
    ]
    assert windows_lines(windows, **WINDOW_SHAPE)[3:] == [
        "  AdamW tau (pg1) | 500   | 5      | 5,000             |",
        "  model EMA (Ema) | 50    | 0.5    | 500               | decay=0.98",
    ]
    assert windows_lines(windows, steps_per_epoch=None, global_batch_size=None, unit="tokens")[1] == (
        "  Timescale       | Steps | Epochs | Tokens | From"
    )
    assert start_summary([g], **table, **common) == plain  # type: ignore[arg-type]


WINDOW_SHAPE = dict(steps_per_epoch=100, global_batch_size=10)
