"""Engines for the two backends, configured for taskyard's access pattern.

SQLite: WAL, a busy timeout, and explicit ``BEGIN IMMEDIATE`` for write
transactions (a deferred transaction that later writes can fail with
SQLITE_BUSY without waiting for the busy timeout). PostgreSQL: psycopg 3,
whatever driver-less URL the user wrote.
"""

from __future__ import annotations

import select
import sqlite3
import time
from typing import Any

from sqlalchemy import ColumnElement, Engine, create_engine, event, exc, literal_column
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool

SQLITE_BUSY_TIMEOUT_MS = 30_000
IDLE_IN_TX_MS = 60_000
CYCLE_LOCK_TIMEOUT_MS = 5_000
PING_IDLE_SECONDS = 10.0
"""A pooled PostgreSQL connection idle longer than this is pinged before reuse."""
_CHECKED_IN = "taskyard.checked_in"


class UnsupportedDatabase(ValueError):
    """The URL names a database taskyard does not run on."""


def normalize_url(url: str) -> str:
    """Pick the driver: ``postgresql://`` → psycopg 3; SQLite stays on pysqlite."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    if backend == "sqlite":
        return parsed.set(drivername="sqlite").render_as_string(hide_password=False)
    raise UnsupportedDatabase(
        f"database URL {parsed.render_as_string()!r}: taskyard runs on sqlite:/// or postgresql://"
    )


def make_engine(url: str, *, pool_size: int = 5) -> Engine:
    """An engine for ``url`` with the settings taskyard relies on."""
    normalized = normalize_url(url)
    if normalized.startswith("sqlite"):
        return _sqlite_engine(normalized)
    engine = create_engine(
        normalized,
        pool_size=pool_size,
        max_overflow=10,
        connect_args={
            "prepare_threshold": 5,
            # A host that does not answer gives an error, not a hang.
            "connect_timeout": 10,
            # A process frozen inside a transaction (SIGSTOP, a paused VM) would keep its
            # row locks, and the scheduling cycle waiting on them, for ever: the server
            # ends such a session. Our transactions never wait on their client that long
            # (a 100,000-task graph is parsed in a few seconds).
            "options": f"-c idle_in_transaction_session_timeout={IDLE_IN_TX_MS}",
        },
    )
    event.listen(engine, "checkin", _on_checkin)
    event.listen(engine, "checkout", _on_checkout)
    return engine


def _on_checkin(_dbapi_conn: Any, record: Any) -> None:
    record.info[_CHECKED_IN] = time.monotonic()


def _on_checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
    """Instead of a ping per checkout (one round trip on every transaction, a good part
    of a submit's latency): a connection the server closed (a restart, a terminated
    backend) has something to read already (the server's FATAL message, or end of
    file), which a poll of its socket sees at no cost; one idle for long (a silent
    network failure) is pinged. A dead one is replaced (DisconnectionError: the pool
    connects anew and retries)."""
    if dbapi_conn.closed or dbapi_conn.broken:
        raise exc.DisconnectionError("connection closed")
    try:
        readable, _, _ = select.select([dbapi_conn.fileno()], [], [], 0)
    except (OSError, ValueError) as error:
        raise exc.DisconnectionError(str(error)) from None
    if readable:
        # An idle pooled connection gets nothing unasked (it does not LISTEN).
        raise exc.DisconnectionError("unexpected data on an idle connection")
    idle = time.monotonic() - record.info.get(_CHECKED_IN, time.monotonic())
    if idle > PING_IDLE_SECONDS:
        try:
            dbapi_conn.execute("SELECT 1")
            dbapi_conn.rollback()
        except Exception as error:  # any failure: a fresh connection instead
            raise exc.DisconnectionError(str(error)) from None


def _sqlite_engine(url: str) -> Engine:
    memory = make_url(url).database in (None, "", ":memory:")
    # An in-memory database lives as long as its one connection: share it.
    extra: dict[str, Any] = {"poolclass": StaticPool} if memory else {}
    engine = create_engine(
        url,
        connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000,
                      # Prepared statements kept per connection (the default is 128).
                      "cached_statements": 512},
        **extra,
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
        # Take transaction control away from pysqlite so BEGIN is ours to emit.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        # A larger page cache and memory-mapped reads: the hot tables and their indexes
        # stay in memory instead of being re-read through system calls.
        cur.execute("PRAGMA cache_size=-65536")
        cur.execute("PRAGMA mmap_size=268435456")
        cur.execute("PRAGMA temp_store=MEMORY")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "IMMEDIATE")
        # On the driver: this runs for every transaction, and SQLAlchemy's own
        # execution would cost more than the BEGIN.
        conn.connection.dbapi_connection.execute(f"BEGIN {mode}")

    return engine


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


NOW_SQL = {
    "sqlite": "((julianday('now') - 2440587.5) * 86400.0)",
    "postgresql": "CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)",
}
"""The database clock as epoch seconds, in each dialect's SQL."""


def db_now(engine: Engine) -> ColumnElement[float]:
    """The database clock as epoch seconds, usable inside any statement.

    Leases and deadlines are measured with this, never with a host clock.
    """
    return literal_column(NOW_SQL[engine.dialect.name])
