"""The one exception base: every error lightning_tau raises for a bad argument, setting or state derives from
:class:`TimescaleError`.

Catch it to catch them all; it is a ``ValueError``, so code that catches ``ValueError`` still does. Pure: imports
nothing.

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

__all__ = ["TimescaleError"]


class TimescaleError(ValueError):
    """The base of every error lightning_tau raises for a bad argument, setting or state; catch it to catch them all.

    Example:
        >>> from lightning_tau.errors import TimescaleError
        >>> from lightning_tau.timescale import tau_iter
        >>> try:
        ...     tau_iter(lr=-1.0, weight_decay=0.1)
        ... except TimescaleError as err:
        ...     print(type(err).__name__, isinstance(err, ValueError))
        TimescaleError True
    """
