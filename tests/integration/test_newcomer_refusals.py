"""Bad input from application code is refused at once, naming what is wrong, and writes
nothing (issue 41): a transactional submit on SQLite, an argument that is not JSON."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

import handlers_api
from taskyard import InvalidInput, Yard
from taskyard.store import open_store

ROOT = Path(__file__).resolve().parents[2]
REFUSED = "connection: transactional submit needs PostgreSQL"


def _sqlite(url: str) -> None:
    if not url.startswith("sqlite"):
        pytest.skip("PostgreSQL joins the caller's transaction (tests/store)")


def _nothing_written(url: str) -> None:
    store = open_store(url)
    try:
        assert store.task_types.list() == [] and store.jobs.list() == []
        assert store.events.list() == []
    finally:
        store.close()


def test_sqlite_refuses_a_transactional_submit_before_writing_the_declared_types(
        db_url: str) -> None:
    # The application holds SQLite's write lock (its own insert, not committed): writing
    # the declared types first used to wait 30 s for it and fail "database is locked".
    _sqlite(db_url)
    yard = Yard(db_url)
    add: Any = yard.task_type()(handlers_api.add)
    app = create_engine(db_url)
    try:
        with app.connect() as conn:
            conn.execute(text("CREATE TABLE orders (id integer PRIMARY KEY, item text)"))
            conn.execute(text("INSERT INTO orders (item) VALUES ('ada')"))
            with pytest.raises(InvalidInput, match=REFUSED):
                add.options(connection=conn).submit(1, 2)
            with pytest.raises(InvalidInput, match=REFUSED):
                yard.submit_many("add", [{"a": 1, "b": 2}], connection=conn)
            conn.rollback()
    finally:
        app.dispose()
        yard.close()
    _nothing_written(db_url)


def test_the_python_pages_orders_example_on_sqlite_stops_at_once_with_the_reason(
        db_url: str, tmp_path: Path) -> None:
    _sqlite(db_url)
    folder = tmp_path / "python"
    shutil.copytree(ROOT / "examples" / "python", folder,
                    ignore=shutil.ignore_patterns("*.db*", "__pycache__", "*.log"))
    env = {**os.environ, "TASKYARD_DB": db_url}
    done = subprocess.run([sys.executable, "orders.py"], cwd=folder, env=env, text=True,
                          capture_output=True, timeout=120, check=False)
    assert done.returncode == 1
    assert f"taskyard.model.errors.InvalidInput: {REFUSED}" in done.stderr.splitlines()[-1]
    _nothing_written(db_url)


def test_an_argument_that_is_not_json_is_named(db_url: str) -> None:
    with Yard(db_url) as yard:
        yard.init()
        add: Any = yard.task_type()(handlers_api.add)
        with pytest.raises(InvalidInput, match=r"^add\.submit: argument 'a' is not JSON "
                                               r"\(Object of type object is not JSON"):
            add.submit(object(), 3)
        with pytest.raises(InvalidInput, match=r"^add\.submit: argument 'b' is not JSON "
                                               r"\(Out of range float"):
            add.submit(1, float("nan"))
        with pytest.raises(InvalidInput, match=r"^add\.submit_many: call 1: argument 'a' is"):
            add.submit_many([(1, 2), {"a": {1, 2}, "b": 3}])
        assert yard.jobs() == []
