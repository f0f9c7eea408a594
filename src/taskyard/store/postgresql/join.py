"""PostgreSQL: units of work inside a caller's own transaction (transactional submit).

An application writes its rows and submits a job in one transaction: rolled back, the
job never existed; committed, it is scheduled, even if the application dies the next
moment. The caller hands over its connection — a SQLAlchemy ``Connection`` (psycopg 3
driver) inside a transaction, or a psycopg 3 connection — and taskyard runs its
statements on it without ever beginning, committing, rolling back or closing it: the
caller's commit publishes the job, its events and its wake-ups (NOTIFY is delivered
on commit) together with the caller's own rows.

A psycopg connection gets a SQLAlchemy ``Connection`` of its own over it, from an
engine whose dialect does nothing to end a transaction or a connection
(:class:`BorrowedPsycopg`) and whose pool hands out the borrowed connection.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection, Engine, create_engine
from sqlalchemy.dialects import registry
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg
from sqlalchemy.pool import NullPool

from taskyard.model.errors import InvalidInput
from taskyard.store.clock import MovableClock
from taskyard.store.postgresql.urls import pg_target

_BORROWED: contextvars.ContextVar[Any] = contextvars.ContextVar("taskyard_borrowed")
_DRIVER = "taskyard_borrowed"


class BorrowedPsycopg(PGDialect_psycopg):
    """psycopg 3, on a connection that belongs to someone else: its transaction is
    theirs to begin and end, the connection theirs to close."""

    def do_begin(self, dbapi_connection: Any) -> None:
        """psycopg begins implicitly, inside the caller's transaction."""

    def do_commit(self, dbapi_connection: Any) -> None:
        """The caller commits."""

    def do_rollback(self, dbapi_connection: Any) -> None:
        """The caller rolls back (SQLAlchemy would when its Connection closes)."""

    def do_close(self, dbapi_connection: Any) -> None:
        """The caller closes."""

    def on_connect(self) -> None:
        """No handler added to the caller's connection (SQLAlchemy adds one per connect)."""
        return


registry.register(f"postgresql.{_DRIVER}", __name__, "BorrowedPsycopg")


def borrowed_engine(url: str) -> Engine:
    """An engine that hands out whichever psycopg connection :func:`join` borrows, its
    dialect initialised on a connection of its own (not inside a caller's transaction)."""
    import psycopg  # noqa: PLC0415 - PostgreSQL only (slow import)

    target = pg_target(url)
    dsn = target.libpq()
    own: list[Any] = []

    def creator() -> Any:
        conn = _BORROWED.get(None)
        if conn is None:  # the first connection: the dialect reads the server's settings
            conn = psycopg.connect(dsn, connect_timeout=10)
            own.append(conn)
        return conn

    engine = create_engine(target.url.set(drivername=f"postgresql+{_DRIVER}"),
                           creator=creator, poolclass=NullPool, pool_reset_on_return=None)
    with engine.connect():
        pass
    for conn in own:
        conn.close()
    return engine


@contextlib.contextmanager
def join(engines: dict[str, Engine], url: str, connection: Any,
         clock: MovableClock | None) -> Iterator[Connection]:
    """A SQLAlchemy ``Connection`` on the caller's ``connection``, inside its transaction
    (InvalidInput when there is none to join). ``engines`` keeps the borrowed engine."""
    if isinstance(connection, Connection):
        _check_sqlalchemy(connection)
        conn = connection
        scope: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
    elif _is_psycopg(connection):
        if getattr(connection, "autocommit", True):
            raise InvalidInput("connection: a psycopg connection in autocommit mode has no "
                               "transaction to join (connect with autocommit=False)")
        engine = engines.get("borrowed")
        if engine is None:
            engine = engines["borrowed"] = borrowed_engine(url)
        token = _BORROWED.set(connection)
        try:
            conn = engine.connect()
        finally:
            _BORROWED.reset(token)
        scope = conn  # closing it ends nothing of the caller's (BorrowedPsycopg)
    else:
        raise InvalidInput(f"connection: expected a SQLAlchemy Connection or a psycopg 3 "
                           f"connection, got {type(connection).__name__}")
    with scope:
        if clock is not None:  # the moved clock of tests, for this transaction only
            conn.connection.dbapi_connection.execute(  # type: ignore[union-attr]
                "SELECT set_config('taskyard.clock_offset', %s, true)", (repr(clock.offset),))
        yield conn


def _is_psycopg(connection: Any) -> bool:
    import psycopg  # noqa: PLC0415

    return isinstance(connection, psycopg.Connection)


def _check_sqlalchemy(connection: Connection) -> None:
    if connection.dialect.name != "postgresql" or connection.dialect.driver != "psycopg":
        raise InvalidInput(
            "connection: taskyard joins PostgreSQL connections of the psycopg 3 driver "
            f"(postgresql+psycopg://), not {connection.dialect.name}+{connection.dialect.driver}")
    if not connection.in_transaction():
        raise InvalidInput("connection: not inside a transaction; begin one first "
                           "(engine.begin(), connection.begin(), or a statement of your own)")
