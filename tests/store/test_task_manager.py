"""Seed 000's task-manager rules, literally, on both stores (examples/awx/taskyard.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from driver import drive
from tests.store.driver import claim, complete

from taskyard.api.yard import Yard
from taskyard.model.errors import InvalidInput
from taskyard.model.records import JobSubmission, Outcome, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.scheduler.explain import explain_job
from taskyard.store import MovableClock, Store

AWX = Path(__file__).parents[2] / "examples" / "awx" / "taskyard.yaml"


@pytest.fixture
def awx(db_url: str) -> Any:
    yard = Yard(db_url, inline_cycle=False)
    yard.apply(yaml.safe_load(AWX.read_text()), verify=False)
    yard.store.workers.register("big", ["default", "east"], 100, lease_seconds=300)
    yield yard
    yard.close()


def submit(store: Store, type_: str, **args: Any) -> int:
    (job_id,) = store.jobs.submit([JobSubmission(type_, args)])
    return job_id


def running(store: Store) -> set[int]:
    schedule(store)
    return {j.id for j in store.jobs.list(state="dispatched", limit=1000)}


def test_one_project_update_per_project(awx: Yard) -> None:
    s = awx.store
    a, _, c = (submit(s, "project-update", project_id=p) for p in (1, 1, 2))
    assert running(s) == {a, c}


def test_one_inventory_update_per_source_but_sources_update_together(awx: Yard) -> None:
    s = awx.store
    a = submit(s, "inventory-update", source_id=1, inventory_id=7)
    b = submit(s, "inventory-update", source_id=1, inventory_id=7)
    c = submit(s, "inventory-update", source_id=2, inventory_id=7)
    assert running(s) == {a, c} and b not in running(s)


def test_job_xor_project_update(awx: Yard) -> None:
    s = awx.store
    update = submit(s, "project-update", project_id=1)
    job = s.jobs.submit([JobSubmission("job", {"template_id": 1, "project_id": 1,
                                               "inventory_id": 1}, launch_type="dependent")])[0]
    assert running(s) == {update}
    assert job not in running(s)


def test_job_xor_inventory_updates_and_jobs_share(awx: Yard) -> None:
    s = awx.store
    jobs = [s.jobs.submit([JobSubmission("job", {"template_id": t, "project_id": 1,
                                                 "inventory_id": 7},
                                         launch_type="dependent")])[0] for t in (1, 2)]
    update = submit(s, "inventory-update", source_id=3, inventory_id=7)
    assert running(s) == set(jobs)  # two jobs share the inventory; the update waits
    assert update not in running(s)


def test_one_job_per_job_template_unless_simultaneous(awx: Yard) -> None:
    s = awx.store
    args = {"template_id": 1, "project_id": 1, "inventory_id": 1}
    first, _ = (s.jobs.submit([JobSubmission("job", args, launch_type="dependent")])[0]
                     for _ in range(2))
    assert running(s) == {first}
    s.task_types.put(TaskTypeSpec("job-sim", "shell:true"))
    x, y = (submit(s, "job-sim", template_id=1) for _ in range(2))
    assert {x, y} <= running(s)


def test_one_system_job_at_a_time(awx: Yard) -> None:
    s = awx.store
    a, _ = submit(s, "system-job"), submit(s, "system-job")
    assert running(s) == {a}


def test_blocked_groups_run_in_creation_order(awx: Yard) -> None:
    s = awx.store
    args = {"template_id": 1, "project_id": 1, "inventory_id": 1}
    job = s.jobs.submit([JobSubmission("job", args, launch_type="dependent")])[0]
    assert running(s) == {job}
    update = submit(s, "project-update", project_id=1)  # waits for the job
    later_job = s.jobs.submit([JobSubmission("job", {**args, "template_id": 2},
                                             launch_type="dependent")])[0]
    unrelated = submit(s, "project-update", project_id=99)
    now_running = running(s)
    assert update not in now_running and later_job not in now_running  # no overtaking
    assert unrelated in now_running  # conflicts with nothing: flows past
    reasons = explain_job(s, later_job)
    assert [(r.code, r.job_id) for r in reasons] == [("lock_wanted_ahead", update)]
    assert [(r.code, r.job_id) for r in explain_job(s, update)] == [("lock_held", job)]


def test_update_on_launch_spawns_reuses_and_caches(awx: Yard) -> None:
    s = awx.store
    args = {"template_id": 1, "project_id": 5, "inventory_id": 1}
    first = awx.submit("job", args)
    job = s.jobs.get(first)
    assert job is not None and job.state == "waiting"
    (prereq,) = s.jobs.list(type="project-update")
    assert prereq.launch_type == "dependent" and prereq.args == {"project_id": 5}
    assert [r.code for r in explain_job(s, first)] == ["dependency"]
    second = awx.submit("job", {**args, "template_id": 2})  # in flight: reused, no new job
    assert len(s.jobs.list(type="project-update")) == 1
    drive(s, worker="big")
    assert s.jobs.get(first).state == s.jobs.get(second).state == "succeeded"  # type: ignore[union-attr]
    third = awx.submit("job", {**args, "template_id": 3})  # within the 60 s cache window
    assert len(s.jobs.list(type="project-update")) == 1
    assert s.jobs.get(third).state == "pending"  # type: ignore[union-attr]
    explicit = awx.submit("project-update", {"project_id": 5})  # explicit runs always
    assert s.jobs.get(explicit).state == "pending"  # type: ignore[union-attr]


def test_cache_window_expiry_and_failed_prerequisite(db_url: str, clock: MovableClock) -> None:
    yard = Yard(db_url, inline_cycle=False, clock=clock)
    s = yard.store
    s.task_types.put(TaskTypeSpec("update", "shell:true"))
    s.task_types.put(TaskTypeSpec("run", "shell:true", prerequisites=(
        __import__("taskyard.model.records", fromlist=["P"]).Prerequisite(
            "update", {"p": "{p}"}, 0.2),)))
    s.workers.register("w", ["default"], 4, lease_seconds=300)
    a = yard.submit("run", {"p": 1})
    drive(s, worker="w")
    clock.advance(0.3)
    b = yard.submit("run", {"p": 1})  # cache expired: a new update is spawned
    assert len(s.jobs.list(type="update")) == 2
    drive(s, lambda j: ("failed", None) if j.type == "update" else ("succeeded", 1), worker="w")
    assert s.jobs.get(a).state == "succeeded"  # type: ignore[union-attr]
    assert s.jobs.get(b).state == "dependency_failed"  # type: ignore[union-attr]
    c = yard.submit("run", {"p": 1})  # a failed one is never reused
    assert len(s.jobs.list(type="update")) == 3 and s.jobs.get(c).state == "waiting"  # type: ignore[union-attr]
    with pytest.raises(InvalidInput, match="'p'"):
        yard.submit("run", {})
    yard.close()


def test_max_queue_length(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("lister", "shell:true", max_queue_length=2))
    ids = store.jobs.submit([JobSubmission("lister") for _ in range(5)])
    store.workers.register("w", ["default"], 10, lease_seconds=300)
    assert running(store) == set(ids[:2])
    assert [r.code for r in explain_job(store, ids[2])] == ["queue_full"]


def test_explain_pools_run_after_and_capacity(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    gpu = store.jobs.submit([JobSubmission("t", pools=("gpu",))])[0]
    later = store.jobs.submit([JobSubmission("t", run_after=store.now() + 3600)])[0]
    assert [r.code for r in explain_job(store, gpu)] == ["no_worker"]
    assert [r.code for r in explain_job(store, later)] == ["run_after"]
    w = store.workers.register("w", ["default"], 1, lease_seconds=300)
    busy, queued = store.jobs.submit([JobSubmission("t"), JobSubmission("t")])
    schedule(store)
    assert [r.code for r in explain_job(store, queued)] == ["no_capacity"]
    claim(store, w.id, 1)
    complete(store, w.id, [Outcome(busy, 1, "succeeded")])
    assert [r.code for r in explain_job(store, queued)] == ["placeable"]


def test_jobs_for_an_idle_pool_are_not_stuck_behind_a_busy_pools_backlog(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    busy = store.workers.register("busy", ["a"], 1, lease_seconds=300)
    store.jobs.submit([JobSubmission("t", pools=("a",)) for _ in range(60)])
    schedule(store)
    assert len(claim(store, busy.id, 1)) == 1  # pool a is now full
    store.workers.register("idle", ["b"], 1, lease_seconds=300)
    (late,) = store.jobs.submit([JobSubmission("t", pools=("b",))])
    # The scan limit is far below the backlog ahead of it: the job still goes.
    report = schedule(store, scan_limit=10)
    assert report is not None and [p.job_id for p in report.placed] == [late]
    assert report.scanned == 1  # pool a has no room: its backlog is not even read
    assert [r.code for r in explain_job(store, late)] == []  # dispatched: nothing to explain


def test_a_lock_blocked_backlog_does_not_hold_back_other_pools(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("locked", "shell:true", locks=("res",)))
    store.task_types.put(TaskTypeSpec("free", "shell:true"))
    a = store.workers.register("a", ["a"], 2, lease_seconds=300)
    store.jobs.submit([JobSubmission("locked", pools=("a",)) for _ in range(60)])
    schedule(store)
    assert len(claim(store, a.id, 2)) == 1  # one holds "res"; 59 wait for it
    store.workers.register("b", ["b"], 1, lease_seconds=300)
    (other,) = store.jobs.submit([JobSubmission("free", pools=("b",))])
    report = schedule(store, scan_limit=10)
    assert report is not None and [p.job_id for p in report.placed] == [other]
    assert report.scanned == 11  # ten of pool a's blocked backlog, then the other list


def test_a_malformed_lock_template_is_refused_when_the_type_is_saved(store: Store) -> None:
    with pytest.raises(InvalidInput, match=r"task type 'bad': lock 'p:\{id'"):
        store.task_types.put(TaskTypeSpec("bad", "shell:true", locks=("p:{id",)))
    assert store.task_types.get("bad") is None
