"""References between jobs, edges, attempts, workers, task types and graphs hold on both
stores: foreign keys on SQLite, per-statement triggers on PostgreSQL
(store/postgresql/references.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError, IntegrityError

from taskyard.model.records import TaskTypeSpec
from taskyard.store import Store


@pytest.fixture
def chain(store: Store) -> Iterator[tuple[Store, int, int, int]]:
    """A graph a -> b -> c (c requires b, b requires a), none of it run."""
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    store.task_types.put(TaskTypeSpec("unused", "shell:true"))
    graph_id = store.graphs.submit({"tasks": {
        "a": {"type": "t"}, "b": {"type": "t", "requires": ["a"]},
        "c": {"type": "t", "requires": ["b"]}}})
    ids = {j.label: j.id for j in store.graphs.get(graph_id).jobs}
    yield store, ids["a"], ids["b"], ids["c"]


def _count(store: Store, sql: str) -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(text(sql)).scalar_one())


def _refused(store: Store, sql: str, params: dict[str, Any] | None = None) -> str:
    """Run ``sql`` in a transaction: it must be refused, and it must change nothing."""
    before = _count(store, "SELECT count(*) FROM jobs") + _count(
        store, "SELECT count(*) FROM dependencies") + _count(store, "SELECT count(*) FROM graphs")
    with pytest.raises(IntegrityError) as caught, store.engine.begin() as conn:
        conn.execute(text(sql), params or {})
    after = _count(store, "SELECT count(*) FROM jobs") + _count(
        store, "SELECT count(*) FROM dependencies") + _count(store, "SELECT count(*) FROM graphs")
    assert after == before
    return str(caught.value.orig)


def _edges(store: Store) -> set[tuple[int, int]]:
    with store.engine.connect() as conn:
        return {(r[0], r[1]) for r in conn.execute(
            text("SELECT job_id, requires_id FROM dependencies"))}


_JOB = ("INSERT INTO jobs (type, state, pools, created_at, graph_id) "
        "VALUES (:type, 'pending', '[\"default\"]', 0, :graph)")


def test_a_job_names_a_task_type_and_a_graph_that_exist(
        chain: tuple[Store, int, int, int]) -> None:
    store = chain[0]
    message = _refused(store, _JOB, {"type": "nope", "graph": None})
    if store.backend != "sqlite":
        assert "jobs: no task type 'nope'" in message
    message = _refused(store, _JOB, {"type": "t", "graph": 987654})
    if store.backend != "sqlite":
        assert "jobs: no graph 987654" in message
    graph = store.graphs.get(store.jobs.get(chain[1]).graph_id)  # type: ignore[union-attr]
    with store.engine.begin() as conn:  # both exist: accepted
        conn.execute(text(_JOB), {"type": "t", "graph": graph.id})


def test_an_edge_names_two_jobs_that_exist(chain: tuple[Store, int, int, int]) -> None:
    store, a, _, c = chain
    sql = "INSERT INTO dependencies (job_id, requires_id) VALUES (:job, :requires)"
    message = _refused(store, sql, {"job": c, "requires": 987654})
    if store.backend != "sqlite":
        assert "dependencies: an edge names job 987654, which does not exist" in message
    _refused(store, sql, {"job": 987654, "requires": a})
    with store.engine.begin() as conn:
        conn.execute(text(sql), {"job": c, "requires": a})
    assert (c, a) in _edges(store)


def test_deleting_a_job_deletes_its_edges_both_ways(chain: tuple[Store, int, int, int]) -> None:
    store, a, b, c = chain
    assert _edges(store) == {(b, a), (c, b)}
    with store.engine.begin() as conn:
        conn.execute(text("DELETE FROM jobs WHERE id = :id"), {"id": b})
    assert _edges(store) == set()
    assert _count(store, "SELECT count(*) FROM jobs") == 2


def test_a_task_type_or_graph_still_in_use_cannot_be_deleted(
        chain: tuple[Store, int, int, int]) -> None:
    store, a, _, _ = chain
    message = _refused(store, "DELETE FROM task_types WHERE name = 't'")
    if store.backend != "sqlite":
        assert "task_types: jobs still use task type 't'" in message
    graph_id = store.jobs.get(a).graph_id  # type: ignore[union-attr]
    message = _refused(store, "DELETE FROM graphs WHERE id = :id", {"id": graph_id})
    if store.backend != "sqlite":
        assert f"graphs: graph {graph_id} still has jobs" in message
    with store.engine.begin() as conn:  # nothing uses it: it goes
        conn.execute(text("DELETE FROM task_types WHERE name = 'unused'"))


def test_the_columns_that_tie_rows_together_do_not_change_to_a_missing_row(
        chain: tuple[Store, int, int, int]) -> None:
    store, _, b, c = chain
    _refused(store, "UPDATE dependencies SET requires_id = 987654 WHERE job_id = :c", {"c": c})
    _refused(store, "UPDATE jobs SET type = 'nope' WHERE id = :b", {"b": b})
    _refused(store, "UPDATE jobs SET graph_id = 987654 WHERE id = :b", {"b": b})
    # What the store does change on an edge still works.
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE dependencies SET satisfied = true WHERE job_id = :c"),
                     {"c": c})


def _pg_only(store: Store) -> None:
    if (store.backend == "sqlite"):
        pytest.skip("PostgreSQL checks references with triggers; SQLite has foreign keys")


def test_pg_refuses_any_change_of_a_key_column(chain: tuple[Store, int, int, int]) -> None:
    store, a, b, c = chain
    _pg_only(store)
    # To another row that exists, too: a foreign key would have let this one through,
    # but nothing in taskyard moves an edge or a job, so it is refused outright.
    message = _refused(store, "UPDATE dependencies SET requires_id = :a WHERE job_id = :c",
                       {"a": a, "c": c})
    assert "dependencies: the columns that tie rows together cannot change" in message
    _refused(store, "UPDATE jobs SET type = 'unused' WHERE id = :b", {"b": b})


def test_pg_bulk_copy_of_edges_is_checked(chain: tuple[Store, int, int, int]) -> None:
    store, a, _, c = chain
    _pg_only(store)
    # The bulk path of a large graph writes its edges with COPY (store/cursor.py).
    import psycopg
    url = store.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(url) as conn, conn.cursor() as cursor, pytest.raises(
            psycopg.errors.ForeignKeyViolation, match="an edge names job 987654"), cursor.copy(
            "COPY dependencies (job_id, requires_id) FROM STDIN") as copy:
        copy.write_row((c, a))
        copy.write_row((c, 987654))
    assert (c, a) not in _edges(store)


@pytest.fixture
def sessions(chain: tuple[Store, int, int, int]) -> Iterator[tuple[Connection, Connection]]:
    """Two connections of the chain's PostgreSQL store that give up a lock after 300 ms."""
    _pg_only(chain[0])
    pair = (chain[0].engine.connect(), chain[0].engine.connect())
    for conn in pair:
        conn.execute(text("SET lock_timeout = '300ms'"))
    yield pair
    for conn in pair:
        conn.close()


