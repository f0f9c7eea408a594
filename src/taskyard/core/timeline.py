"""A graph's run as a timeline (a Gantt chart): when each job became ready, started and
ended, and the critical path — the chain of jobs that decided when the graph ended.

Pure: the caller passes the jobs' times (epoch seconds) and ``now`` (the database
clock), which stands in for the end of what still runs.

The critical path is the path of a finished run, as build systems show it (Buildkite,
Bazel's critical path): start from the job that ended last and step back, each time to
the parent that ended last — the one the child was waiting for — until a job without
a parent. Its length is the graph's span minus the time no job of the path ran
(waiting for a worker). Jobs that never started take no part.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Node:
    """One job of the graph as recorded: ``requires`` lists parents inside the graph."""

    id: int
    created_at: float
    started_at: float | None = None
    finished_at: float | None = None
    requires: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Span:
    """A job on the timeline. ``ready``: when its last parent ended (its creation
    without one); ``end``: when it ended, ``now`` while it runs, None if it never
    started."""

    id: int
    ready: float
    start: float | None
    end: float | None
    running: bool

    @property
    def duration(self) -> float | None:
        """Seconds it ran (so far), None if it never started."""
        return None if self.start is None or self.end is None else max(self.end - self.start, 0.0)

    @property
    def wait(self) -> float | None:
        """Seconds between ready and started (None if it never started)."""
        return None if self.start is None else max(self.start - self.ready, 0.0)


@dataclass(frozen=True, slots=True)
class Timeline:
    """Every job's span, in the order given; the critical path, first job first; the
    graph's first creation and last end (``now`` while something runs)."""

    spans: tuple[Span, ...]
    critical: tuple[int, ...]
    begin: float | None
    finish: float | None

    @property
    def critical_seconds(self) -> float:
        """Seconds the jobs of the critical path ran, in all."""
        by_id = {s.id: s for s in self.spans}
        return sum(by_id[i].duration or 0.0 for i in self.critical)


def build_timeline(nodes: Sequence[Node], now: float) -> Timeline:
    """The timeline of ``nodes`` (ids unique; parents outside ``nodes`` are ignored)."""
    by_id: dict[int, Node] = {n.id: n for n in nodes}
    ends = {n.id: _end(n, now) for n in nodes}
    spans = tuple(_span(n, by_id, ends, now) for n in nodes)
    begin = min((n.created_at for n in nodes), default=None)
    finish = max((e for e in ends.values() if e is not None), default=None)
    return Timeline(spans, critical_path(by_id, ends), begin, finish)


def _end(node: Node, now: float) -> float | None:
    if node.started_at is None:
        return None
    return node.finished_at if node.finished_at is not None else max(now, node.started_at)


def _span(node: Node, by_id: Mapping[int, Node], ends: Mapping[int, float | None],
          now: float) -> Span:
    parent_ends = [e for p in node.requires if p in by_id and (e := ends[p]) is not None]
    ready = max([node.created_at, *parent_ends])
    return Span(node.id, ready, node.started_at, ends[node.id],
                node.started_at is not None and node.finished_at is None)


def critical_path(by_id: Mapping[int, Node], ends: Mapping[int, float | None]) -> tuple[int, ...]:
    """The chain that ends at the job that ended last (highest id on a tie), each step
    back to the parent that ended last (highest id on a tie), started jobs only."""
    last = _latest(ends, by_id.keys())
    if last is None:
        return ()
    path = [last]
    seen = {last}
    while True:
        parent = _latest(ends, (p for p in by_id[path[-1]].requires
                                if p in by_id and p not in seen))
        if parent is None:
            return tuple(reversed(path))
        path.append(parent)
        seen.add(parent)


def _latest(ends: Mapping[int, float | None], ids: Iterable[int]) -> int | None:
    found: tuple[float, int] | None = None
    for i in ids:
        end = ends.get(i)
        if end is not None and (found is None or (end, i) > found):
            found = (end, i)
    return None if found is None else found[1]
