"""PostgreSQL: the scheduling cycle's statements — its lock, its reads, the dispatch (the
one statement that moves jobs pending → dispatched) and its end. Each folds several
reads, writes or settings into one round trip: a cycle runs inline on every submit and
report, and each round trip is part of a job's latency."""

from __future__ import annotations

import collections
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from taskyard.model.records import loads
from taskyard.store.cursor import Cursor, json_rows
from taskyard.store.driver.cycle_params import (
    CycleReads,
    Dispatched,
    FinishCycle,
    Snapshot,
    slices,
)
from taskyard.store.driver.params import Dispatch
from taskyard.store.driver.wakeup_payloads import CARRY_JOBS, RESULT_MARK, WAKEUP_BYTES
from taskyard.store.portable.cycle import ONCE, maintenance_checks, next_delayed
from taskyard.store.postgresql.engine import CYCLE_IDLE_MS, CYCLE_LOCK_TIMEOUT_MS
from taskyard.store.postgresql.listen import pg_channel
from taskyard.store.postgresql.references import CYCLE_HELD
from taskyard.store.postgresql.rows import (
    Parameters,
    named,
    pipelined,
)
from taskyard.store.schema.base import READY

ADVISORY_KEY = 0x7461736B79617264 & 0x7FFFFFFFFFFFFFFF  # "taskyard"

_ACTIVE = ("CASE WHEN locks = '[]' THEN 0 ELSE id END")
SNAPSHOT_TEXT = (
    # What the planner starts from: live workers, what is dispatched or running (summed
    # per worker and type; jobs with locks one by one), queue limits — as one JSON text,
    # each list in a fixed order: the same state always reads as the same text, which a
    # submit compares with the text a cycle read (postgresql/jobs.py).
    "json_build_array("
    "(SELECT json_agg(json_build_array(id, name, pools, capacity, prefetch, unpaced_prefetch) "
    "ORDER BY id) "
    f"FROM workers WHERE state = 'active' AND lease_expires_at >= {ONCE}), "
    "(SELECT json_agg(json_build_array(holder, type, worker_id, cost, locks, n) "
    "ORDER BY worker_id, type, locks, holder) FROM ("
    f"SELECT {_ACTIVE} AS holder, type, worker_id, SUM(cost) AS cost, locks, COUNT(*) AS n "
    "FROM jobs WHERE state IN ('dispatched', 'running') "
    f"GROUP BY worker_id, type, locks, {_ACTIVE}) AS a), "
    "(SELECT json_agg(json_build_array(name, max_queue_length, rate_limit) ORDER BY name) "
    "FROM task_types WHERE max_queue_length IS NOT NULL OR rate_limit IS NOT NULL), "
    "(SELECT json_agg(name ORDER BY name) FROM pools WHERE paused))::text")
"""SQL: the cycle's snapshot (:class:`Snapshot`) as one JSON text."""
# The cycle reads and writes jobs through their indexes only: no bitmap scans (see
# LOCK_AHEAD) and no sequential scans. Before autovacuum has analysed a table that
# just grew, a dispatch of a few hundred ids would otherwise be planned as a scan of the
# whole table (200 ids among 20,000 pending jobs: 63.5 us a job, 47.5 with the ids'
# index lookups): the cycle's cost would follow the table, not what it places.
# JIT compilation goes off too, until the transaction ends: a statement that can only
# scan a table (task_types has no index for what the snapshot reads) is then costed
# beyond jit_above_cost, and compiling it took 0.6 s, for a statement of 1 ms.
# And a prepared statement (psycopg prepares one from its second run) keeps its generic
# plan: PostgreSQL otherwise planned the dispatch afresh at each run (its custom plans
# were never dearer than the generic one, so it kept making them) — a third of a
# millisecond of each hand-off in a chain, as long as the dispatch's own run; index
# scans by id either way. That lasts until the transaction ends, not until the scans
# go back on. The foreign-key checks of a dispatched job's worker (jobs.worker_id,
# attempts.worker_id) run as a dispatch statement ends: for the cycle's last, after it
# put the scans back. With plan_cache_mode back to auto there, PostgreSQL planned them
# afresh at each row: their generic plan, made with the scans off by an earlier
# dispatch, was dearer than a custom one with them on (14,000 plans for 20,000 checks
# in W1's drain, 8 us a job of server time: tests/store/test_dispatch_checks.py). The
# few statements after a cycle in its unit (the placed jobs, read by id; the search for
# stalled graphs) are planned alike either way.
GENERIC_PLANS = "set_config('plan_cache_mode', 'force_generic_plan', true) IS NOT NULL"
"""SQL: prepared statements keep their generic plans until the transaction ends."""
SCANS_OFF = ("set_config('enable_bitmapscan', 'off', true) IS NOT NULL "
             "AND set_config('enable_seqscan', 'off', true) IS NOT NULL "
             f"AND {GENERIC_PLANS} "
             "AND set_config('jit', 'off', true) IS NOT NULL")
