"""Approvals, waits and sleeps in one transaction: jobs that became awaiting, the
decisions and signals that end them, and the timeouts the cycle finds.

A signal is stored, so that a wait that becomes awaiting after it was sent (but was
submitted before) still gets it; and every transition is guarded by the job's state,
so that none ends twice. On PostgreSQL a signal and a wait becoming awaiting take the
same transaction-scoped lock on the signal's name (``Driver.send_signal``,
``Driver.first_signals``), the signal before it is stored, the wait before it looks
for stored signals: whichever commits
second sees the other (READ COMMITTED: each statement sees what committed before it).
Without it, both could run at once, each missing the other, and the wait would miss its
signal. SQLite's writers are serial already.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import groupby
from typing import TYPE_CHECKING, Any, ClassVar

from taskyard.core.limits import LimitError, encode_args
from taskyard.core.states import JobState
from taskyard.core.waits import Decision, Kind, WaitError, check_signal, decided, on_timeout
from taskyard.model.errors import Conflict, InvalidInput, NotFound
from taskyard.model.records import JSON, JobRecord, dumps
from taskyard.store.driver.wait_params import EndAwaiting, FirstSignals, SendSignal, StartAwaiting
from taskyard.store.transitions.dependents import Ended, chunks
from taskyard.store.transitions.events import awaiting_ended, job_awaiting

if TYPE_CHECKING:
    from taskyard.store.unit import Tx

TIMEOUTS_PER_CYCLE = 1000
"""Awaiting jobs one cycle ends at their timeout; the rest, the next cycle."""


class Waits:
    """Awaiting jobs (approvals, waits, sleeps) in one transaction."""

    READS: ClassVar[frozenset[str]] = frozenset()
    """Methods a call through the store runs in a read transaction: none."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx

    def started(self, ids: Sequence[int], *, anew: bool = False) -> list[Ended]:
        """Jobs of ``ids`` just became awaiting (inserted so, released by their parents,
        retried): their timeout starts now, they are announced, and a wait takes the
        first signal of its name (and key) sent since it was submitted (``anew``, a
        retry: since now). Returns the waits that so ended (the caller resolves their
        dependents); a job not awaiting any more is left alone."""
        tx = self.tx
        rows = [row for part in chunks(ids)
                for row in tx.driver.start_awaiting(tx.raw, StartAwaiting(part, anew))]
        tx.events.append(
            job_awaiting(job, graph, routing, kind, signal=signal, key=key, deadline=deadline)
            for job, kind, signal, key, _, graph, routing, deadline in rows)
        waits = [(job, signal, key, since)
                 for job, kind, signal, key, since, _, _, _ in rows if kind == Kind.WAIT]
        ended: list[Ended] = []
        found = tx.driver.first_signals(tx.raw, FirstSignals(waits)) if waits else {}
        for job, name, key, _ in waits:
            if job in found:
                _, payload, by = found[job]
                ended += self._end([job], JobState.SUCCEEDED, payload, (Kind.WAIT,),
                                   signal=name, key=key, by=by)
        return ended

    def decide(self, job_id: int, decision: Decision, *, note: str | None,
               by: str | None) -> JobRecord:
        """``job approve`` (succeeded) or ``job deny`` (failed) an awaiting approval; the
        note and who decided go in its result. Conflict when the job is not an awaiting
        approval (nothing changes), NotFound when there is no such job."""
        state = JobState.SUCCEEDED if decision is Decision.APPROVED else JobState.FAILED
        result = decided(decision, note, by)
        ended = self._end([job_id], state, dumps(result), (Kind.APPROVAL,), **result)
        if not ended:
            found = self.tx.driver.read_kind(self.tx.raw, job_id)
            if found is None:
                raise NotFound(f"no job {job_id}")
            kind, now = found
            what = "an approval" if kind == Kind.APPROVAL else f"a {kind}"
            raise Conflict(f"job {job_id} is not an awaiting approval: it is {what}, {now}")
        self._resolve(ended)
        record = self.tx.jobs.get(job_id)
        assert record is not None
        return record

    def signal(self, name: str, key: str | None = None, payload: JSON = None, *,
               by: str | None = None) -> list[int]:
        """Send a signal: stored, and every awaiting wait it matches (its name, and its
        key when the wait has one) succeeds with ``payload`` as its result. Returns the
        ids of the jobs it completed."""
        try:
            name, key = check_signal(name, key)
            text = encode_args({"p": payload}, where="signal payload",
                               limits=self.tx.store.limits)[5:-1]
        except (WaitError, LimitError) as exc:
            raise InvalidInput(str(exc)) from None
        tx = self.tx
        rows = tx.driver.send_signal(tx.raw, SendSignal(name, key, text, by))
        ended = self._announce(rows, JobState.SUCCEEDED, signal=name, key=key, by=by)
        self._resolve(ended)
        return [e.job_id for e in ended]

    def time_out(self, limit: int = TIMEOUTS_PER_CYCLE) -> list[int]:
        """(A step of the cycle) Awaiting jobs past their timeout end, the earliest first:
        an approval or a wait fails, a sleep succeeds. Read through the timer index: the
        number of jobs awaiting costs nothing. Returns those that ended."""
        tx = self.tx
        due = tx.driver.read_due_awaiting(tx.raw, limit)
        ended: list[Ended] = []
        for kind, rows in groupby(sorted(due, key=lambda r: r[1]), key=lambda r: r[1]):
            state, result = on_timeout(kind)
            ended += self._end([job for job, _ in rows], state,
                               None if result is None else dumps(result), (kind,), due=True,
                               **(result or {}))
        self._resolve(ended)
        return [e.job_id for e in ended]

    def _end(self, ids: Sequence[int], state: JobState, result: str | None,
             kinds: Iterable[str], *, due: bool = False, **facts: Any) -> list[Ended]:
        rows = [row for part in chunks(ids) for row in self.tx.driver.end_awaiting(
            self.tx.raw, EndAwaiting(part, state.value, result, tuple(kinds), due))]
        return self._announce(rows, state, **facts)

    def _announce(self, rows: Sequence[tuple[Any, ...]], state: JobState,
                  **facts: Any) -> list[Ended]:
        """The events of awaiting jobs that ended (``rows``: id, graph, routing, kind)."""
        self.tx.events.append(awaiting_ended(job, graph, routing, kind, state.value, **facts)
                              for job, graph, routing, kind in rows)
        return [Ended(job, state, graph) for job, graph, _, _ in rows]

    def _resolve(self, ended: list[Ended]) -> None:
        """Their dependents and graphs follow; the scheduler places what they released."""
        if ended:
            self.tx.dependents.jobs_ended(ended)
            self.tx.notify("scheduler")
