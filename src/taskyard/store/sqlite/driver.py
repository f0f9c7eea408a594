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
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, Engine, Table, create_engine, event
from sqlalchemy.dialects.sqlite import Insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool
from sqlalchemy.sql import Select

from taskyard.model.errors import InvalidInput
from taskyard.store.clock import MovableClock
from taskyard.store.cursor import Cursor
from taskyard.store.driver import wakeup_payloads as wakeup_jobs
from taskyard.store.driver.maintenance import maintenance_checks
from taskyard.store.sqlite import hot_paths as sqlite_paths
from taskyard.store.sqlite import rows as sqlite_rows
from taskyard.store.sqlite import submit as sqlite_submit
from taskyard.store.sqlite.listen import SqliteListener
from taskyard.store.sqlite.locks import (
    FileLock,
    WriteLock,
    lock_path_for,
    write_lock_path_for,
)

_MAINTENANCE_WORK = "SELECT " + ", ".join(maintenance_checks("0", "?"))
SQLITE_BUSY_TIMEOUT_MS = 30_000
NOW_SQL = "((julianday('now') - 2440587.5) * 86400.0)"
"""The database clock as epoch seconds."""


class SqliteDriver:
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
    keeps_cursors = False
    """sqlite3 cursors are closed with their unit of work (see Tx.close)."""
    row_lock = ""
    """Write transactions are serial: no row locks to take."""

    def __init__(self, url: str) -> None:
        self.database = make_url(url).database
        self._write_lock = WriteLock(write_lock_path_for(self.database))
        self._cycle_lock: FileLock | None = None

    # -- engine and transactions ---------------------------------------------------------

    def now_sql(self, clock: MovableClock | None) -> str:
        return NOW_SQL if clock is None else "taskyard_now()"

    def make_engine(self, url: str, clock: MovableClock | None = None) -> Engine:
        return sqlite_engine(url, clock)

    @contextlib.contextmanager
    def write(self, engine: Engine) -> Iterator[Connection]:
        """A write transaction (``BEGIN IMMEDIATE``), queued on the write lock."""
        with self._write_lock, engine.connect() as conn, conn.begin():
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

    def alone(self, engine: Engine,
              clock: MovableClock | None) -> contextlib.AbstractContextManager[Connection]:
        """Never asked for (``submits_alone`` is False): reads each, as for a worker."""
        return self.read_each(engine)

    def close(self) -> None:
        if self._cycle_lock is not None:
            self._cycle_lock.close()

    # -- locks and wake-ups --------------------------------------------------------------

    def serialize_on(self, raw: Cursor, key: str) -> None:
        """Nothing to do: write transactions are serial already."""

    def sees_commits_after_lock(self, raw: Cursor) -> bool:
        """Write transactions are serial: each sees every commit before it."""
        return True

    def lock_rows(self, query: Select[Any], *, shared: bool = False,
                  skip_locked: bool = False, of: Table | None = None) -> Select[Any]:
        return query

    def notify(self, raw: Cursor, channels: Sequence[str],
               carried: Mapping[str, str] | None = None) -> None:
        """Bump each channel's counter (listeners poll it, see sqlite_listen) and set
        what the wake-up carries (``carried``, by channel: "" when nothing)."""
        payloads = carried or {}
        raw.many("INSERT INTO wakeups (channel, n, payload) VALUES (?, 1, ?) "
                 "ON CONFLICT (channel) DO UPDATE SET n = n + 1, payload = excluded.payload",
                 [(c, payloads.get(c, "")) for c in channels])

    def listener(self, channel: str) -> SqliteListener:
        return SqliteListener(self.database or ":memory:", channel)

    jobs_in_wakeups = staticmethod(wakeup_jobs.jobs_in_wakeups)

    # -- SQL building blocks -------------------------------------------------------------

    def upsert(self, table: Table) -> Insert:
        return sqlite_insert(table)

    def floor(self, value: ColumnElement[Any]) -> ColumnElement[Any]:
        """SQLite truncates on CAST: the floor, for the values >= 0 this is used on."""
        return value

    def ids_in(self, column: ColumnElement[Any], ids: Sequence[int]) -> ColumnElement[bool]:
        return column.in_(ids)

    member = staticmethod(sqlite_rows.member)
    row_set = staticmethod(sqlite_rows.row_set)
    insert_rows = staticmethod(sqlite_rows.insert_rows)

    # -- hot paths (see sqlite_paths) ----------------------------------------------------

    insert_edges = staticmethod(sqlite_paths.insert_edges)
    insert_jobs = staticmethod(sqlite_paths.insert_jobs)
    end_attempts = staticmethod(sqlite_paths.end_attempts)
    placed_here = staticmethod(sqlite_paths.placed_here)
    dispatch = staticmethod(sqlite_paths.dispatch)
    pools_lists = staticmethod(sqlite_paths.pools_lists)
    insert_events = staticmethod(sqlite_paths.insert_events)
    events_after = staticmethod(sqlite_paths.events_after)
    events_last = staticmethod(sqlite_paths.events_last)
    event_cursor = staticmethod(sqlite_paths.event_cursor)

    submit_one = staticmethod(sqlite_submit.submit_one)

    def submit_foreseen(self, raw: Cursor, sub: Any, cache: Any, build: Any, *, basis: str,
                        place: Any, maintain: float | None = None) -> None:
        """Never: no cycle here leaves a basis (Store.basis) behind; a submit and its
        cycle run under the write lock in one transaction, with no round trips."""
        return

    def submit_looking(self, raw: Cursor, sub: Any, cache: Any, build: Any, page: int) -> None:
        """Never: a submit's two statements and its cycle run under the write lock,
        which the cycle takes first (no round trips to save)."""
        return

    submits_alone = False
    """A submit is two statements under the write lock: never in autocommit."""

    def worth_a_cycle(self, raw: Cursor) -> bool:
        """Whether a submit's inline cycle could place anything: a live worker exists
        (one indexed read, less than the cycle's lock and reads, skipped while no worker
        serves the queue: a worker runs a cycle when it starts)."""
        return raw.first(sqlite_submit.LIVE_WORKER) is not None

    def pass_worker_gate(self, raw: Cursor) -> None:
        """Nothing to wait for: a submit checks for a live worker and commits under the
        write lock, which the registration takes too."""

    def read_ahead(self, raw: Cursor, held: bool, page: int) -> None:
        """The cycle's reads are made in the cycle itself."""
        return

    def scans_off(self, raw: Cursor) -> bool:
        """No planner settings to change: the statements name their index."""
        return False

    def maintenance_work(self, raw: Cursor, grace: float) -> tuple[bool, bool, bool, bool]:
        """Which maintenance steps have work (see maintenance_sql), in one statement."""
        row = raw.first(_MAINTENANCE_WORK, (grace,))
        assert row is not None
        expired, overdue, suspended, due = (bool(v) for v in row)
        return expired, overdue, suspended, due

    def finish_cycle(self, raw: Cursor, channels: Sequence[str], scans_off: bool,
                     carried: Mapping[str, str]) -> None:
        """The wake-ups, each with the jobs it carries (``carried``, by channel)."""
        if channels:
            self.notify(raw, channels, carried)

    def restore_planner(self, raw: Cursor) -> None:
        """Nothing was changed (see :meth:`scans_off`)."""


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
        # A larger page cache and memory-mapped reads: the hot tables and their indexes
        # stay in memory instead of being re-read through system calls.
        cur.execute("PRAGMA cache_size=-65536")
        cur.execute("PRAGMA mmap_size=268435456")
        cur.execute("PRAGMA temp_store=MEMORY")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "IMMEDIATE")
        # On the driver: this runs for every transaction, and SQLAlchemy's own
        # execution would cost more than the BEGIN.
        conn.connection.dbapi_connection.execute(f"BEGIN {mode}")

    return engine
