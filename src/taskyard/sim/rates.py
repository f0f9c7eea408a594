"""Rate limits in the simulator, as the cycle applies them (:mod:`taskyard.core.rate_limits`).

Each cycle gets a :class:`~taskyard.core.rate_limits.RateBook` over the starts of the
run so far, which the :class:`~taskyard.core.placement.Planner` consults (its budget,
its refusals) exactly as in the real cycle; candidates reach the Planner through
:func:`~taskyard.core.candidates.merged` with the same ``wanted`` filter. After the
cycle, its starts are recorded (at the cycle's instant, as the store records them in
``rate_starts``), and a cycle is due when the first key it refused reopens (the
scheduler wakes then: ``CycleReport.rate_wait``).

Pending jobs of rate-limited types are kept per (type, key) in a :class:`KeyedStream`,
which leaves out the jobs of keys the cycle found out of budget, as the store leaves
them out in SQL (``CycleTx.candidates``' ``skip``): a backlog held by a rate limit
costs the cycle nothing, as in the store.
"""

from __future__ import annotations

import heapq
import math
from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from taskyard.core.placement import Candidate, Planner
from taskyard.core.rate_limits import RateBook, RateLimit, RateLimitError, render_rate_key
from taskyard.sim.fields import ScenarioError
from taskyard.sim.model import PendingStream

if TYPE_CHECKING:
    from taskyard.sim.model import SimJob
    from taskyard.sim.specs import TypeSpec

RateKey = tuple[str, str]
"""(type, rate key): one budget (``""``: the type's only key)."""


def render_key(spec: TypeSpec, args: Mapping[str, object]) -> str:
    """The rate key of a job of ``spec`` with ``args``, rendered as a submit does."""
    assert spec.rate_key is not None
    try:
        return render_rate_key(spec.rate_key, args)
    except RateLimitError as exc:
        raise ScenarioError(f"task_types.{spec.name}.{exc}") from None


def rate_key_of(job: SimJob) -> RateKey:
    return job.type.name, job.cand.rate_key or ""


class RateStats:
    """What one (type, key)'s limit held back: cycles that found it out of budget, jobs
    the Planner refused for it, and the jobs that waited on it (from the first cycle
    that held them back until they started)."""

    __slots__ = ("cycles", "jobs", "limit", "seconds", "skips", "spent_at")

    def __init__(self, limit: RateLimit) -> None:
        self.limit = limit
        self.cycles = 0
        self.skips = 0
        self.jobs = 0
        self.seconds = 0.0
        self.spent_at: array[float] = array("d")
        """The instants of those cycles, in order."""


class SimRates:
    """The rate limits of one run: the starts of each key, and each cycle's RateBook."""

    def __init__(self, planner: Planner, later: Callable[[float, Callable[[None], None]], None],
                 limits: Mapping[str, RateLimit]) -> None:
        """``later(when, handler)``: the run's event queue (a cycle then)."""
        self.planner = planner
        self.later = later
        self.limits = dict(limits)
        self.book = RateBook(self.limits, 0.0, self._recent)
        self.stats: dict[RateKey, RateStats] = {}
        self._starts: dict[RateKey, deque[float]] = {}
        """The newest starts of each key (as many as its limit: enough to decide)."""
        self._wake: float | None = None
        """A cycle due at this instant (a key reopens then)."""

    def _recent(self, type_name: str, key: str, limit: RateLimit) -> Sequence[float]:
        return self._starts.get((type_name, key), ())

    def open(self, now: float) -> Callable[[Candidate], bool]:
        """A cycle starts at ``now``: its RateBook, given to the Planner; returns the
        ``wanted`` filter of :func:`merged`, the store's."""
        book = self.book = RateBook(self.limits, now, self._recent)
        self.planner.rates = book
        return lambda job: (job.type, job.rate_key or "") not in book.spent

    def spent(self) -> Collection[RateKey]:
        """The keys out of budget in the current cycle."""
        return self.book.spent

    def refused(self, job: SimJob) -> None:
        """The Planner refused ``job`` for its rate limit."""
        self._stats(rate_key_of(job)).skips += 1

    def close(self) -> None:
        """The cycle ended: record its starts, note the keys it held back, and make
        sure a cycle runs when the first of them reopens."""
        book, now = self.book, self.book.now
        for key in book.started:
            starts = self._starts.get(key)
            if starts is None:
                starts = self._starts[key] = deque(maxlen=self.limits[key[0]].count)
            starts.append(now)
        for key in book.spent:
            stats = self._stats(key)
            stats.cycles += 1
            stats.spent_at.append(now)
        soonest = book.soonest
        if soonest is not None:
            # Not at this very instant, whatever the rounding of start + window.
            soonest = max(soonest, math.nextafter(now, math.inf))
            if self._wake is None or self._wake <= now or soonest < self._wake:
                self._wake = soonest
                self.later(soonest, _wake_up)

    def first_start(self, job: SimJob, now: float) -> None:
        """``job`` of a limited type starts for the first time: if a cycle held its key
        back since it was ready, it waited on the limit from then."""
        stats = self.stats.get(rate_key_of(job))
        if stats is None or job.ready is None:
            return
        held = stats.spent_at
        first = bisect_left(held, job.ready)
        if first < len(held):
            stats.jobs += 1
            stats.seconds += now - held[first]

    def _stats(self, key: RateKey) -> RateStats:
        stats = self.stats.get(key)
        if stats is None:
            stats = self.stats[key] = RateStats(self.limits[key[0]])
        return stats


