"""Celery pool benchmark: submit → Celery task start latency.

A throwaway redis-server and a real ``celery worker`` (prefork, the tests' harness and
tasks), a fresh database (SQLite in a temporary folder, or ``--db URL``) and a
``CeleryPool`` in this process, on an idle system: ``--jobs`` jobs one after the other,
each waiting for the previous one to end; latency = the task's own start (its result:
``time.time()``) - the time just before the submit. It includes the submit's
transaction and cycle, the pool's wake-up and fetch, ``send_task`` through redis and
the Celery worker's hand-off to its pool process.

Usage: python -m bench.celery_bridge [--jobs 200] [--db URL] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

from tests.bridges.servers import CeleryWorker, RedisServer

from bench.throughput import fresh
from taskyard.bridges.celery_pool import CeleryPool


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(jobs: int, db: str | None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        redis = RedisServer(Path(folder))
        try:
            base = redis.url.rsplit("/", 1)[0]
            worker = CeleryWorker(Path(folder), f"{base}/0", f"{base}/1")
            try:
                latencies = _measure(jobs, db or f"sqlite:///{folder}/bench.db", worker)
            finally:
                worker.stop()
        finally:
            redis.stop()
    ms = [1000 * x for x in latencies]
    return {"jobs": jobs, "p50_ms": round(statistics.median(ms), 2),
            "p99_ms": round(_quantile(ms, 0.99), 2), "mean_ms": round(statistics.mean(ms), 2)}


def _measure(jobs: int, url: str, worker: CeleryWorker) -> list[float]:
    yard = fresh(url)
    yard.add_task_type("celery-now", handler="celery:tests.now", pools=["celery"])
    pool = CeleryPool(yard.store, worker.app, name="bench", capacity=4)
    stop = threading.Event()
    thread = threading.Thread(target=pool.run, args=(stop,), daemon=True)
    thread.start()
    latencies: list[float] = []
    try:
        assert pool.events.ready.wait(60), "no event from the Celery worker"
        # A job submitted before the pool registers finds no live worker, and this pool
        # runs no cycle of its own: nothing would place it (as tests/http's add_worker).
        deadline = time.monotonic() + 60
        while pool.daemon.worker_id is None and thread.is_alive():
            assert time.monotonic() < deadline, "the pool did not register"
            time.sleep(0.01)
        for _ in range(jobs + 3):  # the first three warm up
            sent = time.time()
            job = yard.wait(yard.submit("celery-now"), timeout=60)
            assert job.state == "succeeded", job
            latencies.append(float(job.result) - sent)  # type: ignore[arg-type]
    finally:
        stop.set()
        thread.join(30)
        yard.close()
    return latencies[3:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--db", help="database URL [default: a SQLite file]")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    figures = run(args.jobs, args.db)
    print(f"submit -> Celery task start over {figures['jobs']} jobs: p50 {figures['p50_ms']} ms, "
          f"p99 {figures['p99_ms']} ms, mean {figures['mean_ms']} ms")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
