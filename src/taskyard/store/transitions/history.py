"""The history follower: it reads the event log in commit order (as the RabbitMQ
publisher does, by name among the outbox cursors) and adds what happened to the rollups
of :mod:`taskyard.core.history` — written as work happens, never on the path of a
submit or a completion; read by the charts and ``/metrics`` at a cost that does not
grow with the number of jobs.

Several processes may run it (schedulers, HTTP servers catching up before a read): a
batch counts only if its transaction moves the follower's position from where it read
it, else it is rolled back (:class:`LostRace`) — every event is counted once.

Also here: the queue depth sampled into the rollups, their retention, and histograms of
durations summed over processes (``duration_totals``: the scheduling cycles).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, func, insert, select, tuple_, update

from taskyard.core.history import (
    GRANULARITIES,
    KEEP,
    Counts,
    Fact,
    Key,
    Kind,
    depth_sample,
    fold,
)
from taskyard.model.records import EventRecord, loads
from taskyard.store import schema as t
from taskyard.store.transitions.dependents import chunks

if TYPE_CHECKING:
    from taskyard.store import Store
    from taskyard.store.unit import Tx

_H, _J, _T = t.history, t.jobs, t.duration_totals
_O = t.outbox_cursors
FOLLOWER = "history"
"""The history follower's name among the outbox cursors."""
_HISTS = ("wait_hist", "cycle_hist")


class LostRace(Exception):
    """Another process counted these events first."""


@dataclass(frozen=True, slots=True)
class RolledUp:
    events: int
    """Events read (and counted) by this call."""
    caught_up: bool
    """The follower reached the newest committed event."""


def roll_up(store: Store, *, batch: int = 5000, batches: int = 20) -> RolledUp:
    """Count the events committed since the follower's position, ``batch`` per
    transaction, at most ``batches`` transactions."""
    read = 0
    for _ in range(batches):
        try:
            with store.write() as tx:
                count, full = _one_batch(tx, batch)
        except LostRace:
            return RolledUp(read, False)
        read += count
        if not full:
            return RolledUp(read, True)
    return RolledUp(read, False)


def _hold_history(tx: Tx) -> None:
    """One writer of the rollups at a time, until its commit: the others wait on the
    follower's position row (PostgreSQL; SQLite's writers queue anyway). A follower then
    reads where the last one left off; and two schedulers sampling the queue depth into
    a new bucket no longer both insert its row (one failed on the unique key)."""
    tx.raw.run("INSERT INTO outbox_cursors (name, tx_id, event_id, updated_at) "
               "VALUES (?, -1, 0, {now}) ON CONFLICT (name) DO NOTHING", (FOLLOWER,))
    tx.raw.first(f"SELECT name FROM outbox_cursors WHERE name = ?{tx.raw.row_lock}",
                 (FOLLOWER,))


def _one_batch(tx: Tx, batch: int) -> tuple[int, bool]:
    _hold_history(tx)
    after = tx.outbox.position(FOLLOWER)
    page = tx.events.committed(after, limit=batch)
    if page.cursor == after:
        return 0, False
    add_counts(tx, fold(facts_of(tx, page.events)))
    if not tx.outbox.advance(FOLLOWER, page.cursor):
        raise LostRace
    return len(page.events), page.full


@dataclass(frozen=True, slots=True)
class _JobFacts:
    pool: str
    type: str
    created_at: float
    run_after: float | None
    finished_at: float | None


def facts_of(tx: Tx, events: Sequence[EventRecord]) -> list[Fact]:
    """What the events say happened, with each job's first pool and type."""
    job_ids = sorted({int(p["job_id"]) for e in events
                      if isinstance(p := e.payload, dict) and "job_id" in p})
    jobs = _jobs(tx, job_ids)
    first_starts = [int(e.payload["job_id"]) for e in events
                    if e.topic == "job-running" and e.payload.get("attempt") == 1]
    started, ready = _first_starts(tx, first_starts, max((e.id for e in events), default=0))
    found: list[Fact] = []
    for e in events:
        payload = e.payload if isinstance(e.payload, dict) else {}
        job = jobs.get(int(payload.get("job_id", 0) or 0))
        if job is None:  # a graph's event, or a job pruned since
            continue
        found.extend(_facts_of_one(e, payload, job, started, ready))
    return found


