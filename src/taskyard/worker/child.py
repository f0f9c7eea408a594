"""Entry point of a reusable Python child process (one per worker slot).

The child imports handlers once and runs job after job: no interpreter start
per job. Its stdout/stderr are temp files, emptied between jobs, and only a
bounded tail of each job's output is sent back.

An ``async def`` handler (anything whose call returns an awaitable) runs to its end on
the child's event loop: one loop per child, created at its first async job and reused,
so that job after job costs no loop start. Timeouts and cancels end the child, loop and
all, as they do for a plain function.
"""

from __future__ import annotations

import io
import os
import sys
import threading
import time

from taskyard.worker.context import Fenced, JobContext, set_current
from taskyard.worker.pipe import Pipe, dumps, loads

# What a no-op job does not need is loaded when a job does (typing, inspect, tempfile,
# traceback, json, asyncio: several MiB in every child otherwise).
TYPE_CHECKING = False  # typing.TYPE_CHECKING without loading typing
if TYPE_CHECKING:
    import asyncio
    from collections.abc import Awaitable, Callable
    from typing import Any

TAIL_BYTES = 8192
_OPTIONAL_ENV = ("TASKYARD_LOGICAL_TIME", "TRACEPARENT", "TRACESTATE")
"""Variables only some jobs get (see ProcessExecutor._env): unset for the others."""


def read_tail(path: str, limit: int = TAIL_BYTES) -> str:
    """The last ``limit`` bytes of a file, decoded leniently."""
    try:
        with open(path, "rb") as fh:
            return _tail(fh.fileno(), limit)
    except OSError:
        return ""


def _tail(fd: int, limit: int) -> str:
    size = os.lseek(fd, 0, os.SEEK_END)
    os.lseek(fd, max(0, size - limit), os.SEEK_SET)
    return os.read(fd, limit).decode("utf-8", "replace") if size else ""


def _resolve(cache: dict[str, Callable[..., Any]], target: str) -> Callable[..., Any]:
    func = cache.get(target)
    if func is None:
        module_name, _, path = target.partition(":")
        __import__(module_name)  # importlib.import_module's work for an absolute name
        obj: Any = sys.modules[module_name]
        for part in path.split("."):
            obj = getattr(obj, part)
        if not callable(obj):
            raise TypeError(f"{target} is not callable")
        func = cache[target] = obj
    return func


