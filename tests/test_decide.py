"""The pure decision path (lightning_tau/decide.py): targets, per-group weight decay, width exponents, shape changes.

Fast and without Lightning: these are among the tests `make mutation` runs against decide.py's mutants, so each
message is checked whole and each boundary from both sides.
"""

from __future__ import annotations

import re

import pytest

from lightning_tau.decide import (
    GroupInput,
    GroupTimescale,
    RunShape,
    check_width_exponent,
    decide_groups,
    resolve_tau_iter,
    shape_changes,
)

TOO_SHORT = (
    " so `lr * weight_decay = 1` (>= 1): every step would shrink the weights to zero or past it, and training diverges."
)
USAGE = (
    " use a finite number alpha (weight decay ∝ s ** alpha across widths; 1 is the paper's muP rule) or a mapping"
    " from param group name to alpha, e.g. {'hidden': 0.5}."
)


def raises_exactly(message: str) -> pytest.RaisesContext[ValueError]:
    return pytest.raises(ValueError, match=f"^{re.escape(message)}$")


def group(name: str = "hidden", width_mult: float | None = None, **kwargs: object) -> GroupInput:
    fields: dict = dict(optimizer_index=0, group_index=0, num_params=64, reference_lr=1e-3, weight_decay_before=0.1)
    fields.update(kwargs)
    managed = fields.pop("managed", True)
    return GroupInput(name, managed=managed, width_mult=width_mult, **fields)


def test_resolve_tau_iter_takes_exactly_one_target() -> None:
    with raises_exactly("Give exactly one of `tau_epoch` and `tau_iter`, got tau_epoch=None and tau_iter=None."):
        resolve_tau_iter()
    with raises_exactly("Give exactly one of `tau_epoch` and `tau_iter`, got tau_epoch=1.0 and tau_iter=5.0."):
        resolve_tau_iter(tau_epoch=1.0, tau_iter=5.0, steps_per_epoch=10)


def test_resolve_tau_iter_given_in_steps_must_exceed_one_step() -> None:
    assert resolve_tau_iter(tau_iter=5) == 5.0 and isinstance(resolve_tau_iter(tau_iter=5), float)
    assert resolve_tau_iter(tau_iter=1.5) == 1.5
    with raises_exactly("`tau_iter=1.0` optimizer steps" + TOO_SHORT + " Use `tau_iter > 1`."):
        resolve_tau_iter(tau_iter=1.0)
    with raises_exactly(
        "`tau_iter=0.5` optimizer steps so `lr * weight_decay = 2` (>= 1): every step would shrink the weights to zero"
        " or past it, and training diverges. Use `tau_iter > 1`."
    ):
        resolve_tau_iter(tau_iter=0.5)
    with raises_exactly("`tau_iter` must be a positive finite number, got -3."):
        resolve_tau_iter(tau_iter=-3)


def test_resolve_tau_iter_from_epochs_needs_steps_per_epoch_and_more_than_one_step() -> None:
    assert resolve_tau_iter(tau_epoch=0.75, steps_per_epoch=2) == 1.5
    with raises_exactly(
        "`tau_epoch=0.5` is 1 optimizer steps at M=2 steps per epoch," + TOO_SHORT + " Use `tau_epoch` above 0.5 (one"
        " optimizer step); good values are usually several epochs."
    ):
        resolve_tau_iter(tau_epoch=0.5, steps_per_epoch=2)
    with raises_exactly(
        "`tau_epoch=2.0` needs the optimizer steps per epoch, which this run does not tell (an endless train"
        " dataloader?). Pass `dataset_size` and `batch_size` (M = dataset_size / batch_size), or give the target as"
        " `tau_iter` in optimizer steps."
    ):
        resolve_tau_iter(tau_epoch=2.0)
    with raises_exactly("`tau_epoch` must be a positive finite number, got 0."):
        resolve_tau_iter(tau_epoch=0, steps_per_epoch=2)
    with raises_exactly("`steps_per_epoch` must be a positive finite number, got 0."):
        resolve_tau_iter(tau_epoch=1.0, steps_per_epoch=0)


def test_decide_groups_reports_every_field_and_leaves_unmanaged_groups_alone() -> None:
    groups = [
        group("hidden", 4.0, num_params=64, reference_lr=2.5e-4),
        group("bias", None, group_index=1, num_params=8, weight_decay_before=0.0, managed=False),
    ]
    assert decide_groups(groups, 100.0) == [
        GroupTimescale("hidden", 0, 0, 64, 2.5e-4, 0.1, pytest.approx(40.0), True, 4.0, None, 100.0, 1.0),
        GroupTimescale("bias", 0, 1, 8, 1e-3, 0.0, 0.0, False, None, None, None, 1.0),
    ]


def test_decide_groups_takes_each_optimizers_own_tau_iter() -> None:
    groups = [group("a"), group("b", optimizer_index=1)]
    decided = decide_groups(groups, {0: 100.0, 1: 400.0})
    assert [(g.tau_iter, g.weight_decay) for g in decided] == [
        (100.0, pytest.approx(10.0)),
        (400.0, pytest.approx(2.5)),
    ]


