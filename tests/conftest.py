"""Real databases for every test: a fresh SQLite file, or a fresh PostgreSQL
database cloned from a migrated template (one template per xdist worker).

``TASKYARD_TEST_PG`` is the admin URL of the throwaway cluster that
``make test`` starts; without it PostgreSQL cases are skipped, unless
``TASKYARD_REQUIRE_PG=1`` (as in ``make test``), where they fail instead.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from taskyard.store import MovableClock, Store, open_store
from taskyard.store.driver import make_engine
from taskyard.store.schema.migrate import upgrade

# No per-example deadline: a time limit on a loaded 2-core machine is a timed assertion,
# and fails for the machine's load, not for the code.
settings.register_profile("taskyard", deadline=None)
settings.load_profile("taskyard")

PG_ADMIN = os.environ.get("TASKYARD_TEST_PG")
REQUIRE_PG = os.environ.get("TASKYARD_REQUIRE_PG") == "1"


def _pg_url(database: str) -> str:
    assert PG_ADMIN is not None
    return make_url(PG_ADMIN).set(database=database).render_as_string(hide_password=False)


def _admin() -> Engine:
    assert PG_ADMIN is not None
    return create_engine(
        make_url(PG_ADMIN).set(drivername="postgresql+psycopg"), isolation_level="AUTOCOMMIT"
    )


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.db"
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    # Closing the last connection checkpoints the WAL into the file we copy.
    engine.dispose()
    return path


@pytest.fixture(scope="session")
def pg_template(worker_id: str) -> Iterator[str]:
    if PG_ADMIN is None:
        if REQUIRE_PG:
            pytest.fail("TASKYARD_REQUIRE_PG=1 but TASKYARD_TEST_PG is not set")
        pytest.skip("PostgreSQL not configured (set TASKYARD_TEST_PG or run `make test`)")
    name = f"taskyard_template_{worker_id}"
    admin = _admin()
    with admin.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        conn.execute(text(f"CREATE DATABASE {name}"))
    engine = make_engine(_pg_url(name))
    upgrade(engine)
    engine.dispose()
    yield name
    with admin.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    admin.dispose()


class _Clones:
    """Fresh PostgreSQL databases, each cloned from the template by a thread while the
    test before the one that takes it runs, and dropped by that thread after its test.
    A clone (``CREATE DATABASE ... TEMPLATE``) took 0.2-0.4 s on a loaded machine, most
    of it waiting on the server, and the suite makes about 750: in line, they were a
    test's set-up each."""

    def __init__(self, template: str) -> None:
        self.template = template
        self._ready: queue.Queue[str | BaseException] = queue.Queue()
        self._work: queue.Queue[str | None] = queue.Queue()  # "" clones, a name drops
        self._admin = _admin()
        self._failed: list[Exception] = []
        self._thread = threading.Thread(target=self._run, name="pg-clones", daemon=True)
        self._thread.start()
        self._work.put("")

    def take(self) -> str:
        """A fresh database's name (waits for the clone under way); the next is begun."""
        made = self._ready.get(timeout=300)
        self._work.put("")
        if isinstance(made, BaseException):
            raise made
        return made

    def drop(self, name: str) -> None:
        self._work.put(name)

    def close(self) -> None:
        """Drop the clone no test took; raise the first drop that failed, if any."""
        self._work.put(None)
        self._thread.join(300)
        while not self._ready.empty():
            made = self._ready.get_nowait()
            if isinstance(made, str):
                self._drop(made)
        self._admin.dispose()
        if self._failed:
            raise self._failed[0]

    def _run(self) -> None:
        while (item := self._work.get()) is not None:
            try:
                if item:
                    self._drop(item)
                else:
                    self._ready.put(self._clone())
            except Exception as exc:
                if item:
                    self._failed.append(exc)  # raised once the session ends
                else:
                    self._ready.put(exc)  # the test that takes it fails with it

    def _clone(self) -> str:
        name = f"test_{uuid.uuid4().hex[:12]}"
        with self._admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {name} TEMPLATE {self.template}"))
        return name

    def _drop(self, name: str) -> None:
        with self._admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))


@pytest.fixture(scope="session")
def pg_clones(pg_template: str) -> Iterator[_Clones]:
    clones = _Clones(pg_template)
    yield clones
    clones.close()


@contextlib.contextmanager
def fresh_database(request: pytest.FixtureRequest, backend: str, folder: Path) -> Iterator[str]:
    """A fresh, migrated database of ``backend`` (a copy of the session's template): a
    file in ``folder`` on SQLite, a database dropped at the end on PostgreSQL."""
    if backend == "sqlite":
        path = folder / "taskyard.db"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        yield f"sqlite:///{path}"
        return
    clones: _Clones = request.getfixturevalue("pg_clones")
    name = clones.take()
    try:
        yield _pg_url(name)
    finally:
        clones.drop(name)


@pytest.fixture
def pg_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """URL of a fresh, migrated PostgreSQL database, for tests of PostgreSQL alone (a
    test module cannot import ``fresh_database``: in a whole run, ``conftest`` is
    whichever conftest.py was loaded last)."""
    with fresh_database(request, "pg", tmp_path) as url:
        yield url


@pytest.fixture(params=["sqlite", "pg"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """URL of a fresh, migrated database of each backend."""
    with fresh_database(request, request.param, tmp_path) as url:
        yield url


@pytest.fixture
def clock() -> MovableClock:
    """The database clock of the test's stores, moved forward by ``clock.advance(s)``:
    leases run out, deadlines pass and schedules come due without sleeping."""
    return MovableClock()


@pytest.fixture
def store(db_url: str, clock: MovableClock) -> Iterator[Store]:
    s = open_store(db_url, clock=clock)
    yield s
    s.close()


# Started first: the tests that take a minute or more (daemons killed and restarted, the
# docs' shell blocks, the benchmarks' smoke runs). xdist hands tests out in the order
# they were collected, and one of these, collected in the middle, could start when the
# others were nearly done and hold the run's end on one worker while the other waited.
# With `--dist worksteal` (scripts/run-tests) the first worker's half begins with them,
# and what a worker steals is the end of the other's queue: short tests.
LONG_FIRST = ("tests/chaos/", "tests/acceptance/test_docs.py", "tests/bench/", "tests/fleet/")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        return next((n for n, prefix in enumerate(LONG_FIRST)
                     if item.nodeid.startswith(prefix)), len(LONG_FIRST))

    items.sort(key=rank)  # stable: the order within each rank stays as collected
