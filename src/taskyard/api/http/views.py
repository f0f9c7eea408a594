"""JSON answers built from records, shared by the routes and the CLI (no web framework
here): a job's detail, an attempt's log tails, a graph with its counts by state."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from taskyard.api.yard import Yard
from taskyard.core.substitution import result_references, substitute_results
from taskyard.model.errors import NotFound
from taskyard.model.records import AttemptRecord, GraphRecord, JobRecord
from taskyard.store.reads.job_pages import states_by_graph, succeeded_results
from taskyard.store.transitions.logs import attempt_output


def job_detail(yard: Yard, job_id: int) -> dict[str, Any]:
    """A job with its attempts and stages, why it is not running (``why`` in words,
    ``explain`` as codes) and its args as its handler gets them (``resolved_args``)."""
    record = yard.get_job(job_id)
    reasons = yard.explain(job_id)
    return {**record.to_json(), "why": [r.message for r in reasons],
            "explain": [r.to_json() for r in reasons], "resolved_args": resolved_args(yard, record)}


def resolved_args(yard: Yard, job: JobRecord) -> Any:
    """``args`` with each ``{$result: LABEL}`` marker whose job has succeeded replaced by
    that job's result (``$subs`` markers were replaced at submission)."""
    if job.graph_id is None:
        return job.args
    labels = result_references(job.args)
    if not labels:
        return job.args
    return substitute_results(job.args, succeeded_results(yard.store, job.graph_id, labels))


@dataclass(frozen=True, slots=True)
class Logs:
    """The kept output of one attempt, or of none yet: what it wrote while it ran
    (``output``, read by the worker as it came), else the tails kept at its end."""

    job_id: int
    attempt: AttemptRecord | None
    output: tuple[str, str] | None = None

    @property
    def ended(self) -> bool:
        return self.attempt is not None and self.attempt.finished_at is not None

    def to_json(self) -> dict[str, Any]:
        a = self.attempt
        out, err = self.output or ((a.stdout_tail if a else None) or "",
                                   (a.stderr_tail if a else None) or "")
        return {"job_id": self.job_id, "attempt": None if a is None else a.attempt,
                "state": None if a is None else a.state, "stdout": out, "stderr": err}


def job_logs(yard: Yard, job_id: int, attempt: int | None = None) -> Logs:
    """Attempt ``attempt`` of the job (default: its latest); NotFound for a job or an
    attempt number that does not exist."""
    job = yard.get_job(job_id)
    if attempt is None:
        last = job.attempts[-1] if job.attempts else None
        return Logs(job_id, last, None if last is None else
                    attempt_output(yard.store, job_id, last.attempt))
    for found in job.attempts:
        if found.attempt == attempt:
            return Logs(job_id, found, attempt_output(yard.store, job_id, attempt))
    raise NotFound(f"job {job_id} has no attempt {attempt} "
                   f"(it has {len(job.attempts)})")


def graph_json(yard: Yard, record: GraphRecord) -> dict[str, Any]:
    """A graph as ``graph show --json`` gives it, plus its job counts by state."""
    return graphs_json(yard, [record])[0]


def graphs_json(yard: Yard, records: Sequence[GraphRecord]) -> list[dict[str, Any]]:
    """:func:`graph_json` of each graph, their counts read in one statement."""
    states = states_by_graph(yard.store, (r.id for r in records))
    return [{**r.to_json(), "states": states[r.id]} for r in records]
