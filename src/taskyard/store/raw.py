"""The hot path's statements, run on the driver's cursor inside SQLAlchemy's transaction.

Scheduling, starting and ending jobs run thousands of statements per second; going
through SQLAlchemy costs ~70-110 µs a statement against ~7 µs on the cursor itself
(measured on SQLite), more than the database's own work. These statements are
plain SQL written once, with ``?`` placeholders (rewritten to ``%s`` for psycopg),
and ``{now}`` for the database clock. The transaction stays SQLAlchemy's: the
cursor belongs to the connection that began it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection

from taskyard.store.engine import NOW_SQL


@functools.lru_cache(maxsize=1024)
def dialect_sql(sql: str, dialect: str) -> str:
    """``sql`` for ``dialect``: the clock filled in, placeholders in the driver's style."""
    text = sql.replace("{now}", NOW_SQL[dialect])
    return text if dialect == "sqlite" else text.replace("?", "%s")


def values_sql(rows: int, types: Sequence[str], dialect: str) -> str:
    """A ``VALUES`` list of ``rows`` rows; PostgreSQL gets each type (a column may be
    all NULL, which it could not type)."""
    if dialect == "sqlite":
        row = "(" + ", ".join("?" for _ in types) + ")"
    else:
        row = "(" + ", ".join(f"%s::{kind}" for kind in types) + ")"
    return ", ".join([row] * rows)


def bucket(n: int) -> int:
    """The size a list of ``n`` parameters is padded to: a few statement shapes, so the
    driver's prepared-statement cache keeps them (a new shape is parsed anew)."""
    size = 1
    while size < n:
        size *= 2
    return size


def in_list(ids: Sequence[Any]) -> tuple[str, list[Any]]:
    """``?, ?, …`` for an ``IN (…)`` of ``ids``, padded (by repeating the last id) to a
    :func:`bucket` size; with the padded parameters."""
    padded = list(ids) + [ids[-1]] * (bucket(len(ids)) - len(ids))
    return ", ".join("?" for _ in padded), padded


class Raw:
    """A cursor on ``conn``'s driver connection; its transaction is ``conn``'s."""

    def __init__(self, conn: Connection) -> None:
        self.dialect = conn.dialect.name
        dbapi = conn.connection.dbapi_connection
        assert dbapi is not None
        self._cursor = dbapi.cursor()

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self._cursor.execute(dialect_sql(sql, self.dialect), params)
        return list(self._cursor.fetchall())

    def first(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        rows = self.all(sql, params)
        return rows[0] if rows else None

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Execute; the number of rows changed."""
        self._cursor.execute(dialect_sql(sql, self.dialect), params)
        return int(self._cursor.rowcount)

    def many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        batch = list(rows)
        if batch:
            self._cursor.executemany(dialect_sql(sql, self.dialect), batch)

    def run_values(self, sql: str, rows: Sequence[Sequence[Any]], types: Sequence[str],
                   tail: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Execute ``sql`` whose ``{values}`` is a VALUES list of ``rows``, then ``tail``
        params; returns what it returns (RETURNING)."""
        # Rows of NULLs pad the list to a bucket size (a NULL id matches no row).
        size = bucket(len(rows))
        text = _values_statement(sql, size, tuple(types), self.dialect)
        params = [x for row in rows for x in row]
        params.extend([None] * (len(types) * (size - len(rows))))
        params.extend(tail)
        self._cursor.execute(text, params)
        return list(self._cursor.fetchall()) if self._cursor.description else []


@functools.lru_cache(maxsize=256)
def _values_statement(sql: str, rows: int, types: tuple[str, ...], dialect: str) -> str:
    return dialect_sql(sql, dialect).replace("{values}", values_sql(rows, types, dialect))
