"""A worker's report releases the dependents of the jobs it ends. On PostgreSQL a report
of a few ends reads and locks their waiting dependents in the same round trip as the
ends (postgresql/attempts.py: _WAITING); the release decides from those rows. These
cases run on both stores: what is released, and only once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.submitting import pending_events, yard_with_type

from taskyard.api.yard import Yard
from taskyard.model.records import Outcome, Started
from taskyard.scheduler.cycle import run_cycle
from taskyard.store.clock import MovableClock
from taskyard.store.postgresql.attempts import WAITING_MOST
from taskyard.worker.reports import report_batch


@pytest.fixture
def yard(db_url: str, clock: MovableClock) -> Iterator[Yard]:
    with yard_with_type(db_url, clock) as y:
        yield y


def _ids(yard: Yard, graph_id: int) -> dict[str, int]:
    graph = yard.store.graphs.get(graph_id)
    return {job.label: job.id for job in graph.jobs if job.label is not None}


def _state(yard: Yard, job_id: int) -> str:
    job = yard.store.jobs.get(job_id)
    assert job is not None
    return job.state


def _end(yard: Yard, worker: int, outcomes: dict[int, str]) -> list[bool]:
    """One report that starts and ends the jobs of ``outcomes`` (dispatched here)."""
    store = yard.store
    jobs = {j.job_id: j for j in store.attempts.fetch(worker).jobs}
    assert set(outcomes) <= set(jobs), (outcomes, jobs)
    done = report_batch(store, worker, [Started(j, jobs[j].attempt, 0.001) for j in outcomes],
                        [Outcome(j, jobs[j].attempt, state, 0 if state == "succeeded" else 1)
                         for j, state in outcomes.items()])
    return done.accepted


def _join(yard: Yard) -> tuple[int, dict[str, int]]:
    """A worker, and a graph whose ``c`` requires ``a`` and ``b``, both dispatched there."""
    worker = yard.store.workers.register("w", ["default"], 4, lease_seconds=300).id
    graph = yard.submit_graph({"tasks": {"a": {"type": "t"}, "b": {"type": "t"},
                                         "c": {"type": "t", "requires": ["a", "b"]}}})
    ids = _ids(yard, graph)
    run_cycle_until_placed(yard, [ids["a"], ids["b"]])
    return worker, ids


def test_a_report_that_ends_both_parents_of_a_join_releases_it_once(yard: Yard) -> None:
    worker, ids = _join(yard)
    assert _end(yard, worker, {ids["a"]: "succeeded", ids["b"]: "succeeded"}) == [True, True]
    assert _state(yard, ids["c"]) == "pending"
    assert pending_events(yard.store, ids["c"]) == 1


def test_a_join_with_one_parent_ended_stays_waiting(yard: Yard) -> None:
    worker, ids = _join(yard)
    assert _end(yard, worker, {ids["a"]: "succeeded"}) == [True]
    assert _state(yard, ids["c"]) == "waiting"
    assert _end(yard, worker, {ids["b"]: "succeeded"}) == [True]
    assert _state(yard, ids["c"]) == "pending"
    assert pending_events(yard.store, ids["c"]) == 1


def test_a_retried_parent_leaves_its_dependent_waiting_beside_a_released_one(
        yard: Yard) -> None:
    """Both ends in one report: the retried one's dependent is read with the ends (and
    locked) but not changed; the other's is released."""
    store = yard.store
    worker = store.workers.register("w", ["default"], 4, lease_seconds=300).id
    graph = yard.submit_graph({"tasks": {"a": {"type": "t", "reruns": 1}, "b": {"type": "t"},
                                         "c": {"type": "t", "requires": ["a"]},
                                         "d": {"type": "t", "requires": ["b"]}}})
    ids = _ids(yard, graph)
    run_cycle_until_placed(yard, [ids["a"], ids["b"]])
    assert _end(yard, worker, {ids["a"]: "failed", ids["b"]: "succeeded"}) == [True, True]
    assert _state(yard, ids["a"]) == "pending"  # its retry
    assert _state(yard, ids["c"]) == "waiting"
    assert _state(yard, ids["d"]) == "pending"


def test_a_root_with_more_dependents_than_a_report_locks_releases_them_all(
        yard: Yard) -> None:
    """More waiting dependents than the report reads with its ends: the release locks
    them itself, in chunks, as before."""
    store = yard.store
    worker = store.workers.register("w", ["default"], 1, lease_seconds=300).id
    members = WAITING_MOST + 20
    graph = yard.submit_graph({"tasks": {"root": {"type": "t"}, **{
        f"m{n}": {"type": "t", "requires": ["root"]} for n in range(members)}}})
    ids = _ids(yard, graph)
    run_cycle_until_placed(yard, [ids["root"]])
    assert _end(yard, worker, {ids["root"]: "succeeded"}) == [True]
    states = [_state(yard, ids[f"m{n}"]) for n in range(members)]
    assert states.count("pending") == members, {s: states.count(s) for s in set(states)}


def run_cycle_until_placed(yard: Yard, jobs: list[int]) -> None:
    """The jobs dispatched (by their submit's cycle, or by one run here)."""
    if any(_state(yard, j) != "dispatched" for j in jobs):
        with yard.store.cycle() as cycle:
            assert cycle is not None
            run_cycle(cycle, record=False)
    assert [_state(yard, j) for j in jobs] == ["dispatched"] * len(jobs)
