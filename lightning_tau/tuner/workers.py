"""The finder's worker processes: forks of a server that has imported torch and Lightning already.

:func:`start_server` starts that forkserver early and :class:`Workers` starts the workers from a thread; ``spawn`` stays
the start method on Windows and macOS, and where ``$LIGHTNING_TAU_WORKER_START`` is ``spawn``.

More: docs/architecture.rst, module notes.
"""

from __future__ import annotations

import ast
import contextlib
import linecache
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import FrameType
from typing import Any, Literal

__all__ = [
    "PRELOAD",
    "START_ENV",
    "UNGUARDED_EXIT",
    "Workers",
    "cores",
    "importing_main",
    "preloaded",
    "runs_at_import",
    "sigint_once",
    "sigint_raises",
    "sigint_seen",
    "sigterm_raises",
    "start_method",
    "start_server",
    "threads_per_process",
    "threads_line",
    "torch_threads",
    "unguarded_call",
    "unguarded_script",
    "worker_environ",
]

StartMethod = Literal["forkserver", "spawn"]

#: What the forkserver imports before it forks any worker: everything a worker needs to train a trial; this module
#: first, which holds SIGINT in the server (:func:`start_server`).
PRELOAD = ("lightning_tau.tuner.workers", "torch", "lightning.pytorch", "lightning_tau.tuner.finder")
#: The environment variable that picks the workers' start method: ``forkserver`` (the default on Linux) or ``spawn``.
START_ENV = "LIGHTNING_TAU_WORKER_START"

#: The exit code of a worker that met the finder while it imported the starting process's main module: a script whose
#: code is not under ``if __name__ == "__main__":`` (:func:`importing_main`).
UNGUARDED_EXIT = 87

#: The process that imported this module: in a worker forked from the preloaded server, the server.
_IMPORTED_IN = os.getpid()


def start_method() -> StartMethod:
    """How worker processes start: ``$LIGHTNING_TAU_WORKER_START`` if set, else ``"forkserver"`` on Linux and
    ``"spawn"`` elsewhere.

    Raises:
        ValueError: the variable is set to anything but ``forkserver`` or ``spawn``, or to ``forkserver`` where
            there is none.

    Example:
        >>> start_method() in ("forkserver", "spawn")
        True
    """
    chosen = os.environ.get(START_ENV, "").strip()
    available = multiprocessing.get_all_start_methods()
    if chosen:
        if chosen not in ("forkserver", "spawn") or chosen not in available:
            raise ValueError(
                f"`{START_ENV}={chosen}` is not valid: use 'spawn', or 'forkserver' where this platform has it"
                f" (it has {', '.join(m for m in available if m in ('forkserver', 'spawn'))})."
            )
        return chosen  # type: ignore[return-value]
    return "forkserver" if sys.platform.startswith("linux") and "forkserver" in available else "spawn"


def _context() -> Any:
    method = start_method()
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        # a server that is already running keeps the modules it was started with (it was started by us, or by the
        # user's own forkserver processes: then the workers import the rest themselves)
        context.set_forkserver_preload(list(PRELOAD))
    return context


