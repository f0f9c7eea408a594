"""One LISTEN connection per host (``--shared-listener``): the listeners of every
taskyard process of the host reach the server through the relay one of them runs, hear
their own channel only, and survive the relay's process and its connection going away
(a wake-up, as after any lost connection: the owner looks for itself)."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator

import psycopg
import pytest

from polling import wait_for
from taskyard.store import Connections, open_store
from taskyard.store.postgresql.listen import pg_channel
from taskyard.store.postgresql.shared_listen import RUN_DIR_ENV, SharedListener, paths
from taskyard.store.postgresql.urls import pg_target


@pytest.fixture
def pg(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    # A short folder: a Unix socket's path holds at most 107 bytes.
    run_dir = tempfile.mkdtemp(prefix="ty-")
    monkeypatch.setenv(RUN_DIR_ENV, run_dir)
    try:
        yield pg_url
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def _listening(url: str) -> int:
    with psycopg.connect(pg_target(url).libpq(), autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                           "current_database() AND query LIKE 'LISTEN%'").fetchone()
    return int(row[0]) if row else -1


def _notify(url: str, channel: str, payload: str = "") -> None:
    with psycopg.connect(pg_target(url).libpq(), autocommit=True) as conn:
        conn.execute("SELECT pg_notify(%s, %s)", (pg_channel(channel), payload))


def _heard(listener: object, timeout: float = 10.0) -> list[str]:
    assert listener.wait(timeout)  # type: ignore[attr-defined]
    return list(listener.payloads())  # type: ignore[attr-defined]


def test_listeners_of_a_host_share_one_connection_and_hear_their_own_channel(pg: str) -> None:
    store = open_store(pg, connections=Connections(shared_listener=True))
    a, b = store.listener("worker.1"), store.listener("worker.2")
    try:
        assert isinstance(a, SharedListener)
        assert _listening(pg) == 1
        _notify(pg, "worker.1", '{"jobs": [1]}')
        _notify(pg, "worker.2", "for b")
        assert _heard(a) == ['{"jobs": [1]}']
        assert _heard(b) == ["for b"]
        assert not a.wait(0.2)  # b's notification was not a's
        sock, _ = paths(pg_target(pg).libpq())
        assert stat.S_IMODE(sock.stat().st_mode) == 0o600  # this user's processes only
        # Paused (kept in a pool between waits), it hears nothing; resumed, what is new.
        assert a.pause()
        _notify(pg, "worker.1", "while paused")
        a.resume()
        _notify(pg, "worker.1", "after")
        assert _heard(a) == ["after"]
    finally:
        a.close()
        b.close()
        store.close()


RELAY = textwrap.dedent("""
    import sys, time
    from taskyard.store.postgresql.shared_listen import SharedListener
    listener = SharedListener(sys.argv[1], sys.argv[2])
    print("listening", flush=True)
    time.sleep(600)
""")


def test_a_listener_outlives_the_process_that_ran_the_relay(pg: str) -> None:
    dsn = pg_target(pg).libpq()
    other = subprocess.Popen([sys.executable, "-c", RELAY, dsn, pg_channel("scheduler")],
                             stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "listening"
        mine = SharedListener(dsn, pg_channel("worker.7"))
        assert _listening(pg) == 1  # the other process's relay serves us too
        _notify(pg, "worker.7", "via the other process")
        assert _heard(mine) == ["via the other process"]
        os.kill(other.pid, signal.SIGKILL)
        other.wait(30)
        # The relay went with its process: a wake-up (what came meanwhile is lost)...
        assert _heard(mine) == [""]
        # ...then this process runs the relay, and hears again.
        assert _heard(mine) == [""]  # reconnected: a wake-up, as after a lost connection
        wait_for("the new relay to listen", lambda: _listening(pg) == 1)
        _notify(pg, "worker.7", "via my own relay")
        assert _heard(mine) == ["via my own relay"]
        mine.close()
    finally:
        if other.poll() is None:
            other.kill()
            other.wait(30)


def test_the_relay_survives_losing_its_connection(pg: str) -> None:
    dsn = pg_target(pg).libpq()
    listener = SharedListener(dsn, pg_channel("worker.3"))
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                         "datname = current_database() AND query LIKE 'LISTEN%'")
        assert _heard(listener) == [""]  # told: notifications may have been missed
        wait_for("the relay to listen again", lambda: _listening(pg) == 1)
        _notify(pg, "worker.3", "again")
        assert _heard(listener) == ["again"]
    finally:
        listener.close()
