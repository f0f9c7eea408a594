"""``Store``: one database, its dialect and clock, and the transactions opened on it.

A caller opens a unit of work and works in it::

    with store.write() as tx:              # one transaction: all or nothing
        (job_id,) = tx.jobs.submit([sub])
        with tx.cycle() as cycle:          # the scheduling cycle, in the same commit
            ...

or, for one operation alone, calls the aggregate through the store, which then opens
the transaction the method needs (:class:`OneShot`)::

    job = store.jobs.get(job_id)           # a read transaction of its own
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import ColumnElement, Engine, literal_column

from taskyard.core.limits import LimitError, Limits, limits_from_env
from taskyard.model.errors import InvalidInput, SchemaMissing, StoreError
from taskyard.model.records import ClaimedJob, JobSubmission
from taskyard.store.clock import MovableClock
from taskyard.store.diagnosis import schema_missing
from taskyard.store.driver import Connections, Driver, Listener, driver_for, normalize_url
from taskyard.store.driver.cycle_params import CycleStart
from taskyard.store.driver.wakeup_payloads import jobs_in_wakeups
from taskyard.store.listener_pool import ListenerPool
from taskyard.store.unit import Tx
from taskyard.store.write_block import WriteBlock

if TYPE_CHECKING:
    from taskyard.store.transitions.aging import Aging
    from taskyard.store.transitions.attempts import Attempts
    from taskyard.store.transitions.backfills import Backfills
    from taskyard.store.transitions.cycle import CycleTx
    from taskyard.store.transitions.events import Events
    from taskyard.store.transitions.graphs import Graphs
    from taskyard.store.transitions.jobs import Jobs
    from taskyard.store.transitions.outbox import Outbox
    from taskyard.store.transitions.retries import Retries
    from taskyard.store.transitions.schedule_runs import ScheduleRuns
    from taskyard.store.transitions.schedules import Schedules
    from taskyard.store.transitions.stages import Stages
    from taskyard.store.transitions.task_types import TaskTypes
    from taskyard.store.transitions.waits import Waits
    from taskyard.store.transitions.workers import Workers


class Store:
    """All persistence of one taskyard database (``sqlite:///…`` or ``postgresql://…``).

    ``clock``: a :class:`MovableClock` whose offset the database clock gets (tests);
    ``connections``: the process's connection budget and where it listens (PostgreSQL)."""

    def __init__(self, url: str, *, clock: MovableClock | None = None,
                 engine: Engine | None = None, connections: Connections | None = None) -> None:
        self.url = url
        self.driver: Driver = driver_for(url, connections)
        self.backend = self.driver.name
        """``sqlite`` or ``postgresql``."""
        self.clock = clock
        self.now_sql = self.driver.now_sql(clock)
        self.now_expr: ColumnElement[float] = literal_column(self.now_sql)
        self.engine = engine or self.driver.make_engine(normalize_url(url), clock)
        self._pools: dict[str, ListenerPool] = {}
        self._pools_lock = threading.Lock()
        try:
            self.limits: Limits = limits_from_env(os.environ)
        except LimitError as exc:
            raise InvalidInput(str(exc)) from None

    # -- units of work -------------------------------------------------------------------

    def write(self) -> contextlib.AbstractContextManager[Tx]:
        """A write transaction; it commits when the block ends (rolls back on error)."""
        return WriteBlock(self)

    @contextlib.contextmanager
    def submit(self, subs: Sequence[JobSubmission], *,
               placing: bool = True) -> Iterator[Submitted]:
        """The unit of work of a submit: ``subs`` inserted, all or nothing, and — with
        ``placing`` — the scheduling cycle in the same commit (seed 000 runs schedule() on
        job creation: a job reaches its worker with one commit). The caller runs the
        cycle's steps in :attr:`Submitted.cycle` when it is given: a live worker may take
        the jobs and the cycle's lock was free. With the lock held elsewhere, the
        scheduler is woken; with no live worker, nobody (a worker runs a cycle when it
        registers). Without ``placing``, the scheduler is woken to place them.

        On PostgreSQL a lone job's insert may place it itself, as that cycle would from
        the same state (then there is no cycle to run), and may be the unit's whole
        transaction: then the cycle, if one is needed, runs in a unit of its own
        (postgresql/jobs.py)."""
        if placing and self.driver.locks_in_insert:
            # Imported before the insert, which may take the cycle's lock: a process's
            # first import of the cycle's modules (~20 ms) under it held every other
            # placer back — the first submits of fresh processes waited 50-125 ms to be
            # placed (bench.fleet's latency phase, 10 workers).
            import taskyard.store.transitions.cycle  # noqa: F401, PLC0415
        with self.write() as tx:
            if not placing:
                yield Submitted(tx.jobs.submit(subs), None)
                return
            added = tx.jobs.add(subs, placing=True)
            if not added.committed:
                if not added.live_worker:  # no worker to take them, or placed already
                    yield Submitted(added.ids, None)
                    return
                with tx.cycle(added.cycle, read_ahead=True) as cycle:
                    if cycle is None:
                        tx.notify("scheduler")  # the cycle is busy elsewhere: let it know
                    yield Submitted(added.ids, cycle)
                return
        # The insert committed the unit itself (a PostgreSQL shortcut): the cycle it leaves
        # to its caller, when the lock was ours, runs in a unit of its own.
        if added.live_worker and added.cycle is not None and added.cycle.held:
            with self.cycle() as cycle:
                yield Submitted(added.ids, cycle)
            return
        yield Submitted(added.ids, None)

    @contextlib.contextmanager
    def joined(self, connection: Any) -> Iterator[Tx]:
        """A unit of work inside the caller's own transaction on ``connection`` (a
        SQLAlchemy Connection of the psycopg 3 driver, or a psycopg 3 connection, on
        this database; PostgreSQL only, else InvalidInput). It never begins, commits,
        rolls back or closes that transaction: what it leaves to its end (events,
        wake-ups) is written when the block ends, and published by the caller's commit —
        or never, if the caller rolls back. It never runs the scheduling cycle (which
        would hold the global lock until the caller commits): the scheduler is woken."""
        with self.driver.join(connection, self.clock) as conn, contextlib.closing(
                Tx(self, conn, joined=True)) as tx:
            yield tx
            tx.finish(commit=False)

    @contextlib.contextmanager
    def read(self) -> Iterator[Tx]:
        """A read transaction (one snapshot for its statements)."""
        try:
            with self.driver.read(self.engine) as conn, contextlib.closing(
                    Tx(self, conn)) as tx:
                yield tx
        except Exception as exc:
            missing = self._schema_missing(exc)
            if missing is None:
                raise
            raise missing from exc

    @contextlib.contextmanager
    def read_each(self) -> Iterator[Tx]:
        """Reads that need no snapshot shared between them (a worker's wake-up path)."""
        try:
            with self.driver.read_each(self.engine) as conn, contextlib.closing(
                    Tx(self, conn)) as tx:
                yield tx
        except Exception as exc:
            missing = self._schema_missing(exc)
            if missing is None:
                raise
            raise missing from exc

    def _schema_missing(self, exc: Exception) -> SchemaMissing | None:
        """:class:`SchemaMissing` when ``exc`` failed for want of the schema (a user who
        never ran ``init`` gets that, not "no such table"), else None."""
        return None if isinstance(exc, StoreError) else schema_missing(exc, self.url)

    def transaction(self, kind: str) -> contextlib.AbstractContextManager[Tx]:
        """:meth:`write`, :meth:`read` or :meth:`read_each` by name."""
        opener: Callable[[], contextlib.AbstractContextManager[Tx]] = getattr(self, kind)
        return opener()

    @contextlib.contextmanager
    def cycle(self) -> Iterator[CycleTx | None]:
        """One scheduling cycle in a transaction of its own, under the global lock;
        None when another caller holds the lock."""
        if self.driver.writes_one_at_a_time:
            # Lock first, then the write transaction: a caller that cannot have the
            # cycle must not queue for the write lock.
            with self.driver.cycle_lock(None) as held:
                if not held:
                    yield None
                    return
                with self.write() as tx, tx.cycle(CycleStart(held=True)) as cycle:
                    yield cycle
            return
        with self.write() as tx, tx.cycle() as cycle:
            yield cycle

    def end_frozen_cycle_holder(self, idle: float | None = None) -> list[int]:
        """End the database session that holds the cycle's lock while its client has been
        frozen for ``idle`` seconds in the middle of a pipeline (None: the limit the
        server puts on a session idle in its transaction with the lock); the session ids
        ended (PostgreSQL's pids; none on SQLite). For a process whose cycles have found
        the lock busy for a while (the scheduler daemon). One statement, in autocommit:
        no transaction of its own (SQLite: no write lock)."""
        with self.read_each() as tx:
            return tx.driver.end_frozen_holders(tx.raw, idle)

    # -- the database --------------------------------------------------------------------

    def now(self) -> float:
        """The database clock, in epoch seconds."""
        with self.read() as tx:
            return tx.driver.read_now(tx.raw)

    def init_schema(self) -> None:
        """Create or migrate the schema to the latest version (idempotent)."""
        # Imported here: Alembic is slow to import and only init needs it.
        from taskyard.store.schema.migrate import upgrade  # noqa: PLC0415

        upgrade(self.engine)

    def listener(self, channel: str) -> Listener:
        """Wake-ups for ``channel``: ``scheduler`` or ``worker.<id>``."""
        return self.driver.listener(channel)

    def borrow_listener(self, channel: str) -> contextlib.AbstractContextManager[Listener]:
        """A listener on ``channel`` for one wait, lent from a pool that keeps a few
        between waits: a wait opens no connection of its own (store/listener_pool.py)."""
        with self._pools_lock:
            pool = self._pools.get(channel)
            if pool is None:
                pool = self._pools[channel] = ListenerPool(lambda: self.listener(channel))
        return pool.borrowed()

    def jobs_in_wakeups(self, payloads: Sequence[str]) -> list[ClaimedJob] | None:
        """The jobs that wake-ups carried to a worker (None: it must read them)."""
        return jobs_in_wakeups(payloads)

    def close(self) -> None:
        """Release every pooled connection and the dialect's locks."""
        with self._pools_lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.close()
        self.driver.close()
        self.engine.dispose()

    # -- one operation, one transaction (see OneShot) ------------------------------------

    @property
    def aging(self) -> Aging:
        from taskyard.store.transitions.aging import Aging  # noqa: PLC0415 - start-up time

        return cast("Aging", OneShot(self, lambda tx: tx.aging, Aging.READS))

    @property
    def attempts(self) -> Attempts:
        from taskyard.store.transitions.attempts import Attempts  # noqa: PLC0415 - start-up time

        return cast("Attempts", OneShot(self, lambda tx: tx.attempts, Attempts.READS,
                                        Attempts.READS_EACH))

    @property
    def events(self) -> Events:
        from taskyard.store.transitions.events import Events  # noqa: PLC0415 - start-up time

        return cast("Events", OneShot(self, lambda tx: tx.events, Events.READS))

    @property
    def graphs(self) -> Graphs:
        from taskyard.store.transitions.graphs import Graphs  # noqa: PLC0415 - start-up time

        return cast("Graphs", OneShot(self, lambda tx: tx.graphs, Graphs.READS))

    @property
    def jobs(self) -> Jobs:
        from taskyard.store.transitions.jobs import Jobs  # noqa: PLC0415 - start-up time

        return cast("Jobs", OneShot(self, lambda tx: tx.jobs, Jobs.READS, Jobs.READS_EACH))

    @property
    def outbox(self) -> Outbox:
        from taskyard.store.transitions.outbox import Outbox  # noqa: PLC0415 - start-up time

        return cast("Outbox", OneShot(self, lambda tx: tx.outbox, Outbox.READS))

    @property
    def retries(self) -> Retries:
        from taskyard.store.transitions.retries import Retries  # noqa: PLC0415 - start-up time

        return cast("Retries", OneShot(self, lambda tx: tx.retries, Retries.READS))

    @property
    def schedule_runs(self) -> ScheduleRuns:
        from taskyard.store.transitions.schedule_runs import ScheduleRuns  # noqa: PLC0415 - start-up time

        return cast("ScheduleRuns",
                    OneShot(self, lambda tx: tx.schedule_runs, ScheduleRuns.READS))

    @property
    def schedules(self) -> Schedules:
        from taskyard.store.transitions.schedules import Schedules  # noqa: PLC0415 - start-up time

        return cast("Schedules", OneShot(self, lambda tx: tx.schedules, Schedules.READS))

    @property
    def stages(self) -> Stages:
        from taskyard.store.transitions.stages import Stages  # noqa: PLC0415 - start-up time

        return cast("Stages", OneShot(self, lambda tx: tx.stages, Stages.READS))

    @property
    def task_types(self) -> TaskTypes:
        from taskyard.store.transitions.task_types import TaskTypes  # noqa: PLC0415 - start-up time

        return cast("TaskTypes", OneShot(self, lambda tx: tx.task_types, TaskTypes.READS))

    @property
    def backfills(self) -> Backfills:
        from taskyard.store.transitions.backfills import Backfills  # noqa: PLC0415 - start-up time

        return cast("Backfills", OneShot(self, lambda tx: tx.backfills, Backfills.READS))

    @property
    def waits(self) -> Waits:
        from taskyard.store.transitions.waits import Waits  # noqa: PLC0415 - start-up time

        return cast("Waits", OneShot(self, lambda tx: tx.waits, Waits.READS))

    @property
    def workers(self) -> Workers:
        from taskyard.store.transitions.workers import Workers  # noqa: PLC0415 - start-up time

        return cast("Workers", OneShot(self, lambda tx: tx.workers, Workers.READS))


@dataclass(frozen=True, slots=True)
class Submitted:
    """What :meth:`Store.submit` wrote, and the cycle its caller runs next (None: none
    to run here)."""

    ids: list[int]
    cycle: CycleTx | None


class OneShot:
    """An aggregate reached through the store: each method call runs in a transaction of
    its own — a read one for the methods its class lists in ``READS`` (``READS_EACH``:
    reads that share no snapshot), a write one for the others."""

    __slots__ = ("_each", "_reads", "_store", "_unit")

    def __init__(self, store: Store, unit: Callable[[Tx], object], reads: frozenset[str],
                 reads_each: frozenset[str] = frozenset()) -> None:
        self._store = store
        self._unit = unit
        self._reads = reads
        self._each = reads_each

    def __getattr__(self, method: str) -> Callable[..., Any]:
        kind = ("read_each" if method in self._each else "read" if method in self._reads
                else "write")
        store, unit = self._store, self._unit

        def call(*args: Any, **kwargs: Any) -> Any:
            with store.transaction(kind) as tx:
                return getattr(unit(tx), method)(*args, **kwargs)

        call.__name__ = method
        return call

