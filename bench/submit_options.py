"""Submit options and rate limits, measured: what a unique key and a transactional submit
cost a submit, and what a rate limit costs the scheduling cycle.

Usage: python -m bench.submit_options --db URL [--submits 2000] [--backlogs 1000,10000]
                                      [--history 100000]

Submits (one job each, ``Yard.submit`` with the inline cycle off, so only the submit is
timed): plain; with a unique key, every key new; with a unique key already held (the
submit returns the holder); on PostgreSQL, inside a caller's transaction (``connection=``,
the caller committing each). Cycles: 50 free slots behind a backlog of rate-limited jobs
whose keys have spent their budget, with and without a long history of recorded starts.
The database at URL is emptied first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from taskyard.api.yard import Yard
from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.store import Store
from taskyard.store.schema.migrate import downgrade

SLOTS_WORKERS, SLOTS_CAPACITY = 5, 10


def _timed(calls: int, call: Callable[[int], Any]) -> dict[str, float]:
    times = []
    started = time.perf_counter()
    for i in range(calls):
        t = time.perf_counter()
        call(i)
        times.append(time.perf_counter() - t)
    total = time.perf_counter() - started
    return {"per_s": round(calls / total), "us_median": round(statistics.median(times) * 1e6),
            "us_p99": round(sorted(times)[int(len(times) * 0.99) - 1] * 1e6)}


def submits(yard: Yard, n: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "plain": _timed(n, lambda i: yard.submit("noop", {"i": i})),
        "unique_new_key": _timed(n, lambda i: yard.submit("noop", {"i": i},
                                                          unique_key=f"k{i}")),
    }
    yard.submit("noop", {}, unique_key="held")
    out["unique_key_held"] = _timed(n, lambda i: yard.submit("noop", {"i": i},
                                                             unique_key="held"))
    if yard.store.backend == "postgresql":
        app = create_engine(make_url(yard.url).set(drivername="postgresql+psycopg"))

        def joined(i: int) -> None:
            with app.begin() as conn:
                yard.submit("noop", {"i": i}, connection=conn)

        out["transactional"] = _timed(n, joined)
        out["own_transaction_reference"] = _timed(n, lambda i: yard.submit("noop", {"i": i}))
        app.dispose()
    return out


def _cycle_ms(store: Store, cycles: int) -> float:
    times = []
    for _ in range(cycles):
        report = schedule(store)
        assert report is not None
        times.append(report.seconds)
    return round(statistics.median(times) * 1000, 3)


def rate_backlog(store: Store, backlog: int, history: int) -> dict[str, Any]:
    """``backlog`` rate-limited jobs (100 keys, each out of budget) ahead of nothing else,
    ``history`` starts recorded an hour's worth back: the cycle time with 50 free slots."""
    store.task_types.put(TaskTypeSpec("limited", "shell:true", rate_limit="1/h",
                                      rate_key="k{key}"))
    with store.write() as tx:
        tx.raw.run("DELETE FROM events")
        tx.raw.run("DELETE FROM jobs")
        tx.raw.run("DELETE FROM rate_starts")
        now = tx.rate_starts.now()
        tx.raw.many("INSERT INTO rate_starts (type, rate_key, at) VALUES (?, ?, ?)",
                    [("limited", f"k{i % 100}", now - 3500 * i / max(history, 1))
                     for i in range(history)] + [("limited", f"k{i}", now) for i in range(100)])
    store.jobs.submit([JobSubmission("limited", {"key": i % 100}) for i in range(backlog)])
    ms = _cycle_ms(store, 15)
    return {"backlog": backlog, "history": history, "cycle_ms_median": ms}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--submits", type=int, default=2000)
    parser.add_argument("--backlogs", default="1000,10000")
    parser.add_argument("--history", type=int, default=100_000,
                        help="starts recorded in the last hour (the second run of each backlog)")
    parser.add_argument("--json", dest="json_out")
    args = parser.parse_args(argv)
    yard = Yard(args.db, inline_cycle=False)
    downgrade(yard.store.engine, "base")
    with yard.store.engine.begin() as conn:
        conn.execute(text("DROP TABLE IF EXISTS alembic_version"))
    yard.init()
    yard.add_task_type("noop", "shell:true")
    result: dict[str, Any] = {"backend": yard.store.backend,
                              "submits": submits(yard, args.submits), "cycles": []}
    for w in range(SLOTS_WORKERS):
        yard.store.workers.register(f"bench-{w}", ["default"], SLOTS_CAPACITY,
                                    lease_seconds=3600)
    for backlog in (int(b) for b in args.backlogs.split(",")):
        for history in (0, args.history):
            row = rate_backlog(yard.store, backlog, history)
            result["cycles"].append(row)
            print(json.dumps(row), flush=True)
    print(json.dumps(result["submits"], indent=1), flush=True)
    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump(result, fh, indent=2)
    yard.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
