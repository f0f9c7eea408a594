"""The storage seam: one driver per backend, whose methods are the transitions.

Everything the store's aggregates (``store/transitions``) write or read goes through a
:class:`Driver`: SQLite's (``store/sqlite``) or PostgreSQL's (``store/postgresql``).
Each method is a transition or a read, named after it, taking one params value
(``driver/params.py``, the cycle's ``driver/cycle_params.py``) where it takes more
than a key; each backend writes its own SQL.
This package holds the interface and what both drivers share: the params and results,
the wake-up payload format, the maintenance checks, the task type cache.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import Connection, Engine
from sqlalchemy.engine import make_url

from taskyard.model.errors import UnsupportedDatabase
from taskyard.store.portable import SharedTransitions

if TYPE_CHECKING:  # the protocol's types only: the schema imports this package
    from taskyard.model.records import TaskTypeSpec
    from taskyard.store.clock import MovableClock
    from taskyard.store.cursor import Cursor
    from taskyard.store.driver.cycle_params import (
        CycleReads,
        CycleStart,
        Dispatched,
        FinishCycle,
        MaintenanceFound,
        MaintenanceWork,
        ReadCandidates,
        Snapshot,
    )
    from taskyard.store.driver.params import (
    AgePending,
    Dispatch,
    EndAttempts,
    EndedAttempts,
    EndUnit,
    Event,
    EventCursor,
    InsertedJobs,
    InsertJobs,
    Placed,
    ReadKeyHolders,
    ReadPriorRuns,
    RegisterWorker,
    StartAttempts,
)
from taskyard.store.driver.wait_params import FirstSignals, SendSignal


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

    def interrupt(self) -> None:
        """End the :meth:`wait` under way in another thread at once (it returns False),
        or the next one when none is (thread-safe)."""
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


class Driver(SharedTransitions, Protocol):
    """What a backend provides to the store (see the module docstring): the transitions
    it writes itself, below, and those both backends write alike (SharedTransitions)."""

    name: str
    percent_params: bool
    writes_one_at_a_time: bool
    pending_index: str
    row_lock: str
    lock_scans_off: bool
    locks_in_insert: bool
    """A placing submit's insert may take the cycle's lock itself: what the cycle runs is
    loaded before the insert (a first import under the lock held every placer back)."""
    keeps_cursors: bool
    """A unit of work reuses the cursor kept with its pooled connection (store/cursor.py);
    False: each unit opens and closes its own (sqlite3: see Tx.close)."""

    # engine and units of work
    def now_sql(self, clock: MovableClock | None) -> str: ...
    def make_engine(self, url: str, clock: MovableClock | None = None) -> Engine: ...
    def write(self, engine: Engine) -> AbstractContextManager[Connection]: ...
    def read(self, engine: Engine) -> AbstractContextManager[Connection]: ...
    def read_each(self, engine: Engine) -> AbstractContextManager[Connection]: ...
    def join(self, connection: Any,
             clock: MovableClock | None) -> AbstractContextManager[Connection]: ...
    def end_unit(self, raw: Cursor, params: EndUnit) -> None: ...
    def close(self) -> None: ...

    # locks and wake-ups
    def cycle_lock(self, raw: Cursor | None) -> AbstractContextManager[bool]: ...
    def take_cycle(self, raw: Cursor, *,
                   read_ahead: bool = False) -> AbstractContextManager[CycleStart]: ...
    def end_frozen_holders(self, raw: Cursor, idle: float | None) -> list[int]: ...
    def notify(self, raw: Cursor, channels: Sequence[str]) -> None: ...
    def listener(self, channel: str) -> Listener: ...
    def register_worker(self, raw: Cursor, params: RegisterWorker) -> int | None: ...

    # what the unit's cursor renders for this backend (store/cursor.py)
    def member(self, column: str, ids: Sequence[Any]) -> tuple[str, list[Any]]: ...

    # jobs
    def task_type(self, raw: Cursor, name: str) -> tuple[Any, TaskTypeSpec] | None: ...
    def forget_task_type(self, name: str) -> None: ...
    def insert_jobs(self, raw: Cursor, params: InsertJobs) -> InsertedJobs: ...
    def live_worker(self, raw: Cursor) -> bool: ...
    def read_key_holders(self, raw: Cursor,
                         params: ReadKeyHolders) -> list[tuple[Any, ...] | None]: ...
    def read_prior_runs(self, raw: Cursor, params: ReadPriorRuns) -> list[tuple[Any, ...]]: ...
    def insert_edges(self, raw: Cursor, edges: Sequence[tuple[int, int, str]]) -> None: ...

    # attempts
    def start_attempts(self, raw: Cursor, params: StartAttempts) -> list[tuple[Any, ...]]: ...
    def end_attempts(self, raw: Cursor, params: EndAttempts) -> EndedAttempts: ...
    def set_prefetch(self, raw: Cursor, worker_id: int, prefetch: int) -> None: ...
    def placed_here(self, raw: Cursor, worker_id: int,
                    known: Iterable[tuple[int, int]]) -> Placed: ...
    def job_details(self, raw: Cursor, worker_id: int,
                    ids: Sequence[int]) -> list[tuple[Any, ...]]: ...

    # the cycle
    def read_cycle(self, raw: Cursor, *, snapshot: bool = False) -> CycleReads: ...
    def read_snapshot(self, raw: Cursor) -> Snapshot: ...
    def read_pools_lists(self, raw: Cursor,
                         page: int) -> tuple[list[str], list[Any] | None]: ...
    def scans_off(self, raw: Cursor) -> bool: ...
    def restore_planner(self, raw: Cursor) -> None: ...
    def maintenance_work(self, raw: Cursor, params: MaintenanceWork) -> MaintenanceFound: ...
    def stage_due_jobs(self, raw: Cursor) -> int: ...
    def next_delayed(self, raw: Cursor) -> float | None: ...
    def read_candidates(self, raw: Cursor, params: ReadCandidates) -> list[Any]: ...
    def dispatch(self, raw: Cursor, params: Dispatch) -> Dispatched: ...
    def finish_cycle(self, raw: Cursor, params: FinishCycle) -> None: ...

    def age_pending(self, raw: Cursor, params: AgePending) -> int: ...
    def read_due_awaiting(self, raw: Cursor, limit: int) -> list[tuple[Any, ...]]: ...
    def first_signals(self, raw: Cursor, params: FirstSignals) -> dict[int, tuple[Any, ...]]: ...
    def send_signal(self, raw: Cursor, params: SendSignal) -> list[tuple[Any, ...]]: ...

    def read_due_schedules(self, raw: Cursor, limit: int,
                           at: float | None) -> list[dict[str, Any]]: ...

    # the event log
    def write_events(self, raw: Cursor, events: Sequence[Event]) -> None: ...
    def events_after(self, raw: Cursor, after: EventCursor, topic: str | None,
                     limit: int) -> list[tuple[Any, ...]]: ...
    def events_last(self, raw: Cursor, count: int,
                    topic: str | None) -> list[tuple[Any, ...]]: ...
    def event_cursor(self, raw: Cursor, event_id: int) -> EventCursor: ...


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
