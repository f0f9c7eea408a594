"""PostgreSQL: the cycle's round trips, seen on the wire through libpq's trace. With no
wake-up to send, its planner settings are put back only when the unit runs another
statement (``Cursor.restore``): a cycle that ends its unit leaves them to the commit.
Either way, no later statement, in the unit or after it, runs with them. A scheduler's
cycle asks whether maintenance has work and makes its first reads in one statement,
and dispatches to every worker in one more, with no pipeline while it holds the lock."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import text
from tests.store.test_pipeline_whole import lane_connection, round_trips, traced
from tests.submitting import yard_with_type

from taskyard.api.yard import Yard
from taskyard.model.records import JobSubmission, Outcome, Started
from taskyard.scheduler.cycle import run_cycle
from taskyard.store.clock import MovableClock
from taskyard.store.transitions.cycle import cycles_run
from taskyard.worker.reports import report_batch

SCANS_ON = "'enable_seqscan', 'on'"
"""What the statement that puts the cycle's settings back says (postgresql/cycle.py)."""


@pytest.fixture
def yard(pg_url: str, clock: MovableClock) -> Iterator[Yard]:
    with yard_with_type(pg_url, clock) as y:
        yield y


def _settings(yard: Yard) -> tuple[Any, ...]:
    with yard.store.read() as tx:
        return tuple(tx.conn.execute(text(f"SHOW {name}")).scalar()
                     for name in ("enable_seqscan", "enable_bitmapscan", "plan_cache_mode"))


DEFAULTS = ("on", "on", "auto")


def _began_with_the_first_statement(trace: list[str]) -> bool:
    """The unit's first round trip sent its BEGIN and a statement after it (in one
    pipeline, or as one simple-protocol message)."""
    first: list[str] = []
    for line in trace:
        if line.startswith("B"):
            break
        if "\tParse\t" in line or "\tQuery\t" in line:
            first.append(line)
    return (len(first) >= 2 and '"BEGIN"' in first[0]) or (
        len(first) == 1 and '\tQuery\t "BEGIN; ' in first[0])


def _lock_sent_with_its_sync(trace: list[str]) -> bool:
    """Every statement that tries the cycle's lock is a simple-protocol Query: one message
    the server ends as a Sync, never a pipeline's statement that waits for one (a client
    frozen there would keep the lock: postgresql/cycle_lock.py:take_lock)."""
    tries = [line for line in trace
             if line.startswith("F") and "pg_try_advisory_xact_lock" in line]
    return bool(tries) and all("\tQuery\t" in line for line in tries)


def _lock_ends_with_its_sync(trace: list[str]) -> bool:
    """The statement that tries the cycle's lock ends with a Sync of its own: a
    simple-protocol Query, or an Execute whose next message is a Sync (the reads it
    sends after it in the same round trip: postgresql/cycle_lock.py)."""
    sent = [line for line in trace if line.startswith("F")]
    tries = [n for n, line in enumerate(sent) if "pg_try_advisory_xact_lock" in line]
    if not tries:
        return False
    for n in tries:
        if "\tQuery\t" in sent[n]:
            continue
        execute = next(k for k in range(n, len(sent)) if "\tExecute\t" in sent[k])
        if execute + 1 >= len(sent) or "\tSync" not in sent[execute + 1]:
            return False
    return True


def _no_pipeline(trace: list[str]) -> bool:
    """Every Execute the client sends is followed by its Sync before the next Parse,
    Bind or Execute: no statement waits on the server for a later one's Sync."""
    waiting = False
    for line in trace:
        if not line.startswith("F"):
            continue
        if "\tExecute\t" in line:
            if waiting:
                return False
            waiting = True
        elif "\tSync" in line:
            waiting = False
    return True


HOUR = 3600.0
"""Maintenance at most this often: the traced cycles, after a first one, do none."""


