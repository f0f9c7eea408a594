"""The hot path's statements, run on the driver's cursor inside SQLAlchemy's transaction.

Scheduling, starting and ending jobs run thousands of statements per second; going
through SQLAlchemy costs ~70-110 µs a statement against ~7 µs on the cursor itself
(measured on SQLite), more than the database's own work. These statements are
plain SQL written once, with ``?`` placeholders (rewritten to ``%s`` for psycopg)
and ``{now}`` for the database clock. The transaction stays SQLAlchemy's: the
cursor belongs to the connection that began it.

Statements over many rows keep one text whatever the number of rows, so that the
drivers prepare and cache them; how a row set or a membership test is written is
the dialect's business (see ``dialects/``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Table

if TYPE_CHECKING:
    from taskyard.store.driver import Driver


@functools.lru_cache(maxsize=2048)
def render(sql: str, now_sql: str, percent: bool) -> str:
    """``sql`` with the clock filled in and, for psycopg (``percent``), ``%s`` markers."""
    text = sql.replace("{now}", now_sql)
    return text.replace("?", "%s") if percent else text


BULK_MIN_ROWS = 1000
"""From this many rows an insert takes the bulk path (a large graph): ``COPY`` on
PostgreSQL (about 3x faster than a JSON row set for jobs, but one more round trip for
a few rows), statements of many rows on SQLite."""

json_rows = json.JSONEncoder(separators=(",", ":")).encode
"""Rows as one JSON array of arrays: serialised in C on our side (and parsed in C by
PostgreSQL, where psycopg would build array parameters in Python)."""


def id_array(ids: Iterable[int]) -> str:
    """A PostgreSQL ``bigint[]`` literal of ``ids`` (the cheapest way to send them)."""
    return "{" + ",".join(str(int(i)) for i in ids) + "}"


STREAM_ROWS = 5000
"""Rows :meth:`Cursor.each` converts at a time."""

_KEPT = "taskyard.cursor"
"""The key of a pooled connection's kept cursor in its ``info``. A psycopg cursor
caches how it sends each type of parameter: a new cursor per unit of work looked them
up again for every statement, ~30-50 µs of CPU of a one-statement submit (issue 23).
The cursor is used only by the unit of work that holds the connection."""



def drop_result(cursor: Any) -> None:
    """Free the rows a driver cursor holds (psycopg keeps a result until the cursor's
    next statement); the cursor stays open."""
    reset = getattr(cursor, "_reset", None)
    if reset is not None:
        reset()


class Cursor:
    """A cursor on ``conn``'s driver connection; its transaction is ``conn``'s."""

    __slots__ = ("_info", "_kept", "_percent", "_pipelined", "cursor", "dbapi", "driver",
                 "now_sql", "restore", "row_lock")

    def __init__(self, conn: Connection, driver: Driver, now_sql: str, *,
                 keep: bool = False) -> None:
        """``keep``: reuse the cursor kept with the pooled connection (see
        :data:`_KEPT`), else open one for this unit of work."""
        self.driver = driver
        self.now_sql = now_sql
        self.row_lock = driver.row_lock
        """The lock a read takes on rows it will update (PostgreSQL: ``FOR NO KEY
        UPDATE``; SQLite: none, its write transactions are serial)."""
        self._percent = driver.percent_params
        dbapi = conn.connection.dbapi_connection
        assert dbapi is not None
        self.dbapi: Any = dbapi
        self._kept = keep
        self._info: dict[Any, Any] | None = conn.connection.info if keep else None
        self.cursor: Any = self._cursor(_KEPT)
        self._pipelined: list[Any] = []
        self.restore: str | None = None
        """A statement the driver left to the unit's next one: run before any later
        statement of the unit (:attr:`taskyard.store.unit.Tx.raw`), dropped when the
        transaction ends first. It may only put back settings that change no result
        (the cycle's planner settings: postgresql/cycle.py:finish)."""

    def _cursor(self, key: str) -> Any:
        """The cursor kept under ``key`` with the pooled connection (opened when
        missing or stale), or a new one when this unit of work keeps none."""
        if self._info is None:
            return self.dbapi.cursor()
        cursor = self._info.get(key)
        if cursor is None or cursor.closed or cursor.connection is not self.dbapi:
            cursor = self._info[key] = self.dbapi.cursor()
        return cursor

    @property
    def kept(self) -> dict[Any, Any] | None:
        """What is kept with the pooled connection (its ``info``), when this unit of
        work keeps its cursor there; else None."""
        return self._info

    def pipelined(self, n: int) -> Any:
        """Another cursor on the connection (the ``n``-th, from 1), for statements sent in
        one pipeline with one of :attr:`cursor` (each one's rows are read after all of
        them): kept as that one is."""
        while len(self._pipelined) < n:
            self._pipelined.append(self._cursor(f"{_KEPT}.{len(self._pipelined) + 1}"))
        return self._pipelined[n - 1]

    def close(self) -> None:
        """The unit of work that owns the cursor has ended (see Tx.close): close it, or,
        kept, drop its last result (an idle pooled connection holds no rows)."""
        for cursor in (self.cursor, *self._pipelined):
            if not self._kept:
                cursor.close()
            else:
                drop_result(cursor)

    def sql(self, text: str) -> str:
        """``text`` as the driver takes it (see :func:`render`)."""
        return render(text, self.now_sql, self._percent)

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self.cursor.execute(render(sql, self.now_sql, self._percent), params)
        return list(self.cursor.fetchall())

    def each(self, sql: str, params: Sequence[Any] = (), *,
             size: int = STREAM_ROWS) -> Iterator[tuple[Any, ...]]:
        """The rows of a read as Python values ``size`` at a time, not all at once: a
        statement whose rows grow with the data (a fan-out's 100,000 edges). SQLite
        steps its statement as rows are taken; psycopg holds the result in C (about a
        third of the memory of its rows as Python tuples) and converts it as it is
        read. One round trip, as :meth:`all`. Consume it before the next statement."""
        self.cursor.execute(render(sql, self.now_sql, self._percent), params)
        while rows := self.cursor.fetchmany(size):
            yield from rows

    def first(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        rows = self.all(sql, params)
        return rows[0] if rows else None

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Execute; the number of rows changed."""
        self.cursor.execute(render(sql, self.now_sql, self._percent), params)
        return int(self.cursor.rowcount)

    def many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        batch = list(rows)
        if batch:
            self.cursor.executemany(render(sql, self.now_sql, self._percent), batch)

    def member(self, column: str, ids: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column`` is one of ``ids``: the SQL and its parameters (``ids`` not empty)."""
        return self.driver.member(column, ids)


@functools.cache
def _pg_dialect() -> Any:
    """SQLAlchemy's PostgreSQL dialect, loaded on first use (SQLite never needs it)."""
    from sqlalchemy.dialects import postgresql  # noqa: PLC0415

    return postgresql.dialect()  # type: ignore[no-untyped-call]


def pg_types(table: Table, columns: Sequence[str]) -> list[str]:
    """PostgreSQL's names for the types of ``columns`` of ``table`` (for row sets)."""
    return [_pg_type(table, name) for name in columns]


@functools.lru_cache(maxsize=256)
def _pg_type(table: Table, name: str) -> str:
    return str(table.c[name].type.compile(dialect=_pg_dialect()))
