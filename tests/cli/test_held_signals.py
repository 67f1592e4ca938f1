"""lightning_tau.cli.held_signals: after a command's work, SIGINT and SIGTERM are noted for `main`, not raised."""

from __future__ import annotations

import signal

from lightning_tau.cli import held_signals


def test_both_signals_noted_in_order_and_ignored_one_stays_ignored() -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a background job's SIGINT
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        held_signals.hold_signals()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        signal.raise_signal(signal.SIGTERM)  # noted: the test process lives on
        signal.raise_signal(signal.SIGINT)  # ignored: not noted
        assert held_signals._HELD == [signal.SIGTERM]
    finally:
        held_signals._HELD.clear()
        signal.signal(signal.SIGINT, before[0])
        signal.signal(signal.SIGTERM, before[1])
