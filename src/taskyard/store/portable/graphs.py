"""Graphs' bookkeeping written once for both backends."""

from __future__ import annotations

from collections.abc import Sequence

from taskyard.store.cursor import Cursor


def graphs_progressed(raw: Cursor, graph_ids: Sequence[int]) -> None:
    """Jobs of these graphs made progress (started): their stall clocks start again."""
    which, params = raw.member("id", graph_ids)
    raw.run(f"UPDATE graphs SET last_progress_at = {{now}}, stalled_at = NULL WHERE {which}",
            params)
