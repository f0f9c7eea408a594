"""Jobs: submit, read, cancel."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, case, func, or_, select, update

from taskyard.core.limits import check_name
from taskyard.core.routing import job_key
from taskyard.core.states import ACTIVE, TERMINAL, AttemptState, JobState
from taskyard.model.errors import Conflict, InvalidInput, NotFound, refused_as_invalid
from taskyard.model.records import (
    AttemptRecord,
    JobRecord,
    JobSubmission,
    StageRecord,
    TaskTypeSpec,
    loads,
)
from taskyard.store import schema as t
from taskyard.store.driver.results import FIRST_PAGE
from taskyard.store.marks import reads, reads_each
from taskyard.store.schema.job_rows import JOB_COLUMNS, JOB_FROM, attempt_record, job_row, to_record
from taskyard.store.transitions.prerequisites import PrereqPlan

if TYPE_CHECKING:
    from taskyard.core.idle import Unfinished
    from taskyard.core.placement import Candidate, WorkerSlot
    from taskyard.store.transitions.cycle import Basis
    from taskyard.store.unit import Tx

_J = t.jobs
_A = t.attempts


class Jobs:
    """Jobs in one transaction."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx

    def submit(self, subs: Sequence[JobSubmission], *, cycle_next: bool = False) -> list[int]:
        """Insert pending jobs atomically; all or nothing. Returns their ids in order.

        The scheduler is woken to place them, unless ``cycle_next``: the caller runs
        the cycle in this transaction next (seed 000 runs schedule() on job creation,
        and in one transaction a job reaches its worker with one commit) — and wakes the
        scheduler itself if the cycle's lock was taken.

        A submission with a ``unique_key`` whose key a job holds is not inserted: its
        id is the holder's (or Conflict, see :mod:`taskyard.store.transitions.unique_jobs`)."""
        if any(s.unique_key is not None or s.unique_for is not None for s in subs):
            return self._submit_unique(subs, cycle_next)
        return self._submit(subs, cycle_next)

    def submit_alone(self, sub: JobSubmission) -> int | None:
        """PostgreSQL, in a unit of work of :meth:`Store.alone` (autocommit): ``sub`` in
        one statement that commits by itself — while no live worker exists (nothing
        the inline cycle could place). None when it wrote nothing: a worker is live, or
        the submission needs the ordinary path; the caller then submits in a
        transaction. Always None on SQLite."""
        if sub.unique_key is not None or sub.unique_for is not None:
            return None  # looks for its key's holder first: the transactional path
        tx = self.tx
        job_id, _ = tx.driver.submit_one(
            tx.raw, sub, tx.store.spec_cache,
            lambda spec: job_row(sub, spec, 0, limits=tx.store.limits), alone=True)
        if job_id is None:
            tx.store.no_worker_seen = False
        return job_id

    def submit_foreseen(self, sub: JobSubmission,
                        place: Callable[[Basis, Candidate], WorkerSlot | None], *,
                        maintain: bool = False) -> Any:
        """PostgreSQL, in a unit of work of :meth:`Store.alone`: ``sub`` dispatched to the
        worker ``place`` chooses for it from the store's :attr:`~Store.basis` (where a
        cycle that finds that snapshot, with the job alone pending, places it), in one
        round trip that checks under the cycle's lock that the basis still holds (and,
        with ``maintain``, that the cycle's maintenance, due, has nothing to do); else
        inserted pending (dialects/pg_foreseen.py). The result says which (``placed``;
        ``held``: the caller runs the cycle). None when nothing was written: no basis,
        SQLite, or the ordinary path must decide."""
        from taskyard.store.transitions.candidates import to_candidates  # noqa: PLC0415 - start-up time
        from taskyard.store.transitions.cycle import TIMEOUT_GRACE  # noqa: PLC0415 - start-up time

        tx, basis = self.tx, self.tx.store.basis
        if basis is None or sub.unique_key is not None or sub.unique_for is not None:
            return None

        def chosen(row: list[Any]) -> tuple[int, str] | None:
            worker = place(basis, to_candidates([row])[0])
            return None if worker is None else (worker.id, worker.name)

        found = tx.driver.submit_foreseen(
            tx.raw, sub, tx.store.spec_cache,
            lambda spec: job_row(sub, spec, 0, limits=tx.store.limits),
            basis=basis.text, place=chosen, maintain=TIMEOUT_GRACE if maintain else None)
        if found is not None and not found.placed:
            tx.store.no_worker_seen = found.held is None
            if found.held:  # the snapshot changed: the caller's cycle reads a new one
                tx.store.basis = None
            if found.backlog:  # see Store.queue_idle_seen
                tx.store.queue_idle_seen = False
        return found

    def _submit_unique(self, subs: Sequence[JobSubmission], cycle_next: bool) -> list[int]:
        from taskyard.store.transitions.unique_jobs import find_duplicates  # noqa: PLC0415 - start-up time

        found = find_duplicates(self.tx, subs)
        fresh = [i for i in range(len(subs))
                 if i not in found.existing and i not in found.earlier]
        ids = dict(zip(fresh, self._submit([subs[i] for i in fresh], cycle_next),
                       strict=True))
        ids.update(found.existing)
        return [ids[found.earlier.get(i, i)] for i in range(len(subs))]

    def _submit(self, subs: Sequence[JobSubmission], cycle_next: bool) -> list[int]:
        if not subs:
            return []
        for name in {s.type for s in subs}:  # before it reaches SQL, the same on both stores
            with refused_as_invalid():
                check_name(name, "task type name")
        tx = self.tx
        if len(subs) == 1:
            sub = subs[0]

            def build(spec: TaskTypeSpec) -> dict[str, Any]:
                return job_row(sub, spec, 0, limits=tx.store.limits)

            looked = (self._submit_looking(sub, build)
                      if cycle_next and tx.store.queue_idle_seen else None)
            if looked is not None:
                return [looked]
            # Its type from the store's cache: PostgreSQL in one statement, which may
            # also try the cycle's lock; SQLite in two (sqlite_submit).
            job_id, held = tx.driver.submit_one(
                tx.raw, sub, tx.store.spec_cache, build, lock=cycle_next)
            if job_id is not None:
                if held is not None:  # the cycle's first reads, for the cycle to come
                    tx.ahead = tx.driver.read_ahead(tx.raw, held, FIRST_PAGE)
                    # PostgreSQL's reads (SQLite reads in its cycle, and never looks first).
                    tx.store.queue_idle_seen = bool(
                        held and tx.ahead is not None and tx.ahead.only_job())
                elif cycle_next:  # no live worker: no cycle, nobody to wake
                    tx.ahead = tx.driver.read_ahead(tx.raw, False, FIRST_PAGE)
                    tx.placeable = False
                if cycle_next:
                    tx.store.no_worker_seen = held is None
                if not cycle_next:
                    tx.notify("scheduler")
                return [job_id]
        specs = tx.task_types.by_name({s.type for s in subs})
        rows = []
        for index, sub in enumerate(subs):
            spec = specs.get(sub.type)
            if spec is None:
                raise InvalidInput(f"unknown task type {sub.type!r}")
            rows.append(job_row(sub, spec, index, limits=tx.store.limits))
        plan = tx.prereqs.plan(subs, specs)
        if not plan.spawn and not plan.waits:
            ids = self.insert(rows)
        else:
            ids = self.insert_with_prerequisites(rows, plan, specs)
        if not cycle_next:
            tx.notify("scheduler")
        elif tx.store.no_worker_seen is not False and not tx.driver.worth_a_cycle(tx.raw):
            tx.store.no_worker_seen = True
            tx.placeable = False  # still no live worker: no cycle, nobody to wake
        return ids

    def _submit_looking(self, sub: JobSubmission,
                        build: Callable[[TaskTypeSpec], dict[str, Any]]) -> int | None:
        """PostgreSQL: the cycle's lock, the job's id and the cycle's reads first, then
        the insert — with the job's dispatch when the cycle places it at once
        (dialects/pg_placed.py). None where the one-statement path decides (SQLite;
        an unknown or changed type, a job for later or of a graph): nothing written."""
        tx = self.tx
        looked = tx.driver.submit_looking(tx.raw, sub, tx.store.spec_cache, build,
                                           FIRST_PAGE)
        if looked is None:
            return None
        tx.store.no_worker_seen = looked.held is None
        tx.store.queue_idle_seen = not looked.deferred.written
        tx.placeable = looked.held is not None  # no live worker: no cycle, nobody to wake
        tx.ahead = looked.ahead or tx.driver.read_ahead(tx.raw, False, FIRST_PAGE)
        if not looked.deferred.written:
            tx.deferred = looked.deferred
        return int(looked.deferred.job_id)

    def insert_with_prerequisites(self, rows: list[dict[str, Any]], plan: PrereqPlan,
                                  specs: dict[str, TaskTypeSpec]) -> list[int]:
        """Spawned prerequisites first, then the launched jobs waiting on them."""
        waits = self._spawn(plan, specs)
        for index, ids in waits.items():
            # Added to what the row waits for already (a graph task's own parents).
            rows[index].update(state=JobState.WAITING,
                               unmet_deps=rows[index]["unmet_deps"] + len(ids))
        job_ids = self.insert(rows)
        self.tx.driver.insert_edges(self.tx.raw, [
            (job_ids[index], prereq, "success") for index, ids in waits.items()
            for prereq in ids])
        return job_ids

    def wait_on_prerequisites(self, jobs: Sequence[tuple[int, JobSubmission]],
                              specs: dict[str, TaskTypeSpec]) -> set[int]:
        """Update on launch for jobs just inserted pending (a schedule's tick jobs): spawn
        or reuse their prerequisites and make them wait; returns the ids now waiting."""
        plan = self.tx.prereqs.plan([sub for _, sub in jobs], specs)
        if not plan.spawn and not plan.waits:
            return set()
        waits = self._spawn(plan, specs)
        self.tx.conn.execute(
            update(_J).where(_J.c.id == bindparam("jid"), _J.c.state == JobState.PENDING)
            .values(state=JobState.WAITING, unmet_deps=_J.c.unmet_deps + bindparam("n")),
            [{"jid": jobs[index][0], "n": len(ids)} for index, ids in waits.items()])
        self.tx.driver.insert_edges(self.tx.raw, [
            (jobs[index][0], prereq, "success") for index, ids in waits.items()
            for prereq in ids])
        return {jobs[index][0] for index in waits}

    def _spawn(self, plan: PrereqPlan, specs: dict[str, TaskTypeSpec]) -> dict[int, list[int]]:
        """Insert the prerequisites ``plan`` spawns; per submission index, every job id
        it must wait on (reused and spawned)."""
        missing = {s.type for s in plan.spawn} - set(specs)
        specs = {**specs, **self.tx.task_types.by_name(missing)} if missing else specs
        prereq_ids = self.insert(
            [job_row(s, specs[s.type], i) for i, s in enumerate(plan.spawn)])
        waits = {index: list(ids) for index, ids in plan.waits.items()}
        for prereq_id, waiters in zip(prereq_ids, plan.spawn_waiters, strict=True):
            for index in waiters:
                waits.setdefault(index, []).append(prereq_id)
        return waits

    def insert(self, rows: list[dict[str, Any]]) -> list[int]:
        """Insert rows (already validated) and announce the pending ones."""
        if not rows:  # an empty executemany would run as one bare INSERT
            return []
        columns = tuple(rows[0])
        return self.insert_values(columns, list(map(itemgetter(*columns), rows)))

    def insert_values(self, columns: Sequence[str], values: list[tuple[Any, ...]]) -> list[int]:
        """:meth:`insert` for rows given as tuples in the order of ``columns``."""
        if not values:
            return []
        ids = self.insert_rows(columns, values, len(values))
        state, graph, routing, type_ = (columns.index(c)
                                        for c in ("state", "graph_id", "routing", "type"))
        self.tx.events.append(
            ("job-pending", job_key(row[graph], row[routing]),
             {"job_id": job_id, "type": row[type_]}, job_id, row[graph])
            for job_id, row in zip(ids, values, strict=True) if row[state] == JobState.PENDING)
        return ids

    def insert_rows(self, columns: Sequence[str], values: Iterable[tuple[Any, ...]],
                    count: int) -> list[int]:
        """Insert ``count`` job rows (tuples in the order of ``columns``, which has every
        key of :func:`job_row`); their ids in order (the order of creation). A large
        batch may be streamed: the rows may be computed as they go."""
        if count == 0:
            return []
        raw = self.tx.raw
        if count == 1:  # one submit: one statement on the driver (the latency path)
            row = raw.first(
                f"INSERT INTO jobs ({', '.join(columns)}, created_at) VALUES "
                f"({', '.join('?' for _ in columns)}, {{now}}) RETURNING id",
                next(iter(values)))
            assert row is not None
            return [int(row[0])]
        return self.tx.driver.insert_jobs(raw, columns, values, count)

    @reads
    def get(self, job_id: int, *, attempts: bool = True) -> JobRecord | None:
        """The job, with its attempts and stages unless ``attempts`` is False."""
        conn = self.tx.conn
        row = conn.execute(
            select(*JOB_COLUMNS).select_from(JOB_FROM).where(_J.c.id == job_id)).first()
        if row is None:
            return None
        tries: list[AttemptRecord] = []
        stages: list[StageRecord] = []
        if attempts:
            tries = [attempt_record(r) for r in conn.execute(
                select(_A).where(_A.c.job_id == job_id).order_by(_A.c.attempt))]
            stages = [
                StageRecord(r.attempt, r.name, r.seq, r.state, r.started_at, r.finished_at,
                            loads(r.result))
                for r in conn.execute(select(t.stages).where(t.stages.c.job_id == job_id)
                                      .order_by(t.stages.c.attempt, t.stages.c.seq))
            ]
        return to_record(row, tries, stages)

    @reads_each
    def ended(self, job_id: int) -> JobRecord | None:
        """The job, with its attempts and stages, once it has ended; None while it has
        not: what a waiter reads at each wake-up, its state alone while it runs (one
        statement; on PostgreSQL no BEGIN/COMMIT either). NotFound if there is none."""
        state = self.tx.conn.execute(select(_J.c.state).where(_J.c.id == job_id)).scalar()
        if state is None:
            raise NotFound(f"no job {job_id}")
        return self.get(job_id) if state in TERMINAL else None

    @reads
    def unfinished_count(self) -> int:
        """Jobs not yet in a final state (waiting, pending, dispatched, running, suspended)."""
        return int(self.tx.conn.execute(
            select(func.count()).select_from(_J).where(_J.c.state.not_in(TERMINAL))
        ).scalar_one())

    @reads
    def unfinished(self, horizon: float) -> Unfinished:
        """The unfinished jobs as ``up --until-idle`` weighs them
        (:func:`taskyard.core.idle.idle_verdict`): pending ones grouped by their pools,
        split at ``horizon`` seconds from now on the database clock."""
        from taskyard.core.idle import PendingGroup, Unfinished  # noqa: PLC0415 - start-up time

        later = _J.c.run_after > self.tx.now + horizon
        rows = self.tx.conn.execute(
            select(_J.c.state, _J.c.pools, func.count(), func.sum(case((later, 1), else_=0)),
                   func.min(case((later, _J.c.run_after))))
            .where(_J.c.state.not_in(TERMINAL)).group_by(_J.c.state, _J.c.pools)).all()
        counts = {state: sum(r[2] for r in rows if r[0] == state) for state in JobState}
        return Unfinished(
            active=counts[JobState.DISPATCHED] + counts[JobState.RUNNING]
            + counts[JobState.SUSPENDED],
            waiting=counts[JobState.WAITING],
            pending=[PendingGroup(tuple(loads(pools)), count - int(n_later), int(n_later),
                                  next_due)
                     for state, pools, count, n_later, next_due in rows
                     if state == JobState.PENDING])

    @reads
    def pending(self, type: str, limit: int = 100) -> list[JobRecord]:
        """That type's jobs due now: pending, with no ``run_after`` still ahead on the
        database clock; oldest first (swh's ``task list-pending``). NotFound for an
        unknown type."""
        with refused_as_invalid():
            check_name(type, "task type name")
        if self.tx.task_types.get(type) is None:
            raise NotFound(f"no task type {type!r}")
        query = (select(*JOB_COLUMNS).select_from(JOB_FROM)
                 .where(_J.c.type == type, _J.c.state == JobState.PENDING,
                        or_(_J.c.run_after.is_(None), _J.c.run_after <= self.tx.now))
                 .order_by(_J.c.id).limit(limit))
        return [to_record(r) for r in self.tx.conn.execute(query)]

    def cancel(self, job_id: int) -> JobRecord:
        """Cancel a job; dependents end dependency_failed; its worker stops a running one."""
        conn = self.tx.conn
        # A job may change state between the read and the guarded write (its worker
        # reports it started): read it again, a few times (each statement sees what
        # committed before it, on PostgreSQL; SQLite's write transaction excludes it).
        for _ in range(3):
            row = conn.execute(select(_J.c.state, _J.c.worker_id, _J.c.graph_id, _J.c.routing)
                               .where(_J.c.id == job_id)).first()
            if row is None:
                raise NotFound(f"no job {job_id}")
            state, worker_id, graph_id, routing = row
            if state in TERMINAL:
                raise Conflict(f"job {job_id} is already {state}")
            done = conn.execute(
                update(_J).where(_J.c.id == job_id, _J.c.state == state)
                .values(state=JobState.CANCELED, worker_id=None, deadline=None,
                        cancel_requested=state in ACTIVE, finished_at=self.tx.now)
            ).rowcount
            if done == 1:
                break
        else:
            raise Conflict(f"job {job_id} changed state while canceling; try again")
        if state in ACTIVE:
            conn.execute(update(_A).where(_A.c.job_id == job_id, _A.c.state.in_(ACTIVE))
                         .values(state=AttemptState.CANCELED, finished_at=self.tx.now))
        from taskyard.store.transitions.dependents import Ended  # noqa: PLC0415 - start-up time

        self.tx.resolution.jobs_ended([Ended(job_id, JobState.CANCELED, graph_id)])
        self.tx.events.append([("job-exception", job_key(graph_id, routing),
                                {"job_id": job_id, "reason": "canceled"}, job_id, graph_id)])
        self.tx.notify("scheduler", *([f"worker.{worker_id}"] if worker_id else []))
        record = self.get(job_id)
        assert record is not None
        return record

    @reads
    def list(self, *, state: str | None = None, type: str | None = None,
             limit: int = 100) -> list[JobRecord]:
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
        return [to_record(r) for r in self.tx.conn.execute(query)]
