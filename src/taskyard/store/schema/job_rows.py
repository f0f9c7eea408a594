"""Jobs as rows of ``jobs`` (and their attempts'), and back."""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import fields
from operator import attrgetter, is_, itemgetter
from typing import Any

from sqlalchemy import and_

from taskyard.core.handlers import check_shell_job
from taskyard.core.limits import (
    DEFAULT_LIMITS,
    PRIORITY_MAX,
    LimitError,
    Limits,
    check_name,
    encode_args,
    whole,
)
from taskyard.core.locks import LockTemplateError, render_claims
from taskyard.core.rate_limits import RateLimitError, render_rate_key
from taskyard.core.states import JobState
from taskyard.model.errors import InvalidInput
from taskyard.model.records import (
    AttemptRecord,
    JobRecord,
    JobSubmission,
    StageRecord,
    TaskTypeSpec,
    dumps,
    loads,
)
from taskyard.store import schema as t

_J = t.jobs
_A = t.attempts

# Columns a job listing needs, with the worker of its current attempt.
JOB_COLUMNS = (*_J.c, _A.c.worker_name)
JOB_FROM = _J.outerjoin(_A, and_(_A.c.job_id == _J.c.id, _A.c.attempt == _J.c.attempt))


def delayed_until(run_after: float | None) -> float | None:
    """A new job's ``delayed_until``: its ``run_after`` when that is ahead (by this
    host's clock; the database's decides when it is due). A marker, never a decision:
    the cycle places a job only once its ``run_after`` has passed on the database's
    clock, and the maintenance clears the marker of a job due on it, so a host whose
    clock is off makes a job wait for that maintenance (ahead) or read in the placement
    index until due (behind), as every job did before migration 0020."""
    return run_after if run_after is not None and run_after > time.time() else None


