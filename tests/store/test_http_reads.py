"""The store reads added for the HTTP API (store/reads/job_pages.py, event_pages.py,
metrics.py, tokens.py), on both stores."""

from __future__ import annotations

import pytest
from sqlalchemy import insert
from tests.polling import wait_for

from taskyard.model.errors import Conflict, InvalidInput, NotFound
from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.store import Store
from taskyard.store import schema as t
from taskyard.store.reads.job_pages import list_job_page, states_by_graph
from taskyard.store.reads.metrics import jobs_by_state, pending_by_type, recent_endings
from taskyard.store.transitions.tokens import create_token, find_token, list_tokens, revoke_token


def _events(store: Store, stamps: list[tuple[int, float]]) -> None:
    rows = [{"id": i, "topic": "job-completed", "routing_key": "taskyard._._._",
             "payload": "{}", "created_at": at} for i, at in stamps]
    with store.engine.begin() as conn:
        conn.execute(insert(t.events), rows)


def test_a_cursor_since_a_time_starts_at_the_first_event_at_or_after(store: Store) -> None:
    assert store.events.committed(store.events.cursor_since(100.0)).events == []
    # Ids with gaps (pruned or rolled back), times growing with the ids.
    _events(store, [(3, 10.0), (4, 20.0), (9, 20.0), (10, 30.0), (17, 40.0), (40, 50.0)])
    # PostgreSQL shows them once older transactions on the server (other tests') end.
    wait_for("the events", lambda: len(store.events.committed().events) == 6)
    for when, first in ((0.0, 3), (10.0, 3), (15.0, 4), (20.0, 4), (25.0, 10), (30.0, 10),
                        (45.0, 40), (50.0, 40)):
        page = store.events.committed(store.events.cursor_since(when), limit=1)
        assert [e.id for e in page.events] == [first], when
    assert store.events.committed(store.events.cursor_since(51.0)).events == []
    assert [e.id for e in store.events.last(2).events] == [17, 40]


def test_job_pages_counts_and_tokens(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("a", "shell:true", pools=("p",)))
    ids = store.jobs.submit([JobSubmission("a") for _ in range(5)])
    first = list_job_page(store, limit=2)
    assert [j.id for j in first.items] == ids[:-3:-1] and first.next_after == ids[3]
    second = list_job_page(store, limit=2, after=first.next_after)
    third = list_job_page(store, limit=2, after=second.next_after)
    assert [j.id for j in second.items + third.items] == ids[2::-1] and third.next_after is None
    assert [j.id for j in list_job_page(store, oldest_first=True, limit=10).items] == ids
    with pytest.raises(InvalidInput, match="state"):
        list_job_page(store, state="asleep")
    graph = store.graphs.submit({"tasks": {"x": {"type": "a"}, "y": {"type": "a",
                                                                    "requires": ["x"]}}})
    assert states_by_graph(store, [graph, 999]) == {graph: {"pending": 1, "waiting": 1},
                                                    999: {}}
    assert jobs_by_state(store)["pending"] == 6 and jobs_by_state(store)["failed"] == 0
    assert pending_by_type(store) == {"a": 6}
    assert recent_endings(store, 60.0) == {"job-completed": 0, "job-failed": 0,
                                           "job-exception": 0}
    made = create_token(store, "ci", "read", "h" * 64)
    with pytest.raises(Conflict):
        create_token(store, "ci", "write", "g" * 64)
    with pytest.raises(InvalidInput, match="scope"):
        create_token(store, "other", "root", "f" * 64)
    assert find_token(store, "h" * 64) == made
    revoke_token(store, "ci")
    with pytest.raises(NotFound):
        revoke_token(store, "ci")
    assert find_token(store, "h" * 64).revoked  # type: ignore[union-attr]
    create_token(store, "ci", "write", "g" * 64)  # the name is free again
    assert [(tk.name, tk.revoked) for tk in list_tokens(store)] == [("ci", True), ("ci", False)]
