"""PostgreSQL's two shortcuts inside a lone submit's insert (postgresql/jobs.py), each a
guess the driver keeps and its statement checks: placed by the insert's own pipeline
when the last cycle found the queue idle (only while, under the cycle's lock, the
snapshot still reads as it did, nothing else is pending and no maintenance has work;
otherwise pending, then placed by a cycle: ours when the lock was free, the scheduler's
when it was not), and alone in autocommit while no worker is live. Whatever the guess,
the job ends where a cycle would put it. SQLite has neither: its submit and cycle run
under its write lock."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.cycle_lock import holding_the_cycle
from tests.submitting import HANDLER, pending_events, state, yard_with_type

from taskyard.api.yard import Yard
from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.store import Store, open_store
from taskyard.store.clock import MovableClock
from taskyard.store.postgresql import jobs as pg_jobs


@pytest.fixture
def yard(db_url: str, clock: MovableClock) -> Iterator[Yard]:
    with yard_with_type(db_url, clock) as y:
        yield y


@pytest.fixture
def inserts(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What each PostgreSQL insert wrote (InsertedJobs)."""
    seen: list[Any] = []
    original = pg_jobs.insert_jobs

    def recorded(*args: Any, **kwargs: Any) -> Any:
        found = original(*args, **kwargs)
        seen.append(found)
        return found

    monkeypatch.setattr(pg_jobs, "insert_jobs", recorded)
    return seen


def idle_queue(yard: Yard, capacity: int = 2, name: str = "w") -> int:
    """A live worker, and a first submit whose cycle reads the queue idle but for its
    job; that job then ends, so that the worker is as idle as the cycle read it."""
    store = yard.store
    if store.backend == "sqlite":
        pytest.skip("SQLite's submit and cycle run under its write lock: no shortcut")
    worker = store.workers.register(name, ["default"], capacity, lease_seconds=300).id
    first = yard.submit("t")  # its cycle reads with its insert
    assert state(store, first)[0] == "dispatched"
    end(store, first)  # the worker is idle again
    return worker


def end(store: Store, job_id: int) -> None:
    with store.write() as tx:
        tx.raw.run("UPDATE jobs SET state = 'succeeded', worker_id = NULL, finished_at = 1 "
                   "WHERE id = ?", (job_id,))


def test_an_idle_queue_places_the_job_with_its_insert(yard: Yard, inserts: list[Any]) -> None:
    store = yard.store
    worker = idle_queue(yard)
    listener = store.listener(f"worker.{worker}")
    try:
        job_id = yard.submit("t", {"n": 1})
        assert listener.wait(5.0)
        carried = store.jobs_in_wakeups(listener.payloads())
    finally:
        listener.close()
    assert inserts[-1].placed and inserts[-1].ids == [job_id]
    assert state(store, job_id) == ("dispatched", 1, "w")
    job = store.jobs.get(job_id)
    assert job is not None and job.args == {"n": 1}
    assert [(a.attempt, a.state, a.worker) for a in job.attempts] == [(1, "dispatched", "w")]
    assert pending_events(store, job_id) == 1
    # The worker's wake-up carries it, as a dispatch's would.
    assert carried == store.attempts.fetch(worker).jobs
    assert [j.job_id for j in carried] == [job_id]
    with store.write() as tx:  # the connection's settings are the server's again
        assert tx.raw.first("SHOW enable_seqscan") == ("on",)


