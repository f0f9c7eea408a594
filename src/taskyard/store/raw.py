"""The hot path's statements, run on the driver's cursor inside SQLAlchemy's transaction.

Scheduling, starting and ending jobs run thousands of statements per second; going
through SQLAlchemy costs ~70-110 µs a statement against ~7 µs on the cursor itself
(measured on SQLite), more than the database's own work. These statements are
plain SQL written once, with ``?`` placeholders (rewritten to ``%s`` for psycopg)
and ``{now}`` for the database clock. The transaction stays SQLAlchemy's: the
cursor belongs to the connection that began it.

Statements over many rows keep one text whatever the number of rows, so that the
drivers prepare and cache them: on PostgreSQL a row set is one JSON parameter and a
membership test is ``= ANY(array)``; on SQLite a ``VALUES`` list or an ``IN`` list
padded to a power of two.
"""

from __future__ import annotations

import functools
import json
import operator
import sqlite3
from collections.abc import Iterable, Sequence
from itertools import repeat
from typing import Any

from sqlalchemy import Connection, Table
from sqlalchemy.dialects import postgresql

from taskyard.store.engine import NOW_SQL


@functools.lru_cache(maxsize=1024)
def dialect_sql(sql: str, dialect: str) -> str:
    """``sql`` for ``dialect``: the clock filled in, placeholders in the driver's style."""
    text = sql.replace("{now}", NOW_SQL[dialect])
    return text if dialect == "sqlite" else text.replace("?", "%s")


@functools.lru_cache(maxsize=64)
def _pg_named(sql: str) -> str:
    return sql.replace("{now}", NOW_SQL["postgresql"])


def pg_row_set(types: Sequence[str], param: str) -> str:
    """A row set from the JSON array of arrays in the named parameter ``param``."""
    fields = ", ".join(f"(e->>{i})::{kind}" for i, kind in enumerate(types))
    return f"SELECT {fields} FROM json_array_elements(%({param})s::json) AS e"


def bucket(n: int) -> int:
    """The size a list of ``n`` items is padded to on SQLite: a few statement shapes,
    which its prepared-statement cache keeps."""
    size = 1
    while size < n:
        size *= 2
    return size


@functools.lru_cache(maxsize=256)
def _sqlite_rows(rows: int, width: int) -> str:
    row = "(" + ", ".join("?" for _ in range(width)) + ")"
    return "VALUES " + ", ".join([row] * rows)


@functools.lru_cache(maxsize=64)
def _pg_rows(types: tuple[str, ...]) -> str:
    # The rows travel as one JSON array of arrays: serialised in C on our side and
    # parsed in C by the server, where psycopg builds array parameters in Python.
    fields = ", ".join(f"(e->>{i})::{kind}" for i, kind in enumerate(types))
    return f"SELECT {fields} FROM json_array_elements(?::json) AS e"


_json_rows = json.JSONEncoder(separators=(",", ":")).encode


def pg_types(table: Table, columns: Sequence[str]) -> list[str]:
    """PostgreSQL's names for the types of ``columns`` of ``table`` (for row sets)."""
    return [_pg_type(table, name) for name in columns]


_PG = postgresql.dialect()  # type: ignore[no-untyped-call]


@functools.lru_cache(maxsize=256)
def _pg_type(table: Table, name: str) -> str:
    return str(table.c[name].type.compile(dialect=_PG))


BULK_MIN_ROWS = 1000
"""From this many rows an insert takes the bulk path (a large graph): ``COPY`` on
PostgreSQL (about 3x faster than a JSON row set for jobs, but one more round trip for
a few rows), statements of many rows on SQLite (see :meth:`Raw.values`)."""
BULK_STATEMENT_ROWS = 1000
"""Rows per SQLite bulk statement (fewer if the columns would pass its parameter limit)."""


def insert_edges(conn: Connection, edges: Sequence[tuple[int, int, str]]) -> None:
    """Dependency edges (job, the job it requires, condition) in bulk."""
    raw = Raw(conn)
    if not raw.sqlite and len(edges) >= BULK_MIN_ROWS:
        raw.copy("dependencies", ("job_id", "requires_id", "condition"), edges)
        return
    raw.insert("INSERT INTO dependencies (job_id, requires_id, condition)",
               "c1, c2, c3", edges, ("bigint", "bigint", "text"))