def _wake_up(_: object) -> None:
    """Nothing happens: the instant only runs a cycle (see Simulation.run)."""


class KeyedStream:
    """Due pending jobs of one pools list, in placement order, for a run with rate
    limits: the jobs of limited types are kept per (type, key), and a key out of budget
    in the current cycle is passed over whole (the store's ``skip``). Between cycles,
    it reads as a :class:`~taskyard.sim.model.PendingStream` does."""

    __slots__ = ("_from", "_heads", "_parked", "_touched", "free", "keyed", "pools", "rates")

    def __init__(self, pools: tuple[str, ...], rates: SimRates) -> None:
        self.pools = pools
        self.rates = rates
        self.free = PendingStream(pools)
        """Jobs of types without a rate limit."""
        self.keyed: dict[RateKey, PendingStream] = {}
        self._heads: list[tuple[int, int, RateKey]] = []
        """(-priority, id, key) of the keyed streams' heads (stale ones are dropped)."""
        self._parked: set[RateKey] = set()
        """Keys passed over in this cycle (their heads go back at its end)."""
        self._touched: set[RateKey] = set()
        self._from: PendingStream = self.free

    @property
    def heap(self) -> bool:
        """Anything to read (stale entries included, as PendingStream.heap)."""
        return bool(self.free.heap or self._heads)

    def push(self, job: SimJob) -> None:
        if job.type.rate_limit is None:
            self.free.push(job)
            return
        key = rate_key_of(job)
        stream = self.keyed.get(key)
        if stream is None:
            stream = self.keyed[key] = PendingStream(self.pools)
        stream.push(job)
        heapq.heappush(self._heads, (-job.priority, job.id, key))

    def peek(self) -> Candidate | None:
        free = self.free.peek()
        keyed = self._keyed_head()
        if keyed is not None and (free is None or (-keyed.priority, keyed.id)
                                  < (-free.priority, free.id)):
            self._from = self.keyed[(keyed.type, keyed.rate_key or "")]
            return keyed
        self._from = self.free
        return free

    def _keyed_head(self) -> Candidate | None:
        heads, spent = self._heads, self.rates.spent()
        while heads:
            priority, job_id, key = heads[0]
            if key in spent:
                heapq.heappop(heads)
                self._parked.add(key)
                continue
            head = self.keyed[key].peek()
            if head is not None and head.id == job_id and head.priority == -priority:
                return head
            heapq.heappop(heads)  # stale: the key's head is another job now
            if head is not None:
                heapq.heappush(heads, (-head.priority, head.id, key))
        return None

    def take(self) -> Candidate:
        """The job :meth:`peek` returned."""
        stream = self._from
        job = stream.take()
        if stream is not self.free:
            key = (job.type, job.rate_key or "")
            self._touched.add(key)
            head = stream.peek()
            if head is not None:
                heapq.heappush(self._heads, (-head.priority, head.id, key))
        return job

    def end_cycle(self, put_back: bool) -> None:
        """After a cycle: what it read and left waits for the next one (``put_back``),
        and the keys it passed over are read again."""
        self.free.end_cycle(put_back)
        for key in self._touched | self._parked:
            stream = self.keyed[key]
            stream.end_cycle(put_back)
            head = stream.peek()
            if head is not None and (put_back or key in self._parked):
                heapq.heappush(self._heads, (-head.priority, head.id, key))
        self._touched.clear()
        self._parked.clear()
