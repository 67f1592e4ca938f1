"""How the multi-process examples (``ddp.py``, ``fabric_gpt.py``) end: imported by them, not run on its own."""

from __future__ import annotations

import os
import sys

import torch


def end_process_group() -> None:
    """End a multi-process run here: every rank waits for the others, the process group is destroyed, and the
    process exits with code 0, its output flushed, without freeing its objects. A single process returns.

    DDP keeps the group and its gloo threads alive for as long as the model lives, and a gloo thread still freeing a
    finished collective takes the GIL (what it frees holds Python objects). Freeing the model as ``main`` returned,
    a rank of ``fabric_gpt.py`` hung after all its work (its stack at the script's last line, a native thread beside
    it: the other rank had exited 20 s before); freed at interpreter exit, the same thread can abort the process
    (``terminate called without an active exception``). Exiting here frees nothing, so neither can happen.
    """
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return
    torch.distributed.barrier()  # no rank ends the group while another still uses it
    torch.distributed.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
