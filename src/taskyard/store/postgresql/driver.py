"""PostgreSQL, the distributed engine: what differs from SQLite, in one object.

psycopg 3, whatever driver-less URL the user wrote. Writers run concurrently and
guard themselves with row locks (``FOR UPDATE``, ``FOR NO KEY UPDATE``, ``SKIP
LOCKED``) and transaction-scoped advisory locks (the cycle's, prerequisites');
LISTEN/NOTIFY wakes listeners on commit; references are checked per statement
(pg_references); the hot paths fold round trips into single statements (pg_paths,
pg_cycle, pg_submit).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import (
    ARRAY,
    BigInteger,
    ColumnElement,
    Connection,
    Engine,
    Table,
    any_,
    func,
    literal,
)
from sqlalchemy.dialects.postgresql import Insert
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.sql import Select

from taskyard.store import schema
from taskyard.store.clock import MovableClock
from taskyard.store.cursor import Cursor
from taskyard.store.driver import Connections, Listener
from taskyard.store.driver import wakeup_payloads as wakeup_jobs
from taskyard.store.postgresql import cycle as pg_cycle
from taskyard.store.postgresql import foreseen as pg_foreseen
from taskyard.store.postgresql import hot_paths as pg_paths
from taskyard.store.postgresql import join as pg_join
from taskyard.store.postgresql import placed as pg_placed
from taskyard.store.postgresql import rows as pg_rows
from taskyard.store.postgresql import submit as pg_submit
from taskyard.store.postgresql.engine import MOVED_NOW_SQL, NOW_SQL, make_engine
from taskyard.store.postgresql.lane import Lane
from taskyard.store.postgresql.listen import make_listener, pg_channel


class PostgresDriver:
    """PostgreSQL's side of every difference between the backends."""

    name = "postgresql"
    percent_params = True
    writes_one_at_a_time = False
    pending_index = ""
    lock_scans_off = True
    keeps_cursors = True
    """The cycle's lock statement turns bitmap and sequential scans off (pg_cycle.LOCK_AHEAD)."""
    row_lock = " FOR NO KEY UPDATE"
    """The lock an UPDATE of non-key columns takes: taken ahead by a read that decides
    the update (a concurrent writer of the same rows waits for our commit)."""

    def __init__(self, url: str, connections: Connections | None = None) -> None:
        self.url = url
        self.connections = connections or Connections()
        self._engines: dict[str, Engine] = {}
        """Engines besides the store's: the one over borrowed connections (pg_join)."""
        self._lane = Lane()
        schema.add_postgresql_predicates()

    # -- engine and transactions ---------------------------------------------------------

    def now_sql(self, clock: MovableClock | None) -> str:
        return NOW_SQL if clock is None else MOVED_NOW_SQL

    def make_engine(self, url: str, clock: MovableClock | None = None) -> Engine:
        return make_engine(url, connections=self.connections, clock=clock)

    @contextlib.contextmanager
    def write(self, engine: Engine) -> Iterator[Connection]:
        with engine.connect() as conn, conn.begin():
            yield conn

    read = write

    @contextlib.contextmanager
    def read_each(self, engine: Engine) -> Iterator[Connection]:
        """Reads that need no snapshot shared between their statements (each sees what
        is committed when it runs): in autocommit, with no ``BEGIN`` and ``COMMIT``
        round trips — for a worker's wake-up path."""
        with engine.connect() as raw:
            yield raw.execution_options(isolation_level="AUTOCOMMIT")

    def alone(self, engine: Engine,
              clock: MovableClock | None) -> contextlib.AbstractContextManager[Connection]:
        """A connection in autocommit for a unit of one statement: the dialect's lane
        (pg_lane), kept in autocommit between units, when no other thread has it."""
        return self._lane.take(engine, clock)

    def join(self, connection: Any,
             clock: MovableClock | None) -> contextlib.AbstractContextManager[Connection]:
        """A unit of work's connection inside the caller's transaction (see pg_join)."""
        return pg_join.join(self._engines, self.url, connection, clock)

    @contextlib.contextmanager
    def cycle_lock(self, raw: Cursor | None) -> Iterator[bool]:
        """The global lock: a transaction-scoped advisory lock, released on commit,
        rollback or a lost connection. Waiting for a row lock (held by a frozen
        transaction) must not keep it for long: the cycle fails instead, and the next
        one retries (the lock statement sets the timeout, see pg_cycle.LOCK_AHEAD)."""
        assert raw is not None
        yield pg_cycle.take_lock(raw)

    def close(self) -> None:
        """The lane's connection back to the pool; engines of borrowed connections hold
        none of their own."""
        self._lane.close()
        for engine in self._engines.values():
            engine.dispose()
        self._engines.clear()

    # -- locks and wake-ups --------------------------------------------------------------

    def serialize_on(self, raw: Cursor, key: str) -> None:
        """Transactions serialising on ``key`` run one after the other (until commit)."""
        raw.all("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", (key,))

    def sees_commits_after_lock(self, raw: Cursor) -> bool:
        """Does each statement see what committed before it (READ COMMITTED), so that a
        read made after :meth:`serialize_on` sees what the lock's last holder wrote?"""
        row = raw.first("SELECT current_setting('transaction_isolation')")
        return row is not None and row[0] == "read committed"

    def lock_rows(self, query: Select[Any], *, shared: bool = False,
                  skip_locked: bool = False, of: Table | None = None) -> Select[Any]:
        """``FOR UPDATE`` (``FOR SHARE`` with ``shared``) on the rows ``query`` reads."""
        return query.with_for_update(read=shared, skip_locked=skip_locked, of=of)

    def notify(self, raw: Cursor, channels: Sequence[str]) -> None:
        """NOTIFY each channel; delivered when the transaction commits."""
        for channel in channels:
            raw.all("SELECT pg_notify(?, '')", (pg_channel(channel),))

    def listener(self, channel: str) -> Listener:
        """LISTEN where the process's connections say (pg_listen.make_listener)."""
        return make_listener(self.url, self.connections, channel)

    jobs_in_wakeups = staticmethod(wakeup_jobs.jobs_in_wakeups)
    submit_foreseen = staticmethod(pg_foreseen.submit_foreseen)

    # -- SQL building blocks -------------------------------------------------------------

    def upsert(self, table: Table) -> Insert:
        return pg_insert(table)

    def floor(self, value: ColumnElement[Any]) -> ColumnElement[Any]:
        """PostgreSQL rounds on CAST: floor first."""
        return func.floor(value)

    def ids_in(self, column: ColumnElement[Any], ids: Sequence[int]) -> ColumnElement[bool]:
        """One array parameter rather than an expanded IN list (500 placeholders per
        statement cost the client more than the server)."""
        return column == any_(literal(list(ids), ARRAY(BigInteger)))

    member = staticmethod(pg_rows.member)
    row_set = staticmethod(pg_rows.row_set)
    insert_rows = staticmethod(pg_rows.insert_rows)

    # -- hot paths -----------------------------------------------------------------------

    insert_edges = staticmethod(pg_paths.insert_edges)
    insert_jobs = staticmethod(pg_paths.insert_jobs)
    end_attempts = staticmethod(pg_paths.end_attempts)
    placed_here = staticmethod(pg_paths.placed_here)
    dispatch = staticmethod(pg_paths.dispatch)
    pools_lists = staticmethod(pg_paths.pools_lists)
    insert_events = staticmethod(pg_paths.insert_events)
    events_after = staticmethod(pg_paths.events_after)
    events_last = staticmethod(pg_paths.events_last)
    event_cursor = staticmethod(pg_paths.event_cursor)
    submit_one = staticmethod(pg_submit.submit_one)
    submit_looking = staticmethod(pg_placed.look)

    submits_alone = True
    """A single submit is one statement, which can run in autocommit (Store.alone)."""

    def worth_a_cycle(self, raw: Cursor) -> bool:
        """Assumed (no statement): a single submit's insert tells without a round trip
        of its own (pg_cycle.LOCK_IF_WORKERS); a batch runs the cycle as it always did."""
        return True

    def pass_worker_gate(self, raw: Cursor) -> None:
        """A registering worker, first in its transaction: wait for the submits that
        may have found no live worker to commit, and hold later ones until ours has
        (see schema_service.worker_gate)."""
        raw.run(pg_cycle.PASS_GATE)

    def read_ahead(self, raw: Cursor, held: bool, page: int) -> pg_cycle.Ahead:
        """The cycle's first reads, in the transaction that tried its lock."""
        return pg_cycle.Ahead.read(raw, held, page)

    def scans_off(self, raw: Cursor) -> bool:
        """No bitmap or sequential scans for the candidate reads (see pg_cycle.SCANS_OFF):
        after a burst of submissions, before autovacuum has analysed the table, the
        planner believes few jobs are pending and reads all of them (0.4 s at 1M
        pending) instead of the first few in index order (0.1 ms). Transaction-local."""
        raw.run(f"SELECT {pg_cycle.SCANS_OFF}")
        return True

    def restore_planner(self, raw: Cursor) -> None:
        raw.run(f"SELECT {pg_cycle.SCANS_ON}")

    def maintenance_work(self, raw: Cursor, grace: float) -> tuple[bool, bool, bool, bool]:
        """Which maintenance steps have work (see maintenance_sql), in one statement."""
        expired, overdue, suspended, due = (
            bool(v) for v in pg_rows.named(raw, pg_cycle.MAINTENANCE_WORK, {"grace": grace})[0])
        return expired, overdue, suspended, due

    def finish_cycle(self, raw: Cursor, channels: Sequence[str], scans_off: bool,
                     carried: Mapping[str, str]) -> None:
        """Scans back on, and the wake-ups, in one statement (a dispatch's wake-up, with
        the jobs it carries, went with its statement: ``carried`` is not needed)."""
        if scans_off:
            pg_cycle.finish(raw, channels)
        elif channels:
            self.notify(raw, channels)

