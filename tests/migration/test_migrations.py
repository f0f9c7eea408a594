"""Migrations: up → down → up, idempotent init, and migrated schema == fresh schema."""

from __future__ import annotations

import multiprocessing

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, inspect, text
from sqlalchemy.exc import IntegrityError

from taskyard.store.driver import make_engine
from taskyard.store.schema import metadata
from taskyard.store.schema.migrate import current_revision, downgrade, upgrade


def _shape(engine: Engine) -> dict[str, object]:
    """Tables, columns, indexes (with uniqueness) and named checks, as inspect sees them."""
    insp = inspect(engine)
    shape: dict[str, object] = {}
    for table in sorted(insp.get_table_names()):
        if table == "alembic_version":
            continue
        shape[table] = {
            "columns": sorted((c["name"], str(c["type"]), c["nullable"])
                              for c in insp.get_columns(table)),
            "indexes": sorted((i["name"], bool(i["unique"])) for i in insp.get_indexes(table)),
            "checks": sorted(str(c["name"]) for c in insp.get_check_constraints(table)),
            "pk": insp.get_pk_constraint(table)["constrained_columns"],
            "fks": sorted(str(f["name"]) for f in insp.get_foreign_keys(table)),
        }
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            shape["triggers"] = sorted(conn.execute(text(
                "SELECT tgrelid::regclass::text, tgname, pg_get_triggerdef(oid) "
                "FROM pg_trigger WHERE NOT tgisinternal")).all())
            shape["functions"] = sorted(conn.execute(text(
                "SELECT proname, prosrc FROM pg_proc "
                "WHERE pronamespace = 'public'::regnamespace")).all())
    return shape


def _created_here(dialect: str) -> object:
    """Alembic's filter: leave out constraints this dialect does not create (the
    foreign keys that PostgreSQL checks with triggers instead, see pg_references)."""
    def include(obj: object, name: str | None, type_: str, reflected: bool,
                compare_to: object) -> bool:
        only = getattr(obj, "_ddl_if", None)
        return only is None or only.dialect in (None, dialect)
    return include


def _fresh_engine(db_url: str) -> Engine:
    return make_engine(db_url)


def test_up_down_up(db_url: str) -> None:
    engine = _fresh_engine(db_url)
    # The fixture's database is already migrated: go all the way down and back.
    assert current_revision(engine) is not None
    downgrade(engine, "base")
    assert current_revision(engine) is None
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    upgrade(engine)
    upgrade(engine)  # idempotent, like `taskyard init` run twice
    assert current_revision(engine) == "0021"
    with engine.connect() as conn:
        assert conn.execute(text("SELECT cycles FROM scheduler_state")).scalar_one() == 0
    engine.dispose()


def test_migrated_schema_equals_fresh_schema(db_url: str) -> None:
    migrated = _fresh_engine(db_url)
    with migrated.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"include_object": _created_here(conn.dialect.name)})
        diff = compare_metadata(context, metadata)
    # Alembic cannot compare expression indexes (priority DESC) on every dialect:
    # that one is compared by name and uniqueness in _shape below.
    diff = [d for d in diff if not (isinstance(d, tuple) and "index" in d[0]
                                    and d[1].name == "ix_jobs_pending_pools")]
    assert diff == [], diff
    migrated_shape = _shape(migrated)
    downgrade(migrated, "base")
    with migrated.begin() as conn:
        conn.execute(text("DROP TABLE IF EXISTS alembic_version"))
    metadata.create_all(migrated)
    assert _shape(migrated) == migrated_shape
    migrated.dispose()


def _migrate(url: str) -> None:
    upgrade(make_engine(url))


def test_concurrent_init_is_safe(db_url: str) -> None:
    engine = _fresh_engine(db_url)
    downgrade(engine, "base")
    engine.dispose()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_migrate, args=(db_url,)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    engine = _fresh_engine(db_url)
    assert current_revision(engine) is not None
    engine.dispose()


def test_upgrading_a_0001_database_keeps_its_rows(db_url: str) -> None:
    engine = _fresh_engine(db_url)
    downgrade(engine, "0001")
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO task_types (name, handler, created_at, updated_at) "
            "VALUES ('old', 'shell:true', 0, 0)"))
        conn.execute(text(
            "INSERT INTO jobs (type, state, pools, created_at, priority) "
            "VALUES ('old', 'pending', '[\"default\"]', 0, 7)"))
    upgrade(engine)
    assert current_revision(engine) == "0021"
    with engine.connect() as conn:
        assert conn.execute(text(
            "SELECT max_worker_losses FROM task_types WHERE name = 'old'")).scalar_one() == 3
        row = conn.execute(text(
            "SELECT priority, base_priority, max_worker_losses FROM jobs")).one()
        assert tuple(row) == (7, None, 3)
    engine.dispose()


