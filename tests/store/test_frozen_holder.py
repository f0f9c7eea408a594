"""A session holding the cycle's lock while its client is frozen in the middle of a
pipeline (docs/operations/ha.md): the server arms its idle limits only at a Sync, so
Store.end_frozen_cycle_holder ends that session; it leaves alone every other holder and
every other frozen session."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import psycopg
import pytest
from tests.cycle_lock import frozen_mid_pipeline, lock_holder
from tests.polling import wait_for

from taskyard.store import Store, open_store
from taskyard.store.postgresql.cycle import ADVISORY_KEY
from taskyard.store.postgresql.urls import pg_target

OTHER_KEY = 12345


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[Store]:
    s = open_store(pg_url)
    yield s
    s.close()


def _libpq(store: Store) -> str:
    return pg_target(store.url).libpq()


def _activity(store: Store, pid: int) -> tuple[str | None, str | None, float] | None:
    """The session ``pid`` as the server reports it: its state, its wait event and the
    seconds since its state last changed; None once it is gone."""
    with psycopg.connect(_libpq(store), autocommit=True) as c:
        row = c.execute("SELECT state, wait_event, "
                        "extract(epoch FROM clock_timestamp() - state_change)::float8 "
                        "FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
    return None if row is None else (row[0], row[1], float(row[2] or 0.0))


def _session_alive(store: Store, pid: int) -> bool:
    return _activity(store, pid) is not None


def _cycle_runs(store: Store) -> bool:
    with store.cycle() as cycle:
        return cycle is not None


def test_a_holder_frozen_mid_pipeline_is_ended_and_the_cycle_runs_again(
        pg_store: Store) -> None:
    with frozen_mid_pipeline(_libpq(pg_store)) as frozen:
        pid = frozen.info.backend_pid
        assert not _cycle_runs(pg_store)  # the lock is the frozen client's
        # Not before its client has kept it waiting longer than the limit (an hour here,
        # 0.2 s below).
        assert pg_store.end_frozen_cycle_holder(3600.0) == []
        ended = wait_for("the frozen holder ended",
                         lambda: pg_store.end_frozen_cycle_holder(0.2), timeout=60)
        assert ended == [pid]
        wait_for("its session gone", lambda: not _session_alive(pg_store, pid), timeout=60)
        assert _cycle_runs(pg_store)


def test_a_frozen_session_without_the_cycle_lock_is_left_alone(pg_store: Store) -> None:
    with frozen_mid_pipeline(_libpq(pg_store), OTHER_KEY) as frozen:
        pid = frozen.info.backend_pid
        wait_for("its client late by more than 0.2 s",
                 lambda: _waiting_since(pg_store, pid) > 0.2, timeout=60)
        assert pg_store.end_frozen_cycle_holder(0.1) == []
        assert _session_alive(pg_store, pid)
        assert _cycle_runs(pg_store)


def _waiting_since(store: Store, pid: int) -> float:
    """Seconds the session ``pid`` has waited for its client (0: it does not)."""
    found = _activity(store, pid)
    return found[2] if found is not None and found[1] == "ClientRead" else 0.0


def test_a_holder_at_work_or_idle_in_its_transaction_is_left_alone(pg_store: Store) -> None:
    """One running a statement is at work; one idle in its transaction is the server's to
    end (after its own limit, which the cycle's lock statement sets)."""
    with psycopg.connect(_libpq(pg_store)) as idle:
        assert idle.execute(f"SELECT pg_try_advisory_xact_lock({ADVISORY_KEY})").fetchone() \
            == (True,)
        pid = idle.info.backend_pid
        wait_for("idle in its transaction", lambda: _state(pg_store, pid)
                 == "idle in transaction", timeout=60)
        assert pg_store.end_frozen_cycle_holder(0.0) == []
        assert _session_alive(pg_store, pid)
        idle.rollback()

    with psycopg.connect(_libpq(pg_store)) as busy:
        done = threading.Event()

        def work() -> None:  # at work until canceled
            with contextlib.suppress(psycopg.errors.QueryCanceled):
                busy.execute(f"SELECT pg_try_advisory_xact_lock({ADVISORY_KEY}), "
                             "pg_sleep(600)")
            busy.rollback()
            done.set()

        worker = threading.Thread(target=work)
        worker.start()
        pid = busy.info.backend_pid
        try:
            wait_for("the holder at work", lambda: _state(pg_store, pid) == "active"
                     and lock_holder(_libpq(pg_store), ADVISORY_KEY) == pid, timeout=60, every=0.01)
            assert pg_store.end_frozen_cycle_holder(0.0) == []
            assert _session_alive(pg_store, pid)
        finally:
            busy.cancel_safe()
            worker.join(60)
        assert done.is_set()


def _state(store: Store, pid: int) -> str | None:
    found = _activity(store, pid)
    return None if found is None else found[0]


def test_nothing_to_end_on_either_backend(store: Store) -> None:
    assert store.end_frozen_cycle_holder() == []
    assert store.end_frozen_cycle_holder(0.0) == []
