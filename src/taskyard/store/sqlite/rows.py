"""SQLite: row sets, membership tests and bulk inserts as statement text.

A row set is a ``VALUES`` list and a membership test an ``IN`` list, both padded to a
power of two, so that a few statement shapes cover every size and stay in SQLite's
prepared-statement cache.
"""

from __future__ import annotations

import functools
import operator
import sqlite3
from collections.abc import Sequence
from itertools import repeat
from typing import Any

from taskyard.store.cursor import BULK_MIN_ROWS, Cursor

BULK_STATEMENT_ROWS = 1000
"""Rows per bulk statement (fewer if the columns would pass SQLite's parameter limit)."""


def bucket(n: int) -> int:
    """The size a list of ``n`` items is padded to: a few statement shapes."""
    size = 1
    while size < n:
        size *= 2
    return size


@functools.lru_cache(maxsize=256)
def _values(rows: int, width: int) -> str:
    row = "(" + ", ".join("?" for _ in range(width)) + ")"
    return "VALUES " + ", ".join([row] * rows)


def member(column: str, ids: Sequence[Any]) -> tuple[str, list[Any]]:
    # Padded by repeating the last id: a few shapes, same meaning.
    padded = list(ids) + [ids[-1]] * (bucket(len(ids)) - len(ids))
    return f"{column} IN ({', '.join('?' for _ in padded)})", padded


def row_set(raw: Cursor, sql: str, rows: Sequence[Sequence[Any]],
            tail: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Execute ``sql``, in which ``{rows}`` stands for a ``VALUES`` list of ``rows``,
    followed by the ``tail`` parameters; what it returns (RETURNING). Nothing is run
    for no rows. Rows of NULLs pad the list to a bucket size (a NULL id matches no row)."""
    if not rows:
        return []
    size, width = bucket(len(rows)), len(rows[0])
    text = raw.sql(sql).replace("{rows}", _values(size, width))
    params = [x for row in rows for x in row]
    params.extend([None] * (width * (size - len(rows))))
    params.extend(tail)
    raw.cursor.execute(text, params)
    return list(raw.cursor.fetchall()) if raw.cursor.description else []


def insert_rows(raw: Cursor, head: str, row: str, rows: Sequence[Sequence[Any]]) -> None:
    """``head`` (``INSERT INTO t (…)``) of ``rows``, each written as ``row`` (``(?, …)``
    with any other SQL besides its markers, such as ``{now}``); see insert_values."""
    if rows:
        insert_values(raw, head, row, rows)


def insert_values(raw: Cursor, head: str, row: str, rows: Sequence[Sequence[Any]]) -> None:
    """``head VALUES row`` for each of ``rows`` (``row`` is ``(?, …)``, with any other
    SQL besides its placeholders), in order. A bulk of rows goes in statements of up
    to :data:`BULK_STATEMENT_ROWS` rows: SQLite then opens the cursors of the table and
    of each of its indexes once per statement, not once per row (about twice as fast
    for jobs and edges). Smaller inserts run one statement per row in C (one statement
    text: prepared once)."""
    if len(rows) < BULK_MIN_ROWS:
        raw.cursor.executemany(raw.sql(f"{head} VALUES {row}"), rows)
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
    limit = raw.dbapi.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) - len(fixed)
    per = max(1, min(BULK_STATEMENT_ROWS, limit // len(varying)))
    for start in range(0, len(per_row), per):
        part = per_row[start:start + per]
        raw.cursor.execute(raw.sql(template.replace("{rows}", ", ".join([one] * len(part)))),
                           [*fixed, *(x for r in part for x in r)])
