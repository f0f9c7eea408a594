"""The submit → dispatch path (short on PostgreSQL: store/submit_pg.py, store/cycle_pg.py),
on both stores: a changed task type is seen by the next submit, even one changed through
another process's store; the job-pending event is written with the job; a cycle leaves
the planner settings as it found them; a worker's own cycle does not wake it."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import pytest
from sqlalchemy import text

from taskyard.model.errors import InvalidInput
from taskyard.model.records import JobSubmission, Outcome, Started, TaskTypeSpec
from taskyard.scheduler.cycle import run_cycle
from taskyard.store import Store, open_store
from taskyard.store.cursor import BULK_MIN_ROWS
from taskyard.store.unit import Tx
from taskyard.worker.reports import report_batch

HANDLER = "python:tests.handlers_for_tests:echo"


def spec(name: str, **policy: Any) -> TaskTypeSpec:
    return TaskTypeSpec(name, HANDLER, **policy)


def submit(store: Store, type_: str, **args: Any) -> int:
    (job_id,) = store.jobs.submit([JobSubmission(type_, dict(args))])
    return job_id


def test_a_changed_task_type_is_seen_by_the_next_submit(db_url: str) -> None:
    submitter, admin = open_store(db_url), open_store(db_url)  # two processes' stores
    try:
        admin.task_types.put(spec("t", cost=1, pools=("a",)))
        first = submitter.jobs.get(submit(submitter, "t"))
        assert first is not None and (first.cost, first.pools) == (1, ("a",))
        # Changed elsewhere once the submitter has read (and kept) it.
        admin.task_types.put(spec("t", cost=3, pools=("b", "c"), retries=2,
                                 locks=("res:{x}",)))
        second = submitter.jobs.get(submit(submitter, "t", x=7))
        assert second is not None
        assert (second.cost, second.pools, second.retries) == (3, ("b", "c"), 2)
        assert len(second.locks) == 1 and "res:7" in second.locks[0]
        # The new lock template needs its argument: refused, as without any cache.
        with pytest.raises(InvalidInput):
            submit(submitter, "t")
        admin.task_types.put(spec("t", cost=1, pools=("a",)))
        third = submitter.jobs.get(submit(submitter, "t"))
        assert third is not None and (third.cost, third.pools, third.locks) == (1, ("a",), ())
    finally:
        submitter.close()
        admin.close()


def test_a_type_changed_by_hand_with_its_timestamps_kept_is_seen_by_the_next_submit(
        db_url: str) -> None:
    """Another process's SQL (an older taskyard, an operator, two updates within one
    tick of the database clock) may change a type's row and leave ``updated_at`` as it
    was: the next submit still builds its job from the row as it is now."""
    submitter, admin = open_store(db_url), open_store(db_url)
    try:
        admin.task_types.put(spec("t", cost=1, pools=("a",)))
        first = submitter.jobs.get(submit(submitter, "t"))
        assert first is not None and (first.cost, first.retries) == (1, 0)
        with admin.engine.begin() as conn:
            changed = conn.execute(text(
                "UPDATE task_types SET cost = 4, retries = 5, pools = '[\"b\"]', "
                "updated_at = updated_at WHERE name = 't'")).rowcount
        assert changed == 1
        second = submitter.jobs.get(submit(submitter, "t"))
        assert second is not None
        assert (second.cost, second.retries, second.pools) == (4, 5, ("b",))
        # And once more unchanged: the row read afresh is the one kept from now on.
        third = submitter.jobs.get(submit(submitter, "t"))
        assert third is not None and (third.cost, third.pools) == (4, ("b",))
    finally:
        submitter.close()
        admin.close()


def test_an_unknown_type_is_refused_and_writes_nothing(store: Store) -> None:
    store.task_types.put(spec("known"))
    submit(store, "known")
    with pytest.raises(InvalidInput, match="unknown"):
        submit(store, "unknown")
    assert [j.type for j in store.jobs.list()] == ["known"]


def test_the_pending_event_is_written_with_the_job(store: Store) -> None:
    store.task_types.put(spec("t"))
    job_id = submit(store, "t", n=1)
    events = [e for e in store.events.list() if e.topic == "job-pending"]
    assert [(e.routing_key, e.payload) for e in events] == [
        ("taskyard._._._", {"job_id": job_id, "type": "t"})]


def test_a_cycle_leaves_the_planner_settings_as_it_found_them(store: Store) -> None:
    store.task_types.put(spec("t"))
    for name in ("w1", "w2"):
        store.workers.register(name, ["default"], 300, lease_seconds=60)
    # A cycle that dispatches to both workers (a statement each: the scans stay off
    # until the last), then one with nothing to place (the scans are put back before
    # the unit's next statement, by the unit's cursor or its connection alike).
    for placing, route in ((True, "raw"), (False, "raw"), (False, "conn")):
        if placing:
            store.jobs.submit([JobSubmission("t", {"i": i}) for i in range(600)])
        with store.write() as tx:
            with tx.cycle() as cycle:
                assert cycle is not None
                report = run_cycle(cycle, record=False)
            assert len(report.placed) == (600 if placing else 0)
            if store.backend == "sqlite":
                continue

            def read(sql: str, tx: Tx = tx, route: str = route) -> object:
                if route == "raw":
                    (value,) = tx.raw.first(sql) or (None,)
                    return value
                return tx.conn.execute(text(sql)).scalar()

            # Every statement of the cycle found the jobs through an index: a
            # dispatch of half the table would otherwise be planned as a scan of
            # all of it.
            assert read("SELECT seq_scan FROM pg_stat_xact_user_tables "
                        "WHERE relid = 'jobs'::regclass") == 0
            for setting in ("enable_bitmapscan", "enable_seqscan"):
                assert read(f"SHOW {setting}") == "on"


def test_a_workers_own_cycle_places_on_it_without_waking_it(store: Store) -> None:
    store.task_types.put(spec("t"))
    worker = store.workers.register("w", ["default"], 1, lease_seconds=60).id
    first = submit(store, "t")
    with store.write() as tx, tx.cycle() as cycle:
        assert cycle is not None
        run_cycle(cycle, record=False)
    assert [j.job_id for j in store.attempts.fetch(worker).jobs] == [first]
    second = submit(store, "t")  # waits for room: placed once the first one ends
    listener = store.listener(f"worker.{worker}")
    try:
        report = report_batch(store,
            worker, [Started(first, 1, 0.0)], [Outcome(first, 1, "succeeded", 0)],
            place=lambda tx: run_cycle(tx, record=False))
        assert report.accepted == [True]
        assert [j.job_id for j in report.assignment.jobs] == [second]
        # Nothing to wake it for: the jobs came back with its report.
        assert not listener.wait(0.2)
    finally:
        listener.close()


def test_a_submit_with_no_live_worker_skips_the_cycle_and_one_with_a_worker_runs_it(
        db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no live worker the inline cycle could place nothing: the submit learns so
    from its insert and runs none (nor wakes anyone); once a worker is live, the next
    submit runs the cycle in its own transaction again and places."""
    from taskyard.api.yard import Yard

    yard = Yard(db_url)
    try:
        yard.add_task_type("t", HANDLER)
        store = yard.store
        waiting = [yard.submit("t", {"i": 0})]
        # Units of work counted where the store opens them (a cycle after the insert
        # would be a second one); PostgreSQL's lone insert commits by itself, with no
        # COMMIT of its own to observe.
        units: list[None] = []
        opened = store.write

        def counted() -> AbstractContextManager[Tx]:
            units.append(None)
            return opened()

        monkeypatch.setattr(store, "write", counted)
        waiting += [yard.submit("t", {"i": i}) for i in (1, 2)]
        with store.submit([JobSubmission("t", {"i": 3})]) as submitted:
            assert submitted.cycle is None  # no live worker: no cycle to run
        waiting += submitted.ids
        assert len(units) == 3  # one transaction per submit
        monkeypatch.undo()
        assert [store.jobs.get(j).state for j in waiting] == ["pending"] * 4  # type: ignore[union-attr]
        pending = [e.payload["job_id"] for e in store.events.list()
                   if e.topic == "job-pending"]
        assert pending == waiting  # each written with its event
        # A unique key is looked up first, with no worker too.
        keyed = yard.submit("t", {"i": 9}, unique_key="k")
        assert yard.submit("t", {"i": 9}, unique_key="k") == keyed
        waiting.append(keyed)
        worker = store.workers.register("w", ["default"], 10, lease_seconds=60).id
        placed = yard.submit("t", {"i": 3})
        # That submit's own cycle placed it, and the jobs that waited for a worker.
        assert sorted(j.job_id for j in store.attempts.fetch(worker).jobs) == [
            *waiting, placed]
    finally:
        yard.close()


