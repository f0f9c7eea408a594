"""SQLite, the embedded default: what differs from PostgreSQL, in one object.

WAL, a busy timeout, and explicit ``BEGIN IMMEDIATE`` for write transactions (a
deferred transaction that later writes can fail with SQLITE_BUSY without waiting for
the busy timeout). Write transactions run one at a time, queued on a file lock:
whoever must wait for the write lock looks first (a read) whether there is anything
to write, and the cycle takes its own lock before it queues. Wake-ups bump a counter
that listeners poll.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool

from taskyard.model.errors import InvalidInput
from taskyard.model.records import TaskTypeSpec
from taskyard.store.clock import MovableClock
from taskyard.store.cursor import Cursor
from taskyard.store.driver.cycle_params import (
    CycleReads,
    CycleStart,
    FinishCycle,
    MaintenanceFound,
    MaintenanceWork,
    Snapshot,
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
from taskyard.store.portable import SharedTransitions, submissions, upkeep, waits
from taskyard.store.portable import cycle as portable_cycle
from taskyard.store.portable import schedules as portable_schedules
from taskyard.store.portable import workers as portable_workers
from taskyard.store.sqlite import attempts, cycle, events, jobs, rows
from taskyard.store.sqlite.listen import SqliteListener
from taskyard.store.sqlite.locks import (
    FileLock,
    WriteLock,
    lock_path_for,
    write_lock_path_for,
)
from taskyard.store.sqlite.writer import Writer

SQLITE_BUSY_TIMEOUT_MS = 30_000
PAGE_CACHE_KIB = 8192
"""Each connection's page cache (SQLite's default is 2,000 KiB). It bounds a large write
transaction's memory: its dirty pages stay in the cache until it fills, then spill to the
WAL. At 64 MiB, completing a 100,000-member fan-out's root grew the worker by 54 MiB of
cache and a scheduler over 1,000,000 pending jobs kept 128 MiB; at 8 MiB, +24 and 66 MiB,
with W1, W2 and W3 unchanged (``python -m bench.release --memory``, docs/operations/sqlite.md).
In WAL mode the cache is dropped whenever another process commits: a larger one helps only a
connection's own long runs of transactions."""
MMAP_BYTES = 0
"""No memory-mapped reads (SQLite's default): each page read through the map stays in the
process's resident set (as shared file pages) — +32 MiB for that fan-out — while the
daemons' reads (claims, the cycle, searches, lists) measured no faster with it; only whole-
table scans were (1,000,000 rows: 53 against 91 ms), which no read path of taskyard runs."""
NOW_SQL = "((julianday('now') - 2440587.5) * 86400.0)"
"""The database clock as epoch seconds."""


