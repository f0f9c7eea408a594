"""SQLite's listener waits on a watch of the database's WAL file where it can (Linux's
inotify): an idle wait reads the database a few times a second instead of a thousand,
and a commit from another process still wakes it; where no watch can be had (no WAL
file), it polls as before."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from taskyard.api.yard import Yard
from taskyard.model.records import TaskTypeSpec
from taskyard.store import Store
from taskyard.store.sqlite.listen import RECHECK_SECONDS, SqliteListener
from taskyard.store.sqlite.wal_watch import watch_wal

ROOT = Path(__file__).resolve().parents[2]
COMMITS = 5
IDLE = 1.0
"""An idle wait's length: a poll every millisecond reads the database hundreds of times
in it even on a loaded machine; a watched wait a dozen or so."""


def _sqlite(store: Store) -> None:
    if store.engine.dialect.name != "sqlite":
        pytest.skip("SQLite's listener")
    if sys.platform != "linux":
        pytest.skip("inotify is Linux's")


def _counting(store: Store) -> tuple[SqliteListener, list[int]]:
    """A listener on a channel no commit here wakes, and the count of its reads of
    ``data_version`` (one item, growing)."""
    listener = store.listener("worker.1")
    assert isinstance(listener, SqliteListener)
    reads = [0]
    read = listener._data_version

    def counted() -> int:
        reads[0] += 1
        return read()

    listener._data_version = counted  # type: ignore[method-assign]
    return listener, reads


def test_an_idle_wait_reads_the_database_a_few_times_a_second(store: Store) -> None:
    _sqlite(store)
    listener, reads = _counting(store)
    try:
        assert listener.wait(IDLE) is False
    finally:
        listener.close()
    assert 1 <= reads[0] <= IDLE / RECHECK_SECONDS + 5, reads[0]


def test_a_commit_of_another_process_wakes_a_watched_wait(store: Store) -> None:
    _sqlite(store)
    url = str(store.engine.url)
    with Yard(url) as yard:
        yard.add_task_type("t", "shell:true")
        worker = yard.store.workers.register("w", ["default"], 1, lease_seconds=60).id
    listener = store.listener(f"worker.{worker}")
    woke: list[bool] = []
    waiting = threading.Thread(target=lambda: woke.append(listener.wait(120)), daemon=True)
    waiting.start()
    try:
        # The submit places the job on the only live worker and wakes its channel.
        subprocess.run([sys.executable, "-c", "import sys; from taskyard import Yard; "
                        "Yard(sys.argv[1]).submit('t')", url],
                       check=True, cwd=ROOT, timeout=120)
        waiting.join(120)
        assert woke == [True]
    finally:
        listener.close()


def test_without_a_watch_the_listener_polls(store: Store, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    assert watch_wal(":memory:") is None
    assert watch_wal(str(tmp_path / "none.db")) is None  # no WAL file
    _sqlite(store)
    monkeypatch.setattr("taskyard.store.sqlite.listen.watch_wal", lambda _: None)
    with Yard(str(store.engine.url)) as yard:
        yard.add_task_type("t", "shell:true")
        worker = yard.store.workers.register("w", ["default"], 1, lease_seconds=60).id
        listener = store.listener(f"worker.{worker}")
        try:
            yard.submit("t")
            assert listener.wait(120) is True
        finally:
            listener.close()



def test_a_commit_seen_ends_the_polls_its_writes_started(store: Store) -> None:
    """A commit's first write wakes the watch before the commit is published, and the
    listener polls until it is; once seen, the events of its other writes are no news.
    They had started another 20 ms of polls every 0.2 ms after each commit (a worker's
    listener polled through a whole chain of jobs, its own commits among them).

    Only the reads between one commit's return and the next one's start are counted:
    the commit is published then, and no write is under way. How long a commit takes
    to be published after its first write (and so how many polls wait for it) is the
    machine's load, not the listener's doing."""
    _sqlite(store)
    listener = store.listener("worker.1")  # a channel no commit here wakes
    assert isinstance(listener, SqliteListener)
    reads: list[float] = []
    read = listener._data_version

    def counted() -> int:
        version = read()
        reads.append(time.monotonic())  # after the read: it saw what was published by then
        return version

    quiet: list[tuple[float, float]] = []
    """Spans in which every commit had returned and none had started."""

    def commits() -> None:
        for i in range(COMMITS):
            store.task_types.put(TaskTypeSpec(f"t{i}", "shell:true"))
            returned = time.monotonic()
            stop.wait(IDLE / (COMMITS + 1))
            quiet.append((returned, time.monotonic()))

    listener._data_version = counted  # type: ignore[method-assign]
    stop = threading.Event()
    writer = threading.Thread(target=commits, daemon=True)
    try:
        writer.start()
        assert listener.wait(IDLE) is False
    finally:
        stop.set()
        writer.join(60)
        listener.close()
    assert quiet, "no commit returned within the wait"
    for begun, ended in quiet:
        seen = sum(1 for at in reads if begun < at < ended)
        # The read that sees the commit, the one after its events are taken, and one a
        # RECHECK_SECONDS: 20 ms of polls every 0.2 ms is about a hundred.
        assert seen <= (ended - begun) / RECHECK_SECONDS + 4, (seen, ended - begun)
