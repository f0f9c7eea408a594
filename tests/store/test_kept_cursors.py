"""PostgreSQL units of work reuse the cursor kept with their pooled connection
(store/cursor.py: psycopg caches per cursor how it sends each parameter type); the cursor
holds no result once its unit has ended, and a connection the pool replaced gets a new
one. SQLite units close their own cursor (Tx.close, the h500 fix)."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from taskyard.store import Store
from taskyard.store.driver import normalize_url


def _cursor_of_a_unit(store: Store) -> tuple[Any, Any]:
    with store.write() as tx:
        tx.raw.first("SELECT 1")
        cursor = tx.raw.cursor
        dbapi = tx.raw.dbapi
    return cursor, dbapi


def test_units_on_one_connection_share_its_cursor_on_postgresql_only(store: Store) -> None:
    first, conn = _cursor_of_a_unit(store)
    second, again = _cursor_of_a_unit(store)
    assert again is conn  # one thread: the pool lends the same connection
    if store.backend == "postgresql":
        assert second is first
        assert not second.closed
        assert second.pgresult is None  # the last unit's rows are not kept
    else:
        assert second is not first
        with pytest.raises(sqlite3.ProgrammingError, match="closed cursor"):
            first.execute("SELECT 1")


def test_a_replaced_connection_gets_a_new_cursor(store: Store) -> None:
    first, conn = _cursor_of_a_unit(store)
    if store.backend == "postgresql":
        admin = create_engine(normalize_url(store.url), isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as other:
                # Waits until the backend has gone (its farewell is on the socket by then).
                other.execute(text("SELECT pg_terminate_backend(:pid, 60000)"),
                              {"pid": conn.info.backend_pid})
        finally:
            admin.dispose()
    with store.write() as tx:  # the pool sees the dead connection and opens another
        assert tx.raw.first("SELECT 1") == (1,)
        cursor = tx.raw.cursor
    if store.backend == "postgresql":
        assert cursor is not first
        assert cursor.connection is not conn
