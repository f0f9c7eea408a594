"""Retention's statements, written once for both backends: old finished work found in
bounded batches, and deleted."""

from __future__ import annotations

from collections.abc import Sequence

from taskyard.core.states import TERMINAL
from taskyard.store.cursor import Cursor

_ENDED = ", ".join(f"'{s}'" for s in sorted(TERMINAL))
_CHUNK = 500


def old_jobs(raw: Cursor, older_than: float, limit: int) -> list[int]:
    """Jobs that ended more than ``older_than`` seconds ago, but those an unfinished job
    still requires and those of a graph still running or blocked (it may get new tasks
    or be retried); at most ``limit``."""
    return [int(j) for (j,) in raw.all(
        f"SELECT j.id FROM jobs j WHERE j.state IN ({_ENDED}) "
        "AND j.finished_at < {now} - ? "
        "AND NOT EXISTS (SELECT 1 FROM dependencies d JOIN jobs c ON c.id = d.job_id "
        f"WHERE d.requires_id = j.id AND c.state NOT IN ({_ENDED})) "
        "AND NOT EXISTS (SELECT 1 FROM graphs g WHERE g.id = j.graph_id "
        "AND g.state IN ('running', 'blocked')) LIMIT ?", (older_than, limit))]


def old_events(raw: Cursor, older_than: float, limit: int) -> list[int]:
    """Events created more than ``older_than`` seconds ago; at most ``limit``."""
    return [int(e) for (e,) in raw.all(
        "SELECT id FROM events WHERE created_at < {now} - ? LIMIT ?", (older_than, limit))]


def empty_graphs(raw: Cursor, older_than: float, limit: int) -> list[int]:
    """Graphs that ended more than ``older_than`` seconds ago and have no job left."""
    return [int(g) for (g,) in raw.all(
        "SELECT g.id FROM graphs g WHERE g.state IN ('finished', 'canceled') "
        "AND g.finished_at < {now} - ? "
        "AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.graph_id = g.id) LIMIT ?",
        (older_than, limit))]


def delete_jobs(raw: Cursor, ids: Sequence[int]) -> None:
    """The jobs with their attempts, stages and edges (both ways)."""
    for start in range(0, len(ids), _CHUNK):
        part = ids[start:start + _CHUNK]
        for table, column in (("dependencies", "requires_id"), ("attempts", "job_id"),
                              ("stages", "job_id"), ("dependencies", "job_id"),
                              ("jobs", "id")):
            which, params = raw.member(column, part)
            raw.run(f"DELETE FROM {table} WHERE {which}", params)


def delete_rows(raw: Cursor, table: str, ids: Sequence[int]) -> None:
    """Rows of ``events`` or ``graphs`` by id."""
    assert table in ("events", "graphs")
    for start in range(0, len(ids), _CHUNK):
        which, params = raw.member("id", ids[start:start + _CHUNK])
        raw.run(f"DELETE FROM {table} WHERE {which}", params)
