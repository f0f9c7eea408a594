"""SQLite's bulk insert binds a value that every row shares once per statement: the
rows still go in, in order, each with exactly its own values."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import text

from taskyard.store.cursor import BULK_MIN_ROWS, Cursor
from taskyard.store.driver import driver_for, make_engine
from taskyard.store.sqlite.driver import NOW_SQL
from taskyard.store.sqlite.rows import insert_values


def _raw(conn: object, url: str) -> Cursor:
    return Cursor(conn, driver_for(url), NOW_SQL)  # type: ignore[arg-type]


def test_bulk_rows_keep_their_order_values_and_types(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'bulk.db'}"
    engine = make_engine(url)
    n = BULK_MIN_ROWS * 2 + 7  # full statements and a shorter last one
    shared_text = "same for all"
    rows = [
        # c has no affinity: 1, 1.0 and True are equal in Python but stored apart.
        (i, shared_text, (1, 1.0, True)[i % 3] if i % 2 else 1, None, 2.5)
        for i in range(n)
    ]
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (seq INTEGER, s TEXT, c, empty, r REAL, at REAL)"))
        insert_values(_raw(conn, url), "INSERT INTO t (seq, s, c, empty, r, at)",
                      "(?, ?, ?, ?, ?, {now})", rows)
    with engine.connect() as conn:
        got = conn.execute(text(
            "SELECT seq, s, typeof(c), c, empty, r, at > 0 FROM t ORDER BY rowid")).all()
    engine.dispose()
    assert [r[0] for r in got] == list(range(n))  # in order
    kinds = {int: "integer", float: "real", bool: "integer"}
    assert [(r[1], r[2], r[4], r[5], r[6]) for r in got] == [
        (shared_text, kinds[type(c)], None, 2.5, 1) for _, _, c, _, _ in rows]


def test_rows_that_share_empty_still_go_in(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'bulk.db'}"
    engine = make_engine(url)
    rows = [(i, f"row {i}") for i in range(BULK_MIN_ROWS + 1)]
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (seq INTEGER, s TEXT)"))
        insert_values(_raw(conn, url), "INSERT INTO t (seq, s)", "(?, ?)", rows)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT seq, s FROM t ORDER BY rowid")).all() == rows
    engine.dispose()
    assert sqlite3.sqlite_version_info >= (3, 8, 8)  # multi-row VALUES as a subquery
