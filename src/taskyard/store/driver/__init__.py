"""The backends: one dialect object per database, one file per backend.

Everything that differs between SQLite and PostgreSQL sits behind :class:`Driver`:
how transactions begin and queue, the cycle's lock, wake-ups, row locks, bulk
inserts, and the hand-written statements of the measured hot paths. The store's
transitions are written once, against this interface; ``sqlite.py`` and
``postgresql.py`` (with their ``sqlite_*`` / ``pg_*`` statement modules) implement it.
Statement-level reference checks on PostgreSQL are part of its schema
(``pg_references``, created with the tables).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import ColumnElement, Connection, Engine, Table
from sqlalchemy.engine import make_url
from sqlalchemy.sql import Select

from taskyard.model.errors import UnsupportedDatabase

if TYPE_CHECKING:  # the protocol's types only: the schema imports this package
    # Only named for types: SQLite users never load the PostgreSQL dialect.
    from sqlalchemy.dialects import postgresql, sqlite

    from taskyard.model.records import ClaimedJob, JobSubmission, Outcome, TaskTypeSpec
    from taskyard.store.clock import MovableClock
    from taskyard.store.cursor import Cursor
    from taskyard.store.driver.results import Dispatched, Placed
    from taskyard.store.transitions.events import EventCursor

    Upsert = postgresql.Insert | sqlite.Insert
"""An INSERT with ON CONFLICT clauses (both backends write them alike)."""


class Listener(Protocol):
    """Wake-ups on one channel, across processes that share only the database."""

    def wait(self, timeout: float) -> bool:
        """Block until woken (True, possibly spurious) or ``timeout`` passes (False)."""
        ...

    def payloads(self) -> list[str]:
        """What the wake-ups of the last :meth:`wait` carried ("" for one that carried
        nothing, such as a reconnection's); empty where wake-ups carry nothing (SQLite)."""
        ...

    def pause(self) -> bool:
        """Stop hearing wake-ups until :meth:`resume` (kept in a pool between waits,
        see store/listener_pool.py); False when it cannot be kept (a lost connection)."""
        ...

    def resume(self) -> None:
        """Hear wake-ups again, from now on: what came before is dropped. A listener
        that cannot listen again reports a wake-up at its next wait, as after a lost
        connection."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Connections:
    """How one process connects to PostgreSQL (SQLite has nothing to bound): its pool,
    and where and how it listens for wake-ups (docs/operations/connections.md)."""

    keep: int = 5
    """Pooled connections kept open between uses."""
    most: int = 15
    """Pooled connections open at once, at most; those beyond ``keep`` are closed
    once given back. A thread that needs one more waits for one to come back."""
    listen_url: str | None = None
    """LISTEN there, not on the database URL: the server itself, when the database URL
    is a pooler's in transaction mode (``--listen-db``)."""
    shared_listener: bool = False
    """LISTEN through one connection per host, shared by the taskyard processes on it
    (store/postgresql/shared_listen.py), instead of one per process."""


class Driver(Protocol):
    """What a backend provides to the store (see the module docstring)."""

    name: str
    percent_params: bool
    writes_one_at_a_time: bool
    pending_index: str
    row_lock: str
    lock_scans_off: bool
    keeps_cursors: bool
    """A unit of work reuses the cursor kept with its pooled connection (store/cursor.py);
    False: each unit opens and closes its own (sqlite3: see Tx.close)."""

    def now_sql(self, clock: MovableClock | None) -> str: ...
    def make_engine(self, url: str, clock: MovableClock | None = None) -> Engine: ...
    def write(self, engine: Engine) -> AbstractContextManager[Connection]: ...
    def read(self, engine: Engine) -> AbstractContextManager[Connection]: ...
    def read_each(self, engine: Engine) -> AbstractContextManager[Connection]: ...
    def alone(self, engine: Engine,
              clock: MovableClock | None) -> AbstractContextManager[Connection]: ...
    def join(self, connection: Any,
             clock: MovableClock | None) -> AbstractContextManager[Connection]: ...
    def cycle_lock(self, raw: Cursor | None) -> AbstractContextManager[bool]: ...
    def close(self) -> None: ...
    def serialize_on(self, raw: Cursor, key: str) -> None: ...
    def sees_commits_after_lock(self, raw: Cursor) -> bool: ...
    def lock_rows(self, query: Select[Any], *, shared: bool = False,
                  skip_locked: bool = False, of: Table | None = None) -> Select[Any]: ...
    def notify(self, raw: Cursor, channels: Sequence[str]) -> None: ...
    def listener(self, channel: str) -> Listener: ...
    def jobs_in_wakeups(self, payloads: Sequence[str]) -> list[ClaimedJob] | None: ...
    def upsert(self, table: Table) -> Upsert: ...
    def floor(self, value: ColumnElement[Any]) -> ColumnElement[Any]: ...
    def ids_in(self, column: ColumnElement[Any], ids: Sequence[int]) -> ColumnElement[bool]: ...
    def member(self, column: str, ids: Sequence[Any]) -> tuple[str, list[Any]]: ...
    def row_set(self, raw: Cursor, sql: str, rows: Sequence[Sequence[Any]],
                types: Sequence[str], *, tail: Sequence[Any], key: str,
                ) -> list[tuple[Any, ...]]: ...
    def insert_rows(self, raw: Cursor, head: str, columns: str, rows: Sequence[Sequence[Any]],
                    types: Sequence[str]) -> None: ...
    def insert_edges(self, raw: Cursor, edges: Sequence[tuple[int, int, str]]) -> None: ...
    def insert_jobs(self, raw: Cursor, columns: Sequence[str],
                    values: Iterable[tuple[Any, ...]], count: int) -> list[int]: ...
    def submit_one(self, raw: Cursor, sub: JobSubmission,
                   cache: dict[str, tuple[str, TaskTypeSpec]], build: Any, *,
                   lock: bool = False, alone: bool = False,
                   ) -> tuple[int | None, bool | None]: ...
    def submit_foreseen(self, raw: Cursor, sub: JobSubmission,
                        cache: dict[str, tuple[str, TaskTypeSpec]], build: Any, *,
                        basis: str, place: Any, maintain: float | None = None) -> Any: ...
    def submit_looking(self, raw: Cursor, sub: JobSubmission,
                       cache: dict[str, tuple[str, TaskTypeSpec]], build: Any,
                       page: int) -> Any: ...
    def end_attempts(self, raw: Cursor, worker_id: int, values: Sequence[tuple[Any, ...]],
                     part: Sequence[Outcome], ago: Mapping[tuple[int, int], float],
                     ) -> list[tuple[Any, ...]]: ...
    def placed_here(self, raw: Cursor, worker_id: int,
                    known: Iterable[tuple[int, int]]) -> Placed: ...
    submits_alone: bool
    def worth_a_cycle(self, raw: Cursor) -> bool: ...
    def pass_worker_gate(self, raw: Cursor) -> None: ...
    def read_ahead(self, raw: Cursor, held: bool, page: int) -> Any: ...
    def pools_lists(self, raw: Cursor, page: int) -> tuple[list[str], list[Any] | None]: ...
    def scans_off(self, raw: Cursor) -> bool: ...
    def restore_planner(self, raw: Cursor) -> None: ...
    def maintenance_work(self, raw: Cursor, grace: float) -> tuple[bool, bool, bool, bool]: ...
    def finish_cycle(self, raw: Cursor, channels: Sequence[str], scans_off: bool,
                     carried: Mapping[str, str]) -> None: ...
    def insert_events(self, raw: Cursor, rows: Sequence[tuple[Any, ...]]) -> None: ...
    def events_after(self, raw: Cursor, after: EventCursor, topic: str | None,
                     limit: int) -> list[tuple[Any, ...]]: ...
    def events_last(self, raw: Cursor, count: int,
                    topic: str | None) -> list[tuple[Any, ...]]: ...
    def event_cursor(self, raw: Cursor, event_id: int) -> EventCursor: ...
    def dispatch(self, raw: Cursor, by_worker: Mapping[int, Sequence[int]],
                 names: Mapping[int, str], *, quiet: set[str],
                 events: list[tuple[Any, ...]] | None, scans_off: bool) -> Dispatched: ...


def normalize_url(url: str) -> str:
    """Pick the driver: ``postgresql://`` → psycopg 3 (several hosts and ``pool_mode``
    kept, see store/postgresql/urls.py); SQLite stays on pysqlite."""
    if url.partition("://")[0].partition("+")[0].lower() in ("postgresql", "postgres"):
        from taskyard.store.postgresql.urls import pg_target  # noqa: PLC0415

        target = pg_target(url)
        kept = target.url if target.pool_mode == "session" else \
            target.url.update_query_dict({"pool_mode": target.pool_mode})
        return kept.render_as_string(hide_password=False)
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return parsed.set(drivername="sqlite").render_as_string(hide_password=False)
    raise UnsupportedDatabase(
        f"database URL {parsed.render_as_string()!r}: taskyard runs on sqlite:/// or postgresql://"
    )


def driver_for(url: str, connections: Connections | None = None) -> Driver:
    """The dialect of ``url`` (normalised first; UnsupportedDatabase otherwise)."""
    normalized = normalize_url(url)
    if normalized.startswith("sqlite"):
        from taskyard.store.sqlite.driver import SqliteDriver  # noqa: PLC0415

        return SqliteDriver(normalized)
    from taskyard.store.postgresql.driver import PostgresDriver  # noqa: PLC0415

    return PostgresDriver(normalized, connections or Connections())


def make_engine(url: str, clock: MovableClock | None = None) -> Engine:
    """An engine for ``url`` with the settings taskyard relies on."""
    return driver_for(url).make_engine(normalize_url(url), clock)