def _insert_old_job(engine: Engine) -> None:
    """A task type ``old`` and one pending job of it, as an older schema takes them."""
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO task_types (name, handler, created_at, updated_at) "
                          "VALUES ('old', 'shell:true', 0, 0)"))
        conn.execute(text("INSERT INTO jobs (type, state, pools, created_at) "
                          "VALUES ('old', 'pending', '[\"default\"]', 0)"))


def test_upgrading_a_0012_database_admits_waits_and_keeps_the_checks(db_url: str) -> None:
    """0013 edits jobs' constraints in place (SQLite: its schema text): the rows stay,
    a job without a type may be an approval awaiting, and the checks still refuse."""
    engine = _fresh_engine(db_url)
    downgrade(engine, "0012")
    _insert_old_job(engine)
    upgrade(engine)
    with engine.begin() as conn:
        assert conn.execute(text("SELECT type, kind FROM jobs")).one() == ("old", "task")
        conn.execute(text("INSERT INTO jobs (type, kind, state, pools, created_at) "
                          "VALUES (NULL, 'approval', 'awaiting', '[]', 0)"))
    for bad in ("(NULL, 'task', 'pending')", "('old', 'approval', 'awaiting')",
                "(NULL, 'nap', 'awaiting')", "(NULL, 'sleep', 'napping')"):
        with pytest.raises(IntegrityError), engine.begin() as conn:
            conn.execute(text(f"INSERT INTO jobs (type, kind, state, pools, created_at) "
                              f"VALUES {bad[:-1]}, '[]', 0)"))
    # Back down refuses while waits exist, then goes once they are gone.
    with pytest.raises(RuntimeError, match="1 approval, wait or sleep jobs exist"):
        downgrade(engine, "0012")
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM jobs WHERE kind <> 'task'"))
    downgrade(engine, "0012")
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(text("INSERT INTO jobs (type, state, pools, created_at) "
                          "VALUES (NULL, 'pending', '[]', 0)"))
    upgrade(engine)
    engine.dispose()


def test_upgrading_a_0019_database_delays_its_jobs_for_later(db_url: str) -> None:
    """0020: pending and waiting jobs with a ``run_after`` are delayed (out of the
    placement index until the maintenance finds them due); the others are not."""
    engine = _fresh_engine(db_url)
    downgrade(engine, "0019")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO task_types (name, handler, created_at, updated_at) "
                          "VALUES ('old', 'shell:true', 0, 0)"))
        for state, run_after in (("pending", 5e9), ("pending", None), ("waiting", 5e9),
                                 ("succeeded", 5e9)):
            conn.execute(text(
                "INSERT INTO jobs (type, state, pools, created_at, run_after, finished_at) "
                "VALUES ('old', :s, '[]', 0, :r, :f)"),
                {"s": state, "r": run_after, "f": 1 if state == "succeeded" else None})
    upgrade(engine)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT state, delayed_until FROM jobs ORDER BY id")).all()
    assert [tuple(r) for r in rows] == [("pending", 5e9), ("pending", None),
                                        ("waiting", 5e9), ("succeeded", None)]
    downgrade(engine, "0019")
    upgrade(engine)
    engine.dispose()


def _check_texts(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return [str(r[0]) for r in conn.execute(text(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE contype = 'c' "
            "AND conrelid IN ('jobs'::regclass, 'attempts'::regclass)"))]


def test_upgrading_a_0020_database_keeps_the_checks_of_states_and_kinds(db_url: str) -> None:
    """0021 (PostgreSQL) writes the checks of states, kinds and convergence as one array
    constant each (schema/checks.py): the rows stay, the same values are refused, and
    down again restores the ``IN`` lists. SQLite's stay as they are."""
    engine = _fresh_engine(db_url)
    pg = engine.dialect.name == "postgresql"
    if pg:
        assert all("ARRAY[" not in c for c in _check_texts(engine))
        assert sum("::text[]" in c for c in _check_texts(engine)) == 6
    downgrade(engine, "0020")
    if pg:
        assert sum("ARRAY[" in c for c in _check_texts(engine)) == 6
    _insert_old_job(engine)
    upgrade(engine)
    if pg:
        assert all("ARRAY[" not in c for c in _check_texts(engine))
    with engine.begin() as conn:
        assert conn.execute(text("SELECT type, state FROM jobs")).one() == ("old", "pending")
        conn.execute(text("UPDATE jobs SET state = 'succeeded', finished_at = 1"))
    for bad in ("state = 'napping'", "kind = 'nap'", "convergence = 'one'",
                "state = 'dispatched'", "state = 'failed', finished_at = NULL",
                "state = 'pending', finished_at = NULL, worker_id = 1"):
        with pytest.raises(IntegrityError, match="ck_jobs_"), engine.begin() as conn:
            conn.execute(text(f"UPDATE jobs SET {bad}"))
    with engine.begin() as conn:
        conn.execute(text("UPDATE jobs SET state = 'canceled'"))
        assert conn.execute(text("SELECT state FROM jobs")).scalar_one() == "canceled"
    engine.dispose()
