"""PostgreSQL: a unit of work's transaction begun in the round trip of its first statement.

psycopg begins a transaction by sending ``BEGIN`` alone and waiting for the answer, then
the statement (in pipeline mode too: ``BEGIN``, a Sync, a wait): every unit of work paid
a round trip for its ``BEGIN`` — a worker's report, a scheduler's cycle, a submit. The
store's own units (the lane's, postgresql/lane.py, and pooled ones) therefore run with
the connection in autocommit, marked as beginning its transactions itself: the first
statement a :class:`BeginningCursor` sends in a unit goes in one pipeline behind an
explicit ``BEGIN``. The statements after it run inside that transaction block (psycopg
sends no ``BEGIN`` of its own in autocommit), and the unit's end commits or rolls it back
as before (psycopg's commit and rollback send ``COMMIT``/``ROLLBACK`` whenever a
transaction is open, in autocommit too). ``executemany`` and ``COPY`` as a unit's first
statement begin with a ``BEGIN`` of their own.

Outside a unit — a checked-in connection, :meth:`Driver.read_each`'s reads, the clock's
setting at checkout, a caller's connection joined — nothing is marked and psycopg
behaves as its own. A statement that must be its whole transaction (a lone submit in
autocommit, a pipeline committed by its Sync: postgresql/jobs.py, rows.py) runs
:func:`alone`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

_MARK = "taskyard_begins"
"""Set on a psycopg connection while a unit of the store runs on it (see above)."""


def _begins(conn: Any) -> bool:
    return bool(getattr(conn, _MARK, False) and conn.autocommit
                and conn.pgconn.transaction_status == TransactionStatus.IDLE)


class BeginningCursor(psycopg.Cursor[Any]):
    """psycopg's cursor, which begins a marked connection's transaction in the round
    trip of its first statement (see the module docstring)."""

    def execute(self, query: Any, params: Any = None, *, prepare: bool | None = None,
                binary: bool | None = None) -> BeginningCursor:
        conn = self.connection
        if not _begins(conn):
            return super().execute(query, params, prepare=prepare, binary=binary)
        if conn.pgconn.pipeline_status:  # a pipeline of the caller's: BEGIN goes first in it
            psycopg.Cursor(conn).execute("BEGIN", prepare=False)
            return super().execute(query, params, prepare=prepare, binary=binary)
        with conn.pipeline():
            psycopg.Cursor(conn).execute("BEGIN", prepare=False)
            super().execute(query, params, prepare=prepare, binary=binary)
        return self

    def executemany(self, query: Any, params_seq: Iterable[Any], *,
                    returning: bool = False) -> None:
        if _begins(self.connection):
            psycopg.Cursor(self.connection).execute("BEGIN", prepare=False)
        super().executemany(query, params_seq, returning=returning)

    @contextlib.contextmanager
    def copy(self, statement: Any, params: Any = None, *,
             writer: Any = None) -> Iterator[psycopg.Copy]:
        if _begins(self.connection):
            psycopg.Cursor(self.connection).execute("BEGIN", prepare=False)
        with super().copy(statement, params, writer=writer) as copy:
            yield copy


def enter_unit(dbapi: Any) -> None:
    """A unit of the store starts on ``dbapi`` (nothing sent in it yet): mark it."""
    if not dbapi.autocommit and dbapi.pgconn.transaction_status == TransactionStatus.IDLE:
        dbapi.autocommit = True
        setattr(dbapi, _MARK, True)


def leave_unit(dbapi: Any) -> None:
    """The unit on ``dbapi`` has ended (committed, or rolled back): psycopg's own
    behaviour again. Whatever is still open is rolled back first."""
    if not getattr(dbapi, _MARK, False):
        return
    setattr(dbapi, _MARK, False)
    if dbapi.closed:
        return
    if dbapi.pgconn.transaction_status != TransactionStatus.IDLE:
        dbapi.rollback()
    dbapi.autocommit = False


@contextlib.contextmanager
def alone(dbapi: Any) -> Iterator[None]:
    """Statements each their own transaction (autocommit, no ``BEGIN``), or a pipeline
    committed by its Sync, whether or not a unit marked ``dbapi``; the unit's mode
    after. Only while nothing was sent in the unit yet."""
    marked = getattr(dbapi, _MARK, False)
    was = dbapi.autocommit
    setattr(dbapi, _MARK, False)
    dbapi.autocommit = True
    try:
        yield
    finally:
        if dbapi.pgconn.transaction_status == TransactionStatus.IDLE:
            dbapi.autocommit = was
        setattr(dbapi, _MARK, marked)
