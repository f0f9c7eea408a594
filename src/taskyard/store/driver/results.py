"""What the dialects' hot-path statements hand back, in the same shape on both."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

DISPATCH_SLICE = 500
"""Most jobs one dispatch statement places."""

FIRST_PAGE = 16
"""The smallest page of candidates, and the first one a PostgreSQL cycle reads with its
snapshot, before it knows its room (then: the last cycle's page, see Store.first_page).
Here, not in transitions/candidates.py, so that a submit need not import the placement
code."""


def slices(ids: Sequence[int], size: int = DISPATCH_SLICE) -> list[Sequence[int]]:
    return [ids[i:i + size] for i in range(0, len(ids), size)]


@dataclass(slots=True)
class Dispatched:
    """What one cycle's dispatch statements placed."""

    placed: list[int] = field(default_factory=list)
    per_worker: dict[int, list[int]] = field(default_factory=dict)
    carried: dict[int, list[str]] = field(default_factory=dict)
    """Per worker, what each of its dispatch statements carried in its
    wake-up (the jobs, or "" when the worker must read them)."""
    woken: set[str] = field(default_factory=set)
    """Channels the statements woke already."""
    scans_on: bool = False
    """The statements turned the planner's scans back on."""


@dataclass(frozen=True, slots=True)
class Placed:
    """What is placed on a worker: ``rows`` of the jobs it does not know yet (as the
    details statement reads them), or None with their ``ids`` when it must read them;
    ``active``: every attempt dispatched to or running on it."""

    rows: list[tuple[Any, ...]] | None
    ids: list[int]
    active: frozenset[tuple[int, int]]
