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
    decide_groups,
    group_targets,
    held_tau_epoch,
    model_width_mult,
    optimizer_tau_iters,
    resolve_tau_iter,
    run_tau_iter,
    step_writes,
    uses_mup,
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


def test_groups_reports_every_field_and_leaves_unmanaged_groups_alone() -> None:
    groups = [
        group("hidden", 4.0, num_params=64, reference_lr=2.5e-4),
        group("bias", None, group_index=1, num_params=8, weight_decay_before=0.0, managed=False),
    ]
    assert decide_groups(groups, 100.0) == [
        GroupTimescale("hidden", 0, 0, 64, 2.5e-4, 0.1, pytest.approx(40.0), True, 4.0, None, 100.0, 1.0),
        GroupTimescale("bias", 0, 1, 8, 1e-3, 0.0, 0.0, False, None, None, None, 1.0),
    ]


def test_groups_takes_each_optimizers_own_tau_iter() -> None:
    groups = [group("a"), group("b", optimizer_index=1)]
    decided = decide_groups(groups, {0: 100.0, 1: 400.0})
    assert [(g.tau_iter, g.weight_decay) for g in decided] == [
        (100.0, pytest.approx(10.0)),
        (400.0, pytest.approx(2.5)),
    ]


@pytest.mark.parametrize("lr", [0.0, -1e-3, float("inf"), float("nan")])
def test_groups_refuses_managed_group_without_positive_lr(lr: float) -> None:
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
def test_width_exponent_scales_groups_timescale_by_s_to_one_minus_alpha(
    width_mult: float | None, alpha: float, tau_iter: float
) -> None:
    (decided,) = decide_groups([group(width_mult=width_mult)], 100.0, width_exponent=alpha)
    assert decided.tau_iter == pytest.approx(tau_iter) and decided.width_exponent == alpha
    assert decided.weight_decay == pytest.approx(1 / (1e-3 * tau_iter))


@pytest.mark.parametrize("alpha", [0.5, 0.0, 2.0])
def test_group_at_s_one_in_model_at_s_four_moves_with_model(alpha: float) -> None:
    """The one definition the finder's width axis measures: every decaying group's ``tau_iter`` scales as
    ``S ** (1 - alpha)``, ``S`` the model's multiplier, so a vector group at ``s = 1`` gets ``4 ** (alpha - 1)`` times
    its weight decay at exponent 1, as the hidden group does."""
    groups = [
        group("hidden", 4.0, reference_lr=2.5e-4),
        group("vectors", 1.0, group_index=1),  # a declared s = 1 (build_param_groups)
        group("readout", None, group_index=2),  # mup's vector-like group: no multiplier read, s = 1
        group("bias", 1.0, group_index=3, managed=False, weight_decay_before=0.0),
    ]
    at_one = decide_groups(groups, 1000.0)
    moved = decide_groups(groups, 1000.0, width_exponent=alpha)
    assert [g.weight_decay for g in at_one] == pytest.approx([4.0, 1.0, 1.0, 0.0], rel=1e-12)  # 1 / (lr * 1000)
    for before, after in zip(at_one[:3], moved[:3]):
        assert after.weight_decay == pytest.approx(before.weight_decay * 4.0 ** (alpha - 1), rel=1e-12), after.name
        assert after.tau_iter == pytest.approx(1000.0 * 4.0 ** (1 - alpha), rel=1e-12)
    assert moved[3].weight_decay == 0.0 and moved[3].tau_iter is None  # left alone
    # exponent 1 changes nothing, written as a number or as a mapping
    assert decide_groups(groups, 1000.0, width_exponent=1.0) == at_one
    assert decide_groups(groups, 1000.0, width_exponent={"vectors": 1.0}) == at_one


def test_mapping_moves_named_group_at_s_one_by_models_s() -> None:
    groups = [group("hidden", 4.0, reference_lr=2.5e-4), group("vectors", 1.0, group_index=1)]
    hidden, vectors = decide_groups(groups, 1000.0, width_exponent={"vectors": 0.0})
    assert (hidden.width_exponent, hidden.tau_iter) == (1.0, 1000.0)  # not named: exponent 1
    assert (vectors.width_exponent, vectors.tau_iter) == (0.0, pytest.approx(4000.0))  # S ** (1 - 0) with S = 4
    assert vectors.weight_decay == pytest.approx(1 / (1e-3 * 4000.0))


