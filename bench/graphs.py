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
from pathlib import Path
from typing import Any

from bench import rss

HERE = Path(__file__).resolve().parent.parent


def build(shape: str, n: int, seed: int = 1, record: str | None = None) -> dict[str, Any]:
    """The graph document. With ``record`` (a folder), every task runs
    ``bench.handlers:record`` and writes its own start and end times there."""
    rnd = random.Random(seed)
    if shape == "chain":
        reqs = {f"t{i}": [f"t{i - 1}"] if i else [] for i in range(n)}
    elif shape == "fanout":
        reqs = {"root": []}
        reqs.update({f"m{i}": ["root"] for i in range(n - 2)})
        reqs["join"] = [f"m{i}" for i in range(n - 2)]
    else:
        reqs = {f"t{i}": sorted({f"t{rnd.randrange(i)}" for _ in range(3)}) if i else []
                for i in range(n)}
    tasks: dict[str, dict[str, Any]] = {}
    for label, requires in reqs.items():
        task: dict[str, Any] = {"type": "record" if record else "noop"}
        if requires:
            task["requires"] = requires
        if record:
            task["args"] = {"label": label, "out": record}
        tasks[label] = task
    return {"routing": f"bench-{shape}", "tasks": tasks}


def edges(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(parent, child) label pairs of a graph document."""
    return [(parent, label) for label, task in doc["tasks"].items()
            for parent in task.get("requires", ())]


def read_records(out: str | Path) -> dict[str, tuple[float, float]]:
    """label -> (handler start, handler end) from ``bench.handlers:record`` files."""
    found: dict[str, tuple[float, float]] = {}
    for path in Path(out).glob("*.rec"):
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 3:
                found[parts[0]] = (float(parts[1]), float(parts[2]))
    return found


def record_delays(pairs: list[tuple[str, str]],
                  recs: dict[str, tuple[float, float]]) -> list[float]:
    """Child handler start - parent handler end, for each edge where both ran."""
    return [recs[c][0] - recs[p][1] for p, c in pairs if p in recs and c in recs]


def run(url: str, shape: str, n: int, workers: int = 2, capacity: int | None = 8, *,
        timeout: float = 3600.0, record: str | None = None) -> dict[str, Any]:
    """One graph run. Past ``timeout`` (end-to-end) the row has ``status: timeout`` and
    the number of jobs that succeeded by then; the daemons are stopped either way.
    Hand-off delays come from the attempts table, or with ``record`` (a folder) from
    the handlers' own clocks, as for the peers (then end-to-end runs from the end of
    the submit call to the end of the last handler)."""
    # Imported here: a peer's run, which imports this module, imports neither (its W3
    # dequeuer's memory would count them; see peers.common).
    from sqlalchemy import text  # noqa: PLC0415

    from taskyard.api.yard import Yard  # noqa: PLC0415

    yard = Yard(url, inline_cycle=False)
    yard.init()
    yard.add_task_type("noop", "python:bench.handlers:noop")
    yard.add_task_type("record", "python:bench.handlers:record")
    doc = build(shape, n, record=record)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), *sys.path]))
    base = [sys.executable, "-m", "taskyard", "--db", url]
    row: dict[str, Any] = {"shape": shape, "jobs": n}
    with rss.sampling() as sampler:
        procs = [subprocess.Popen([*base, "scheduler"], env=env, stderr=subprocess.DEVNULL,
                                  cwd=HERE)]
        slots = [] if capacity is None else ["--capacity", str(capacity)]  # None: CPUs
        procs += [subprocess.Popen([*base, "worker", "--name", f"g{i}", *slots], env=env,
                                   stderr=subprocess.DEVNULL, cwd=HERE)
                  for i in range(workers)]
        sampler.add("scheduler", procs[0].pid)
        for p in procs[1:]:
            sampler.add("workers", p.pid)
        try:
            # The daemons serve before the graph comes (a warm-up job went through), as
            # for the peers: their start-up is not part of the end-to-end time.
            yard.wait(yard.submit("noop"), 120)
            started = time.perf_counter()
            graph_id = yard.submit_graph(doc)
            submit_s = time.perf_counter() - started
            submitted_at = time.time()
            row["submit_s"] = round(submit_s, 4)
            try:
                graph = yard.wait_graph(graph_id, timeout=timeout)
                e2e_s = time.perf_counter() - started - submit_s
                row.update(status="ok" if graph.state == "finished" else "failed",
                           state=graph.state, end_to_end_s=round(e2e_s, 2),
                           jobs_per_s=round(n / e2e_s, 1))
            except TimeoutError:
                row.update(status="timeout", state="running")
        finally:
            sampler.sample()
            for p in procs:
                p.terminate()
            for p in procs:
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
    row["rss_mb"] = sampler.peak_mb()
    with yard.store.engine.connect() as conn:
        row["succeeded"] = int(conn.execute(text(
            "SELECT count(*) FROM jobs WHERE graph_id = :g AND state = 'succeeded'"),
            {"g": graph_id}).scalar_one())
        delays = [] if record else [float(d) for (d,) in conn.execute(text(
            "SELECT c.started_at - p.finished_at FROM dependencies d "
            "JOIN attempts c ON c.job_id = d.job_id AND c.state = 'succeeded' "
            "JOIN attempts p ON p.job_id = d.requires_id AND p.state = 'succeeded' "
            "JOIN jobs j ON j.id = d.job_id WHERE j.graph_id = :g"), {"g": graph_id})]
    yard.close()
    if record:
        recs = read_records(record)
        delays = record_delays(edges(doc), recs)
        if row["status"] == "ok" and recs:
            e2e_s = max(end for _, end in recs.values()) - submitted_at
            row.update(end_to_end_s=round(e2e_s, 2), jobs_per_s=round(n / e2e_s, 1))
    if row["status"] == "timeout":
        row["jobs_per_s_partial"] = round(row["succeeded"] / timeout, 1)
    row.update(handoff_stats(delays))
    return row


def handoff_stats(delays_s: list[float]) -> dict[str, Any]:
    """Parent finished -> child started, over every edge (the same rule for every system)."""
    if not delays_s:
        return {"edges_measured": 0}
    delays = sorted(delays_s)

    def pct(q: float) -> float:
        return round(delays[min(len(delays) - 1, int(q * len(delays)))] * 1000, 2)

    return {"edges_measured": len(delays), "handoff_ms_p50": pct(0.5),
            "handoff_ms_p99": pct(0.99),
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