_EDGE = "INSERT INTO dependencies (job_id, requires_id) VALUES (:c, :a)"


def test_pg_an_edge_being_written_holds_off_the_delete_of_its_jobs(
        chain: tuple[Store, int, int, int], sessions: tuple[Connection, Connection]) -> None:
    store, a, _, c = chain
    writer, deleter = sessions
    writer.execute(text(_EDGE), {"c": c, "a": a})
    with pytest.raises(DBAPIError, match="lock timeout"):
        deleter.execute(text("DELETE FROM jobs WHERE id = :a"), {"a": a})
    deleter.rollback()
    writer.commit()
    assert (c, a) in _edges(store)


def test_pg_an_edge_to_a_job_deleted_meanwhile_is_refused(
        chain: tuple[Store, int, int, int], sessions: tuple[Connection, Connection]) -> None:
    store, a, b, c = chain
    writer, deleter = sessions
    deleter.execute(text("DELETE FROM jobs WHERE id = :a"), {"a": a})
    # The delete is not committed: the writer's check waits for it...
    with pytest.raises(DBAPIError, match="lock timeout"):
        writer.execute(text(_EDGE), {"c": c, "a": a})
    writer.rollback()
    deleter.commit()
    # ...and once it is, finds the job gone.
    with pytest.raises(IntegrityError, match=f"an edge names job {a}"):
        writer.execute(text(_EDGE), {"c": c, "a": a})
    writer.rollback()
    assert _edges(store) == {(c, b)}


_ATTEMPT = ("INSERT INTO attempts (job_id, attempt, worker_id, state, dispatched_at) "
            "VALUES (:job, 1, :worker, 'dispatched', 0)")


