"""What the charts and ``/metrics`` read of the history rollups (see
``store/transitions/history.py``): a window's buckets for all pools and types or one of
each, the all-time totals, and which pools and types have history. Every read walks the
rollups' primary key (granularity, bucket, pool, type): a week is 84 buckets per pool and
type, whatever the number of jobs behind them."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from sqlalchemy import select

from taskyard.core.history import WINDOWS, Counts, bucket_of
from taskyard.store import schema as t
from taskyard.store.transitions.history import counts_of

if TYPE_CHECKING:
    from taskyard.store import Store

_H = t.history


def window_rows(store: Store, window: str, *, pool: str | None = None,
                type: str | None = None) -> tuple[float, dict[float, Counts]]:
    """The database clock, and the window's buckets (all pools and types added up,
    or only ``pool``'s and ``type``'s)."""
    span, granularity = WINDOWS[window]
    with store.read() as tx:
        now = float(tx.conn.execute(select(store.now_expr)).scalar_one())
        query = select(_H).where(_H.c.granularity == granularity,
                                 _H.c.bucket > bucket_of(now - span, granularity))
        if pool is not None:
            query = query.where(_H.c.pool == pool)
        if type is not None:
            query = query.where(_H.c.type == type)
        found: dict[float, Counts] = {}
        for row in tx.conn.execute(query):
            counts = counts_of(row._mapping)
            bucket = float(row.bucket)
            found[bucket] = counts if bucket not in found else found[bucket].merge(counts)
    return now, found


def totals(store: Store) -> dict[tuple[str, str], Counts]:
    """All time, per (first pool, type)."""
    with store.read() as tx:
        return {(row.pool, row.type): counts_of(row._mapping)
                for row in tx.conn.execute(select(_H).where(_H.c.granularity == 0))}


def history_keys(store: Store) -> dict[str, list[str]]:
    """The pools and the task types that have history (all time), sorted."""
    pools: set[str] = set()
    types: set[str] = set()
    with store.read() as tx:
        for pool, type_ in tx.conn.execute(select(_H.c.pool, _H.c.type)
                                           .where(_H.c.granularity == 0)):
            pools.add(pool)
            types.add(type_)
    grouped: dict[str, list[str]] = defaultdict(list)
    grouped["pools"] = sorted(pools)
    grouped["types"] = sorted(types)
    return dict(grouped)