def test_model_width_mult_largest_multiplier_other_than_one() -> None:
    assert model_width_mult([group("a", None), group("b", 1.0)]) == 1.0
    assert model_width_mult([group("a", 2.0), group("b", 8.0), group("c", 1.0)]) == 8.0
    assert model_width_mult([group("a", 0.5), group("b", 1.0)]) == 0.5  # narrower than the base: S = 0.5
    for s in (0.0, -2.0, float("inf")):
        with raises_exactly(f"Param group 'b' has width multiplier {s!r}; `width_exponent` needs a positive one."):
            model_width_mult([group("a", 4.0), group("b", s)])


def test_width_exponent_mapping_sets_named_groups_and_others_keep_one() -> None:
    decided = decide_groups(
        [group("hidden", 4.0), group("out", 4.0, group_index=1)], 100.0, width_exponent={"hidden": 0}
    )
    assert [(g.name, g.width_exponent, g.tau_iter) for g in decided] == [("hidden", 0.0, 400.0), ("out", 1.0, 100.0)]
    with raises_exactly(
        "`width_exponent` names param group(s) ['other'] that this run does not have. Its groups are ['hidden', 'out']"
        " (a group's `name` key, else pg1, pg2, ...; `optimizer{i}/` prefixed with several optimizers)."
    ):
        decide_groups([group("hidden"), group("out")], 100.0, width_exponent={"other": 0.5, "out": 0.5})


def test_width_exponent_errors_name_group_and_what_to_do() -> None:
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
        "`width_exponent=2` gives param group 'hidden' (model S=4) a timescale of 1 steps,"
        + TOO_SHORT
        + " Use a longer target timescale or an exponent nearer 1."
    ):
        decide_groups([group(width_mult=4.0)], 4.0, width_exponent=2.0)


def decided(
    name: str = "pg1", *, optimizer: int = 0, index: int = 0, tau_iter: float | None = 500.0, managed: bool = True
) -> GroupTimescale:
    return GroupTimescale(name, optimizer, index, 10, 1e-3, 0.1, 2.0, managed, tau_iter=tau_iter)


def test_run_tau_iter_names_callback_and_mid_fit_epoch_and_where_m_came_from() -> None:
    shape = RunShape(2, sources=("M = 2 optimizer steps per epoch: 2 batches per rank.",))
    assert run_tau_iter(shape, tau_epoch=5.0, tau_iter=None) == 10.0
    assert run_tau_iter(RunShape(None), tau_epoch=None, tau_iter=300.0) == 300.0
    too_short = "`tau_epoch=0.5` is 1 optimizer steps at M=2 steps per epoch," + TOO_SHORT
    advice = " Use `tau_epoch` above 0.5 (one optimizer step); good values are usually several epochs."
    with raises_exactly("`TimescaleCallback`: " + too_short + advice):
        run_tau_iter(shape, tau_epoch=0.5, tau_iter=None)
    with raises_exactly(
        "`TimescaleCallback` at epoch 3 (M = 2 optimizer steps per epoch: 2 batches per rank.): " + too_short + advice
    ):
        run_tau_iter(shape, tau_epoch=0.5, tau_iter=None, epoch=3)


def test_run_tau_iter_says_why_m_unknown_only_tau_epoch_needs_it() -> None:
    unknown = RunShape(None, problems=("No length.", "No batch size."))
    with raises_exactly("No length. No batch size."):
        run_tau_iter(unknown, tau_epoch=5.0, tau_iter=None)
    assert run_tau_iter(unknown, tau_epoch=None, tau_iter=300.0) == 300.0
    with pytest.raises(ValueError, match=r"^`TimescaleCallback`: `tau_epoch=5.0` needs the optimizer steps"):
        run_tau_iter(RunShape(None), tau_epoch=5.0, tau_iter=None)  # no reason recorded: the generic message


def test_optimizer_tau_iters_holds_tau_epoch_in_each_optimizers_own_steps() -> None:
    assert optimizer_tau_iters(3, 500.0, tau_epoch=5.0, optimizer_m={1: 50.0, 2: 20.0}) == {
        0: 500.0,
        1: 250.0,
        2: 100.0,
    }
    assert optimizer_tau_iters(2, 500.0, tau_epoch=5.0, optimizer_m={}) == 500.0
    assert optimizer_tau_iters(2, 500.0, tau_epoch=None, optimizer_m={1: 50.0}) == 500.0  # steps are steps


