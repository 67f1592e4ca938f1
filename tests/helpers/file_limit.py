"""A write that fails part way, as on a full disk: an action run in a forked child whose files cannot grow past a
limit (writes past it fail with EFBIG). Shared by the journal's and the storage's tests."""

from __future__ import annotations

import os
import resource
import signal
from collections.abc import Callable


def with_file_size_limit(limit: int, action: Callable[[], object], describe: Callable[[Exception], str]) -> str:
    """``action()`` in a forked child whose files cannot grow past ``limit`` bytes: ``"ok"``, or ``describe`` of the
    error it raised. The child never returns into pytest; it must exit cleanly (a failure to describe is a failure)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        code = 0
        try:
            os.close(read)
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
            try:
                action()
                answer = "ok"
            except Exception as err:
                answer = describe(err)
            os.write(write, answer.encode())
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        answer = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return answer
