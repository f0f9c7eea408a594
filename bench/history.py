"""Time the history keeper's roll-up: the events of N no-op jobs (each pending, running,
succeeded: three events) folded into the rollups, as a scheduler's keeper does every
10 seconds (``scheduler/history.py``) — CPU and wall time of this process per round.

Usage: python -m bench.history --db URL [--jobs 20000] [--rounds 3] [--profile]
PostgreSQL: the database in URL must exist (it is emptied first).

The jobs run through the transitions a worker calls (``report_batch``: their starts,
then their ends, a batch at a time), in this process and untimed; then each round
forgets the rollups and the keeper's position and rolls everything up again, as
``roll_up`` would after a burst. A round ends when every event is counted: on PostgreSQL
the follower reads in commit order, so a transaction open anywhere on the server (another
database's included) holds the newest events back until it ends — the round then waits
for it (up to ``HELD_BACK_LIMIT``), and its wall time includes the wait.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import time
from typing import Any

from bench.throughput import fresh
from taskyard.api.yard import Yard
from taskyard.model.records import Outcome, Started
from taskyard.scheduler.cycle import schedule
from taskyard.store import Store
from taskyard.store.transitions.history import FOLLOWER, roll_up
from taskyard.worker.reports import report_batch

BATCH = 500
"""Jobs started and ended per report (a worker's prefetched window)."""
HELD_BACK_LIMIT = 120.0
"""Seconds a round waits for events held back by a transaction elsewhere on the server."""


def run_jobs(yard: Yard, jobs: int) -> None:
    """``jobs`` no-op jobs submitted, placed, started and ended by one worker."""
    store = yard.store
    yard.submit_many("noop", [{} for _ in range(jobs)])
    worker = store.workers.register("history-bench", ["default"], BATCH, lease_seconds=600)
    done = 0
    while done < jobs:
        schedule(store)
        batch = store.attempts.fetch(worker.id).jobs
        if not batch:
            raise RuntimeError(f"nothing placed after {done} of {jobs} jobs")
        report_batch(store, worker.id, [Started(j.job_id, j.attempt) for j in batch])
        report_batch(store, worker.id,
                     ended=[Outcome(j.job_id, j.attempt, "succeeded", 0) for j in batch])
        done += len(batch)


def forget(store: Store) -> None:
    """The rollups and the keeper's position gone: the next roll-up reads every event."""
    with store.write() as tx:
        tx.raw.run("DELETE FROM history")
        tx.raw.run("DELETE FROM outbox_cursors WHERE name = ?", (FOLLOWER,))


def event_count(store: Store) -> int:
    """Every event the jobs wrote: what a round must count."""
    with store.read() as tx:
        return int(tx.raw.all("SELECT count(*) FROM events")[0][0])


def one_round(store: Store, profile: cProfile.Profile | None,
              expected: int) -> dict[str, float]:
    forget(store)
    events = 0
    wall, cpu = time.perf_counter(), time.process_time()
    deadline = time.monotonic() + HELD_BACK_LIMIT
    if profile is not None:
        profile.enable()
    while events < expected:
        rolled = roll_up(store)
        events += rolled.events
        if rolled.caught_up and events < expected:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{expected - events} of {expected} events still held "
                                   f"back after {HELD_BACK_LIMIT:.0f} s")
            time.sleep(0.05)
    if profile is not None:
        profile.disable()
    return {"events": events, "cpu_s": time.process_time() - cpu,
            "wall_s": time.perf_counter() - wall}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="print the top of cProfile")
    args = parser.parse_args(argv)
    yard = fresh(args.db)
    store = yard.store
    run_jobs(yard, args.jobs)
    profile = cProfile.Profile() if args.profile else None
    expected = event_count(store)
    rounds = [one_round(store, profile, expected) for _ in range(args.rounds)]
    cpu = statistics.median(r["cpu_s"] for r in rounds)
    row: dict[str, Any] = {
        "backend": store.backend, "jobs": args.jobs, "events": rounds[0]["events"],
        "cpu_s": [round(r["cpu_s"], 3) for r in rounds],
        "wall_s": [round(r["wall_s"], 3) for r in rounds],
        "cpu_us_per_job": round(cpu / args.jobs * 1e6, 1)}
    print(json.dumps(row))
    if profile is not None:
        pstats.Stats(profile).sort_stats("tottime").print_stats(15)
    yard.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
