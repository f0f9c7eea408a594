"""W1 throughput and W2 latency for taskyard, with its defaults.

W1: enqueue N no-op jobs (one ``Yard.submit`` per job, then ``Yard.submit_many`` in
batches of 1,000 into a fresh database), then start ``taskyard scheduler`` and K
``taskyard worker`` processes and measure the completion rate. The first and the last
job are ``stamp`` jobs that write when they started: rate = (N - 1) / (last - first),
so process start-up is not counted (the same bracket is used for every peer).

W2: on an idle system (scheduler and one worker running), submit M jobs one after the
other, each once the previous has ended and 10 ms have passed (as for every peer);
latency = handler start (``time.time()`` in the handler, written to a file the client
polls) - the time just before ``submit``.

Usage: python -m bench.throughput --db URL [--jobs 20000] [--workers 1,2] [--latency 500]
URL may contain {run}: one fresh database per measurement (SQLite: sqlite:////tmp/w1-{run}.db).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import rss

if TYPE_CHECKING:  # imported where used: a peer's run imports neither (see peers.common)
    from taskyard.api.yard import Yard

BATCH = 1000
W1_POLL = 0.005
"""W1 waits for its stamps at this pace: the harness stays out of the workers' way."""
W2_IDLE = 0.010
"""Seconds every system's W2 lets pass after a job (its start seen, taskyard: its end
recorded) before the next enqueue: each job meets an idle system, as a lone job does."""
HERE = Path(__file__).resolve().parent.parent


def remove_sqlite_files(url: str) -> bool:
    """Remove a SQLite database's files (and its lock files); False for another URL."""
    if not url.startswith("sqlite:///"):
        return False
    path = url[len("sqlite:///"):]
    for suffix in ("", "-wal", "-shm", ".cycle-lock", ".write-lock"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    return True


def fresh(url: str) -> Yard:
    """A Yard on an empty, migrated database (a SQLite file is removed first)."""
    from taskyard.api.yard import Yard  # noqa: PLC0415

    if not remove_sqlite_files(url):
        _recreate_pg(url)
    yard = Yard(url)
    yard.init()
    yard.add_task_type("noop", "python:bench.handlers:noop")
    yard.add_task_type("stamp", "python:bench.handlers:stamp")
    yard.add_task_type("latency", "python:bench.quick_handlers:stamp")
    return yard


def _recreate_pg(url: str) -> None:
    from sqlalchemy import create_engine, text  # noqa: PLC0415
    from sqlalchemy.engine import make_url  # noqa: PLC0415

    parsed = make_url(url)
    admin = create_engine(parsed.set(drivername="postgresql+psycopg", database="postgres"),
                          isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{parsed.database}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{parsed.database}"'))
    admin.dispose()


def settle(url: str) -> None:
    """After W1's enqueue, untimed, on PostgreSQL: ``VACUUM (ANALYZE)``, the tables as
    autovacuum leaves them within a minute of a burst (every system's W1 and W3 alike;
    until run 50 none: procrastinate's fetch, a PL/pgSQL function whose cached generic
    plan on a never-analysed table sorts every queued job, took 8.6 ms a job there)."""
    if not url.startswith("sqlite"):
        from bench.peers.common import settle_pg  # noqa: PLC0415

        settle_pg(url)


@contextmanager
def daemons(url: str, workers: int, log: Path | None = None, *, inproc: bool = False,
            capacity: int | None = None, scheduler: Sequence[str] = (),
            ) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``taskyard scheduler`` and ``workers`` times ``taskyard worker``, with their
    defaults; ``inproc``: no scheduler process, the first worker runs one
    (``worker --scheduler``), and only the workers are returned; ``capacity``: each
    worker's ``--capacity`` (None: the default, one slot per CPU); ``scheduler``: more
    options of ``taskyard scheduler``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), *sys.path]))
    base = [sys.executable, "-m", "taskyard", "--db", url]
    err = log.open("ab") if log else subprocess.DEVNULL
    procs = [] if inproc else [
        subprocess.Popen([*base, "scheduler", *scheduler], env=env, stderr=err, cwd=HERE)]
    slots = [] if capacity is None else ["--capacity", str(capacity)]
    procs += [subprocess.Popen([*base, "worker", "--name", f"bench-{i}", *slots,
                                *(["--scheduler"] if inproc and i == 0 else [])],
                               env=env, stderr=err, cwd=HERE) for i in range(workers)]
    try:
        yield procs
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()


