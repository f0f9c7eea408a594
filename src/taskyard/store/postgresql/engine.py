"""The PostgreSQL engine: psycopg 3, whatever driver-less URL the user wrote, with
connections checked cheaply before reuse and sessions that cannot hang the cycle.

Its pool follows the process's connection budget (:class:`Connections`): ``keep``
connections stay open between uses, up to ``most`` at once. Behind a pooler in
transaction mode (``pool_mode=transaction``, see store/postgresql/urls.py) statements
are never prepared and no setting is sent at connect: each transaction may run on
another server connection, where neither would exist."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import Engine, create_engine, event, exc

from taskyard.store.clock import MovableClock
from taskyard.store.driver import Connections
from taskyard.store.interrupt import readable
from taskyard.store.postgresql.urls import pg_target

IDLE_IN_TX_MS = 60_000
CYCLE_LOCK_TIMEOUT_MS = 5_000
CYCLE_IDLE_MS = 10_000
"""A transaction that holds the cycle's lock and waits on its client longer than this
ends: a frozen scheduler (SIGSTOP, a paused VM) stops every other one from placing work
until then. A cycle's client work between two statements takes milliseconds."""
PING_IDLE_SECONDS = 10.0
"""A pooled connection idle longer than this is pinged before reuse."""
_CHECKED_IN = "taskyard.checked_in"
NOW_SQL = "extract(epoch FROM clock_timestamp())::float8"
"""The database clock as epoch seconds. Short: a statement may name it a dozen times,
and psycopg converts a statement of over 4 KiB anew at each run (the cycle's dispatch is
3.5 KiB; tests/store/test_submit_shortcuts.py)."""
MOVED_NOW_SQL = f"({NOW_SQL} + current_setting('taskyard.clock_offset')::float8)"
"""The clock of a store opened with a :class:`MovableClock` (tests)."""


def make_engine(url: str, *, connections: Connections | None = None,
                clock: MovableClock | None = None) -> Engine:
    """An engine for ``url`` (normalised: ``postgresql+psycopg://``)."""
    connections = connections or Connections()
    target = pg_target(url)
    connect_args: dict[str, Any] = {
        # Prepared from a statement's second run on a connection (psycopg's default: the
        # sixth). Until a statement is prepared, the server plans it at every run, and the
        # daemons' statements are few and run all the time: in the fleet benchmark (50
        # workers, 200 jobs/s, 10 s) the first runs of each worker's report and cycle
        # statements took 830-890 ms of the server's planning, 290-390 ms from the second
        # run. A statement run once (a CLI command's) is never prepared either way.
        "prepare_threshold": 1,
        # A host that does not answer gives an error, not a hang (with several hosts,
        # libpq moves on to the next one after this long).
        "connect_timeout": 10,
        # A process frozen inside a transaction (SIGSTOP, a paused VM) would keep its
        # row locks, and the scheduling cycle waiting on them, for ever: the server
        # ends such a session. Our transactions never wait on their client that long
        # (a 100,000-task graph is parsed in a few seconds).
        "options": f"-c idle_in_transaction_session_timeout={IDLE_IN_TX_MS}",
    }
    if target.pooled_by_transaction:
        # Prepared statements live in one server session, which the pooler lends to
        # another client after each transaction; a startup option is refused by
        # PgBouncer (set the timeout on the role instead: docs/operations/pgbouncer.md).
        connect_args.update(prepare_threshold=None)
        del connect_args["options"]
    keep = max(1, connections.keep)
    engine = create_engine(
        target.url,
        pool_size=keep,
        max_overflow=max(0, connections.most - keep),
        connect_args=connect_args,
    )
    event.listen(engine, "checkin", _on_checkin)
    event.listen(engine, "checkout", _on_checkout)
    if clock is not None:
        event.listen(engine, "checkout", _moved_clock(clock))
    return engine


def _moved_clock(clock: MovableClock) -> Any:
    def on_checkout(dbapi_conn: Any, _record: Any, _proxy: Any) -> None:
        # Its own short transaction: the setting holds for the session, whatever the
        # caller's transaction does.
        dbapi_conn.execute("SELECT set_config('taskyard.clock_offset', %s, false)",
                           (repr(clock.offset),))
        dbapi_conn.commit()

    return on_checkout



def _on_checkin(_dbapi_conn: Any, record: Any) -> None:
    record.info[_CHECKED_IN] = time.monotonic()


def _on_checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
    """Instead of a ping per checkout (one round trip on every transaction, a good part
    of a submit's latency), :func:`check_alive`. A dead connection is replaced
    (DisconnectionError: the pool connects anew and retries)."""
    check_alive(dbapi_conn, time.monotonic() - record.info.get(_CHECKED_IN, time.monotonic()))


def check_alive(dbapi_conn: Any, idle: float) -> None:
    """DisconnectionError unless ``dbapi_conn``, idle for ``idle`` seconds, can be used.

    A connection the server closed (a restart, a terminated backend) has something to
    read already (the server's FATAL message, or end of file), which a poll of its
    socket sees at no cost; one idle for long (a silent network failure) is pinged."""
    if dbapi_conn.closed or dbapi_conn.broken:
        raise exc.DisconnectionError("connection closed")
    try:
        pending = readable([dbapi_conn.fileno()], 0)
    except (OSError, ValueError) as error:
        raise exc.DisconnectionError(str(error)) from None
    if pending:
        # An idle connection gets nothing unasked (it does not LISTEN).
        raise exc.DisconnectionError("unexpected data on an idle connection")
    if idle > PING_IDLE_SECONDS:
        try:
            dbapi_conn.execute("SELECT 1")
            dbapi_conn.rollback()
        except Exception as error:  # any failure: a fresh connection instead
            raise exc.DisconnectionError(str(error)) from None
