"""Time releasing a fan-out's children: complete the root of a ``fanout`` graph of N
jobs and time that one completion (it moves the N - 2 middle jobs to pending).

Usage: python -m bench.release --db URL [--jobs 100000] [--profile]
PostgreSQL: the database in URL must exist (it is emptied first).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import time
from collections import Counter
from typing import Any

from sqlalchemy import event

from bench.graphs import build
from bench.throughput import fresh
from taskyard.api.yard import Yard
from taskyard.model.records import Outcome
from taskyard.scheduler.cycle import schedule


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--profile", action="store_true", help="print the top of cProfile")
    args = parser.parse_args(argv)
    fresh(args.db).close()
    yard = Yard(args.db, inline_cycle=False)
    started = time.perf_counter()
    yard.submit_graph(build("fanout", args.jobs))
    submit_s = time.perf_counter() - started
    store = yard.store
    worker = store.workers.register("release", ["default"], 1, lease_seconds=600)
    schedule(store)
    (root,) = store.attempts.claim(worker.id, 1)
    statements: Counter[str] = Counter()

    @event.listens_for(store.engine, "before_cursor_execute")
    def _count(*call: Any) -> None:
        statements[str(call[2])[:60]] += 1

    profile = cProfile.Profile()
    started = time.perf_counter()
    with profile:
        store.attempts.complete(worker.id, [Outcome(root.job_id, root.attempt, "succeeded", 0)])
    release_s = time.perf_counter() - started
    print(json.dumps({"jobs": args.jobs, "submit_s": round(submit_s, 3),
                      "release_s": round(release_s, 3),
                      "statements": sum(statements.values())}))
    if args.profile:
        pstats.Stats(profile).sort_stats("cumulative").print_stats(15)
    yard.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
