"""``lightning_tau.tuner.analysis.axis_data``: the messages on a grid edge (the exponent's ``ci_reason``, the verdict,
the "Full run" line and the edge warning) name the bound the grid extension stopped at there, not "widen it"; where
the grid could still be widened (the extension's limit, or none given) they say "widen" and how."""

from __future__ import annotations

import json

import pytest
from axis_results import LAMBDA_BASE, sweep

from lightning_tau.tuner.analysis.axis_result import AxisResult
from lightning_tau.tuner.analysis.grid_extension import GridStop

STEPS = "tau_epoch 0.5 would be under 2 optimizer steps at the smallest axis point"
RUNS = "tau_epoch 64 would be over 16 times the run's 2 epochs, where weight decay does next to nothing"
MORE = "raise max_grid_extensions (3 steps at that end, all used) or give smaller tau_epochs"
LOW = GridStop("bottom", 2.0, "min_steps", STEPS)


def low_edge(axis: str) -> AxisResult:
    """Both points' best below the grid's first ``tau_epoch``, 2 (three seeds)."""
    if axis == "width":
        points = [sweep(1.0, (1, 1.1, 0.95)), sweep(1.5, (1, 0.9, 1.05))]
        return AxisResult.build("width", [64, 128], points, lambda_base=LAMBDA_BASE)
    if axis == "dataset_size":
        points = [sweep(1.0, (1, 1.1, 0.95), size=500, fraction=0.5), sweep(1.5, (1, 0.9, 1.05))]
        return AxisResult.build("dataset_size", [0.5, 1.0], points)
    return AxisResult.build("batch_size", [64, 128], [sweep(1.0, (1, 1.1, 0.95)), sweep(1.5, (1, 0.9, 1.05))])


def messages(result: AxisResult) -> list[str]:
    """The exponent's reason, the verdict, the table's exponent, "Full run" and warning lines, the edge warning."""
    lines = [line for line in result.table().splitlines() if line.startswith(("Exponent", "Full run", "Warning"))]
    assert len(lines) == 3, lines
    return [str(result.ci_reason), result.verdict, *lines, str(result.edge_warning())]


@pytest.mark.parametrize(
    ("axis", "edge", "name"),
    [("batch_size", "lower", "B=64"), ("dataset_size", "lower", "N=1000"), ("width", "upper", "width 64")],
)
def test_bound_held_at_edge_named_and_no_widen(axis: str, edge: str, name: str) -> None:
    # along width x is λ_base, which falls as tau_epoch grows: the grid's lowest tau_epoch is its upper λ_base
    plain = low_edge(axis)
    assert all("widen" in m for m in messages(plain))  # no record of the extension: the old words
    held = plain.with_grid((), (GridStop("top", 32.0, "extensions", MORE), LOW))
    scale = f"{held.scales[0]:g}"
    reason = (
        f"the best x is at the grid's {edge} edge at scale {scale}, which the grid cannot pass: {STEPS}; the exponent"
        " is capped there"
    )
    assert held.ci_reason == reason
    assert f"({reason})" in held.verdict and f"no interval ({reason})" in held.table()
    assert held.edge_warning() == (
        f"the best tau_epoch at {name} (2) is at the grid's lower edge, which the grid cannot pass: {STEPS}; the"
        " callback's tau_epoch is that edge value."
    )
    assert not any("widen" in m for m in messages(held))
    data = held.to_json()
    assert data["grid_stops"] == [s.to_json() for s in held.grid_stops] and data["ci_reason"] == reason
    assert [GridStop.from_json(s) for s in json.loads(json.dumps(data))["grid_stops"]] == list(held.grid_stops)
    with pytest.warns(UserWarning, match="which the grid cannot pass"):
        held.callback(verbose=False)


@pytest.mark.parametrize("axis", ["batch_size", "dataset_size", "width"])
def test_extensions_used_up_or_off_say_widen_and_how(axis: str) -> None:
    plain = low_edge(axis)
    for how in (MORE, "raise max_grid_extensions (0 steps at that end, all used) or give smaller tau_epochs"):
        more = plain.with_grid((), (GridStop("bottom", 2.0, "extensions", how),))
        reason = f"the best x is at the grid's edge at scale {more.scales[0]:g}, so the exponent is capped by the grid"
        assert more.ci_reason == f"{reason}: widen it: {how}"
        assert f"widen it: {how})" in more.verdict
        assert str(more.edge_warning()).endswith(f"widen the grid before trusting it: {how}.")
        assert all("widen" in m and how in m for m in messages(more))
        assert not any("cannot pass" in m for m in messages(more))


def test_stop_at_other_end_or_none_leaves_old_words() -> None:
    plain = low_edge("batch_size")
    other = plain.with_grid((), (GridStop("top", 32.0, "max_runs", RUNS),))
    assert (other.ci_reason, other.verdict, other.edge_warning()) == (
        plain.ci_reason,
        plain.verdict,
        plain.edge_warning(),
    )
    assert other.to_json()["grid_stops"] == [GridStop("top", 32.0, "max_runs", RUNS).to_json()]
    # an interior best: nothing at an edge to name, the verdict as it was
    inside = AxisResult.build("batch_size", [64, 128], [sweep(6.0, (1, 1.1, 0.95)), sweep(8.0, (1, 0.9, 1.05))])
    assert inside.with_grid((), (LOW,)).verdict == inside.verdict and inside.edge_warning() is None


def test_top_bound_held_names_runs_along_width() -> None:
    # the best above the grid's last tau_epoch, 32, at width 64: λ_base's lower edge; 64 would be 32 runs long
    points = [sweep(100.0, (1, 1.1, 0.95)), sweep(120.0, (1, 0.9, 1.05))]
    width = AxisResult.build("width", [64, 128], points, lambda_base=LAMBDA_BASE)
    held = width.with_grid((), (GridStop("top", 32.0, "max_runs", RUNS),))
    assert held.ci_reason == (
        f"the best x is at the grid's lower edge at scale 64, which the grid cannot pass: {RUNS}; the exponent is"
        " capped there"
    )
    assert held.edge_warning() == (
        f"the best tau_epoch at width 64 (32) is at the grid's upper edge, which the grid cannot pass: {RUNS}; the"
        " callback's tau_epoch is that edge value."
    )
