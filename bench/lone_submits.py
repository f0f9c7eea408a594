"""Lone submits to one live worker, one after another, on PostgreSQL: the time of each
``submit`` call and the client's CPU, with the worker's jobs ended between submits
(``idle``: the worker is as the last cycle read it), left running (``busy``: each
placement changes what the next submit finds), or each ended once the next one is
placed (``last``: jobs that take about as long as the time between submits). No worker
daemon runs: a worker is registered (capacity 100,000) and the jobs stay as the run
leaves them, so the figures are the submit path's alone (see
docs/operations/postgresql.md, "A busy worker").

``--count`` (a scratch cluster whose ``pg_stat_statements`` is loaded: it turns the
server's tracking on for the run, ``ALTER SYSTEM``): the dispatch statement's calls and
the jobs they placed (``dispatch_calls``, ``dispatch_rows``) — a guarded dispatch that
found its guess wrong placed nothing, and the submit's cycle then dispatched in a call
of its own.

``--pause MS``: each submit after that many milliseconds with nothing to do, as in W2
(which waits 10 ms after each job's end): the submit's own time then includes what an
idle pause costs on this machine (cold caches, a sleeping CPU); ``round_trip_p50_ms``
is a ``SELECT 1``'s after the same pause, on a connection of its own.

Usage: python -m bench.lone_submits --db URL [--jobs 1500] [--mode idle,busy,last]
       [--workers 1] [--count] [--pause MS]
The database in URL is emptied first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

import psycopg

from bench.throughput import fresh

WARMUP = 50
"""Submits left out of the figures (the first prepares the statements)."""


def _tracking(conn: psycopg.Connection[Any]) -> bool:
    """Statements counted from here (``pg_stat_statements``), if the server allows."""
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        conn.execute("ALTER SYSTEM SET pg_stat_statements.track = 'top'")
        conn.execute("SELECT pg_reload_conf()")
        conn.execute("SELECT pg_stat_statements_reset()")
    except psycopg.Error:
        return False
    return True


def _dispatches(conn: psycopg.Connection[Any]) -> dict[str, int]:
    row = conn.execute(
        "SELECT COALESCE(sum(calls), 0), COALESCE(sum(rows), 0) FROM pg_stat_statements s "
        "JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database() "
        "AND query LIKE 'WITH v(job, w, name, chan, carry)%'").fetchone()
    conn.execute("ALTER SYSTEM RESET pg_stat_statements.track")
    conn.execute("SELECT pg_reload_conf()")
    return {"dispatch_calls": int(row[0]), "dispatch_rows": int(row[1])} if row else {}


def run(url: str, mode: str, jobs: int, *, count: bool = False,
        workers: int = 1, pause: float = 0.0) -> dict[str, Any]:
    """``jobs`` lone submits (after :data:`WARMUP` more) in ``mode``, to ``workers``
    registered workers, each after ``pause`` idle seconds."""
    yard = fresh(url)
    side = psycopg.connect(url, autocommit=True)
    try:
        for n in range(workers):
            yard.store.workers.register(f"bench-worker-{n}", ["default"], 100_000,
                                        lease_seconds=3600)
        walls: list[float] = []
        cpus: list[float] = []
        counted = False
        before: int | None = None
        trips: list[float] = []
        for n in range(WARMUP + jobs):
            if n == WARMUP and count:
                counted = _tracking(side)
            if pause:
                time.sleep(pause)
                wall = time.perf_counter()
                side.execute("SELECT 1")
                trips.append((time.perf_counter() - wall) * 1000)
                time.sleep(pause)
            wall, cpu = time.perf_counter(), time.process_time()
            job_id = yard.submit("noop")
            walls.append((time.perf_counter() - wall) * 1000)
            cpus.append((time.process_time() - cpu) * 1000)
            ended = {"idle": job_id, "last": before}.get(mode)
            if ended is not None:
                side.execute("UPDATE jobs SET state = 'succeeded', worker_id = NULL, "
                             "finished_at = 1 WHERE id = %s AND state = 'dispatched'",
                             (ended,))
            before = job_id
        states = dict(side.execute("SELECT state, count(*) FROM jobs GROUP BY state").fetchall())
        walls, cpus = walls[WARMUP:], cpus[WARMUP:]
        return {"mode": mode, "jobs": jobs, "p50_ms": round(statistics.median(walls), 3),
                "mean_ms": round(statistics.fmean(walls), 3),
                "p99_ms": round(sorted(walls)[int(len(walls) * 0.99)], 3),
                "client_cpu_ms": round(statistics.fmean(cpus), 3), "states": states,
                **({"pause_ms": round(pause * 1000, 3), "round_trip_p50_ms": round(
                    statistics.median(trips[WARMUP:]), 3)} if pause else {}),
                **(_dispatches(side) if counted else {})}
    finally:
        side.close()
        yard.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="a PostgreSQL URL (emptied first)")
    parser.add_argument("--jobs", type=int, default=1500)
    parser.add_argument("--mode", default="idle,busy,last")
    parser.add_argument("--workers", type=int, default=1, help="workers registered")
    parser.add_argument("--count", action="store_true",
                        help="count the dispatch statements (pg_stat_statements)")
    parser.add_argument("--pause", type=float, default=0.0, metavar="MS",
                        help="idle milliseconds before each submit (W2 waits 10)")
    args = parser.parse_args(argv)
    if args.pause < 0:
        parser.error("--pause: a number of milliseconds, 0 or more")
    for mode in args.mode.split(","):
        print(json.dumps(run(args.db, mode, args.jobs, count=args.count,
                             workers=args.workers, pause=args.pause / 1000)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
