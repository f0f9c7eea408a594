"""Approvals, waits and sleeps on both stores: awaiting once their parents are done, no
worker slot, decisions and signals (stored, never lost, never applied twice), timeouts
on the database clock, failure edges, retry, cancel, explain, and the events."""

from __future__ import annotations

from typing import Any

import pytest
from driver import drive

from taskyard.core.waits import Decision
from taskyard.model.errors import Conflict, InvalidInput, NotFound
from taskyard.model.records import JobRecord, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.scheduler.explain import explain_job
from taskyard.store import MovableClock, Store

RELEASE = {"tasks": {
    "build": {"type": "step"},
    "approve": {"approval": {"timeout": "1h"}, "requires": ["build"]},
    "ready": {"wait": {"signal": "deploy-ready", "key": "v2", "timeout": "30m"}},
    "settle": {"sleep": "10m", "requires": ["build"]},
    "deploy": {"type": "step", "requires": ["approve", "ready", "settle"],
               "args": {"release": {"$result": "ready"}}},
}}


def _jobs(store: Store, graph_id: int) -> dict[str, JobRecord]:
    return {j.label: j for j in store.graphs.get(graph_id).jobs if j.label}


def _states(store: Store, graph_id: int) -> dict[str, str]:
    return {label: j.state for label, j in _jobs(store, graph_id).items()}


@pytest.fixture
def typed(store: Store) -> Store:
    store.task_types.put(TaskTypeSpec("step", "shell:true"))
    return store


def test_the_contract_graph_runs_through_approval_signal_and_sleep(
        typed: Store, clock: MovableClock) -> None:
    store = typed
    graph_id = store.graphs.submit(RELEASE)
    assert _states(store, graph_id) == {"build": "pending", "approve": "waiting",
                                        "ready": "awaiting", "settle": "waiting",
                                        "deploy": "waiting"}
    ran = drive(store)
    assert [j.label for j in ran] == ["build"]  # waits never reach a worker
    jobs = _jobs(store, graph_id)
    assert (jobs["approve"].state, jobs["settle"].state) == ("awaiting", "awaiting")
    assert jobs["approve"].type is None and jobs["approve"].kind == "approval"
    assert jobs["approve"].deadline == pytest.approx(jobs["build"].finished_at + 3600, abs=5)
    assert jobs["ready"].to_json()["signal"] == {"name": "deploy-ready", "key": "v2"}
    assert (jobs["approve"].pools, jobs["approve"].cost, jobs["approve"].worker) == ((), 0, None)

    # A signal with another key completes nothing; the right one completes the wait.
    assert store.waits.signal("deploy-ready", "v1", {"tag": "old"}) == []
    assert store.waits.signal("deploy-ready", "v2", {"tag": "v2.0"}, by="ci") == [
        jobs["ready"].id]
    approved = store.waits.decide(jobs["approve"].id, Decision.APPROVED, note="ship it",
                                  by="ann")
    assert approved.state == "succeeded"
    assert approved.result == {"decision": "approved", "note": "ship it", "by": "ann"}
    assert _states(store, graph_id)["deploy"] == "waiting"  # the sleep still sleeps
    clock.advance(601)
    report = schedule(store)
    assert report is not None and report.awaited == [jobs["settle"].id]
    ran = drive(store)
    assert [j.label for j in ran] == ["deploy"]
    assert ran[0].args == {"release": {"tag": "v2.0"}}  # the signal's payload
    graph = store.graphs.get(graph_id)
    assert graph.state == "finished"
    assert _jobs(store, graph_id)["ready"].result == {"tag": "v2.0"}
    topics = [(e.topic, e.payload) for e in store.events.list(graph_id=graph_id)]
    assert ("job-completed", {"job_id": jobs["approve"].id, "kind": "approval",
                              "state": "succeeded", "decision": "approved",
                              "note": "ship it", "by": "ann"}) in topics
    assert ("job-completed", {"job_id": jobs["ready"].id, "kind": "wait",
                              "state": "succeeded", "signal": "deploy-ready", "key": "v2",
                              "by": "ci"}) in topics
    awaited = [p for t, p in topics if t == "job-awaiting"]
    assert {p["kind"] for p in awaited} == {"approval", "wait", "sleep"}


