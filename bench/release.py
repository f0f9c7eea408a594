"""Time releasing a fan-out's children: complete the root of a ``fanout`` graph of N
jobs and time that one completion (it moves the N - 2 middle jobs to pending).

Usage: python -m bench.release --db URL [--jobs 100000] [--profile | --memory]
PostgreSQL: the database in URL must exist (it is emptied first).
``--memory``: the graph is submitted and placed by a child process, and this process,
which never held the graph, completes the root as a worker would: the row gains its RSS
before the completion, after it, and its peak during it (``rss_*_mb``), and the same for
its two parts (``/proc/self/status``, sampled every 5 ms for the peaks): ``anon_*_mb``,
the process's private memory (heap, SQLite's page cache), and ``file_*_mb``, pages of
files mapped into it (on SQLite, the database file read through ``mmap``: the kernel's
page cache, shared and reclaimable, which a ``read()`` would fill as well, uncounted).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import pstats
import subprocess
import sys
import threading
import time
from collections import Counter
from typing import Any

from sqlalchemy import event

from bench import rss
from bench.graphs import build
from bench.throughput import HERE, fresh
from taskyard.api.yard import Yard
from taskyard.model.records import Outcome, Started
from taskyard.scheduler.cycle import schedule
from taskyard.worker.reports import report_batch


def _statement_counter(store: Any) -> Counter[str] | None:
    """The statements SQLite runs from now on, counted by its trace callback on every
    connection (the store's SQL goes through the driver's cursors, below SQLAlchemy's
    events); None on PostgreSQL (bench.dbwork counts statements there, on the wire)."""
    if store.backend != "sqlite":
        return None
    statements: Counter[str] = Counter()

    def traced(dbapi: Any, _record: Any) -> None:
        dbapi.set_trace_callback(lambda sql: statements.update((sql[:60],)))

    # Connections opened from now on are traced: the write lock's kept one
    # (sqlite/writer.py) goes back to the pool first, and the pool is emptied.
    store.driver.close()
    store.engine.dispose()
    event.listen(store.engine, "connect", traced)
    return statements


def setup(url: str, jobs: int) -> tuple[Yard, int, float]:
    """An empty database, the fan-out submitted, a worker of one slot, the root placed:
    the yard, the worker's id and the submit's seconds."""
    fresh(url).close()
    yard = Yard(url, inline_cycle=False)
    started = time.perf_counter()
    yard.submit_graph(build("fanout", jobs))
    submit_s = time.perf_counter() - started
    worker = yard.store.workers.register("release", ["default"], 1, lease_seconds=600)
    schedule(yard.store)
    return yard, worker.id, submit_s


def _mb(field: str) -> float:
    return round((rss.hwm_kb("self", field) or 0) / 1024, 1)


class _Parts:
    """Peaks of ``RssAnon`` and ``RssFile`` while the block runs (sampled by a thread:
    SQLite's steps release the GIL)."""

    FIELDS = ("RssAnon:", "RssFile:")

    def __init__(self) -> None:
        self.before = {f: _mb(f) for f in self.FIELDS}
        self.peak = dict(self.before)
        self.after = dict(self.before)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        for f in self.FIELDS:
            self.peak[f] = max(self.peak[f], _mb(f))

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            self._sample()

    def __enter__(self) -> _Parts:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.after = {f: _mb(f) for f in self.FIELDS}
        self.peak = {f: max(self.peak[f], self.after[f]) for f in self.FIELDS}

    def row(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for f, name in zip(self.FIELDS, ("anon", "file"), strict=True):
            out.update({f"{name}_before_mb": self.before[f], f"{name}_after_mb": self.after[f],
                        f"{name}_peak_mb": self.peak[f]})
        return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--jobs", type=int, default=100_000)
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--profile", action="store_true", help="print the top of cProfile")
    how.add_argument("--memory", action="store_true",
                     help="complete the root in a process that never held the graph")
    how.add_argument("--setup-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.setup_only:  # --memory's child: prints the worker's id and the submit time
        yard, worker_id, submit_s = setup(args.db, args.jobs)
        yard.close()
        print(json.dumps([worker_id, submit_s]))
        return 0
    if args.memory:
        out = subprocess.run([sys.executable, "-m", "bench.release", "--db", args.db,
                              "--jobs", str(args.jobs), "--setup-only"],
                             check=True, capture_output=True, text=True, cwd=HERE).stdout
        worker_id, submit_s = json.loads(out.splitlines()[-1])
        yard = Yard(args.db, inline_cycle=False)
    else:
        yard, worker_id, submit_s = setup(args.db, args.jobs)
    store = yard.store
    (root,) = store.attempts.fetch(worker_id).jobs
    report_batch(store, worker_id, [Started(root.job_id, root.attempt)])
    statements = _statement_counter(store)
    before = _mb("VmRSS:")
    rss.reset_peak()
    profile = cProfile.Profile()
    parts = _Parts()
    started = time.perf_counter()
    with profile if args.profile else contextlib.nullcontext(), \
            parts if args.memory else contextlib.nullcontext():
        report_batch(store, worker_id,
                     ended=[Outcome(root.job_id, root.attempt, "succeeded", 0)])
    release_s = time.perf_counter() - started
    row: dict[str, Any] = {"jobs": args.jobs, "submit_s": round(submit_s, 3),
                           "release_s": round(release_s, 3),
                           "statements": None if statements is None
                           else sum(statements.values())}
    if args.memory:
        row.update(rss_before_mb=before, rss_after_mb=_mb("VmRSS:"), rss_peak_mb=_mb("VmHWM:"),
                   **parts.row())
    print(json.dumps(row))
    if args.profile:
        pstats.Stats(profile).sort_stats("cumulative").print_stats(15)
    yard.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
