"""Task graphs on both stores: readiness by counter, cascades, reruns, live graphs."""

from __future__ import annotations

from typing import Any

import pytest
from driver import drive
from sqlalchemy import func, select
from tests.store.driver import claim, complete

from taskyard.model.errors import InvalidInput
from taskyard.model.records import ClaimedJob, JobSubmission, TaskTypeSpec
from taskyard.store import Store
from taskyard.store import schema as t


@pytest.fixture
def store_g(store: Store) -> Store:
    store.task_types.put(TaskTypeSpec("step", "shell:true"))
    return store


def states(store: Store, graph_id: int) -> dict[str, str]:
    return {j.label or "": j.state for j in store.graphs.get(graph_id).jobs}


def fail_labels(*labels: str) -> Any:
    def decide(job: ClaimedJob) -> tuple[str, Any]:
        return ("failed", None) if job.label in labels else ("succeeded", job.label)
    return decide


def test_diamond_runs_in_dependency_order(store_g: Store) -> None:
    gid = store_g.graphs.submit({"routing": "ci", "tasks": {
        "a": {"type": "step"},
        "b": {"type": "step", "requires": ["a"]},
        "c": {"type": "step", "requires": ["a"]},
        "d": {"type": "step", "requires": ["b", "c"]},
    }})
    order = [j.label for j in drive(store_g)]
    assert order[0] == "a" and order[-1] == "d" and set(order[1:3]) == {"b", "c"}
    graph = store_g.graphs.get(gid)
    assert graph.state == "finished" and set(states(store_g, gid).values()) == {"succeeded"}
    topics = [e.topic for e in store_g.events.list(graph_id=gid)]
    assert topics[0] == "graph-running" and topics[-1] == "graph-finished"


def test_fan_in_of_100(store_g: Store) -> None:
    tasks: dict[str, Any] = {f"p{i}": {"type": "step"} for i in range(100)}
    tasks["join"] = {"type": "step", "requires": [f"p{i}" for i in range(100)]}
    gid = store_g.graphs.submit({"tasks": tasks})
    order = [j.label for j in drive(store_g, capacity=16)]
    assert order[-1] == "join" and len(order) == 101
    assert store_g.graphs.get(gid).state == "finished"


def test_three_level_failure_cascade_blocks_the_graph(store_g: Store) -> None:
    gid = store_g.graphs.submit({"tasks": {
        "root": {"type": "step"},
        "l1": {"type": "step", "requires": ["root"]},
        "l2": {"type": "step", "requires": ["l1"]},
        "l3": {"type": "step", "requires": ["l2"]},
        "other": {"type": "step"},
    }})
    drive(store_g, fail_labels("root"))
    assert states(store_g, gid) == {"root": "failed", "l1": "dependency_failed",
                                    "l2": "dependency_failed", "l3": "dependency_failed",
                                    "other": "succeeded"}
    assert store_g.graphs.get(gid).state == "blocked"
    assert "graph-blocked" in [e.topic for e in store_g.events.list(graph_id=gid)]


def test_reruns_then_success(store_g: Store) -> None:
    gid = store_g.graphs.submit({"tasks": {"flaky": {"type": "step", "reruns": 2},
                                          "after": {"type": "step", "requires": ["flaky"]}}})

    def decide(job: ClaimedJob) -> tuple[str, Any]:
        return ("failed", None) if job.label == "flaky" and job.attempt < 3 else ("succeeded", 1)

    drive(store_g, decide)
    flaky = next(j for j in store_g.graphs.get(gid).jobs if j.label == "flaky")
    assert (flaky.state, flaky.attempt) == ("succeeded", 3)
    assert [a.state for a in flaky.attempts] == ["failed", "failed", "succeeded"]
    assert store_g.graphs.get(gid).state == "finished"


def test_substitutions_reach_the_handler(store_g: Store) -> None:
    gid = store_g.graphs.submit({"tasks": {
        "build": {"type": "step"},
        "test": {"type": "step", "requires": ["build"],
                 "args": {"build_job": {"$subs": "taskId:build"},
                          "artifact": {"$result": "build"}}},
    }})
    seen = drive(store_g, lambda j: ("succeeded", {"tar": "b.tgz"} if j.label == "build" else 1))
    build_id = next(j.id for j in store_g.graphs.get(gid).jobs if j.label == "build")
    test_job = next(j for j in seen if j.label == "test")
    assert test_job.args == {"build_job": build_id, "artifact": {"tar": "b.tgz"}}