SCANS_ON = ("set_config('enable_bitmapscan', 'on', true) IS NOT NULL "
            "AND set_config('enable_seqscan', 'on', true) IS NOT NULL")
_NOTIFY_ALL = "SELECT count(pg_notify(c, '')) FROM unnest(%(channels)s::text[]) AS c"
_FINISH = f"SELECT {SCANS_ON}, ({_NOTIFY_ALL})"


_LISTS_WITH = (
    "WITH RECURSIVE lists(p) AS ("
    f"SELECT MIN(pools) FROM jobs WHERE {READY} "
    f"UNION ALL SELECT (SELECT MIN(pools) FROM jobs WHERE {READY} AND pools > lists.p) "
    "FROM lists WHERE lists.p IS NOT NULL), "
    # The first list's first page, as CycleTx.candidates reads it (through the
    # placement index, in placement order, stopped at the page size).
    "first AS (SELECT id, type, priority, pools, cost, locks, rate_key FROM jobs "
    f"WHERE {READY} AND pools = (SELECT MIN(p) FROM lists) "
    "AND (run_after IS NULL OR run_after <= {now}) ORDER BY priority DESC, id LIMIT %(n)s) ")
_LISTS_COLUMNS = (
    "(SELECT json_agg(p ORDER BY p) FROM lists WHERE p IS NOT NULL), "
    "(SELECT json_agg(json_build_array(id, type, priority, pools, cost, locks, rate_key) "
    "ORDER BY priority DESC, id) FROM first)")
_PENDING_LISTS = f"{_LISTS_WITH}SELECT {_LISTS_COLUMNS}"
# The pools lists and the first page only when a worker is alive to take them (a CASE
# branch not taken runs none of its subqueries): submits without workers read less.
_ANY_WORKER = ("EXISTS (SELECT 1 FROM workers WHERE state = 'active' "
               "AND lease_expires_at >= {now})")
_AHEAD_READS = (
    # The snapshot only when a job is pending, or when %(snapshot)s asks for it anyway
    # (see Shortcuts.submits): with nothing to place the planner is not built, and its
    # workers' part grows with the fleet (0.67 ms of server time a cycle at 200 workers,
    # most of this statement's).
    f"{_LISTS_WITH}SELECT CASE WHEN %(snapshot)s OR EXISTS (SELECT 1 FROM lists "
    f"WHERE p IS NOT NULL) THEN {SNAPSHOT_TEXT} END, "
    f"CASE WHEN {_ANY_WORKER} THEN (SELECT json_agg(p ORDER BY p) FROM lists "
    "WHERE p IS NOT NULL) END, "
    f"CASE WHEN {_ANY_WORKER} THEN (SELECT json_agg(json_build_array(id, type, priority, "
    "pools, cost, locks, rate_key) ORDER BY priority DESC, id) FROM first) END, "
    # Whether the cycle's lock is ours (see HELD_SETTING): what the snapshot read then is
    # a basis for a submit's decision (postgresql/shortcuts.py).
    "current_setting('taskyard.cycle_held', true) = 'on'")
MAINTENANCE_WORK = "SELECT " + ", ".join((*maintenance_checks("false", "%(grace)s"),
                                          next_delayed()))
