"""W4: task graphs at scale — submit time, end-to-end time, hand-off delay.

Usage: python -m bench.graphs --db URL [--sizes 10000,100000] [--shapes chain,fanout,random]
One database per run is recommended (SQLite: sqlite:////tmp/w4-{shape}-{n}.db; the
template may use {shape} and {n}). Runs a real scheduler and 2 worker processes
(capacity 8 each) on no-op Python jobs. Hand-off delay: for each edge, the child's
attempt start minus the parent's finish (both from the attempts table).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from typing import Any

from sqlalchemy import text

from taskyard.api.yard import Yard


def build(shape: str, n: int, seed: int = 1) -> dict[str, Any]:
    rnd = random.Random(seed)
    if shape == "chain":
        tasks = {f"t{i}": {"type": "noop", "requires": [f"t{i - 1}"] if i else []}
                 for i in range(n)}
    elif shape == "fanout":
        tasks = {f"m{i}": {"type": "noop", "requires": ["root"]} for i in range(n - 2)}
        tasks["root"] = {"type": "noop"}
        tasks["join"] = {"type": "noop", "requires": [f"m{i}" for i in range(n - 2)]}
    else:
        tasks = {f"t{i}": {"type": "noop", "requires": sorted(
            {f"t{rnd.randrange(i)}" for _ in range(3)}) if i else []} for i in range(n)}
    return {"routing": f"bench-{shape}", "tasks": tasks}


def run(url: str, shape: str, n: int, workers: int = 2, capacity: int = 8) -> dict[str, Any]:
    yard = Yard(url, inline_cycle=False)
    yard.init()
    yard.add_task_type("noop", "python:bench.handlers:noop")
    doc = build(shape, n)
    started = time.perf_counter()
    graph_id = yard.submit_graph(doc)
    submit_s = time.perf_counter() - started
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    base = [sys.executable, "-m", "taskyard", "--db", url]
    procs = [subprocess.Popen([*base, "scheduler"], env=env, stderr=subprocess.DEVNULL)]
    procs += [subprocess.Popen([*base, "worker", "--name", f"g{i}", "--capacity",
                                str(capacity)], env=env, stderr=subprocess.DEVNULL)
              for i in range(workers)]
    try:
        graph = yard.wait_graph(graph_id, timeout=3600)
        e2e_s = time.perf_counter() - started - submit_s
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(30)
    with yard.store.engine.connect() as conn:
        delays = [float(d) for (d,) in conn.execute(text(
            "SELECT c.started_at - p.finished_at FROM dependencies d "
            "JOIN attempts c ON c.job_id = d.job_id AND c.state = 'succeeded' "
            "JOIN attempts p ON p.job_id = d.requires_id AND p.state = 'succeeded' "
            "JOIN jobs j ON j.id = d.job_id WHERE j.graph_id = :g"), {"g": graph_id})]
    yard.close()
    delays.sort()

    def pct(q: float) -> float:
        return round(delays[min(len(delays) - 1, int(q * len(delays)))] * 1000, 2)

    return {"shape": shape, "jobs": n, "state": graph.state, "submit_s": round(submit_s, 2),
            "end_to_end_s": round(e2e_s, 2), "jobs_per_s": round(n / e2e_s, 1),
            "handoff_ms_p50": pct(0.5), "handoff_ms_p99": pct(0.99),
            "handoff_ms_median": round(statistics.median(delays) * 1000, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--db", required=True, help="URL, may contain {shape} and {n}")
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--shapes", default="chain,fanout,random")
    args = parser.parse_args(argv)
    for n in (int(s) for s in args.sizes.split(",")):
        for shape in args.shapes.split(","):
            url = args.db.format(shape=shape, n=n)
            if url.startswith("sqlite:///"):
                path = url[len("sqlite:///"):]
                for suffix in ("", "-wal", "-shm"):
                    if os.path.exists(path + suffix):
                        os.remove(path + suffix)
            print(json.dumps(run(url, shape, n)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
