"""A finished unit of work leaves its connection alone (issue 23: HTTP 500 ``InterfaceError:
bad parameter or other API misuse`` under concurrent submits on SQLite).

A unit of work's objects refer to each other (``tx.events.tx is tx``): they are freed by
the garbage collector, in whichever thread collects, at any time — by then the pool has
handed their connection to another unit of work, maybe in another thread. A cursor left
open then resets its last statement, which sqlite3 caches per connection and which that
other unit of work may be running at that instant: sqlite3's bookkeeping of the statement
goes wrong, the statement is left un-reset in the cache, and the next unit of work that
runs it fails. Here the collection happens in another thread at that instant: the
statement's parameter, as sqlite3 binds it, lets the collector run and waits for it.
"""

from __future__ import annotations

import gc
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from taskyard.store import Store, open_store
from taskyard.store.transitions.events import Event

WAIT = 60.0
"""Seconds a handshake between the threads may take at most (a generous deadline)."""


@pytest.fixture
def sqlite_store(sqlite_template: Path, tmp_path: Path) -> Iterator[Store]:
    """SQLite only: the statement cache in question is sqlite3's."""
    path = tmp_path / "taskyard.db"
    shutil.copyfile(sqlite_template, path)
    store = open_store(f"sqlite:///{path}")
    yield store
    store.close()


class Collector:
    """A thread that collects garbage when asked, and says when it is done."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        if self.asked.wait(WAIT):
            gc.collect()
            self.done.set()

    def collect_now(self) -> None:
        self.asked.set()
        assert self.done.wait(WAIT), "the collector thread did not collect"


class CollectedWhileBound(str):
    """An event payload that has another thread collect garbage while sqlite3 binds it
    (sqlite3 asks a ``str`` subclass to adapt itself: ``__conform__``)."""

    collector: Collector

    def __conform__(self, _protocol: Any) -> str:
        self.collector.collect_now()
        return str(self)


def _event(payload: str) -> list[Event]:
    return [("test-event", "test", payload, None, None)]


def test_a_finished_unit_of_work_never_touches_its_connection_again(
        sqlite_store: Store) -> None:
    collector = Collector()
    payload = CollectedWhileBound("{}")
    payload.collector = collector
    enabled = gc.isenabled()
    gc.disable()  # the first unit's leftovers wait for the collector thread
    try:
        with sqlite_store.write() as tx:
            tx.events.append(_event("{}"))
            first = tx.conn.connection.dbapi_connection
        # The same statement, on the same pooled connection, in another unit of work.
        with sqlite_store.write() as tx:
            assert tx.conn.connection.dbapi_connection is first
            tx.events.append(_event(payload))
        assert collector.done.is_set()
        collector.thread.join(WAIT)
        # Was the cached statement left in a state where this fails?
        with sqlite_store.write() as tx:
            tx.events.append(_event("{}"))
    finally:
        if enabled:
            gc.enable()
    assert [e.payload for e in sqlite_store.events.list(topic="test-event")] == [{}, {}, {}]