def test_a_signal_sent_before_the_wait_awaits_is_not_lost(typed: Store) -> None:
    store = typed
    graph_id = store.graphs.submit({"tasks": {
        "build": {"type": "step"},
        "ready": {"wait": {"signal": "go"}, "requires": ["build"]},
        "after": {"type": "step", "requires": ["ready"]}}})
    assert store.waits.signal("go", "any-key", [1, 2]) == []  # nothing awaits yet
    assert _states(store, graph_id)["ready"] == "waiting"
    drive(store)  # build ends: ready awaits, finds the signal, succeeds; after runs
    jobs = _jobs(store, graph_id)
    assert (jobs["ready"].state, jobs["ready"].result) == ("succeeded", [1, 2])
    assert jobs["after"].state == "succeeded"
    # Applied once: a second signal changes nothing.
    assert store.waits.signal("go", None, "again") == []
    assert _jobs(store, graph_id)["ready"].result == [1, 2]


def test_a_signal_sent_before_the_graph_does_not_count(typed: Store) -> None:
    store = typed
    store.waits.signal("early", None, "old")
    graph_id = store.graphs.submit({"tasks": {"w": {"wait": {"signal": "early"}}}})
    assert _states(store, graph_id) == {"w": "awaiting"}
    assert store.waits.signal("early", None, "new") == [_jobs(store, graph_id)["w"].id]
    assert _jobs(store, graph_id)["w"].result == "new"


def test_timeouts_fail_approvals_and_waits_and_follow_failure_edges(
        typed: Store, clock: MovableClock) -> None:
    store = typed
    graph_id = store.graphs.submit({"tasks": {
        "approve": {"approval": {"timeout": "1m"}},
        "ready": {"wait": {"signal": "never", "timeout": "2m"}},
        "deploy": {"type": "step", "requires": ["approve"]},
        "rollback": {"type": "step", "requires": [{"label": "approve", "on": "failure"}]},
        "forever": {"approval": {}},
    }})
    clock.advance(61)
    report = schedule(store)
    assert report is not None and report.awaited == [_jobs(store, graph_id)["approve"].id]
    jobs = _jobs(store, graph_id)
    assert jobs["approve"].state == "failed"
    assert jobs["approve"].result == {"decision": "timed_out", "note": None, "by": "scheduler"}
    assert (jobs["deploy"].state, jobs["rollback"].state) == ("dependency_failed", "pending")
    clock.advance(60)
    schedule(store)
    assert _states(store, graph_id)["ready"] == "failed"
    assert _states(store, graph_id)["forever"] == "awaiting"  # no timeout: forever
    # Found past their deadline, never twice: a later cycle ends nothing more.
    clock.advance(3600)
    assert schedule(store).awaited == []  # type: ignore[union-attr]


def test_deny_fails_and_blocks_the_graph(typed: Store) -> None:
    store = typed
    graph_id = store.graphs.submit({"tasks": {"approve": {"approval": {}},
                                             "deploy": {"type": "step",
                                                        "requires": ["approve"]}}})
    approve = _jobs(store, graph_id)["approve"].id
    denied = store.waits.decide(approve, Decision.DENIED, note="not today", by="bob")
    assert (denied.state, denied.result["decision"]) == ("failed", "denied")
    assert _states(store, graph_id)["deploy"] == "dependency_failed"
    assert store.graphs.get(graph_id).state == "blocked"
    failed = [e for e in store.events.list(graph_id=graph_id) if e.topic == "job-failed"]
    assert failed[0].payload["by"] == "bob"


def test_only_an_awaiting_approval_is_decided(typed: Store) -> None:
    store = typed
    graph_id = store.graphs.submit({"tasks": {
        "build": {"type": "step"}, "approve": {"approval": {}, "requires": ["build"]},
        "w": {"wait": {"signal": "s"}}}})
    jobs = _jobs(store, graph_id)
    with pytest.raises(Conflict, match=r"job \d+ is not an awaiting approval: it is an "
                                       r"approval, waiting"):
        store.waits.decide(jobs["approve"].id, Decision.APPROVED, note=None, by="x")
    with pytest.raises(Conflict, match="it is a task, pending"):
        store.waits.decide(jobs["build"].id, Decision.APPROVED, note=None, by="x")
    with pytest.raises(Conflict, match="it is a wait, awaiting"):
        store.waits.decide(jobs["w"].id, Decision.DENIED, note=None, by="x")
    with pytest.raises(NotFound, match="no job 999999"):
        store.waits.decide(999999, Decision.APPROVED, note=None, by="x")
    assert _states(store, graph_id) == {"build": "pending", "approve": "waiting",
                                        "w": "awaiting"}
    drive(store)
    store.waits.decide(jobs["approve"].id, Decision.APPROVED, note=None, by="x")
    with pytest.raises(Conflict, match="it is an approval, succeeded"):
        store.waits.decide(jobs["approve"].id, Decision.DENIED, note=None, by="x")


