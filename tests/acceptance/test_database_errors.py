"""A database that cannot be used is one line on stderr, never a traceback: unreachable,
not a database, not initialised (the line says to run ``taskyard init``), or a URL
taskyard does not run on."""

from __future__ import annotations

import os
import socket
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from acceptance_cli import Cli
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from taskyard import InvalidInput, SchemaMissing, Yard
from taskyard.store.diagnosis import is_database_error


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unusable_databases(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_text("this is not a database\n" * 100)
    cli = Cli("sqlite:///unused.db", tmp_path)
    refusing = f"postgresql://someone:secret@127.0.0.1:{_free_port()}/taskyard"
    cases: list[tuple[str, list[str], int, str]] = [
        ("foo://somewhere/db", ["jobs", "list"], 2, "foo://"),
        ("not a url", ["jobs", "list"], 2, "not a url"),
        (refusing, ["jobs", "list"], 1, "cannot connect to the database"),
        (refusing, ["init"], 1, "cannot connect to the database"),
        # The daemons fail at start instead of retrying forever.
        (refusing, ["worker"], 1, "cannot connect to the database"),
        (refusing, ["scheduler"], 1, "cannot connect to the database"),
        (f"sqlite:///{tmp_path}/missing.db", ["submit", "t"], 1, "run `taskyard init`"),
        (f"sqlite:///{tmp_path}/no/such/folder/x.db", ["init"], 1, "does not exist"),
        (f"sqlite:///{garbage}", ["jobs", "list"], 1, "not a database"),
    ]
    results = cli.many_on([(url, args) for url, args, _, _ in cases])
    for (_, _, code, expected), result in zip(cases, results, strict=True):
        assert expected in result.one_line_error(code), result
    assert "secret" not in results[2].err
    # Nothing was created by the commands that only read or write an existing database.
    assert not (tmp_path / "missing.db").exists()
    assert not (tmp_path / "no").exists()


@pytest.fixture(params=["sqlite", "pg"])
def empty_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database of each store that exists but was never initialised."""
    if request.param == "sqlite":
        path = tmp_path / "empty.db"
        sqlite3.connect(path).close()
        yield f"sqlite:///{path}"
        return
    request.getfixturevalue("pg_template")  # skips, or fails, as the suite's PG cases do
    admin_url = make_url(os.environ["TASKYARD_TEST_PG"])
    admin = create_engine(admin_url.set(drivername="postgresql+psycopg"),
                          isolation_level="AUTOCOMMIT")
    name = f"empty_{uuid.uuid4().hex[:12]}"
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    try:
        yield admin_url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


def test_uninitialised_database_says_run_init(empty_db_url: str, tmp_path: Path) -> None:
    cli = Cli(empty_db_url, tmp_path)
    before = cli.many([["jobs", "list"], ["submit", "t", "--args", "{}"],
                       ["task-type", "list", "--json"], ["worker"]])
    for result in before:
        assert "run `taskyard init`" in result.one_line_error(1), result
    cli("init").ok()
    assert cli("jobs", "list", "--json").json() == []


def test_python_api_on_an_uninitialised_database_says_run_init(empty_db_url: str) -> None:
    """From Python too: SchemaMissing saying what to do, the database's error as its
    cause, not "no such table" (a first program that forgot ``yard.init()``)."""
    yard = Yard(empty_db_url)
    try:
        calls: list[Callable[[], object]] = [
            lambda: yard.submit("t", {}), lambda: yard.get_job(1), yard.jobs,
            yard.list_schedules]
        for call in calls:
            with pytest.raises(SchemaMissing, match=r"not initialised: run `taskyard init`") as (
                    info):
                call()
            assert is_database_error(info.value.__cause__)
        yard.init()
        assert yard.jobs() == []
    finally:
        yard.close()


def test_a_lone_jobs_bad_args_are_named_by_its_type(tmp_path: Path) -> None:
    with Yard(f"sqlite:///{tmp_path}/t.db") as yard:
        yard.init()
        yard.add_task_type("t", handler="python:json:dumps")
        with pytest.raises(InvalidInput, match=r"^job of type 't': args are not JSON"):
            yard.submit("t", {"a": object()})
        with pytest.raises(InvalidInput, match=r"^job 1: args are not JSON"):
            yard.submit_many("t", [{"a": 1}, {"a": object()}])
        assert yard.jobs() == []
