"""What live output costs a worker: one job printing ``--rate`` lines a second for
``--seconds`` seconds, run by an in-process worker with live output (the default) and
without it (``log_interval=None``: tails at the end only), on a fresh database.

Reported per run: the handler's own time to print its lines at that pace (the job is not
slowed if it stays at ``seconds``), the worker process's CPU seconds over the run (its
threads: the log pump, lease, reports; the handler runs in a child process, the
scheduler in this process in both runs), and the pump's writes, chunks and bytes.

Usage: python -m bench.live_logs --db URL [--rate 1000] [--seconds 10] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from typing import Any

from bench.throughput import fresh
from taskyard.scheduler.daemon import SchedulerDaemon
from taskyard.store import open_store
from taskyard.worker.daemon import WorkerDaemon
from taskyard.worker.log_pump import INTERVAL


def spew(rate: int, seconds: float) -> float:
    """The handler: ``rate`` lines of ~80 bytes a second, paced; returns its own time."""
    started = time.perf_counter()
    line = "x" * 60
    for i in range(int(rate * seconds)):
        print(f"line {i:08d} {line}")
        delay = started + (i + 1) / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
    return time.perf_counter() - started


def run(url: str, rate: int, seconds: float, live: bool) -> dict[str, Any]:
    yard = fresh(url)
    yard.add_task_type("spew", "python:bench.live_logs:spew")
    stops = [threading.Event(), threading.Event()]
    worker = WorkerDaemon(open_store(url), name="bench", capacity=1,
                          log_interval=INTERVAL if live else None)
    threads = [threading.Thread(target=SchedulerDaemon(open_store(url), interval=0.2).run,
                                args=(stops[0],), daemon=True),
               threading.Thread(target=worker.run, args=(stops[1],), daemon=True)]
    for thread in threads:
        thread.start()
    yard.wait(yard.submit("noop"), 120)  # the worker's child is warm
    cpu = time.process_time()
    job = yard.wait(yard.submit("spew", {"rate": rate, "seconds": seconds}), seconds * 10 + 60)
    cpu = time.process_time() - cpu
    for stop in stops:
        stop.set()
    for thread in threads:
        thread.join(30)
    stats = dict(worker.logs.stats) if worker.logs is not None else {}
    result = {"live": live, "state": job.state, "handler_s": round(float(job.result), 3),
              "worker_cpu_s": round(cpu, 3), **stats}
    yard.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--json")
    args = parser.parse_args()
    found = []
    for live in (False, True):
        row = run(args.db, args.rate, args.seconds, live)
        found.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"db": args.db.split("://")[0], "rate": args.rate,
                       "seconds": args.seconds, "runs": found}, fh, indent=2)


if __name__ == "__main__":
    main()
