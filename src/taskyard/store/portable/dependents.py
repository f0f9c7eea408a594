"""What a job's end does to the jobs that require it (seed 003, option 3), written once
for both backends: the edges from the parents, the waiting children's counters (locked
as the update locks them), and one update per group of equal changes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from taskyard.store.cursor import Cursor
from taskyard.store.driver.params import UpdateDependents

STILL_WAITING = "(state = 'waiting') IS TRUE"
"""``state = 'waiting'``, written so that no index on ``state`` can serve it: the
statements that use it name their rows by id, and the primary key is always the plan.
Without statistics (a graph just bulk-inserted, before autovacuum's ANALYZE),
PostgreSQL took a state index and read every waiting job for each 500-id chunk:
releasing the 100,000 children of a fan-out's root took 28 s."""


def read_edges_from(raw: Cursor, parents: Sequence[int]) -> Iterator[tuple[Any, ...]]:
    """The dependency edges from the jobs of ``parents``: (child, parent, condition),
    streamed (a fan-out's root has one per member)."""
    which, params = raw.member("requires_id", parents)
    return raw.each(f"SELECT job_id, requires_id, condition FROM dependencies WHERE {which}",
                    params)


def lock_waiting(raw: Cursor, ids: Sequence[int]) -> list[tuple[Any, ...]]:
    """The jobs of ``ids`` still waiting: (id, unmet deps, dep failures, convergence,
    kind), locked as the update locks them (a concurrent end of another of their parents
    waits for this commit, or this read waits for its and reads what it wrote)."""
    which, params = raw.member("id", ids)
    return raw.all("SELECT id, unmet_deps, dep_failures, convergence, kind FROM jobs "
                   f"WHERE {which} AND {STILL_WAITING}{raw.row_lock}", params)


def update_dependents(raw: Cursor, params: UpdateDependents) -> list[tuple[Any, ...]]:
    """Counters and state in one write per child: (id, graph, routing, delayed) of the
    updated. Released (pending, or awaiting) with edges still open (convergence 'any'):
    the counter is cleared, as a waiting job has unmet edges and a released one none.
    Released pending, a job for later (``delayed_until``) whose time has come joins the
    placement index at once (the cycle that follows places it); ``delayed``: when it waits
    on (its ``delayed_until``, None when it does not)."""
    which, ids = raw.member("id", params.ids)
    released = params.state in ("pending", "awaiting")
    unmet = "0" if released else "unmet_deps - ?"
    state = "" if params.state is None else ", state = ?"
    if params.state == "pending":
        state += (", delayed_until = CASE WHEN delayed_until <= {now} THEN NULL "
                  "ELSE delayed_until END")
    ended = params.state is not None and not released
    values: list[Any] = [] if released else [params.resolved]
    values.append(params.fails)
    if params.state is not None:
        values.append(params.state)
    if ended:
        values.append(params.why)
    return raw.all(
        f"UPDATE jobs SET unmet_deps = {unmet}, dep_failures = dep_failures + ?{state}"
        f"{', finished_at = {now}, error = ?' if ended else ''} "
        f"WHERE {which} AND {STILL_WAITING} "
        # The column itself, tested by the caller: SQLite 3.40 answers ``delayed_until IS
        # NOT NULL`` (and IS NULL) wrongly in a RETURNING clause of a table whose rowid
        # alias is declared NOT NULL, as ours are: true for every row. Every release then
        # woke the scheduler for a job for later that was not one (a cycle of its own at
        # each hand-off of a chain, racing the reporting worker's for the lock).
        "RETURNING id, graph_id, routing, delayed_until", (*values, *ids))
