"""PostgreSQL checks a dispatched job's foreign key to its worker (``jobs.worker_id``;
its attempt's references the dispatch checks itself, see postgresql/references.py) with
a query per row, run as the dispatch statement ends. The
cycle's transaction keeps generic plans to its end (postgresql/cycle.py:SCANS_OFF), so
that query is planned once per connection.

When the cycle's last dispatch statement put ``plan_cache_mode`` back to ``auto`` with
the scans, the checks it ran (after that) were planned afresh at each row. In ``auto``,
PostgreSQL takes a statement's generic plan only while it is cheaper than its custom
plans. That plan had been made by a dispatch statement before the last, with the scans
off (an index scan); a custom plan with the scans on is a sequential scan of the one page
of ``workers``, cheaper. In W1's drain that was 14,000 plans for 20,000 checks, and the
dispatch's server time per job went from 32 to 40 µs (issue 37, item 7). Counted in
``pg_stat_statements``: plans, not timings.

A worker's report that ends jobs keeps generic plans too, from its first statement
(postgresql/attempts.py:_END): the release of the jobs' dependents that follows was
planned afresh at each report. So does a submit that finds the cycle's lock held elsewhere
(postgresql/cycle.py:LOCK_AHEAD): what it pipelined after its insert was."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from tests.submitting import yard_with_type

from taskyard.api.yard import Yard
from taskyard.model.records import Outcome, Started
from taskyard.scheduler.cycle import run_cycle, schedule
from taskyard.store.clock import MovableClock
from taskyard.store.postgresql.cycle import ADVISORY_KEY
from taskyard.worker.reports import report_batch

JOBS = 240
SLOTS = 40
"""Each worker's slots."""

CHECKS = "SELECT % FROM ONLY \"public\".\"workers\" x WHERE \"id\" OPERATOR(pg_catalog.=) %"


@pytest.fixture
def counted(pg_url: str) -> str:
    """``pg_url`` with pg_stat_statements counting nested statements and their plans
    for its connections (set on the database: the cluster's other tests are not
    counted, and it ends with the database)."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        loaded = conn.execute("SHOW shared_preload_libraries").fetchone()
        if loaded is None or "pg_stat_statements" not in loaded[0]:
            pytest.skip("pg_stat_statements is not loaded (scripts/pg-cluster loads it)")
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        database = conn.execute("SELECT current_database()").fetchone()
        assert database is not None
        for setting, value in (("track", "all"), ("track_planning", "on")):
            conn.execute(f"ALTER DATABASE {database[0]} SET pg_stat_statements.{setting} "
                         f"= '{value}'")
    return pg_url


@pytest.fixture
def yard(counted: str, clock: MovableClock) -> Iterator[Yard]:
    with yard_with_type(counted, clock) as y:
        yield y


def _plans(url: str, like: str) -> tuple[int, int]:
    """(runs, plans) of the statements like ``like`` in this database."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT COALESCE(sum(calls), 0), COALESCE(sum(plans), 0) FROM pg_stat_statements "
            "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "AND query LIKE %s", (like,)).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def test_a_dispatchs_worker_checks_are_planned_once(yard: Yard, counted: str) -> None:
    store = yard.store
    ours, other = (store.workers.register(name, ["default"], SLOTS, lease_seconds=300).id
                   for name in ("ours", "other"))
    with psycopg.connect(counted, autocommit=True) as conn:
        # As autovacuum soon would: the planner then knows workers for the one page it
        # is, where a sequential scan is the cheapest custom plan of a check.
        conn.execute("ANALYZE workers")
    # Placed on both workers by the submit's cycle: two dispatch statements, the first
    # with the cycle's settings (its checks get their generic plan then), the second
    # putting the scans back.
    yard.submit_many("t", [{"n": n} for n in range(JOBS)])
    assert store.attempts.fetch(other).jobs
    done = 0
    for _ in range(JOBS):
        jobs = store.attempts.fetch(ours).jobs
        if not jobs:
            break
        # As the worker daemon reports: the starts and ends of a batch, and the cycle,
        # placing on this worker (its last dispatch statement), in one transaction.
        report_batch(store, ours, [Started(j.job_id, j.attempt) for j in jobs],
                     [Outcome(j.job_id, j.attempt, "succeeded", 0) for j in jobs],
                     place=lambda tx: run_cycle(tx, record=False))
        done += len(jobs)
    assert done >= JOBS // 2
    runs, plans = _plans(counted, CHECKS)
    # A check per dispatched job (its row; until migration 0019 its attempt's too), the
    # query planned once per connection that ran a cycle. Before, 402 plans in 480
    # checks: each check after the scans went back on was planned afresh.
    assert runs >= done, (runs, plans)
    assert plans <= 20, f"the worker's foreign-key checks were planned {plans} times in {runs}"


LINKS = 60
RELEASE = ("SELECT job_id, requires_id, condition FROM dependencies%",
           "SELECT j.id, j.unmet_deps, j.dep_failures, j.convergence, j.kind FROM (%",
           "UPDATE jobs SET unmet_deps = %")
"""The statements of a report that release an ended job's dependents (its edges, the
dependents' rows, read and locked with the end: postgresql/attempts.py:_WAITING, their
update)."""



