"""PostgreSQL: a one-job submit whose inline cycle places the job with its insert.

The one-job submit of pg_submit inserts the job, then reads what the cycle needs, then
dispatches: the job's row is written twice, in five round trips (``BEGIN``, the insert,
the reads, the dispatch, ``COMMIT``). Here the cycle's lock, the job's id and the
cycle's reads come first, in one round trip: ``BEGIN`` and two statements in a pipeline
(:func:`look`); the reads run after the lock is ours, so they see what every earlier
cycle committed. Its task type is locked ``FOR SHARE`` by then: the version the job's
row was built from holds until the commit.

When nothing is pending (an idle queue, the case where a job's latency is its
hand-off) the job's insert waits (:class:`Deferred`): the cycle decides with the job
as its only candidate, and the job is written once, by the statement that dispatches
it (:data:`DISPATCH_NEW`) — or as pending by the first step that needs it in the table
(CycleTx.forget_ahead, a dispatch of other jobs, the cycle's end, the transaction's
end). With a backlog the job goes in at once and joins the reads (:func:`with_job`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any

from taskyard.core.routing import job_key
from taskyard.model.records import JobSubmission
from taskyard.store.cursor import Cursor
from taskyard.store.driver.results import Dispatched
from taskyard.store.driver.spec_cache import payload_tail
from taskyard.store.postgresql import cycle as pg_cycle
from taskyard.store.postgresql.listen import pg_channel
from taskyard.store.postgresql.references import CHECKED_SETTING
from taskyard.store.postgresql.rows import named, pipelined
from taskyard.store.postgresql.submit import (
    SpecCache,
    build_row_now,
    insert_sql,
    pending_event,
)


def look_sql(*, checked: bool = False) -> str:
    """SQL: the job's type at the version its row was built from, the cycle's lock (if a
    worker is live) and the job's id. ``checked``: this transaction inserts only jobs
    of that type outside any graph, whose references this statement checks (the type,
    locked): the jobs insert trigger is skipped for it (pg_references)."""
    # The type's row is locked before its version is compared (a concurrent update is
    # waited for, then compared): that version then holds until the commit.
    says = f", set_config('{CHECKED_SETTING}', 'on', true)" if checked else ""
    return (f"SELECT xmin::text = %(version)s, {pg_cycle.LOCK_IF_WORKERS}, "
            f"nextval(pg_get_serial_sequence('jobs', 'id')){says} FROM task_types "
            "WHERE name = %(type)s FOR SHARE")


LOOK = look_sql()


@functools.lru_cache(maxsize=8)
def _insert_unless_held(columns: tuple[str, ...]) -> str:
    """pg_submit's insert (the job pending, its event), sent after :data:`LOOK` in its
    pipeline: with the id that statement took (``currval``), when the cycle's lock is not
    ours (elsewhere, or no live worker: the job goes in at once, with no round trip of
    its own) and the job's type is at the version its row was built from."""
    values = ", ".join(f"%(c_{c})s" for c in columns)
    return (
        f"WITH j AS (INSERT INTO jobs (id, {', '.join(columns)}, created_at) "
        f"SELECT currval(pg_get_serial_sequence('jobs', 'id')), {values}, {{now}} "
        f"WHERE current_setting('{pg_cycle.HELD_SETTING}', true) IS DISTINCT FROM 'on' "
        "AND EXISTS (SELECT 1 FROM task_types WHERE name = %(type)s "
        "AND xmin = %(version)s::xid) RETURNING id, graph_id), "
        f"{pending_event('%(key)s', '%(tail)s')}"
        "SELECT id, pg_notify('taskyard_events', '') FROM j")


@functools.lru_cache(maxsize=8)
def _dispatch_new(columns: tuple[str, ...]) -> str:
    """:data:`pg_cycle.DISPATCH` whose jobs statement inserts the job, dispatched."""
    values = ", ".join(f"%(c_{c})s" for c in columns)
    return (f"WITH d AS (INSERT INTO jobs ({', '.join(columns)}, created_at) "
            f"VALUES ({values}, {{now}}) RETURNING {pg_cycle.DISPATCHED_COLUMNS}), "
            f"{pg_cycle.DISPATCH_TAIL}")


