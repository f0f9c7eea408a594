"""A graph's timeline and its critical path (pure core), property-tested."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from taskyard.core.timeline import Node, Span, Timeline, build_timeline, critical_path

NOW = 10_000.0


@st.composite
def runs(draw: st.DrawFn) -> list[Node]:
    """A DAG (parents have lower ids) with times: created, maybe started, maybe ended."""
    count = draw(st.integers(0, 12))
    nodes = []
    for i in range(1, count + 1):
        requires = tuple(sorted(draw(st.sets(st.integers(1, i - 1), max_size=3))
                                if i > 1 else ()))
        created = draw(st.floats(0, 100))
        started = draw(st.none() | st.floats(created, 5_000))
        finished = (None if started is None
                    else draw(st.none() | st.floats(started, 9_000)))
        nodes.append(Node(i, created, started, finished, requires))
    return nodes


def _ends(timeline: Timeline) -> dict[int, float | None]:
    return {s.id: s.end for s in timeline.spans}


@given(runs())
def test_the_critical_path_is_the_chain_back_from_the_last_end(nodes: list[Node]) -> None:
    timeline = build_timeline(nodes, NOW)
    by_id = {n.id: n for n in nodes}
    ends = _ends(timeline)
    started = [i for i, e in ends.items() if e is not None]
    path = timeline.critical
    if not started:
        assert path == ()
        assert timeline.finish is None
        return
    # It ends at the job that ended last, and only started jobs are on it.
    assert ends[path[-1]] == max(e for e in ends.values() if e is not None)
    assert timeline.finish == ends[path[-1]]
    assert all(ends[i] is not None for i in path)
    # Each step goes from a parent to its child, and that parent ended last of the
    # child's started parents.
    for parent, child in itertools.pairwise(path):
        assert parent in by_id[child].requires
        others = [ends[p] for p in by_id[child].requires if ends[p] is not None]
        assert ends[parent] == max(e for e in others if e is not None)
    # It begins at a job none of whose parents started.
    assert all(ends[p] is None for p in by_id[path[0]].requires)
    assert len(set(path)) == len(path)


@given(runs())
def test_spans_are_ready_after_their_parents_and_never_negative(nodes: list[Node]) -> None:
    timeline = build_timeline(nodes, NOW)
    ends = _ends(timeline)
    for node, span in zip(nodes, timeline.spans, strict=True):
        assert span.id == node.id
        assert span.ready >= node.created_at
        for parent in node.requires:
            if ends[parent] is not None:
                assert span.ready >= ends[parent]  # type: ignore[operator]
        assert span.running == (node.started_at is not None and node.finished_at is None)
        if node.started_at is None:
            assert span.duration is None and span.wait is None and span.end is None
        else:
            assert span.duration is not None and span.duration >= 0
            assert span.wait is not None and span.wait >= 0
            assert span.end == (NOW if node.finished_at is None else node.finished_at)
    assert timeline.begin == min((n.created_at for n in nodes), default=None)
    assert timeline.critical_seconds >= 0
    # A real run starts a job after its parents ended: then its critical path fits
    # in the time from the first start to the last end.
    if timeline.finish is not None and all(
            s.start is None or s.start >= s.ready for s in timeline.spans):
        assert timeline.critical_seconds <= timeline.finish - min(
            s.start for s in timeline.spans if s.start is not None) + 1e-6


def test_a_diamond_follows_the_slow_branch() -> None:
    nodes = [Node(1, 0, 1, 2), Node(2, 0, 2, 10, (1,)), Node(3, 0, 2, 4, (1,)),
             Node(4, 0, 11, 12, (2, 3))]
    timeline = build_timeline(nodes, NOW)
    assert timeline.critical == (1, 2, 4)
    assert timeline.critical_seconds == 1 + 8 + 1
    assert timeline.spans[3] == Span(4, 10, 11, 12, False)
    assert timeline.spans[3].wait == 1


def test_a_running_job_ends_now_and_a_cycle_does_not_loop() -> None:
    assert build_timeline([Node(1, 0, 5)], NOW).spans[0].end == NOW
    looped = {1: Node(1, 0, 1, 2, (2,)), 2: Node(2, 0, 1, 3, (1,))}
    assert critical_path(looped, {1: 2.0, 2: 3.0}) == (1, 2)
    assert build_timeline([], NOW) == Timeline((), (), None, None)
