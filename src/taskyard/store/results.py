"""Inputs a worker needs besides the job's own args: upstream results for ``$result``
markers (seed 004's substitution, done at dispatch) and finished stages' results."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, select

from taskyard.core.graph import result_references
from taskyard.store import schema as t
from taskyard.store.records import loads
from taskyard.store.resolution import ResolutionMixin
from taskyard.store.stages import StageMixin

_J = t.jobs


class ResultsMixin(StageMixin, ResolutionMixin):
    def _upstream_results(self, conn: Connection, rows: Sequence[Any]) -> dict[int, dict[str, Any]]:
        """Results of the labels that ``{$result: LABEL}`` markers name, per graph."""
        wanted: dict[int, set[str]] = {}
        for r in rows:
            if r.graph_id is not None and '"$result"' in r.args:
                wanted.setdefault(r.graph_id, set()).update(result_references(loads(r.args)))
        found: dict[int, dict[str, Any]] = {}
        for graph_id, labels in wanted.items():
            found[graph_id] = {
                label: loads(result)
                for label, result in conn.execute(
                    select(_J.c.label, _J.c.result).where(
                        _J.c.graph_id == graph_id, _J.c.label.in_(labels)
                    )
                )
            }
        return found

