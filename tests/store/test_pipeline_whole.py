"""PostgreSQL: a pipeline that is its unit's whole transaction (postgresql/rows.py:
pipelined with ``commit`` on a unit not yet begun) goes to the server in one round trip
— psycopg would otherwise send its ``BEGIN`` alone first and wait for the answer —
and stays all or nothing. Seen on the wire through libpq's trace of the connection.
Likewise a lone submit while no worker is live: one statement in autocommit, whose
switch (postgresql/rows.py:autocommit) sets psycopg's flag without its setter's check
for an open transaction, which the switch makes itself."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from tests.store.test_submit_shortcuts import idle_queue
from tests.submitting import state, yard_with_type

from taskyard.api.yard import Yard
from taskyard.model.records import TaskTypeSpec
from taskyard.store.clock import MovableClock
from taskyard.store.postgresql import jobs as pg_jobs
from taskyard.store.postgresql.rows import autocommit, pipelined


@pytest.fixture
def yard(pg_url: str, clock: MovableClock) -> Iterator[Yard]:
    with yard_with_type(pg_url, clock) as y:
        yield y


def lane_connection(yard: Yard) -> Any:
    """The psycopg connection of the store's lane (its units of work one at a time)."""
    with yard.store.write() as tx:
        return tx.raw.dbapi


def round_trips(trace: list[str]) -> int:
    """Times the client sent after the server had answered (libpq trace lines: ``F``
    from the client, ``B`` from the server)."""
    turns, last = 0, "B"
    for line in trace:
        side = line.split("\t", 1)[0]
        if side == "F" and last == "B":
            turns += 1
        last = side if side in ("F", "B") else last
    return turns


def traced(dbapi: Any, action: Any) -> tuple[Any, list[str]]:
    with tempfile.TemporaryFile("w+") as out:
        dbapi.pgconn.trace(out.fileno())
        dbapi.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            found = action()
        finally:
            dbapi.pgconn.untrace()
        out.seek(0)
        return found, out.read().splitlines()


def test_a_submit_placed_by_its_own_pipeline_is_one_round_trip(
        yard: Yard, monkeypatch: pytest.MonkeyPatch) -> None:
    placed: list[bool] = []
    original = pg_jobs.insert_jobs

    def recorded(*args: Any, **kwargs: Any) -> Any:
        found = original(*args, **kwargs)
        placed.append(found.placed)
        return found

    monkeypatch.setattr(pg_jobs, "insert_jobs", recorded)
    idle_queue(yard)
    dbapi = lane_connection(yard)
    job_id, trace = traced(dbapi, lambda: yard.submit("t", {"n": 1}))
    assert placed[-1], "the submit was not placed by its pipeline"
    assert round_trips(trace) == 1, "\n".join(trace)
    assert not any('"BEGIN"' in line for line in trace)  # the Sync is its transaction
    assert yard.store.jobs.get(job_id).state == "dispatched"  # type: ignore[union-attr]
    assert dbapi.autocommit is False


def test_a_whole_pipeline_that_fails_writes_nothing(yard: Yard) -> None:
    store = yard.store
    with store.write() as tx:
        tx.raw.run("CREATE TABLE probe (n integer)")
    with pytest.raises(psycopg.errors.DivisionByZero), store.write() as tx:
        pipelined(tx.raw, [("INSERT INTO probe VALUES (1)", {}),
                           ("SELECT 1 / (SELECT count(*) - 1 FROM probe)", {}),
                           ("INSERT INTO probe VALUES (2)", {})], commit=True)
    with store.write() as tx:
        assert tx.raw.first("SELECT count(*) FROM probe") == (0,)
        assert tx.raw.dbapi.autocommit is False
        found = pipelined(tx.raw, [("INSERT INTO probe VALUES (3) RETURNING n", {}),
                                   ("SELECT count(*) FROM probe", {})], commit=True)
    assert found == [[(3,)], [(1,)]]
    with store.read() as tx:
        assert tx.raw.first("SELECT count(*) FROM probe") == (1,)


