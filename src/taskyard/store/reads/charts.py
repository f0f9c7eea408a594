"""What the charts and ``/metrics`` read of the history rollups (see
``store/transitions/history.py``): a window's buckets for all pools and types or one of
each, the all-time totals, and which pools and types have history. Every read walks the
rollups' primary key (granularity, bucket, pool, type): a week is 84 buckets per pool and
type, whatever the number of jobs behind them."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, or_, select

from taskyard.core.history import BOUNDS, WINDOWS, Counts, bucket_of
from taskyard.store import schema as t
from taskyard.store.transitions.history import counts_of

if TYPE_CHECKING:
    from taskyard.store import Store

_H = t.history
_SUMMED = ("arrived", "started", "succeeded", "failed", "errored", "canceled", "finished",
           "wait_sum", "cycle_sum", "depth_sum", "depth_n")


def window_rows(store: Store, window: str, *, pool: str | None = None,
                type: str | None = None) -> tuple[float, dict[float, Counts]]:
    """The database clock, and the window's buckets (all pools and types added up,
    or only ``pool``'s and ``type``'s): the counts summed by the database, the
    histograms of the rows that hold any added here."""
    span, granularity = WINDOWS[window]
    with store.read() as tx:
        now = float(tx.conn.execute(select(store.now_expr)).scalar_one())
        where = [_H.c.granularity == granularity,
                 _H.c.bucket > bucket_of(now - span, granularity)]
        if pool is not None:
            where.append(_H.c.pool == pool)
        if type is not None:
            where.append(_H.c.type == type)
        sums = tx.conn.execute(
            select(_H.c.bucket, *(func.sum(_H.c[c]) for c in _SUMMED),
                   func.max(_H.c.depth_max)).where(*where).group_by(_H.c.bucket)).all()
        hists: dict[float, list[list[int]]] = {}
        for bucket, wait, cycle in tx.conn.execute(
                select(_H.c.bucket, _H.c.wait_hist, _H.c.cycle_hist)
                .where(*where, or_(_H.c.started > 0, _H.c.finished > 0))):
            both = hists.setdefault(float(bucket), [[0] * (len(BOUNDS) + 1),
                                                    [0] * (len(BOUNDS) + 1)])
            for total, text in zip(both, (wait, cycle), strict=True):
                for i, n in enumerate(json.loads(text)):
                    total[i] += n
    found: dict[float, Counts] = {}
    empty = [[0] * (len(BOUNDS) + 1)] * 2
    for row in sums:
        bucket = float(row[0])
        # PostgreSQL sums bigints as numeric: back to int, and the sums to float.
        values: dict[str, Any] = {name: (float if name.endswith("_sum") else int)(v or 0)
                                  for name, v in zip(_SUMMED, row[1:-1], strict=True)}
        wait, cycle = hists.get(bucket, empty)
        found[bucket] = Counts(**values, wait_hist=tuple(wait), cycle_hist=tuple(cycle),
                               depth_max=int(row[-1] or 0))
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
