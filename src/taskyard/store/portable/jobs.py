"""Jobs' transitions and reads written once for both backends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taskyard.store.cursor import Cursor
from taskyard.store.driver.params import CancelJob
from taskyard.store.schema.task_type_rows import SELECT_SPECS

_ACTIVE = "('dispatched', 'running')"


def read_job_state(raw: Cursor, job_id: int) -> tuple[Any, ...] | None:
    """(state, worker, graph, routing) of job ``job_id``; None if there is none."""
    return raw.first("SELECT state, worker_id, graph_id, routing FROM jobs WHERE id = ?",
                     (job_id,))


def cancel_job(raw: Cursor, params: CancelJob) -> bool:
    """The job is canceled, guarded by the state it was read in (False: it moved on); a
    dispatched or running one keeps ``cancel_requested`` for its worker, and its
    attempt is canceled."""
    active = params.state in ("dispatched", "running")
    done = raw.run("UPDATE jobs SET state = 'canceled', worker_id = NULL, deadline = NULL, "
                   "cancel_requested = ?, finished_at = {now} WHERE id = ? AND state = ?",
                   (active, params.job_id, params.state))
    if done != 1:
        return False
    if active:
        raw.run("UPDATE attempts SET state = 'canceled', finished_at = {now} "
                f"WHERE job_id = ? AND state IN {_ACTIVE}", (params.job_id,))
    return True


def retry_policies(raw: Cursor, job_ids: Sequence[int]) -> list[tuple[Any, ...]]:
    """Per job: (id, retries, retry delay, backoff, max delay, how many of its attempts
    ended failed or error — lost ones are the worker's, not its)."""
    which, params = raw.member("j.id", job_ids)
    return raw.all("SELECT j.id, j.retries, j.retry_delay, j.retry_backoff, j.retry_max_delay, "
                   "(SELECT COUNT(*) FROM attempts a WHERE a.job_id = j.id "
                   f"AND a.state IN ('failed', 'error')) FROM jobs j WHERE {which}", params)


def task_types(raw: Cursor, names: Sequence[str]) -> list[tuple[Any, ...]]:
    """The rows of the task types among ``names`` (the columns of
    schema/task_type_rows.py:COLUMNS), one indexed read."""
    which, params = raw.member("name", names)
    return raw.all(SELECT_SPECS.replace("{which}", which), params)


def results_of(raw: Cursor, graph_id: int, labels: Sequence[str]) -> list[tuple[Any, ...]]:
    """The results of the graph's jobs labelled ``labels``: (label, result)."""
    which, params = raw.member("label", labels)
    return raw.all(f"SELECT label, result FROM jobs WHERE graph_id = ? AND {which}",
                   (graph_id, *params))


def make_waiting(raw: Cursor, waits: Sequence[tuple[int, int]]) -> None:
    """Pending jobs wait on ``n`` more prerequisites, per (job, n) of ``waits``."""
    raw.many("UPDATE jobs SET state = 'waiting', unmet_deps = unmet_deps + ? "
             "WHERE id = ? AND state = 'pending'", [(n, job) for job, n in waits])


def rewrite_args(raw: Cursor, args: Sequence[tuple[int, str]]) -> None:
    """Jobs' args rewritten, per (job, args text) of ``args`` (a graph's ``$subs``)."""
    raw.many("UPDATE jobs SET args = ? WHERE id = ?", [(text, job) for job, text in args])
