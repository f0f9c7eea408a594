"""PostgreSQL: a unit's pipelined statements go through libpq itself
(postgresql/pq_pipeline.py), converted by psycopg's own converters and prepared in
psycopg's own cache: the values a statement takes and gives are psycopg's, its errors
psycopg's classes, and a rollback's ``DEALLOCATE ALL`` leaves no statement that the
next pipeline takes for prepared."""

from __future__ import annotations

import datetime
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from taskyard.store import Store
from taskyard.store.postgresql import pq_pipeline
from taskyard.store.postgresql.rows import pipelined
from taskyard.store.postgresql.urls import pg_target


@pytest.fixture
def pg(pg_url: str) -> Iterator[Store]:
    store = Store(pg_url)
    try:
        with store.write() as tx:
            tx.raw.run("CREATE TABLE probe (n integer PRIMARY KEY, doc jsonb, at timestamptz)")
        yield store
    finally:
        store.close()


def test_values_go_and_come_back_as_psycopgs(pg: Store) -> None:
    at = datetime.datetime(2026, 12, 4, 17, 0, tzinfo=datetime.UTC)
    with pg.write() as tx:
        found = pipelined(tx.raw, [
            ("INSERT INTO probe VALUES (%(n)s, %(doc)s::jsonb, %(at)s) RETURNING n, doc, at",
             {"n": 1, "doc": '{"a": [1, null]}', "at": at}),
            ("SELECT %s::bigint[] , %s::text, %s::boolean, %s::text IS NULL",
             ("{3,4}", "é\N{SNOWMAN}", True, None)),
            ("SELECT x FROM unnest(%(ids)b::bigint[]) AS x", {"ids": [5, 6]}),
            ("UPDATE probe SET n = n WHERE n = -1", ()),
        ], commit=True)
    assert found == [[(1, {"a": [1, None]}, at)], [([3, 4], "é\N{SNOWMAN}", True, True)],
                     [(5,), (6,)], []]


def test_an_error_is_psycopgs_own_and_the_unit_goes_on_after_it(pg: Store) -> None:
    """In a begun transaction the failed pipeline leaves it aborted: the unit rolls back
    (psycopg then sends DEALLOCATE ALL, having prepared statements) and the connection's
    next pipeline runs, as nothing of it was prepared."""
    with pg.write() as tx:
        tx.raw.run("INSERT INTO probe (n) VALUES (1)")
    for _ in range(3):  # psycopg prepares statements run twice: it holds some now
        with pg.read() as tx:
            tx.raw.all("SELECT count(*) FROM probe")
    with pytest.raises(psycopg.errors.UniqueViolation, match="probe_pkey"), \
            pg.write() as tx:
        dbapi = tx.raw.dbapi
        tx.raw.run("INSERT INTO probe (n) VALUES (2)")
        pipelined(tx.raw, [("INSERT INTO probe (n) VALUES (3)", ()),
                           ("INSERT INTO probe (n) VALUES (1)", ()),
                           ("INSERT INTO probe (n) VALUES (4)", ())])
    statements = [("INSERT INTO probe (n) VALUES (%s) RETURNING n", (5,)),
                  ("SELECT array_agg(n ORDER BY n) FROM probe", ())]
    with pg.write() as tx:
        assert tx.raw.dbapi is dbapi  # the same session, whose statements were dropped
        assert pipelined(tx.raw, statements, commit=True) == [[(5,)], [([1, 5],)]]
    with pg.write() as tx:  # the second run prepares them (psycopg's threshold here)
        statements[0] = (statements[0][0], (6,))
        assert pipelined(tx.raw, statements, commit=True) == [[(6,)], [([1, 5, 6],)]]
    with tempfile.TemporaryFile("w+") as out:
        with pg.write() as tx:
            dbapi.pgconn.trace(out.fileno())
            try:
                statements[0] = (statements[0][0], (7,))
                found = pipelined(tx.raw, statements, commit=True)
            finally:
                dbapi.pgconn.untrace()
        out.seek(0)
        trace = out.read()
    assert found == [[(7,)], [([1, 5, 6, 7],)]]
    # The third runs them prepared: no Parse, each Bind names its statement.
    assert "\tParse\t" not in trace, trace
    binds = [line for line in trace.splitlines() if "\tBind\t" in line]
    assert len(binds) == 2 and all('"_pg3_' in line for line in binds), trace


def test_a_whole_pipeline_that_fails_leaves_the_session_idle(pg: Store) -> None:
    """Its statements were skipped, a Parse among them: psycopg's cache forgets them (no
    rollback clears it here: the session is idle), and their next run prepares them."""
    count = ("SELECT count(*) FROM probe WHERE n > %s", (0,))
    with pg.write() as tx:
        dbapi = tx.raw.dbapi
        assert pipelined(tx.raw, [count], commit=True) == [[(0,)]]  # once: prepared next
    with pytest.raises(psycopg.errors.NotNullViolation, match='"n"'), pg.write() as tx:
        pipelined(tx.raw, [("INSERT INTO probe (n) VALUES (7)", ()),
                           ("INSERT INTO probe (n) VALUES (NULL)", ()), count], commit=True)
    assert dbapi.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE
    for _ in range(2):
        with pg.write() as tx:
            assert tx.raw.dbapi is dbapi
            assert pipelined(tx.raw, [count], commit=True) == [[(0,)]]


