"""bench.wire, the counting proxy of the database work per job: its reading of the
PostgreSQL protocol from byte streams cut anywhere, and, on a real server, its counts
against what the server itself counts (``pg_stat_database``) and its added delay."""

from __future__ import annotations

import os
import struct
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
from bench.peers.common import libpq_dsn, pg_url, recreate_pg
from bench.wire import Counts, Proxy, _Conn

PG_ADMIN = os.environ.get("TASKYARD_TEST_PG")
REQUIRE_PG = os.environ.get("TASKYARD_REQUIRE_PG") == "1"


def _msg(kind: bytes, body: bytes = b"") -> bytes:
    return kind + struct.pack("!I", 4 + len(body)) + body


def _startup(database: str) -> bytes:
    body = struct.pack("!I", 196608) + b"user\0u\0database\0" + database.encode() + b"\0\0"
    return struct.pack("!I", 4 + len(body)) + body


SSL_REQUEST = struct.pack("!II", 8, 80877103)
READY_IDLE, READY_BLOCK = _msg(b"Z", b"I"), _msg(b"Z", b"T")


def _feed(proxy: Proxy, conn: _Conn, stream: list[tuple[str, bytes]], cut: int) -> None:
    """Each side's bytes, in order, in chunks of at most ``cut`` bytes."""
    for side, data in stream:
        for i in range(0, len(data), cut):
            with proxy.lock:
                if side == "client":
                    proxy._from_client(conn, data[i:i + cut])
                else:
                    proxy._from_server(conn, data[i:i + cut])


@pytest.fixture
def proxy() -> Iterator[Proxy]:
    found = Proxy(("127.0.0.1", 9))  # never connected to: the tests feed it bytes
    yield found
    found.close()


@pytest.mark.parametrize("cut", [1, 2, 5, 7, 64, 1 << 16])
def test_the_counts_do_not_depend_on_where_the_bytes_are_cut(proxy: Proxy, cut: int) -> None:
    """A session: SSL refused, start-up, an autocommit statement, a transaction block of
    three statements sent at once, a failed statement, a notification, a long row, an
    idle Sync (no statement: no transaction) and the goodbye."""
    row = _msg(b"D", b"x" * 70_000)
    stream = [
        ("client", SSL_REQUEST), ("server", b"N"),
        ("client", _startup("jobs")),
        ("server", _msg(b"R", b"\0\0\0\0") + _msg(b"S", b"a\0b\0") + READY_IDLE),
        ("client", _msg(b"Q", b"SELECT 1\0")),
        ("server", _msg(b"T", b"t" * 20) + _msg(b"D", b"d") + _msg(b"C", b"SELECT 1\0")
         + READY_IDLE),
        ("client", _msg(b"Q", b"BEGIN; UPDATE t; COMMIT\0")),
        ("server", _msg(b"C", b"BEGIN\0") + _msg(b"C", b"UPDATE 1\0") + _msg(b"C", b"COMMIT\0")
         + READY_IDLE),
        ("client", _msg(b"Q", b"BEGIN\0")), ("server", _msg(b"C", b"BEGIN\0") + READY_BLOCK),
        ("client", _msg(b"Q", b"SELECT 1/0\0")),
        ("server", _msg(b"E", b"boom\0") + _msg(b"Z", b"E")),
        ("client", _msg(b"Q", b"ROLLBACK\0")),
        ("server", _msg(b"C", b"ROLLBACK\0") + READY_IDLE),
        ("server", _msg(b"A", b"\0\0\0\1ch\0\0")),
        ("client", _msg(b"Q", b"SELECT x\0")),
        ("server", row + _msg(b"C", b"SELECT 1\0") + READY_IDLE),
        ("client", _msg(b"S")), ("server", READY_IDLE),
        ("client", _msg(b"X")),
    ]
    conn = _Conn()
    _feed(proxy, conn, stream, cut)
    assert conn.database == "jobs"
    # Round trips: the SSL request (counted once the start-up names the database),
    # start-up, SELECT 1, the block sent at once, BEGIN, 1/0, ROLLBACK, SELECT x, Sync;
    # the goodbye waits for nothing. Transactions: the connection's start-up, SELECT 1,
    # the block, the rollback, SELECT x (the idle Sync ran nothing).
    assert proxy.counts("jobs") == Counts(
        round_trips=9, statements=7, transactions=5, errors=1, notifications=1,
        connections=1)