def cores() -> int:
    """The CPU cores this process may run on (its affinity on Linux).

    Example:
        >>> cores() >= 1
        True
    """
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def threads_per_process(current: int, workers: int) -> int:
    """Torch threads for each of ``workers`` processes training trials: ``cores() // workers``, at most ``current``
    (what torch was set to), at least 1.

    Example:
        >>> threads_per_process(1, workers=2)
        1
    """
    return max(1, min(current, cores() // workers))


def torch_threads(setting: int | str, current: int, workers: int) -> int:
    """Torch threads for each process training trials: ``setting`` when it is a number
    (``TimescaleFinder(threads=...)``, 1 by default), else (``"auto"``) :func:`threads_per_process`.

    Example:
        >>> torch_threads(1, current=16, workers=1)
        1
        >>> torch_threads(3, current=1, workers=2)
        3
    """
    return threads_per_process(current, workers) if setting == "auto" else int(setting)


def threads_line(setting: int | str, per_process: int, workers: int) -> str:
    """The one line a fit prints about its torch threads: how many, from which setting, and the other choice.

    Example:
        >>> threads_line("auto", 2, 1).startswith("torch threads per process: 2 (threads='auto':")
        True
    """
    plural = "worker" if workers == 1 else "workers"
    if setting == "auto":
        return (
            f"torch threads per process: {per_process} (threads='auto': {cores()} cores // {workers} {plural}, at most"
            " what torch was set to)."
        )
    return (
        f"torch threads per process: {per_process} (threads={setting}; one is the default: a small model's trials train"
        " about as fast on one, and on a busy machine more threads ran 5-30x slower; threads='auto' would give"
        f" {threads_per_process(cores(), workers)} here)."
    )


def start_server() -> None:
    """Start the forkserver now, without waiting for it, so that it imports :data:`PRELOAD` while this process does
    other work; nothing where the workers are spawned, or where the server runs already. Cheap: imports nothing
    heavy in this process.

    A Ctrl-C must not end the server with a traceback while it imports torch (it is the command's to report, in one
    line), nor be lost by a worker it forks before the worker can hand its trials back. So the server starts with
    SIGINT ignored (set in this process for the moment it takes to start it: a blocked mask would not pass through
    ``multiprocessing``'s exec, an ignored signal does); the first module it imports (this one, :data:`PRELOAD`)
    puts Python's handler back and blocks SIGINT (:func:`_hold_sigint_in_server`), and every worker forked from it
    starts so: a Ctrl-C while it starts is pending, and arrives once ``finder._worker_main`` lets it through."""
    _context()
    if start_method() == "forkserver":
        from multiprocessing import forkserver

        with _sigint_ignored():
            forkserver.ensure_running()


@contextlib.contextmanager
def _sigint_handled(handler: Any) -> Iterator[None]:
    """SIGINT handled by ``handler`` in this process for the block, the handler before put back after it (the main
    thread only; elsewhere the block runs as it is)."""
    try:
        previous = signal.signal(signal.SIGINT, handler)
    except (ValueError, OSError):  # not the main thread (or interpreter)
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _sigint_ignored() -> contextlib.AbstractContextManager[None]:
    """SIGINT ignored in this process for the block (the main thread only; elsewhere the block runs as it is)."""
    return _sigint_handled(signal.SIG_IGN)


#: Set by :func:`sigint_once`'s handler at every SIGINT: where the first one's ``KeyboardInterrupt`` was swallowed on
#: its way (a library's bare ``except``), the trial loop still sees it (:func:`sigint_seen`) and stops.
_SEEN = threading.Event()


def sigint_seen() -> bool:
    """Whether this process (a worker, under :func:`sigint_once`) has had a SIGINT: then it must not train on.

    Example:
        >>> sigint_seen()  # no SIGINT here
        False
    """
    return _SEEN.is_set()


def sigint_once() -> None:
    """For the rest of this process (a worker's: nothing embeds it), its first SIGINT raises ``KeyboardInterrupt`` and
    every later one is ignored. A worker gets a Ctrl-C twice, from the terminal and forwarded by the main process
    (:meth:`Workers.interrupt`); a handler put back when the first one's hand-back ends (as :func:`sigint_raises`
    does for the main process) let the second raise again, outside every handler, as the worker ended.
    See ``tests/tuner/test_workers.py``."""
    fired = False

    def handler(signum: int, frame: Any) -> None:
        nonlocal fired
        _SEEN.set()
        if not fired:
            fired = True
            raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, handler)


def _hold_sigint_in_server() -> None:
    """In the workers' server (this module imported by ``multiprocessing.forkserver.main``'s preload, and only
    there): Python's SIGINT handler back in place of the ignored one it started with, and SIGINT blocked, which the
    workers it forks inherit (:func:`start_server`)."""
    from multiprocessing import forkserver

    frame: FrameType | None = sys._getframe()
    while frame is not None and frame.f_code is not forkserver.main.__code__:
        frame = frame.f_back
    if frame is None or not hasattr(signal, "pthread_sigmask"):
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.default_int_handler)