@pytest.mark.parametrize(("name", "key", "payload", "message"), [
    ("", None, None, "signal: signal must name the signal"),
    ("a\x00", None, None, "signal: signal name 'a\\x00' holds a NUL character"),
    ("s", 1.5, None, "signal: key must be text, got float"),
    ("s", None, float("nan"), "signal payload: args are not JSON"),
    ("s", None, "x" * 300_000, "signal payload: args are 300008 bytes encoded"),
])
def test_bad_signals_are_refused_and_change_nothing(typed: Store, name: str, key: Any,
                                                    payload: Any, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        typed.waits.signal(name, key, payload)
    assert str(caught.value).startswith(message)
    with typed.read() as tx:
        assert tx.raw.first("SELECT COUNT(*) FROM signals")[0] == 0  # type: ignore[index]


def test_cancel_retry_and_explain(typed: Store, clock: MovableClock) -> None:
    store = typed
    graph_id = store.graphs.submit({"tasks": {
        "build": {"type": "step"},
        "w": {"wait": {"signal": "s", "key": "k", "timeout": "1m"}, "requires": ["build"]},
        "nap": {"sleep": "5m"}}})
    jobs = _jobs(store, graph_id)
    why = explain_job(store, jobs["w"].id)
    assert "waits for job" in why[0].message and "of type step" in why[0].message
    why = explain_job(store, jobs["nap"].id)
    assert why[0].code == "sleeping" and why[0].message.startswith("sleeps until ")
    drive(store)
    why = explain_job(store, jobs["w"].id)
    assert why[0].code == "awaiting_wait"
    assert "awaits signal 's' with key 'k' (taskyard signal s --key k); times out at" in (
        why[0].message)
    clock.advance(61)
    schedule(store)
    assert _states(store, graph_id)["w"] == "failed"
    store.waits.signal("s", "k", "too late")  # stored, but before the retry
    retried = store.retries.retry(jobs["w"].id)
    assert retried.state == "awaiting"
    assert retried.deadline is not None and retried.deadline > store.now() + 50
    assert store.waits.signal("s", "k", "now") == [jobs["w"].id]
    assert _jobs(store, graph_id)["w"].result == "now"
    canceled = store.jobs.cancel(jobs["nap"].id)
    assert (canceled.state, canceled.deadline) == ("canceled", None)
    clock.advance(600)
    assert schedule(store).awaited == []  # type: ignore[union-attr]


def test_awaiting_jobs_hold_no_slot_or_lock(typed: Store) -> None:
    store = typed
    store.task_types.put(TaskTypeSpec("locked", "shell:true", locks=("db",)))
    graph_id = store.graphs.submit({"tasks": {
        **{f"a{i}": {"approval": {}} for i in range(5)},
        "work": {"type": "locked"}}})
    ran = drive(store, capacity=1)
    assert [j.label for j in ran] == ["work"]
    assert sum(1 for s in _states(store, graph_id).values() if s == "awaiting") == 5
    assert len(store.jobs.list(state="awaiting")) == 5


def test_add_tasks_after_parents_ended_await_at_once(typed: Store) -> None:
    store = typed
    graph_id = store.graphs.submit({"tasks": {"build": {"type": "step"}}})
    drive(store)
    store.graphs.add_tasks(graph_id, {"tasks": {
        "approve": {"approval": {}, "requires": ["build"]},
        "deploy": {"type": "step", "requires": ["approve"]}}})
    assert _states(store, graph_id) == {"build": "succeeded", "approve": "awaiting",
                                        "deploy": "waiting"}
    assert store.graphs.get(graph_id).state == "running"
    # Re-adding the same definition is a no-op; another one is refused.
    assert store.graphs.add_tasks(graph_id, {"tasks": {
        "approve": {"approval": {}, "requires": ["build"]}}}) == []
    with pytest.raises(InvalidInput, match="another definition"):
        store.graphs.add_tasks(graph_id, {"tasks": {
            "approve": {"approval": {"timeout": "1h"}, "requires": ["build"]}}})


def test_a_graph_of_waits_finishes_and_cancels(typed: Store) -> None:
    store = typed
    graph_id = store.graphs.submit({"tasks": {"a": {"approval": {}},
                                             "b": {"sleep": "1h", "requires": ["a"]}}})
    store.graphs.cancel(graph_id)
    assert _states(store, graph_id) == {"a": "canceled", "b": "canceled"}
    with pytest.raises(Conflict):
        store.waits.decide(_jobs(store, graph_id)["a"].id, Decision.APPROVED, note=None,
                           by="x")