@pytest.fixture
def worker(chain: tuple[Store, int, int, int]) -> int:
    return chain[0].workers.register("w", ["default"], 1, lease_seconds=300).id


def test_an_attempt_names_a_job_and_a_worker_that_exist(
        chain: tuple[Store, int, int, int], worker: int) -> None:
    store, a, _, _ = chain
    message = _refused(store, _ATTEMPT, {"job": 987654, "worker": worker})
    if store.backend != "sqlite":
        assert "attempts: no job 987654" in message
    message = _refused(store, _ATTEMPT, {"job": a, "worker": 987654})
    if store.backend != "sqlite":
        assert "attempts: no worker 987654" in message
    with store.engine.begin() as conn:  # both exist: accepted
        conn.execute(text(_ATTEMPT), {"job": a, "worker": worker})
    assert _count(store, "SELECT count(*) FROM attempts") == 1


def test_deleting_a_job_deletes_its_attempts(
        chain: tuple[Store, int, int, int], worker: int) -> None:
    store, a, b, _ = chain
    with store.engine.begin() as conn:
        for job in (a, b):
            conn.execute(text(_ATTEMPT), {"job": job, "worker": worker})
        conn.execute(text("DELETE FROM jobs WHERE id = :a"), {"a": a})
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT job_id FROM attempts")).scalars().all() == [b]


def test_a_worker_that_attempts_name_cannot_be_deleted(
        chain: tuple[Store, int, int, int], worker: int) -> None:
    store, a, _, _ = chain
    with store.engine.begin() as conn:  # the job names no worker (it is not running)
        conn.execute(text(_ATTEMPT), {"job": a, "worker": worker})
    message = _refused(store, "DELETE FROM workers WHERE id = :w", {"w": worker})
    if store.backend != "sqlite":
        assert f"workers: attempts still name worker {worker}" in message
    assert _count(store, "SELECT count(*) FROM workers") == 1
    idle = store.workers.register("idle", ["default"], 1, lease_seconds=300).id
    with store.engine.begin() as conn:  # no attempt names it: it goes
        conn.execute(text("DELETE FROM workers WHERE id = :w"), {"w": idle})


def test_pg_refuses_a_change_of_an_attempts_job_or_worker(
        chain: tuple[Store, int, int, int], worker: int) -> None:
    store, a, b, _ = chain
    _pg_only(store)
    with store.engine.begin() as conn:
        conn.execute(text(_ATTEMPT), {"job": a, "worker": worker})
    message = _refused(store, "UPDATE attempts SET job_id = :b", {"b": b})
    assert "attempts: the columns that tie rows together cannot change" in message
    _refused(store, "UPDATE attempts SET worker_id = NULL")


def _explain_dispatch(store: Store, job: int, worker: int, *, lock_held: bool) -> str:
    """EXPLAIN ANALYZE of the dispatch of ``job`` on ``worker``, rolled back."""
    from taskyard.store.postgresql import cycle

    sql = cycle.DISPATCH.replace("{now}", store.now_sql)
    params = cycle.dispatch_params([(job, worker)], {worker: "w"}, {worker}, [], last=True)
    conn = store.engine.raw_connection()  # the store's session settings (its clock)
    try:
        cursor = conn.cursor()
        if lock_held:  # as the statement that takes the cycle's lock leaves it
            cursor.execute(f"SELECT set_config('{cycle.HELD_SETTING}', 'on', true)")
        cursor.execute(f"EXPLAIN ANALYZE {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        conn.rollback()
    finally:
        conn.close()
    assert "Update on jobs" in plan
    return plan


def test_pg_a_dispatch_under_the_cycle_lock_checks_its_attempts_itself(
        chain: tuple[Store, int, int, int], worker: int) -> None:
    """Under the lock the attempts insert trigger is not called (its job is the row the
    dispatch updated, its worker checked by jobs.worker_id's foreign key), and neither
    are foreign keys of attempts; without the lock the trigger is."""
    store, a, _, _ = chain
    _pg_only(store)
    checked = _explain_dispatch(store, a, worker, lock_held=True)
    assert "taskyard_attempts_refer" not in checked and "fk_attempts" not in checked
    assert "Trigger taskyard_attempts_refer" in _explain_dispatch(store, a, worker,
                                                                   lock_held=False)
    assert _count(store, "SELECT count(*) FROM attempts") == 0