def wait_file(path: Path, timeout: float, poll: float = 0.001) -> float:
    """The float a handler wrote to ``path`` (its start time), polled every ``poll``
    seconds; TimeoutError past ``timeout``. Every system's W2 waits with it."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return float(path.read_text())
        except (FileNotFoundError, ValueError):
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{path.name} not written within {timeout:.0f}s") from None
            time.sleep(poll)


def enqueue(yard: Yard, n: int, stamps: tuple[Path, Path], *, batch: bool,
            limit_s: float | None = None) -> tuple[float, int]:
    """Enqueue stamp, n - 2 no-ops, stamp; returns (jobs per second, jobs timed).

    With ``limit_s``, the timed phase stops after about that many seconds and the rest
    of the jobs go in untimed through ``submit_many``: the queue still holds n jobs."""
    started = time.perf_counter()
    yard.submit("stamp", {"path": str(stamps[0])})
    done, chunk = 0, BATCH if batch else 100
    while done < n - 2:
        k = min(chunk, n - 2 - done)
        if batch:
            yard.submit_many("noop", [{}] * k)
        else:
            for _ in range(k):
                yard.submit("noop")
        done += k
        if limit_s is not None and time.perf_counter() - started > limit_s:
            break
    timed = done + 1
    if done == n - 2:
        yard.submit("stamp", {"path": str(stamps[1])})
        timed += 1
    rate = timed / (time.perf_counter() - started)
    for start in range(done, n - 2, BATCH):
        yard.submit_many("noop", [{}] * min(BATCH, n - 2 - start))
    if timed < n:
        yard.submit("stamp", {"path": str(stamps[1])})
    return rate, timed


def count(yard: Yard, state: str) -> int:
    from sqlalchemy import text  # noqa: PLC0415

    with yard.store.engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM jobs WHERE state = :s"),
                                {"s": state}).scalar_one())


def _start_span(yard: Yard, n: int) -> float:
    """Seconds between the first and the last attempt start, once all ``n`` jobs ran."""
    from sqlalchemy import text  # noqa: PLC0415

    deadline = time.monotonic() + 60
    while count(yard, "succeeded") < n and time.monotonic() < deadline:
        time.sleep(0.05)
    with yard.store.engine.connect() as conn:
        low, high = conn.execute(text("SELECT MIN(started_at), MAX(started_at) FROM attempts "
                                      "WHERE state = 'succeeded'")).one()
    return max(float(high) - float(low), 1e-3)


def w1(url: str, n: int, workers: int, *, batch: bool, timeout: float = 600.0,
       enqueue_limit: float | None = None, inproc: bool = False,
       capacity: int | None = None) -> dict[str, Any]:
    """One W1 run. ``timeout`` bounds the completion phase (from the first stamp): past
    it the row has ``status: timeout`` and ``complete_per_s_partial``, the rate so far.
    ``enqueue_limit`` bounds the timed enqueue phase (see ``enqueue``). ``inproc``: the
    scheduler runs in the first worker (``worker --scheduler``), not in a process of its
    own; every process is then counted as a worker. ``capacity``: each worker's slots
    (None: the default, one per CPU)."""
    yard = fresh(url)
    row: dict[str, Any] = {"workload": "W1", "jobs": n, "workers": workers,
                           "enqueue": "batch" if batch else "one call per job",
                           "scheduler": "in a worker" if inproc else "a process",
                           "capacity": capacity or "default"}
    with tempfile.TemporaryDirectory() as tmp:
        stamps = (Path(tmp) / "first", Path(tmp) / "last")
        rate, timed = enqueue(yard, n, stamps, batch=batch, limit_s=enqueue_limit)
        row.update(enqueue_per_s=round(rate, 1), enqueue_timed_jobs=timed)
        settle(url)
        with rss.sampling() as sampler, daemons(url, workers, inproc=inproc,
                                                           capacity=capacity) as procs:
            if not inproc:
                sampler.add("scheduler", procs[0].pid)
            for p in procs[0 if inproc else 1:]:
                sampler.add("workers", p.pid)
            first = wait_file(stamps[0], 60, W1_POLL)
            try:
                last = wait_file(stamps[1], timeout, W1_POLL)
                # With two workers the last job may start while the other worker still
                # holds jobs queued in its window: the span of every start, from the
                # database, when it is longer (a stamp span of a third of it was seen).
                span = max(last - first, _start_span(yard, n))
                row.update(status="ok", complete_per_s=round((n - 1) / span, 1))
            except TimeoutError:
                done = count(yard, "succeeded")
                row.update(status="timeout", done=done, complete_per_s_partial=round(
                    (done - 1) / (time.time() - first), 1))
            sampler.sample()
        row["succeeded"] = count(yard, "succeeded")
    row["rss_mb"] = sampler.peak_mb()
    row["processes"] = sampler.breakdown()
    yard.close()
    return row


def percentile(sorted_samples: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (the same rule for every system)."""
    return sorted_samples[min(len(sorted_samples) - 1, int(q * (len(sorted_samples) - 1)))]


