"""``lightning_tau.tuner.liveness``: the heartbeat setting, who is alive, and why a stopping process hands its
trials back."""

from __future__ import annotations

import re

import pytest

from lightning_tau.tuner.liveness import HEARTBEAT_ENV, heartbeat_seconds, stop_reason


def test_stop_reason_names_the_signal_or_the_error() -> None:
    from lightning.pytorch.utilities.exceptions import SIGTERMException

    assert stop_reason(SIGTERMException()) == "stopped by SIGTERM: handed back"
    assert stop_reason(SIGTERMException(143)) == "stopped by SIGTERM: handed back"
    assert stop_reason(KeyboardInterrupt()) == "interrupted (Ctrl-C): handed back"
    assert stop_reason(SystemExit(0)) == "SystemExit: 0"


@pytest.mark.parametrize("raw", ["0", "00", "-1", "0.5", "²", "٣", "99999999999999", "86401", "1e3", "x"])
def test_a_heartbeat_setting_that_is_not_a_whole_number_of_seconds_up_to_a_day_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv(HEARTBEAT_ENV, raw)
    with pytest.raises(ValueError, match=rf"^`LIGHTNING_TAU_HEARTBEAT={re.escape(repr(raw))}` is not valid: use a"):
        heartbeat_seconds()


@pytest.mark.parametrize(("raw", "seconds"), [("", 30), ("1", 1), (" 7 ", 7), ("86400", 86400)])
def test_a_heartbeat_setting_in_range_is_taken(monkeypatch: pytest.MonkeyPatch, raw: str, seconds: int) -> None:
    monkeypatch.setenv(HEARTBEAT_ENV, raw)
    assert heartbeat_seconds() == seconds