def test_add_tasks_to_running_and_finished_graphs(store_g: Store) -> None:
    gid = store_g.graphs.submit({"tasks": {"a": {"type": "step"}}})
    store_g.graphs.add_tasks(gid, {"tasks": {"b": {"type": "step", "requires": ["a"]}}})
    drive(store_g)
    assert store_g.graphs.get(gid).state == "finished"
    assert store_g.graphs.add_tasks(gid, {"tasks": {"a": {"type": "step"}}}) == []
    with pytest.raises(InvalidInput, match=r"'a'.*another definition"):
        store_g.graphs.add_tasks(gid, {"tasks": {"a": {"type": "step", "priority": 3}}})
    (c,) = store_g.graphs.add_tasks(gid, {"tasks": {"c": {"type": "step", "requires": ["b"]}}})
    assert store_g.graphs.get(gid).state == "running"
    assert store_g.jobs.get(c).state == "pending"  # type: ignore[union-attr]
    drive(store_g)
    assert store_g.graphs.get(gid).state == "finished"


def test_new_task_requiring_a_failed_one_fails_at_once(store_g: Store) -> None:
    gid = store_g.graphs.submit({"tasks": {"a": {"type": "step"}}})
    drive(store_g, fail_labels("a"))
    (b,) = store_g.graphs.add_tasks(gid, {"tasks": {"b": {"type": "step", "requires": ["a"]}}})
    assert store_g.jobs.get(b).state == "dependency_failed"  # type: ignore[union-attr]


def test_cancel_while_running(store_g: Store) -> None:
    gid = store_g.graphs.submit({"tasks": {"a": {"type": "step"},
                                          "b": {"type": "step", "requires": ["a"]}}})
    worker = store_g.workers.register("w", ["default"], 2, lease_seconds=60)
    from taskyard.scheduler.cycle import schedule

    schedule(store_g)
    (claimed,) = claim(store_g, worker.id, 2)
    graph = store_g.graphs.cancel(gid)
    assert graph.state == "canceled"
    assert {j.label: j.state for j in graph.jobs} == {"a": "canceled", "b": "canceled"}
    assert store_g.workers.renew_lease(worker.id, 60, [(claimed.job_id, 1)]).stop == (
        (claimed.job_id, 1),)


@pytest.mark.parametrize(
    ("tasks", "message"),
    [
        ({"a": {"type": "step", "requires": ["b"]}, "b": {"type": "step", "requires": ["a"]}},
         "cycle"),
        ({"a": {"type": "step", "requires": ["ghost"]}}, "unknown label 'ghost'"),
        ({"a": {"type": "nope"}}, "unknown task type 'nope'"),
        ({"a": {"type": "step", "args": {"x": {"$result": "a2"}}}}, "unknown label 'a2'"),
    ],
)
def test_invalid_graph_writes_nothing(store_g: Store, tasks: Any, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        store_g.graphs.submit({"tasks": tasks})
    with store_g.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(t.graphs)).scalar_one() == 0
        assert conn.execute(select(func.count()).select_from(t.jobs)).scalar_one() == 0


def test_edges_rollback_and_notify(store_g: Store) -> None:
    spec = {"tasks": {
        "deploy": {"type": "step"},
        "rollback": {"type": "step", "requires": [{"label": "deploy", "on": "failure"}]},
        "verify": {"type": "step", "requires": ["deploy"]},
        "after-verify": {"type": "step", "requires": ["verify"]},
        "notify": {"type": "step", "requires": [{"label": "deploy", "on": "always"}]},
    }}
    ok = store_g.graphs.submit(spec)
    drive(store_g)
    assert states(store_g, ok) == {"deploy": "succeeded", "rollback": "skipped",
                                   "verify": "succeeded", "after-verify": "succeeded",
                                   "notify": "succeeded"}
    assert store_g.graphs.get(ok).state == "finished"
    bad = store_g.graphs.submit(spec)
    drive(store_g, fail_labels("deploy"))
    assert states(store_g, bad) == {"deploy": "failed", "rollback": "succeeded",
                                    "verify": "dependency_failed",
                                    "after-verify": "dependency_failed", "notify": "succeeded"}
    assert store_g.graphs.get(bad).state == "finished"  # the failure was handled


