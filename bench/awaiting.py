"""What awaiting jobs cost the scheduling cycle: its time with 0 and with 100,000 jobs
awaiting (approvals, signal waits and sleeps, a third each, all with a timeout ahead), the
same 50 free slots and the same pending backlog.

Usage: python -m bench.awaiting --db URL_TEMPLATE [--awaiting 0,100000] [--pending 2000]
URL_TEMPLATE may contain {n} (one database per size); SQLite: sqlite:////tmp/aw-{n}.db.
Every cycle places 50 jobs (completed between cycles, as in bench/backlog.py); the
awaiting jobs' timers are read through the partial index on their deadline, so the
cycle's time should not grow with their number.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

from sqlalchemy import text

from bench.backlog import CAPACITY, WORKERS, fill
from bench.peers.common import settle_pg
from bench.throughput import remove_sqlite_files
from taskyard.model.records import Outcome, Started, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.store import Store, open_store
from taskyard.worker.reports import report_batch

_KIND = ("CASE x % 3 WHEN 0 THEN 'approval' WHEN 1 THEN 'wait' ELSE 'sleep' END")


def fill_awaiting(store: Store, n: int) -> None:
    """``n`` awaiting jobs, made by the database (bench setup, not the submit path): a
    third each approvals, waits for signal ``release-<x % 1000>`` and sleeps, their
    timeouts spread over the next day (none falls due during the run)."""
    if not n:
        return
    now = store.now()
    values = (f"SELECT NULL, 'awaiting', '[]', {_KIND}, "
              "CASE x % 3 WHEN 1 THEN 'release-' || (x % 1000) END, "
              ":now, :now + 3600 + (x % 86400), :now")
    columns = ("INSERT INTO jobs (type, state, pools, kind, signal_name, signals_after, "
               "deadline, created_at) ")
    with store.engine.begin() as conn:
        if store.backend == "postgresql":
            conn.execute(text(f"{columns}{values} FROM generate_series(1, :n) AS g(x)"),
                         {"now": now, "n": n})
        else:
            conn.execute(text(f"{columns}WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL "
                              f"SELECT x + 1 FROM c WHERE x < :n) {values} FROM c"),
                         {"now": now, "n": n})


def measure(url: str, awaiting: int, pending: int, cycles: int) -> dict[str, Any]:
    store = open_store(url)
    store.init_schema()
    store.task_types.put(TaskTypeSpec("noop", "python:bench.handlers:noop"))
    fill(store, pending)
    fill_awaiting(store, awaiting)
    if store.backend == "postgresql":  # analysed, as a long-lived database is (untimed)
        settle_pg(url)
    workers = [store.workers.register(f"bench-{i}", ["default"], CAPACITY, lease_seconds=3600)
               for i in range(WORKERS)]
    times, placed = [], []
    for _ in range(cycles):
        report = schedule(store)
        assert report is not None
        times.append(report.seconds)
        placed.append(len(report.placed))
        for w in workers:
            claimed = store.attempts.fetch(w.id).jobs
            report_batch(store, w.id, [Started(c.job_id, c.attempt) for c in claimed],
                         [Outcome(c.job_id, c.attempt, "succeeded") for c in claimed])
    with store.engine.connect() as conn:  # none timed out nor ended meanwhile
        still = conn.execute(text("SELECT count(*) FROM jobs WHERE state = 'awaiting'")).scalar()
    store.close()
    return {"awaiting": awaiting, "pending": pending, "cycles": cycles,
            "placed_per_cycle": statistics.median(placed),
            "cycle_ms_median": round(statistics.median(times) * 1000, 3),
            "cycle_ms_min": round(min(times) * 1000, 3),
            "cycle_ms_max": round(max(times) * 1000, 3), "still_awaiting": still}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="URL template, may contain {n}")
    parser.add_argument("--awaiting", default="0,100000")
    parser.add_argument("--pending", type=int, default=2000)
    parser.add_argument("--cycles", type=int, default=15)
    parser.add_argument("--json", dest="json_out", help="write results to this file")
    args = parser.parse_args(argv)
    rows = []
    for n in (int(s) for s in args.awaiting.split(",")):
        url = args.db.format(n=n)
        remove_sqlite_files(url)
        row = measure(url, n, args.pending, args.cycles)
        rows.append(row)
        print(json.dumps(row), flush=True)
    base = rows[0]["cycle_ms_median"]
    for row in rows:
        print(f"awaiting={row['awaiting']:>8}  cycle median={row['cycle_ms_median']:8.3f} ms  "
              f"ratio to {rows[0]['awaiting']}: {row['cycle_ms_median'] / base:5.2f}",
              flush=True)
    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump(rows, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
