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

import importlib
import inspect
import json
import os
import pickle
import sys
import tempfile
import traceback
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from taskyard.worker.context import Fenced, JobContext, set_current
from taskyard.worker.pipe import Pipe

if TYPE_CHECKING:
    import asyncio

TAIL_BYTES = 8192


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
        obj: Any = importlib.import_module(module_name)
        for part in path.split("."):
            obj = getattr(obj, part)
        if not callable(obj):
            raise TypeError(f"{target} is not callable")
        func = cache[target] = obj
    return func


class Capture:
    """Two anonymous files that hold the child's stdout and stderr for its whole life
    (fds 1 and 2 point at them): emptied before a job if the last one wrote there,
    so that running a job creates no file and swaps no descriptor."""

    def __init__(self) -> None:
        self.out = tempfile.TemporaryFile(prefix="ty-out-")  # noqa: SIM115 - child-long
        self.err = tempfile.TemporaryFile(prefix="ty-err-")  # noqa: SIM115
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self.out.fileno(), 1)
        os.dup2(self.err.fileno(), 2)

    def reset(self) -> None:
        for fd in (1, 2):
            if os.lseek(fd, 0, os.SEEK_END):
                os.ftruncate(fd, 0)
                os.lseek(fd, 0, os.SEEK_SET)

    def tails(self, limit: int) -> tuple[str, str]:
        sys.stdout.flush()
        sys.stderr.flush()
        return _tail(1, limit), _tail(2, limit)


def _run(cache: dict[str, Callable[..., Any]], msg: dict[str, Any], capture: Capture,
         loop: EventLoop, conn: Pipe | None = None) -> dict[str, Any]:
    """Run one job; the outcome carries the tails of what it printed. Stage reports
    go to the worker over ``conn`` while it runs."""
    capture.reset()
    environ = os.environ
    for key, value in msg["env"].items():  # most are the same job after job
        if environ.get(key) != value:
            environ[key] = value
    set_current(JobContext(msg.get("job_id", 0), msg.get("attempt", 0),
                           dict(msg.get("stages") or {}), conn))
    try:
        outcome = _call(cache, msg, loop)
    finally:
        set_current(None)
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
    try:
        func = _resolve(cache, msg["target"])
    except Exception as exc:
        return {"state": "error", "exit_code": None,
                "error": f"cannot load handler {msg['target']}: {type(exc).__name__}: {exc}"}
    try:
        value = func(**msg["args"])
        if inspect.isawaitable(value):
            value = loop.run(value)
    except Fenced as exc:
        return {"state": "error", "exit_code": None, "error": str(exc)}
    except BaseException as exc:  # the handler's failure, whatever it raised
        traceback.print_exc()
        return {"state": "failed", "exit_code": 1, "error": f"{type(exc).__name__}: {exc}"}
    if value is not None:
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            return {"state": "error", "exit_code": None,
                    "error": f"the handler's return value is not JSON: {exc}"}
    return {"state": "succeeded", "exit_code": 0, "result": value}


def serve(fd: int, cwd: str) -> None:
    """The child's entry point (see processes.PythonChild): jobs over the socket ``fd``."""
    child_main(Pipe(fd), cwd)


def child_main(conn: Pipe, cwd: str) -> None:
    """Serve jobs sent over ``conn`` until it closes (the worker started this process
    in a session of its own: see processes.PythonChild)."""
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    cache: dict[str, Callable[..., Any]] = {}
    capture = Capture()
    loop = EventLoop()
    while True:
        try:
            msg = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError, KeyboardInterrupt):
            return
        # A list is a pipeline of short jobs: run them one after the other, each outcome
        # sent as it ends (the worker takes the next one's start from it).
        for one in msg if isinstance(msg, list) else (msg,):
            conn.send_bytes(pickle.dumps(_run(cache, one, capture, loop, conn),
                                         pickle.HIGHEST_PROTOCOL))
