"""The signals that come after a command's work ended: noted for :func:`lightning_tau.cli.main` to read, never raised,
so the command's last line is not cut short."""

from __future__ import annotations

__all__ = ["hold_signals"]

#: SIGINT and SIGTERM that came after the command's work ended (:func:`hold_signals`), for :func:`main` to read.
_HELD: list[int] = []


def hold_signals() -> None:
    """From now on SIGINT and SIGTERM are noted, not raised: the command is ending and says so in its one line, which a
    second Ctrl-C or a SIGTERM must not cut short with a traceback or a second line. :func:`lightning_tau.cli.main`
    reads them when the command ends. A handler, not a blocked mask: a mask holds a signal from one thread only, and
    the process has others (heartbeats, TensorBoard) that would take it. Main thread only (elsewhere nothing).

    Example:
        >>> import signal
        >>> before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
        >>> _ = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal (a background job ignores it)
        >>> hold_signals()
        >>> signal.raise_signal(signal.SIGINT)  # noted, nothing raised
        >>> _HELD.pop()
        <Signals.SIGINT: 2>
        >>> _ = signal.signal(signal.SIGINT, before[0]), signal.signal(signal.SIGTERM, before[1])
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def note(signum: int, frame: object) -> None:
        _HELD.append(signal.Signals(signum))

    for signum in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, note)
