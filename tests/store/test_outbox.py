"""The outbox's positions and job facts, on both stores."""

from __future__ import annotations

from tests.store.driver import drive

from taskyard.api.yard import Yard
from taskyard.core.amqp import JobFacts
from taskyard.store import Store
from taskyard.store.transitions.events import START, EventCursor


def test_a_follower_starts_before_every_event_and_only_moves_forward(store: Store) -> None:
    assert store.outbox.position("amqp") == START
    assert store.outbox.advance("amqp", EventCursor(5, 10))
    assert store.outbox.position("amqp") == EventCursor(5, 10)
    # A stale follower of the same name cannot move it back, nor to where it is.
    assert not store.outbox.advance("amqp", EventCursor(5, 9))
    assert not store.outbox.advance("amqp", EventCursor(4, 99))
    assert not store.outbox.advance("amqp", EventCursor(5, 10))
    assert store.outbox.advance("amqp", EventCursor(5, 11))
    assert store.outbox.advance("amqp", EventCursor(6, 1))
    assert store.outbox.position("amqp") == EventCursor(6, 1)
    # Followers are independent.
    assert store.outbox.position("other") == START
    with store.write() as tx:
        tx.outbox.advance("other", EventCursor(0, 3))
    positions = store.outbox.positions()
    assert sorted(positions) == ["amqp", "other"]
    assert positions["other"][0] == EventCursor(0, 3)
    assert positions["other"][1] > 0


def test_job_facts_name_the_type_and_the_attempts_worker(db_url: str, clock) -> None:
    yard = Yard(db_url, clock=clock)
    store = yard.store
    yard.add_task_type("resize", handler="python:tests.handlers_for_tests:echo")
    job = yard.submit("resize", args={"n": 1})
    drive(store, worker="w.one")
    facts = store.outbox.job_facts([(job, None), (job, 1), (job, 7), (10**9, 1)])
    assert facts[(job, None)] == JobFacts("resize", None, None)
    host = facts[(job, 1)].host
    assert facts[(job, 1)] == JobFacts("resize", host, "w.one")
    assert facts[(job, 7)] == JobFacts("resize", None, None)
    assert (10**9, 1) not in facts
    assert store.outbox.job_facts([]) == {}
    yard.close()
