"""The 2-process harness (tests/helpers/ddp_harness.py): a run whose port was taken is started again elsewhere."""

from __future__ import annotations

import socket
from pathlib import Path

import ddp_harness
import pytest

SCRIPT = """
import torch.distributed as dist
from ddp_harness import end_process_group

dist.init_process_group("gloo")
print("joined", dist.get_rank(), dist.get_world_size())
end_process_group()
"""


@pytest.mark.slow
def test_port_taken_by_another_process_is_tried_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    taken = holder.getsockname()[1]
    ports = [taken]  # the first run gets a port another process listens on, as in a race for it
    free_port = ddp_harness._free_port
    monkeypatch.setattr(ddp_harness, "_free_port", lambda: ports.pop() if ports else free_port())
    monkeypatch.setattr(ddp_harness, "_GRACE", 3)  # rank 1 waits on the store rank zero could not start
    try:
        proc = ddp_harness.run_script(SCRIPT, tmp_path)
    finally:
        holder.close()
    assert ports == []  # the taken port was handed out
    assert "joined 0 2" in proc.stdout and "joined 1 2" in proc.stdout


def test_port_taken_reads_the_store_error() -> None:
    assert ddp_harness.port_taken("DistNetworkError: ... code: -98, name: EADDRINUSE, message: address already in use")
    assert not ddp_harness.port_taken("RuntimeError: Connection reset by peer")


def test_on_free_port_tries_again_only_when_the_port_was_taken() -> None:
    def runs(*outcomes: str | AssertionError):
        left = iter(outcomes)

        def run() -> str:
            outcome = next(left)
            if isinstance(outcome, AssertionError):
                raise outcome
            return outcome

        return run

    taken = AssertionError("examples/x.py failed (1):\nDistNetworkError: ... name: EADDRINUSE")
    assert ddp_harness.on_free_port(runs(taken, "trained")) == "trained"
    with pytest.raises(AssertionError, match=r"examples/x.py --flag failed \(1\):\nValueError: bad"):
        ddp_harness.on_free_port(runs(AssertionError("examples/x.py --flag failed (1):\nValueError: bad"), "trained"))
    with pytest.raises(AssertionError, match="EADDRINUSE"):  # _PORT_TRIES runs, all taken: the last one's error
        ddp_harness.on_free_port(runs(*[taken] * ddp_harness._PORT_TRIES, "never reached"))