def test_a_reports_release_of_dependents_keeps_its_generic_plans(
        yard: Yard, counted: str) -> None:
    """A chain: each report ends one job and releases the next (postgresql/attempts.py:
    _END, then GENERIC_PLANS). In ``auto`` mode PostgreSQL planned the release's three
    statements afresh at each report — for ``id = ANY($1)`` a custom plan, which knows
    the array has one element, always looked cheaper than the generic one: 115 µs of
    planning a hand-off, 5 % of a chain link (bench.graphs, chain of 1,000)."""
    store = yard.store
    worker = store.workers.register("ours", ["default"], 4, lease_seconds=300).id
    yard.submit_graph({"tasks": {f"s{i}": {"type": "t", **({"requires": [f"s{i - 1}"]}
                                                           if i else {})}
                                 for i in range(LINKS)}})
    ended = 0
    for _ in range(2 * LINKS):
        jobs = store.attempts.fetch(worker).jobs
        if not jobs:  # the first link, if the submit's own cycle did not place it
            schedule(store)
            jobs = store.attempts.fetch(worker).jobs
            if not jobs:
                break
        # As the worker daemon reports: the ends, the dependents released, the cycle
        # placing the next link here, in one transaction.
        report_batch(store, worker, [Started(j.job_id, j.attempt) for j in jobs])
        report_batch(store, worker, ended=[Outcome(j.job_id, j.attempt, "succeeded", 0)
                                           for j in jobs],
                     place=lambda tx: run_cycle(tx, record=False))
        ended += len(jobs)
    assert ended == LINKS
    for like in RELEASE:
        runs, plans = _plans(counted, like)
        assert runs >= LINKS - 1, (like, runs)
        assert plans <= 15, f"{like!r} was planned {plans} times in {runs} runs"


ROUNDS = 30
AHEAD = "SELECT * FROM (WITH RECURSIVE lists(p)%"
DISPATCH = "WITH v(job, w, name, chan, carry)%"
"""What a submit sends in one pipeline after its insert, which tries the cycle's lock:
the cycle's first reads (postgresql/cycle.py:AHEAD_IF_HELD) or, when an earlier submit
learnt what a cycle would decide, the dispatch of its job (DISPATCH, guarded)."""


def test_submits_that_find_the_lock_held_keep_their_generic_plans(
        yard: Yard, counted: str) -> None:
    """Another scheduler's cycle holds the lock: the statements a submit pipelined after
    its insert read or change nothing, but PostgreSQL, in ``auto`` mode, planned them
    afresh at each run (the dispatch 1.8-2.2 ms a plan, the reads 1.2). In a fleet of
    10 workers at 200 submits/s (bench.fleet) that was 288 and 254 plans in 10 s. The
    insert now keeps generic plans for its transaction when the lock is not ours, as
    when it is. Here, in 90 runs of each: the reads 33 plans before, 2 after; the
    dispatch 9 before, 4 after (PostgreSQL's choice between a custom and the generic
    plan follows the costs it estimates, which differ from the fleet's): the reads are
    what this test tells apart."""
    yard.store.workers.register("ours", ["default"], 1000, lease_seconds=300)
    for n in range(ROUNDS):
        # The lock free: the first submit's cycle places what the last round left
        # pending, the second finds its job alone in the queue, and its decision is the
        # basis of the next submit (postgresql/shortcuts.py:Shortcuts.learn).
        for _ in range(2):
            yard.submit("t", {"n": n})
        with psycopg.connect(counted) as holder:  # another scheduler's cycle
            holder.execute("SELECT pg_advisory_xact_lock(%s)", (ADVISORY_KEY,))
            for _ in range(2):  # its job's dispatch, refused; then reads that read nothing
                yard.submit("t", {"n": n})
    for like in (AHEAD, DISPATCH):
        runs, plans = _plans(counted, like)
        assert runs >= ROUNDS, (like, runs)
        assert plans <= 15, f"{like!r} was planned {plans} times in {runs} runs"


CYCLES = 12
MAINTAIN_AND_READ = "SELECT * FROM (SELECT EXISTS (SELECT % FROM workers WHERE state = %"
"""A scheduler's cycle's first statement (postgresql/cycle.py:_MAINTAIN_AND_READ)."""


def test_a_cycles_statements_are_prepared_from_their_second_run(
        yard: Yard, counted: str) -> None:
    """psycopg prepares a statement from its second run on a connection
    (postgresql/engine.py): until then the server plans it at every run. A cycle's
    statements, which keep their generic plan, are planned twice on a connection (the
    first run, then the generic plan); with psycopg's default, from the sixth run, six
    times — in the fleet benchmark most of the server's planning, every daemon's
    connection planning its report's and its cycles' statements anew at their first five
    runs."""
    yard.store.workers.register("ours", ["default"], 1000, lease_seconds=300)
    for _ in range(CYCLES):
        assert schedule(yard.store) is not None
    runs, plans = _plans(counted, MAINTAIN_AND_READ)
    assert runs >= CYCLES, runs
    assert plans <= 3, f"a cycle's first statement was planned {plans} times in {runs} runs"
