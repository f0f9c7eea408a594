"""Each daemon's connections to PostgreSQL (docs/operations/connections.md).

A daemon keeps one pooled connection open between uses, and one more per listener
that LISTENs on a connection of its own (none with ``--shared-listener``, none when
it polls): a worker or a scheduler at rest holds two. Under load it opens more, up to
its ceiling, and closes them once given back: a worker's loop, heartbeat and a stage
report may each hold one at a time. ``--max-db-connections N`` caps a daemon at N in
all, listeners included; its threads then wait their turn for a connection.
"""

from __future__ import annotations

from typing import Any

import click

from taskyard.cli.main import State

WORKER_MOST = 3
"""A worker's pooled connections at once: its loop's report, its heartbeat, a stage."""
SCHEDULER_MOST = 2
"""A scheduler's: its cycle, and one for what runs beside it (pruning, aging)."""

MAX_DB = click.option(
    "--max-db-connections", "max_db", type=click.IntRange(1, 1000), default=None, metavar="N",
    help="PostgreSQL: open at most this many connections, listeners included (a daemon "
         "at rest keeps two: one pooled, one listening).")


def budget(state: State, *, most: int, listeners: int, max_db: int | None) -> dict[str, Any]:
    """``keep`` and ``most`` of a daemon's pool: ``most`` pooled connections beside its
    ``listeners``, or what ``max_db`` leaves them (a usage error when that is none)."""
    from taskyard.store.postgresql.listen import own_connection  # noqa: PLC0415

    url = state.url
    if not url.partition("://")[0].startswith("postgres"):
        return {}
    own = listeners if own_connection(url, state.connections()) else 0
    if max_db is not None:
        if max_db <= own:
            raise click.BadParameter(
                f"{max_db} leaves none for queries beside {own} listening connection"
                f"{'s' if own > 1 else ''} (use more, or --shared-listener)",
                param_hint="--max-db-connections")
        most = max_db - own
    return {"keep": 1, "most": most}