def test_skipping_propagates_and_all_resolved_runs_after_failure(store_g: Store) -> None:
    gid = store_g.graphs.submit({"tasks": {
        "a": {"type": "step"},
        "on-fail": {"type": "step", "requires": [{"label": "a", "on": "failure"}]},
        "needs-on-fail": {"type": "step", "requires": ["on-fail"]},
        "b": {"type": "step"},
        "report": {"type": "step", "requires": ["b"], "requires_mode": "all-resolved"},
        "either": {"type": "step", "convergence": "any",
                   "requires": ["b", {"label": "a", "on": "success"}]},
    }})
    drive(store_g, fail_labels("b"))
    assert states(store_g, gid) == {"a": "succeeded", "on-fail": "skipped",
                                    "needs-on-fail": "skipped", "b": "failed",
                                    "report": "succeeded", "either": "succeeded"}


def test_watchdog_flags_a_graph_that_stops_making_progress(store: Store) -> None:

    from taskyard.scheduler.cycle import schedule

    store.task_types.put(TaskTypeSpec("res", "shell:true", locks=("res",)))
    (hog,) = store.jobs.submit([JobSubmission("res")])
    worker = store.workers.register("w", ["default"], 4, lease_seconds=60)
    schedule(store)
    claim(store, worker.id, 4)  # the hog runs and never ends
    gid = store.graphs.submit({"tasks": {"blocked": {"type": "res"}}})
    store.clock.advance(0.05)  # type: ignore[union-attr]
    report = schedule(store, stall_after=0.01)
    assert report is not None and report.stalled == [gid]
    assert store.graphs.get(gid).stalled_at is not None
    assert "graph-stalled" in [e.topic for e in store.events.list(graph_id=gid)]
    again = schedule(store, stall_after=0.01)
    assert again is not None and again.stalled == []  # flagged once
    assert schedule(store, stall_after=0.01, cancel_stalled=False) is not None
    store.jobs.cancel(hog)
    store.workers.stop(worker.id)
    drive(store)
    assert store.graphs.get(gid).state == "finished"
    assert store.graphs.get(gid).stalled_at is None  # progress clears the flag


def test_deploy_example_file(store: Store) -> None:
    from pathlib import Path

    import yaml

    doc = yaml.safe_load((Path(__file__).parents[2] / "examples/graphs/deploy.yaml").read_text())
    store.task_types.put(TaskTypeSpec("step", "shell:true"))
    ok = store.graphs.submit(doc)
    drive(store)
    assert states(store, ok) == {"build": "succeeded", "deploy": "succeeded",
                                 "verify": "succeeded", "rollback": "skipped",
                                 "notify": "succeeded"}
    assert store.graphs.get(ok).state == "finished"
    bad = store.graphs.submit(doc)

    def deploy_fails(job: ClaimedJob) -> tuple[str, Any]:
        return ("failed", None) if job.args.get("what") == "deploy" else ("succeeded", 1)

    drive(store, deploy_fails)
    assert states(store, bad) == {"build": "succeeded", "deploy": "failed",
                                  "verify": "dependency_failed", "rollback": "succeeded",
                                  "notify": "succeeded"}
    assert store.graphs.get(bad).state == "finished"


def test_event_routing_keys_follow_taskcluster(store_g: Store) -> None:
    from taskyard.core.routing import topic_matches

    gid = store_g.graphs.submit({"routing": "nightly", "tasks": {
        "build": {"type": "step", "routing": "linux"}}})
    drive(store_g)
    events = store_g.events.list(graph_id=gid)
    keys = {e.topic: e.routing_key for e in events}
    assert keys["job-completed"] == f"taskyard.{gid}.nightly.linux"
    assert keys["graph-finished"] == f"taskyard.{gid}.nightly._"
    assert keys["job-pending"] == f"taskyard.{gid}.nightly.linux"
    assert topic_matches("taskyard.*.nightly.#", keys["job-running"])
    payload = next(e.payload for e in events if e.topic == "job-completed")
    assert payload["state"] == "succeeded" and payload["attempt"] == 1


