"""Diagnostics for AdamW's EMA view: timescales, weight magnitudes and their predicted equilibrium, logged.

More: docs/diagnostics.rst, module notes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightning_tau._lazy import lazy_face

if TYPE_CHECKING:  # what the names below resolve to, for type checkers and IDEs
    from lightning_tau.diagnostics.metrics import TimescaleTracker, group_metrics, timescale_metrics
    from lightning_tau.diagnostics.monitor import TimescaleMonitor
    from lightning_tau.diagnostics.stats import (
        WeightStatsPass,
        all_reduce_sums,
        group_sums,
        magnitudes,
        weight_sums,
    )

#: Where each public name lives.
_PUBLIC = {
    "TimescaleMonitor": "lightning_tau.diagnostics.monitor",
    "TimescaleTracker": "lightning_tau.diagnostics.metrics",
    "group_metrics": "lightning_tau.diagnostics.metrics",
    "timescale_metrics": "lightning_tau.diagnostics.metrics",
    "WeightStatsPass": "lightning_tau.diagnostics.stats",
    "all_reduce_sums": "lightning_tau.diagnostics.stats",
    "group_sums": "lightning_tau.diagnostics.stats",
    "magnitudes": "lightning_tau.diagnostics.stats",
    "weight_sums": "lightning_tau.diagnostics.stats",
}


__getattr__, __dir__ = lazy_face(__name__, _PUBLIC, globals())


__all__ = [
    "TimescaleMonitor",
    "TimescaleTracker",
    "WeightStatsPass",
    "all_reduce_sums",
    "group_metrics",
    "group_sums",
    "magnitudes",
    "timescale_metrics",
    "weight_sums",
]