"""SQL: which maintenance steps have work (named parameter ``grace``), then the seconds
until the next delayed job."""
NO_MAINTENANCE = "NOT (" + " OR ".join(maintenance_checks("false", "%(grace)s")) + ")"
"""SQL: no maintenance step has work."""
HELD_SETTING = CYCLE_HELD
"""Set ('on', until the transaction ends) by :data:`LOCK_AHEAD` once the lock is ours:
a statement sent after it in one pipeline reads only then (:data:`AHEAD_IF_HELD`)."""
LOCK_AHEAD = (
    # The global lock, alone or in a statement that does more (a submit's insert). Once
    # it is ours: waiting for a row lock (held by a frozen transaction) must not keep
    # it for long (the cycle fails instead, and the next one retries); nor may our own
    # process, frozen in the middle of the cycle (the server ends the session after
    # CYCLE_IDLE_MS instead of the connection's minute, and the lock with it); and no bitmap
    # or sequential scans for its reads and writes (see SCANS_OFF). After a burst of
    # submissions, before autovacuum has analysed the table, the planner believes few
    # jobs are pending and reads all of them (bitmap scan, then sort: 0.4 s at 1M
    # pending) instead of the first few in index order (0.1 ms). The settings must be
    # made by an earlier statement than the reads (a statement is planned before it
    # runs); the last dispatch or finish() turns them back on (or the commit, when
    # nothing follows the cycle in its transaction). Not ours: generic plans all the
    # same, for what a submit sent after it in its pipeline (AHEAD_IF_HELD, DISPATCH),
    # which PostgreSQL otherwise planned afresh at each run, 1-2 ms each.
    f"CASE WHEN pg_try_advisory_xact_lock({ADVISORY_KEY}) "
    f"THEN set_config('lock_timeout', '{CYCLE_LOCK_TIMEOUT_MS}', true) IS NOT NULL "
    f"AND set_config('idle_in_transaction_session_timeout', '{CYCLE_IDLE_MS}', true) "
    "IS NOT NULL "
    f"AND set_config('{HELD_SETTING}', 'on', true) IS NOT NULL "
    f"AND {SCANS_OFF} ELSE NOT {GENERIC_PLANS} END")
"""SQL: try the global lock for this transaction (true when it is ours); either way the
transaction keeps generic plans."""

AHEAD_IF_HELD = (f"SELECT * FROM ({_AHEAD_READS}) AS r "
                 f"WHERE current_setting('{HELD_SETTING}', true) = 'on'")
"""SQL: :data:`_AHEAD_READS` when the lock is ours (no row otherwise: nothing read, a
one-time filter), for a statement sent in one pipeline after the one that tried it."""

_GATE = "NOT EXISTS (SELECT 1 FROM worker_gate)"
"""SQL, always true (the table stays empty): naming the table, a statement locks it
before it takes its snapshot, until its transaction ends (schema_service.worker_gate)."""
PASS_GATE = "LOCK TABLE worker_gate IN ACCESS EXCLUSIVE MODE"
"""SQL: a worker's registration waits for the statements holding the gate, and holds
back the later ones until it commits."""
LOCK_IF_WORKERS = f"CASE WHEN {_GATE} AND {_ANY_WORKER} THEN {LOCK_AHEAD} END"
"""SQL: a submit's insert tries :data:`LOCK_AHEAD` only when a live worker could take
the job; with none the cycle could place nothing (a worker runs one when it starts):
NULL, and the submit costs one statement instead of three (the cycle's reads, its end)
— and wakes nobody: through the gate, a worker registering meanwhile commits after it,
and the cycle its registration wakes sees the job."""
NO_WORKER = f"{_GATE} AND NOT {_ANY_WORKER}"
"""SQL: no live worker (the condition of a submit in autocommit, see postgresql/jobs.py), under
the gate as :data:`LOCK_IF_WORKERS`."""


def read_pools_lists(raw: Cursor, page: int) -> tuple[list[str], list[Any]]:
    """The distinct pools lists of pending jobs, and the rows of the first page of the
    first list (as the candidates are read). Reading that page when the first list has
    no room costs at most one page, which follows the free capacity, not the backlog."""
    lists, first = named(raw, _PENDING_LISTS, {"n": page})[0]
    return lists or [], first or []


