"""PostgreSQL: a one-job submit in autocommit (``Jobs.submit_alone``) makes the jobs
insert trigger's reference check itself (store/postgresql/submit.py), so the trigger is
not called for it (pg_references.CHECKED_SETTING). The check must hold as the trigger's
does: its task type locked ``FOR KEY SHARE`` (a delete of the type in flight waits, or
is waited for and then seen), and the trigger still called for every other insert,
the next statement on the same connection included."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from taskyard.model.errors import StoreError
from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.store import Store

DEADLINE = 60.0


@pytest.fixture
def pg(store: Store) -> Store:
    if store.backend != "postgresql":
        pytest.skip("SQLite keeps ordinary foreign keys (no trigger to skip)")
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    return store


def _jobs(store: Store) -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM jobs")).scalar_one())


def test_the_trigger_is_skipped_only_for_the_statement_that_checked(pg: Store) -> None:
    with pg.alone() as tx:
        assert tx.jobs.submit_alone(JobSubmission("t", {})) is not None
        # The same connection, the next statement: checked by the trigger again.
        with pytest.raises(psycopg.errors.ForeignKeyViolation, match="no task type 'nope'"):
            tx.raw.run("INSERT INTO jobs (type, state, pools, created_at) "
                       "VALUES ('nope', 'pending', '[\"default\"]', 0)")
    with pytest.raises(IntegrityError, match="no task type 'nope'"), \
            pg.engine.begin() as conn:
        conn.execute(text("SELECT set_config('taskyard.references_checked', 'off', true)"))
        conn.execute(text("INSERT INTO jobs (type, state, pools, created_at) "
                          "VALUES ('nope', 'pending', '[\"default\"]', 0)"))
    assert _jobs(pg) == 1


def _wait_for(condition: object, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {DEADLINE}s: {what}")
        time.sleep(0.01)


def test_a_submit_waits_for_a_delete_of_its_type_and_then_refuses(pg: Store) -> None:
    with pg.alone() as tx:  # the type is cached, as in a busy submitter
        assert tx.jobs.submit_alone(JobSubmission("t", {})) is not None
    with pg.engine.begin() as conn:
        conn.execute(text("DELETE FROM jobs"))
    deleter = pg.engine.connect()
    deleter.begin()
    deleter.execute(text("DELETE FROM task_types WHERE name = 't'"))  # not committed yet
    outcome: list[object] = []

    def submit() -> None:
        try:
            with pg.alone() as tx:
                outcome.append(tx.jobs.submit_alone(JobSubmission("t", {})))
        except Exception as exc:  # reported below
            outcome.append(exc)

    thread = threading.Thread(target=submit)
    thread.start()
    try:
        # The submit's lock on the type row waits for the delete (without it, the
        # insert would go ahead: the type is visible to it, uncommitted delete or not).
        with pg.engine.connect() as probe:
            _wait_for(lambda: outcome or probe.execute(text(
                "SELECT count(*) FROM pg_locks WHERE NOT granted")).scalar_one() > 0,
                "the submit waiting for the delete's row lock")
        assert not outcome, outcome
    finally:
        deleter.commit()
        deleter.close()
        thread.join(DEADLINE)
    # The type is gone: the statement wrote nothing (None: the ordinary path decides).
    assert outcome == [None]
    assert _jobs(pg) == 0
    with pytest.raises(StoreError, match="t"):
        pg.jobs.submit([JobSubmission("t", {})])
    assert _jobs(pg) == 0