@contextlib.contextmanager
def sigint_raises() -> Iterator[None]:
    """Within the block, the first SIGINT (Ctrl-C) raises ``KeyboardInterrupt`` where this process is, as Python's
    default does, and later ones are ignored until the block ends, so that the hand-back of the trials it held
    finishes and the command still ends in one line (a second Ctrl-C is common). Inside a Lightning fit, Lightning
    catches the ``KeyboardInterrupt`` (and sets SIGINT ignored; ``run_trial`` puts this handler back). Only where
    Python's own handler is in place (not where SIGINT is ignored, as in a background job, or where the caller
    handles it), and only in the main thread.

    Example:
        >>> before = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, not a background job
        >>> with sigint_raises():
        ...     try:
        ...         signal.raise_signal(signal.SIGINT)
        ...     except KeyboardInterrupt:
        ...         print("interrupted")
        ...     signal.raise_signal(signal.SIGINT)  # a second one: ignored
        interrupted
        >>> _ = signal.signal(signal.SIGINT, before)
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired = False

    def handler(signum: int, frame: Any) -> None:
        nonlocal fired
        if fired:
            return
        fired = True
        raise KeyboardInterrupt

    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    with _sigint_handled(handler):
        yield


def preloaded() -> bool:
    """Whether this process got the finder's modules from a preloaded forkserver (imported by the server it was
    forked from) rather than importing them itself.

    Example:
        >>> preloaded()  # this process imported them itself
        False
    """
    return _IMPORTED_IN != os.getpid()


def importing_main() -> bool:
    """Whether this process is still importing its starting process's main module, as a spawned (or forked-server)
    worker does before it runs anything (``multiprocessing``'s bootstrapping phase): a finder started now is the user's
    script run again at import, its code not under ``if __name__ == "__main__":``.

    Example:
        >>> importing_main()
        False
    """
    return bool(getattr(multiprocessing.process.current_process(), "_inheriting", False))


def unguarded_script(workers: int) -> str:
    """The one line for a script that starts the finder at import, which its worker processes do too.

    Example:
        >>> unguarded_script(2)[:80]
        '`TimescaleFinder(workers=2)`: the worker processes import your script, which sta'
    """
    return (
        f"`TimescaleFinder(workers={workers})`: the worker processes import your script, which starts the finder again"
        ' at import; put the script\'s code under `if __name__ == "__main__":`.'
    )


def runs_at_import(source: str, line: int) -> bool:
    r"""Whether the top-level statement of module ``source`` that holds ``line`` runs whenever the module is imported:
    it is reached through no ``if``, loop, ``match`` or ``except`` (only ``with`` blocks and a ``try``'s body and
    ``finally``). ``False`` where that cannot be told (the source does not parse, the line is in no statement), so a
    caller claims a re-run only when it is sure.

    Example:
        >>> runs_at_import("import x\nx.fit()\n", 2)
        True
        >>> runs_at_import("def main():\n    x.fit()\n\nif __name__ == '__main__':\n    main()\n", 5)
        False
        >>> runs_at_import("with open('f') as f:\n    main()\n", 2)
        True
    """
    try:
        body: list[ast.stmt] = ast.parse(source).body
    except (SyntaxError, ValueError):
        return False
    while True:
        node = next((n for n in body if n.lineno <= line <= (n.end_lineno or n.lineno)), None)
        if node is None:
            return False
        if isinstance(node, (ast.With, ast.AsyncWith)):
            body = node.body
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            inner = [*node.body, *node.finalbody]  # type: ignore[attr-defined]
            if not any(n.lineno <= line <= (n.end_lineno or n.lineno) for n in inner):
                return False  # in an except or else clause: conditional
            body = inner
        else:
            compound = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Match, ast.FunctionDef, ast.AsyncFunctionDef)
            return not isinstance(node, (*compound, ast.ClassDef))


def _main_imported_by_workers() -> bool:
    """Whether the worker processes import this process's main module before they run (as ``multiprocessing``'s
    ``spawn`` and ``forkserver`` prepare them): a script run by path or a module run with ``-m``, but not a package's
    ``__main__`` (``python -m pkg``), ``-c`` code, an interactive session or IPython."""
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if name is not None:
        return not (name == "__main__" or name.endswith(".__main__"))
    path = getattr(main, "__file__", None)
    return path is not None and os.path.splitext(os.path.basename(path))[0] != "ipython"


def unguarded_call(frame: FrameType | None = None) -> bool:
    """Whether the call being made here (``frame``: the caller's, by default) comes from the main module's top-level
    code at a statement that runs on every import (:func:`runs_at_import`), in a script the worker processes import:
    each worker would run it again as it imports the script. Read from the call stack and the script's source, in
    this process, before any worker starts; ``False`` where it cannot be told (no source): then the workers' own
    check (:data:`UNGUARDED_EXIT`) is what stops such a script.

    Example:
        >>> unguarded_call()  # a doctest runs in no script's top-level code
        False
    """
    if not _main_imported_by_workers():
        return False
    main_globals = vars(sys.modules["__main__"])
    frame = frame if frame is not None else sys._getframe(1)
    top = None
    while frame is not None:  # the outermost frame of the main module's own top-level code
        if frame.f_code.co_name == "<module>" and frame.f_globals is main_globals:
            top = frame
        frame = frame.f_back
    if top is None:
        return False
    source = "".join(linecache.getlines(top.f_code.co_filename, main_globals))
    return bool(source) and runs_at_import(source, top.f_lineno)


def worker_environ(environ: Mapping[str, str]) -> None:
    """Make this process's environment ``environ`` (the starting process's at the time it started this worker), as
    ``spawn`` would have it: a forked worker inherits the server's, from the time the server started."""
    for key in [k for k in os.environ if k not in environ]:
        del os.environ[key]
    os.environ.update(environ)


