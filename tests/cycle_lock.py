"""Holding the global cycle lock from a test, as another process's cycle would."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from taskyard.store import Store


@contextlib.contextmanager
def holding_the_cycle(other: Store, timeout: float = 60.0) -> Iterator[None]:
    """Hold the cycle lock through ``other`` (a store of its own) until the block ends.

    The lock is taken without waiting, as a cycle takes it, and a live daemon (a worker
    that has just completed a job, a scheduler's tick) may hold it for a moment: try
    again until it is ours, within a generous deadline."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.ExitStack() as stack:
            if _take(other, stack):
                yield
                return
        if time.monotonic() > deadline:
            raise AssertionError(f"the cycle lock was still held after {timeout}s")
        time.sleep(0.01)


def _take(other: Store, stack: contextlib.ExitStack) -> bool:
    if other.backend == "sqlite":
        # The lock alone: its cycle's write transaction would block every writer
        # (a submit, a worker registering) until the block ends.
        return bool(stack.enter_context(other.driver.cycle_lock(None)))
    return stack.enter_context(other.cycle()) is not None