class Raw:
    """A cursor on ``conn``'s driver connection; its transaction is ``conn``'s."""

    def __init__(self, conn: Connection) -> None:
        self.dialect = conn.dialect.name
        self.sqlite = self.dialect == "sqlite"
        dbapi = conn.connection.dbapi_connection
        assert dbapi is not None
        self._dbapi = dbapi
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

    def copy(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """PostgreSQL only: ``COPY`` the rows into ``table`` (in this transaction; the
        table's constraints, triggers and indexes apply as to an INSERT). Values
        are plain Python str, int, float, bool or None."""
        assert not self.sqlite
        with self._cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            write = copy.write_row
            for row in rows:
                write(row)

    def values(self, head: str, row: str, rows: Sequence[Sequence[Any]]) -> None:
        """SQLite only: ``head VALUES row`` for each of ``rows`` (``row`` is ``(?, …)``,
        with any other SQL besides its placeholders), in order. A bulk of rows goes in
        statements of up to :data:`BULK_STATEMENT_ROWS` rows: SQLite then opens the
        cursors of the table and of each of its indexes once per statement, not once
        per row (about twice as fast for jobs and edges). Smaller inserts run one
        statement per row in C (one statement text: prepared once)."""
        assert self.sqlite
        if len(rows) < BULK_MIN_ROWS:
            self._cursor.executemany(dialect_sql(f"{head} VALUES {row}", self.dialect), rows)
            return
        columns = list(zip(*rows, strict=True))
        # A value every row shares (a graph's jobs have the same type, retry policy,
        # graph…) is bound once per statement, not once per row: binding was a third
        # of inserting a graph's jobs. Shared: the same object in every row (so of one
        # type: 1, 1.0 and True are equal, yet stored apart in a column without
        # affinity).
        shared = [all(map(operator.is_, c, repeat(c[0]))) for c in columns]
        pieces = row.strip()[1:-1].split("?")
        if all(shared) or not any(shared) or len(pieces) != len(columns) + 1:
            shared = [False] * len(columns)
        varying = [c for c, same in zip(columns, shared, strict=True) if not same]
        fixed = [c[0] for c, same in zip(columns, shared, strict=True) if same]
        one = "(" + ", ".join("?" * len(varying)) + ")"
        if fixed:  # head SELECT ?, column1, … FROM (VALUES (…), …)
            names = iter(range(1, len(varying) + 1))
            selected = pieces[0] + "".join(
                ("?" if same else f"column{next(names)}") + piece
                for same, piece in zip(shared, pieces[1:], strict=True))
            template = f"{head} SELECT {selected} FROM (VALUES {{rows}})"
        else:
            template, one = f"{head} VALUES {{rows}}", row
        per_row = list(zip(*varying, strict=True))
        limit = self._dbapi.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) - len(fixed)
        per = max(1, min(BULK_STATEMENT_ROWS, limit // len(varying)))
        for start in range(0, len(per_row), per):
            part = per_row[start:start + per]
            self._cursor.execute(
                dialect_sql(template.replace("{rows}", ", ".join([one] * len(part))),
                            self.dialect),
                [*fixed, *(x for r in part for x in r)])

    def pg(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """PostgreSQL only: ``sql`` with ``%(name)s`` parameters (a parameter may be used
        several times) and ``{now}``; rows are passed as :meth:`json_rows`."""
        assert not self.sqlite
        self._cursor.execute(_pg_named(sql), params)
        return list(self._cursor.fetchall()) if self._cursor.description else []

    @staticmethod
    def json_rows(rows: Sequence[Sequence[Any]]) -> str:
        return _json_rows(rows)

    @staticmethod
    def id_array(ids: Sequence[int]) -> str:
        return "{" + ",".join(str(int(i)) for i in ids) + "}"

    def member(self, column: str, ids: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column`` is one of ``ids``: the SQL and its parameters (``ids`` not empty)."""
        if not self.sqlite:
            if all(isinstance(i, int) for i in ids):  # ids: an array literal is cheapest
                return f"{column} = ANY(?::bigint[])", ["{" + ",".join(map(str, ids)) + "}"]
            return f"{column} = ANY(?)", [list(ids)]
        # Padded by repeating the last id: a few shapes, same meaning.
        padded = list(ids) + [ids[-1]] * (bucket(len(ids)) - len(ids))
        return f"{column} IN ({', '.join('?' for _ in padded)})", padded

    def rows(self, sql: str, rows: Sequence[Sequence[Any]], types: Sequence[str],
             tail: Sequence[Any] = (), *, key: str = "") -> list[tuple[Any, ...]]:
        """Execute ``sql``, in which ``{rows}`` stands for a row set of ``rows`` (columns
        typed ``types``), followed by the ``tail`` parameters; returns what the
        statement returns (RETURNING), if anything.

        ``key``: the indexed column the row set's first column is joined on; its
        ``{key}`` in ``sql`` then restricts it to those values on PostgreSQL, whose
        planner cannot know the row set is small and would hash-join a whole table."""
        pk: list[Any] = []
        if key and not self.sqlite:
            sql = sql.replace("{key}", f"{key} = ANY(?::bigint[]) AND")
            pk = ["{" + ",".join(str(int(r[0])) for r in rows) + "}"]
        else:
            sql = sql.replace("{key}", "")
        if self.sqlite:
            # Rows of NULLs pad the set to a bucket size (a NULL id matches no row).
            size = bucket(len(rows))
            text = dialect_sql(sql, self.dialect).replace("{rows}",
                                                          _sqlite_rows(size, len(types)))
            params = [x for row in rows for x in row]
            params.extend([None] * (len(types) * (size - len(rows))))
        else:
            text = dialect_sql(sql.replace("{rows}", _pg_rows(tuple(types))), self.dialect)
            params = [_json_rows(rows)]
        params.extend(pk)
        params.extend(tail)
        self._cursor.execute(text, params)
        return list(self._cursor.fetchall()) if self._cursor.description else []

    def insert(self, head: str, columns: str, rows: Sequence[Sequence[Any]],
               types: Sequence[str]) -> None:
        """``head`` (``INSERT INTO t (…)``) of ``SELECT columns FROM`` a row set of
        ``rows`` (the row set's columns are ``c1``, ``c2``… in ``columns``)."""
        if not rows:
            return
        if self.sqlite:
            values = columns
            for i in range(len(types), 0, -1):
                values = values.replace(f"c{i}", "?")
            self.values(head, f"({values})", rows)
            return
        names = ", ".join(f"c{i + 1}" for i in range(len(types)))
        self.rows(f"{head} SELECT {columns} FROM ({{rows}}) AS r({names})", rows, types)
