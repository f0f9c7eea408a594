"""PostgreSQL: ending a session that holds the cycle's lock while its client is frozen in
the middle of a pipeline.

The server ends a session idle in a transaction that holds the lock after CYCLE_IDLE_MS
(cycle.LOCK_AHEAD arms that limit), but it arms such limits only when it has answered a
Sync. A client frozen between a pipeline's statements and its Sync (SIGSTOP, a paused
VM, a process swapped out) — a placing submit's insert and its reads, a cycle's
dispatches, which go in pipelines with the lock held — leaves a backend that is
"active", waiting to read from its client, holding the lock until the client thaws:
meanwhile no cycle runs anywhere. Such a backend is told apart by what the server
reports of it: state ``active``, wait event ``ClientRead``, its last statement begun
more than the limit ago (a backend at work on a statement waits on something else or
on nothing; a client that is alive sends its next message within microseconds).
"""

from __future__ import annotations

from taskyard.store.cursor import Cursor
from taskyard.store.postgresql.cycle import ADVISORY_KEY
from taskyard.store.postgresql.engine import CYCLE_IDLE_MS

# pg_locks shows a bigint advisory key as its two halves (objsubid 1: one bigint key).
_HIGH, _LOW = ADVISORY_KEY >> 32, ADVISORY_KEY & 0xFFFFFFFF
END_FROZEN = (
    "SELECT a.pid, pg_terminate_backend(a.pid) FROM pg_locks l "
    "JOIN pg_stat_activity a ON a.pid = l.pid "
    f"WHERE l.locktype = 'advisory' AND l.granted AND l.classid = {_HIGH} "
    f"AND l.objid = {_LOW} AND l.objsubid = 1 "
    "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
    "AND a.pid <> pg_backend_pid() AND a.state = 'active' AND a.wait_event = 'ClientRead' "
    "AND a.state_change < clock_timestamp() - make_interval(secs => ?)")
"""SQL: end the sessions holding the cycle's lock of this database whose client has kept
them waiting mid-pipeline for longer than the parameter's seconds; their pids."""


def end_frozen_holders(raw: Cursor, idle: float | None) -> list[int]:
    """End the session holding the cycle's lock if its client has been frozen in the
    middle of a pipeline for ``idle`` seconds (None: CYCLE_IDLE_MS, the limit the server
    puts on one idle in its transaction); the pids ended. The lock goes with the
    session; the client, once thawed, finds its connection gone and its unit rolled back
    (a submit that never returned success). Needs the right to signal that backend: the
    same role as the store's, or ``pg_signal_backend``."""
    seconds = CYCLE_IDLE_MS / 1000 if idle is None else idle
    return [pid for pid, ended in raw.all(END_FROZEN, (seconds,)) if ended]
