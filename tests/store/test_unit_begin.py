"""PostgreSQL: a unit of work's transaction begins in the round trip of its first
statement (postgresql/begin.py) — psycopg sent its ``BEGIN`` alone and waited — and is
still one transaction, all or nothing, whichever way its statements go (the store's own
cursors, SQLAlchemy Core, a pooled connection); outside a unit, psycopg is itself."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
import sqlalchemy as sa
from tests.store.test_pipeline_whole import lane_connection, round_trips, traced
from tests.submitting import yard_with_type

from taskyard.api.yard import Yard
from taskyard.store.clock import MovableClock


@pytest.fixture
def yard(pg_url: str, clock: MovableClock) -> Iterator[Yard]:
    with yard_with_type(pg_url, clock) as y:
        with y.store.write() as tx:
            tx.raw.run("CREATE TABLE probe (n integer)")
        yield y


def count(yard: Yard) -> int:
    with yard.store.read() as tx:
        (n,) = tx.raw.first("SELECT count(*) FROM probe") or (0,)
    return int(n)


def test_a_unit_of_one_statement_is_two_round_trips(yard: Yard) -> None:
    store = yard.store
    dbapi = lane_connection(yard)

    def unit() -> None:
        with store.write() as tx:
            tx.raw.run("INSERT INTO probe VALUES (1)")

    _, trace = traced(dbapi, unit)
    assert round_trips(trace) == 2, "\n".join(trace)  # BEGIN + the insert, then COMMIT
    assert count(yard) == 1
    assert dbapi.autocommit is False  # psycopg's own again between units


def test_a_failed_unit_writes_nothing_and_leaves_no_mode_behind(yard: Yard) -> None:
    store = yard.store
    with pytest.raises(psycopg.errors.DivisionByZero), store.write() as tx:
        tx.raw.run("INSERT INTO probe VALUES (1)")
        tx.raw.first("SELECT 1 / 0")
    with pytest.raises(RuntimeError), store.write() as tx:
        tx.raw.run("INSERT INTO probe VALUES (2)")
        raise RuntimeError("the unit fails after its write")
    assert count(yard) == 0
    with store.engine.connect() as conn:  # every pooled connection is psycopg's own
        dbapi = conn.connection.dbapi_connection
        assert dbapi is not None and dbapi.autocommit is False


def test_core_statements_and_pooled_units_are_one_transaction(yard: Yard) -> None:
    store = yard.store
    probe = sa.table("probe", sa.column("n"))
    with pytest.raises(RuntimeError), store.write() as outer, store.write() as inner:
        assert inner.conn is not outer.conn  # the inner one is pooled
        inner.conn.execute(sa.insert(probe).values(n=1))  # its first statement: Core
        inner.raw.run("INSERT INTO probe VALUES (2)")
        raise RuntimeError("both units fail")
    assert count(yard) == 0
    with store.write() as outer, store.write() as inner:
        inner.conn.execute(sa.insert(probe).values(n=1))
        inner.raw.run("INSERT INTO probe VALUES (2)")
        outer.raw.run("INSERT INTO probe VALUES (3)")
    assert count(yard) == 3


def test_a_statement_sees_the_units_snapshot_rules(yard: Yard) -> None:
    """Inside a unit the statements share its transaction: a row it wrote is visible
    to its next statement and to nobody else until it commits."""
    store = yard.store
    with store.write() as tx:
        tx.raw.run("INSERT INTO probe VALUES (1)")
        assert tx.raw.first("SELECT count(*) FROM probe") == (1,)
        assert tx.raw.first("SELECT txid_current_if_assigned() IS NOT NULL") == (True,)
        with store.write() as other:  # a pooled connection: not yet committed
            assert other.raw.first("SELECT count(*) FROM probe") == (0,)
    assert count(yard) == 1
