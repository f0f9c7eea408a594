"""`job show`'s "why": every reason that holds a pending job back, and the true count of
the jobs ahead of it in line (issue 41), on both stores."""

from __future__ import annotations

from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.scheduler.explain import explain_job
from taskyard.store import Store


def _types(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("plain", "shell:true"))
    store.task_types.put(TaskTypeSpec("migrate", "shell:true", locks=("db-main",)))


def submit(store: Store, type_: str, **options: object) -> int:
    (job_id,) = store.jobs.submit([JobSubmission(type_, **options)])  # type: ignore[arg-type]
    return job_id


def why(store: Store, job_id: int) -> list[tuple[str, int | None, str]]:
    return [(r.code, r.job_id, r.message) for r in explain_job(store, job_id)]


def test_a_job_held_by_capacity_and_a_lock_is_told_both(store: Store) -> None:
    _types(store)
    store.workers.register("w", ["default"], 1, lease_seconds=300)
    holder = submit(store, "migrate")
    schedule(store)
    assert store.jobs.get(holder).state == "dispatched"  # type: ignore[union-attr]
    older = submit(store, "plain")      # waits for room, ahead of the next one
    locked = submit(store, "migrate")   # waits for room and for db-main
    assert why(store, locked) == [
        ("lock_held", holder, f"lock db-main conflicts with job {holder}, which holds it"),
        ("no_capacity", None,
         "no worker in its pools (default) has room for it; 1 job(s) ahead in line")]
    assert why(store, older) == [
        ("no_capacity", None,
         "no worker in its pools (default) has room for it; 0 job(s) ahead in line")]


def test_the_jobs_ahead_are_those_of_its_pools_in_placement_order(store: Store) -> None:
    _types(store)
    store.workers.register("w", ["default", "gpu"], 1, lease_seconds=300)
    submit(store, "plain")
    schedule(store)                       # the worker is full from now on
    first, second = submit(store, "plain"), submit(store, "plain")
    submit(store, "plain", pools=("gpu",))            # another pool: not ahead
    urgent = submit(store, "plain", priority=5)       # younger but runs first
    later = submit(store, "plain", run_after=store.now() + 3600)  # not due: not in line
    last = submit(store, "plain", pools=("gpu", "default"))
    ahead = {job: r[0][2].rpartition("; ")[2] for job in (first, second, urgent, last)
             if (r := why(store, job))}
    assert ahead == {urgent: "0 job(s) ahead in line", first: "1 job(s) ahead in line",
                     second: "2 job(s) ahead in line", last: "4 job(s) ahead in line"}
    assert [r[0] for r in why(store, later)] == ["run_after"]


def test_a_lock_held_and_wanted_ahead_are_both_named(store: Store) -> None:
    _types(store)
    store.workers.register("w", ["default"], 4, lease_seconds=300)
    holder = submit(store, "migrate")
    schedule(store)
    waiting = submit(store, "migrate")    # behind the holder
    behind = submit(store, "migrate")     # behind the holder and the one waiting
    assert [(c, j) for c, j, _ in why(store, waiting)] == [("lock_held", holder)]
    assert [(c, j) for c, j, _ in why(store, behind)] == [
        ("lock_held", holder), ("lock_wanted_ahead", waiting)]


def test_a_full_queue_a_lock_and_a_missing_pool_together(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("migrate", "shell:true", locks=("db-main",),
                                      max_queue_length=1))
    store.workers.register("w", ["default"], 4, lease_seconds=300)
    holder = submit(store, "migrate")
    schedule(store)
    stuck = submit(store, "migrate", pools=("gpu",))
    assert [(c, j) for c, j, _ in why(store, stuck)] == [
        ("lock_held", holder), ("queue_full", None), ("no_worker", None)]


def test_a_placeable_job_still_names_its_worker(store: Store) -> None:
    _types(store)
    store.workers.register("w", ["default"], 2, lease_seconds=300)
    job = submit(store, "migrate")
    assert why(store, job) == [("placeable", None, "can be placed on worker w at the next cycle")]


def test_a_job_a_burst_spreads_is_told_it_stays_pending_and_the_cycle_agrees(
        store: Store) -> None:
    """A job the next cycle would place in a prefetch window and then take back to
    spread the burst (core/spread.py) is not "placeable": explain replays the cycle past
    it, to where the cycle decides what to take back. Each reason is then checked
    against what the cycle does."""
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    cold = store.workers.register("cold", ["default"], 1, lease_seconds=300, prefetch=512).id
    warm = store.workers.register("warm", ["default"], 1, lease_seconds=300, prefetch=512).id
    with store.write() as tx:
        tx.attempts.record(warm, prefetch=10)
        tx.attempts.record(cold, prefetch=0)
    burst = store.jobs.submit([JobSubmission("t") for _ in range(6)])
    # The cycle: one on cold (full), five on warm (its window takes ten more); the fair
    # level of 6 jobs on 2 slots is 3, so warm's last two are taken back.
    reasons = {job_id: [r.code for r in explain_job(store, job_id)] for job_id in burst}
    schedule(store)
    states = {job_id: store.jobs.get(job_id).state for job_id in burst}  # type: ignore[union-attr]
    assert [reasons[j] for j in burst] == [["placeable"]] * 4 + [["spread"]] * 2
    assert [states[j] for j in burst] == ["dispatched"] * 4 + ["pending"] * 2
    message = explain_job(store, burst[-1])
    assert [r.code for r in message] == ["spread"] and message[0].detail == "warm"


def test_a_job_for_later_due_but_not_yet_staged_is_told_so(store: Store) -> None:
    """Due by the clock but still in the delayed jobs' index until a maintenance stages
    it: explain says so, not that jobs are ahead of it in line (the placement index it
    replays does not hold it yet)."""
    store.task_types.put(TaskTypeSpec("plain", "shell:true"))
    store.workers.register("w", ["default"], 1, lease_seconds=300)
    job = submit(store, "plain", run_after=store.now() + 5)
    assert [code for code, _, _ in why(store, job)] == ["run_after"]
    store.clock.advance(10)  # type: ignore[union-attr]
    (reason,) = why(store, job)
    assert reason[0] == "run_after" and reason[2].startswith("due since ")
    schedule(store)  # its maintenance stages it, and places it
    assert store.jobs.get(job).state == "dispatched"  # type: ignore[union-attr]
