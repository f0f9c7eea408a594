"""Jobs as the aggregates and the CLI read them back, written once for both backends:
each job's row with the worker of its current attempt, its attempts and stages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from taskyard.core.states import TERMINAL
from taskyard.store import schema as t
from taskyard.store.cursor import Cursor
from taskyard.store.driver.params import ReadJobs


@dataclass(frozen=True, slots=True)
class mapped:
    """A row read as a mapping of column names, as schema/job_rows.py's ``to_record``
    and ``attempt_record`` take rows: through ``_mapping``."""

    _mapping: dict[str, Any]


JOB_NAMES = (*(c.name for c in t.jobs.c), "worker_name")
"""The names of what :func:`read_jobs` returns, in order."""
_SELECT = ("SELECT " + ", ".join(f"j.{c.name}" for c in t.jobs.c) + ", a.worker_name "
           "FROM jobs j LEFT JOIN attempts a ON a.job_id = j.id AND a.attempt = j.attempt")
ATTEMPT_NAMES = tuple(c.name for c in t.attempts.c)
STAGE_NAMES = ("attempt", "name", "seq", "state", "started_at", "finished_at", "result")
_ENDED = ", ".join(f"'{s}'" for s in sorted(TERMINAL))


def read_jobs(raw: Cursor, params: ReadJobs) -> list[dict[str, Any]]:
    """Jobs as :class:`ReadJobs` asks, as mappings of :data:`JOB_NAMES`."""
    where: list[str] = []
    values: list[Any] = []
    for column, value in (("id", params.job_id), ("graph_id", params.graph_id),
                          ("state", params.state), ("type", params.type)):
        if value is not None:
            where.append(f"j.{column} = ?")
            values.append(value)
    if params.due:
        where.append("(j.run_after IS NULL OR j.run_after <= {now})")
    if params.after is not None:
        where.append("j.id < ?" if params.newest_first else "j.id > ?")
        values.append(params.after)
    sql = _SELECT + (f" WHERE {' AND '.join(where)}" if where else "")
    sql += " ORDER BY j.id DESC" if params.newest_first else " ORDER BY j.id"
    if params.limit is not None:
        sql += " LIMIT ?"
        values.append(params.limit)
    return [dict(zip(JOB_NAMES, row, strict=True)) for row in raw.all(sql, values)]


def read_job_attempts(raw: Cursor, job_id: int | None = None,
                      graph_id: int | None = None) -> list[dict[str, Any]]:
    """The attempts of a job, or of every job of a graph, by job and number."""
    columns = ", ".join(f"a.{n}" for n in ATTEMPT_NAMES)
    if job_id is not None:
        rows = raw.all(f"SELECT {columns} FROM attempts a WHERE a.job_id = ? "
                       "ORDER BY a.attempt", (job_id,))
    else:
        rows = raw.all(f"SELECT {columns} FROM attempts a JOIN jobs j ON j.id = a.job_id "
                       "WHERE j.graph_id = ? ORDER BY a.job_id, a.attempt", (graph_id,))
    return [dict(zip(ATTEMPT_NAMES, row, strict=True)) for row in rows]


def read_job_stages(raw: Cursor, job_id: int) -> list[tuple[Any, ...]]:
    """The job's stages, by attempt and order: rows of :data:`STAGE_NAMES`."""
    return raw.all(f"SELECT {', '.join(STAGE_NAMES)} FROM stages WHERE job_id = ? "
                   "ORDER BY attempt, seq", (job_id,))


def count_unfinished(raw: Cursor) -> int:
    """Jobs not yet in a final state."""
    row = raw.first(f"SELECT COUNT(*) FROM jobs WHERE state NOT IN ({_ENDED})")
    assert row is not None
    return int(row[0])


def unfinished_groups(raw: Cursor, horizon: float) -> list[tuple[Any, ...]]:
    """Unfinished jobs grouped by state and pools list: (state, pools, count, how many
    are due after ``horizon`` seconds from now, the first of those)."""
    return raw.all(
        "SELECT state, pools, COUNT(*), "
        "SUM(CASE WHEN run_after > {now} + ? THEN 1 ELSE 0 END), "
        "MIN(CASE WHEN run_after > {now} + ? THEN run_after END) "
        f"FROM jobs WHERE state NOT IN ({_ENDED}) GROUP BY state, pools", (horizon, horizon))


def read_jobs_in(raw: Cursor, ids: list[int]) -> list[dict[str, Any]]:
    """The jobs with these ids (not empty), as mappings of :data:`JOB_NAMES`."""
    which, values = raw.member("j.id", ids)
    return [dict(zip(JOB_NAMES, row, strict=True))
            for row in raw.all(f"{_SELECT} WHERE {which} ORDER BY j.id", values)]


def read_attempts_in(raw: Cursor, job_ids: list[int]) -> list[dict[str, Any]]:
    """The attempts of these jobs (not empty), by job and number."""
    which, values = raw.member("job_id", job_ids)
    return [dict(zip(ATTEMPT_NAMES, row, strict=True)) for row in raw.all(
        f"SELECT {', '.join(ATTEMPT_NAMES)} FROM attempts WHERE {which} "
        "ORDER BY job_id, attempt", values)]


def read_stages_in(raw: Cursor, job_ids: list[int]) -> list[tuple[Any, ...]]:
    """The stages of these jobs (not empty): rows of the job id and :data:`STAGE_NAMES`."""
    which, values = raw.member("job_id", job_ids)
    return raw.all(f"SELECT job_id, {', '.join(STAGE_NAMES)} FROM stages WHERE {which} "
                   "ORDER BY job_id, attempt, seq", values)