@dataclass(slots=True)
class Deferred:
    """A submitted job not written yet, whose id is taken: the cycle may place it with
    its insert (:meth:`dispatch`); else :meth:`write` inserts it, pending."""

    job_id: int
    row: dict[str, Any]
    type: str
    version: str
    written: bool = False

    def write(self, raw: Cursor) -> None:
        """Insert the job, pending, with its ``job-pending`` event (pg_submit's insert)."""
        if self.written:
            return
        self.written = True
        row = {"id": self.job_id, **self.row}
        inserted = raw.first(insert_sql(tuple(row), False), [
            *row.values(), self.type, self.version, self._key(), payload_tail(self.type)])
        if inserted is None:  # its type is ours FOR SHARE since look(): cannot be
            raise RuntimeError(f"job {self.job_id}: its task type changed under its lock")

    def dispatch(self, raw: Cursor, worker_id: int, name: str | None, wake: bool,
                 events: list[tuple[Any, ...]], *, last: bool) -> Dispatched:
        """Insert the job dispatched to ``worker_id`` with its first attempt, its
        ``job-pending`` event before the transaction's buffered ones (``events``,
        emptied) and, with ``wake``, the worker's wake-up carrying it; ``last``: the
        cycle's last dispatch statement (:data:`pg_cycle.DISPATCH`'s tail)."""
        channel = f"worker.{worker_id}"
        self.written = True
        row = {"id": self.job_id, **self.row, "state": "dispatched",
               "worker_id": worker_id, "attempt": 1}
        pending = ("job-pending", self._key(),
                   f'{{"job_id":{self.job_id}{payload_tail(self.type)}', self.job_id, None)
        params = pg_cycle.dispatch_params("", worker_id, name,
                                          [pg_channel(channel)] if wake else [],
                                          [pending, *events], last=last)
        events.clear()
        params.update({f"c_{c}": v for c, v in row.items()})
        rows = named(raw, _dispatch_new(tuple(row)), params)
        if not rows:
            raise RuntimeError(f"job {self.job_id}: its dispatching insert wrote nothing")
        done = Dispatched(placed=[self.job_id], per_worker={worker_id: [self.job_id]},
                          carried={worker_id: [rows[0][-1]]}, scans_on=last)
        if wake:
            done.woken.add(channel)
        return done

    def candidate_row(self) -> list[Any]:
        """The job as a row of the cycle's first page (id, type, priority, pools, cost,
        locks, rate key)."""
        r = self.row
        return [self.job_id, self.type, r["priority"], r["pools"], r["cost"], r["locks"],
                r["rate_key"]]

    def _key(self) -> str:
        return job_key(None, self.row["routing"])


@dataclass(frozen=True, slots=True)
class Looked:
    """What :func:`look` found: the job (deferred or written), and the cycle's reads
    with the job among them (None: the lock is not ours, or no worker is live)."""

    deferred: Deferred
    ahead: pg_cycle.Ahead | None
    held: bool | None


def look(raw: Cursor, sub: JobSubmission, cache: SpecCache, build: Any,
         page: int) -> Looked | None:
    """The lock, the job's id and the cycle's reads in one round trip, for ``sub``
    (pending now, outside any graph); None when the ordinary path must decide
    (see pg_submit.submit_one): nothing is written then."""
    found = build_row_now(raw, sub, cache, build)
    if found is None:
        return None
    version, spec, row = found
    params = {f"c_{c}": v for c, v in row.items()}
    params.update(version=version, type=spec.name, key=job_key(None, row["routing"]),
                  tail=payload_tail(spec.name), n=page)
    looked, ahead, inserted = pipelined(raw, [
        (LOOK, params), (pg_cycle.AHEAD_IF_HELD, params),
        (_insert_unless_held(tuple(row)), params)])
    if not looked or not looked[0][0]:  # nothing inserted either (the same guard)
        cache.pop(sub.type, None)  # gone or changed since: read it again next time
        return None
    _, held, job_id = looked[0]
    deferred = Deferred(int(job_id), row, spec.name, version)
    if not ahead:  # the lock is not ours (or no live worker): in it went
        if not inserted or int(inserted[0][0]) != deferred.job_id:
            raise RuntimeError(f"job {job_id}: not inserted with the cycle's lock elsewhere")
        deferred.written = True
        return Looked(deferred, None, held)
    read = pg_cycle.Ahead.of_row(ahead[0], page)
    if read.lists:  # a backlog: in it goes, and joins the reads
        deferred.write(raw)
        return Looked(deferred, with_job(read, deferred), True)
    return Looked(deferred, replace(read, lists=[row["pools"]],
                                    first=[deferred.candidate_row()]), True)


def with_job(read: pg_cycle.Ahead, job: Deferred) -> pg_cycle.Ahead:
    """``read`` (made under the lock, before the job's insert) with the job in it: its
    pools list among the lists (the order of lists does not matter; the first page goes
    with the first), and the job in the first list's first page when it falls within
    it (placement order: priority, then id; the job's id is the highest). Else the
    cycle reads it from the table with the pages that follow."""
    pools, priority = job.row["pools"], job.row["priority"]
    if pools != read.lists[0]:
        lists = read.lists if pools in read.lists else [*read.lists, pools]
        return replace(read, lists=lists)
    first = list(read.first)
    if len(first) < read.page or first[-1][2] < priority:
        first.append(job.candidate_row())
        first.sort(key=lambda r: (-r[2], r[0]))
        del first[read.page:]
    return replace(read, first=first)
