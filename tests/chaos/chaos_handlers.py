"""Handlers of the chaos test (tests/chaos/chaos_driver.py).

Every execution appends a ``start`` record when it begins and an ``end`` record when
its handler is done, to the append-only log named by ``$TASKYARD_CHAOS_LOG``: one JSON
object per line, each written by a single ``write(2)`` on an ``O_APPEND`` descriptor,
so lines from concurrent processes never interleave. A record carries the job id and
attempt (``TASKYARD_JOB_ID``/``TASKYARD_ATTEMPT``), the worker's name
(``TASKYARD_WORKER``) and process id (the process that started the handler: the
worker runs Python children and shell commands itself), ``time.time()`` and the lock
held, if any.
Handlers return their attempt number, so a stale completion shows in the result.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

LOG_ENV = "TASKYARD_CHAOS_LOG"

# The shell handler writes the same records with printf (one write per line: dash and
# bash flush a builtin's output once). ``$PPID`` is the worker (it runs ``/bin/sh`` itself),
# or 1 if the worker died before the shell started.
_SHELL_RECORD = (
    "printf '{\"ev\":\"%s\",\"job\":%s,\"att\":%s,\"w\":\"%s\",\"wpid\":%s,\"ppid\":%s,\"t\":%s,"
    "\"type\":\"shell\",\"ok\":true}\\n' {ev} \"$TASKYARD_JOB_ID\" \"$TASKYARD_ATTEMPT\" "
    "\"$TASKYARD_WORKER\" \"$PPID\" \"$PPID\" \"$(date +%s.%N)\" >> \"$TASKYARD_CHAOS_LOG\""
)
SHELL_HANDLER = (
    "shell:" + _SHELL_RECORD.replace("{ev}", "start") + "; sleep {seconds}; "
    + _SHELL_RECORD.replace("{ev}", "end")
    + "; echo \"{\\\"attempt\\\": $TASKYARD_ATTEMPT}\" > \"$TASKYARD_RESULT\""
)


def _record(event: str, *, kind: str, worker: int, lock: str | None = None,
            ok: bool = True) -> None:
    # ``wpid``: the worker that started this handler (``worker``, taken when it started),
    # even once it has died; ``ppid``, the live parent, is then no longer the worker.
    record: dict[str, Any] = {
        "ev": event, "job": int(os.environ["TASKYARD_JOB_ID"]),
        "att": int(os.environ["TASKYARD_ATTEMPT"]), "w": os.environ.get("TASKYARD_WORKER"),
        "wpid": worker, "ppid": os.getppid(), "t": time.time(), "type": kind, "ok": ok,
    }
    if lock is not None:
        record["lock"] = lock
    line = (json.dumps(record, separators=(",", ":")) + "\n").encode()
    fd = os.open(os.environ[LOG_ENV], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _worker() -> int:
    """The worker running this handler: the Python child's parent as the handler starts
    (the worker starts its children itself), or 1 if the worker has died already; then,
    as for a shell started after its worker died, the checks find the worker in the
    database (chaos_checks.attribute)."""
    return os.getppid()


def _attempt() -> int:
    return int(os.environ["TASKYARD_ATTEMPT"])


def work(ms: float, kind: str = "python", fail: str | None = None,
         slot: int | None = None, k: str = "") -> dict[str, Any]:
    """Sleep ``ms`` milliseconds. ``fail``: ``first`` fails attempt 1 (a retry then
    succeeds), ``always`` fails every attempt. ``slot``: the job holds ``res:{slot}``.
    ``k`` is the driver's key for the job (unused here)."""
    lock, worker = None if slot is None else f"res:{slot}", _worker()
    _record("start", kind=kind, worker=worker, lock=lock)
    time.sleep(ms / 1000)
    if fail == "always" or (fail == "first" and _attempt() == 1):
        _record("end", kind=kind, worker=worker, lock=lock, ok=False)
        raise RuntimeError(f"designed failure ({fail}) on attempt {_attempt()}")
    _record("end", kind=kind, worker=worker, lock=lock)
    return {"attempt": _attempt()}


def outlive(kind: str = "python") -> None:
    """Log a start, wait until the worker that runs this handler has died, then log an
    end: the record a handler writes in the moment between its worker's SIGKILL and the
    guardian's (tests/chaos/test_handler_records.py holds that moment open)."""
    worker, deadline = _worker(), time.monotonic() + 120
    _record("start", kind=kind, worker=worker)
    while os.getppid() == worker and time.monotonic() < deadline:
        time.sleep(0.01)
    _record("end", kind=kind, worker=worker)
