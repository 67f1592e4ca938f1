"""lightning_tau: set AdamW's weight decay from its EMA timescale in PyTorch Lightning.

AdamW's weights are an exponential moving average of recent updates with timescale ``1 / (lr * weight_decay)``
steps (Wang & Aitchison, ICML 2025). Fix the timescale in epochs, ``tau_epoch``, and the weight decay follows
the dataset size, batch size and muP width.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightning_tau._lazy import lazy_face

if TYPE_CHECKING:  # what the names below resolve to, for type checkers and IDEs
    from lightning_tau.apply import AppliedTimescale, apply_timescale
    from lightning_tau.callback import TimescaleCallback
    from lightning_tau.diagnostics import TimescaleMonitor, TimescaleTracker, timescale_metrics
    from lightning_tau.errors import TimescaleError
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
    from lightning_tau.tuner.finder import FinderResult, TimescaleFinder

#: Where each public name lives. Imported on first use (PEP 562), so that `import lightning_tau.cli` (and with it
#: `lightning-tau --help`) or the pure math does not import Lightning and torch, which take seconds.
_PUBLIC = {
    "AppliedTimescale": "lightning_tau.apply",
    "apply_timescale": "lightning_tau.apply",
    "TimescaleCallback": "lightning_tau.callback",
    "TimescaleError": "lightning_tau.errors",
    "TimescaleMonitor": "lightning_tau.diagnostics",
    "TimescaleTracker": "lightning_tau.diagnostics",
    "timescale_metrics": "lightning_tau.diagnostics",
    "FinderResult": "lightning_tau.tuner.finder",
    "TimescaleFinder": "lightning_tau.tuner.finder",
    "register_decay_kind": "lightning_tau.optim",
    "build_param_groups": "lightning_tau.param_groups",
    "tau_epoch": "lightning_tau.timescale",
    "tau_iter": "lightning_tau.timescale",
    "transfer_weight_decay": "lightning_tau.timescale",
    "weight_decay_for_tau_epoch": "lightning_tau.timescale",
    "weight_decay_for_tau_iter": "lightning_tau.timescale",
    "TargetRun": "lightning_tau.transfer",
    "TunedRun": "lightning_tau.transfer",
    "transfer_groups": "lightning_tau.transfer",
}


__getattr__, __dir__ = lazy_face(__name__, _PUBLIC, globals())


__version__ = "0.1.0"

__all__ = [
    "AppliedTimescale",
    "FinderResult",
    "TargetRun",
    "TimescaleCallback",
    "TimescaleError",
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