@contextlib.contextmanager
def sigterm_raises(error: Callable[[], BaseException]) -> Iterator[None]:
    """Within the block, SIGTERM raises ``error()`` at once wherever this process is (waiting on a trial elsewhere,
    between trials, opening a study), so the caller can hand its trials back and exit as a SIGTERM'd process does.

    Inside a Lightning fit, Lightning's own handler is in place and calls this one after its own: there this one does
    nothing, and Lightning ends the fit at the batch's end with its ``SIGTERMException``. A second SIGTERM while the
    first is being handled is ignored (the hand-back finishes). Only the main thread can handle signals: elsewhere
    (and where a handler cannot be set) the block runs without one.

    Example:
        >>> with sigterm_raises(lambda: SystemExit(143)):
        ...     signal.raise_signal(signal.SIGTERM)
        Traceback (most recent call last):
        ...
        SystemExit: 143
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired = False

    def handler(signum: int, frame: Any) -> None:
        nonlocal fired
        if fired or signal.getsignal(signal.SIGTERM) is not handler:  # handled already, or Lightning's fit stops
            return
        fired = True
        raise error()

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except (ValueError, OSError):  # not the main interpreter
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class Workers:
    """Worker processes running ``target(*args)``, started by a thread of their own.

    Starting a forked worker waits until the server has imported :data:`PRELOAD` (seconds, if the server was only
    just started): the thread does the waiting, while the caller trains. A worker that cannot be started is left
    out, with its reason in :attr:`errors` (the caller trains alone, or with the others). :meth:`stop` (the caller
    was interrupted) starts no more, and ends a worker that came up after it: too late to have seen the Ctrl-C.

    Args:
        target: the workers' function (importable by name: it is pickled).
        args: its arguments (they pickle).
        count: how many workers.
        name: the processes' name, numbered from 1.
        payload: bytes sent to each worker once it has started, through a pipe that ``target`` gets before ``args``
            (it calls ``recv_bytes()``): the start message stays small, so a worker that dies while it imports the
            main module leaves its exit code instead of a broken pipe in the middle of a large start message.
    """

    def __init__(
        self, target: Callable[..., Any], args: Sequence[Any], count: int, name: str, payload: bytes | None = None
    ) -> None:
        self.processes: list[Any] = []
        #: why workers could not be started (one line each)
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=self._start, args=(target, tuple(args), count, name, payload), name=f"{name}-starter", daemon=True
        )
        self._thread.start()

    def _start(
        self, target: Callable[..., Any], args: tuple[Any, ...], count: int, name: str, payload: bytes | None
    ) -> None:
        try:
            context = _context()
        except ValueError as err:
            self.errors.append(str(err))
            return
        for i in range(1, count + 1):
            if self._stopped.is_set():
                return
            reader, writer = context.Pipe(duplex=False) if payload is not None else (None, None)
            proc = context.Process(target=target, args=args if reader is None else (reader, *args), name=f"{name}-{i}")
            try:
                proc.start()
            except Exception as err:  # e.g. the server died: the caller trains without this worker
                if writer is not None:
                    writer.close()
                self.errors.append(
                    f"could not start worker {i} ({context.get_start_method()}): {type(err).__name__}: {err}"
                )
                continue
            finally:
                if reader is not None:
                    reader.close()
            with self._lock:
                self.processes.append(proc)
            if writer is not None:
                with contextlib.suppress(OSError), writer:  # a worker that died first: its exit code says why
                    writer.send_bytes(payload)  # type: ignore[arg-type]
            if self._stopped.is_set():
                proc.terminate()

    def stop(self) -> None:
        """Start no more workers; end any that starts from now on (those already running carry on)."""
        self._stopped.set()

    def terminate(self) -> None:
        """Start no more workers and SIGTERM the running ones (each hands its trial back and exits)."""
        self._signal(signal.SIGTERM)

    def interrupt(self) -> None:
        """Start no more workers and SIGINT the running ones, as a Ctrl-C to the whole terminal does (each hands its
        trial back as interrupted and exits with 130; one that got the terminal's own ignores this second one): a
        SIGINT to this process alone (``kill -INT``) ends them too."""
        self._signal(signal.SIGINT)

    def _signal(self, signum: int) -> None:
        self.stop()
        with self._lock:
            for proc in self.processes:
                if proc.is_alive():
                    with contextlib.suppress(OSError, ValueError):
                        proc.terminate() if signum == signal.SIGTERM else os.kill(proc.pid, signum)

    def alive(self) -> bool:
        """Whether a worker is still starting or running."""
        if self._thread.is_alive():
            return True
        with self._lock:
            return any(proc.is_alive() for proc in self.processes)

    def join(self) -> None:
        """Wait until every worker has been started and has exited."""
        self._thread.join()
        for proc in self.processes:
            proc.join()

    def unguarded(self) -> bool:
        """Whether a worker ended with :data:`UNGUARDED_EXIT`: it met the finder while importing the main module (a
        script whose code is not under ``if __name__ == "__main__":``); the caller stops with
        :func:`unguarded_script`."""
        with self._lock:
            return any(proc.exitcode == UNGUARDED_EXIT for proc in self.processes)

    def exit_codes(self) -> list[tuple[int | None, int | None]]:
        """``(pid, exit code)`` of each started worker (after :meth:`join`)."""
        return [(proc.pid, proc.exitcode) for proc in self.processes]

    def problems(self) -> list[str]:
        """What went wrong with the workers (after :meth:`join`): those that could not start, those that ended with
        a nonzero exit code (their trials are handed on or trained by the others)."""
        ended = [f"worker process {pid} ended with exit code {code}." for pid, code in self.exit_codes() if code != 0]
        return [f"{error}; trained without it." for error in self.errors] + ended


_hold_sigint_in_server()  # nothing outside the workers' server
