"""Lightning's chatter off where lightning_tau makes its runs: :func:`quiet_sweep` for sweeps of many short fits
(the demos, the finder), and :func:`silence_lightning_noise` for the two messages no user of ours can act on."""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator

__all__ = ["quiet_sweep", "silence_lightning_noise"]

_LOGGERS = ("lightning.pytorch", "lightning.fabric", "lightning_fabric", "pytorch_lightning")
_EXPECTED_WARNINGS = (
    r".*less than one EMA timescale",  # a sweep's long timescales cover less than one on purpose
    r".*does not have many workers",
    r".*smaller than the logging interval",
    r".*LeafSpec.*is deprecated",
)

#: The loggers Lightning's ``rank_zero_info`` writes through (its tips among them).
_RANK_ZERO_LOGGERS = (
    "lightning.pytorch.utilities.rank_zero",
    "lightning.fabric.utilities.rank_zero",
    "pytorch_lightning.utilities.rank_zero",
    "lightning_fabric.utilities.rank_zero",
)


class _NoTips(logging.Filter):
    """Drops Lightning's advertisements ("💡 Tip: ... try installing litlogger / litmodels"), nothing else."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("💡 Tip:")


_NO_TIPS = _NoTips()


def silence_lightning_noise() -> None:
    """Hide, from now on in this process, the two messages Lightning prints on every fit that say nothing about
    the run: its "💡 Tip: ..." advertisements for litlogger and litmodels, and torch's ``FutureWarning`` that
    Lightning's own ``_pytree`` module uses ``LeafSpec`` (``isinstance(treespec, LeafSpec)`` is deprecated). Every
    other log line and warning, Lightning's included, is left as it was. Calling it again adds nothing.

    Example:
        >>> silence_lightning_noise()
        >>> import logging
        >>> logging.getLogger("lightning.pytorch.utilities.rank_zero").filters.count(_NO_TIPS)
        1
    """
    for name in _RANK_ZERO_LOGGERS:
        logger = logging.getLogger(name)
        if _NO_TIPS not in logger.filters:
            logger.addFilter(_NO_TIPS)
    warnings.filterwarnings(
        "ignore",
        message=r"`isinstance\(treespec, LeafSpec\)` is deprecated",
        category=FutureWarning,
        module=r"lightning\.pytorch\.utilities\._pytree|pytorch_lightning\.utilities\._pytree",
    )


@contextlib.contextmanager
def quiet_sweep(single_thread: bool = False) -> Iterator[None]:
    """No Lightning info logs, and none of the warnings a deliberate sweep triggers, for the duration (and
    :func:`silence_lightning_noise` for good).

    Args:
        single_thread: also run torch on one thread (tiny models gain nothing from intra-op threads, and on a busy
            machine their hand-offs cost about 10x); restored afterwards.

    Example:
        >>> import torch
        >>> with quiet_sweep(single_thread=True):
        ...     torch.get_num_threads()
        1
    """
    import torch

    silence_lightning_noise()
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