def test_a_graph_with_a_running_job_is_not_stalled(store: Store) -> None:

    from taskyard.scheduler.cycle import schedule

    store.task_types.put(TaskTypeSpec("step", "shell:true"))
    gid = store.graphs.submit({"tasks": {"long": {"type": "step"}, "next": {"type": "step"}}})
    worker = store.workers.register("w", ["default"], 1, lease_seconds=60)
    schedule(store)
    # "long" runs for a long time (that is progress); "next" waits for the only slot.
    assert len(claim(store, worker.id, 1)) == 1
    store.clock.advance(0.05)  # type: ignore[union-attr]
    report = schedule(store, stall_after=0.01)
    assert report is not None and report.stalled == []
    assert store.graphs.get(gid).stalled_at is None


def test_graph_cancel_ends_outside_jobs_waiting_on_its_jobs(store: Store) -> None:
    from taskyard.model.records import Prerequisite

    store.task_types.put(TaskTypeSpec("update", "shell:true"))
    store.task_types.put(TaskTypeSpec("launch", "shell:true",
                                     prerequisites=(Prerequisite("update", {"p": "{p}"}, 60),)))
    gid = store.graphs.submit({"tasks": {"u": {"type": "update", "args": {"p": 1}}}})
    (launched,) = store.jobs.submit([JobSubmission("launch", {"p": 1})])
    job = store.jobs.get(launched)
    assert job is not None and job.state == "waiting"  # it reuses the graph's update
    store.graphs.cancel(gid)
    job = store.jobs.get(launched)
    assert job is not None and job.state == "dependency_failed"
    assert "job-exception" in [e.topic for e in store.events.list(graph_id=gid)]


def test_a_canceled_job_blocks_its_graph_even_with_an_always_edge(store_g: Store) -> None:
    from taskyard.scheduler.cycle import schedule

    gid = store_g.graphs.submit({"tasks": {
        "work": {"type": "step"},
        "cleanup": {"type": "step", "requires": [{"label": "work", "on": "always"}]},
    }})
    schedule(store_g)  # nothing serves the pool yet: "work" stays pending
    work = next(j.id for j in store_g.graphs.get(gid).jobs if j.label == "work")
    store_g.jobs.cancel(work)
    drive(store_g)
    # A canceled job's dependents end dependency_failed (DESIGN.md: "Cancel"), and the
    # graph is blocked, not finished: a canceled job is never a handled failure.
    assert states(store_g, gid) == {"work": "canceled", "cleanup": "dependency_failed"}
    assert store_g.graphs.get(gid).state == "blocked"


def test_graph_tasks_launch_their_prerequisites(store: Store) -> None:
    from taskyard.model.records import Prerequisite

    store.task_types.put(TaskTypeSpec("update", "shell:true"))
    store.task_types.put(TaskTypeSpec("play", "shell:true",
                                     prerequisites=(Prerequisite("update", {"p": "{p}"}, 60),)))
    ok = store.graphs.submit({"tasks": {"a": {"type": "play", "args": {"p": 1}},
                                       "b": {"type": "play", "args": {"p": 1},
                                             "requires": ["a"]}}})
    updates = store.jobs.list(type="update")
    assert len(updates) == 1 and updates[0].launch_type == "dependent"  # one, shared
    assert states(store, ok) == {"a": "waiting", "b": "waiting"}
    order = [(j.type, j.label) for j in drive(store)]
    assert order == [("update", None), ("play", "a"), ("play", "b")]
    assert store.graphs.get(ok).state == "finished"
    # A failed prerequisite fails the task (seed 000: a dependent job failing fails all).
    store.task_types.put(TaskTypeSpec("play2", "shell:true",
                                     prerequisites=(Prerequisite("update", {"p": "{p}"}, 0),)))
    bad = store.graphs.submit({"tasks": {"c": {"type": "play2", "args": {"p": 2}}}})
    drive(store, lambda job: ("failed", None) if job.type == "update" else ("succeeded", 1))
    assert states(store, bad) == {"c": "dependency_failed"}
    assert store.graphs.get(bad).state == "blocked"


