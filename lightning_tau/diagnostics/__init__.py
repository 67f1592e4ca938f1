"""Diagnostics for AdamW's EMA view: timescales, weight magnitudes and their predicted equilibrium, logged.

- :class:`TimescaleMonitor`: the Lightning callback that logs them (and TensorBoard dashboards).
- :mod:`lightning_tau.diagnostics.metrics`: the same per-group keys for any torch loop (plain PyTorch, Lightning
  Fabric): :func:`timescale_metrics` and the per-step :class:`TimescaleTracker` (torch only).
- :mod:`lightning_tau.diagnostics.stats`: the fused weight-statistics pass (torch only), usable without Lightning.
- :mod:`lightning_tau.diagnostics.dashboards`: the TensorBoard custom-scalars layout and hparams record.
- :mod:`lightning_tau.diagnostics.sweep`: a sweep's runs read back from TensorBoard, each line's optimum and the
  Figure-1-style picture (``lightning-tau plot`` is the command line over it).

The names below are imported on first use (PEP 562), as in the top-level package: importing
``lightning_tau.diagnostics.stats`` or ``.metrics`` in a plain torch loop does not load Lightning.
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
