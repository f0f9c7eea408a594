"""Waiting on conditions in tests that run real servers: generous deadlines that only
guard against a hang, never timed assertions."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any


def wait_for(what: str, probe: Callable[[], Any], timeout: float = 60.0,
             every: float = 0.05) -> Any:
    """Poll ``probe`` (every ``every`` seconds) until it returns something true, and
    return that."""
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)


def free_port() -> int:
    """A TCP port free on the loopback interface now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