def test_optimizer_tau_iters_names_optimizer_and_mid_fit_epoch() -> None:
    too_short = (
        "`tau_epoch=0.5` is 1 optimizer steps at M=2 steps per epoch,"
        + TOO_SHORT
        + " Use `tau_epoch` above 0.5 (one optimizer step); good values are usually several epochs."
    )
    with raises_exactly("`TimescaleCallback`, optimizer 1: " + too_short):
        optimizer_tau_iters(2, 50.0, tau_epoch=0.5, optimizer_m={1: 2.0})
    with raises_exactly("`TimescaleCallback` at epoch 4, optimizer 1: " + too_short):
        optimizer_tau_iters(2, 50.0, tau_epoch=0.5, optimizer_m={1: 2.0}, epoch=4)


def test_group_targets_give_each_managed_group_own_timescale() -> None:
    wide = GroupTimescale("wide", 0, 0, 10, 1e-3, 0.1, 1.0, True, tau_iter=1000.0)  # s ** (1 - alpha) = 2
    second = decided("gen", optimizer=1, tau_iter=250.0)
    skipped = [decided("bias", index=1, managed=False, tau_iter=300.0), decided("odd", index=2, tau_iter=None)]
    groups = [wide, second, *skipped]
    # a tau_epoch target: tau_epoch times the group's share of its optimizer's tau_iter
    assert group_targets(groups, 500.0, 5.0, {}, 100.0) == {(0, 0): (1000.0, 10.0), (1, 0): (250.0, 2.5)}
    assert group_targets(groups, {0: 500.0, 1: 250.0}, 5.0, {1: 50.0}, 100.0) == {
        (0, 0): (1000.0, 10.0),
        (1, 0): (250.0, 5.0),
    }
    # a tau_iter target: in each optimizer's own steps per epoch, unknown without one
    assert group_targets(groups, 500.0, None, {1: 50.0}, 100.0) == {(0, 0): (1000.0, 10.0), (1, 0): (250.0, 5.0)}
    assert group_targets(groups, 500.0, None, {}, None) == {(0, 0): (1000.0, None), (1, 0): (250.0, None)}


def test_step_writes_list_each_optimizers_managed_groups_with_their_reference() -> None:
    groups = [
        decided("a", index=0, tau_iter=500.0),
        decided("b", index=1, managed=False, tau_iter=None),
        decided("c", index=2, tau_iter=250.0),
        decided("e", optimizer=1, index=0, tau_iter=500.0),
    ]
    a, c, e = groups[0], groups[2], groups[3]
    assert step_writes(groups) == {
        0: [(0, a.weight_decay, a.reference_lr), (2, c.weight_decay, c.reference_lr)],
        1: [(0, e.weight_decay, e.reference_lr)],
    }
    assert step_writes([groups[1]]) == {}


def test_width_exponent_scales_only_mup_runs_and_asks_every_group_of_one_for_multiplier() -> None:
    """``decide_groups`` applies a width exponent other than 1 only when the run has a width multiplier somewhere;
    then a decaying group without one is an error, not silently left at ``s = 1``."""
    from lightning_tau.width import NO_MUP

    plain = GroupInput("decay", 0, 0, 64, 1e-3, 0.1, True, width_problem=NO_MUP)
    hidden = GroupInput("hidden", 0, 1, 64, 1e-3 / 4, 0.1, True, width_mult=4.0)
    # no muP group: the exponent changes nothing, and the plain group needs no width_mult
    (only,) = decide_groups([plain], 1000.0, width_exponent=0.5)
    assert only.weight_decay == pytest.approx(1 / (1e-3 * 1000.0))
    # the default exponent 1 never asks for a multiplier
    assert decide_groups([plain, hidden], 1000.0)[1].weight_decay == pytest.approx(1 / (1e-3 / 4 * 1000.0))
    # a muP run with exponent 0.5: the hidden group's tau_iter is 1000 * 4 ** 0.5, the plain group must declare its s
    with pytest.raises(ValueError, match="needs its muP width multiplier s"):
        decide_groups([plain, hidden], 1000.0, width_exponent=0.5)
    (scaled,) = decide_groups([hidden], 1000.0, width_exponent=0.5)
    assert scaled.weight_decay == pytest.approx(1 / (1e-3 / 4 * 1000.0 * 2.0))


