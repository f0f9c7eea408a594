"""Waits borrow their listener from a pool kept between waits (store/listener_pool.py),
on both stores: a borrowed listener hears every commit after it was lent and nothing
from while it was paused; a wait opens no connection of its own; a listener whose
connection was lost is not lent again as it was; the pool closes with the store; a
waiter reads the job's state alone until the job has ended."""

from __future__ import annotations

import contextlib
import threading

import pytest
from sqlalchemy import text
from tests.polling import wait_for

from taskyard.api.yard import Yard
from taskyard.model.errors import NotFound
from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.store import Store
from taskyard.store.listener_pool import KEEP


@pytest.fixture
def typed(store: Store) -> Store:
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    return store


def _submit(store: Store) -> int:
    (job_id,) = store.jobs.submit([JobSubmission("t", {})])
    return job_id


def _paused_backends(store: Store) -> int:
    """Sessions of this database whose last statement paused a listener."""
    with store.engine.connect() as conn:
        return int(conn.execute(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND query LIKE 'UNLISTEN%'")).scalar_one())


def test_a_borrowed_listener_hears_commits_after_it_was_lent(typed: Store) -> None:
    with typed.borrow_listener("events") as listener:
        assert not listener.wait(0)
        _submit(typed)
        assert listener.wait(10.0)


def test_the_same_listener_is_lent_again_deaf_to_what_came_while_paused(
        typed: Store) -> None:
    with typed.borrow_listener("events") as first:
        pass
    _submit(typed)  # commits an event while the listener is paused
    with typed.borrow_listener("events") as second:
        assert second is first
        assert not second.wait(0)  # nothing of before it was lent again
        _submit(typed)
        assert second.wait(10.0)


def test_waits_at_once_get_listeners_of_their_own_and_a_few_are_kept(
        typed: Store) -> None:
    lent: list[object] = []
    ready = threading.Barrier(KEEP + 2)

    def borrow() -> None:
        with typed.borrow_listener("events") as listener:
            lent.append(listener)
            ready.wait(30)  # all lent at once

    threads = [threading.Thread(target=borrow) for _ in range(KEEP + 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len({id(one) for one in lent}) == KEEP + 2
    with contextlib.ExitStack() as stack:
        again = [stack.enter_context(typed.borrow_listener("events"))
                 for _ in range(KEEP + 1)]
        assert len([one for one in again if any(one is kept for kept in lent)]) == KEEP


def test_pg_a_wait_opens_no_connection_of_its_own(db_url: str) -> None:
    if db_url.startswith("sqlite"):
        pytest.skip("a SQLite listener opens a file, not a server session")
    yard = Yard(db_url)
    try:
        yard.add_task_type("t", "shell:true")
        job_id = yard.submit("t")
        yard.cancel(job_id)
        with yard.store.engine.connect() as conn:
            sessions = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            yard.wait(job_id, 30)
            before = conn.execute(text(sessions)).scalar_one()
            for _ in range(3):
                yard.wait(job_id, 30)
            assert conn.execute(text(sessions)).scalar_one() == before
        assert _paused_backends(yard.store) == 1
    finally:
        yard.close()


def test_pg_a_listener_whose_session_ended_reports_a_wakeup_then_listens_again(
        typed: Store) -> None:
    if typed.backend == "sqlite":
        pytest.skip("a SQLite listener has no server session")
    with typed.borrow_listener("events"):
        pass
    with typed.engine.begin() as conn:
        conn.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                          "datname = current_database() AND query LIKE 'UNLISTEN%'"))
    with typed.borrow_listener("events") as listener:
        assert listener.wait(10.0)  # a reconnection: the waiter must look for itself
        assert not listener.wait(0)
        _submit(typed)
        assert listener.wait(10.0)


def test_pg_the_paused_listeners_close_with_the_store(typed: Store) -> None:
    if typed.backend == "sqlite":
        pytest.skip("a SQLite listener has no server session")
    with typed.borrow_listener("events"):
        pass
    assert _paused_backends(typed) == 1
    typed.close()
    wait_for("the paused listener's session to end", lambda: _paused_backends(typed) == 0)


def test_a_waiter_reads_the_state_until_the_job_ended(typed: Store) -> None:
    job_id = _submit(typed)
    assert typed.jobs.ended(job_id) is None
    typed.jobs.cancel(job_id)
    job = typed.jobs.ended(job_id)
    assert job is not None and job.state == "canceled" and job.id == job_id
    with pytest.raises(NotFound):
        typed.jobs.ended(job_id + 1000)
