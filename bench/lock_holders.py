"""Who holds the scheduling cycle's lock, and what its session is doing meanwhile, sampled
on a live PostgreSQL (``pg_locks`` joined with ``pg_stat_activity``, every daemon named
by ``PGAPPNAME``): the share of samples in which the lock is held, and of those:

- ``server``: the holder's backend is running a statement;
- ``between_round_trips``: it is idle in its transaction, waiting for the client's next
  statement (the client computing, or waiting for a CPU);
- ``mid_pipeline``: it waits for the rest of a pipeline its client began sending
  (``active``, wait event ``ClientRead``).

Each class is also given per kind of process (the application name up to its first
``-``: ``worker-3`` counts as ``worker``). Run it beside a fleet (``bench.fleet``) or a
deployment under load; each sample is one query on its own connection.

Usage: python -m bench.lock_holders --db URL [--seconds 20] [--interval-ms 5]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from typing import Any

import psycopg

from taskyard.store.postgresql.cycle import ADVISORY_KEY

HOLDER = (
    "SELECT a.state, a.wait_event, a.application_name FROM pg_locks l "
    "JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted "
    f"AND l.classid = {ADVISORY_KEY >> 32} AND l.objid = {ADVISORY_KEY & 0xFFFFFFFF} "
    "AND l.objsubid = 1 "
    "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())")
"""SQL: the state, wait event and application name of the lock's holder, if any, in this
database (each database has its own: another one's cycle, on the same server, is not
this one's)."""


def kind_of(state: str | None, wait_event: str | None) -> str:
    """The class of a holder's session (see the module docstring)."""
    if state == "active":
        return "mid_pipeline" if wait_event == "ClientRead" else "server"
    if state is not None and state.startswith("idle in transaction"):
        return "between_round_trips"
    return "other"


def sample(url: str, seconds: float, interval: float) -> dict[str, Any]:
    """Sample the lock's holder for ``seconds``, every ``interval`` seconds."""
    kinds: collections.Counter[str] = collections.Counter()
    by_process: collections.Counter[str] = collections.Counter()
    taken = held = 0
    with psycopg.connect(url, autocommit=True) as conn:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            row = conn.execute(HOLDER).fetchone()
            taken += 1
            if row is not None:
                held += 1
                kind = kind_of(row[0], row[1])
                kinds[kind] += 1
                by_process[f"{(row[2] or '?').split('-')[0]}/{kind}"] += 1
            time.sleep(interval)
    return {"samples": taken, "held": held,
            "held_share": round(held / taken, 3) if taken else 0.0,
            "of_held": {k: round(v / held, 3) for k, v in kinds.most_common()} if held else {},
            "by_process": dict(by_process.most_common())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--db", required=True, help="a PostgreSQL URL (libpq form too)")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--interval-ms", type=float, default=5.0)
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.interval_ms <= 0:
        parser.error("--seconds and --interval-ms must be positive")
    print(json.dumps(sample(args.db, args.seconds, args.interval_ms / 1000)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
