"""The EMA windows the pre-flight lists (lightning_tau/callback_window.py), from plain values."""

from __future__ import annotations

import math

from lightning_tau.callback_window import ema_windows
from lightning_tau.decide import GroupTimescale
from lightning_tau.summary import Window


def _group(name: str, j: int, tau_iter: float | None, managed: bool = True) -> GroupTimescale:
    return GroupTimescale(name, 0, j, 4, 1e-3, 0.1, 0.1, managed, tau_iter=tau_iter)


def test_adamw_tau_listed_for_each_managed_group_with_timescale() -> None:
    groups = [_group("decay", 0, 500.0), _group("no_decay", 1, None, managed=False), _group("pg3", 2, 250.0)]
    assert ema_windows(groups, {}, None) == [Window("AdamW tau (decay)", 500.0), Window("AdamW tau (pg3)", 250.0)]


def test_beta2_windows_one_per_value_naming_groups_hold_it() -> None:
    groups = [_group("a", 0, 500.0), _group("b", 1, 500.0)]
    windows = ema_windows(groups, {(0, 0): 0.99, (0, 1): 0.99, (0, 2): 0.999}, None)[2:]
    assert [(w.what, f"{w.steps:.6g}", w.source) for w in windows] == [
        ("Adam beta2 (a, b)", "100", "betas[1]=0.99"),
        ("Adam beta2 (pg3)", "1000", "betas[1]=0.999"),  # a group the decision does not name: pg<j+1>
    ]


def test_held_beta2_says_beta2_epochs_and_one_near_one_shown_unrounded() -> None:
    (window,) = ema_windows([], {(0, 0): 1 - 1e-8}, 2.5)
    assert window.source == "betas[1]=1-1e-08 (beta2_epochs=2.5)" and window.steps > 9.9e7
    (edge,) = ema_windows([], {(0, 0): 1 - 2e-5}, None)  # 2e-5 from 1 is still shown as a number
    assert edge.source == "betas[1]=0.99998"


def test_beta2_of_one_endless_window_and_model_emas_come_last() -> None:
    windows = ema_windows([], {(1, 0): 1.0}, None, [("EMAWeightAveraging", 1000.0, "decay=0.999")])
    assert windows == [
        Window("Adam beta2 (pg1)", math.inf, "betas[1]=1"),
        Window("model EMA (EMAWeightAveraging)", 1000.0, "decay=0.999"),
    ]
