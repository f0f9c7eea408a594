"""How late a job for later starts while the scheduler sleeps.

Usage: python -m bench.delayed_start --db URL [--interval 60] [--delays 0.3,1,3] [--rounds 3]

``taskyard scheduler --interval INTERVAL`` and one ``taskyard worker`` run as processes
on a fresh database. Once a first job has run (both are up), jobs are submitted one at a
time, each ``run_after`` DELAY seconds ahead and each after the one before has started.
Per delay: how long after its ``run_after`` each started (the start the worker recorded,
on the database's clock). A scheduler that learned of a job for later only at its next
tick would start it up to INTERVAL late; one woken by the submit, when it is due.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from bench.throughput import daemons, fresh


def measure(url: str, interval: float, delays: list[float], rounds: int) -> list[dict[str, Any]]:
    yard = fresh(url)
    try:
        with daemons(url, 1, capacity=1, scheduler=["--interval", str(interval)]):
            first = yard.wait(yard.submit("noop"), 120)
            assert first.state == "succeeded", first
            rows = []
            for delay in delays:
                late = []
                for _ in range(rounds):
                    job = yard.wait(yard.submit("noop", run_after=f"{delay}s"),
                                    interval + delay + 120)
                    assert job.state == "succeeded", job
                    assert job.started_at is not None and job.run_after is not None
                    late.append(job.started_at - job.run_after)
                rows.append({"backend": url.split(":", 1)[0], "interval_s": interval,
                             "delay_s": delay, "jobs": rounds,
                             "late_ms_max": round(max(late) * 1000, 1),
                             "late_ms_min": round(min(late) * 1000, 1)})
            return rows
    finally:
        yard.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--db", required=True, help="a database URL (it is emptied)")
    parser.add_argument("--interval", type=float, default=60.0)
    parser.add_argument("--delays", default="0.3,1,3")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    for row in measure(args.db, args.interval, [float(d) for d in args.delays.split(",")],
                       args.rounds):
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