def test_a_pipeline_in_a_begun_transaction_leaves_it_to_its_unit(yard: Yard) -> None:
    """With the transaction begun, ``commit`` sends its COMMIT in the pipeline, and
    without it the unit's later statements and its end still belong to it."""
    store = yard.store
    with store.write() as tx:
        tx.raw.run("CREATE TABLE probe (n integer)")
    with pytest.raises(RuntimeError), store.write() as tx:
        tx.raw.run("INSERT INTO probe VALUES (1)")
        pipelined(tx.raw, [("INSERT INTO probe VALUES (2)", {})])
        raise RuntimeError("the unit fails after its pipeline")
    with store.write() as tx:
        assert tx.raw.first("SELECT count(*) FROM probe") == (0,)
        tx.raw.run("INSERT INTO probe VALUES (1)")
        pipelined(tx.raw, [("INSERT INTO probe VALUES (2)", {})], commit=True)
    with store.read() as tx:
        assert tx.raw.first("SELECT count(*) FROM probe") == (2,)


def test_the_switch_is_psycopgs_own_autocommit(yard: Yard) -> None:
    with yard.store.write() as tx:
        dbapi = tx.raw.dbapi
        assert dbapi.autocommit is False
        with autocommit(tx.raw):
            assert dbapi.autocommit is True  # psycopg's getter reads what the block set
            tx.raw.all("SELECT 1")
            assert dbapi.pgconn.transaction_status == 0  # IDLE: no transaction was begun
        assert dbapi.autocommit is False
        tx.raw.all("SELECT 1")
        assert dbapi.pgconn.transaction_status == 2  # INTRANS: the unit's own again


def test_the_switch_is_refused_once_the_unit_has_begun(yard: Yard) -> None:
    with yard.store.write() as tx:
        tx.raw.all("SELECT 1")
        with pytest.raises(RuntimeError, match="has begun"), autocommit(tx.raw):
            pass
        assert tx.raw.dbapi.autocommit is False


@pytest.fixture
def alone(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """What each lone insert in autocommit (postgresql/jobs.py:_alone) gave."""
    found: list[int | None] = []
    original = pg_jobs._alone

    def recorded(*args: Any) -> int | None:
        found.append(original(*args))
        return found[-1]

    monkeypatch.setattr(pg_jobs, "_alone", recorded)
    return found


def test_a_lone_submit_with_no_worker_is_one_round_trip(
        yard: Yard, alone: list[int | None]) -> None:
    yard.submit("t")  # finds no live worker: the next goes alone
    dbapi = lane_connection(yard)
    job_id, trace = traced(dbapi, lambda: yard.submit("t", {"n": 2}))
    assert alone == [job_id]
    assert round_trips(trace) == 1, "\n".join(trace)
    assert not any('"BEGIN"' in line or '"COMMIT"' in line for line in trace), trace
    assert dbapi.autocommit is False
    assert state(yard.store, job_id) == ("pending", 0, None)


def test_a_first_submit_of_a_type_with_no_worker_reads_the_type_and_goes_alone(
        yard: Yard, alone: list[int | None]) -> None:
    """The type is read in autocommit too (its insert is guarded by the version read):
    two round trips, not a ``BEGIN``, the read, the insert and a ``COMMIT``."""
    yard.submit("t")  # finds no live worker: the next goes alone
    # Two types' first submits before: psycopg prepares a statement at its second run
    # on a connection, a Parse of its own outside a pipeline (postgresql/engine.py). The
    # read of a type and the insert alone then run prepared, as from a process's third
    # type on.
    for name in ("v", "w"):
        yard.store.task_types.put(TaskTypeSpec(name, "shell:true"))
        yard.submit(name)
    yard.store.task_types.put(TaskTypeSpec("u", "shell:true"))  # not yet read by a submit
    alone.clear()
    dbapi = lane_connection(yard)
    job_id, trace = traced(dbapi, lambda: yard.submit("u"))
    assert alone == [job_id]
    assert round_trips(trace) == 2, "\n".join(trace)
    assert not any('"BEGIN"' in line or '"COMMIT"' in line for line in trace), trace
    assert dbapi.autocommit is False
    assert state(yard.store, job_id) == ("pending", 0, None)
    # A type changed after it was read: the insert writes nothing, the type is read
    # again in the unit's transaction, and the job is made as the new type says.
    yard.store.task_types.put(TaskTypeSpec("u", "shell:false", cost=2))
    changed = yard.submit("u")
    assert yard.store.jobs.get(changed).cost == 2  # type: ignore[union-attr]
