"""Where a PostgreSQL drain's time goes: W1's completion phase (N no-op jobs queued,
then ``taskyard scheduler`` and one ``taskyard worker`` with their defaults), with the
CPU each process spent per job (from ``/proc``, through ``bench.fleet_probe.tree_cpu``:
the worker with its children, the server with every backend). With ``--statements``, also
``pg_stat_statements`` per statement: server time per job, runs and plans, nested
statements included, such as foreign-key checks (``track = all`` and ``track_planning``
on that database for the run). Counting costs the server CPU: the CPU figures of such a
run are higher than those of a run without it.

    python -m bench.drain_cost --pg postgresql://…/bench [--jobs 10000] [--runs 3]
                               [--statements] [--json]

Linux only (``/proc``), with the server on this machine. The database is dropped and
made afresh (as W1's runs do): give it one of its own, never one that holds data."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.fleet_probe import tree_cpu
from bench.peers.common import pg_url
from bench.throughput import daemons, fresh, settle, wait_file

STATEMENTS = 10


def _postmaster(admin: Any) -> int:
    """The pid of the server ``admin`` is connected to (the parent of its backend): the
    server must run on this machine."""
    backend = admin.execute("SELECT pg_backend_pid()").fetchone()[0]
    return int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])


@contextmanager
def _counting(url: str, statements: bool) -> Iterator[Any]:
    """An admin connection; with ``statements``, every statement of ``url``'s database and
    its plans are counted while it is open (set on that database: nothing else in the
    cluster is counted; reset after)."""
    import psycopg  # noqa: PLC0415

    database = url.rsplit("/", 1)[1]
    with psycopg.connect(pg_url(url, "postgres"), autocommit=True) as admin:
        if not statements:
            yield admin
            return
        if "pg_stat_statements" not in admin.execute("SHOW shared_preload_libraries").fetchone()[0]:
            raise SystemExit("--statements: the server must load pg_stat_statements "
                             "(shared_preload_libraries; scripts/pg-cluster does)")
        admin.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        for setting, value in (("track", "all"), ("track_planning", "on")):
            admin.execute(f'ALTER DATABASE "{database}" SET pg_stat_statements.{setting} '
                          f"= '{value}'")
        try:
            yield admin
        finally:
            for setting in ("track", "track_planning"):
                admin.execute(f'ALTER DATABASE "{database}" RESET pg_stat_statements.{setting}')


def drain(url: str, jobs: int, *, statements: bool = False) -> dict[str, Any]:
    """One drain of ``jobs`` jobs: rate, CPU per job and, with ``statements``, the
    costliest statements."""
    database = url.rsplit("/", 1)[1]
    yard = fresh(url)
    top: list[Any] = []
    with tempfile.TemporaryDirectory() as tmp, _counting(url, statements) as admin:
        stamps = (Path(tmp) / "first", Path(tmp) / "last")
        yard.submit("stamp", {"path": str(stamps[0])})
        for start in range(0, jobs - 2, 1000):
            yard.submit_many("noop", [{}] * min(1000, jobs - 2 - start))
        yard.submit("stamp", {"path": str(stamps[1])})
        settle(url)
        with daemons(url, 1) as (scheduler, worker):
            wait_file(stamps[0], 60)
            if statements:
                admin.execute("SELECT pg_stat_statements_reset(0, (SELECT oid FROM "
                              "pg_database WHERE datname = %s), 0)", (database,))
            server = _postmaster(admin)
            trees = ([scheduler.pid], [worker.pid], [server])
            before = (*(tree_cpu(t) for t in trees), time.monotonic())
            wait_file(stamps[1], 300)
            after = (*(tree_cpu(t) for t in trees), time.monotonic())
        if statements:
            top = admin.execute(
                "SELECT calls, plans, total_exec_time, total_plan_time, query FROM "
                "pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE "
                "d.datname = %s ORDER BY total_exec_time + total_plan_time DESC LIMIT %s",
                (database, STATEMENTS)).fetchall()
    yard.close()
    per_job = [round(1e6 * (b - a) / jobs, 1) for a, b in zip(before, after, strict=True)]
    return {"jobs": jobs, "complete_per_s": round(jobs / (after[3] - before[3]), 1),
            "cpu_us_per_job": dict(zip(("scheduler", "worker", "postgresql"), per_job[:3],
                                       strict=True)),
            "statements": [{"calls": calls, "plans": plans,
                            "exec_us_per_job": round(1000 * exec_ms / jobs, 2),
                            "plan_us_per_job": round(1000 * plan_ms / jobs, 2),
                            "query": " ".join(query.split())[:120]}
                           for calls, plans, exec_ms, plan_ms, query in top]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.drain_cost", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", required=True, help="a database of its own (dropped)")
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--statements", action="store_true",
                        help="and the costliest statements (pg_stat_statements)")
    parser.add_argument("--json", action="store_true", help="one JSON line per run")
    args = parser.parse_args(argv)
    for _ in range(args.runs):
        row = drain(args.pg, args.jobs, statements=args.statements)
        if args.json:
            print(json.dumps(row), flush=True)
            continue
        cpu = row["cpu_us_per_job"]
        print(f"{row['complete_per_s']:>9,.0f} jobs/s   CPU µs a job: scheduler "
              f"{cpu['scheduler']}, worker {cpu['worker']}, PostgreSQL {cpu['postgresql']}")
        if row["statements"]:
            print(f"  {'calls':>7} {'plans':>7} {'exec µs/job':>11} {'plan µs/job':>11}  "
                  "statement")
        for s in row["statements"]:
            print(f"  {s['calls']:>7} {s['plans']:>7} {s['exec_us_per_job']:>11} "
                  f"{s['plan_us_per_job']:>11}  {s['query']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
