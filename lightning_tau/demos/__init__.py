"""Demo tasks for ``lightning-tau demo``: small, offline Lightning tasks that show the timescale rule on real data.

``digits`` is scikit-learn's bundled digits (the dataset-size sweep); ``width`` the muP width sweep on it; ``text``
a byte-level GPT on the standard library's own sources (the dataset-size sweep with ``--task text``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["DemoRun"]


class DemoRun(NamedTuple):
    """One fit of a dataset-size sweep, as a task builds it (``lightning-tau demo`` runs and logs it).

    Attributes:
        model: the ``LightningModule`` (it logs ``val/loss`` and ``val/error``).
        datamodule: its data at this dataset size.
        timescale: the ``TimescaleCallback`` that sets the run's weight decay from ``tau_epoch``.
        hparams: the task's own hparams for the run's HParams record (model shape, data settings).
        trainer_kwargs: ``Trainer`` arguments the task picks (``accelerator``, ``log_every_n_steps``, ...).
    """

    model: Any
    datamodule: Any
    timescale: Any
    hparams: dict[str, Any]
    trainer_kwargs: dict[str, Any]
