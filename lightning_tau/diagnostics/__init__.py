"""Diagnostics for AdamW's EMA view: timescales, weight magnitudes and their predicted equilibrium, logged.

- :class:`TimescaleMonitor`: the Lightning callback that logs them (and TensorBoard dashboards).
- :mod:`lightning_tau.diagnostics.metrics`: the same per-group keys for any torch loop (plain PyTorch, Lightning
  Fabric): :func:`timescale_metrics` and the per-step :class:`TimescaleTracker` (torch only).
- :mod:`lightning_tau.diagnostics.stats`: the fused weight-statistics pass (torch only), usable without Lightning.
- :mod:`lightning_tau.diagnostics.dashboards`: the TensorBoard custom-scalars layout and hparams record.
"""

from lightning_tau.diagnostics.metrics import TimescaleTracker, group_metrics, timescale_metrics
from lightning_tau.diagnostics.monitor import TimescaleMonitor
from lightning_tau.diagnostics.stats import WeightStatsPass, all_reduce_sums, group_sums, magnitudes, weight_sums

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