def test_the_converter_kept_with_a_connection_is_that_connections(pg_url: str) -> None:
    kept: dict[Any, Any] = {}
    url = pg_target(pg_url).libpq()
    with psycopg.connect(url) as one, psycopg.connect(url) as other:
        first = pq_pipeline.transformer(one, kept)
        assert pq_pipeline.transformer(one, kept) is first
        second = pq_pipeline.transformer(other, kept)
        assert second is not first and second.connection is other
        assert pq_pipeline.transformer(other, None) is not second  # kept nowhere: new
        assert pq_pipeline.run(other, second, [("SELECT %s::int + 1", (1,))]) == [[(2,)]]


def test_a_value_that_cannot_be_sent_sends_nothing_and_notes_nothing(pg: Store) -> None:
    """Every statement is converted before any is sent or noted as prepared: the one
    before the bad value is prepared by its next run, not taken for prepared."""
    count = ("SELECT count(*) FROM probe WHERE n > %s", (0,))
    with pg.write() as tx:
        assert pipelined(tx.raw, [count], commit=True) == [[(0,)]]  # once: prepared next
    with pytest.raises(psycopg.ProgrammingError, match="cannot adapt"), pg.write() as tx:
        pipelined(tx.raw, [count, ("SELECT %s", (object(),))], commit=True)
    for _ in range(2):
        with pg.write() as tx:
            assert pipelined(tx.raw, [count], commit=True) == [[(0,)]]


class Interrupted(Exception):
    """What a signal's handler raised while the pipeline waited."""


def test_a_pipeline_that_could_not_end_closes_its_connection(pg_url: str) -> None:
    """A session left mid-pipeline (here: interrupted while it waits) is closed: no
    later statement may be sent on it (a unit's rollback through the pool would also
    drop it; this is the pipeline's own guard)."""
    main = threading.get_ident()

    def interrupt() -> None:  # to the waiting thread: its poll returns, its handler runs
        signal.pthread_kill(main, signal.SIGUSR1)

    def handler(signum: int, frame: Any) -> None:
        raise Interrupted

    previous = signal.signal(signal.SIGUSR1, handler)
    try:
        with psycopg.connect(pg_target(pg_url).libpq(), autocommit=True) as conn:
            threading.Timer(0.2, interrupt).start()
            began = time.monotonic()
            with pytest.raises(Interrupted):
                pq_pipeline.run(conn, pq_pipeline.transformer(conn, None),
                                [("SELECT pg_sleep(60)", ())])
            assert time.monotonic() - began < 50  # interrupted, not ended
            assert conn.closed
    finally:
        signal.signal(signal.SIGUSR1, previous)


def test_a_large_pipeline_reads_while_it_sends(pg_url: str) -> None:
    """The first statement's rows (several MB) come back while a large parameter of the
    next is still being sent: the client reads as it sends, else neither side would
    ever finish (the server stops reading once its answers do not fit)."""
    big = "x" * 8_000_000
    with psycopg.connect(pg_target(pg_url).libpq(), autocommit=True) as conn:
        conn.execute("SET statement_timeout = '60s'")
        tx = pq_pipeline.transformer(conn, None)
        done: list[Any] = []
        runner = threading.Thread(target=lambda: done.append(pq_pipeline.run(conn, tx, [
            ("SELECT repeat('y', 1000) FROM generate_series(1, 20000)", ()),
            ("SELECT length(%s::text)", (big,))])), daemon=True)
        runner.start()
        runner.join(120)
        assert not runner.is_alive(), "the pipeline never ended"
    rows, (length,) = done[0]
    assert len(rows) == 20_000 and length == (8_000_000,)


def test_a_sync_after_a_statement_ends_its_part_of_the_pipeline(pg: Store) -> None:
    """``sync_after``: the server answers the statements up to that Sync before it reads
    on (postgresql/cycle_lock.py sends the cycle's lock so): without a transaction begun,
    the two parts are two transactions of the server's; the statements' rows come back
    in order, also once psycopg has prepared them (their Parse results among them)."""
    xid = ("SELECT pg_current_xact_id()::text, %s::int", (1,))
    other = ("SELECT pg_current_xact_id()::text, %s::int", (2,))
    with pg.read() as tx:
        dbapi = tx.raw.dbapi
        kept = pq_pipeline.transformer(dbapi, None)
        for _ in range(3):  # unprepared, preparing, prepared
            [[(first, one)], [(second, two)]] = pq_pipeline.run(
                dbapi, kept, [xid, other], sync_after=0)
            assert (one, two) == (1, 2) and first != second
            [[(first, _)], [(second, _)]] = pq_pipeline.run(dbapi, kept, [xid, other])
            assert first == second  # one Sync: one transaction


def test_a_failure_before_the_sync_is_the_one_raised(pg: Store) -> None:
    """In a transaction begun before it, the part after the Sync fails too (the
    transaction is aborted): the error raised is the first statement's own, and
    nothing after it is written."""
    with pytest.raises(psycopg.errors.DivisionByZero), pg.write() as tx:
        pipelined(tx.raw, [("SELECT 1 / %s::int", (0,)),
                           ("INSERT INTO probe (n) VALUES (9)", ())], sync_after=0)
    with pg.read() as tx:
        assert tx.raw.all("SELECT count(*) FROM probe") == [(0,)]