def read_cycle(raw: Cursor, page: int, snapshot: bool) -> tuple[Any, ...]:
    """The cycle's first reads in one statement (with the lock ours, scans are off): the
    row of :data:`_AHEAD_READS` (see :func:`reads_of_row`); the snapshot only when a job
    is pending, or ``snapshot``."""
    return named(raw, _AHEAD_READS, {"n": page, "snapshot": snapshot})[0]


_MAINTAIN_AND_READ = f"SELECT * FROM ({MAINTENANCE_WORK}) AS m, ({_AHEAD_READS}) AS r"
MAINTENANCE_STEPS = len(maintenance_checks("false", "%(grace)s"))
"""How many flags :data:`MAINTENANCE_WORK` reads (one per maintenance step; the seconds
until the next delayed job follow)."""


def maintain_and_read(raw: Cursor, grace: float, page: int) -> tuple[Any, ...]:
    """Which maintenance steps have work (:data:`MAINTENANCE_WORK`), then the row of the
    cycle's first reads with the snapshot (:func:`read_cycle`), in one statement. Not
    two in a pipeline: a scheduler frozen between a pipeline's statements and its Sync
    holds the cycle's lock with its 10 s limit unarmed (see cycle_lock.py: take_lock)."""
    return named(raw, _MAINTAIN_AND_READ, {"grace": grace, "n": page, "snapshot": True})[0]


def read_snapshot(raw: Cursor) -> Snapshot:
    """The cycle's snapshot alone (when its first reads left it out)."""
    (text,) = raw.first(f"SELECT {SNAPSHOT_TEXT}") or (None,)
    return _snapshot(text)


def reads_of_row(row: Sequence[Any], page: int) -> CycleReads:
    """The reads from the row of :data:`_AHEAD_READS` (or :data:`AHEAD_IF_HELD`)."""
    text, lists, first, _ = row
    return CycleReads(None if text is None else _snapshot(text), lists or [], first or [],
                      page)


def _snapshot(text: str) -> Snapshot:
    workers, active, limits, paused = loads(text)
    return Snapshot(workers or [], active or [], limits or [], paused or [])


def finish(raw: Cursor, params: FinishCycle) -> None:
    """Scans back on and the wake-ups, in one statement (a dispatch's wake-up, with the
    jobs it carries, went with its statement). With no wake-up to send, the scans are
    put back only if the unit runs another statement (``Cursor.restore``): a cycle is
    most often its unit's last step (a worker's report, a submit), whose commit ends
    the settings anyway — a round trip less on a job's way."""
    if params.channels:
        named(raw, _FINISH if params.scans_off else _NOTIFY_ALL,
              {"channels": [pg_channel(c) for c in params.channels]})
    elif params.scans_off:
        raw.restore = f"SELECT {SCANS_ON}"


# "IS TRUE": PostgreSQL would otherwise walk the partial index of pending jobs (all of
# them) instead of looking the ids up.
DISPATCHED_COLUMNS = ("id, attempt, type, args, timeout, graph_id, label, cost, priority, "
                      "logical_time, trace_context")
"""What the jobs statement ``d`` of :data:`DISPATCH` returns (and the worker)."""
_NOW = "(SELECT t FROM k)"  # the time of DISPATCH, read once (in its ``k``)
MATCHED_SETTING = "taskyard.matched"
"""Which of a lone submit's guesses holds (1, 2, 3; '' for none): set by
``shortcuts.MATCH`` until the transaction ends, read by :data:`DISPATCH`."""
_AS_DECIDED = (
    # A submit's own job, dispatched by the statement after its insert and its MATCH (its
    # id NULL in ``%(rows)s``: the id the insert took; one row per guess, the one that
    # holds kept, see ``v``) only if that insert wrote it.
    "AND (%(guessed)s IS NOT TRUE OR jobs.xmin = pg_current_xact_id()::xid) ")