def test_retrying_a_failed_job_reopens_its_dependents_and_its_graph(store_g: Store) -> None:
    from taskyard.model.errors import Conflict

    gid = store_g.graphs.submit({"tasks": {
        "build": {"type": "step"},
        "test": {"type": "step", "requires": ["build"]},
        "ship": {"type": "step", "requires": ["test"]},
        "rollback": {"type": "step", "requires": [{"label": "build", "on": "failure"}]},
    }})
    drive(store_g, fail_labels("build"))
    assert states(store_g, gid) == {"build": "failed", "test": "dependency_failed",
                                    "ship": "dependency_failed", "rollback": "succeeded"}
    graph = store_g.graphs.get(gid)
    assert graph.state == "finished"  # the failure was handled by the rollback edge
    ids = {j.label: j.id for j in graph.jobs}
    with pytest.raises(Conflict, match=f"job\\(s\\) {ids['build']}"):
        store_g.retries.retry(ids["test"])  # retry the cause, not the consequence
    assert store_g.retries.retry(ids["build"]).state == "pending"
    assert states(store_g, gid) == {"build": "pending", "test": "waiting", "ship": "waiting",
                                    "rollback": "succeeded"}
    graph = store_g.graphs.get(gid)
    assert (graph.state, graph.jobs_done) == ("running", 1)
    drive(store_g)
    assert states(store_g, gid) == {"build": "succeeded", "test": "succeeded",
                                    "ship": "succeeded", "rollback": "succeeded"}
    graph = store_g.graphs.get(gid)
    assert (graph.state, graph.jobs_done, graph.jobs_total) == ("finished", 4, 4)


def test_retry_unblocks_a_graph_only_when_nothing_else_blocks_it(store_g: Store) -> None:
    gid = store_g.graphs.submit({"tasks": {"a": {"type": "step"}, "b": {"type": "step"},
                                          "c": {"type": "step", "requires": ["a", "b"]}}})
    drive(store_g, fail_labels("a", "b"))
    assert store_g.graphs.get(gid).state == "blocked"
    ids = {j.label: j.id for j in store_g.graphs.get(gid).jobs}
    store_g.retries.retry(ids["a"])
    assert store_g.graphs.get(gid).state == "blocked"  # b still failed, unhandled
    assert states(store_g, gid)["c"] == "dependency_failed"  # b's edge still fails
    store_g.retries.retry(ids["b"])
    assert store_g.graphs.get(gid).state == "running"
    assert states(store_g, gid)["c"] == "waiting"
    drive(store_g)
    assert store_g.graphs.get(gid).state == "finished"