class SqliteDriver(SharedTransitions):
    """SQLite's side of every difference between the backends."""

    name = "sqlite"
    percent_params = False
    writes_one_at_a_time = True
    """Write transactions queue for one lock: look before queueing, and take the cycle
    lock before the cycle's write transaction (a caller that cannot have the cycle
    must not queue for the write lock)."""
    pending_index = "INDEXED BY ix_jobs_pending_pools"
    """SQLite must be told the placement index (and see the state as a literal)."""
    lock_scans_off = False
    """No planner settings to change."""
    locks_in_insert = False
    """The cycle's lock is taken after the insert, only with a live worker (Tx.cycle): a
    submit with none loads no cycle code (CLI start-up)."""
    keeps_cursors = False
    """sqlite3 cursors are closed with their unit of work (see Tx.close)."""
    row_lock = ""
    """Write transactions are serial: no row locks to take."""

    def __init__(self, url: str) -> None:
        self.database = make_url(url).database
        self._write_lock = WriteLock(write_lock_path_for(self.database))
        self._cycle_lock: FileLock | None = None
        self._types = TypeCache()
        self._writer = Writer()

    # -- engine and transactions ---------------------------------------------------------

    def now_sql(self, clock: MovableClock | None) -> str:
        return NOW_SQL if clock is None else "taskyard_now()"

    def make_engine(self, url: str, clock: MovableClock | None = None) -> Engine:
        return sqlite_engine(url, clock)

    @contextlib.contextmanager
    def write(self, engine: Engine) -> Iterator[Connection]:
        """A write transaction (``BEGIN IMMEDIATE``), queued on the write lock, on the
        lock's own connection (sqlite/writer.py)."""
        with self._write_lock, self._writer.transaction(engine) as conn:
            yield conn

    @contextlib.contextmanager
    def read(self, engine: Engine) -> Iterator[Connection]:
        """A deferred read transaction: readers never wait for writers."""
        with engine.connect() as raw:
            conn = raw.execution_options(sqlite_begin="DEFERRED")
            with conn.begin():
                yield conn

    read_each = read

    def join(self, connection: Any,
             clock: MovableClock | None) -> contextlib.AbstractContextManager[Connection]:
        """Refused: a caller's SQLite transaction would have to take taskyard's write
        lock (held around ``BEGIN IMMEDIATE``) for its whole length, which taskyard
        cannot do on a connection it did not open."""
        raise InvalidInput("connection: transactional submit needs PostgreSQL; on SQLite, "
                           "submit after your own transaction commits")

    @contextlib.contextmanager
    def cycle_lock(self, _raw: Cursor | None) -> Iterator[bool]:
        """The global lock: an flock beside the database. Releasing it before the
        caller's transaction commits is safe: another cycle cannot read before that
        commit, as SQLite lets one writer at a time."""
        if self._cycle_lock is None:
            self._cycle_lock = FileLock(lock_path_for(self.database))
        lock = self._cycle_lock
        if not lock.acquire():
            yield False
            return
        try:
            yield True
        finally:
            lock.release()

    @contextlib.contextmanager
    def take_cycle(self, raw: Cursor, *, read_ahead: bool = False) -> Iterator[CycleStart]:
        """:meth:`cycle_lock`. The cycle makes its first reads itself (``read_ahead``
        has no round trip to save here: they are reads in the process)."""
        with self.cycle_lock(raw) as held:
            yield CycleStart(held)

    @staticmethod
    def end_frozen_holders(_raw: Cursor, _idle: float | None) -> list[int]:
        """None to end: the cycle's lock is a file lock of one machine, whose holder the
        operating system releases when it dies; a frozen one keeps it until it thaws."""
        return []

    def close(self) -> None:
        with contextlib.suppress(OSError), self._write_lock:  # OSError: its folder is gone
            self._writer.close()
        if self._cycle_lock is not None:
            self._cycle_lock.close()

    # -- locks and wake-ups --------------------------------------------------------------

    def read_key_holders(self, raw: Cursor,
                         params: ReadKeyHolders) -> list[tuple[Any, ...] | None]:
        """The holders of unique keys (portable/submissions.py): write transactions are
        serial, so of two concurrent submitters one commits before the other looks."""
        return submissions.key_holders(raw, params)

    def read_prior_runs(self, raw: Cursor, params: ReadPriorRuns) -> list[tuple[Any, ...]]:
        """A prerequisite's runs (portable/submissions.py), under the write lock."""
        return submissions.prior_runs(raw, params)

    def notify(self, raw: Cursor, channels: Sequence[str]) -> None:
        """Bump each channel's counter (listeners poll it, see sqlite/listen.py)."""
        cycle.notify(raw, channels)

    def end_unit(self, raw: Cursor, params: EndUnit) -> None:
        events.end_unit(raw, params)

    def register_worker(self, raw: Cursor, params: RegisterWorker) -> int | None:
        """The worker joins (portable/workers.py): under the write lock, which a submit
        that checks for a live worker holds too."""
        return portable_workers.insert_worker(raw, params)

    def listener(self, channel: str) -> SqliteListener:
        return SqliteListener(self.database or ":memory:", channel)

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
        return jobs.insert_jobs(raw, params)

    live_worker = staticmethod(jobs.live_worker)
    insert_edges = staticmethod(jobs.insert_edges)

    # -- attempts ------------------------------------------------------------------------

    start_attempts = staticmethod(attempts.start_attempts)
    end_attempts = staticmethod(attempts.end_attempts)
    set_prefetch = staticmethod(attempts.set_prefetch)
    placed_here = staticmethod(attempts.placed_here)
    job_details = staticmethod(attempts.job_details)

    # -- the cycle -----------------------------------------------------------------------

    def read_cycle(self, raw: Cursor, *, snapshot: bool = False) -> CycleReads:
        return cycle.read_cycle(raw)  # the snapshot always: four reads in the process

    def read_snapshot(self, raw: Cursor) -> Snapshot:
        snapshot = cycle.read_cycle(raw).snapshot
        assert snapshot is not None  # SQLite reads the snapshot with the cycle, always
        return snapshot

    def read_pools_lists(self, raw: Cursor, page: int) -> tuple[list[str], list[Any] | None]:
        """The pools lists of pending jobs; no first page read ahead."""
        return cycle.read_pools_lists(raw), None

    def scans_off(self, raw: Cursor) -> bool:
        """No planner settings to change: the statements name their index."""
        return False

    def restore_planner(self, raw: Cursor) -> None:
        """Nothing was changed (see :meth:`scans_off`)."""

    def maintenance_work(self, raw: Cursor, params: MaintenanceWork) -> MaintenanceFound:
        """Which maintenance steps have work (see portable/cycle.py), in one statement;
        no reads ahead (they cost no round trip here)."""
        row = raw.first(cycle.MAINTENANCE_WORK, (params.grace,))
        assert row is not None
        return MaintenanceFound(tuple(bool(v) for v in row[:-1]), next_delayed=row[-1])

    def stage_due_jobs(self, raw: Cursor) -> int:
        """See portable/cycle.py, through the delayed jobs' index (SQLite must be told)."""
        return portable_cycle.stage_due_jobs(raw, index=cycle.DELAYED)

    def next_delayed(self, raw: Cursor) -> float | None:
        """See portable/cycle.py, through the delayed jobs' index (SQLite must be told)."""
        return portable_cycle.read_next_delayed(raw, index=cycle.DELAYED)

    def read_due_awaiting(self, raw: Cursor, limit: int) -> list[tuple[Any, ...]]:
        """See portable/waits.py, through the timer index (SQLite must be told)."""
        return waits.read_due_awaiting(raw, limit, index=cycle.TIMERS)

    # A signal and the waits that look for one: nothing to lock, writers are serial.
    first_signals = staticmethod(waits.first_signals)
    send_signal = staticmethod(waits.send_signal)

    read_candidates = staticmethod(cycle.read_candidates)
    dispatch = staticmethod(cycle.dispatch)

    def finish_cycle(self, raw: Cursor, params: FinishCycle) -> None:
        cycle.finish(raw, params)

    def age_pending(self, raw: Cursor, params: AgePending) -> int:
        """Anti-starvation aging (portable/upkeep.py); SQLite truncates on CAST: the
        floor, for the waits >= 0 that raise a priority."""
        return upkeep.age_pending(raw, params, floor="{}")

    def read_due_schedules(self, raw: Cursor, limit: int,
                           at: float | None) -> list[dict[str, Any]]:
        """Due schedules (portable/schedules.py): the false of its partial index is 0; no
        row locks: write transactions are serial."""
        return portable_schedules.read_due(raw, limit, at, false="0", lock="")

    # -- the event log -------------------------------------------------------------------

    write_events = staticmethod(events.write_events)
    events_after = staticmethod(events.events_after)
    events_last = staticmethod(events.events_last)
    event_cursor = staticmethod(events.event_cursor)


