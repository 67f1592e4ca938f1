"""Run a script as a real 2-process distributed job on CPU (gloo), one clean subprocess per rank.

The harness starts every rank itself, as ``torchrun`` does: each gets ``LOCAL_RANK``, ``NODE_RANK``,
``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT``, so a Lightning ``Trainer(devices=2, strategy="ddp")`` joins the
job instead of launching its own ranks, and the harness sees each rank's own exit status: a rank that dies from a
signal is named ("rank 1 died with SIGABRT"), where Lightning's launcher would report only that rank zero was
killed. Distributed variables from any outer launcher are stripped first. Every script ends with
:func:`end_process_group`, which ends gloo's worker threads before the interpreter exits: a worker thread that is
still alive then may take the GIL while the interpreter finalizes, and that aborts the rank (SIGABRT, "terminate
called without an active exception") after all its work is done.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

#: Variables that would make the child think it is already part of a distributed job.
_STRIPPED = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "NODE_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK")

#: Seconds before a hung process group is killed (a 2-process gloo fit of a tiny model takes ~15 s here).
DDP_TIMEOUT = 240

#: Seconds the other ranks get to finish once one rank has failed (they may wait on it in a collective).
_GRACE = 20

#: Runs of a script (or an example) whose rank zero found its port taken (:func:`port_taken`).
_PORT_TRIES = 3

T = TypeVar("T")


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _STRIPPED and not k.endswith("RANK")}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parent), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def end_process_group() -> None:
    """Destroy the default process group and end its gloo threads before the interpreter exits.

    Call it last in every script the harness runs. It waits at a barrier (no rank closes the group while another
    still uses it), destroys the group, then collects garbage: Lightning's trainer sits in reference cycles that
    hold the DDP model and a ``ZeroRedundancyOptimizer``, and those hold the group, so without a collection the group
    outlives :func:`torch.distributed.destroy_process_group` and its threads run on into interpreter exit. Freeing
    the group joins its threads, and the join lets a worker finish what it was doing with the GIL available.

    Where a gloo thread is still alive after that, something still holds the group (a trainer or a ZeRO optimizer
    at module level, DTensor's caches after FSDP2's ``fully_shard``), and its threads cannot be joined: the process
    then ends here without finalizing the interpreter (``os._exit(0)`` after flushing the output), and says so on
    stderr: ``end_process_group: gloo threads [...] still alive``.

    Why it matters: a gloo worker thread frees each finished collective itself (``~AsyncWork`` in
    ``ProcessGroupGloo::runLoop``), and freeing it can drop the last reference to a Python object (a broadcast
    tensor's preserved ``PyObject``, a ``SafePyObject`` of the captured thread-local state), which takes the GIL.
    A thread that asks for the GIL once the interpreter has begun to finalize is ended by ``pthread_exit``; its
    unwinding passes through that ``noexcept`` destructor, so ``std::terminate`` aborts the process ("terminate
    called without an active exception", SIGABRT). That needs the worker to be still freeing a collective when the
    main thread reaches exit: rare, and more likely on a loaded machine.
    """
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    gc.collect()
    left = gloo_threads()
    if left:
        print(
            f"end_process_group: gloo threads {left} still alive after the process group was destroyed (something "
            "still holds the group); exiting without finalizing the interpreter",
            file=sys.stderr,
        )
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def port_taken(output: str) -> bool:
    """Whether rank zero's store could not listen on its port because another process held it.

    The port is picked free (bound to port 0, then closed) and rank zero binds it again seconds later, once torch has
    been imported; a process of anything else on the machine may take it between the two. That is a race of the test
    machine, not a failure of the code under test, and the run may be started again on another port.
    """
    return "EADDRINUSE" in output


def gloo_threads() -> list[str]:
    """Names of this process's native gloo threads that are alive (``pt_gloo_runloop``, ``gloo_tcp_loop``, ...).

    They are C++ threads, invisible to :func:`threading.enumerate`; Linux lists every thread in ``/proc/self/task``.
    Elsewhere there is nothing to read, and the list is empty.
    """
    names = []
    for comm in Path("/proc/self/task").glob("*/comm"):
        try:
            name = comm.read_text().strip()
        except OSError:  # the thread ended while we looked
            continue
        if "gloo" in name:
            names.append(name)
    return sorted(names)


def run_script(
    source: str, tmp_path: Path, *args: str, timeout: float = DDP_TIMEOUT, world_size: int = 2
) -> subprocess.CompletedProcess:
    """Write ``source`` to ``tmp_path/script.py`` and run it once per rank; fail the test if any rank fails.

    Returns the ranks' output, rank zero's first (``stdout`` and ``stderr`` each concatenated in rank order). A run
    whose rank zero found its port taken (:func:`port_taken`) is started again on another port, at most
    :data:`_PORT_TRIES` times.
    """
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source))
    return on_free_port(lambda: _run_ranks(script, tmp_path, args, timeout, world_size))


def on_free_port(run: Callable[[], T]) -> T:
    """``run()``, one run that picks its port itself, started again where it failed (``AssertionError``) because
    rank zero found that port taken (:func:`port_taken`), at most :data:`_PORT_TRIES` times in all."""
    for attempt in range(1, _PORT_TRIES + 1):
        try:
            return run()
        except AssertionError as error:
            if not port_taken(str(error)) or attempt == _PORT_TRIES:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def _run_ranks(
    script: Path, tmp_path: Path, args: tuple[str, ...], timeout: float, world_size: int
) -> subprocess.CompletedProcess:
    """One run of ``script`` on ``world_size`` ranks, on a port picked free now."""
    port = _free_port()
    procs: list[subprocess.Popen] = []
    files = []
    try:
        for rank in range(world_size):
            env = clean_env()
            env.update(
                MASTER_ADDR="127.0.0.1",
                MASTER_PORT=str(port),
                NODE_RANK="0",
                LOCAL_RANK=str(rank),
                RANK=str(rank),
                WORLD_SIZE=str(world_size),
            )
            out = (tmp_path / f"rank{rank}.stdout").open("w")
            err = (tmp_path / f"rank{rank}.stderr").open("w")
            files += [out, err]
            procs.append(
                subprocess.Popen(
                    [sys.executable, str(script), *args],
                    cwd=tmp_path,
                    env=env,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,  # its own process group: killed whole on a timeout
                )
            )
        problems = _wait(procs, timeout)
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        for f in files:
            f.close()
    outputs = [
        ((tmp_path / f"rank{r}.stdout").read_text(), (tmp_path / f"rank{r}.stderr").read_text())
        for r in range(world_size)
    ]
    if problems:
        shown = "".join(
            f"\n--- rank {r} STDOUT:\n{stdout}\n--- rank {r} STDERR:\n{stderr}"
            for r, (stdout, stderr) in enumerate(outputs)
        )
        raise AssertionError(f"script failed: {'; '.join(problems)}{shown}")
    return subprocess.CompletedProcess(
        [sys.executable, str(script), *args],
        0,
        stdout="".join(o for o, _ in outputs),
        stderr="".join(e for _, e in outputs),
    )


def _wait(procs: list[subprocess.Popen], timeout: float) -> list[str]:
    """Wait for every rank; once one fails, the others get :data:`_GRACE` seconds. What went wrong, per rank."""
    deadline = time.monotonic() + timeout
    while any(p.poll() is None for p in procs):
        failed = any(p.returncode not in (None, 0) for p in procs)
        if failed:
            deadline = min(deadline, time.monotonic() + _GRACE)
        left = deadline - time.monotonic()
        if left <= 0:
            break
        running = next(p for p in procs if p.returncode is None)
        try:
            running.wait(timeout=min(left, 0.5))  # wake up now and then to see whether another rank failed
        except subprocess.TimeoutExpired:
            pass
    failed = any(p.returncode not in (None, 0) for p in procs)
    problems = []
    for rank, proc in enumerate(procs):
        code = proc.poll()
        if code is None:
            when = f"{_GRACE} s after another rank failed" if failed else f"after {timeout:g} s"
            problems.append(f"rank {rank} still running {when} (killed)")
        elif code < 0:
            problems.append(f"rank {rank} died with {signal.Signals(-code).name}")
        elif code:
            problems.append(f"rank {rank} exited with code {code}")
    return problems


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
