"""What a schedule's ticks need beyond their insert, written once for both backends:
the previous job's state under a row lock (overlap), jobs queued behind it, a tick's
job by its key, a backfill's graph."""

from __future__ import annotations

from collections.abc import Sequence

from taskyard.store.cursor import Cursor


def lock_run(raw: Cursor, job_id: int) -> str | None:
    """The state of job ``job_id`` (None if pruned), its row locked as an update locks
    it: an end reported meanwhile commits first and is seen, or waits for us."""
    row = raw.first(f"SELECT state FROM jobs WHERE id = ?{raw.row_lock}", (job_id,))
    return None if row is None else str(row[0])


def queue_behind(raw: Cursor, ids: Sequence[int]) -> None:
    """Jobs of ``ids`` (just inserted) wait for one more job: their previous run."""
    raw.many("UPDATE jobs SET state = 'waiting', unmet_deps = unmet_deps + 1 "
             "WHERE id = ? AND state IN ('pending', 'waiting')", [(job,) for job in ids])


def job_of_key(raw: Cursor, key: str) -> int | None:
    """The job holding dedup key ``key`` (a tick's), if any."""
    row = raw.first("SELECT id FROM jobs WHERE dedup_key = ?", (key,))
    return None if row is None else int(row[0])


def size_graph(raw: Cursor, graph_id: int, jobs: int) -> None:
    """A backfill's graph holds ``jobs`` jobs (the ticks that had none before)."""
    raw.run("UPDATE graphs SET jobs_total = ? WHERE id = ?", (jobs, graph_id))


def drop_graph(raw: Cursor, graph_id: int) -> None:
    """A backfill's graph that got no job (every tick had one): not kept."""
    raw.run("DELETE FROM graphs WHERE id = ? AND NOT EXISTS "
            "(SELECT 1 FROM jobs WHERE graph_id = ?)", (graph_id, graph_id))


def backfill_graphs(raw: Cursor, schedule: str) -> list[int]:
    """The graphs of the schedule's backfills that have jobs not ended (through the
    index of scheduled jobs)."""
    rows = raw.all("SELECT DISTINCT graph_id FROM jobs WHERE schedule_name = ? "
                   "AND launch_type = 'backfill' AND graph_id IS NOT NULL "
                   "AND state IN ('waiting', 'pending', 'dispatched', 'running', 'suspended') "
                   "ORDER BY graph_id", (schedule,))
    return [int(g) for (g,) in rows]
