"""PostgreSQL: a worker's report reads the edges from the jobs it ended in the round trip
of their ends (postgresql/attempts.py:end_attempts), as a statement of its own run after
the ends'. An end that waited for a launch's lock on its job (the launch reuses the job
in flight as a prerequisite) still sees the edge that launch committed."""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import yaml
from sqlalchemy import text
from tests.store.driver import claim, complete

from taskyard.api.yard import Yard
from taskyard.model.records import JobSubmission, Outcome
from taskyard.scheduler.cycle import schedule

AWX = Path(__file__).parents[2] / "examples" / "awx" / "taskyard.yaml"
ARGS = {"template_id": 1, "project_id": 5, "inventory_id": 1}


@pytest.fixture
def awx(pg_url: str) -> Iterator[Yard]:
    yard = Yard(pg_url, inline_cycle=False)
    yard.apply(yaml.safe_load(AWX.read_text()), verify=False)
    yield yard
    yard.close()


def _running_update(yard: Yard) -> tuple[int, int, int]:
    """A launch whose update on launch runs: (the launch, the update, the worker)."""
    store = yard.store
    worker_id = store.workers.register("big", ["default", "east"], 100, lease_seconds=300).id
    first = yard.submit("job", ARGS)
    (update,) = store.jobs.list(type="project-update")
    schedule(store)
    assert [j.job_id for j in claim(store, worker_id, 10)] == [update.id]
    return first, update.id, worker_id


def test_the_edges_go_in_the_round_trip_of_the_ends(awx: Yard) -> None:
    store = awx.store
    first, update, worker_id = _running_update(awx)
    with store.write() as tx:
        dbapi = tx.raw.dbapi
    with tempfile.TemporaryFile("w+") as out:
        dbapi.pgconn.trace(out.fileno())
        dbapi.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            assert complete(store, worker_id, [Outcome(update, 1, "succeeded", 0)]) == [True]
        finally:
            dbapi.pgconn.untrace()
        out.seek(0)
        trace = out.read().splitlines()
    sent = [line.split("\t", 1)[0] for line in trace]
    end = next(i for i, line in enumerate(trace)
               if line.startswith("F") and "done AS (UPDATE jobs SET" in line)
    edges = next(i for i, line in enumerate(trace)
                 if line.startswith("F") and "FROM dependencies" in line)
    assert end < edges and "B" not in sent[end:edges], "\n".join(trace)
    assert store.jobs.get(first).state == "pending"  # type: ignore[union-attr]


def test_an_end_that_waited_for_a_launch_sees_its_edge(awx: Yard, pg_url: str) -> None:
    store = awx.store
    first, update, worker_id = _running_update(awx)
    go, launched = threading.Event(), []
    errors: list[BaseException] = []

    def launch() -> None:  # reuses the update in flight: locks it, adds its edge, waits
        try:
            with store.write() as tx:
                launched.extend(tx.jobs.submit([JobSubmission("job", {**ARGS, "template_id": 2})]))
                assert go.wait(60)
        except BaseException as exc:
            errors.append(exc)

    def end() -> None:
        try:
            assert complete(store, worker_id, [Outcome(update, 1, "succeeded", 0)]) == [True]
        except BaseException as exc:
            errors.append(exc)

    launcher = threading.Thread(target=launch)
    launcher.start()
    deadline = time.monotonic() + 60
    while not launched and launcher.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert launched, errors
    ender = threading.Thread(target=end)
    ender.start()
    with store.engine.connect() as conn:  # the end waits for the launch's lock
        while time.monotonic() < deadline and not conn.execute(text(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock'")).scalar_one():
            conn.commit()
            time.sleep(0.01)
    go.set()
    launcher.join(60)
    ender.join(60)
    assert errors == []
    (second,) = launched
    assert store.jobs.get(update).state == "succeeded"  # type: ignore[union-attr]
    for job_id in (first, second):  # both released by the update's end
        assert store.jobs.get(job_id).state == "pending", job_id  # type: ignore[union-attr]