def _create_private(path: str) -> None:
    """Create the database file readable by its owner only (0600) when it does not
    exist yet: SQLite would create it with the umask's mode (world-readable), and its
    -wal and -shm files take the database file's mode."""
    with contextlib.suppress(FileExistsError, FileNotFoundError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


def sqlite_engine(url: str, clock: MovableClock | None = None) -> Engine:
    """An engine with the settings taskyard relies on (``url``: ``sqlite:///file``)."""
    database = make_url(url).database
    memory = database in (None, "", ":memory:")
    if not memory and database is not None and not database.startswith("file:"):
        _create_private(database)
    # An in-memory database lives as long as its one connection: share it.
    extra: dict[str, Any] = {"poolclass": StaticPool} if memory else {}
    engine = create_engine(
        url,
        connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000,
                      # Prepared statements kept per connection (the default is 128).
                      "cached_statements": 512},
        **extra,
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
        # Take transaction control away from pysqlite so BEGIN is ours to emit.
        dbapi_conn.isolation_level = None
        if clock is not None:
            dbapi_conn.create_function("taskyard_now", 0, clock.host_now)
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KIB}")
        cur.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        cur.execute("PRAGMA temp_store=MEMORY")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "IMMEDIATE")
        # On the driver: this runs for every transaction, and SQLAlchemy's own
        # execution would cost more than the BEGIN.
        conn.connection.dbapi_connection.execute(f"BEGIN {mode}")

    return engine
