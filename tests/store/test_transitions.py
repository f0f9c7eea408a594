"""Every state change the store performs is in core's transition table.

A trigger (created by this test only) logs each (old, new) job state pair while
a workload exercises graphs, edges, failures, retries, cancels, prerequisites,
worker loss and graceful stop; the log must be a subset of JOB_TRANSITIONS.
"""

from __future__ import annotations

from typing import Any

from driver import SHORT_LEASE, drive, wait_out_lease
from sqlalchemy import text
from tests.store.driver import claim

from taskyard.core.states import JOB_TRANSITIONS, JobState
from taskyard.model.records import ClaimedJob, JobSubmission, Prerequisite, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.store import Store

SQLITE_TRIGGER = [
    "CREATE TABLE transition_log (old TEXT, new TEXT)",
    "CREATE TRIGGER log_transition AFTER UPDATE OF state ON jobs "
    "WHEN old.state <> new.state BEGIN "
    "INSERT INTO transition_log VALUES (old.state, new.state); END",
]
PG_TRIGGER = [
    "CREATE TABLE transition_log (old TEXT, new TEXT)",
    "CREATE FUNCTION log_transition() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "INSERT INTO transition_log VALUES (OLD.state, NEW.state); RETURN NEW; END $$",
    "CREATE TRIGGER log_transition AFTER UPDATE OF state ON jobs FOR EACH ROW "
    "WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION log_transition()",
]


def _install(store: Store) -> None:
    with store.engine.begin() as conn:
        for stmt in SQLITE_TRIGGER if (store.backend == "sqlite") else PG_TRIGGER:
            conn.execute(text(stmt))


def _workload(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("step", "shell:true", retries=1))
    store.task_types.put(TaskTypeSpec("update", "shell:true"))
    store.task_types.put(TaskTypeSpec("launch", "shell:true",
                                     prerequisites=(Prerequisite("update", {"p": "{p}"}, 0),)))

    def decide(job: ClaimedJob) -> tuple[str, Any]:
        fails = job.label == "bad" or (job.label == "flaky" and job.attempt == 1)
        return ("failed", None) if fails else ("succeeded", 1)

    store.graphs.submit({"tasks": {
        "a": {"type": "step"}, "bad": {"type": "step", "reruns": 0},
        "after-bad": {"type": "step", "requires": ["bad"]},
        "on-fail": {"type": "step", "requires": [{"label": "a", "on": "failure"}]},
        "flaky": {"type": "step"}, "always": {"type": "step", "requires_mode": "all-resolved",
                                              "requires": ["bad"]},
    }})
    store.jobs.submit([JobSubmission("launch", {"p": 1})])
    drive(store, decide)
    # cancel pending, waiting and running; retry a failure
    gid = store.graphs.submit({"tasks": {"x": {"type": "step"},
                                        "y": {"type": "step", "requires": ["x"]}}})
    w = store.workers.register("w", ["default"], 1, lease_seconds=300)
    schedule(store)
    claim(store, w.id, 1)
    pending = store.jobs.submit([JobSubmission("step")])[0]
    store.jobs.cancel(pending)
    store.graphs.cancel(gid)
    failed = next(j.id for j in store.jobs.list(state="failed"))
    store.retries.retry(failed)
    # worker loss and graceful stop
    store.workers.stop(w.id)
    lost = store.workers.register("lost", ["default"], 2, lease_seconds=SHORT_LEASE)
    store.jobs.submit([JobSubmission("step"), JobSubmission("step")])
    schedule(store)
    assert claim(store, lost.id, 1)
    wait_out_lease(store, lost.id)
    schedule(store)
    drive(store)


def test_store_only_performs_allowed_transitions(store: Store) -> None:
    _install(store)
    _workload(store)
    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT DISTINCT old, new FROM transition_log"))
        seen = {(o, n) for o, n in rows}
    assert seen, "the workload performed no transition"
    illegal = {(o, n) for o, n in seen if JobState(n) not in JOB_TRANSITIONS[JobState(o)]}
    assert not illegal, f"transitions missing from core.states.JOB_TRANSITIONS: {illegal}"
    # The workload is meant to cover the lifecycle broadly.
    assert {("pending", "dispatched"), ("dispatched", "running"), ("running", "succeeded"),
            ("waiting", "pending"), ("waiting", "dependency_failed"), ("waiting", "skipped"),
            ("running", "pending"), ("running", "suspended"), ("suspended", "pending"),
            ("waiting", "canceled"), ("pending", "canceled")} <= seen
