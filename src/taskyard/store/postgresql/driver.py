"""PostgreSQL, the distributed engine: its driver.

psycopg 3, whatever driver-less URL the user wrote. Writers run concurrently and guard
themselves with row locks (``FOR UPDATE``, ``FOR NO KEY UPDATE``, ``SKIP LOCKED``) and
transaction-scoped advisory locks (the cycle's, prerequisites'); LISTEN/NOTIFY wakes
listeners on commit; references are checked per statement (postgresql/references.py);
the hot paths fold round trips into single statements (jobs, cycle, attempts, events).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
)

from taskyard.model.errors import InvalidInput
from taskyard.model.records import TaskTypeSpec
from taskyard.store import schema
from taskyard.store.clock import MovableClock
from taskyard.store.cursor import Cursor
from taskyard.store.driver import Connections, Listener
from taskyard.store.driver.cycle_params import (
    FIRST_PAGE,
    CycleReads,
    CycleStart,
    FinishCycle,
    MaintenanceFound,
    MaintenanceWork,
)
from taskyard.store.driver.params import (
    AgePending,
    EndUnit,
    InsertedJobs,
    InsertJobs,
    ReadKeyHolders,
    ReadPriorRuns,
    RegisterWorker,
)
from taskyard.store.driver.type_cache import TypeCache
from taskyard.store.driver.wait_params import FirstSignals, SendSignal
from taskyard.store.portable import SharedTransitions, submissions, upkeep
from taskyard.store.portable import cycle as portable_cycle
from taskyard.store.portable import schedules as portable_schedules
from taskyard.store.portable import waits as portable_waits
from taskyard.store.portable import workers as portable_workers
from taskyard.store.postgresql import attempts, cycle, events, frozen, jobs, rows
from taskyard.store.postgresql import join as pg_join
from taskyard.store.postgresql.cycle_lock import take_lock, take_lock_and_read
from taskyard.store.postgresql.engine import MOVED_NOW_SQL, NOW_SQL, make_engine
from taskyard.store.postgresql.lane import Lane, pooled_unit
from taskyard.store.postgresql.listen import make_listener, pg_channel
from taskyard.store.postgresql.shortcuts import Shortcuts


class PostgresDriver(SharedTransitions):
    """PostgreSQL's side of every difference between the backends."""

    name = "postgresql"
    percent_params = True
    writes_one_at_a_time = False
    pending_index = ""
    lock_scans_off = True
    """The cycle's lock statement turns bitmap and sequential scans off (cycle.LOCK_AHEAD)."""
    locks_in_insert = True
    """A placing insert tries the cycle's lock in its own statement (cycle.LOCK_IF_WORKERS)."""
    keeps_cursors = True
    row_lock = " FOR NO KEY UPDATE"
    """The lock an UPDATE of non-key columns takes: taken ahead by a read that decides
    the update (a concurrent writer of the same rows waits for our commit)."""

    def __init__(self, url: str, connections: Connections | None = None) -> None:
        self.url = url
        self.connections = connections or Connections()
        self._engines: dict[str, Engine] = {}
        """Engines besides the store's: the one over borrowed connections (join.py)."""
        self._types = TypeCache()
        self._shortcuts = Shortcuts()
        """The guesses of a lone submit's shortcuts (see postgresql/jobs.py)."""
        self._lane: Lane | None = None
        """The connection kept for units of work on this driver's engine (lane.py)."""
        self._page = FIRST_PAGE
        """How many candidates a cycle's first reads take: the page the last cycle here
        wanted (read ahead with the snapshot, before the cycle knows its room). A guess
        shared by the store's threads, each reading and replacing a whole int: any value
        is correct, a cycle that needs more reads the next pages."""
        schema.add_postgresql_predicates()

    # -- engine and units of work --------------------------------------------------------

    def now_sql(self, clock: MovableClock | None) -> str:
        return NOW_SQL if clock is None else MOVED_NOW_SQL

    def make_engine(self, url: str, clock: MovableClock | None = None) -> Engine:
        budget = self.connections
        if budget.keep < 2:  # a daemon's budget: no connection kept aside (lane.py)
            return make_engine(url, connections=budget, clock=clock)
        engine = make_engine(url, connections=replace(budget, keep=budget.keep - 1),
                             clock=clock)
        if self._lane is not None:
            self._lane.close()
        self._lane = Lane(engine, clock)
        return engine

    def write(self, engine: Engine) -> contextlib.AbstractContextManager[Connection]:
        """A transaction on the lane's connection when ``engine`` is this driver's own
        (postgresql/lane.py: no pool checkout per unit), else on a pooled one."""
        lane = self._lane
        if lane is not None and lane.engine is engine:
            return lane.unit()
        return pooled_unit(engine)

    read = write

    @contextlib.contextmanager
    def read_each(self, engine: Engine) -> Iterator[Connection]:
        """Reads that need no snapshot shared between their statements (each sees what
        is committed when it runs): in autocommit, with no ``BEGIN`` and ``COMMIT``
        round trips — for a worker's wake-up path."""
        with engine.connect() as conn:
            yield conn.execution_options(isolation_level="AUTOCOMMIT")

    def join(self, connection: Any,
             clock: MovableClock | None) -> contextlib.AbstractContextManager[Connection]:
        """A unit of work's connection inside the caller's transaction (see join.py)."""
        return pg_join.join(self._engines, self.url, connection, clock)

    def end_unit(self, raw: Cursor, params: EndUnit) -> None:
        events.end_unit(raw, params)

    def close(self) -> None:
        """The lane's connection back to the pool; engines of borrowed connections hold
        none of their own."""
        if self._lane is not None:
            self._lane.close()
        for engine in self._engines.values():
            engine.dispose()
        self._engines.clear()

    # -- locks and wake-ups --------------------------------------------------------------

    @contextlib.contextmanager
    def cycle_lock(self, raw: Cursor | None) -> Iterator[bool]:
        """The global lock: a transaction-scoped advisory lock, released on commit,
        rollback or a lost connection. Waiting for a row lock (held by a frozen
        transaction) must not keep it for long: the cycle fails instead, and the next
        one retries (the lock statement sets the timeout, see cycle.LOCK_AHEAD)."""
        assert raw is not None
        yield take_lock(raw)

    @contextlib.contextmanager
    def take_cycle(self, raw: Cursor, *, read_ahead: bool = False) -> Iterator[CycleStart]:
        """:meth:`cycle_lock`; with ``read_ahead``, the cycle's first reads (as
        :meth:`read_cycle` makes them) when the lock is ours, in the same round trip."""
        if not read_ahead:
            with self.cycle_lock(raw) as held:
                yield CycleStart(held)
            return
        held, row = take_lock_and_read(raw, self._page, self._shortcuts.submits)
        yield CycleStart(held, None if row is None else self._reads_of(row))

    end_frozen_holders = staticmethod(frozen.end_frozen_holders)

    def read_key_holders(self, raw: Cursor,
                         params: ReadKeyHolders) -> list[tuple[Any, ...] | None]:
        """The holders of unique keys (portable/submissions.py), read once every key is
        locked for the transaction (an advisory lock each, in sorted order: two batches
        never wait for each other), so that of two concurrent submitters one commits its
        job before the other looks. In a caller's own transaction the reads must see what
        committed after the locks were taken: READ COMMITTED."""
        if params.joined:
            row = raw.first("SELECT current_setting('transaction_isolation')")
            if row is None or row[0] != "read committed":
                raise InvalidInput("unique_key: the transaction must be READ COMMITTED (a "
                                   "snapshot taken before the key's lock would not see its "
                                   "holder)")
        for type_name, key in sorted({(t, k) for t, k, _ in params.keys}):
            self._serialize(raw, json.dumps(["taskyard.unique", type_name, key]))
        return submissions.key_holders(raw, params)

    def read_prior_runs(self, raw: Cursor, params: ReadPriorRuns) -> list[tuple[Any, ...]]:
        """A prerequisite's runs (portable/submissions.py), once concurrent launches that
        need the same one serialise on it."""
        self._serialize(raw, f"prereq:{params.type}:{params.args}")
        return submissions.prior_runs(raw, params)

    @staticmethod
    def _serialize(raw: Cursor, key: str) -> None:
        """Transactions serialising on ``key`` run one after the other (until commit)."""
        raw.all("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", (key,))

    def notify(self, raw: Cursor, channels: Sequence[str]) -> None:
        """NOTIFY each channel; delivered when the transaction commits."""
        for channel in channels:
            raw.all("SELECT pg_notify(?, '')", (pg_channel(channel),))

    def listener(self, channel: str) -> Listener:
        """LISTEN where the process's connections say (pg_listen.make_listener)."""
        return make_listener(self.url, self.connections, channel)

    def register_worker(self, raw: Cursor, params: RegisterWorker) -> int | None:
        """The worker joins (portable/workers.py), first waiting at the worker gate, before
        anything is written: for the submits that may have found no live worker to commit,
        and holding later ones until it has (see schema/services.py:worker_gate). They
        never wait for what it holds (no deadlock)."""
        raw.run(cycle.PASS_GATE)
        return portable_workers.insert_worker(raw, params)

    # -- what the unit's cursor renders for this backend --------------------------------

    member = staticmethod(rows.member)

    # -- jobs ----------------------------------------------------------------------------

    def task_type(self, raw: Cursor, name: str) -> tuple[Any, TaskTypeSpec] | None:
        """Type ``name`` as the driver keeps it for one-job submits, with its version."""
        return self._types.get(name, lambda: jobs.read_task_type(raw, name))

    def forget_task_type(self, name: str) -> None:
        """Type ``name`` changed since it was kept: read it again next time."""
        self._types.forget(name)

    def insert_jobs(self, raw: Cursor, params: InsertJobs) -> InsertedJobs:
        return jobs.insert_jobs(raw, params, self._page, self._shortcuts)

    live_worker = staticmethod(jobs.live_worker)
    insert_edges = staticmethod(jobs.insert_edges)
    task_types: Callable[[Cursor, Sequence[str]], list[tuple[Any, ...]]] = staticmethod(
        jobs.task_types)

    # -- attempts ------------------------------------------------------------------------

    start_attempts = staticmethod(attempts.start_attempts)
    end_attempts = staticmethod(attempts.end_attempts)
    set_prefetch = staticmethod(attempts.set_prefetch)
    placed_here = staticmethod(attempts.placed_here)
    job_details = staticmethod(attempts.job_details)

    # -- the cycle -----------------------------------------------------------------------

    def read_cycle(self, raw: Cursor, *, snapshot: bool = False) -> CycleReads:
        """The first reads; the snapshot when a job is pending, when ``snapshot``, or
        when this process places lone submits (the next one's basis)."""
        return self._reads_of(cycle.read_cycle(raw, self._page,
                                               snapshot or self._shortcuts.submits))

    def _reads_of(self, row: Sequence[Any]) -> CycleReads:
        reads = cycle.reads_of_row(row, self._page)
        if row[-1]:  # read under the cycle's lock: a basis for a submit's decision
            self._shortcuts.learn(reads, row[0])
        return reads

    read_snapshot = staticmethod(cycle.read_snapshot)

    def read_pools_lists(self, raw: Cursor, page: int) -> tuple[list[str], list[Any] | None]:
        return cycle.read_pools_lists(raw, page)

    def scans_off(self, raw: Cursor) -> bool:
        """No bitmap or sequential scans for the candidate reads (see cycle.SCANS_OFF):
        after a burst of submissions, before autovacuum has analysed the table, the
        planner believes few jobs are pending and reads all of them (0.4 s at 1M
        pending) instead of the first few in index order (0.1 ms). Transaction-local."""
        raw.run(f"SELECT {cycle.SCANS_OFF}")
        return True

    def restore_planner(self, raw: Cursor) -> None:
        raw.run(f"SELECT {cycle.SCANS_ON}")

    def maintenance_work(self, raw: Cursor, params: MaintenanceWork) -> MaintenanceFound:
        """Which maintenance steps have work (see portable/cycle.py), in one statement;
        with ``read_ahead``, the cycle's first reads in the same statement (as
        :meth:`read_cycle` makes them), kept only when no step has work — a step that
        runs makes them stale. A scheduler's cycle that maintains (its first reads not
        made yet) then takes one round trip less."""
        steps = cycle.MAINTENANCE_STEPS
        if not params.read_ahead:
            row = rows.named(raw, cycle.MAINTENANCE_WORK, {"grace": params.grace})[0]
            return MaintenanceFound(tuple(bool(v) for v in row[:steps]),
                                    next_delayed=row[steps])
        # With the snapshot: a cycle that maintains builds its planner whatever is pending.
        row = cycle.maintain_and_read(raw, params.grace, self._page)
        found = tuple(bool(v) for v in row[:steps])
        ahead = row[steps + 1:]
        return MaintenanceFound(found, None if any(found) else self._reads_of(ahead),
                                next_delayed=row[steps])

    read_due_awaiting = staticmethod(portable_waits.read_due_awaiting)
    stage_due_jobs = staticmethod(jobs.stage_due_jobs)
    next_delayed = staticmethod(portable_cycle.read_next_delayed)

    def first_signals(self, raw: Cursor, params: FirstSignals) -> dict[int, tuple[Any, ...]]:
        """The stored signals of waits just made awaiting (portable/waits.py), read once
        each name is locked for the transaction (in order: two transactions taking
        several never wait for each other in a cycle). A signal sent at the same moment
        takes its name's lock before it is stored: whichever of the two commits second
        sees the other (READ COMMITTED), and the wait never misses its signal."""
        for name in sorted({name for _, name, _, _ in params.waits}):
            self._serialize(raw, portable_waits.signal_lock(name))
        return portable_waits.first_signals(raw, params)

    def send_signal(self, raw: Cursor, params: SendSignal) -> list[tuple[Any, ...]]:
        """A signal stored and the waits it completes (portable/waits.py), under its
        name's lock (see :meth:`first_signals`)."""
        self._serialize(raw, portable_waits.signal_lock(params.name))
        return portable_waits.send_signal(raw, params)

    read_candidates = staticmethod(portable_cycle.read_candidates)
    dispatch = staticmethod(cycle.dispatch)

    def finish_cycle(self, raw: Cursor, params: FinishCycle) -> None:
        cycle.finish(raw, params)
        self._page = params.page

    def age_pending(self, raw: Cursor, params: AgePending) -> int:
        """Anti-starvation aging (portable/upkeep.py); PostgreSQL rounds on CAST: floor
        first, and picks the jobs by key."""
        return upkeep.age_pending(raw, params, floor="floor({})", by_key=True)

    def read_due_schedules(self, raw: Cursor, limit: int,
                           at: float | None) -> list[dict[str, Any]]:
        """Due schedules (portable/schedules.py): concurrent schedulers share the due
        schedules instead of queueing on them (SKIP LOCKED)."""
        return portable_schedules.read_due(raw, limit, at, false="false",
                                           lock=" FOR UPDATE OF s SKIP LOCKED")

    # -- the event log -------------------------------------------------------------------

    write_events = staticmethod(events.write_events)
    events_after = staticmethod(events.events_after)
    events_last = staticmethod(events.events_last)
    event_cursor = staticmethod(events.event_cursor)
