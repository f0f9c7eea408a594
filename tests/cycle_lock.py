"""Holding the global cycle lock from a test, as another process's cycle would."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from taskyard.store import Store


@contextlib.contextmanager
def holding_the_cycle(other: Store) -> Iterator[None]:
    """Hold the cycle lock through ``other`` (a store of its own) until the block ends."""
    if other.backend == "sqlite":
        # The lock alone: its cycle's write transaction would block every writer
        # (a submit, a worker registering) until the block ends.
        with other.dialect.cycle_lock(None) as held:
            assert held
            yield
        return
    with other.cycle() as tx:
        assert tx is not None
        yield