def test_a_cycle_with_nothing_to_place_is_three_round_trips(yard: Yard) -> None:
    store = yard.store
    store.workers.register("w", ["default"], 2, lease_seconds=300)
    dbapi = lane_connection(yard)

    def cycle() -> Any:
        with store.cycle() as tx:
            assert tx is not None
            return run_cycle(tx, record=False, maintenance_every=HOUR)

    cycle()  # its maintenance is due
    report, trace = traced(dbapi, cycle)
    assert report.placed == []
    # BEGIN and the lock (one pipeline: postgresql/rows.py:pipelined_cursors); the
    # reads; COMMIT (the settings end with it).
    assert round_trips(trace) == 3, "\n".join(trace)
    assert _began_with_the_first_statement(trace), "\n".join(trace)
    assert _lock_sent_with_its_sync(trace), "\n".join(trace)
    assert not any(SCANS_ON in line for line in trace), "\n".join(trace)
    assert _settings(yard) == DEFAULTS


def test_a_report_that_places_nothing_is_three_round_trips(yard: Yard) -> None:
    store = yard.store
    worker = store.workers.register("w", ["default"], 1, lease_seconds=300).id
    job_id = yard.submit("t")  # placed on the worker by its submit
    dbapi = lane_connection(yard)
    with store.cycle() as cycle:  # its maintenance is due
        assert cycle is not None
        run_cycle(cycle, record=False, maintenance_every=HOUR)
    # The reads of a cycle without maintenance, a second time (the submit's cycle made
    # them first): psycopg prepares a statement at its second run on a connection, a
    # Parse of its own outside a pipeline (postgresql/engine.py). The report's runs them
    # prepared, as every report after the first few does.
    with store.cycle() as cycle:
        assert cycle is not None
        run_cycle(cycle, record=False, maintenance_every=HOUR)

    def report() -> Any:
        return report_batch(store, worker, [Started(job_id, 1, 0.0)],
                            [Outcome(job_id, 1, "succeeded", 0)],
                            place=lambda tx: run_cycle(tx, record=False,
                                                       maintenance_every=HOUR))

    done, trace = traced(dbapi, report)
    assert done.accepted == [True]
    assert done.cycle is not None and done.cycle.placed == []
    # BEGIN with the end (its start in it) and its edges; the lock and, after its Sync,
    # the reads; the events with the COMMIT. The reads used to take a round trip alone.
    assert round_trips(trace) == 3, "\n".join(trace)
    assert _began_with_the_first_statement(trace), "\n".join(trace)
    assert _lock_ends_with_its_sync(trace), "\n".join(trace)
    assert not any(SCANS_ON in line for line in trace), "\n".join(trace)
    assert store.jobs.get(job_id).state == "succeeded"  # type: ignore[union-attr]
    assert _settings(yard) == DEFAULTS


def test_a_hand_off_in_a_chain_reads_the_dependent_with_the_end(yard: Yard) -> None:
    """A report that ends a link of a chain and places the next one here: the next
    link's row is read (and locked) in the end's round trip, not by a statement of the
    release's own (postgresql/attempts.py:_WAITING)."""
    store = yard.store
    worker = store.workers.register("w", ["default"], 1, lease_seconds=300).id
    graph = yard.submit_graph({"tasks": {"a": {"type": "t"},
                                         "b": {"type": "t", "requires": ["a"]}}})
    found = store.graphs.get(graph)
    ids = {job.label: job.id for job in found.jobs}
    (job,) = store.attempts.fetch(worker).jobs
    assert job.job_id == ids["a"]
    dbapi = lane_connection(yard)

    def report() -> Any:
        return report_batch(store, worker, [Started(job.job_id, job.attempt, 0.0)],
                            [Outcome(job.job_id, job.attempt, "succeeded", 0)],
                            place=lambda tx: run_cycle(tx, record=False,
                                                       maintenance_every=HOUR))

    done, trace = traced(dbapi, report)
    assert [j.job_id for j in done.assignment.jobs] == [ids["b"]]
    sent = [line for line in trace if line.startswith("F")]
    assert any("CROSS JOIN LATERAL" in line for line in sent), "\n".join(trace)
    assert not any('"SELECT id, unmet_deps' in line for line in sent), "\n".join(trace)
    # BEGIN with the end, its edges and the dependent; the dependent's release; the lock
    # and the reads; the dispatch (with the events); the graph's count; COMMIT.
    assert round_trips(trace) == 6, "\n".join(trace)
    assert _lock_ends_with_its_sync(trace), "\n".join(trace)


