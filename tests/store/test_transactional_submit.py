"""Transactional submit: a job enqueued inside the application's own transaction, with a
real application table — rolled back, it never existed; committed, it runs, even when
the application dies the moment it committed. PostgreSQL (SQLAlchemy and psycopg 3
connections); SQLite refuses, clearly, and writes nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from driver import drive
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from taskyard.api.yard import Yard
from taskyard.model.errors import InvalidInput
from taskyard.model.records import TaskTypeSpec
from taskyard.store import MovableClock, Store

ROOT = Path(__file__).parents[2]


def _pg(store: Store) -> None:
    if store.backend != "postgresql":
        pytest.skip("SQLite refuses transactional submit (see test_sqlite_refuses_...)")


@pytest.fixture
def app(store: Store) -> Iterator[Engine]:
    """The application's own engine and table (``orders``), beside taskyard's."""
    _pg(store)
    store.task_types.put(TaskTypeSpec("ship", "shell:true"))
    engine = create_engine(make_url(store.url).set(drivername="postgresql+psycopg"))
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE orders (id serial PRIMARY KEY, item text NOT NULL)"))
    yield engine
    engine.dispose()


def _orders(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return list(conn.execute(text("SELECT item FROM orders ORDER BY id")).scalars())


def test_sqlite_refuses_transactional_submit_and_writes_nothing(store: Store) -> None:
    if store.backend != "sqlite":
        pytest.skip("PostgreSQL joins the caller's transaction (the tests below)")
    store.task_types.put(TaskTypeSpec("ship", "shell:true"))
    with Yard(store.url, inline_cycle=False) as yard, \
            pytest.raises(InvalidInput, match="transactional submit needs PostgreSQL"):
        yard.submit("ship", {"order": 1}, connection=object())
    assert store.jobs.list() == [] and store.events.list() == []


def test_rollback_leaves_no_job_and_no_event_commit_schedules_and_runs_it(
        store: Store, app: Engine, clock: MovableClock) -> None:
    yard = Yard(store.url, inline_cycle=False, clock=clock)
    listener = store.listener("scheduler")
    with app.connect() as conn:
        conn.execute(text("INSERT INTO orders (item) VALUES ('lost')"))
        lost = yard.submit("ship", {"order": "lost"}, connection=conn)
        conn.rollback()
    assert store.jobs.get(lost) is None and store.events.list() == []
    assert _orders(app) == []
    with app.connect() as conn:
        conn.execute(text("INSERT INTO orders (item) VALUES ('kept')"))
        kept = yard.submit("ship", {"order": "kept"}, connection=conn)
        assert not listener.wait(0)  # NOTIFY is delivered by the commit, not before
        # The caller's transaction carries on after the submit: its statements and ours
        # commit together.
        conn.execute(text("INSERT INTO orders (item) VALUES ('after')"))
        assert conn.in_transaction()
        conn.commit()
    assert listener.wait(30)  # the scheduler is woken by the commit
    listener.close()
    assert _orders(app) == ["kept", "after"]
    assert [e.topic for e in store.events.list()] == ["job-pending"]
    (run,) = drive(store)  # a real cycle places it, a worker runs it
    assert run.job_id == kept and store.jobs.get(kept).state == "succeeded"  # type: ignore[union-attr]
    yard.close()


def test_a_psycopg_connection_is_joined_and_never_ended_by_taskyard(
        store: Store, app: Engine, clock: MovableClock) -> None:
    yard = Yard(store.url, inline_cycle=False, clock=clock)
    dsn = make_url(store.url).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(dsn, autocommit=False) as conn:
        conn.execute("INSERT INTO orders (item) VALUES ('a')")
        rolled = yard.submit("ship", {"order": "a"}, connection=conn)
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        conn.rollback()
        conn.execute("INSERT INTO orders (item) VALUES ('b')")
        kept = yard.submit("ship", {"order": "b"}, connection=conn)
        second = yard.submit("ship", {"order": "c"}, connection=conn)  # again, same tx
        conn.execute("INSERT INTO orders (item) VALUES ('c')")
        conn.commit()
        assert not conn.closed
        conn.execute("SELECT 1")  # still the caller's, usable
    assert store.jobs.get(rolled) is None
    assert _orders(app) == ["b", "c"]
    assert {r.job_id for r in drive(store)} == {kept, second}
    with psycopg.connect(dsn, autocommit=True) as conn, \
            pytest.raises(InvalidInput, match="autocommit mode has no transaction"):
        yard.submit("ship", {}, connection=conn)
    with app.connect() as conn, pytest.raises(InvalidInput, match="not inside a transaction"):
        yard.submit("ship", {}, connection=conn)
    yard.close()


def test_a_unique_key_submitted_in_a_callers_transaction_is_held_until_it_commits(
        store: Store, app: Engine, clock: MovableClock) -> None:
    yard = Yard(store.url, inline_cycle=False, clock=clock)
    other = Yard(store.url, inline_cycle=False, clock=clock)
    found: list[int] = []
    with app.connect() as conn:
        conn.execute(text("INSERT INTO orders (item) VALUES ('once')"))
        mine = yard.submit("ship", {}, unique_key="order:once", connection=conn)
        racer = threading.Thread(target=lambda: found.append(
            other.submit("ship", {}, unique_key="order:once")))
        racer.start()
        _until_waiting_on_a_lock(app)  # for our commit: the key's lock is ours until then
        assert found == []
        conn.commit()
    racer.join(60)
    assert found == [mine]
    with app.connect() as conn, conn.begin():
        conn.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"))
        with pytest.raises(InvalidInput, match="must be READ COMMITTED"):
            yard.submit("ship", {}, unique_key="order:rr", connection=conn)
    yard.close()
    other.close()


def _until_waiting_on_a_lock(engine: Engine) -> None:
    with engine.connect() as conn:
        for _ in range(600):
            if conn.execute(text("SELECT count(*) FROM pg_stat_activity "
                                 "WHERE wait_event = 'advisory'")).scalar_one():
                return
            conn.rollback()
            threading.Event().wait(0.1)
    raise AssertionError("the other submitter never waited for the key's lock")


_CALLER = textwrap.dedent("""
    import os, signal, sys
    import psycopg
    from taskyard.api.yard import Yard
    url, dsn = sys.argv[1], sys.argv[2]
    yard = Yard(url, inline_cycle=False)
    conn = psycopg.connect(dsn, autocommit=False)
    conn.execute("INSERT INTO orders (item) VALUES ('killed')")
    job_id = yard.submit("ship", {"order": "killed"}, connection=conn)
    conn.commit()
    print(job_id, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)   # no clean-up of any kind
""")


def test_a_caller_killed_right_after_its_commit_still_has_its_job_run(
        store: Store, app: Engine) -> None:
    dsn = make_url(store.url).set(drivername="postgresql").render_as_string(False)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-c", _CALLER, store.url, dsn], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr
    job_id = int(done.stdout)
    assert _orders(app) == ["killed"]
    (run,) = drive(store)
    assert run.job_id == job_id and store.jobs.get(job_id).state == "succeeded"  # type: ignore[union-attr]
