"""Cycle time with a backlog of jobs for later ahead of the due ones.

Usage: python -m bench.delayed --db URL_TEMPLATE [--sizes 0,10000,100000] [--cycles 15]
URL_TEMPLATE may contain {n} (one database per size; SQLite: sqlite:////tmp/dl-{n}.db;
PostgreSQL: a database the user may drop and create). For each size it submits that
many jobs due in a day at priority 5 (so they come first in placement order), registers
5 workers of capacity 10, then, per cycle, submits 10 due jobs, runs one cycle (which
must place those 10) and completes them. Delayed jobs wait outside the placement index
(migration 0020): the cycle time should not grow with the backlog for later.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

from bench.backlog import WORKERS
from bench.throughput import remove_sqlite_files
from taskyard.model.records import JobSubmission, Outcome, Started, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.store import open_store
from taskyard.worker.reports import report_batch

DUE_PER_CYCLE, CAPACITY, BATCH = 10, 10, 10_000


def _fresh(url: str) -> None:
    if not url.startswith("postgresql"):
        remove_sqlite_files(url)
        return
    import psycopg  # noqa: PLC0415

    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def measure(url: str, n: int, cycles: int) -> dict[str, Any]:
    _fresh(url)
    store = open_store(url)
    store.init_schema()
    store.task_types.put(TaskTypeSpec("noop", "python:bench.handlers:noop"))
    later = store.now() + 86_400
    for start in range(0, n, BATCH):
        store.jobs.submit([JobSubmission("noop", priority=5, run_after=later)]
                          * min(BATCH, n - start))
    workers = [store.workers.register(f"bench-{i}", ["default"], CAPACITY, lease_seconds=3600)
               for i in range(WORKERS)]
    times = []
    for _ in range(cycles):
        store.jobs.submit([JobSubmission("noop")] * DUE_PER_CYCLE)
        started = time.perf_counter()
        report = schedule(store)
        times.append(time.perf_counter() - started)
        assert report is not None and len(report.placed) == DUE_PER_CYCLE, report
        for w in workers:  # free the slots again, as a worker reports (one commit)
            claimed = store.attempts.fetch(w.id).jobs
            report_batch(store, w.id, [Started(c.job_id, c.attempt) for c in claimed],
                         [Outcome(c.job_id, c.attempt, "succeeded") for c in claimed])
    store.close()
    return {"delayed": n, "cycles": cycles, "backend": url.split(":", 1)[0],
            "cycle_ms_median": round(statistics.median(times) * 1000, 3),
            "cycle_ms_min": round(min(times) * 1000, 3),
            "cycle_ms_max": round(max(times) * 1000, 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--db", required=True, help="URL template, may contain {n}")
    parser.add_argument("--sizes", default="0,10000,100000")
    parser.add_argument("--cycles", type=int, default=15)
    args = parser.parse_args(argv)
    for n in (int(s) for s in args.sizes.split(",")):
        row = measure(args.db.format(n=n), n, args.cycles)
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
