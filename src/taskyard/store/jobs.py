"""Jobs: submit, read, cancel, retry."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter
from typing import Any

from sqlalchemy import Connection, and_, bindparam, func, select, update

from taskyard.core.limits import DEFAULT_LIMITS, LimitError, Limits, encode_args
from taskyard.core.locks import LockTemplateError, render_claims
from taskyard.core.states import ACTIVE, TERMINAL, AttemptState, JobState
from taskyard.store import schema as t
from taskyard.store.base import job_key
from taskyard.store.cycle_pg import AHEAD, Ahead
from taskyard.store.errors import Conflict, InvalidInput, NotFound
from taskyard.store.prereqs import PrereqMixin, PrereqPlan
from taskyard.store.raw import BULK_MIN_ROWS, Raw, insert_edges, pg_types
from taskyard.store.records import (
    AttemptRecord,
    JobRecord,
    JobSubmission,
    StageRecord,
    TaskTypeSpec,
    dumps,
    loads,
)
from taskyard.store.resolution import Ended, ResolutionMixin
from taskyard.store.submit_pg import submit_one
from taskyard.store.task_types import specs_by_name

_J = t.jobs
_A = t.attempts

# Columns a job listing needs, with the worker of its current attempt.
JOB_COLUMNS = (*_J.c, _A.c.worker_name)
JOB_FROM = _J.outerjoin(_A, and_(_A.c.job_id == _J.c.id, _A.c.attempt == _J.c.attempt))


def job_row(sub: JobSubmission, spec: TaskTypeSpec, index: int, *,
            args_checked: bool = False, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """The jobs row for a submission, or InvalidInput naming what is wrong.

    ``args_checked``: the args were already validated against the limits (graphs are
    validated whole before anything is written), so only encode them.
    """
    where = f"job {index}" if sub.label is None else f"task {sub.label!r}"
    try:
        args_text = (sub.args_text or dumps(sub.args) if args_checked
                     else encode_args(sub.args, where=where, limits=limits))
        locks = locks_text(spec, sub.args, sub.locks)
    except (LimitError, LockTemplateError) as exc:
        raise InvalidInput(str(exc)) from None
    pools = sub.pools or spec.pools
    if any(not p for p in pools):
        raise InvalidInput(f"{where}: pool names must not be empty")
    if isinstance(sub.priority, bool) or not isinstance(sub.priority, int):
        raise InvalidInput(f"{where}: priority must be an integer")
    return {
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
    }


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


class JobStore(ResolutionMixin, PrereqMixin):
    def submit_jobs(self, subs: Sequence[JobSubmission], *,
                    place: Callable[[Connection], bool] | None = None) -> list[int]:
        """Insert pending jobs atomically; all or nothing. Returns their ids in order.

        ``place(conn)`` runs in the same transaction once the jobs are in (the API
        passes the scheduling cycle: seed 000 runs schedule() on job creation, and in
        one transaction a job reaches its worker with one commit); it returns whether
        it could run. When it could not, the scheduler is woken instead."""
        if not subs:
            return []
        with self._tx() as conn:
            if len(subs) == 1 and not self.sqlite:
                sub = subs[0]
                # The insert also tries the cycle's lock: one round trip for both.
                raw = Raw(conn)
                job_id, held = submit_one(raw, sub, self._spec_cache, lambda spec: job_row(
                    sub, spec, 0, limits=self.limits), lock=place is not None)
                if job_id is not None:
                    if held is not None:  # for the cycle place() runs (the transaction's)
                        conn.info[AHEAD] = Ahead.read(raw, held)
                    if place is None or not place(conn):
                        self._notify(conn, ["scheduler"])
                    return [job_id]
            specs = self._specs_for(conn, {s.type for s in subs})
            rows = []
            for index, sub in enumerate(subs):
                spec = specs.get(sub.type)
                if spec is None:
                    raise InvalidInput(f"unknown task type {sub.type!r}")
                rows.append(job_row(sub, spec, index, limits=self.limits))
            plan = self._plan_prerequisites(conn, subs, specs)
            if not plan.spawn and not plan.waits:
                ids = self._insert_jobs(conn, rows)
            else:
                ids = self._insert_with_prerequisites(conn, rows, plan, specs)
            if place is None or not place(conn):
                self._notify(conn, ["scheduler"])
            return ids

    def _insert_with_prerequisites(
        self, conn: Connection, rows: list[dict[str, Any]], plan: PrereqPlan,
        specs: dict[str, TaskTypeSpec],
    ) -> list[int]:
        """Spawned prerequisites first, then the launched jobs waiting on them."""
        missing = {s.type for s in plan.spawn} - set(specs)
        specs = {**specs, **self._specs_for(conn, missing)} if missing else specs
        prereq_ids = self._insert_jobs(
            conn, [job_row(s, specs[s.type], i) for i, s in enumerate(plan.spawn)]
        )
        waits = {index: list(ids) for index, ids in plan.waits.items()}
        for prereq_id, waiters in zip(prereq_ids, plan.spawn_waiters, strict=True):
            for index in waiters:
                waits.setdefault(index, []).append(prereq_id)
        for index, ids in waits.items():
            # Added to what the row waits for already (a graph task's own parents).
            rows[index].update(state=JobState.WAITING,
                               unmet_deps=rows[index]["unmet_deps"] + len(ids))
        job_ids = self._insert_jobs(conn, rows)
        insert_edges(conn, [(job_ids[index], prereq, "success")
                            for index, ids in waits.items() for prereq in ids])
        return job_ids

    def _wait_on_prerequisites(
        self, conn: Connection, jobs: Sequence[tuple[int, JobSubmission]],
        specs: dict[str, TaskTypeSpec],
    ) -> set[int]:
        """Update on launch for jobs just inserted pending (a schedule's tick jobs): spawn
        or reuse their prerequisites and make them wait; returns the ids now waiting."""
        plan = self._plan_prerequisites(conn, [sub for _, sub in jobs], specs)
        if not plan.spawn and not plan.waits:
            return set()
        missing = {s.type for s in plan.spawn} - set(specs)
        specs = {**specs, **self._specs_for(conn, missing)} if missing else specs
        prereq_ids = self._insert_jobs(
            conn, [job_row(s, specs[s.type], i) for i, s in enumerate(plan.spawn)])
        waits = {index: list(ids) for index, ids in plan.waits.items()}
        for prereq_id, waiters in zip(prereq_ids, plan.spawn_waiters, strict=True):
            for index in waiters:
                waits.setdefault(index, []).append(prereq_id)
        conn.execute(
            update(_J).where(_J.c.id == bindparam("jid"), _J.c.state == JobState.PENDING)
            .values(state=JobState.WAITING, unmet_deps=_J.c.unmet_deps + bindparam("n")),
            [{"jid": jobs[index][0], "n": len(ids)} for index, ids in waits.items()])
        insert_edges(conn, [(jobs[index][0], prereq, "success")
                            for index, ids in waits.items() for prereq in ids])
        return {jobs[index][0] for index in waits}

    def _specs_for(self, conn: Connection, names: set[str]) -> dict[str, TaskTypeSpec]:
        return specs_by_name(conn, names)

    def _insert_jobs(self, conn: Connection, rows: list[dict[str, Any]]) -> list[int]:
        """Insert rows (already validated) and announce the pending ones."""
        if not rows:  # an empty executemany would run as one bare INSERT
            return []
        columns = tuple(rows[0])
        values = list(map(itemgetter(*columns), rows))
        return self._insert_values(conn, columns, values)

    def _insert_values(self, conn: Connection, columns: Sequence[str],
                       values: list[tuple[Any, ...]]) -> list[int]:
        """:meth:`_insert_jobs` for rows given as tuples in the order of ``columns``."""
        if not values:
            return []
        ids = self._insert_rows(conn, columns, values, len(values))
        state, graph, routing, type_ = (columns.index(c)
                                        for c in ("state", "graph_id", "routing", "type"))
        self._events(conn, (
            ("job-pending", job_key(row[graph], row[routing]),
             {"job_id": job_id, "type": row[type_]}, job_id, row[graph])
            for job_id, row in zip(ids, values, strict=True) if row[state] == JobState.PENDING))
        return ids

    def _insert_rows(self, conn: Connection, columns: Sequence[str],
                     values: Iterable[tuple[Any, ...]], count: int) -> list[int]:
        """Insert ``count`` job rows (tuples in the order of ``columns``, which has every
        key of :func:`job_row`); their ids in order (the order of creation). On
        PostgreSQL a large batch is streamed: the rows may be computed as they go."""
        if count == 0:
            return []
        raw = Raw(conn)
        if count == 1:  # one submit: one statement on the driver (the latency path)
            row = raw.first(
                f"INSERT INTO jobs ({', '.join(columns)}, created_at) VALUES "
                f"({', '.join('?' for _ in columns)}, {{now}}) RETURNING id",
                next(iter(values)))
            assert row is not None
            return [int(row[0])]
        if self.sqlite:
            # Our write transaction is exclusive and INTEGER PRIMARY KEY ids are max(id)
            # + 1: the rows get consecutive ids, checked below (SQLite runs an INSERT …
            # RETURNING row by row).
            (before,) = raw.first("SELECT MAX(id) FROM jobs") or (0,)
            first = int(before or 0) + 1
            raw.values(f"INSERT INTO jobs ({', '.join(columns)}, created_at)",
                       f"({', '.join('?' for _ in columns)}, {{now}})", list(values))
            (last,) = raw.first("SELECT MAX(id) FROM jobs") or (0,)
            if last != first + count - 1:
                raise RuntimeError("job ids were not consecutive; refusing to guess them")
            return list(range(first, first + count))
        # PostgreSQL: take the ids from the sequence first (in order: the order of
        # creation), then insert the rows with them: COPY for many (a large graph),
        # else multi-row statements. The sequence is looked up once, not per row.
        ids = sorted(int(i) for (i,) in raw.all(
            "SELECT nextval(s.seq) FROM (SELECT pg_get_serial_sequence('jobs', 'id')"
            "::regclass AS seq OFFSET 0) AS s, generate_series(1, ?)", (count,)))
        names = ["id", *columns]
        if count >= BULK_MIN_ROWS:
            # One clock reading for the batch (COPY takes values, not expressions).
            (now,) = raw.first("SELECT {now}") or (None,)
            raw.copy("jobs", [*names, "created_at"],
                     ((job_id, *row, now) for job_id, row in zip(ids, values, strict=True)))
            return ids
        raw.insert(f"INSERT INTO jobs ({', '.join(names)}, created_at)",
                   ", ".join(f"c{i + 1}" for i in range(len(names))) + ", {now}",
                   [(job_id, *row) for job_id, row in zip(ids, values, strict=True)],
                   pg_types(t.jobs, names))
        return ids

    def get_job(self, job_id: int, *, attempts: bool = True) -> JobRecord | None:
        with self._read() as conn:
            row = conn.execute(
                select(*JOB_COLUMNS).select_from(JOB_FROM).where(_J.c.id == job_id)
            ).first()
            if row is None:
                return None
            tries: list[AttemptRecord] = []
            stages: list[StageRecord] = []
            if attempts:
                tries = [
                    attempt_record(r)
                    for r in conn.execute(
                        select(_A).where(_A.c.job_id == job_id).order_by(_A.c.attempt)
                    )
                ]
                stages = [
                    StageRecord(r.attempt, r.name, r.seq, r.state, r.started_at,
                                r.finished_at, loads(r.result))
                    for r in conn.execute(select(t.stages).where(t.stages.c.job_id == job_id)
                                          .order_by(t.stages.c.attempt, t.stages.c.seq))
                ]
        return to_record(row, tries, stages)

    def list_jobs(
        self, *, state: str | None = None, type: str | None = None, limit: int = 100
    ) -> list[JobRecord]:
        """Jobs, newest first, optionally of one state and/or type."""
        query = select(*JOB_COLUMNS).select_from(JOB_FROM).order_by(_J.c.id.desc()).limit(limit)
        if state is not None:
            if state not in set(JobState):
                raise InvalidInput(
                    f"unknown state {state!r} (one of {', '.join(s.value for s in JobState)})"
                )
            query = query.where(_J.c.state == state)
        if type is not None:
            query = query.where(_J.c.type == type)
        with self._read() as conn:
            return [to_record(r) for r in conn.execute(query)]

    def unfinished_count(self) -> int:
        """Jobs not yet in a final state (waiting, pending, dispatched, running, suspended)."""
        with self._read() as conn:
            return int(conn.execute(
                select(func.count()).select_from(_J).where(_J.c.state.not_in(TERMINAL))
            ).scalar_one())

    def list_pending(self, type: str, limit: int = 100) -> list[JobRecord]:
        """That type's pending jobs, oldest first (swh's ``task list-pending``)."""
        query = (
            select(*JOB_COLUMNS)
            .select_from(JOB_FROM)
            .where(_J.c.type == type, _J.c.state == JobState.PENDING)
            .order_by(_J.c.id)
            .limit(limit)
        )
        with self._read() as conn:
            return [to_record(r) for r in conn.execute(query)]

    def cancel_job(self, job_id: int) -> JobRecord:
        """Cancel a job; dependents end dependency_failed; its worker stops a running one."""
        with self._tx() as conn:
            # A job may change state between the read and the guarded write (its worker
            # reports it started): read it again, a few times (each statement sees what
            # committed before it, on PostgreSQL; SQLite's write transaction excludes it).
            for _ in range(3):
                row = conn.execute(
                    select(_J.c.state, _J.c.worker_id, _J.c.graph_id, _J.c.routing)
                    .where(_J.c.id == job_id)
                ).first()
                if row is None:
                    raise NotFound(f"no job {job_id}")
                state, worker_id, graph_id, routing = row
                if state in TERMINAL:
                    raise Conflict(f"job {job_id} is already {state}")
                done = conn.execute(
                    update(_J)
                    .where(_J.c.id == job_id, _J.c.state == state)
                    .values(
                        state=JobState.CANCELED,
                        worker_id=None,
                        deadline=None,
                        cancel_requested=state in ACTIVE,
                        finished_at=self._now,
                    )
                ).rowcount
                if done == 1:
                    break
            else:
                raise Conflict(f"job {job_id} changed state while canceling; try again")
            if state in ACTIVE:
                conn.execute(
                    update(_A)
                    .where(_A.c.job_id == job_id, _A.c.state.in_(ACTIVE))
                    .values(state=AttemptState.CANCELED, finished_at=self._now)
                )
            self._jobs_ended(conn, [Ended(job_id, JobState.CANCELED, graph_id)])
            self._events(
                conn,
                [("job-exception", job_key(graph_id, routing),
                  {"job_id": job_id, "reason": "canceled"}, job_id, graph_id)],
            )
            self._notify(conn, ["scheduler", *([f"worker.{worker_id}"] if worker_id else [])])
        record = self.get_job(job_id)
        assert record is not None
        return record