def test_uses_mup_needs_multiplier_or_annotation_problem() -> None:
    """A group that declares nothing about width (``width_problem=None``, no ``width_mult``) is not muP; one whose
    width is known to be ambiguous (a problem other than "no mup at all") is."""
    from lightning_tau.width import NO_MUP

    assert not uses_mup([GroupInput("decay", 0, 0, 64, 1e-3, 0.1, True)])
    assert not uses_mup([GroupInput("decay", 0, 0, 64, 1e-3, 0.1, True, width_mult=1.0)])
    assert not uses_mup([GroupInput("decay", 0, 0, 64, 1e-3, 0.1, True, width_problem=NO_MUP)])
    assert uses_mup([GroupInput("mixed", 0, 0, 64, 1e-3, 0.1, True, width_problem="its parameters have several")])


def test_group_targets_skip_group_not_decay_and_go_on() -> None:
    off = GroupTimescale("bias", 0, 0, 8, 1e-3, 0.0, 0.0, False)
    hidden = GroupTimescale("hidden", 0, 1, 64, 1e-3, 0.1, 1.0, True, width_mult=4.0, tau_iter=1000.0)
    assert group_targets([off, hidden], 500.0, 5.0, {}, 100) == {(0, 1): (1000.0, 10.0)}


def test_run_tau_iter_names_every_source_of_m_in_mid_fit_error() -> None:
    shape = RunShape(1, sources=("M = 1 from the loader.", "B = 64."))
    with pytest.raises(ValueError, match=re.escape("at epoch 3 (M = 1 from the loader. B = 64.): `tau_epoch=0.5`")):
        run_tau_iter(shape, tau_epoch=0.5, tau_iter=None, epoch=3)


# --- the dataset-size exponent: tau_epoch * (N / N_ref) ** e ---------------------------------------------------------


def test_held_tau_epoch_follows_each_shapes_n_and_leaves_steps_targets_alone() -> None:
    rule = dict(size_exponent=-0.5, reference_dataset_size=100)
    assert [held_tau_epoch(RunShape(10, n), 5.0, **rule) for n in (100, 400, 25)] == pytest.approx([5.0, 2.5, 10.0])
    assert held_tau_epoch(RunShape(10, 400), None, **rule) is None  # a tau_iter target
    assert held_tau_epoch(RunShape(10), 5.0, size_exponent=0.0, reference_dataset_size=None) == 5.0  # N not needed


def test_held_tau_epoch_without_readable_n_says_why_and_what_to_pass() -> None:
    with raises_exactly(
        "`TimescaleCallback(size_exponent=-0.5)` at epoch 2 needs the run's dataset size N: the dataset has no"
        " length. Pass `TimescaleCallback(dataset_size=...)` (in the unit of reference_dataset_size)."
    ):
        held_tau_epoch(
            RunShape(10, problems=("the dataset has no length.",)),
            5.0,
            size_exponent=-0.5,
            reference_dataset_size=100,
            epoch=2,
        )


# --- the batch-size exponent: times (B / B_ref) ** e at the shape's global B -----------------------------------------


def test_held_tau_epoch_follows_each_shapes_b_times_size_factor() -> None:
    rule = dict(size_exponent=0.0, reference_dataset_size=None, batch_exponent=1.0, reference_batch_size=20)
    held = [held_tau_epoch(RunShape(10, 100, b), 5.0, **rule) for b in (10, 20, 80)]
    assert held == pytest.approx([2.5, 5.0, 20.0])
    both = dict(size_exponent=-0.5, reference_dataset_size=25, batch_exponent=-0.5, reference_batch_size=20)
    assert held_tau_epoch(RunShape(10, 100, 80), 8.0, **both) == pytest.approx(8.0 * 4**-0.5 * 4**-0.5)
    assert held_tau_epoch(RunShape(10, 100, 80), None, **rule) is None  # a tau_iter target
    assert held_tau_epoch(RunShape(10), 5.0, size_exponent=0.0, reference_dataset_size=None) == 5.0  # B not needed


def test_held_tau_epoch_without_readable_b_says_why_and_what_to_pass() -> None:
    with raises_exactly(
        "`TimescaleCallback(batch_exponent=-0.5)` at epoch 1 needs the run's global batch size B: the batch has no"
        " size. Pass `TimescaleCallback(batch_size=...)` (the global B)."
    ):
        held_tau_epoch(
            RunShape(10, 100, problems=("the batch has no size.",)),
            5.0,
            size_exponent=0.0,
            reference_dataset_size=None,
            epoch=1,
            batch_exponent=-0.5,
            reference_batch_size=20,
        )


def test_group_timescale_decays_older_name_of_managed() -> None:
    assert [decided(managed=m).decays for m in (True, False)] == [True, False]
