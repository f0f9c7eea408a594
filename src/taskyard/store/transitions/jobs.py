"""Jobs: submit, read, cancel."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING, Any, ClassVar

from taskyard.core.limits import check_name
from taskyard.core.states import TERMINAL, JobState
from taskyard.model.errors import Conflict, InvalidInput, NotFound, refused_as_invalid
from taskyard.model.records import (
    AttemptRecord,
    JobRecord,
    JobSubmission,
    StageRecord,
    TaskTypeSpec,
    loads,
)
from taskyard.store.driver.cycle_params import CycleStart
from taskyard.store.driver.params import CancelJob, InsertJobs, ReadJobs, TypeVersion
from taskyard.store.portable.job_reads import mapped
from taskyard.store.schema.job_rows import (
    attempt_record,
    job_row,
    row_values,
    same_columns,
    to_record,
)
from taskyard.store.transitions.events import job_exception, job_pending, shared_pending
from taskyard.store.transitions.prerequisites import PrereqPlan

if TYPE_CHECKING:
    from taskyard.core.idle import Unfinished
    from taskyard.store.unit import Tx



@dataclass(frozen=True, slots=True)
class Added:
    """What :meth:`Jobs.add` inserted: the jobs' ids, in the order of the submissions,
    and (``placing``) what the cycle to come needs to know."""

    ids: list[int]
    live_worker: bool
    """A live worker exists and the cycle may place the jobs: else none is needed (no
    worker to take them, or their insert placed them: InsertedJobs.placed)."""
    cycle: CycleStart | None
    """PostgreSQL: the cycle's lock, tried with the insert."""
    committed: bool = False
    """PostgreSQL: the insert committed the unit itself (see InsertedJobs.committed)."""


