"""lightning_tau: set AdamW's weight decay from its EMA timescale in PyTorch Lightning.

AdamW's weights are an exponential moving average of recent updates with timescale ``1 / (lr * weight_decay)``
steps (Wang & Aitchison, ICML 2025). Fix the timescale in epochs, ``tau_epoch``, and the weight decay follows
the dataset size, batch size and muP width.
"""

from lightning_tau.apply import AppliedTimescale, apply_timescale
from lightning_tau.callback import TimescaleCallback
from lightning_tau.diagnostics import TimescaleMonitor, TimescaleTracker, timescale_metrics
from lightning_tau.tuner.finder import FinderResult, TimescaleFinder
from lightning_tau.optim import register_decay_kind
from lightning_tau.param_groups import build_param_groups
from lightning_tau.timescale import (
    tau_epoch,
    tau_iter,
    transfer_weight_decay,
    weight_decay_for_tau_epoch,
    weight_decay_for_tau_iter,
)
from lightning_tau.transfer import TargetRun, TunedRun, transfer_groups

__version__ = "0.1.0"

__all__ = [
    "AppliedTimescale",
    "FinderResult",
    "TargetRun",
    "TimescaleCallback",
    "TimescaleFinder",
    "TimescaleMonitor",
    "TimescaleTracker",
    "TunedRun",
    "__version__",
    "apply_timescale",
    "build_param_groups",
    "register_decay_kind",
    "tau_epoch",
    "tau_iter",
    "timescale_metrics",
    "transfer_groups",
    "transfer_weight_decay",
    "weight_decay_for_tau_epoch",
    "weight_decay_for_tau_iter",
]
