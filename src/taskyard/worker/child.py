"""Entry point of a reusable Python child process (one per worker slot).

The child imports handlers once and runs job after job: no interpreter start
per job. Each job's stdout/stderr go to temp files (the fds are swapped), and
only a bounded tail is sent back.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import tempfile
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from taskyard.worker.context import Fenced, JobContext, set_current

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
    """Two anonymous files that receive a job's stdout and stderr; reused job after job
    (truncated before each), so that running a job creates no file."""

    def __init__(self) -> None:
        self.out = tempfile.TemporaryFile(prefix="ty-out-")  # noqa: SIM115 - child-long
        self.err = tempfile.TemporaryFile(prefix="ty-err-")  # noqa: SIM115

    def reset(self) -> tuple[int, int]:
        for fh in (self.out, self.err):
            os.ftruncate(fh.fileno(), 0)
            os.lseek(fh.fileno(), 0, os.SEEK_SET)
        return self.out.fileno(), self.err.fileno()

    def tails(self, limit: int) -> tuple[str, str]:
        return _tail(self.out.fileno(), limit), _tail(self.err.fileno(), limit)


def _run(cache: dict[str, Callable[..., Any]], msg: dict[str, Any],
         conn: Connection | None = None, capture: Capture | None = None) -> dict[str, Any]:
    """Run one job; the outcome carries the tails of what it printed. Stage reports
    go to the worker over ``conn`` while it runs."""
    capture = capture or Capture()
    out, err = capture.reset()
    saved = os.dup(1), os.dup(2)
    os.environ.update(msg["env"])
    set_current(JobContext(msg.get("job_id", 0), msg.get("attempt", 0),
                           dict(msg.get("stages") or {}), conn))
    try:
        outcome = _call(cache, msg, out, err)
    finally:
        set_current(None)
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
        for key in msg["env"]:
            os.environ.pop(key, None)
    outcome["stdout_tail"], outcome["stderr_tail"] = capture.tails(msg.get("tail", TAIL_BYTES))
    return outcome


def _call(cache: dict[str, Callable[..., Any]], msg: dict[str, Any], out: int,
          err: int) -> dict[str, Any]:
    try:
        func = _resolve(cache, msg["target"])
    except Exception as exc:
        return {"state": "error", "exit_code": None,
                "error": f"cannot load handler {msg['target']}: {type(exc).__name__}: {exc}"}
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(out, 1)
    os.dup2(err, 2)
    try:
        value = func(**msg["args"])
    except Fenced as exc:
        return {"state": "error", "exit_code": None, "error": str(exc)}
    except BaseException as exc:  # the handler's failure, whatever it raised
        traceback.print_exc()
        return {"state": "failed", "exit_code": 1, "error": f"{type(exc).__name__}: {exc}"}
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return {"state": "error", "exit_code": None,
                "error": f"the handler's return value is not JSON: {exc}"}
    return {"state": "succeeded", "exit_code": 0, "result": value}


def child_main(conn: Connection, cwd: str) -> None:
    """Serve jobs sent over ``conn`` until it closes."""
    # A group of our own, so that the worker (or its guardian, if the worker dies)
    # can end this child together with anything its handlers started.
    with contextlib.suppress(OSError):
        os.setsid()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    cache: dict[str, Callable[..., Any]] = {}
    capture = Capture()
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        conn.send(_run(cache, msg, conn, capture))
