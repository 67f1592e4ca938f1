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