def test_a_statement_after_the_cycle_runs_with_the_settings_put_back(yard: Yard) -> None:
    store = yard.store
    store.workers.register("w", ["default"], 1, lease_seconds=300)
    for route in ("raw", "conn"):
        with store.write() as tx:
            with tx.cycle() as cycle:
                assert cycle is not None
                assert run_cycle(cycle, record=False, maintenance_every=HOUR).placed == []
            if route == "raw":
                found = tx.raw.all("SELECT current_setting('enable_seqscan'), "
                                   "current_setting('enable_bitmapscan')")
            else:
                found = [tuple(tx.conn.execute(text(
                    "SELECT current_setting('enable_seqscan'), "
                    "current_setting('enable_bitmapscan')")).one())]
        assert found == [("on", "on")], route
    # The cycle's reads ahead were its own: a job submitted now is placed as ever.
    job_id = yard.submit("t")
    assert store.jobs.get(job_id).state == "dispatched"  # type: ignore[union-attr]
    assert store.jobs.get(job_id).worker == "w"  # type: ignore[union-attr]


def test_a_batch_with_no_worker_is_four_round_trips(yard: Yard) -> None:
    yard.submit_many("t", [{"n": n} for n in range(1000)])  # the statements prepared
    dbapi = lane_connection(yard)
    ids, trace = traced(dbapi, lambda: yard.submit_many("t", [{"n": n} for n in range(1000)]))
    # BEGIN with the ids and the events (the task type is the driver's, checked there);
    # the COPY, then its rows; the COMMIT.
    assert round_trips(trace) == 4, "\n".join(trace)
    assert _began_with_the_first_statement(trace), "\n".join(trace)
    assert len(ids) == 1000
    assert {yard.store.jobs.get(i).state for i in ids[::250]} == {"pending"}  # type: ignore[union-attr]


def test_a_schedulers_cycle_that_maintains_and_places_on_three_workers_is_five_round_trips(
        yard: Yard) -> None:
    store = yard.store
    for name in ("a", "b", "c"):
        store.workers.register(name, ["default"], 2, lease_seconds=300)
    store.jobs.submit([JobSubmission("t", {"n": n}) for n in range(6)])  # pending
    dbapi = lane_connection(yard)
    counted = cycles_run(store)

    def cycle() -> Any:
        with store.cycle() as tx:
            assert tx is not None
            return run_cycle(tx, holder="s", maintenance_every=0.0)

    report, trace = traced(dbapi, cycle)
    assert len(report.placed) == 6
    assert {p.worker_id for p in report.placed} == {w.id for w in store.workers.list()}
    # BEGIN and the lock (one message); the maintenance's question and the reads (one
    # statement); the dispatch to the three workers (one statement); the cycle's count;
    # COMMIT. The question and the reads used to take a round trip each, and each
    # worker's dispatch a statement of a pipeline.
    assert round_trips(trace) == 5, "\n".join(trace)
    assert _lock_sent_with_its_sync(trace), "\n".join(trace)
    # With the lock held, no pipeline whose statements reach the server before its Sync:
    # frozen there, the scheduler would keep the lock (postgresql/cycle_lock.py:take_lock).
    assert _no_pipeline(trace), "\n".join(trace)
    assert sum("pg_try_advisory_xact_lock" in line for line in trace if line.startswith("F")) == 1
    assert sum("UPDATE jobs SET state = 'dispatched'" in line for line in trace
               if line.startswith("F") and "\tParse\t" in line) <= 1
    assert cycles_run(store) == counted + 1
    assert _settings(yard) == DEFAULTS
