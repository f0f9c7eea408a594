"""SQLite: a process's write units run one after another on one connection, kept out
of the pool (store/sqlite/writer.py); a unit that fails gives it back, and the next
unit takes another."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import event, text

from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.store import Store, open_store


@pytest.fixture
def sqlite_store(sqlite_template: Path, tmp_path: Path) -> Iterator[Store]:
    path = tmp_path / "writer.db"
    shutil.copyfile(sqlite_template, path)
    store = open_store(f"sqlite:///{path}")
    store.task_types.put(TaskTypeSpec(name="noop", handler="python:json:dumps"))
    yield store
    store.close()


def _checkouts(store: Store) -> list[int]:
    """Each pool checkout, as the id of the driver connection handed out."""
    seen: list[int] = []
    event.listen(store.engine, "checkout", lambda dbapi, _rec, _proxy: seen.append(id(dbapi)))
    return seen


def test_write_units_share_one_connection(sqlite_store: Store) -> None:
    with sqlite_store.write() as tx:  # the writer's connection exists before counting
        tx.jobs.submit([JobSubmission(type="noop")])
    seen = _checkouts(sqlite_store)
    for _ in range(50):
        with sqlite_store.write() as tx:
            tx.jobs.submit([JobSubmission(type="noop")])
    assert seen == []  # the pool handed out no connection for 50 write units
    with sqlite_store.read() as tx:
        assert tx.conn.execute(text("SELECT count(*) FROM jobs")).scalar_one() == 51


def test_a_failed_unit_rolls_back_and_gives_its_connection_back(sqlite_store: Store) -> None:
    with sqlite_store.write() as tx:
        tx.jobs.submit([JobSubmission(type="noop")])
    seen = _checkouts(sqlite_store)
    checkins: list[int] = []
    event.listen(sqlite_store.engine, "checkin", lambda dbapi, _rec: checkins.append(1))
    with pytest.raises(RuntimeError, match="midway"), sqlite_store.write() as tx:
        tx.jobs.submit([JobSubmission(type="noop")])
        raise RuntimeError("midway")
    assert checkins == [1] and seen == []
    with sqlite_store.write() as tx:  # another connection, and the write goes in
        tx.jobs.submit([JobSubmission(type="noop")])
    assert len(seen) == 1
    with sqlite_store.read() as tx:
        assert tx.conn.execute(text("SELECT count(*) FROM jobs")).scalar_one() == 2


def test_threads_write_one_after_another(sqlite_store: Store) -> None:
    errors: list[BaseException] = []
    ids: list[int] = []
    lock = threading.Lock()

    def submit() -> None:
        try:
            for _ in range(40):
                with sqlite_store.write() as tx:
                    got = tx.jobs.submit([JobSubmission(type="noop")])
                with lock:
                    ids.extend(got)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=submit) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    assert len(set(ids)) == 160
    with sqlite_store.read() as tx:
        assert tx.conn.execute(text("SELECT count(*) FROM jobs")).scalar_one() == 160


def test_close_gives_the_kept_connection_back(sqlite_store: Store) -> None:
    with sqlite_store.write() as tx:
        tx.jobs.submit([JobSubmission(type="noop")])
    assert sqlite_store.engine.pool.checkedout() == 1  # type: ignore[attr-defined]
    sqlite_store.driver.close()
    assert sqlite_store.engine.pool.checkedout() == 0  # type: ignore[attr-defined]
