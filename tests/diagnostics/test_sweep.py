"""``diagnostics/sweep.py``'s figure (``tau_sweep.png``): what a person reads on it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from lightning_tau.diagnostics.sweep import RunRecord, _curves, find_optima, shown_metric, sweep_figure  # noqa: E402


def _runs() -> list[RunRecord]:
    return [
        RunRecord(
            Path(f"r{n}_{t}_{seed}"),
            {"dataset_size": n, "tau_epoch": t, "weight_decay": 32 / (n * t)},
            {"hp/val_loss": 0.5 + 0.01 * (t - 10) ** 2 / t + n / 10_000 + 0.001 * seed},
        )
        for n in (100, 400)
        for t in (2.0, 5.0, 10.0, 20.0, 50.0)
        for seed in (0, 1)
    ]


def test_figure_names_metric_without_hp_prefix_and_says_what_stars_mark() -> None:
    import matplotlib.pyplot as plt

    runs = _runs()
    fig = sweep_figure(_curves(runs, "hp/val_loss", "dataset_size"), find_optima(runs, "hp/val_loss"),
                       "hp/val_loss", "dataset_size")
    try:
        assert [ax.get_ylabel() for ax in fig.axes] == ["val_loss", "val_loss"]
        assert "hp/" not in fig._suptitle.get_text()
        (legend,) = fig.legends
        assert legend.get_title().get_text() == "★ best grid point\n(seed mean)"
        # the legend sits beside the panels, off the data
        fig.canvas.draw()
        box = legend.get_window_extent()
        for ax in fig.axes:
            assert not box.overlaps(ax.get_window_extent())
    finally:
        plt.close(fig)


def test_shown_metric_drops_only_hparams_prefix() -> None:
    assert shown_metric("hp/val/loss") == "val/loss"
    assert shown_metric("val_hp/loss") == "val_hp/loss"
