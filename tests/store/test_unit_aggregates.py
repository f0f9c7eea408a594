"""Store.<aggregate> (one operation, one transaction): each aggregate lists the methods
that only read (``READS``, ``READS_EACH``), and a call through the store runs them in a
read transaction — one that never waits for writers on SQLite."""

from __future__ import annotations

import threading

import pytest

from taskyard.model.records import TaskTypeSpec
from taskyard.store import Store
from taskyard.store.transitions.aging import Aging
from taskyard.store.transitions.attempts import Attempts
from taskyard.store.transitions.events import Events
from taskyard.store.transitions.graphs import Graphs
from taskyard.store.transitions.jobs import Jobs
from taskyard.store.transitions.outbox import Outbox
from taskyard.store.transitions.retries import Retries
from taskyard.store.transitions.schedule_runs import ScheduleRuns
from taskyard.store.transitions.schedules import Schedules
from taskyard.store.transitions.stages import Stages
from taskyard.store.transitions.task_types import TaskTypes
from taskyard.store.transitions.workers import Workers

AGGREGATES = (Aging, Attempts, Events, Graphs, Jobs, Outbox, Retries, ScheduleRuns,
              Schedules, Stages, TaskTypes, Workers)


@pytest.mark.parametrize("cls", AGGREGATES, ids=lambda c: c.__name__)
def test_every_method_listed_as_a_read_exists(cls: type) -> None:
    listed = cls.READS | getattr(cls, "READS_EACH", frozenset())  # type: ignore[attr-defined]
    assert all(callable(getattr(cls, name, None)) for name in listed), listed


def test_a_read_through_the_store_does_not_wait_for_a_writer(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("t", "python:handlers_for_tests:echo"))
    if store.backend != "sqlite":
        pytest.skip("PostgreSQL's readers never wait for writers")
    got: list[object] = []
    with store.write():  # holds SQLite's write lock: a write transaction would queue
        reader = threading.Thread(target=lambda: got.append(store.task_types.get("t")))
        reader.start()
        reader.join(10)
        waited = reader.is_alive()
    reader.join(30)
    assert not waited and got and got[0] is not None