_NEW_JOB = "currval(pg_get_serial_sequence('jobs', 'id'))"
DISPATCH = (
    # The placements (job, worker) in placement order, and per worker its name, the
    # channel that wakes it (NULL: its caller takes the jobs itself) and whether its
    # wake-up may carry its jobs: every worker of a cycle in one statement. One
    # statement per worker cost the server 0.2 ms each beyond its rows (W3's cycle
    # placing 50 jobs on 5 workers: 2.16 ms of dispatch against 1.30 ms on 1 worker).
    "WITH v(job, w, name, chan, carry) AS (SELECT COALESCE((e->>0)::bigint, " + _NEW_JOB
    + "), (e->>1)::bigint, e->>2, e->>3, (e->>4)::boolean "
    f"FROM json_array_elements(%(rows)s::json) e WHERE e->>5 IS NULL "
    f"OR e->>5 = current_setting('{MATCHED_SETTING}', true)), "
    # The jobs by id through the index whatever the plan: a join with v, planned once
    # (the statement is prepared) while few jobs were pending, read every pending job
    # per row of v when a burst came (4.6 s for 5,000 placements, against 0.14 s).
    # The time once, too: 7 readings of the clock made the text exceed 4 KiB.
    "k AS (SELECT array_agg(job) i, array_agg(w) w, {now} t FROM v), "
    "d AS (UPDATE jobs SET state = 'dispatched', worker_id = (SELECT w[array_position(i, id)] "
    "FROM k), attempt = attempt + 1 WHERE id = ANY((SELECT i FROM k)::int8[]) "
    f"AND (state = 'pending') IS TRUE {_AS_DECIDED}"
    f"RETURNING {DISPATCHED_COLUMNS}, worker_id), "
    "a AS (INSERT INTO attempts (job_id, attempt, worker_id, worker_name, state, "
    f"dispatched_at) SELECT id, attempt, worker_id, name, 'dispatched', {_NOW} "
    "FROM d JOIN v ON v.job = d.id RETURNING job_id, attempt, worker_id), "
    # The transaction's events so far (see Events.flush), written here rather than by
    # a statement of their own at its end: a round trip less on a job's way.
    "ev AS (INSERT INTO events (topic, routing_key, payload, job_id, graph_id, created_at) "
    f"SELECT *, {_NOW} FROM (SELECT e->>0, e->>1, e->>2, (e->>3)::bigint, (e->>4)::bigint "
    "FROM json_array_elements(%(events)s::json) e) e "
    # (The row set of EVENT_TYPES, its text columns as ->> gives them.) ... waking
    # their followers (per row: deduplicated by the server).
    "WHERE pg_notify('taskyard_events', '') IS NOT NULL), "
    # A worker's wake-up carries its jobs (see jobs_in_wakeups), so that it need not
    # read them: not when one needs more than its row (results of other jobs, stages
    # of earlier attempts), has no task type, or the lot exceeds a notification.
    # (d's columns unqualified but the two task_types has too: the text stays within
    # psycopg's 4 KiB of statements it converts once, see rows._uses.)
    "p AS (SELECT worker_id, CASE WHEN NOT bool_or(tt.name IS NULL OR attempt > 1 "
    f"OR (graph_id IS NOT NULL AND strpos(args, '{RESULT_MARK}') > 0)) "
    "THEN json_agg(json_build_array(id, attempt, handler, type, args, d.timeout, "
    "graph_id, label, d.cost, priority, logical_time, trace_context))::text END "
    "body FROM d JOIN v ON v.job = d.id LEFT JOIN task_types tt ON tt.name = d.type "
    "WHERE v.carry GROUP BY worker_id), "
    "q AS (SELECT worker_id, CASE WHEN octet_length(body) <= %(most)s THEN body ELSE '' END "
    "body FROM p) "
    # Evaluated only when a job was dispatched (no row, no wake-up): the wake-ups of
    # the workers given a job (not one whose every job a guard refused) and, after the
    # cycle's last dispatch (%(last)s), the scans back on, as finish() would do (an
    # earlier one leaves them off for the dispatches that follow). The jobs carried come
    # back too: a worker's own cycle takes them from there.
    f"SELECT job_id, attempt, worker_id, CASE WHEN %(last)s THEN {SCANS_ON} END, "
    "(SELECT count(pg_notify(chan, COALESCE(body, ''))) FROM (SELECT DISTINCT w, chan FROM v "
    "JOIN d ON d.id = v.job WHERE chan IS NOT NULL) c LEFT JOIN q ON q.worker_id = c.w), "
    "COALESCE(q.body, '') "
    "FROM a LEFT JOIN q USING (worker_id) "
    # A submit's pipeline that is its whole transaction (%(pend)s): when its job stays
    # pending, the scheduler is woken. A condition without columns, evaluated once
    # before any row (so even when nothing was dispatched), and always true.
    "WHERE %(pend)s IS NOT TRUE OR (SELECT count(pg_notify('taskyard_scheduler', '')) "
    f"FROM jobs WHERE id = {_NEW_JOB} AND state = 'pending' "
    "AND NOT EXISTS (SELECT 1 FROM d)) >= 0")
