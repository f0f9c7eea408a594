"""Graphs' bookkeeping written once for both backends: progress, jobs done, state."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taskyard.core.states import FAILURES
from taskyard.store.cursor import Cursor
from taskyard.store.driver.params import SetGraphState

_FAILURES = ", ".join(f"'{s.value}'" for s in sorted(FAILURES))


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
