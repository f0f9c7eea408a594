"""Live output (store/transitions/logs.py) on both stores: chunks written while an
attempt runs, fenced like every report, bounded per stream, kept when canceled."""

from __future__ import annotations

from tests.store.driver import claim, wait_out_lease

from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.store import Store
from taskyard.store.transitions.logs import LogChunk, append_logs, attempt_output, read_logs


def _running(store: Store, worker: str = "w1") -> tuple[int, int]:
    """A job dispatched to a new worker: (worker id, job id)."""
    worker_id = store.workers.register(worker, ["default"], 2, lease_seconds=30).id
    store.task_types.put(TaskTypeSpec("talk", "shell:true"))
    (job_id,) = store.jobs.submit([JobSubmission("talk")])
    schedule(store)
    (claimed,) = claim(store, worker_id, 1)
    assert claimed.job_id == job_id and claimed.attempt == 1
    return worker_id, job_id


def test_chunks_are_kept_in_order_and_bounded_per_stream(store: Store) -> None:
    worker_id, job_id = _running(store)
    chunks = [LogChunk(job_id, 1, 1, "stdout", 6, "hello\n"),
              LogChunk(job_id, 1, 2, "stderr", 5, "oops\n"),
              LogChunk(job_id, 1, 3, "stdout", 12, "world\n")]
    assert append_logs(store, worker_id, chunks, limit=100) == set()
    assert attempt_output(store, job_id, 1) == ("hello\nworld\n", "oops\n")
    read = read_logs(store, job_id, 1, after=1)
    assert read is not None and [c.seq for c in read.chunks] == [2, 3]
    assert read.state == "running" and read.latest == 1
    # Past the bound, the oldest chunks of that stream go; the other stream stays.
    append_logs(store, worker_id, [LogChunk(job_id, 1, 4, "stdout", 20, "x" * 8)], limit=10)
    assert attempt_output(store, job_id, 1) == ("world\n" + "x" * 8, "oops\n")
    assert read_logs(store, 999, 1) is None
    assert attempt_output(store, job_id, 2) is None


def test_writes_are_fenced_by_worker_and_lease_and_a_cancel_keeps_them(store: Store) -> None:
    worker_id, job_id = _running(store)
    other = store.workers.register("w2", ["default"], 2, lease_seconds=30).id
    assert append_logs(store, other, [LogChunk(job_id, 1, 1, "stdout", 3, "no\n")],
                       limit=100) == {(job_id, 1)}
    assert append_logs(store, worker_id, [LogChunk(job_id, 2, 1, "stdout", 3, "no\n")],
                       limit=100) == {(job_id, 2)}
    assert attempt_output(store, job_id, 1) is None
    store.jobs.cancel(job_id)
    # The canceled attempt's last words, read once its process ended, are kept.
    assert append_logs(store, worker_id, [LogChunk(job_id, 1, 1, "stdout", 5, "bye!\n")],
                       limit=100) == set()
    assert attempt_output(store, job_id, 1) == ("bye!\n", "")
    wait_out_lease(store, worker_id)
    assert append_logs(store, worker_id, [LogChunk(job_id, 1, 2, "stdout", 9, "late\n")],
                       limit=100) == {(job_id, 1)}
    assert attempt_output(store, job_id, 1) == ("bye!\n", "")


def test_a_pruned_job_takes_its_output_with_it(store: Store) -> None:
    worker_id, job_id = _running(store)
    append_logs(store, worker_id, [LogChunk(job_id, 1, 1, "stdout", 3, "hi\n")], limit=100)
    store.jobs.cancel(job_id)
    with store.engine.begin() as conn:
        from sqlalchemy import delete, func, select

        from taskyard.store import schema as t

        for table in (t.attempts, t.stages):
            conn.execute(delete(table).where(table.c.job_id == job_id))
        conn.execute(delete(t.jobs).where(t.jobs.c.id == job_id))
        assert conn.execute(select(func.count()).select_from(t.log_chunks)).scalar_one() == 0