"""SQL: pending → dispatched with a new attempt number, the attempts, the unit's events,
the workers' wake-ups: the one statement that dispatches jobs, and the only one that
inserts attempts. Under the cycle's lock it checks their references itself (see
postgresql/references.py): the attempts insert trigger is not called."""


PIPELINE_MOST = 16
"""Dispatch statements sent in one pipeline at most (each one held by a cursor kept with
the connection)."""


def dispatch_params(placements: Sequence[tuple[int, int]], names: Mapping[int, str | None],
                    wake: Collection[int], events: list[Any], *, last: bool) -> dict[str, Any]:
    """Parameters of :data:`DISPATCH`: ``placements`` (job, worker) in placement order;
    ``names`` the workers' names; ``wake`` the workers to wake: a wake-up carries its
    jobs when they are few (a batch is read by the worker in one statement). ``events``:
    the unit's buffered events, written by this statement and so taken out of the list;
    ``last``: the cycle's last dispatch statement (scans back on)."""
    counts = collections.Counter(worker_id for _, worker_id in placements)
    workers = {w: (names.get(w), pg_channel(f"worker.{w}") if w in wake else None,
                   n <= CARRY_JOBS) for w, n in counts.items()}
    rows = json_rows(events) if events else "[]"
    events.clear()
    return {"rows": json_rows([(job_id, w, *workers[w]) for job_id, w in placements]),
            "most": WAKEUP_BYTES, "events": rows, "last": last, "guessed": False,
            "pend": False}


def dispatch(raw: Cursor, params: Dispatch) -> Dispatched:
    """The jobs, their new attempts, the workers' wake-ups (carrying the jobs when they
    are few), the unit's buffered events and, with the cycle's last statement, the
    scans back on: one statement per slice of the cycle's placements, every worker's
    together (:data:`DISPATCH`)."""
    done = Dispatched()
    placements = [(job_id, worker_id) for worker_id, ids in params.by_worker.items()
                  for job_id in ids]
    wake = {w for w in params.by_worker if f"worker.{w}" not in params.quiet}
    parts = slices(placements)
    lasts = [params.scans_off and i == len(parts) - 1 for i in range(len(parts))]
    statements: list[tuple[str, Parameters]] = [
        (DISPATCH, dispatch_params(part, params.names, wake, params.events, last=last))
        for part, last in zip(parts, lasts, strict=True)]
    # Up to PIPELINE_MOST statements a round trip (more than 500 jobs placed).
    results: list[list[tuple[Any, ...]]] = []
    for start in range(0, len(statements), PIPELINE_MOST):
        chunk = statements[start:start + PIPELINE_MOST]
        results += [named(raw, *chunk[0])] if len(chunk) == 1 else pipelined(raw, chunk)
    for rows, last in zip(results, lasts, strict=True):
        carried: dict[int, str] = {}
        for job_id, _, worker_id, *_, body in rows:
            done.placed.append(job_id)
            done.per_worker.setdefault(worker_id, []).append(job_id)
            carried.setdefault(worker_id, body)
        for worker_id, body in carried.items():
            done.wakeups.setdefault(worker_id, []).append(body)
            if worker_id in wake:
                done.woken.add(f"worker.{worker_id}")
        done.scans_on = done.scans_on or (bool(rows) and last)
    return done
