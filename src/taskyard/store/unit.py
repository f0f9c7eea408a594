"""The unit of work: one database transaction and everything that acts in it.

Callers own the transaction: ``Yard``, the worker and the scheduler open one
(``with store.write() as tx:``), hand it down (``tx.jobs.submit(…)``,
``run_cycle(cycle)``) and it commits when their block ends. The aggregates —
jobs, graphs, attempts, workers, schedules, events… — are small objects composed
over the unit of work; they reach each other through it (``self.tx.dependents``),
never through inheritance, and the store never calls back into the layers above.

What a transaction leaves to its end is explicit: steps registered with
:meth:`Tx.before_commit` (graph bookkeeping deferred by a worker's batch), then the
buffered events, then the wake-ups — all written just before the commit. Nothing of a
unit of work touches its connection once it has ended (:meth:`Tx.close`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from sqlalchemy import Connection

from taskyard.store.cursor import Cursor
from taskyard.store.driver.cycle_params import CycleStart
from taskyard.store.driver.params import EndUnit

if TYPE_CHECKING:
    from taskyard.store.store import Store
    from taskyard.store.transitions.aging import Aging
    from taskyard.store.transitions.attempts import Attempts
    from taskyard.store.transitions.backfills import Backfills
    from taskyard.store.transitions.cycle import CycleTx
    from taskyard.store.transitions.dependents import Dependents
    from taskyard.store.transitions.events import Events
    from taskyard.store.transitions.graphs import Graphs
    from taskyard.store.transitions.jobs import Jobs
    from taskyard.store.transitions.outbox import Outbox
    from taskyard.store.transitions.prerequisites import Prerequisites
    from taskyard.store.transitions.rate_starts import RateStarts
    from taskyard.store.transitions.retries import Retries
    from taskyard.store.transitions.schedule_runs import ScheduleRuns
    from taskyard.store.transitions.schedules import Schedules
    from taskyard.store.transitions.stages import Stages
    from taskyard.store.transitions.task_types import TaskTypes
    from taskyard.store.transitions.waits import Waits
    from taskyard.store.transitions.workers import Workers


_A = TypeVar("_A")


class _aggregate(Generic[_A]):  # lower case: used as a decorator, like cached_property
    """An aggregate of a unit of work, created on first use and then a plain attribute
    of the unit (a non-data descriptor: the instance's own value wins). Not
    ``functools.cached_property``: on Python 3.11 that takes a lock at each first use,
    and a unit of work is one thread's."""

    def __init__(self, create: Callable[[Tx], _A]) -> None:
        self._create = create
        self._name = create.__name__

    def __get__(self, tx: Tx, owner: Any = None) -> _A:
        value = tx.__dict__[self._name] = self._create(tx)
        return value


class Tx:
    """One transaction of ``store`` on ``conn``, with its aggregates and its end."""

    def __init__(self, store: Store, conn: Connection, *, joined: bool = False) -> None:
        self.store = store
        self._conn = conn
        self.joined = joined
        """The transaction is a caller's own (see :meth:`Store.joined`): this unit of work
        never begins, commits or ends it."""
        self.driver = store.driver
        self._raw: Cursor | None = None
        self._steps: list[Callable[[], None]] = []
        self._channels: dict[str, None] = {}

    @property
    def conn(self) -> Connection:
        """The transaction's connection, for statements of SQLAlchemy Core (what the
        driver left to the unit's next statement, :attr:`Cursor.restore`, run first)."""
        raw = self._raw
        if raw is not None and raw.restore is not None:
            self._restore(raw)
        return self._conn

    @property
    def raw(self) -> Cursor:
        """A cursor for the driver's statements, in this transaction (what the driver
        left to the unit's next statement, :attr:`Cursor.restore`, run first)."""
        raw = self._raw
        if raw is None:
            raw = self._raw = Cursor(self._conn, self.driver, self.store.now_sql,
                                     keep=self.driver.keeps_cursors and not self.joined)
        elif raw.restore is not None:
            self._restore(raw)
        return raw

    @staticmethod
    def _restore(raw: Cursor) -> None:
        sql, raw.restore = raw.restore, None
        assert sql is not None
        raw.run(sql)

    def notify(self, *channels: str) -> None:
        """Wake the listeners of ``channels`` once this transaction commits."""
        for channel in channels:
            self._channels[channel] = None

    def before_commit(self, step: Callable[[], None]) -> None:
        """Run ``step`` at the end of this transaction, before its events are written."""
        self._steps.append(step)

    def finish(self, *, commit: bool) -> None:
        """Write what the transaction left to its end: the steps registered with
        :meth:`before_commit`, then the buffered events and the wake-ups — with the
        commit, ``commit`` (the store's own units: the driver may send them together)."""
        while self._steps:
            self._steps.pop(0)()
        events = self.events.take() if "events" in self.__dict__ else []
        channels = list(self._channels)
        self._channels.clear()
        raw = self._raw
        if raw is not None and raw.restore is not None:
            if commit:  # the transaction ends: what was left to a next statement is moot
                raw.restore = None
            else:  # the caller's transaction goes on
                self._restore(raw)
        if events or channels:
            self.driver.end_unit(self.raw, EndUnit(events, channels, commit=commit))

    def close(self) -> None:
        """Close this unit's cursor (the store calls this as the unit ends, in the thread
        that ran it, before the connection goes back to the pool).

        Not left to the garbage collector: the aggregates refer to their unit of work, so
        a unit is freed by a collection, in whichever thread runs one, at any time. An
        open sqlite3 cursor then resets its last statement, which the driver caches per
        connection and may be running for another unit of work on that connection at
        that instant: the statement is left un-reset in the cache, and the next unit of
        work that runs it fails with ``InterfaceError: bad parameter or other API
        misuse`` (issue 23)."""
        # An invalidated connection (a disconnect) has closed its driver connection, and
        # its cursors with it: closing again would raise over the error that ended the unit.
        if self._raw is not None and not self._conn.invalidated:
            self._raw.close()

    @contextlib.contextmanager
    def cycle(self, start: CycleStart | None = None, *,
              read_ahead: bool = False) -> Iterator[CycleTx | None]:
        """The scheduling cycle inside this transaction, if its global lock is free;
        None when another process holds it. ``start``: the lock was tried already in
        this unit (with a submit's insert; by Store.cycle on SQLite, before the unit).
        ``read_ahead``: the cycle's first reads are made with its lock (PostgreSQL: in
        the same round trip), for a cycle that reads them first (one that does not
        maintain: a maintaining cycle reads them with its maintenance question)."""
        if self.joined:  # never the global lock until a caller's commit
            yield None
            return
        began: contextlib.AbstractContextManager[CycleStart] = (
            self.driver.take_cycle(self.raw, read_ahead=read_ahead) if start is None
            else contextlib.nullcontext(start))
        # Imported before the lock is ours: a process's first import of the cycle's
        # modules (~20 ms) would hold every other placer back.
        from taskyard.store.transitions.cycle import CycleTx  # noqa: PLC0415 - start-up

        with began as begun:
            if not begun.held:
                yield None
                return
            cycle = CycleTx(self, begun.reads, scans_off=self.driver.lock_scans_off)
            yield cycle
            cycle.finish()

    # The aggregates, each created on first use in this transaction; each module is
    # imported on first use too (start-up time: a CLI submit loads the jobs' modules,
    # not the workers', schedules' or graphs').

    @_aggregate
    def aging(self) -> Aging:
        from taskyard.store.transitions.aging import Aging  # noqa: PLC0415 - start-up time

        return Aging(self)

    @_aggregate
    def attempts(self) -> Attempts:
        from taskyard.store.transitions.attempts import Attempts  # noqa: PLC0415 - start-up time

        return Attempts(self)

    @_aggregate
    def events(self) -> Events:
        from taskyard.store.transitions.events import Events  # noqa: PLC0415 - start-up time

        return Events(self)

    @_aggregate
    def graphs(self) -> Graphs:
        from taskyard.store.transitions.graphs import Graphs  # noqa: PLC0415 - start-up time

        return Graphs(self)

    @_aggregate
    def jobs(self) -> Jobs:
        from taskyard.store.transitions.jobs import Jobs  # noqa: PLC0415 - start-up time

        return Jobs(self)

    @_aggregate
    def outbox(self) -> Outbox:
        from taskyard.store.transitions.outbox import Outbox  # noqa: PLC0415 - start-up time

        return Outbox(self)

    @_aggregate
    def prerequisites(self) -> Prerequisites:
        from taskyard.store.transitions.prerequisites import Prerequisites  # noqa: PLC0415 - start-up time

        return Prerequisites(self)

    @_aggregate
    def rate_starts(self) -> RateStarts:
        from taskyard.store.transitions.rate_starts import RateStarts  # noqa: PLC0415 - start-up time

        return RateStarts(self)

    @_aggregate
    def dependents(self) -> Dependents:
        from taskyard.store.transitions.dependents import Dependents  # noqa: PLC0415 - start-up time

        return Dependents(self)

    @_aggregate
    def retries(self) -> Retries:
        from taskyard.store.transitions.retries import Retries  # noqa: PLC0415 - start-up time

        return Retries(self)

    @_aggregate
    def schedule_runs(self) -> ScheduleRuns:
        from taskyard.store.transitions.schedule_runs import ScheduleRuns  # noqa: PLC0415 - start-up time

        return ScheduleRuns(self)

    @_aggregate
    def schedules(self) -> Schedules:
        from taskyard.store.transitions.schedules import Schedules  # noqa: PLC0415 - start-up time

        return Schedules(self)

    @_aggregate
    def stages(self) -> Stages:
        from taskyard.store.transitions.stages import Stages  # noqa: PLC0415 - start-up time

        return Stages(self)

    @_aggregate
    def task_types(self) -> TaskTypes:
        from taskyard.store.transitions.task_types import TaskTypes  # noqa: PLC0415 - start-up time

        return TaskTypes(self)

    @_aggregate
    def backfills(self) -> Backfills:
        from taskyard.store.transitions.backfills import Backfills  # noqa: PLC0415 - start-up time

        return Backfills(self)

    @_aggregate
    def waits(self) -> Waits:
        from taskyard.store.transitions.waits import Waits  # noqa: PLC0415 - start-up time

        return Waits(self)

    @_aggregate
    def workers(self) -> Workers:
        from taskyard.store.transitions.workers import Workers  # noqa: PLC0415 - start-up time

        return Workers(self)