class Jobs:
    """Jobs in one transaction."""

    READS: ClassVar[frozenset[str]] = frozenset({
        'get', 'list', 'pending', 'unfinished', 'unfinished_count'})
    """Methods a call through the store (``store.jobs.<method>``) runs in a read
    transaction; the others run in a write transaction (:class:`taskyard.store.store.OneShot`)."""
    READS_EACH: ClassVar[frozenset[str]] = frozenset({'ended'})
    """... in autocommit reads that share no snapshot (PostgreSQL: no ``BEGIN``/``COMMIT``)."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx

    def submit(self, subs: Sequence[JobSubmission]) -> list[int]:
        """Insert pending jobs atomically; all or nothing. Returns their ids in order,
        and wakes the scheduler to place them (:meth:`add` leaves that to its caller).

        A submission with a ``unique_key`` whose key a job holds is not inserted: its
        id is the holder's (or Conflict, see :mod:`taskyard.store.transitions.unique_jobs`)."""
        ids = self.add(subs).ids
        self.tx.notify("scheduler")
        return ids

    def add(self, subs: Sequence[JobSubmission], *, placing: bool = False) -> Added:
        """:meth:`submit`, without the wake-up. ``placing``: the caller runs the cycle in
        this unit of work next (Store.submit): the result says whether a live worker may
        take the jobs and, PostgreSQL, carries the cycle's lock tried with the insert."""
        for sub in subs:  # a loop, not any(genexpr): a lone submit is a few dozen µs
            if sub.unique_key is not None or sub.unique_for is not None:
                break
        else:
            return self._add(subs, placing)
        from taskyard.store.transitions.unique_jobs import find_duplicates  # noqa: PLC0415

        found = find_duplicates(self.tx, subs)
        fresh = [i for i in range(len(subs))
                 if i not in found.existing and i not in found.earlier]
        added = self._add([subs[i] for i in fresh], placing)
        ids = dict(zip(fresh, added.ids, strict=True))
        ids.update(found.existing)
        return Added([ids[found.earlier.get(i, i)] for i in range(len(subs))],
                     added.live_worker, added.cycle, added.committed)

    def _add(self, subs: Sequence[JobSubmission], placing: bool) -> Added:
        if not subs:
            return Added([], False, None)
        for name in {subs[0].type} if len(subs) == 1 else {s.type for s in subs}:
            # before it reaches SQL, the same on both stores
            try:  # not refused_as_invalid(): a context manager per submit costs ~2 µs
                check_name(name, "task type name")
            except ValueError as exc:
                raise InvalidInput(str(exc)) from None
        if len(subs) == 1:
            added = self._add_one(subs[0], placing)
            if added is not None:
                return added
        elif all(s.type == subs[0].type for s in subs):
            added = self._add_batch(subs, placing)
            if added is not None:
                return added
        tx = self.tx
        specs = tx.task_types.by_name({s.type for s in subs})
        for sub in subs:
            if sub.type not in specs:
                raise InvalidInput(f"unknown task type {sub.type!r}")
        plan = tx.prerequisites.plan(subs, specs)
        if not plan.spawn and not plan.waits:
            return self._insert_submitted(subs, specs, placing)
        ids = self.insert_with_prerequisites(self._rows(subs, specs), plan, specs)
        return Added(ids, placing and tx.driver.live_worker(tx.raw), None)

    def _rows(self, subs: Sequence[JobSubmission],
              specs: dict[str, TaskTypeSpec]) -> list[dict[str, Any]]:
        limits, many = self.tx.store.limits, len(subs) > 1
        return [job_row(sub, specs[sub.type], index if many else None, limits=limits)
                for index, sub in enumerate(subs)]

    def _add_batch(self, subs: Sequence[JobSubmission], placing: bool) -> Added | None:
        """Jobs of one type, as :meth:`_add_one` adds one: built from the driver's cached
        type, inserted only while the type is as read (the insert checks it); None when
        the ordinary path must decide (unknown or changed type, update on launch, a
        first row refused: decided there with the type read afresh): nothing is written
        then."""
        tx, name = self.tx, subs[0].type
        cached = tx.driver.task_type(tx.raw, name)
        if cached is None or cached[1].prerequisites:
            return None
        version, spec = cached
        try:  # only the first row here: a refusal once the insert began is the driver's
            job_row(subs[0], spec, 0, limits=tx.store.limits)
        except InvalidInput:
            tx.driver.forget_task_type(name)  # refused by the type as kept: read it again
            return None
        added = self._insert_submitted(subs, {name: spec}, placing, TypeVersion(name, version))
        if not added.ids:  # the type changed since: read it again
            tx.driver.forget_task_type(name)
            return None
        return added

    def _insert_submitted(self, subs: Sequence[JobSubmission], specs: dict[str, TaskTypeSpec],
                          placing: bool, as_built: TypeVersion | None = None) -> Added:
        """Jobs of no prerequisites, pending: each row is built as the driver writes it
        (a bulk's ``COPY`` streams them: the server inserts the first rows while the
        next are built, and no list of the batch's rows is kept), and announced from
        its submission. A row refused midway stops the insert: nothing is written.
        ``placing``: the driver says whether a live worker may take them (PostgreSQL:
        with the batch's ids, in one round trip)."""
        limits, many = self.tx.store.limits, len(subs) > 1
        first = job_row(subs[0], specs[subs[0].type], 0 if many else None, limits=limits)
        columns = tuple(first)
        # Every row has every key (see same_columns): a batch mixing traced jobs.
        traced = many and any(s.trace_context is not None for s in subs)
        if traced and "trace_context" not in columns:
            columns = (*columns, "trace_context")
        at_delayed = columns.index("delayed_until")
        delayed = False

        def rows() -> Iterator[tuple[Any, ...]]:
            nonlocal delayed
            for row in row_values(subs, specs, first, columns, limits=limits):
                if row[at_delayed] is not None:
                    delayed = True
                yield row

        # Announced by the insert (InsertJobs.announce) unless events are buffered already:
        # announced first, those keep their place before these.
        shared = None if not many or self.tx.events.buffer else shared_pending(subs)
        found = self.tx.driver.insert_jobs(self.tx.raw, InsertJobs(
            columns, rows(), len(subs), as_built=as_built, announce=shared, placing=placing))
        if not found.ids:  # as_built: the type changed, nothing written
            return Added([], False, None)
        if delayed:  # the scheduler learns when the first is due
            self.tx.notify("scheduler")
        ids = [int(i) for i in found.ids if i is not None]
        if shared is None:
            self.tx.events.append(job_pending(job_id, sub.graph_id, sub.routing, type=sub.type)
                                  for job_id, sub in zip(ids, subs, strict=True))
        return Added(ids, placing and found.live_worker, None)

    def _add_one(self, sub: JobSubmission, placing: bool) -> Added | None:
        """One job, its type from the driver's cache, inserted only while the type is as
        read (with the cycle's lock, ``placing``: see InsertJobs); None when the ordinary
        path must decide (unknown or changed type, update on launch, invalid input:
        decided there with the type read afresh): nothing is written then."""
        tx = self.tx
        cached = tx.driver.task_type(tx.raw, sub.type)
        if cached is None or cached[1].prerequisites:
            return None
        version, spec = cached
        try:
            row = job_row(sub, spec, None, limits=tx.store.limits)
        except InvalidInput:
            return None
        columns = tuple(row)
        inserted = tx.driver.insert_jobs(tx.raw, InsertJobs(
            columns, [tuple(row.values())], 1, as_built=TypeVersion(spec.name, version),
            announce=job_pending(0, row["graph_id"], row["routing"], type=spec.name),
            placing=placing))
        if not inserted.ids:
            tx.driver.forget_task_type(sub.type)  # changed since: read it again
            return None
        (job_id,) = inserted.ids
        assert job_id is not None
        if row["delayed_until"] is not None and not inserted.committed:
            # The scheduler learns when it is due. (A unit the insert committed had no
            # live worker: a worker that registers wakes the scheduler.)
            tx.notify("scheduler")
        return Added([job_id], inserted.live_worker and not inserted.placed, inserted.cycle,
                     inserted.committed)

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
        plan = self.tx.prerequisites.plan([sub for _, sub in jobs], specs)
        if not plan.spawn and not plan.waits:
            return set()
        waits = self._spawn(plan, specs)
        self.tx.driver.make_waiting(self.tx.raw, [(jobs[index][0], len(ids))
                                                  for index, ids in waits.items()])
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
        if not rows:
            return []
        rows = same_columns(rows)
        columns = tuple(rows[0])
        return self.insert_values(columns, list(map(itemgetter(*columns), rows)))

    def insert_values(self, columns: tuple[str, ...], values: list[tuple[Any, ...]],
                      *, announce: bool = True) -> list[int]:
        """:meth:`insert` for rows given as tuples in the order of ``columns``; ``announce``:
        the pending ones' ``job-pending`` events (else the caller announces them). A large
        batch may be streamed: ``values`` may be any iterable of ``count`` rows."""
        return self.insert_rows(columns, values, len(values), announce=announce)

    def insert_rows(self, columns: tuple[str, ...], values: Iterable[tuple[Any, ...]],
                    count: int, *, announce: bool = True) -> list[int]:
        """Insert ``count`` job rows (tuples in the order of ``columns``, which has every
        key of :func:`job_row`); their ids in order (the order of creation). The rows may
        be computed as they are written (a large graph)."""
        if count == 0:
            return []
        if announce:
            values = list(values)
        found = self.tx.driver.insert_jobs(self.tx.raw, InsertJobs(columns, values, count))
        ids = [int(i) for i in found.ids if i is not None]
        if announce:
            state, graph, routing, type_ = (columns.index(c)
                                            for c in ("state", "graph_id", "routing", "type"))
            if "delayed_until" in columns:
                delayed = columns.index("delayed_until")
                if any(row[delayed] is not None and row[state] == JobState.PENDING
                       for row in values):  # the scheduler learns when the first is due
                    self.tx.notify("scheduler")
            self.tx.events.append(
                job_pending(job_id, row[graph], row[routing], type=row[type_])
                for job_id, row in zip(ids, values, strict=True)
                if row[state] == JobState.PENDING)
        return ids

    def get(self, job_id: int, *, attempts: bool = True) -> JobRecord | None:
        """The job, with its attempts and stages unless ``attempts`` is False."""
        driver, raw = self.tx.driver, self.tx.raw
        found = driver.read_jobs(raw, ReadJobs(job_id=job_id))
        if not found:
            return None
        tries: list[AttemptRecord] = []
        stages: list[StageRecord] = []
        if attempts:
            tries = [attempt_record(mapped(r)) for r in driver.read_job_attempts(raw, job_id)]
            stages = [StageRecord(attempt, name, seq, state, started, finished, loads(result))
                      for attempt, name, seq, state, started, finished, result
                      in driver.read_job_stages(raw, job_id)]
        return to_record(mapped(found[0]), tries, stages)

    def ended(self, job_id: int) -> JobRecord | None:
        """The job, with its attempts and stages, once it has ended; None while it has
        not: what a waiter reads at each wake-up, its state alone while it runs (one
        statement; on PostgreSQL no BEGIN/COMMIT either). NotFound if there is none."""
        row = self.tx.driver.read_job_state(self.tx.raw, job_id)
        if row is None:
            raise NotFound(f"no job {job_id}")
        return self.get(job_id) if row[0] in TERMINAL else None

    def unfinished_count(self) -> int:
        """Jobs not yet in a final state (waiting, pending, dispatched, running, suspended)."""
        return self.tx.driver.count_unfinished(self.tx.raw)

    def unfinished(self, horizon: float) -> Unfinished:
        """The unfinished jobs as ``up --until-idle`` weighs them
        (:func:`taskyard.core.idle.idle_verdict`): pending ones grouped by their pools,
        split at ``horizon`` seconds from now on the database clock."""
        from taskyard.core.idle import PendingGroup, Unfinished  # noqa: PLC0415 - start-up time

        rows = self.tx.driver.unfinished_groups(self.tx.raw, horizon)
        counts = {state: sum(r[2] for r in rows if r[0] == state) for state in JobState}
        timers = self.tx.driver.count_timers(self.tx.raw, horizon)
        return Unfinished(
            active=counts[JobState.DISPATCHED] + counts[JobState.RUNNING]
            + counts[JobState.SUSPENDED],
            timers=timers, awaiting=counts[JobState.AWAITING] - timers,
            waiting=counts[JobState.WAITING],
            pending=[PendingGroup(tuple(loads(pools)), count - int(n_later or 0),
                                  int(n_later or 0), next_due)
                     for state, pools, count, n_later, next_due in rows
                     if state == JobState.PENDING])

    def pending(self, type: str, limit: int = 100) -> list[JobRecord]:
        """That type's jobs due now: pending, with no ``run_after`` still ahead on the
        database clock; oldest first (swh's ``task list-pending``). NotFound for an
        unknown type."""
        with refused_as_invalid():
            check_name(type, "task type name")
        if not self.tx.task_types.by_name([type]):
            raise NotFound(f"no task type {type!r}")
        return [to_record(mapped(r)) for r in self.tx.driver.read_jobs(self.tx.raw, ReadJobs(
            state=JobState.PENDING, type=type, due=True, limit=limit))]

    def cancel(self, job_id: int) -> JobRecord:
        """Cancel a job; dependents end dependency_failed; its worker stops a running one."""
        driver, raw = self.tx.driver, self.tx.raw
        # A job may change state between the read and the guarded write (its worker
        # reports it started): read it again, a few times (each statement sees what
        # committed before it, on PostgreSQL; SQLite's write transaction excludes it).
        for _ in range(3):
            row = driver.read_job_state(raw, job_id)
            if row is None:
                raise NotFound(f"no job {job_id}")
            state, worker_id, graph_id, routing = row
            if state in TERMINAL:
                raise Conflict(f"job {job_id} is already {state}")
            if driver.cancel_job(raw, CancelJob(job_id, state)):
                break
        else:
            raise Conflict(f"job {job_id} changed state while canceling; try again")
        from taskyard.store.transitions.dependents import Ended  # noqa: PLC0415 - start-up time

        self.tx.dependents.jobs_ended([Ended(job_id, JobState.CANCELED, graph_id)])
        self.tx.events.append([job_exception(job_id, graph_id, routing, "canceled")])
        self.tx.notify("scheduler", *([f"worker.{worker_id}"] if worker_id else []))
        record = self.get(job_id)
        assert record is not None
        return record

    def list(self, *, state: str | None = None, type: str | None = None,
             limit: int = 100) -> list[JobRecord]:
        """Jobs, newest first, optionally of one state and/or type."""
        if state is not None and state not in set(JobState):
            raise InvalidInput(
                f"unknown state {state!r} (one of {', '.join(s.value for s in JobState)})")
        return [to_record(mapped(r)) for r in self.tx.driver.read_jobs(self.tx.raw, ReadJobs(
            state=state, type=type, newest_first=True, limit=limit))]