def latency_row(samples: list[float], m: int, status: str = "ok") -> dict[str, Any]:
    samples = sorted(samples)
    row: dict[str, Any] = {"workload": "W2", "jobs": m, "status": status,
                           "measured": len(samples)}
    if samples:
        row.update(p50_ms=round(statistics.median(samples), 3),
                   p99_ms=round(percentile(samples, 0.99), 3))
    row["samples_ms"] = [round(s, 3) for s in samples]
    return row


def w2(url: str, m: int, warmup: int = 20, timeout: float = 300.0) -> dict[str, Any]:
    """``timeout`` bounds the whole series: past it the row has ``status: timeout``.
    As for every peer (bench.peers.common): each job is a stamp job whose handler
    writes its start time to a file, which the client polls every millisecond; then,
    once the job's end is recorded, :data:`W2_IDLE` seconds pass. Besides the latency,
    where it goes: how long ``submit`` took (``submit_p50_ms``; the handler cannot
    start before the submit's commit) and, once the series has ended, the median of 20
    round trips of ``SELECT 1`` on the same store at the same pace
    (``round_trip_p50_ms``)."""
    yard = fresh(url)
    samples: list[float] = []
    submits: list[float] = []
    status = "ok"
    deadline = time.monotonic() + timeout
    with tempfile.TemporaryDirectory() as tmp, daemons(url, 1):
        for i in range(m + warmup):
            path = Path(tmp) / f"lat{i}"
            before = time.time()
            try:
                job_id = yard.submit("stamp", {"path": str(path)})
                submitted = time.time()
                began = wait_file(path, max(0.1, deadline - time.monotonic()))
                yard.wait(job_id, max(0.1, deadline - time.monotonic()))
            except TimeoutError:
                status = "timeout"
                break
            if i >= warmup:
                samples.append((began - before) * 1000)
                submits.append((submitted - before) * 1000)
            time.sleep(W2_IDLE)
    row = latency_row(samples, m, status)
    if submits:
        row["submit_p50_ms"] = round(statistics.median(submits), 3)
        row["round_trip_p50_ms"] = round(statistics.median(_round_trips(yard, 20)), 3)
    yard.close()
    return row


def _round_trips(yard: Yard, n: int) -> list[float]:
    """``n`` round trips of ``SELECT 1`` on the yard's pooled connection, each after
    :data:`W2_IDLE` idle seconds, in ms: the floor under any idle submit's time."""
    from sqlalchemy import text  # noqa: PLC0415

    times = []
    with yard.store.engine.connect() as conn:
        for _ in range(n):
            time.sleep(W2_IDLE)
            start = time.perf_counter()
            conn.execute(text("SELECT 1")).all()
            times.append((time.perf_counter() - start) * 1000)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--db", required=True, help="URL; may contain {run}")
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--latency", type=int, default=500, help="W2 jobs (0: skip)")
    parser.add_argument("--no-percall", action="store_true", help="skip per-call enqueue")
    args = parser.parse_args(argv)
    run = 0
    for workers in (int(w) for w in args.workers.split(",") if w):
        for batch in ((True,) if args.no_percall else (False, True)):
            run += 1
            row = w1(args.db.format(run=run), args.jobs, workers, batch=batch)
            print(json.dumps(row), flush=True)
    if args.latency:
        row = w2(args.db.format(run="lat"), args.latency)
        print(json.dumps({k: v for k, v in row.items() if k != "samples_ms"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
