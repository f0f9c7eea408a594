"""PostgreSQL: inserting jobs and their dependency edges.

One statement text inserts jobs (:func:`insert_sql`): a lone job as one row of values,
whose id the sequence gives it, with its ``job-pending`` event; more as a JSON row set
with ids taken from the sequence first (in order: the order of creation), by a statement
that also writes their ``job-pending`` events when they share one (:func:`ids_sql`) and
runs while the client builds the rows; a bulk (a large graph, a large batch) by
``COPY`` with the same ids. A lone job built from a task type read from
the driver's cache is inserted only while that type's row is still at the version it
was read at (its ``xmin``, which every update changes): else nothing is written, and
the caller reads the type afresh.

A lone submit whose caller runs the cycle next (``placing``) tries the cycle's lock in
its insert, only when a live worker exists (``cycle.LOCK_IF_WORKERS``, which also
passes the worker gate). Two shortcuts live here, both guesses the driver keeps
(:class:`Shortcuts`), each checked by the statement it shapes, so that a wrong guess
costs time and never a wrong write:

- **no live worker** (the last lone submit found none): the insert runs alone, in
  autocommit, and writes only while no worker is live (``cycle.NO_WORKER``); it checks
  its references itself (``references.CHECKED_SETTING``). One round trip, no
  ``BEGIN`` nor ``COMMIT``. When a worker is live it writes nothing and the insert
  runs again in the unit's transaction.
- **an idle queue** (the last reads of the cycle, under its lock, found no job pending
  but the one just submitted): the job is placed from the snapshot those reads saw, or
  from the snapshot as the last placement here left it (postgresql/shortcuts.py), and
  the insert is followed, in the same round trip, by the check that a decision holds
  under the lock (``shortcuts.MATCH``: the snapshot reads as one of those texts, no other
  job is pending, no maintenance step has work — a cycle run now would decide the
  same) and the dispatch (``cycle.DISPATCH``) by the one that holds. Otherwise the job stays pending
  and the caller's cycle places it. When nothing was sent in the unit yet, the
  pipeline is the unit's whole transaction (committed by its Sync, see
  ``rows.pipelined``; its insert then checks its references itself): one round trip; a job
  it leaves pending wakes the scheduler, and the caller's cycle, if the lock was ours,
  runs in a unit of its own (``InsertedJobs.committed``).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from collections.abc import Sequence
from typing import Any

from taskyard.model.records import TaskTypeSpec
from taskyard.store import schema as t
from taskyard.store.cursor import BULK_MIN_ROWS, Cursor, json_rows, pg_types
from taskyard.store.driver.cycle_params import CycleStart
from taskyard.store.driver.params import NO_ID, InsertedJobs, InsertJobs
from taskyard.store.portable import cycle as portable_cycle
from taskyard.store.portable.cycle import TIMEOUT_GRACE
from taskyard.store.postgresql import cycle
from taskyard.store.postgresql.references import CHECKED_SETTING
from taskyard.store.postgresql.rows import (
    Parameters,
    autocommit,
    copy,
    named,
    not_begun,
    pg_row_set,
    pipelined,
    pipelined_cursors,
)
from taskyard.store.postgresql.shortcuts import MATCH, Shortcuts, guessed_params
from taskyard.store.schema.base import DELAYED
from taskyard.store.schema.task_type_rows import COLUMNS, SELECT_SPECS, cached_spec

EDGE_TYPES = ("bigint", "bigint", "text")
_READ_TYPE = f"SELECT xmin::text, {', '.join(COLUMNS)} FROM task_types WHERE name = ?"
_SPECS = SELECT_SPECS.replace("{which}", "name = ANY(%s)")
_AS_BUILT = "EXISTS (SELECT 1 FROM task_types WHERE name = %s AND xmin = %s::xid"
_TAKEN_KEYS = " ON CONFLICT (dedup_key) WHERE dedup_key IS NOT NULL DO NOTHING"
_CHECKED = f" FOR KEY SHARE) AND set_config('{CHECKED_SETTING}', 'on', true) IS NOT NULL"
"""A job outside any graph, inserted by its transaction's only insert (alone, in
autocommit; or in a placing pipeline that is its unit's whole transaction): the
statement makes the insert trigger's check itself, locking its task type as the trigger
would, and says so — the trigger's own check, a query over the statement's new rows,
cost a placed submit about 0.2 ms of the server's time. (The setting lasts until the
transaction ends: no later insert of it may follow unchecked.)"""
_SEQUENCE = ("(SELECT pg_get_serial_sequence('jobs', 'id')::regclass AS seq OFFSET 0) AS s, "
             "generate_series(1, %s)")
_ANNOUNCED = ("e AS (INSERT INTO events (topic, routing_key, payload, job_id, graph_id, "
              "created_at) SELECT %s, %s, '{\"job_id\":' || id || %s, id, %s::bigint, {now} "
              "FROM i ORDER BY id) ")
AHEAD_ROWS = 5000
"""At most this many of a batch's rows are built while the server takes their ids (and
writes their events): the rest are built as ``COPY`` sends them (no list of a large
batch's rows is kept)."""


@functools.lru_cache(maxsize=8)
def ids_sql(*, live: bool, announce: bool, as_built: bool = False) -> str:
    """A batch's first statement, as a rule (it carries the unit's BEGIN: see
    ``rows.pipelined_cursors``): the ids of its ``%s`` jobs from the sequence (sorted,
    they give the order of creation) and one reading of the clock for a bulk's rows
    (COPY takes values). ``live``: and whether a live worker may take the jobs, through
    the worker gate (see cycle.NO_WORKER): naming the gate, the statement holds back a
    registration until this transaction ends, as a later check would. ``announce``: it
    writes the jobs' ``job-pending`` events too, in the order of their ids, from the
    values they share (topic, routing key, the payload after the id, graph id: ``%s``
    each), and wakes the events' followers: the client builds no payload, and the
    unit's end no statement, for them. ``as_built``: only while the jobs' task type is
    at the version their rows were built from (its name and ``xmin``, ``%s`` each, after
    the count; :data:`_AS_BUILT`): else it takes no id, writes no event and the ids are
    NULL."""
    gate = f"NOT ({cycle.NO_WORKER})" if live else "NULL"
    guard = f" WHERE {_AS_BUILT})" if as_built else ""
    if not announce:
        return f"SELECT (SELECT array_agg(nextval(s.seq)) FROM {_SEQUENCE}{guard}), {{now}}, {gate}"
    return (f"WITH i AS MATERIALIZED (SELECT nextval(s.seq) AS id FROM {_SEQUENCE}{guard}), "
            + _ANNOUNCED + "SELECT (SELECT array_agg(id ORDER BY id) FROM i), {now}, "
            + gate + ", pg_notify('taskyard_events', '')")


_PLACED_EVENT = ("e AS (INSERT INTO events (topic, routing_key, payload, job_id, graph_id, "
                 "created_at) SELECT %s, %s, '{\"job_id\":' || j.id || "
                 "%s, j.id, j.graph_id, {now} FROM j) ")


@functools.lru_cache(maxsize=64)
def insert_sql(columns: tuple[str, ...], *, many: bool, placing: bool = False,
               alone: bool = False, checked: bool = False,
               skip_taken_keys: bool = False) -> str:
    """The jobs insert. One row (``many`` False): positional values (the row's, its task
    type's name and version, which guard it, then its ``job-pending`` event's topic,
    routing key and payload after the id), with that event; returns its id and, ``placing``,
    whether the cycle's lock is ours (NULL: no live worker, not tried). ``alone``: it
    writes only while no worker is live. ``checked``: it checks its references itself
    (:data:`_CHECKED`). Many: a JSON row set of ``%(rows)s`` whose first column is the id."""
    names = ", ".join(columns)
    if many:
        types = ", ".join(f"(e->>{i})::{kind}"
                          for i, kind in enumerate(pg_types(t.jobs, ("id", *columns))))
        return (f"INSERT INTO jobs (id, {names}, created_at) SELECT {types}, {{now}} "
                f"FROM json_array_elements(%(rows)s::json) AS e"
                f"{_TAKEN_KEYS if skip_taken_keys else ''} RETURNING id, NULL")
    guard = (_CHECKED if checked else ")") + (f" AND {cycle.NO_WORKER}" if alone else "")
    lock = cycle.LOCK_IF_WORKERS if placing else "NULL"
    return (f"WITH j AS (INSERT INTO jobs ({names}, created_at) "
            f"SELECT {', '.join('%s' for _ in columns)}, {{now}} "
            f"WHERE {_AS_BUILT}{guard} RETURNING id, graph_id), {_PLACED_EVENT}"
            f"SELECT id, {lock}, pg_notify('taskyard_events', '') FROM j")


def task_types(raw: Cursor, names: Sequence[str]) -> list[tuple[Any, ...]]:
    """The rows of the task types among ``names``, as the portable read: a batch's first
    statement as a rule, which then carries the unit's BEGIN (``rows.named``)."""
    return named(raw, _SPECS, (list(names),))


def read_task_type(raw: Cursor, name: str) -> tuple[str, TaskTypeSpec] | None:
    """Type ``name``'s row version (``xmin``) and spec; None if there is no such type.
    Read in autocommit when the unit has sent nothing yet: the insert built from it is
    guarded by that version whenever it was read (:data:`_AS_BUILT`), and the unit may
    then still be one statement in autocommit (a process's first submit of a type while
    no worker is live: two round trips, not four with a ``BEGIN`` and a ``COMMIT``)."""
    with autocommit(raw) if not_begun(raw) else contextlib.nullcontext():
        found = raw.first(_READ_TYPE, (name,))
    return None if found is None else (found[0], cached_spec(tuple(found[1:])))


def insert_jobs(raw: Cursor, params: InsertJobs, page: int,
                shortcuts: Shortcuts) -> InsertedJobs:
    """See :class:`InsertJobs`; ``page``: how many candidates a cycle's first reads take."""
    if params.count == 1 and params.as_built is not None:
        return _insert_one(raw, params, page, shortcuts)
    columns, event, built = params.columns, params.announce, params.as_built
    if event is not None and params.skip_taken_keys:
        raise ValueError("InsertJobs: announce with skip_taken_keys (events of rows left out)")
    values: tuple[Any, ...] = (
        params.count, *(() if built is None else (built.name, built.version)),
        *(() if event is None else (event.topic, event.routing_key,
                                    event.payload[len(NO_ID):], event.graph_id)))
    source = iter(params.rows)
    ahead: list[tuple[Any, ...]] = []
    refused: list[Exception] = []

    def build_ahead() -> None:
        try:
            ahead.extend(itertools.islice(source, AHEAD_ROWS))
        except Exception as exc:  # raised once the statement's answer is read
            refused.append(exc)

    # The server takes the ids (and writes the events) while the first rows are built.
    (cursor,) = pipelined_cursors(raw, [(ids_sql(
        live=params.placing, announce=event is not None, as_built=built is not None),
        values)], meanwhile=build_ahead)
    (found,) = cursor.fetchall()
    if found[0] is None and built is not None:
        return InsertedJobs([])  # the type changed: nothing written, a refusal moot
    if refused:  # the type was as the rows were built: the refusal stands
        raise refused[0]
    ids, now, live = sorted(found[0] or ()), found[1], bool(found[2])  # none: no rows
    pairs = zip(ids, itertools.chain(ahead, source), strict=True)
    written: Sequence[int | None] = ids
    if params.count >= BULK_MIN_ROWS and not params.skip_taken_keys:
        # One clock reading for the bulk (COPY takes values, not expressions).
        copy(raw, "jobs", ["id", *columns, "created_at"],
             ((job_id, *row, now) for job_id, row in pairs))
    else:
        went_in = {int(i) for i, _ in named(raw, insert_sql(
            columns, many=True, skip_taken_keys=params.skip_taken_keys),
            {"rows": json_rows([(job_id, *row) for job_id, row in pairs])})}
        written = [i if i in went_in else None for i in ids]
    return InsertedJobs(list(written), params.placing and live)


def _insert_one(raw: Cursor, params: InsertJobs, page: int,
                shortcuts: Shortcuts) -> InsertedJobs:
    (row,) = params.rows
    assert params.as_built is not None and params.announce is not None
    event = params.announce
    # Positional: the row as it comes, then the guard's and the event's values (named
    # parameters cost a dict of some 30 names per submit, and psycopg's reordering).
    values = (*row, params.as_built.name, params.as_built.version, event.topic,
              event.routing_key, event.payload[len(NO_ID):])
    if params.placing and shortcuts.no_worker and not_begun(raw):
        found = _alone(raw, params.columns, row, values)
        if found is not None:
            return InsertedJobs([found], committed=True)
        shortcuts.no_worker = False  # a worker is live (or the type changed)
    insert = insert_sql(params.columns, many=False, placing=params.placing)
    shortcuts.submits = shortcuts.submits or params.placing
    if not params.placing:
        inserted = named(raw, insert, values)
        return InsertedJobs([int(inserted[0][0])] if inserted else [])
    guesses = shortcuts.choose(params.columns, row)
    if guesses:
        whole = not_begun(raw)  # the unit's transaction is this pipeline's: it commits
        if whole:  # (a guess placed it: a job outside any graph)
            insert = insert_sql(params.columns, many=False, placing=True, checked=True)
        # The dispatch wakes the scheduler if the job stays pending and the pipeline
        # commits: a statement of its own did, about 0.03 ms of the client's CPU a submit.
        match, dispatch = guessed_params(
            [(g.basis.text, g.worker_id, g.name) for g in guesses], TIMEOUT_GRACE,
            pend=whole)
        statements: list[tuple[str, Parameters]] = [
            (insert, values), (MATCH, match), (cycle.DISPATCH, dispatch)]
        inserted, matched, placed = pipelined(raw, statements, commit=whole)
        if placed:
            shortcuts.placed(guesses[int(matched[0][0]) - 1], params.columns, row)
            return InsertedJobs([int(inserted[0][0])], True, CycleStart(True), placed=True,
                                committed=whole)
        shortcuts.refused()  # no guess held: the cycle reads afresh
        if whole and inserted:  # pending, the scheduler woken; the caller's cycle after
            held = inserted[0][1]
            shortcuts.no_worker = held is None
            return InsertedJobs([int(inserted[0][0])], held is not None,
                                None if held is None else CycleStart(bool(held)),
                                committed=True)
        ahead: list[Any] = []
    else:
        inserted, ahead = pipelined(raw, [(insert, values), (cycle.AHEAD_IF_HELD,
                                                             {"n": page, "snapshot": True})])
    if not inserted:
        return InsertedJobs([])
    job_id, held = int(inserted[0][0]), inserted[0][1]
    shortcuts.no_worker = held is None
    if held is None:  # no live worker: the lock was not tried
        return InsertedJobs([job_id])
    reads = None
    if ahead:
        reads = cycle.reads_of_row(ahead[0], page)
        shortcuts.learn(reads, ahead[0][0], job_id)
        shortcuts.to_be_placed(params.columns, row)
    return InsertedJobs([job_id], True, CycleStart(bool(held), reads))


def _alone(raw: Cursor, columns: tuple[str, ...], row: tuple[Any, ...],
           values: tuple[Any, ...]) -> int | None:
    """The insert in autocommit, while no worker is live; the job's id, or None when it
    wrote nothing. The unit's transaction has not begun: this is all of it (the caller
    runs no cycle with no live worker)."""
    checked = row[columns.index("graph_id")] is None
    with autocommit(raw):
        found = named(raw, insert_sql(columns, many=False, alone=True, checked=checked),
                      values)
    return int(found[0][0]) if found else None


def live_worker(raw: Cursor) -> bool:
    """Whether a live worker exists, through the worker gate (see cycle.NO_WORKER)."""
    row = raw.first(f"SELECT NOT ({cycle.NO_WORKER})")
    return bool(row and row[0])


def insert_edges(raw: Cursor, edges: Sequence[tuple[int, int, str]]) -> None:
    """Dependency edges (job, the job it requires, condition): ``COPY`` for many."""
    if len(edges) >= BULK_MIN_ROWS:
        copy(raw, "dependencies", ("job_id", "requires_id", "condition"), edges)
        return
    if edges:
        named(raw, "INSERT INTO dependencies (job_id, requires_id, condition) "
              f"{pg_row_set(EDGE_TYPES, 'rows')}", {"rows": json_rows(edges)})


STAGE_DUE = (
    "UPDATE jobs SET delayed_until = NULL "
    f"WHERE id = ANY(ARRAY(SELECT id FROM jobs WHERE {DELAYED} AND delayed_until <= {{now}} "
    "ORDER BY delayed_until LIMIT ?)) "
    "AND CASE WHEN state = 'pending' THEN delayed_until <= {now} END")
"""SQL: the due delayed jobs join the placement index, the earliest first, at most
``STAGE_LIMIT``. Their ids are read once, then each job by its key: written as
``id IN (the due ids) AND state = 'pending'``, before the table's statistics knew of
the jobs (a batch for later, submitted and due within autovacuum's minute) PostgreSQL
took the pending jobs by ``ix_jobs_state_id`` and read the due ids again for each —
4,000 due jobs took 4.4 s, a cycle holding the lock 8.6 s. The guard (a row another
transaction changed first is read again as it is now) is a ``CASE``, which no index
can take: a plain ``state = 'pending'`` offered that index again. Aging picks the
oldest jobs alike (``portable/upkeep.py:age_pending``)."""


def stage_due_jobs(raw: Cursor) -> int:
    """Due delayed jobs made placeable (:data:`STAGE_DUE`); how many."""
    return raw.run(STAGE_DUE, (portable_cycle.STAGE_LIMIT,))
