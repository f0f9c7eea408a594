"""The cycle's candidates: pending jobs of one pools list, read page by page, and the
lists merged into placement order."""

from __future__ import annotations

import collections
import functools
import heapq
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from taskyard.core.locks import decode_claim
from taskyard.core.placement import Candidate
from taskyard.model.records import loads

if TYPE_CHECKING:
    from taskyard.store.cycle import CycleTx


@dataclass(slots=True)
class Stream:
    """Pending jobs of one pools list, read page by page."""

    text: str
    pools: tuple[str, ...]
    buffer: collections.deque[Candidate] = field(default_factory=collections.deque)
    after: tuple[int, int] | None = None
    done: bool = False
    read: int = 0
    first: list[Candidate] | None = None
    """The first page, when it was read with the pools lists (PostgreSQL)."""
    first_page: int = 0
    """The size ``first`` was read with (a list shorter than that has no more)."""

    def key(self) -> tuple[int, int]:
        head = self.buffer[0]
        return (-head.priority, head.id)

    def fill(self, tx: CycleTx, page: int, skip: Collection[tuple[str, str]] = ()) -> bool:
        """Read the next page (without the jobs of the (type, rate key) in ``skip``);
        False when the list has nothing more."""
        if self.done:
            return False
        if self.first is not None:
            batch, self.first = self.first, None
            self.done = len(batch) < self.first_page
        else:
            batch = tx.candidates(self.text, self.after, page, skip)
            self.done = len(batch) < page
        if batch:
            self.after = (batch[-1].priority, batch[-1].id)
            self.buffer.extend(batch)
        return bool(batch)


def merged(tx: CycleTx, lists: list[str], first: list[Candidate] | None, *, first_page: int,
           room: Callable[[tuple[str, ...]], bool], page: int, per_list: int,
           skip: Callable[[], Collection[tuple[str, str]]] = frozenset) -> Iterator[Candidate]:
    """Candidates of every pools list in ``lists``, in placement order (see
    CycleTx.ordered_candidates); ``first``: the first list's first page, when it was
    read ahead (with ``first_page`` rows at most). ``skip()``: (type, rate key) whose
    jobs later pages leave out."""
    heap: list[tuple[int, int, int, Stream]] = []
    for n, text in enumerate(lists):
        stream = Stream(text, pools_of(text), first=first if n == 0 else None,
                        first_page=first_page)
        if room(stream.pools) and stream.fill(tx, page, skip()):
            heap.append((*stream.key(), n, stream))
    heapq.heapify(heap)
    while heap:
        _, _, n, stream = heapq.heappop(heap)
        job = stream.buffer.popleft()
        spent = skip()
        if not spent or (job.type, job.rate_key or "") not in spent:
            stream.read += 1
            yield job
        if stream.read >= per_list or not room(stream.pools):
            continue
        if stream.buffer or stream.fill(tx, page, skip()):
            heapq.heappush(heap, (*stream.key(), n, stream))



def to_candidates(rows: Sequence[Sequence[Any]]) -> list[Candidate]:
    """Candidates from rows of (id, type, priority, pools, cost, locks, rate_key)."""
    return [Candidate(job, type_, priority, pools_of(text), cost, claims(locks), rate_key)
            for job, type_, priority, text, cost, locks, rate_key in rows]


@functools.lru_cache(maxsize=4096)
def claims(text: str) -> tuple[Any, ...]:
    # Cached: the same few lock and pool texts recur across thousands of jobs.
    return tuple(decode_claim(c) for c in loads(text))


@functools.lru_cache(maxsize=4096)
def pools_of(text: str) -> tuple[str, ...]:
    return tuple(loads(text))