def job_row(sub: JobSubmission, spec: TaskTypeSpec, index: int | None, *,
            args_checked: bool = False, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """The jobs row for a submission, or InvalidInput naming what is wrong.

    ``args_checked``: the args were already validated against the limits (graphs are
    validated whole before anything is written), so only encode them.
    ``index``: the job's place in a batch, which errors name (None: a lone job, named by
    its type).
    """
    where = (f"task {sub.label!r}" if sub.label is not None
             else f"job of type {spec.name!r}" if index is None else f"job {index}")
    try:
        args_text = (sub.args_text or dumps(sub.args) if args_checked
                     else encode_args(sub.args, where=where, limits=limits))
        locks = locks_text(spec, sub.args, sub.locks)
        rate_key = rate_key_of(spec, sub.args)
    except (LimitError, LockTemplateError, RateLimitError) as exc:
        raise InvalidInput(str(exc)) from None
    pools = sub.pools or spec.pools
    try:  # as refused_as_invalid(where), without a context manager per job (~2 µs)
        if spec.handler.startswith("shell:"):
            check_shell_job(spec.handler[6:], sub.args, args_text)
        whole(sub.priority, "priority", minimum=-PRIORITY_MAX, maximum=PRIORITY_MAX)
        if sub.retries is not None:
            whole(sub.retries, "retries")
        for pool in sub.pools or ():
            check_name(pool, "pool name")
    except ValueError as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    row = {
        "type": spec.name,
        "args": args_text,
        "priority": sub.priority,
        "pools": pools_text(tuple(pools)),
        "cost": spec.cost,
        "locks": locks,
        "retries": spec.retries if sub.retries is None else sub.retries,
        "retry_delay": spec.retry_delay,
        "retry_backoff": spec.retry_backoff,
        "retry_max_delay": spec.retry_max_delay,
        "max_worker_losses": spec.max_worker_losses,
        "timeout": spec.timeout if sub.timeout is None else sub.timeout,
        "run_after": sub.run_after,
        "delayed_until": delayed_until(sub.run_after),
        "label": sub.label,
        "graph_id": sub.graph_id,
        "routing": sub.routing,
        "launch_type": sub.launch_type,
        "schedule_name": sub.schedule_name,
        "dedup_key": sub.dedup_key,
        "state": JobState.PENDING,
        # Every row has every key: executemany compiles one statement for all rows.
        "unmet_deps": 0,
        "convergence": "all",
        "definition_hash": None,
        "unique_key": sub.unique_key,
        "rate_key": rate_key,
        "logical_time": sub.logical_time,
    }
    if sub.trace_context is not None:
        # Only when there is one: an untraced submit binds no more values than before
        # (see :func:`same_columns` for a batch that mixes both).
        row["trace_context"] = sub.trace_context
    return row


def same_columns(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with every key of any of them (executemany compiles one statement for
    all rows): a batch where some jobs carry a trace context and others do not."""
    if len(rows) > 1 and any("trace_context" in r for r in rows):
        for row in rows:
            row.setdefault("trace_context", None)
    return rows


_OPTIONS = attrgetter(*(f.name for f in fields(JobSubmission) if f.name != "args"))
"""Every field of a submission but its args: the jobs of one call share them all."""


def row_values(subs: Sequence[JobSubmission], specs: Mapping[str, TaskTypeSpec],
               first: dict[str, Any], columns: Sequence[str], *,
               limits: Limits = DEFAULT_LIMITS) -> Iterator[tuple[Any, ...]]:
    """Each submission's row as :func:`job_row` builds it, as values in ``columns``'
    order (a column a row lacks is None: ``trace_context`` in a batch that mixes traced
    jobs); ``first``: the first submission's row, built by the caller.

    A job whose every field but its args is the first job's very object (the jobs of
    one call: ``SubmitOptions.submissions``) is the first's row but for what its args
    decide: their text, its locks and rate key, a shell type's check. The first's
    checks of the rest hold for it, so they are not made again (a batch of 1,000 spent
    a fifth of its client's time building its rows). A refusal is job_row's own."""
    values = itemgetter(*columns)
    traced = "trace_context" in columns

    def whole(row: dict[str, Any]) -> tuple[Any, ...]:
        if traced:
            row.setdefault("trace_context", None)
        built: tuple[Any, ...] = values(row)
        return built

    shared = list(whole(first))
    yield tuple(shared)
    if len(subs) == 1:
        return
    spec, options = specs[subs[0].type], _OPTIONS(subs[0])
    at_args, at_locks, at_rate = (columns.index(c) for c in ("args", "locks", "rate_key"))
    shell = spec.handler[6:] if spec.handler.startswith("shell:") else None
    for index in range(1, len(subs)):
        sub = subs[index]
        if all(map(is_, _OPTIONS(sub), options)):
            args = sub.args
            try:
                text = encode_args(args, where="", limits=limits)
                if shell is not None:
                    check_shell_job(shell, args, text)
                shared[at_locks] = locks_text(spec, args, sub.locks)
                shared[at_rate] = rate_key_of(spec, args)
            except ValueError:  # job_row's error names the job
                pass
            else:
                shared[at_args] = text
                yield tuple(shared)
                continue
        yield whole(job_row(sub, specs[sub.type], index, limits=limits))


def rate_key_of(spec: TaskTypeSpec, args: dict[str, Any]) -> str | None:
    """The rate-limit key of a job of type ``spec`` with ``args`` (None when the type
    has no key template: its jobs share one budget). RateLimitError names a missing arg."""
    if spec.rate_limit is None or spec.rate_key is None:
        return None
    return render_rate_key(spec.rate_key, args)


_NO_LOCKS = dumps([])


def locks_text(spec: TaskTypeSpec, args: dict[str, Any], extra: Sequence[str]) -> str:
    """The stored claims of a job of type ``spec`` (LockTemplateError if a template
    names a missing arg)."""
    if spec.simultaneous and not spec.locks and not extra:
        return _NO_LOCKS
    return dumps([c.encode() for c in render_claims(
        spec.name, spec.locks, args, simultaneous=spec.simultaneous, extra=extra)])


@functools.lru_cache(maxsize=1024)
def pools_text(pools: tuple[str, ...]) -> str:
    return dumps(list(pools))


def to_record(row: Any, attempts: Sequence[AttemptRecord] = (),
              stages: Sequence[StageRecord] = ()) -> JobRecord:
    m = row._mapping
    return JobRecord(
        id=m["id"],
        type=m["type"],
        state=m["state"],
        attempt=m["attempt"],
        args=loads(m["args"]),
        result=loads(m["result"]),
        exit_code=m["exit_code"],
        priority=m["priority"],
        pools=tuple(loads(m["pools"])),
        worker=m.get("worker_name"),
        graph_id=m["graph_id"],
        label=m["label"],
        created_at=m["created_at"],
        started_at=m["started_at"],
        finished_at=m["finished_at"],
        cost=m["cost"],
        locks=tuple(loads(m["locks"])),
        run_after=m["run_after"],
        unmet_deps=m["unmet_deps"],
        retries=m["retries"],
        timeout=m["timeout"],
        error=m["error"],
        launch_type=m["launch_type"],
        cancel_requested=bool(m["cancel_requested"]),
        attempts=tuple(attempts),
        stages=tuple(stages),
        base_priority=m["base_priority"],
        unique_key=m["unique_key"],
        rate_key=m["rate_key"],
        schedule_name=m["schedule_name"],
        kind=m["kind"],
        signal=m["signal_name"],
        signal_key=m["signal_key"],
        deadline=m["deadline"],
        logical_time=m["logical_time"],
        trace_context=m["trace_context"],
    )


def attempt_record(row: Any) -> AttemptRecord:
    m = row._mapping
    return AttemptRecord(
        attempt=m["attempt"],
        state=m["state"],
        worker=m["worker_name"],
        exit_code=m["exit_code"],
        dispatched_at=m["dispatched_at"],
        started_at=m["started_at"],
        finished_at=m["finished_at"],
        result=loads(m["result"]),
        error=m["error"],
        stdout_tail=m["stdout_tail"],
        stderr_tail=m["stderr_tail"],
    )