@pytest.mark.parametrize("lr", [0.0, -1e-3, float("inf"), float("nan")])
def test_decide_groups_refuses_a_managed_group_without_a_positive_lr(lr: float) -> None:
    with raises_exactly(
        f"Cannot set a timescale for param group 'hidden': its reference learning rate is {lr!r}. Give it a positive"
        " lr, or `weight_decay=0` to leave it out."
    ):
        decide_groups([group(reference_lr=lr)], 100.0)
    assert decide_groups([group(reference_lr=lr, managed=False)], 100.0)[0].weight_decay == 0.1


@pytest.mark.parametrize(
    ("width_mult", "alpha", "tau_iter"),
    [(9.0, 0.5, 300.0), (2.0, 0.0, 200.0), (0.5, 0.0, 50.0), (None, 0.5, 100.0), (1.0, 3.0, 100.0), (4.0, 2.0, 25.0)],
)
def test_width_exponent_scales_a_groups_timescale_by_s_to_one_minus_alpha(
    width_mult: float | None, alpha: float, tau_iter: float
) -> None:
    (decided,) = decide_groups([group(width_mult=width_mult)], 100.0, width_exponent=alpha)
    assert decided.tau_iter == pytest.approx(tau_iter) and decided.width_exponent == alpha
    assert decided.weight_decay == pytest.approx(1 / (1e-3 * tau_iter))


def test_a_width_exponent_mapping_sets_named_groups_and_others_keep_one() -> None:
    decided = decide_groups(
        [group("hidden", 4.0), group("out", 4.0, group_index=1)], 100.0, width_exponent={"hidden": 0}
    )
    assert [(g.name, g.width_exponent, g.tau_iter) for g in decided] == [("hidden", 0.0, 400.0), ("out", 1.0, 100.0)]
    with raises_exactly(
        "`width_exponent` names param group(s) ['other'] that this run does not have. Its groups are ['hidden', 'out']"
        " (a group's `name` key, else pg1, pg2, ...; `optimizer{i}/` prefixed with several optimizers)."
    ):
        decide_groups([group("hidden"), group("out")], 100.0, width_exponent={"other": 0.5, "out": 0.5})


def test_width_exponent_errors_name_the_group_and_what_to_do() -> None:
    with raises_exactly(
        "`width_exponent=0.5` for param group 'hidden' needs its muP width multiplier s, but it has no `width_mult`"
        " key. Call `mup.set_base_shapes` on the model, put a `width_mult` key on the group (1 for a group whose lr"
        " does not scale with width; `build_param_groups` does both), or give the group exponent 1 with"
        " `width_exponent={..., 'hidden': 1.0}`."
    ):
        decide_groups([group(width_problem="it has no `width_mult` key")], 100.0, width_exponent=0.5)
    for s in (0.0, -2.0, float("inf")):
        with raises_exactly(f"Param group 'hidden' has width multiplier {s!r}; `width_exponent` needs a positive one."):
            decide_groups([group(width_mult=s)], 100.0, width_exponent=0.5)
    assert decide_groups([group(width_mult=4.0)], 6.0, width_exponent=2.0)[0].tau_iter == 1.5
    with raises_exactly(
        "`width_exponent=2` gives param group 'hidden' (s=4) a timescale of 1 steps," + TOO_SHORT + " Use a longer"
        " target timescale or an exponent nearer 1."
    ):
        decide_groups([group(width_mult=4.0)], 4.0, width_exponent=2.0)


def test_check_width_exponent_messages() -> None:
    assert check_width_exponent(1) == 1.0 and check_width_exponent({"a": 1}) == {"a": 1.0}
    with raises_exactly("`TimescaleCallback(width_exponent={3: 1.0})` is not valid: entry 3: 1.0;" + USAGE):
        check_width_exponent({3: 1.0})
    with raises_exactly("`Owner(width_exponent={'h': 'x'})` is not valid: entry 'h': 'x';" + USAGE):
        check_width_exponent({"h": "x"}, owner="Owner")
    with raises_exactly("`TimescaleCallback(width_exponent=True)` is not valid:" + USAGE):
        check_width_exponent(True)


def test_shape_changes_names_each_changed_fact_and_ignores_rounding() -> None:
    old = RunShape(10, 100, 10)
    assert shape_changes(old, RunShape(10, 200, 10, world_size=2)) == ["dataset size 100 -> 200", "world size 1 -> 2"]
    assert shape_changes(old, RunShape(10.0 * (1 + 1e-15), 100, 10)) == []  # the same M up to float rounding
    assert shape_changes(old, RunShape(10.0 * (1 + 1e-10), 100, 10)) == ["steps per epoch 10 -> 10"]
    assert shape_changes(RunShape(None), RunShape(None)) == []
    assert shape_changes(RunShape(None), RunShape(3)) == ["steps per epoch ? -> 3"]
