"""W3: scheduling-cycle time versus backlog size, with 50 free slots.

Usage: python -m bench.backlog --db URL_TEMPLATE [--sizes 1000,10000,100000,1000000]
URL_TEMPLATE may contain {n} (one database per size); SQLite: sqlite:////tmp/w3-{n}.db.
For each size it fills the backlog with pending no-op jobs, registers 5 workers
of capacity 10 (50 free slots), then times cycles that each place 50 jobs (the
placed jobs are completed between cycles so every cycle has 50 free slots).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

from sqlalchemy import insert

from taskyard.scheduler.cycle import schedule
from taskyard.store import Store, open_store
from taskyard.store import schema as t
from taskyard.store.records import Outcome, TaskTypeSpec

WORKERS, CAPACITY = 5, 10


def fill(store: Store, n: int) -> float:
    """Bulk-insert ``n`` pending jobs (bench setup, not the submit path); seconds taken."""
    started = time.perf_counter()
    now = store.now()
    row = {"type": "noop", "args": "{}", "state": "pending", "priority": 0,
           "pools": '["default"]', "cost": 1, "locks": "[]", "created_at": now}
    batch = 20_000
    with store.engine.begin() as conn:
        for start in range(0, n, batch):
            conn.execute(insert(t.jobs), [row] * min(batch, n - start))
    if store.dialect == "postgresql":
        with store.engine.connect() as conn:
            conn.exec_driver_sql("ANALYZE jobs")
    return time.perf_counter() - started


def measure(url: str, n: int, cycles: int) -> dict[str, Any]:
    store = open_store(url)
    store.init_schema()
    store.put_task_type(TaskTypeSpec("noop", "python:bench.handlers:noop"))
    fill_s = fill(store, n)
    workers = [store.register_worker(f"bench-{i}", ["default"], CAPACITY, lease_seconds=3600)
               for i in range(WORKERS)]
    times, placed = [], []
    for _ in range(cycles):
        report = schedule(store)
        assert report is not None
        times.append(report.seconds)
        placed.append(len(report.placed))
        for w in workers:  # free the slots again, through the real transitions
            claimed = store.claim_dispatched(w.id, CAPACITY)
            store.complete_attempts(w.id, [Outcome(c.job_id, c.attempt, "succeeded")
                                           for c in claimed])
    store.close()
    return {"pending": n, "fill_s": round(fill_s, 2), "cycles": cycles,
            "placed_per_cycle": statistics.median(placed),
            "cycle_ms_median": round(statistics.median(times) * 1000, 3),
            "cycle_ms_min": round(min(times) * 1000, 3),
            "cycle_ms_max": round(max(times) * 1000, 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="URL template, may contain {n}")
    parser.add_argument("--sizes", default="1000,10000,100000,1000000")
    parser.add_argument("--cycles", type=int, default=15)
    parser.add_argument("--json", dest="json_out", help="write results to this file")
    args = parser.parse_args(argv)
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        url = args.db.format(n=n)
        if url.startswith("sqlite:///"):
            path = url[len("sqlite:///"):]
            for suffix in ("", "-wal", "-shm", ".cycle-lock"):
                if os.path.exists(path + suffix):
                    os.remove(path + suffix)
        row = measure(url, n, args.cycles)
        rows.append(row)
        print(json.dumps(row), flush=True)
    base = rows[0]["cycle_ms_median"]
    for row in rows:
        print(f"pending={row['pending']:>9}  cycle median={row['cycle_ms_median']:8.3f} ms  "
              f"ratio to {rows[0]['pending']}: {row['cycle_ms_median'] / base:5.2f}", flush=True)
    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump(rows, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
