"""The EMA windows ``TimescaleCallback``'s pre-flight summary lists, in optimizer steps: AdamW's ``tau`` per managed
group, Adam's ``β₂`` window per value and each model EMA's (pure: plain values in, no Lightning).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from lightning_tau.couplings import ema_window_steps
from lightning_tau.decide import GroupTimescale
from lightning_tau.summary import Window

__all__ = ["ema_windows"]


def ema_windows(
    groups: Sequence[GroupTimescale],
    beta2s: Mapping[tuple[int, int], float],
    beta2_epochs: float | None,
    model_windows: Sequence[tuple[str, float, str]] = (),
) -> list[Window]:
    """Every EMA window of the run, in optimizer steps.

    AdamW's ``tau`` per managed group; Adam's ``β₂`` window per value, always (the groups holding it named;
    ``beta2_epochs`` when the callback holds it; a ``β₂`` within 1e-5 of 1 shown as ``1-x``; ``β₂ = 1`` as an endless
    window); then each model EMA's.

    Args:
        groups: the decision per param group (their names name the ``β₂`` groups; others are ``pg<j+1>``).
        beta2s: ``β₂`` per ``(optimizer, group)`` of every Adam-like group managed (``apply.adam_beta2s``).
        beta2_epochs: the window the callback holds ``β₂`` at, in epochs (``None``: the user's own ``β₂``).
        model_windows: ``(name, window in optimizer steps, source)`` of each model-EMA callback
            (``_trainer.model_ema_windows``).

    Example:
        >>> [f"{w.steps:.6g}" for w in ema_windows([], {(0, 0): 0.999, (0, 1): 1.0}, None)]
        ['1000', 'inf']
        >>> ema_windows([], {(0, 0): 1 - 1e-8}, 5.0)[0].source
        'betas[1]=1-1e-08 (beta2_epochs=5)'
    """
    windows = [Window(f"AdamW tau ({g.name})", g.tau_iter) for g in groups if g.managed and g.tau_iter]
    names = {(g.optimizer_index, g.group_index): g.name for g in groups}
    by_value: dict[float, list[str]] = {}
    for key, beta2 in beta2s.items():
        by_value.setdefault(beta2, []).append(names.get(key, f"pg{key[1] + 1}"))
    for beta2, held in by_value.items():
        held_by = "" if beta2_epochs is None else f" (beta2_epochs={beta2_epochs:g})"
        value = f"{beta2:.6g}" if 1 - beta2 >= 1e-5 or beta2 >= 1 else f"1-{1 - beta2:.4g}"  # 0.99999999 is not 1
        steps = ema_window_steps(beta2) if beta2 < 1 else math.inf
        windows.append(Window(f"Adam beta2 ({', '.join(held)})", steps, f"betas[1]={value}{held_by}"))
    windows += [Window(f"model EMA ({name})", steps, source) for name, steps, source in model_windows]
    return windows
