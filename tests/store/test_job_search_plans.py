"""The jobs search in end order walks ``ix_jobs_finished_id`` whatever its filters: the
plan SQLite chooses for every statement of such a page, on both stores' shared code.
(SQLite took ``ix_jobs_state_id`` for ``state = 'failed'`` and sorted every failed job
by end time: 746 ms a page at 10,000,000 jobs, `python -m bench.ops_history`.)"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event, text

from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.store import Store
from taskyard.store.reads.job_search import JobQuery, search_jobs


def _plans(store: Store, query: JobQuery) -> list[str]:
    """EXPLAIN QUERY PLAN of every SELECT one page of ``query`` runs."""
    seen: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            seen.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", record)
    try:
        search_jobs(store, query, limit=10)
    finally:
        event.remove(store.engine, "before_cursor_execute", record)
    plans = []
    with store.engine.connect() as conn:
        for statement, parameters in seen:
            rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
            plans.append(" | ".join(str(r[-1]) for r in rows))
    return plans


@pytest.mark.parametrize("query", [
    JobQuery(states=("failed",), sort="-finished"),
    JobQuery(states=("failed", "error"), types=("t",), sort="finished"),
    JobQuery(types=("t",), label="x", sort="-finished"),
])
def test_end_order_walks_the_end_index_whatever_the_filters(store: Store,
                                                             query: JobQuery) -> None:
    if store.backend != "sqlite":
        pytest.skip("SQLite's planner: PostgreSQL weighs the page's LIMIT")
    store.task_types.put(TaskTypeSpec("t", "shell:true"))
    store.jobs.submit([JobSubmission("t") for _ in range(3)])
    with store.engine.begin() as conn:
        conn.execute(text("ANALYZE"))
    plans = _plans(store, query)
    walks = [p for p in plans if "ix_jobs_finished_id" in p]
    assert len(walks) == 2, plans  # the page's bound, then the page
    assert not [p for p in plans if "TEMP B-TREE" in p], plans
