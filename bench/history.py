"""Time the history keeper's roll-up: the events of N no-op jobs (each pending, running,
succeeded: three events) folded into the rollups, as a scheduler's keeper does every
10 seconds (``scheduler/history.py``) — CPU and wall time of this process per round.

Usage: python -m bench.history --db URL [--jobs 20000] [--rounds 3] [--profile]
       [--beside-cycles]
PostgreSQL: the database in URL must exist (it is emptied first).

``--beside-cycles``: each round is instead a round of the scheduler's keeper
(``HistoryKeeper``, its slices and rests) and, the same round again, one ``roll_up`` of
everything at once, each with a thread beside it running the cycle (``schedule`` on an
empty queue, 2 ms apart) as a scheduler's cycle thread does: the cycles' durations
during the round against those before it. The fold holds the GIL, and the cycle waits
for it after each of its round trips.

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
import threading
import time
from collections.abc import Callable
from typing import Any

from bench.throughput import fresh
from taskyard.api.yard import Yard
from taskyard.model.records import Outcome, Started
from taskyard.scheduler.cycle import schedule
from taskyard.scheduler.history import HistoryKeeper
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


def beside_cycles(store: Store, keeper: Callable[[], object]) -> dict[str, float]:
    """The cycle's durations (ms) in a thread beside ``keeper()``, and before it."""
    forget(store)
    times: list[float] = []
    stop = threading.Event()

    def cycles() -> None:
        while not stop.is_set():
            began = time.perf_counter()
            schedule(store)
            times.append((time.perf_counter() - began) * 1000)
            time.sleep(0.002)

    thread = threading.Thread(target=cycles)
    thread.start()
    try:
        time.sleep(0.3)
        before = len(times)
        wall = time.perf_counter()
        keeper()
        wall = time.perf_counter() - wall
        while len(times) <= before and thread.is_alive():  # one cycle that overlapped it
            time.sleep(0.001)
    finally:
        stop.set()
        thread.join()
    quiet, during = sorted(times[:before]), sorted(times[before:])
    return {"round_ms": round(wall * 1000), "cycles": len(during),
            "p50_ms": round(statistics.median(during), 2), "max_ms": round(during[-1], 2),
            "before_p50_ms": round(statistics.median(quiet), 2),
            "before_max_ms": round(quiet[-1], 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="print the top of cProfile")
    parser.add_argument("--beside-cycles", action="store_true",
                        help="the cycle's durations beside a round (see the module)")
    args = parser.parse_args(argv)
    yard = fresh(args.db)
    store = yard.store
    run_jobs(yard, args.jobs)
    if args.beside_cycles:
        for _ in range(args.rounds):
            for name, keeper in (
                    ("keeper", lambda: HistoryKeeper(store).round(threading.Event())),
                    ("at_once", lambda: roll_up(store, batch=max(5000, 3 * args.jobs)))):
                print(json.dumps({"backend": store.backend, "jobs": args.jobs, "round": name,
                                  **beside_cycles(store, keeper)}), flush=True)
        yard.close()
        return 0
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