def _facts_of_one(e: EventRecord, payload: Mapping[str, Any], job: _JobFacts,
                  started: Mapping[int, float], ready: Mapping[int, list[tuple[int, float]]]
                  ) -> list[Fact]:
    def fact(kind: Kind, seconds: float | None = None) -> Fact:
        return Fact(kind, e.created_at, job.pool, job.type, seconds)

    job_id = int(payload["job_id"])
    if e.topic == "job-pending":
        return [fact(Kind.ARRIVED)]
    if e.topic == "job-running":
        if payload.get("attempt") != 1 or job_id not in started:
            return [fact(Kind.STARTED)]
        # Ready: when it last became pending before this start (or was created), and
        # not before its run_after (unless that is a later retry's).
        start = started[job_id]
        since = max([job.created_at, *(at for i, at in ready.get(job_id, ()) if i < e.id)])
        if job.run_after is not None and job.run_after <= start:
            since = max(since, job.run_after)
        return [fact(Kind.STARTED, start - since)]
    final = not payload.get("retry", False)
    cycle = None if job.finished_at is None else job.finished_at - job.created_at
    ended = [fact(Kind.FINISHED, cycle)] if final else []
    if e.topic == "job-completed":
        return [fact(Kind.SUCCEEDED), *ended]
    if e.topic == "job-failed":
        return [fact(Kind.FAILED), *ended]
    if e.topic != "job-exception":
        return []
    reason = payload.get("reason")
    if reason in ("canceled", "graph canceled"):
        return [fact(Kind.CANCELED), *ended]
    if payload.get("state") == "error":
        return [fact(Kind.ERRORED), *ended]
    return [fact(Kind.ERRORED)]  # lost its worker: suspended, to run again


def _jobs(tx: Tx, ids: Sequence[int]) -> dict[int, _JobFacts]:
    # Through the driver's membership test (PostgreSQL: one array parameter), not an IN
    # list of bound parameters: SQLAlchemy rendered and psycopg re-parsed a thousand of
    # them per statement, the most of the roll-up's CPU after the fold.
    found: dict[int, _JobFacts] = {}
    for part in chunks(list(ids)):
        which, params = tx.raw.member("id", part)
        for job_id, type_, pools, created_at, run_after, finished_at in tx.raw.all(
                "SELECT id, type, pools, created_at, run_after, finished_at FROM jobs "
                f"WHERE {which}", params):
            first = loads(pools) or [""]
            found[int(job_id)] = _JobFacts(str(first[0]), str(type_), float(created_at),
                                           run_after, finished_at)
    return found


def _first_starts(tx: Tx, ids: Sequence[int], upto: int
                  ) -> tuple[dict[int, float], dict[int, list[tuple[int, float]]]]:
    """First attempts' starts, and the times the jobs became pending (event id, time)."""
    started: dict[int, float] = {}
    ready: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for part in chunks(sorted(set(ids))):
        which, params = tx.raw.member("job_id", part)
        started.update((int(job_id), float(at)) for job_id, at in tx.raw.all(
            f"SELECT job_id, started_at FROM attempts WHERE {which} AND attempt = 1 "
            "AND started_at IS NOT NULL", params))
        for job_id, event_id, at in tx.raw.all(
                f"SELECT job_id, id, created_at FROM events WHERE {which} "
                "AND topic = 'job-pending' AND id <= ?", [*params, upto]):
            ready[int(job_id)].append((int(event_id), float(at)))
    return started, ready