def test_each_statement_of_the_pipeline_is_converted_once(
        yard: Yard, inserts: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """psycopg converts a statement's placeholders anew at every execution when it is
    given more than 50 parameters or 4 KiB of text: each statement of the pipeline gets
    only the parameters it names (postgresql/rows.py:pipelined), and stays within both."""
    queries = pytest.importorskip("psycopg._queries")
    idle_queue(yard)
    uncached: list[bytes] = []
    original = queries._query2pg_nocache

    def recorded(query: bytes, encoding: str) -> Any:
        uncached.append(query)
        return original(query, encoding)

    monkeypatch.setattr(queries, "_query2pg_nocache", recorded)
    job_id = yard.submit("t", {"n": 1})
    assert inserts[-1].placed and inserts[-1].ids == [job_id]
    assert uncached == []


def test_a_changed_snapshot_leaves_the_job_to_the_submits_own_cycle(
        yard: Yard, inserts: list[Any]) -> None:
    store = yard.store
    idle_queue(yard, capacity=1)
    store.workers.register("w2", ["default"], 4, lease_seconds=300)  # not in what it read
    job_id = yard.submit("t")
    assert not inserts[-1].placed and inserts[-1].cycle.held
    # Inserted pending, then placed by the cycle the submit ran: on whichever worker
    # the planner picks with what it reads now.
    assert state(store, job_id)[:2] == ("dispatched", 1)
    assert pending_events(store, job_id) == 1


def test_a_busy_worker_is_given_one_job_after_another_with_their_inserts(
        yard: Yard, inserts: list[Any]) -> None:
    """The jobs placed run on: each submit finds the snapshot as the last placement left
    it (postgresql/shortcuts.py, ``ahead``), not as the cycle read it — before, every
    other submit's dispatch placed nothing and its cycle placed the job."""
    store = yard.store
    idle_queue(yard, capacity=10)
    ids = [yard.submit("t", {"n": n}) for n in range(6)]
    assert [i.placed for i in inserts[-6:]] == [True] * 6
    assert [state(store, j) for j in ids] == [("dispatched", 1, "w")] * 6


def test_a_worker_idle_between_submits_is_given_each_job_with_its_insert(
        yard: Yard, inserts: list[Any]) -> None:
    store = yard.store
    idle_queue(yard, capacity=10)
    for n in range(4):
        job_id = yard.submit("t", {"n": n})
        assert inserts[-1].placed and state(store, job_id) == ("dispatched", 1, "w")
        end(store, job_id)


def test_after_the_basis_ahead_the_idle_one_holds_again(
        yard: Yard, inserts: list[Any]) -> None:
    store = yard.store
    idle_queue(yard, capacity=10)
    running = [yard.submit("t") for _ in range(3)]
    for job_id in running:
        end(store, job_id)
    job_id = yard.submit("t")
    assert [i.placed for i in inserts[-4:]] == [True] * 4
    assert state(store, job_id) == ("dispatched", 1, "w")


def test_with_the_last_job_alone_running_the_guess_of_it_holds(
        yard: Yard, inserts: list[Any]) -> None:
    store = yard.store
    idle_queue(yard, capacity=10)
    first, second = yard.submit("t"), yard.submit("t")
    end(store, first)
    third = yard.submit("t")
    assert [i.placed for i in inserts[-3:]] == [True] * 3
    assert [state(store, j)[0] for j in (second, third)] == ["dispatched"] * 2


def test_the_guess_the_snapshot_reads_as_picks_the_worker(
        yard: Yard, inserts: list[Any]) -> None:
    """Two workers of one slot each: from each guess the planner gives the job another
    worker, and the dispatch takes the one whose text the snapshot reads as."""
    store = yard.store
    if store.backend != "sqlite":
        store.workers.register("v", ["default"], 1, lease_seconds=300)
    idle_queue(yard, capacity=1)
    first = yard.submit("t")  # both idle: the planner's first choice
    second = yard.submit("t")  # the first running: the other worker
    end(store, first)
    third = yard.submit("t")  # the second alone running: the first's worker again
    assert [i.placed for i in inserts[-3:]] == [True] * 3
    workers = [state(store, j)[2] for j in (first, second, third)]
    assert workers[0] != workers[1] and workers[2] == workers[0]


def test_the_text_ahead_is_the_databases_for_any_name_and_new_types(
        yard: Yard, inserts: list[Any]) -> None:
    """What the snapshot reads after a placement is written by the client: as
    PostgreSQL writes it (a name escaped in JSON, non-ASCII as is), or not at all (the
    first job of a type on a worker that runs another: its row's place follows the
    database's collation), when the submit's cycle places the job."""
    store = yard.store
    name = 'wörker-"ü"\\'
    idle_queue(yard, capacity=10, name=name)
    store.task_types.put(TaskTypeSpec('Ünïcode-"t"', HANDLER))
    ids = [yard.submit("t") for _ in range(2)]
    ids += [yard.submit('Ünïcode-"t"') for _ in range(2)]
    ids += [yard.submit("t") for _ in range(2)]
    # The second job of the new type finds no basis ahead, and the idle one no longer
    # holds: its cycle places it, and the next submit's (it reads afresh).
    assert [i.placed for i in inserts[-6:]] == [True, True, True, False, False, True]
    assert {state(store, j) for j in ids} == {("dispatched", 1, name)}


def test_a_pending_job_goes_first(yard: Yard, inserts: list[Any]) -> None:
    store = yard.store
    idle_queue(yard, capacity=1)
    (older,) = store.jobs.submit([JobSubmission("t", {})])  # pending, no cycle
    newer = yard.submit("t")
    assert not inserts[-1].placed
    assert state(store, older)[0] == "dispatched"  # placement order: the older first
    assert state(store, newer) == ("pending", 0, None)


def test_with_the_cycle_elsewhere_the_scheduler_is_woken(
        yard: Yard, inserts: list[Any], db_url: str) -> None:
    store = yard.store
    idle_queue(yard)
    other = open_store(db_url)
    scheduler = store.listener("scheduler")
    try:
        with holding_the_cycle(other):
            job_id = yard.submit("t")
            assert scheduler.wait(5.0)
        assert not inserts[-1].placed and inserts[-1].cycle.held is False
        assert state(store, job_id) == ("pending", 0, None)
        assert pending_events(store, job_id) == 1
        assert schedule(store) is not None
        assert state(store, job_id) == ("dispatched", 1, "w")
    finally:
        scheduler.close()
        other.close()


def test_a_job_placed_by_its_pipeline_wakes_no_scheduler(yard: Yard, inserts: list[Any]) -> None:
    """The dispatch wakes the scheduler only for a job it left pending: every wake-up
    the scheduler hears up to a sentinel sent after the submit is the sentinel."""
    store = yard.store
    idle_queue(yard)
    scheduler = store.listener("scheduler")
    try:
        scheduler.wait(0.0)  # connected (a first wait may say so)
        job_id = yard.submit("t")
        assert inserts[-1].placed and state(store, job_id) == ("dispatched", 1, "w")
        with store.write() as tx:
            tx.raw.run("SELECT pg_notify('taskyard_scheduler', 'sentinel')")
        heard: list[str] = []
        while "sentinel" not in heard:
            assert scheduler.wait(30.0), "the sentinel never came"
            heard += scheduler.payloads()
        assert heard == ["sentinel"]
    finally:
        scheduler.close()


def test_a_task_type_changed_since_it_was_read_is_read_again(
        yard: Yard, inserts: list[Any]) -> None:
    store = yard.store
    idle_queue(yard)
    store.task_types.put(TaskTypeSpec("t", HANDLER, timeout=42))
    job_id = yard.submit("t")
    job = store.jobs.get(job_id)
    assert job is not None and job.timeout == 42  # the type read afresh
    assert state(store, job_id) == ("dispatched", 1, "w")
    assert pending_events(store, job_id) == 1


def test_maintenance_with_work_leaves_the_job_to_the_submits_cycle(
        yard: Yard, inserts: list[Any]) -> None:
    store = yard.store
    idle_queue(yard, capacity=4)
    (lost,) = store.jobs.submit([JobSubmission("t", {})])
    with store.write() as tx:  # a job suspended when its worker was lost
        tx.raw.run("UPDATE jobs SET state = 'suspended' WHERE id = ?", (lost,))
    job_id = yard.submit("t")  # its insert finds the maintenance's work: no placing
    assert not inserts[-1].placed and inserts[-1].cycle.held
    assert state(store, job_id)[0] == "dispatched"


def test_a_rate_limited_type_is_placed_by_the_cycle(yard: Yard, inserts: list[Any]) -> None:
    store = yard.store
    idle_queue(yard, capacity=4)
    store.task_types.put(TaskTypeSpec("r", HANDLER, rate_limit="5/s"))
    assert schedule(store) is not None  # what it reads knows the rate limit
    job_id = yard.submit("r")
    assert not inserts[-1].placed
    assert state(store, job_id)[0] == "dispatched"


def test_with_no_live_worker_a_submit_is_one_statement_alone(
        yard: Yard, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a submit found no live worker, the next goes in alone, in autocommit (one
    statement, no transaction); with a worker live again it writes nothing and the
    submit's ordinary transaction places the job."""
    store = yard.store
    if store.backend == "sqlite":
        pytest.skip("SQLite writes under its write lock: never in autocommit")
    alone: list[int | None] = []
    original = pg_jobs._alone

    def recorded(*args: Any) -> int | None:
        found = original(*args)
        alone.append(found)
        return found

    monkeypatch.setattr(pg_jobs, "_alone", recorded)
    first = yard.submit("t")  # finds no live worker: the guess is made
    second = yard.submit("t")
    assert alone == [second]
    assert [state(store, j) for j in (first, second)] == [("pending", 0, None)] * 2
    assert [pending_events(store, j) for j in (first, second)] == [1, 1]
    store.workers.register("w", ["default"], 4, lease_seconds=300)
    third = yard.submit("t")
    assert alone == [second, None]  # a worker is live: nothing written alone
    assert state(store, third)[0] == "dispatched"
    with store.read() as tx:  # its autocommit left no session setting behind
        assert tx.raw.first("SELECT current_setting('taskyard.references_checked', true)") \
            in (None, ("",), (None,))


def test_sqlite_has_no_shortcut(store: Store) -> None:
    if store.backend != "sqlite":
        pytest.skip("PostgreSQL: see above")
    assert not hasattr(store.driver, "_shortcuts")
