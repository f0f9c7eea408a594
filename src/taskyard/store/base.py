"""The store's foundation: engine, transactions, the database clock, events, wake-ups."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, Engine, literal_column, select
from sqlalchemy.engine import make_url

from taskyard.core.limits import LimitError, Limits, limits_from_env
from taskyard.store.cycle_lock import WriteLock, write_lock_path_for
from taskyard.store.engine import db_now, is_sqlite, make_engine
from taskyard.store.errors import InvalidInput
from taskyard.store.raw import Raw
from taskyard.store.records import JSON

TX_SCOPED = "taskyard.tx."
"""Prefix of the keys of a connection's info that hold one transaction's state."""
_EVENTS = TX_SCOPED + "events"
_INSERT_EVENT = ("INSERT INTO events (topic, routing_key, payload, job_id, graph_id, created_at)",
                 "c1, c2, c3, c4, c5, {now}")
EVENT_TYPES = ("text", "text", "text", "bigint", "bigint")
"""Column types of an event row as buffered: topic, routing key, payload, job, graph."""
SCHEDULER_ID = "taskyard"
"""First word of every event routing key (TaskCluster's schedulerId)."""


def job_key(graph_id: int | None, routing: str) -> str:
    """A job event's routing key; ``routing`` is the job's stored ``graph.job`` routing."""
    return f"{SCHEDULER_ID}.{graph_id or '_'}.{routing or '_._'}"


def routing_key(graph_id: int | None, graph_routing: str, job_routing: str) -> str:
    """``<scheduler-id>.<graph-id>.<graph routing>.<job routing>``; empty parts are ``_``."""
    return ".".join(
        (SCHEDULER_ID, str(graph_id) if graph_id else "_", graph_routing or "_", job_routing or "_")
    )


class StoreBase:
    """Connection handling shared by every part of the store."""

    def __init__(self, url: str, *, engine: Engine | None = None) -> None:
        self.url = url
        self.engine = engine or make_engine(url)
        self.dialect: str = self.engine.dialect.name
        self.sqlite = is_sqlite(self.engine)
        self._now: ColumnElement[float] = db_now(self.engine)
        self._statements: dict[str, Any] = {}
        self._spec_cache: dict[str, Any] = {}
        """PostgreSQL: task types read by submits, with their row versions (submit_pg)."""
        self._write_lock = (
            WriteLock(write_lock_path_for(make_url(url).database)) if self.sqlite else None
        )
        try:
            self.limits: Limits = limits_from_env(os.environ)
        except LimitError as exc:
            raise InvalidInput(str(exc)) from None

    def _q(self, key: str, build: Callable[[], Any]) -> Any:
        """A statement built once per store and reused: building SQLAlchemy statements
        costs ~5x executing them, which dominates the hot path (claim, complete, cycle).
        Statements embed this store's clock expression, hence per store, not global."""
        stmt = self._statements.get(key)
        if stmt is None:
            stmt = self._statements[key] = build()
        return stmt

    def close(self) -> None:
        """Release every pooled connection."""
        self.engine.dispose()

    @contextlib.contextmanager
    def _tx(self) -> Iterator[Connection]:
        """A write transaction (``BEGIN IMMEDIATE`` on SQLite, queued on the write lock).

        Events appended in it are buffered and written with one statement at the end."""
        lock = self._write_lock or contextlib.nullcontext()
        with lock, self.engine.connect() as conn, conn.begin():
            conn.info[_EVENTS] = []
            try:
                yield conn
                self._before_commit(conn)
                pending = conn.info.pop(_EVENTS)
                if pending:
                    Raw(conn).insert(*_INSERT_EVENT, pending, EVENT_TYPES)
            finally:
                # Keys under TX_SCOPED hold this transaction's state: none outlives it
                # on the pooled connection.
                for key in [k for k in conn.info if str(k).startswith(TX_SCOPED)]:
                    del conn.info[key]

    @staticmethod
    def _buffered_events(conn: Connection) -> list[tuple[Any, ...]] | None:
        """The events this write transaction has buffered so far (None: not buffered).
        A statement that writes them must empty the list."""
        found: list[tuple[Any, ...]] | None = conn.info.get(_EVENTS)
        return found

    def _before_commit(self, conn: Connection) -> None:
        """Writes a write transaction leaves to its end (before its buffered events):
        those of rows that every transaction touches, whose locks are then held for
        the least time (see ResolutionMixin)."""

    @contextlib.contextmanager
    def _read(self) -> Iterator[Connection]:
        """A read transaction; on SQLite deferred so readers never wait for writers."""
        with self.engine.connect() as raw:
            conn = raw.execution_options(sqlite_begin="DEFERRED") if self.sqlite else raw
            with conn.begin():
                yield conn

    @contextlib.contextmanager
    def _read_each(self) -> Iterator[Connection]:
        """Reads that need no snapshot shared between their statements (each sees what
        is committed when it runs): on PostgreSQL in autocommit, with no ``BEGIN`` and
        ``COMMIT`` round trips — for a worker's wake-up path."""
        if self.sqlite:
            with self._read() as conn:
                yield conn
            return
        with self.engine.connect() as raw:
            yield raw.execution_options(isolation_level="AUTOCOMMIT")

    def now(self) -> float:
        """The database clock, in epoch seconds."""
        with self._read() as conn:
            return float(conn.execute(select(self._now)).scalar_one())

    def _events(
        self,
        conn: Connection,
        rows: Iterable[tuple[str, str, dict[str, JSON] | str, int | None, int | None]],
    ) -> None:
        """Append events (topic, routing key, payload, job id, graph id) in this transaction;
        a payload may come as JSON text already (the hot path writes its own)."""
        params = [(topic, key, payload if isinstance(payload, str) else _payload(payload),
                   job, graph) for topic, key, payload, job, graph in rows]
        if not params:
            return
        buffered = conn.info.get(_EVENTS)
        if buffered is not None:
            buffered.extend(params)
        else:
            Raw(conn).insert(*_INSERT_EVENT, params, EVENT_TYPES)

    def _notify(self, conn: Connection, channels: Sequence[str]) -> None:
        """Wake listeners of ``channels`` when this transaction commits.

        PostgreSQL delivers NOTIFY on commit. SQLite listeners poll the database's
        change counter and then their channel's row in ``wakeups``, bumped here.
        """
        unique = list(dict.fromkeys(channels))
        if not unique:
            return
        raw = Raw(conn)
        if self.sqlite:
            raw.many("INSERT INTO wakeups (channel, n) VALUES (?, 1) "
                     "ON CONFLICT (channel) DO UPDATE SET n = n + 1", [(c,) for c in unique])
            return
        for channel in unique:
            raw.all("SELECT pg_notify(?, '')", (pg_channel(channel),))


_payload = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
"""Event payloads are written by taskyard itself: no key sorting needed (hot path)."""


def pg_channel(channel: str) -> str:
    """PostgreSQL channel name for a taskyard channel (``worker.3`` → ``taskyard_worker_3``)."""
    return "taskyard_" + channel.replace(".", "_")


def lit(value: str) -> ColumnElement[Any]:
    """A state name as an SQL literal, not a bound parameter.

    Partial indexes (``WHERE state = 'pending'``) are only usable when the
    planner can see the value: SQLite at prepare time, PostgreSQL in generic
    plans of prepared statements. Values are taskyard's own state names.
    """
    assert value.replace("_", "").isalnum()
    return literal_column(f"'{value}'")


def lits(values: Iterable[str]) -> list[ColumnElement[Any]]:
    return [lit(v) for v in sorted(values)]


def row_dict(row: Any) -> dict[str, Any]:
    return dict(row._mapping)
