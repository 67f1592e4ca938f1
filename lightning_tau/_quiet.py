"""One context manager for sweeps of many short fits (the demos, the finder): Lightning's per-fit chatter off."""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator

import torch

__all__ = ["quiet_sweep"]

_LOGGERS = ("lightning.pytorch", "lightning.fabric", "lightning_fabric", "pytorch_lightning")
_EXPECTED_WARNINGS = (
    r".*less than one EMA timescale",  # a sweep's long timescales cover less than one on purpose
    r".*does not have many workers",
    r".*smaller than the logging interval",
    r".*LeafSpec.*is deprecated",
)


@contextlib.contextmanager
def quiet_sweep(single_thread: bool = False) -> Iterator[None]:
    """No Lightning info logs, and none of the warnings a deliberate sweep triggers, for the duration.

    Args:
        single_thread: also run torch on one thread (tiny models gain nothing from intra-op threads, and on a busy
            machine their hand-offs cost about 10x); restored afterwards.

    Example:
        >>> with quiet_sweep(single_thread=True):
        ...     torch.get_num_threads()
        1
    """
    levels = {name: logging.getLogger(name).level for name in _LOGGERS}
    for name in _LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    threads = torch.get_num_threads()
    if single_thread:
        torch.set_num_threads(1)
    try:
        with warnings.catch_warnings():
            for message in _EXPECTED_WARNINGS:
                warnings.filterwarnings("ignore", message=message)
            yield
    finally:
        torch.set_num_threads(threads)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
