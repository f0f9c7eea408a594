"""Stages of attempts written once for both backends: a worker's stage report (fenced
like a completion) and the results a later attempt resumes from."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taskyard.store.cursor import Cursor
from taskyard.store.driver.params import ReportStage

# Dispatched counts too: the worker records starts in batches, so a stage may be
# reported before the start of its attempt is.
_CURRENT = ("SELECT id FROM jobs WHERE id = ? AND attempt = ? "
            "AND state IN ('dispatched', 'running') AND worker_id = ? "
            "AND EXISTS (SELECT 1 FROM workers w WHERE w.id = ? AND w.state = 'active' "
            "AND w.lease_expires_at >= {now})")


def report_stage(raw: Cursor, params: ReportStage) -> bool:
    """The stage begins (``running``) or ends, only while ``attempt`` is the job's
    current one on this worker under a valid lease (the job's row locked: a concurrent
    expel or cancel waits for this commit); False otherwise, with nothing written."""
    p = params
    if raw.first(f"{_CURRENT}{raw.row_lock}", (p.job_id, p.attempt, p.worker_id,
                                                 p.worker_id)) is None:
        return False
    ends = p.state != "running"
    started = "" if ends else ", started_at = {now}"
    if raw.run(f"UPDATE stages SET state = ?, result = ?, "
               f"finished_at = CASE WHEN ? THEN {{now}} END{started} "
               "WHERE job_id = ? AND attempt = ? AND name = ?",
               (p.state, p.result, ends, p.job_id, p.attempt, p.name)) == 0:
        raw.run("INSERT INTO stages (job_id, attempt, name, seq, state, result, started_at, "
                "finished_at) SELECT ?, ?, ?, COUNT(*) + 1, ?, ?, {now}, "
                "CASE WHEN ? THEN {now} END FROM stages WHERE job_id = ? AND attempt = ?",
                (p.job_id, p.attempt, p.name, p.state, p.result, ends, p.job_id, p.attempt))
    return True


def finished_stages(raw: Cursor, job_ids: Sequence[int]) -> list[tuple[Any, ...]]:
    """The stages that succeeded, of the jobs of ``job_ids``: (job, attempt, name,
    result), in attempt order."""
    which, params = raw.member("job_id", job_ids)
    return raw.all("SELECT job_id, attempt, name, result FROM stages "
                   f"WHERE {which} AND state = 'succeeded' ORDER BY job_id, attempt", params)
