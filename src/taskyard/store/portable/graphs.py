"""Graphs' bookkeeping written once for both backends: progress, jobs done, state."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taskyard.core.states import FAILURES, TERMINAL
from taskyard.store.cursor import Cursor
from taskyard.store.driver.params import ReadGraphs, SetGraphState

_FAILURES = ", ".join(f"'{s.value}'" for s in sorted(FAILURES))
_ENDED = ", ".join(f"'{s.value}'" for s in sorted(TERMINAL))


def graphs_progressed(raw: Cursor, graph_ids: Sequence[int]) -> None:
    """Jobs of these graphs made progress (started): their stall clocks start again."""
    which, params = raw.member("id", graph_ids)
    raw.run(f"UPDATE graphs SET last_progress_at = {{now}}, stalled_at = NULL WHERE {which}",
            params)


def count_done(raw: Cursor, graph_id: int, done: int) -> tuple[Any, ...] | None:
    """``done`` more jobs of the graph ended (progress too): (jobs done, jobs in all,
    state, routing) after it; None if there is no such graph."""
    return raw.first("UPDATE graphs SET jobs_done = jobs_done + ?, last_progress_at = {now}, "
                     "stalled_at = NULL WHERE id = ? "
                     "RETURNING jobs_done, jobs_total, state, routing", (done, graph_id))


def edge_conditions(raw: Cursor, parents: Sequence[int]) -> list[tuple[Any, ...]]:
    """The conditions of the edges from the jobs of ``parents``: (parent, condition)."""
    which, params = raw.member("requires_id", parents)
    return raw.all(f"SELECT requires_id, condition FROM dependencies WHERE {which}", params)


def failed_from_outside(raw: Cursor, graph_id: int, ids: Sequence[int]) -> list[int]:
    """Of the jobs of ``ids`` (of the graph), those with a failed parent outside it."""
    which, params = raw.member("d.job_id", ids)
    return sorted({int(j) for (j,) in raw.all(
        "SELECT d.job_id FROM dependencies d JOIN jobs p ON p.id = d.requires_id "
        f"WHERE {which} AND p.state IN ({_FAILURES}) "
        "AND (p.graph_id IS NULL OR p.graph_id <> ?)", (*params, graph_id))})


def set_graph_state(raw: Cursor, params: SetGraphState) -> bool:
    """The graph enters ``state``, guarded by the states it may leave for it (running;
    or blocked too, to be canceled); False when it was in none of them."""
    ends = params.state in ("finished", "canceled")
    sources = "('running', 'blocked')" if params.state == "canceled" else "('running')"
    return raw.run("UPDATE graphs SET state = ?, finished_at = CASE WHEN ? THEN {now} "
                   f"ELSE finished_at END WHERE id = ? AND state IN {sources}",
                   (params.state, ends, params.graph_id)) == 1


GRAPH_NAMES = ("id", "state", "routing", "created_at", "finished_at", "jobs_total",
               "jobs_done", "stalled_at")
_GRAPHS = f"SELECT {', '.join(GRAPH_NAMES)} FROM graphs"


def insert_graph(raw: Cursor, routing: str, jobs: int) -> int:
    """A running graph of ``jobs`` jobs; its id."""
    row = raw.first("INSERT INTO graphs (state, routing, created_at, last_progress_at, "
                    "jobs_total) VALUES ('running', ?, {now}, {now}, ?) RETURNING id",
                    (routing, jobs))
    assert row is not None
    return int(row[0])


def read_graphs(raw: Cursor, params: ReadGraphs) -> list[dict[str, Any]]:
    """One graph (``graph_id``), or the newest ones (of ``state``), as mappings of
    :data:`GRAPH_NAMES`."""
    if params.graph_id is not None:
        rows = raw.all(f"{_GRAPHS} WHERE id = ?", (params.graph_id,))
    elif params.state is not None:
        rows = raw.all(f"{_GRAPHS} WHERE state = ? ORDER BY id DESC LIMIT ?",
                       (params.state, params.limit))
    else:
        rows = raw.all(f"{_GRAPHS} ORDER BY id DESC LIMIT ?", (params.limit,))
    return [dict(zip(GRAPH_NAMES, row, strict=True)) for row in rows]


def lock_graph_jobs(raw: Cursor, graph_id: int) -> list[tuple[Any, ...]]:
    """The graph's jobs, locked (tasks added to it may require them: a concurrent end of
    one must not read its dependents before the new edges are visible): (label, id,
    state, definition hash)."""
    return raw.all("SELECT label, id, state, definition_hash FROM jobs WHERE graph_id = ? "
                   f"ORDER BY id{raw.row_lock}", (graph_id,))


def grow_graph(raw: Cursor, graph_id: int, jobs: int, reopen: bool) -> None:
    """``jobs`` more jobs in the graph; ``reopen``: a finished graph runs again."""
    raw.run("UPDATE graphs SET jobs_total = jobs_total + ?, last_progress_at = {now}"
            f"{_REOPEN if reopen else ''} "
            "WHERE id = ?", (jobs, graph_id))


_REOPEN = ", state = 'running', finished_at = NULL"


def task_type_names(raw: Cursor, names: Sequence[str]) -> set[str]:
    """Which of ``names`` are task types."""
    if not names:
        return set()
    which, params = raw.member("name", names)
    return {n for (n,) in raw.all(f"SELECT name FROM task_types WHERE {which}", params)}


def cancel_graph_jobs(raw: Cursor, graph_id: int) -> tuple[list[int], list[tuple[Any, ...]]]:
    """Every unfinished job of the graph is canceled (running ones keep
    ``cancel_requested`` for their workers), with its active attempt: the workers that
    ran some, and (id, attempt, routing) of each canceled job."""
    workers = [int(w) for (w,) in raw.all(
        "SELECT DISTINCT worker_id FROM jobs WHERE graph_id = ? "
        "AND state IN ('dispatched', 'running') AND worker_id IS NOT NULL", (graph_id,))]
    rows = raw.all(
        "UPDATE jobs SET cancel_requested = state IN ('dispatched', 'running'), "
        "state = 'canceled', worker_id = NULL, deadline = NULL, finished_at = {now}, "
        f"error = 'graph canceled' WHERE graph_id = ? AND state NOT IN ({_ENDED}) "
        "RETURNING id, attempt, routing", (graph_id,))
    for start in range(0, len(rows), 500):
        which, params = raw.member("job_id", [r[0] for r in rows[start:start + 500]])
        raw.run(f"UPDATE attempts SET state = 'canceled', finished_at = {{now}} "
                f"WHERE {which} AND state IN ('dispatched', 'running')", params)
    raw.run("UPDATE graphs SET jobs_done = jobs_total WHERE id = ?", (graph_id,))
    return workers, rows
