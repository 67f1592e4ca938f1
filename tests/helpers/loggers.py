"""A real Lightning logger that keeps in memory what it is given (the one in-memory logger of the test suite)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from lightning.pytorch.loggers import Logger


class MemoryLogger(Logger):
    """A real (minimal) Lightning logger, with no rank-zero guard of its own: whatever a rank sends is kept.

    Attributes:
        records: every ``log_metrics`` call in order, as ``{"step": step, "keys": sorted keys}``.
        calls: how often each ``(key, step)`` was logged.
        metrics: the last value logged under each key.
        hparams: every ``log_hyperparams`` call's params, in order.
    """

    def __init__(self) -> None:
        super().__init__()
        self.records: list[dict[str, Any]] = []
        self.calls: Counter[tuple[str, int]] = Counter()
        self.metrics: dict[str, float] = {}
        self.hparams: list[dict[str, Any]] = []

    @property
    def name(self) -> str:
        return "memory"

    @property
    def version(self) -> int:
        return 0

    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        self.hparams.append(dict(params))

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        self.records.append({"step": step, "keys": sorted(metrics)})
        for key in metrics:
            self.calls[(key, int(step or 0))] += 1
        self.metrics.update(metrics)

    def keys(self, prefix: str = "timescale/") -> set[str]:
        """The keys logged that start with ``prefix``."""
        return {key for key, _ in self.calls if key.startswith(prefix)}
