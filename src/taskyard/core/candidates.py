"""The order in which a cycle offers pending jobs: one stream per pools list, merged.

Pending jobs are kept per list of pools (as the placement index
``ix_jobs_pending_pools`` keeps them), each stream in placement order (highest
priority, then oldest). A cycle merges the streams whose pools have room: a backlog for
busy pools costs nothing, and jobs for an idle pool are never stuck behind it. A stream
stops being read as soon as its pools have no room left, or after ``per_list`` jobs in
one cycle (the rest wait for the next).

Pure: the streams are anything with :class:`CandidateStream`'s two methods, read from a
database page by page or, in the simulator, from a heap in memory.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

from taskyard.core.placement import Candidate


class CandidateStream(Protocol):
    """Pending jobs of one pools list, in placement order."""

    @property
    def pools(self) -> tuple[str, ...]:
        """The pools list its jobs share."""
        ...

    def peek(self) -> Candidate | None:
        """The next job (not taken), or None when the stream has no more."""
        ...

    def take(self) -> Candidate:
        """Take the job :meth:`peek` returned."""
        ...


def merged(streams: Sequence[CandidateStream], room: Callable[[tuple[str, ...]], bool],
           per_list: int, wanted: Callable[[Candidate], bool] | None = None,
           ) -> Iterator[Candidate]:
    """Jobs of ``streams`` in placement order. A stream whose pools have no ``room`` is
    not read; ``room`` is asked again after each job yielded, once the caller has
    offered it (the generator resumes after the offer); no stream yields more than
    ``per_list`` jobs. ``wanted``: jobs it refuses are passed over, not yielded nor
    counted (the jobs of a rate key out of budget: they are not offered at all)."""
    if wanted is not None:
        streams = [_Wanted(stream, wanted) for stream in streams]
    if len(streams) == 1:  # the usual case between bursts: no heap to keep
        yield from _single(streams[0], room, per_list)
        return
    heap: list[tuple[int, int, int]] = []
    for n, stream in enumerate(streams):
        if room(stream.pools):
            head = stream.peek()
            if head is not None:
                heap.append((-head.priority, head.id, n))
    heapq.heapify(heap)
    read = [0] * len(streams)
    while heap:
        n = heapq.heappop(heap)[2]
        stream = streams[n]
        yield stream.take()
        read[n] += 1
        if read[n] >= per_list or not room(stream.pools):
            continue
        head = stream.peek()
        if head is not None:
            heapq.heappush(heap, (-head.priority, head.id, n))


def _single(stream: CandidateStream, room: Callable[[tuple[str, ...]], bool],
            per_list: int) -> Iterator[Candidate]:
    """:func:`merged` of one stream."""
    pools = stream.pools
    for _ in range(per_list):
        if not room(pools) or stream.peek() is None:
            return
        yield stream.take()


class _Wanted:
    """A stream without the jobs ``wanted`` refuses (asked as each comes to the head)."""

    __slots__ = ("_stream", "_wanted", "pools")

    def __init__(self, stream: CandidateStream, wanted: Callable[[Candidate], bool]) -> None:
        self._stream = stream
        self._wanted = wanted
        self.pools = stream.pools

    def peek(self) -> Candidate | None:
        head = self._stream.peek()
        while head is not None and not self._wanted(head):
            self._stream.take()
            head = self._stream.peek()
        return head

    def take(self) -> Candidate:
        return self._stream.take()
