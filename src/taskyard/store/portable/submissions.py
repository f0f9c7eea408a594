"""What a submit looks up before it inserts, written once for both backends: the job
that holds a unique key, the runs of a prerequisite it may reuse, the database clock.
Concurrent submitters serialise on what they look up (PostgreSQL: an advisory lock per
key, see postgresql/driver.py; SQLite: write transactions are serial already)."""

from __future__ import annotations

from typing import Any

from taskyard.core.prerequisites import IN_FLIGHT
from taskyard.core.states import TERMINAL
from taskyard.store.cursor import Cursor
from taskyard.store.driver.params import ReadKeyHolders, ReadPriorRuns

_ENDED = ", ".join(f"'{s}'" for s in sorted(TERMINAL))
_IN_FLIGHT = ", ".join(f"'{s}'" for s in sorted(IN_FLIGHT))
_HOLDER = (
    "SELECT id, state FROM jobs WHERE type = ? AND unique_key = ? "
    f"AND (state NOT IN ({_ENDED}) OR created_at > {{now}} - ?) ORDER BY id DESC LIMIT 1")


def read_now(raw: Cursor) -> float:
    """The database clock."""
    row = raw.first("SELECT {now}")
    assert row is not None
    return float(row[0])


def key_holders(raw: Cursor, params: ReadKeyHolders) -> list[tuple[Any, ...] | None]:
    """Per (type, key, window) of ``params.keys``: (id, state) of the job that holds the
    key — not ended, or created less than ``window`` seconds ago — or None."""
    return [raw.first(_HOLDER, (type_name, key, window))
            for type_name, key, window in params.keys]


def prior_runs(raw: Cursor, params: ReadPriorRuns) -> list[tuple[Any, ...]]:
    """A prerequisite's runs a launch may reuse: the newest one in flight (locked: its
    completion, which reads the new edge to release the launch, must wait for this
    transaction, or it would miss the edge and the launch wait for ever; if it completed
    first, the lock reads nothing here), then the newest success inside the cache
    window: (id, state, finished at)."""
    flying = raw.all(f"SELECT id, state, finished_at FROM jobs WHERE type = ? "
                     f"AND state IN ({_IN_FLIGHT}) AND args = ? ORDER BY id DESC LIMIT 1"
                     f"{raw.row_lock}", (params.type, params.args))
    recent = raw.all("SELECT id, state, finished_at FROM jobs WHERE type = ? "
                     "AND state = 'succeeded' AND finished_at >= {now} - ? AND args = ? "
                     "ORDER BY finished_at DESC LIMIT 1",
                     (params.type, params.cache, params.args))
    return [*flying, *recent]
