"""PostgreSQL: the cycle's global lock, tried for the unit's transaction — alone, or
with the cycle's first reads in the same round trip.

Either way the statement that takes it ends with a Sync of its own: a backend waiting
for a Sync is "active", never idle in its transaction, so its CYCLE_IDLE_MS limit is
not armed. A scheduler frozen (SIGSTOP, a paused VM) after the lock statement had gone
and before the Sync kept the lock until it thawed, and no other scheduler placed
anything (tests/fleet/test_scheduler_failover.py, once in a loaded `make test`)."""

from __future__ import annotations

from typing import Any

from taskyard.store.cursor import Cursor
from taskyard.store.postgresql.cycle import AHEAD_IF_HELD, LOCK_AHEAD
from taskyard.store.postgresql.rows import autocommit, opens, pipelined

_TAKE_LOCK = f"SELECT {LOCK_AHEAD}"
_BEGIN_AND_TAKE_LOCK = f"BEGIN; {_TAKE_LOCK}"


def take_lock(raw: Cursor) -> bool:
    """Try the global lock for this transaction (:data:`LOCK_AHEAD`); when the statement
    opens the unit, its ``BEGIN`` goes in the same message: one simple-protocol message,
    ``BEGIN; SELECT …`` (no parameters), which the server ends with its own Sync."""
    if not opens(raw):
        row = raw.first(_TAKE_LOCK)
        return bool(row and row[0])
    cursor = raw.cursor
    with autocommit(raw):  # the BEGIN is ours: psycopg must not send one first
        cursor.execute(_BEGIN_AND_TAKE_LOCK)
    cursor.nextset()  # past BEGIN's result, to the lock's
    row = cursor.fetchone()
    return bool(row and row[0])


def take_lock_and_read(raw: Cursor, page: int, snapshot: bool) -> tuple[bool, Any]:
    """:func:`take_lock`, and when the lock is ours the cycle's first reads (the row of
    :data:`AHEAD_IF_HELD`, None otherwise), in one round trip: the lock statement, a
    Sync, the reads, a Sync — one pipeline whose lock ends with its own Sync, as the
    simple-protocol message does. A worker's report (its ends, the dependents released,
    then the cycle) took a round trip less: a hand-off in a chain is one such report."""
    held, ahead = pipelined(raw, [(_TAKE_LOCK, {}),
                                  (AHEAD_IF_HELD, {"n": page, "snapshot": snapshot})],
                            sync_after=0)
    return bool(held and held[0][0]), ahead[0] if ahead else None