def test_a_bulk_submit_refused_past_its_first_thousand_jobs_writes_nothing(
        store: Store) -> None:
    """A bulk's rows are built as they are written (PostgreSQL streams them into its
    ``COPY``): a refusal midway still leaves nothing, names the job, and the store
    takes the next batch."""
    store.task_types.put(spec("t"))
    subs = [JobSubmission("t", {"i": i}) for i in range(BULK_MIN_ROWS + 300)]
    subs[BULK_MIN_ROWS + 200] = JobSubmission("t", {"i": float("nan")})
    with pytest.raises(InvalidInput, match=f"job {BULK_MIN_ROWS + 200}: args"):
        store.jobs.submit(subs)
    assert store.jobs.list() == [] and store.events.list() == []
    ids = store.jobs.submit([JobSubmission("t", {"i": i}) for i in range(BULK_MIN_ROWS + 1)])
    assert ids == sorted(ids) and len(set(ids)) == BULK_MIN_ROWS + 1


@pytest.mark.parametrize("first_traced", [0, 1])
def test_a_bulk_submit_announces_each_job_in_order_with_its_own_values(
        store: Store, first_traced: int) -> None:
    """Every job of a bulk gets its ``job-pending`` event, in the order of the ids, and
    each row its own values: a trace context on some rows only, a routing of its own."""
    store.task_types.put(spec("t"))
    store.task_types.put(spec("u"))
    n = BULK_MIN_ROWS + 5
    subs = [JobSubmission("u" if i % 3 else "t", {"i": i}, routing="r.x" if i == 7 else "",
                          trace_context="00-" + "1" * 32 + "-" + "2" * 16 + "-01"
                          if i % 2 == first_traced else None) for i in range(n)]
    ids = store.jobs.submit(subs)
    events = [e for e in store.events.list(limit=2 * n) if e.topic == "job-pending"]
    assert [e.payload for e in events] == [
        {"job_id": job_id, "type": sub.type} for job_id, sub in zip(ids, subs, strict=True)]
    assert events[7].routing_key == "taskyard._.r.x"
    for i in (0, 1, 7, n - 1):
        job = store.jobs.get(ids[i], attempts=False)
        assert job is not None and (job.type, job.args, job.trace_context) == (
            subs[i].type, {"i": i}, subs[i].trace_context)
