"""What an operator reads, at 10,000,000 jobs: jobs search and the history charts through
a real ``taskyard serve``, and the history follower's cost per event.

For each store (``--db URL``: a SQLite file or a PostgreSQL database, emptied first):

1. fill: ``--jobs`` jobs written by SQL straight into the tables (``generate_series`` on
   PostgreSQL, a recursive CTE on SQLite; 1,000,000 per transaction): 20 task types,
   first pools ``default`` and ``gpu`` (one job in 4), created over the last 7 days in
   id order, 85 % succeeded, 8 % failed, 2 % error, 2 % canceled, the newest 20,000
   pending; a label on one job in 3 (50 labels), args ``{"customer": "c-<id % 100000>",
   "n": <id>}``; one attempt per ended job on one of 8 workers. Then the history rollups
   of that week (what the follower would have written: per minute for 2 days, per 15
   minutes for 15 days, per 2 hours, all time; per pool and type) and the tables
   analysed.
2. reads: each request ``--repeat`` times against ``taskyard serve`` (median and max,
   wall time at the client, keep-alive connection).
3. the follower: ``--events`` events (job-pending, job-running, job-completed of the
   newest jobs) folded by ``roll_up``: events per second.

Usage: python -m bench.ops_history --db URL [--jobs 10000000] [--repeat 5] [--keep]
[--events 60000] [--json FILE]. ``--keep`` reuses a database filled before.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from typing import Any

import httpx
from sqlalchemy import text

from bench.throughput import fresh
from taskyard.api.http.tokens import mint_token
from taskyard.core.history import BOUNDS, GRANULARITIES, KEEP, Counts
from taskyard.store import open_store
from taskyard.store.transitions.history import add_counts, roll_up

TYPES = 20
WEEK = 7 * 86400.0
PENDING = 20_000
CHUNK = 1_000_000


def _rows_sql(dialect: str, low: int, high: int, n: int, t0: float) -> tuple[str, str]:
    """INSERT … SELECT of jobs ``low``..``high`` and of their attempts."""
    series = (f"generate_series({low}, {high}) AS s(g)" if dialect == "postgresql" else
              f"(WITH RECURSIVE r(g) AS (SELECT {low} UNION ALL SELECT g + 1 FROM r "
              f"WHERE g < {high}) SELECT g FROM r) AS s")
    cat = "||"
    created = f"({t0} + g * {WEEK / n})"
    state = (f"CASE WHEN g > {n - PENDING} THEN 'pending' WHEN g % 100 < 85 THEN 'succeeded' "
             "WHEN g % 100 < 93 THEN 'failed' WHEN g % 100 < 95 THEN 'error' "
             "ELSE 'canceled' END")
    ended = f"g <= {n - PENDING}"
    jobs = (
        "INSERT INTO jobs (id, type, args, state, priority, pools, cost, locks, attempt, "
        "created_at, started_at, finished_at, label, retries) "
        f"SELECT g, 'type-' {cat} (g % {TYPES}), "
        f"'{{\"customer\":\"c-' {cat} (g % 100000) {cat} '\",\"n\":' {cat} g {cat} '}}', "
        f"{state}, 0, CASE WHEN g % 4 = 0 THEN '[\"gpu\",\"default\"]' ELSE '[\"default\"]' END,"
        f" 1, '[]', CASE WHEN {ended} THEN 1 ELSE 0 END, {created}, "
        f"CASE WHEN {ended} THEN {created} + 0.05 END, CASE WHEN {ended} THEN {created} + 0.5 "
        f"END, CASE WHEN g % 3 = 0 THEN 'step-' {cat} (g % 50) END, 0 FROM {series}")
    attempts = (
        "INSERT INTO attempts (job_id, attempt, worker_name, state, dispatched_at, "
        "started_at, finished_at) "
        f"SELECT g, 1, 'worker-' {cat} (g % 8), {state}, {created}, {created} + 0.05, "
        f"{created} + 0.5 FROM {series} WHERE {ended}")
    return jobs, attempts


def fill(url: str, n: int) -> None:
    yard = fresh(url)
    store = yard.store
    for i in range(TYPES):
        yard.add_task_type(f"type-{i}", "shell:true")
    dialect = store.engine.dialect.name
    t0 = store.now() - WEEK
    started = time.monotonic()
    for low in range(1, n + 1, CHUNK):
        high = min(n, low + CHUNK - 1)
        jobs, attempts = _rows_sql(dialect, low, high, n, t0)
        with store.engine.begin() as conn:
            conn.execute(text(jobs))
            conn.execute(text(attempts))
        print(f"  {high:,} jobs ({time.monotonic() - started:.0f} s)", flush=True)
    with store.engine.begin() as conn:
        if dialect == "postgresql":
            conn.execute(text(f"SELECT setval('jobs_id_seq', {n})"))
    _rollups(store, n, t0)
    with store.engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(text(
            "ANALYZE"))
    print(f"  filled in {time.monotonic() - started:.0f} s", flush=True)
    yard.close()


def _rollups(store: Any, n: int, t0: float) -> None:
    """The rollups the follower would have written for the filled week."""
    per_second = n / WEEK
    hist = [0] * (len(BOUNDS) + 1)
    now = t0 + WEEK
    for granularity in GRANULARITIES:
        keep = KEEP.get(granularity, WEEK)
        span = granularity or WEEK
        buckets = ([0.0] if granularity == 0 else
                   list(range(int((now - min(keep, WEEK)) // granularity) * granularity,
                              int(now) + 1, granularity)))
        found = {}
        for bucket in buckets:
            for t in range(TYPES):
                for pool, share in (("default", 0.75), ("gpu", 0.25)):
                    jobs = max(int(per_second * span * share / TYPES), 1)
                    wait, cycle = list(hist), list(hist)
                    wait[3] = jobs
                    cycle[7] = jobs
                    found[(granularity, float(bucket), pool, f"type-{t}")] = Counts(
                        arrived=jobs, started=jobs, succeeded=int(jobs * 0.85),
                        failed=int(jobs * 0.08), errored=int(jobs * 0.02),
                        canceled=int(jobs * 0.02), finished=jobs, wait_sum=0.04 * jobs,
                        wait_hist=tuple(wait), cycle_sum=0.5 * jobs, cycle_hist=tuple(cycle),
                        depth_sum=12.0, depth_n=2, depth_max=9)
        items = sorted(found.items())
        for start in range(0, len(items), 20_000):
            with store.write() as tx:
                add_counts(tx, dict(items[start:start + 20_000]))
        print(f"  rollups: {len(found):,} rows at granularity {granularity}", flush=True)


READS = [
    ("jobs, first page", "/api/v1/jobs", {}),
    ("jobs ?type= (list)", "/api/v1/jobs", {"type": "type-3"}),
    ("jobs ?state=failed (list)", "/api/v1/jobs", {"state": "failed"}),
    ("search: newest", "/api/v1/jobs/search", {}),
    ("search: type", "/api/v1/jobs/search", {"type": "type-3"}),
    ("search: type + state", "/api/v1/jobs/search", {"type": "type-7", "state": "failed"}),
    ("search: 3 states", "/api/v1/jobs/search", {"state": ["failed", "error", "canceled"]}),
    ("search: label", "/api/v1/jobs/search", {"label": "step-21"}),
    ("search: id", "/api/v1/jobs/search", {"q": "#4242424"}),
    ("search: args text (one window)", "/api/v1/jobs/search", {"q": "c-4242\""}),
    ("search: pool (one window)", "/api/v1/jobs/search", {"pool": "gpu"}),
    ("search: worker (one window)", "/api/v1/jobs/search", {"worker": "worker-3"}),
    ("search: last hour", "/api/v1/jobs/search", {"since": "1h"}),
    ("search: type, last day", "/api/v1/jobs/search", {"type": "type-3", "since": "1d"}),
    ("search: a day 3 days ago", "/api/v1/jobs/search", {"since": "4d", "until": "3d"}),
    ("search: last ended", "/api/v1/jobs/search", {"sort": "-finished"}),
    ("search: last failed ended", "/api/v1/jobs/search", {"sort": "-finished",
                                                         "state": "failed"}),
    ("search: oldest first", "/api/v1/jobs/search", {"sort": "created"}),
    ("history: hour", "/api/v1/history", {"window": "hour"}),
    ("history: day", "/api/v1/history", {"window": "day"}),
    ("history: week", "/api/v1/history", {"window": "week"}),
    ("history: week, pool gpu", "/api/v1/history", {"window": "week", "pool": "gpu"}),
    ("history: day, one type", "/api/v1/history", {"window": "day", "type": "type-3"}),
    ("overview", "/api/v1/overview", {}),
    ("metrics", "/metrics", {}),
]


def reads(url: str, repeat: int) -> list[dict[str, Any]]:
    store = open_store(url)
    token = mint_token(store, f"bench-{time.time_ns()}", "read")[0]
    store.close()
    port = 18000 + int(time.time()) % 1000
    proc = subprocess.Popen([sys.executable, "-m", "taskyard", "--db", url, "serve", "--port",
                             str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    found = []
    try:
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=600,
                              headers={"Authorization": f"Bearer {token}"})
        deadline = time.monotonic() + 120
        while True:
            try:
                if client.get("/healthz").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr
            time.sleep(0.2)
        # A deep page: the cursor of a page in the middle of the history.
        middle = client.get("/api/v1/jobs/search", params={"q": "#5000000"}).json()
        deep = [("search: page at id 5,000,000", "/api/v1/jobs/search",
                 {"cursor": "5000001"})] if middle["items"] else []
        for name, path, params in READS + deep:
            times = []
            for _ in range(repeat):
                started = time.perf_counter()
                answer = client.get(path, params=params)
                times.append((time.perf_counter() - started) * 1000)
                assert answer.status_code == 200, (name, answer.text[:300])
            body = answer.json() if path != "/metrics" else {}
            row = {"read": name, "median_ms": round(statistics.median(times), 1),
                   "max_ms": round(max(times), 1),
                   "items": len(body.get("items", body.get("points", []))),
                   "complete": body.get("complete")}
            found.append(row)
            print(f"  {name:34} {row['median_ms']:9.1f} ms  (max {row['max_ms']:.1f}, "
                  f"{row['items']} items{'' if row['complete'] is not False else ', partial'})",
                  flush=True)
    finally:
        proc.terminate()
        proc.wait(30)
    return found


def follower(url: str, n: int, events: int) -> dict[str, Any]:
    """``events`` events of the newest jobs, folded by roll_up from where it stands."""
    store = open_store(url)
    with store.engine.begin() as conn:
        last = int(conn.execute(text("SELECT coalesce(max(id), 0) FROM events")).scalar_one())
    roll_up(store, batches=1_000_000)  # start from the end of what exists
    jobs = events // 3
    now = store.now()
    rows = []
    for job_id in range(n - PENDING - jobs + 1, n - PENDING + 1):
        for topic, payload in (("job-pending", {"job_id": job_id, "type": "x"}),
                               ("job-running", {"job_id": job_id, "attempt": 1}),
                               ("job-completed", {"job_id": job_id, "attempt": 1,
                                                  "state": "succeeded", "retry": False})):
            rows.append({"topic": topic, "routing_key": "taskyard._._._",
                         "payload": json.dumps(payload), "job_id": job_id, "created_at": now})
    with store.engine.begin() as conn:
        conn.execute(text("INSERT INTO events (topic, routing_key, payload, job_id, created_at)"
                          " VALUES (:topic, :routing_key, :payload, :job_id, :created_at)"), rows)
    del last
    started = time.perf_counter()
    rolled = roll_up(store, batches=1_000_000)
    seconds = time.perf_counter() - started
    store.close()
    result = {"events": rolled.events, "seconds": round(seconds, 2),
              "events_per_s": round(rolled.events / seconds)}
    print(f"  follower: {rolled.events:,} events in {seconds:.2f} s = "
          f"{result['events_per_s']:,} events/s", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--jobs", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--events", type=int, default=60_000)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    if not args.keep:
        print(f"filling {args.jobs:,} jobs", flush=True)
        fill(args.db, args.jobs)
    print("reads through taskyard serve", flush=True)
    result = {"db": args.db.split("://")[0], "jobs": args.jobs,
              "reads": reads(args.db, args.repeat),
              "follower": follower(args.db, args.jobs, args.events)}
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)


if __name__ == "__main__":
    main()
