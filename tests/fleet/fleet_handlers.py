"""Handlers of the fleet tests, run by real workers."""

from __future__ import annotations

import os
import time


def record(n: int) -> int:
    """Append ``job attempt`` to ``$FLEET_RUNS_LOG`` once the handler has run (a line per
    run that reached its end: the failover test counts them), after a short pause so
    that jobs are running when the database goes."""
    time.sleep(0.05)
    line = f"{os.environ['TASKYARD_JOB_ID']} {os.environ['TASKYARD_ATTEMPT']}\n"
    fd = os.open(os.environ["FLEET_RUNS_LOG"], os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
    return n
