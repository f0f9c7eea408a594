"""A listener's wait ends at once when another thread interrupts it (the worker's stop),
on every kind of listener: a LISTEN connection, the host's shared relay, the polling
listener behind a pooler, SQLite's. An interrupt that comes before the wait ends the
next one; once taken, it ends no other."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator

import pytest

from taskyard.store import Store
from taskyard.store.driver import Listener
from taskyard.store.interrupt import Interrupt
from taskyard.store.postgresql.listen import PollingListener
from taskyard.store.postgresql.shared_listen import RUN_DIR_ENV, SharedListener
from taskyard.store.postgresql.urls import pg_target

LONG = 120.0
"""A wait no test sits through: only an interrupt ends it within the join's deadline."""


def _waited(listener: Listener) -> tuple[threading.Thread, list[bool]]:
    got: list[bool] = []
    thread = threading.Thread(target=lambda: got.append(listener.wait(LONG)), daemon=True)
    thread.start()
    return thread, got


def _check(listener: Listener) -> None:
    try:
        # Interrupted while it waits (it may not have begun yet: then the next wait ends).
        thread, got = _waited(listener)
        listener.interrupt()
        thread.join(60)
        assert not thread.is_alive() and got == [False]
        # Interrupted before it waits.
        listener.interrupt()
        thread, got = _waited(listener)
        thread.join(60)
        assert not thread.is_alive() and got == [False]
        # Taken: the next wait runs its course (a short one).
        assert listener.wait(0.05) is False
    finally:
        listener.close()


def test_a_stores_listener_stops_waiting_when_interrupted(store: Store) -> None:
    _check(store.listener("worker.1"))


@pytest.fixture
def pg_listeners(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    run_dir = tempfile.mkdtemp(prefix="ty-")  # short: a Unix socket's path is bounded
    monkeypatch.setenv(RUN_DIR_ENV, run_dir)
    try:
        yield pg_target(pg_url).libpq()
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


@pytest.mark.parametrize("make", [
    lambda dsn: SharedListener(dsn, "taskyard_worker_1"),
    lambda dsn: PollingListener(every=LONG),
], ids=["shared", "polling"])
def test_the_shared_and_polling_listeners_stop_waiting_when_interrupted(
        pg_listeners: str, make: Callable[[str], Listener]) -> None:
    _check(make(pg_listeners))


def test_an_interrupt_after_close_writes_nowhere() -> None:
    # The worker's stop may fire while its listening thread closes the listener: the
    # pipe's descriptor numbers may by then be another file's (here a new pipe's, which
    # takes the lowest free numbers), and that file must get nothing.
    interrupt = Interrupt()
    interrupt.close()
    read, write = os.pipe()
    try:
        os.set_blocking(read, False)
        interrupt.fire()
        interrupt.close()  # twice: nothing more
        with pytest.raises(BlockingIOError):
            os.read(read, 1)
    finally:
        os.close(read)
        os.close(write)