def test_limits_are_configurable(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from taskyard.store import open_store

    monkeypatch.setenv("TASKYARD_MAX_GRAPH_TASKS", "2")
    monkeypatch.setenv("TASKYARD_MAX_ARGS_BYTES", "64")
    store = open_store(db_url)
    try:
        store.task_types.put(TaskTypeSpec("step", "shell:true"))
        with pytest.raises(InvalidInput, match=r"3 tasks \(limit 2\)"):
            store.graphs.submit({"tasks": {k: {"type": "step"} for k in "abc"}})
        with pytest.raises(InvalidInput, match=r"limit 64\)"):
            store.jobs.submit([JobSubmission("step", {"text": "x" * 100})])
        assert store.jobs.list() == []
    finally:
        store.close()


def test_a_graph_past_the_bulk_insert_threshold_keeps_every_rule(store_g: Store) -> None:
    # More jobs and edges than BULK_MIN_ROWS: the bulk path for both (COPY on PostgreSQL,
    # 1000-row statements and the rest row by row on SQLite).
    from taskyard.store.cursor import BULK_MIN_ROWS

    n = BULK_MIN_ROWS + 500
    tasks: dict[str, Any] = {"root": {"type": "step", "args": {"k": 1}}}
    tasks.update({f"m{i}": {"type": "step", "requires": ["root"],
                            "args": {"i": i, "root": {"$subs": "taskId:root"}}}
                  for i in range(n)})
    tasks["join"] = {"type": "step", "requires": [f"m{i}" for i in range(n)]}
    tasks["rescue"] = {"type": "step", "requires": [{"label": "root", "on": "failure"}],
                       "priority": 3, "reruns": 2, "routing": "r", "timeout": "5m"}
    gid = store_g.graphs.submit({"routing": "big", "tasks": tasks})
    jobs = {j.label: j for j in store_g.graphs.get(gid).jobs}
    root = jobs["root"]
    assert len(jobs) == n + 3 and list(jobs)[:2] == ["root", "m0"]
    assert root.state == "pending" and root.args == {"k": 1} and root.unmet_deps == 0
    assert all(jobs[f"m{i}"].args == {"i": i, "root": root.id} for i in range(n))
    assert {j.state for label, j in jobs.items() if label != "root"} == {"waiting"}
    assert jobs["join"].unmet_deps == n and jobs["m7"].unmet_deps == 1
    rescue = jobs["rescue"]
    assert (rescue.priority, rescue.retries, rescue.timeout) == (3, 2, 300.0)
    assert all(j.created_at is not None for j in jobs.values())
    with store_g.engine.connect() as conn:
        edges = conn.execute(select(func.count()).select_from(t.dependencies)).scalar_one()
        routing = conn.execute(select(t.jobs.c.routing).where(
            t.jobs.c.id == rescue.id)).scalar_one()
    assert edges == 2 * n + 1 and routing == "big.r"
    pending = [e for e in store_g.events.list(graph_id=gid) if e.topic == "job-pending"]
    assert [e.payload["job_id"] for e in pending] == [root.id]
    assert store_g.graphs.add_tasks(gid, {"tasks": tasks}) == []  # identical: a no-op
    order = [j.label for j in drive(store_g, capacity=256)]
    assert order[0] == "root" and order[-1] == "join" and len(order) == n + 2
    final = states(store_g, gid)
    assert final.pop("rescue") == "skipped" and set(final.values()) == {"succeeded"}
    assert store_g.graphs.get(gid).state == "finished"


def test_a_bad_task_late_in_a_bulk_graph_writes_nothing(store_g: Store) -> None:
    # The lock template is rendered while the rows stream into COPY (PostgreSQL): a
    # task without the arg it names still rejects the whole graph, naming the task.
    from taskyard.store.cursor import BULK_MIN_ROWS

    store_g.task_types.put(TaskTypeSpec("locked", "shell:true", locks=("project:{p}",)))
    tasks: dict[str, Any] = {f"t{i}": {"type": "locked", "args": {"p": i}}
                             for i in range(BULK_MIN_ROWS + 10)}
    tasks["last"] = {"type": "locked", "args": {"q": 1}}
    with pytest.raises(InvalidInput, match=r"task 'last': lock 'project:\{p\}'"):
        store_g.graphs.submit({"tasks": tasks})
    with store_g.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(t.graphs)).scalar_one() == 0
        assert conn.execute(select(func.count()).select_from(t.jobs)).scalar_one() == 0
    tasks["last"]["args"] = {"p": "x"}
    gid = store_g.graphs.submit({"tasks": tasks})  # the store is still usable
    assert store_g.graphs.get(gid, jobs=False).jobs_total == BULK_MIN_ROWS + 11


def test_pg_two_parents_ending_at_once_release_their_child(store_g: Store) -> None:
    # c requires a and b. While a's completion holds c (its counter written, not yet
    # committed), b's completion must wait and then read c's counter as a's left it:
    # reading it earlier, it would see two open edges, keep c waiting, and then take
    # the last one away: c would wait forever with nothing left to wait for.
    import threading

    from sqlalchemy import text

    from taskyard.model.records import Outcome
    from taskyard.scheduler.cycle import schedule

    if (store_g.backend == "sqlite"):
        pytest.skip("SQLite runs one write transaction at a time")
    graph = store_g.graphs.submit({"tasks": {
        "a": {"type": "step"}, "b": {"type": "step"},
        "c": {"type": "step", "requires": ["a", "b"]}}})
    ids = {j.label: j.id for j in store_g.graphs.get(graph).jobs}
    worker = store_g.workers.register("w", ["default"], 4, lease_seconds=60).id
    schedule(store_g)
    claimed = {j.label: j for j in claim(store_g, worker, 4)}
    assert set(claimed) == {"a", "b"}
    with store_g.engine.connect() as other:
        # a's completion, half done: c's counter taken down by one, c locked.
        other.execute(text("UPDATE jobs SET unmet_deps = unmet_deps - 1 WHERE id = :c"),
                      {"c": ids["c"]})
        b = claimed["b"]
        done = threading.Thread(target=complete, args=(
            store_g, worker, [Outcome(b.job_id, b.attempt, "succeeded", 0)]))
        done.start()
        done.join(0.5)
        assert done.is_alive()  # waiting for c's lock
        other.commit()
    done.join(30)
    job = store_g.jobs.get(ids["c"])
    assert job is not None and (job.state, job.unmet_deps) == ("pending", 0)