def test_an_accepted_encryption_leaves_only_round_trips(proxy: Proxy) -> None:
    conn = _Conn()
    _feed(proxy, conn, [("client", SSL_REQUEST), ("server", b"S" + b"\x16" * 50),
                        ("client", b"\x16" * 30), ("server", b"\x17" * 40)], 1 << 16)
    assert conn.opaque and conn.database is None  # nothing was read as a message
    assert proxy.counts(None) == Counts()  # type: ignore[arg-type]


def _server_transactions(admin: Any, database: str) -> int:
    row = admin.execute("SELECT xact_commit + xact_rollback FROM pg_stat_database "
                        "WHERE datname = %s", (database,)).fetchone()
    return int(row[0])


@pytest.fixture
def admin_url() -> str:
    if PG_ADMIN is None:
        if REQUIRE_PG:
            pytest.fail("TASKYARD_REQUIRE_PG=1 but TASKYARD_TEST_PG is not set")
        pytest.skip("PostgreSQL not configured (set TASKYARD_TEST_PG or run `make test`)")
    return PG_ADMIN


def test_on_a_real_server_the_transactions_are_the_servers_own(admin_url: str) -> None:
    """psycopg through the proxy: autocommit statements, a transaction block, a
    pipeline, a failed statement, LISTEN/NOTIFY. The server's ``pg_stat_database``
    (flushed when each connection ends) counts the same transactions, but autovacuum's."""
    database = f"wire_{uuid.uuid4().hex[:10]}"
    url = pg_url(admin_url, database)
    recreate_pg(url)
    target = urlsplit(admin_url)
    proxy = Proxy((target.hostname or "127.0.0.1", target.port or 5432))
    dsn = libpq_dsn(proxy.url(url))
    admin = psycopg.connect(libpq_dsn(pg_url(admin_url, "postgres")), autocommit=True)
    try:
        before = _server_transactions(admin, database)
        with psycopg.connect(dsn, autocommit=True) as conn:
            connect = proxy.counts(database).round_trips  # SSL refused (libpq), start-up
            for _ in range(3):
                conn.execute("SELECT 1")
            conn.execute("CREATE TABLE t (x int)")
            with conn.transaction():
                conn.execute("INSERT INTO t VALUES (1)")
                conn.execute("INSERT INTO t VALUES (2)")
            with conn.pipeline():
                for i in range(5):
                    conn.execute("INSERT INTO t VALUES (%s)", (i,))
            with pytest.raises(psycopg.errors.DivisionByZero):
                conn.execute("SELECT 1/0")
            with psycopg.connect(dsn, autocommit=True) as listener:
                listener.execute("LISTEN ch")
                conn.execute("NOTIFY ch")
                assert len(list(listener.notifies(timeout=30, stop_after=1))) == 1
        wire = proxy.counts(database)
        # 2 connections; SELECT x3, CREATE, the block (BEGIN, 2 INSERT, COMMIT: one
        # transaction), the pipeline (one round trip, one implicit transaction), 1/0,
        # LISTEN, NOTIFY.
        assert wire.connections == 2 and wire.notifications == 1 and wire.errors == 1
        assert wire.statements == 3 + 1 + 4 + 5 + 2
        assert wire.round_trips == 2 * connect + 3 + 1 + 4 + 1 + 1 + 2
        assert wire.transactions == 2 + 3 + 1 + 1 + 1 + 1 + 2
        deadline = time.monotonic() + 30  # the server flushes a backend's stats at exit
        while _server_transactions(admin, database) - before < wire.transactions and \
                time.monotonic() < deadline:
            time.sleep(0.1)
        # An autovacuum worker's visit to the new database starts a backend, one more
        # transaction in the server's count, at a moment nobody chooses.
        assert wire.transactions <= _server_transactions(admin, database) - before \
            <= wire.transactions + 2
    finally:
        proxy.close()
        admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        admin.close()


def test_the_delay_is_added_to_every_round_trip(admin_url: str) -> None:
    """A 20 ms round trip through the proxy: ten round trips take at least 200 ms
    (a lower bound only: a loaded machine makes it longer, never shorter)."""
    target = urlsplit(admin_url)
    proxy = Proxy((target.hostname or "127.0.0.1", target.port or 5432), delay=0.010)
    try:
        with psycopg.connect(libpq_dsn(proxy.url(pg_url(admin_url, "postgres"))),
                             autocommit=True) as conn:
            conn.execute("SELECT 1")
            started = time.perf_counter()
            for _ in range(10):
                conn.execute("SELECT 1")
            assert time.perf_counter() - started >= 0.2
        assert proxy.counts("postgres").round_trips >= 11
    finally:
        proxy.close()