def add_counts(tx: Tx, found: Mapping[Key, Counts]) -> None:
    """Add ``found`` to the rows of the rollups (in key order: two writers lock rows in
    the same order)."""
    keys = sorted(found)
    existing: dict[Key, Counts] = {}
    for part in chunks(keys):
        for row in tx.conn.execute(select(_H).where(
                tuple_(_H.c.granularity, _H.c.bucket, _H.c.pool, _H.c.type).in_(part))):
            existing[(int(row.granularity), float(row.bucket), row.pool, row.type)] = \
                counts_of(row._mapping)
    new = []
    for key in keys:
        before = existing.get(key)
        merged = found[key] if before is None else before.merge(found[key])
        values = _row(merged)
        if before is None:
            new.append({"granularity": key[0], "bucket": key[1], "pool": key[2],
                        "type": key[3], **values})
        else:
            tx.conn.execute(update(_H).where(
                _H.c.granularity == key[0], _H.c.bucket == key[1], _H.c.pool == key[2],
                _H.c.type == key[3]).values(**values))
    if new:
        tx.conn.execute(insert(_H), new)


def counts_of(row: Mapping[Any, Any]) -> Counts:
    values: dict[str, Any] = {f.name: tuple(json.loads(row[f.name])) if f.name in _HISTS
                              else row[f.name] for f in fields(Counts)}
    return Counts(**values)


def _row(counts: Counts) -> dict[str, Any]:
    return {f.name: json.dumps(list(v)) if f.name in _HISTS else v
            for f in fields(Counts) for v in (getattr(counts, f.name),)}


def sample_depth(store: Store) -> None:
    """Add one reading of the queue depth (pending jobs per first pool and type, read
    through the pending placement index) to the rollups, and forget rollups past
    their retention."""
    with store.write() as tx:
        _hold_history(tx)
        now = float(tx.conn.execute(select(store.now_expr)).scalar_one())
        depths: dict[tuple[str, str], int] = defaultdict(int)
        for pools, type_, n in tx.conn.execute(
                select(_J.c.pools, _J.c.type, func.count())
                .where(_J.c.state == "pending").group_by(_J.c.pools, _J.c.type)):
            depths[(str((loads(pools) or [""])[0]), str(type_))] += int(n)
        for pool, type_ in _active_keys(tx, now):
            depths.setdefault((pool, type_), 0)
        add_counts(tx, depth_sample(depths, now))
        for granularity, keep in KEEP.items():
            tx.conn.execute(delete(_H).where(_H.c.granularity == granularity,
                                             _H.c.bucket < now - keep))


def _active_keys(tx: Tx, now: float) -> Iterable[tuple[str, str]]:
    """Pools and types with history in the last hour (an empty queue reads 0)."""
    return [(r.pool, r.type) for r in tx.conn.execute(
        select(_H.c.pool, _H.c.type).distinct()
        .where(_H.c.granularity == GRANULARITIES[0], _H.c.bucket >= now - 3600))]


def add_durations(store: Store, name: str, bounds: Sequence[float],
                  counts: Sequence[int], total: float) -> None:
    """Add a histogram (``counts`` per bucket of ``bounds``, one more unbounded, and
    their ``total``) to the one summed under ``name`` across processes."""
    with store.write() as tx:
        _hold_history(tx)  # the first two adders would both insert the row
        row = tx.raw.first("SELECT counts, total, bounds FROM duration_totals "
                           f"WHERE name = ?{tx.raw.row_lock}", (name,))
        now = tx.driver.read_now(tx.raw)
        if row is None or json.loads(row[2]) != list(bounds):
            tx.conn.execute(delete(_T).where(_T.c.name == name))
            tx.conn.execute(insert(_T).values(
                name=name, bounds=json.dumps(list(bounds)), counts=json.dumps(list(counts)),
                total=total, updated_at=now))
            return
        summed = [a + b for a, b in zip(json.loads(row[0]), counts, strict=True)]
        tx.conn.execute(update(_T).where(_T.c.name == name).values(
            counts=json.dumps(summed), total=row[1] + total, updated_at=now))


@dataclass(frozen=True, slots=True)
class Durations:
    bounds: list[float]
    counts: list[int]
    total: float


def read_durations(store: Store, name: str) -> Durations | None:
    """The histogram summed under ``name`` (None before anything was added)."""
    with store.read() as tx:
        row = tx.conn.execute(select(_T).where(_T.c.name == name)).first()
    if row is None:
        return None
    return Durations(json.loads(row.bounds), json.loads(row.counts), float(row.total))