def _anonymous_file(prefix: str) -> int:
    """A descriptor on a new unnamed file in the temp directory: what
    ``tempfile.TemporaryFile`` gives on Linux (O_TMPFILE), without loading tempfile
    (~2.5 MiB, with shutil, random, bz2 and lzma); tempfile where O_TMPFILE fails."""
    folder = (os.environ.get("TMPDIR") or os.environ.get("TEMP") or os.environ.get("TMP")
              or "/tmp")  # tempfile.gettempdir's first choices, in its order
    try:
        return os.open(folder, os.O_RDWR | os.O_TMPFILE | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except (AttributeError, OSError):  # no O_TMPFILE (not Linux), or not on this filesystem
        import tempfile  # noqa: PLC0415 - rarely needed: see above

        with tempfile.TemporaryFile(prefix=prefix) as fh:
            return os.dup(fh.fileno())


class Capture:
    """Two files that hold the child's stdout and stderr for its whole life (fds 1 and
    2 point at them): emptied before a job if the last one wrote there, so that running
    a job creates no file and swaps no descriptor. Named by the worker, which reads them
    while a job runs (live output), else anonymous. Appended to: the worker may empty
    them too."""

    def __init__(self, paths: tuple[str, str] | None = None) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        for index, (fd, prefix) in enumerate(((1, "ty-out-"), (2, "ty-err-"))):
            new = (_anonymous_file(prefix) if paths is None else
                   os.open(paths[index], os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600))
            os.dup2(new, fd)
            os.close(new)
        if paths is not None and isinstance(sys.stdout, io.TextIOWrapper):
            # Read while a job runs: a print reaches the file at its newline, not when
            # 8 KiB have gathered or the job ended.
            sys.stdout.reconfigure(line_buffering=True)

    def reset(self) -> None:
        for fd in (1, 2):
            if os.lseek(fd, 0, os.SEEK_END):
                os.ftruncate(fd, 0)
                os.lseek(fd, 0, os.SEEK_SET)

    def tails(self, limit: int) -> tuple[str, str]:
        sys.stdout.flush()
        sys.stderr.flush()
        return _tail(1, limit), _tail(2, limit)


class JobEnv:
    """The child's environment, job after job: each job's ``env`` set, and the variables
    only some jobs get (:data:`_OPTIONAL_ENV`) unset for the others. Which of those are
    set is kept here: looking each one up in ``os.environ`` at every job (it encodes the
    name) was 3-4 µs of a no-op job's 11."""

    __slots__ = ("_optional",)

    def __init__(self) -> None:
        self._optional = [key for key in _OPTIONAL_ENV if key in os.environ]

    def apply(self, env: dict[str, str]) -> None:
        environ = os.environ
        for key, value in env.items():  # most are the same job after job
            if environ.get(key) != value:
                environ[key] = value
        if self._optional:  # what an earlier job had (or the child inherited) and this one has not
            for key in self._optional:
                if key not in env:
                    environ.pop(key, None)
            self._optional = []
        for key in _OPTIONAL_ENV:
            if key in env:
                self._optional.append(key)


def _run(cache: dict[str, Callable[..., Any]], msg: dict[str, Any], capture: Capture,
         loop: EventLoop, job_env: JobEnv, *, conn: Pipe | None = None) -> dict[str, Any]:
    """Run one job; the outcome carries the tails of what it printed. Stage reports
    go to the worker over ``conn`` while it runs."""
    capture.reset()
    env = msg["env"]
    job_env.apply(env)
    set_current(JobContext(msg.get("job_id", 0), msg.get("attempt", 0),
                           dict(msg.get("stages") or {}), conn))
    detach = None
    if "TRACEPARENT" in env:  # its attempt's span is current: OTel loads only then
        from taskyard.worker.tracing import attach_from_env  # noqa: PLC0415

        detach = attach_from_env(env)
    try:
        outcome = _call(cache, msg, loop)
    finally:
        set_current(None)
        if detach is not None:
            detach()
    outcome["stdout_tail"], outcome["stderr_tail"] = capture.tails(msg.get("tail", TAIL_BYTES))
    return outcome


class EventLoop:
    """The child's event loop for async handlers: made at the first one, then reused."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None  # asyncio: loaded when needed

    def run(self, awaitable: Awaitable[Any]) -> Any:
        """Run ``awaitable`` to its end; tasks it left behind are cancelled, so that
        nothing of one job runs during the next."""
        import asyncio  # noqa: PLC0415 - a child without async handlers never loads it

        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        loop = self._loop
        try:
            return loop.run_until_complete(awaitable)
        finally:
            left = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in left:
                task.cancel()
            if left:
                loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))


def _call(cache: dict[str, Callable[..., Any]], msg: dict[str, Any],
          loop: EventLoop) -> dict[str, Any]:
    cold = msg["target"] not in cache
    try:
        func = _resolve(cache, msg["target"])
    except Exception as exc:
        return {"state": "error", "exit_code": None,
                "error": f"cannot load handler {msg['target']}: {type(exc).__name__}: {exc}"}
    # The handler's own time (not its import, not the round trips around it, which grow
    # on a loaded machine and shrink in a pipeline): the worker's pace, see core.prefetch.
    # Each run queue reading follows a clock reading: a reading's system call returns
    # where a preempted thread resumes, so the wait it comes back from is in the next
    # reading — the first's inside the clock's span, the second's outside it.
    started = time.perf_counter()
    waited = _queued()
    outcome = _invoke(func, msg["args"], loop)
    took = time.perf_counter() - started
    now_waited = _queued()
    if waited is not None and now_waited is not None:
        took = max(0.0, took - (now_waited - waited))  # not its waits for a CPU: RunQueue
    outcome["seconds"] = took
    if cold:
        # The handler's first run here carries its one-time costs (first touches of its
        # code and data, lazy imports and connections, an async handler's event loop):
        # not its pace (see core.prefetch).
        outcome["cold"] = True
    return outcome


class RunQueue:
    """The seconds this thread has waited for a CPU while runnable, from Linux's
    ``/proc/self/task/<tid>/schedstat`` (its second field; read with one ``pread``, about
    a microsecond); None where there is no such file.

    A handler's time sizes its worker's prefetch window (core.prefetch). On a machine
    out of cores it counted the time the child was preempted: a no-op handler measured
    10-16 ms, all of it waiting in the run queue (0.1 ms running; bench.fleet, 200
    workers on 2 cores), which narrowed that worker's window to 1 job and left it 2 of a
    drain's fair 50. Time the handler sleeps or waits on I/O still counts."""

    def __init__(self) -> None:
        self._fd: int | None = None
        self._tid = 0

    def __call__(self) -> float | None:
        tid = threading.get_native_id()
        if tid != self._tid:  # first call, or another thread (its own file)
            self.close()
            self._tid = tid
            try:
                self._fd = os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY)
            except OSError:
                return None
        if self._fd is None:
            return None
        try:
            return int(os.pread(self._fd, 128, 0).split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            return None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


_queued = RunQueue()


def _invoke(func: Callable[..., Any], args: dict[str, Any], loop: EventLoop) -> dict[str, Any]:
    try:
        value = func(**args)
        if _awaitable(value):
            value = loop.run(value)
    except Fenced as exc:
        return {"state": "error", "exit_code": None, "error": str(exc)}
    except BaseException as exc:  # the handler's failure, whatever it raised
        import traceback  # noqa: PLC0415 - only a failing job needs it

        traceback.print_exc()
        return {"state": "failed", "exit_code": 1, "error": f"{type(exc).__name__}: {exc}"}
    if not _plainly_json(value):
        import json  # noqa: PLC0415 - only a structured result needs it

        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            return {"state": "error", "exit_code": None,
                    "error": f"the handler's return value is not JSON: {exc}"}
    return {"state": "succeeded", "exit_code": 0, "result": value}


_CO_ITERABLE_COROUTINE = 0x100  # inspect.CO_ITERABLE_COROUTINE: a @types.coroutine generator
_INF = float("inf")


def _awaitable(value: object) -> bool:
    """inspect.isawaitable without loading inspect (~2.5 MiB)."""
    if hasattr(type(value), "__await__"):  # coroutines, futures, any awaitable class
        return True
    code = getattr(value, "gi_code", None) if type(value).__name__ == "generator" else None
    return bool(code is not None and code.co_flags & _CO_ITERABLE_COROUTINE)


def _plainly_json(value: object) -> bool:
    """A result json.dumps(allow_nan=False) surely takes: None, a bool, a str, a finite
    float or a modest int (a huge int can exceed Python's int-to-text limit)."""
    if value is None or isinstance(value, str):
        return True
    if isinstance(value, float):
        return -_INF < value < _INF
    return isinstance(value, int) and -(1 << 64) < value < 1 << 64


def serve(fd: int, cwd: str, output: tuple[str, str] | None = None) -> None:
    """The child's entry point (see processes.PythonChild): jobs over the socket ``fd``;
    its stdout and stderr go to the files ``output`` names (else anonymous ones)."""
    child_main(Pipe(fd), cwd, output)


def child_main(conn: Pipe, cwd: str, output: tuple[str, str] | None = None) -> None:
    """Serve jobs sent over ``conn`` until it closes (the worker started this process
    in a session of its own: see processes.PythonChild)."""
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    cache: dict[str, Callable[..., Any]] = {}
    capture = Capture(output)
    loop = EventLoop()
    job_env = JobEnv()
    while True:
        try:
            msg = loads(conn.recv_bytes())
        except (EOFError, OSError, KeyboardInterrupt):
            return
        # A list is a pipeline of short jobs: run them one after the other, each outcome
        # sent as it ends (the worker takes the next one's start from it).
        for one in msg if isinstance(msg, list) else (msg,):
            conn.send_bytes(dumps(_run(cache, one, capture, loop, job_env, conn=conn), -1))
