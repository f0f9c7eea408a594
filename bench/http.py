"""HTTP API benchmark: submit throughput, batch throughput and submit→start latency
through ``/api/v1``.

For each store (SQLite, and PostgreSQL on a throwaway cluster from scripts/pg-cluster,
or ``--pg URL``), on a fresh database:

- submit: ``taskyard serve`` alone (no worker: nothing competes with the submits);
  ``--clients`` keep-alive connections (HTTP/1.1, bench/http_load.py: a light client,
  one request in flight per connection) POST ``/api/v1/jobs`` until ``--jobs`` jobs are
  in; rate = jobs / wall time; p50/p99 of the requests; the CPU each request cost the
  server's processes, the client, and (PostgreSQL on this machine) the database's
  backends, read from /proc around the run.
- batch: the same server, ``POST /api/v1/jobs/batch`` of 1,000 jobs from 4 connections
  until ``--batch-jobs`` jobs are in; rate = jobs / wall time.
- latency: ``taskyard up --workers 1 --http PORT`` on an idle system; ``--latency`` jobs
  one after the other, each waiting for the previous to end; latency = the handler's
  start (its result: ``time.time()``) - the time just before the POST.

The client runs on the same machine as the server (2 cores shared): its CPU is said.
``--profile DIR`` records the server under the submit load with py-spy (the thread
holding the GIL: where its Python CPU goes; raw stacks
and a summary per function). Usage: python -m bench.http [--jobs 8000] [--clients 16]
[--batch-jobs 20000] [--latency 300] [--workers N] [--stores sqlite,pg] [--pg URL]
[--profile DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench.http_load import request_bytes, run_load
from bench.throughput import fresh
from taskyard.api.http.tokens import mint_token

HERE = Path(__file__).resolve().parent.parent
WARMUP = 500


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def taskyard(url: str, *args: str, port: int = 0,
             prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A taskyard daemon serving HTTP; yields its base URL and process. ``port`` 0: the
    daemon takes a free port (``serve --port 0``) and says which on its start line — on a
    shared machine a port found free beforehand may be another's by then."""
    # This process's path too: a run from another checkout serves that checkout's taskyard.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *[p for p in sys.path if p]])}
    with tempfile.NamedTemporaryFile(prefix="bench-http-", suffix=".log") as log:
        proc = subprocess.Popen([*prefix, sys.executable, "-m", "taskyard", "--db", url,
                                 *args], env=env, cwd=HERE, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=log)
        try:
            yield _started(proc, Path(log.name), port, args), proc
        finally:
            proc.send_signal(signal.SIGINT if prefix else signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _started(proc: subprocess.Popen[bytes], log: Path, port: int, args: tuple[str, ...]) -> str:
    """The base URL once the daemon answers (``port``, or the one its start line says)."""
    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"taskyard {' '.join(args)} did not start: "
                               f"{log.read_text()[-2000:]}")
        found = port or _started_port(log)
        if found:
            base = f"http://127.0.0.1:{found}"
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200 \
                        and proc.poll() is None:  # ours, not another's on that port
                    return base
            except httpx.HTTPError:
                pass
        time.sleep(0.1)


def _started_port(log: Path) -> int | None:
    found = re.search(r"event=http-started .*? port=(\d+)", log.read_text())
    return int(found.group(1)) if found else None


def _token(url: str) -> str:
    yard = fresh(url)
    try:
        return mint_token(yard.store, "bench", "write")[0]
    finally:
        yard.close()


def _cpu(pids: list[int]) -> float:
    """CPU seconds (user + system) these processes used so far."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int(
                    (entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(child for child, parent in parents.items() if parent == current)
    return found


def _db_backends(url: str) -> list[int]:
    """The PostgreSQL backends serving ``url``'s database, when they run on this machine
    (their CPU is the database's share of a submit); none on SQLite."""
    if not url.startswith("postgresql"):
        return []
    from sqlalchemy import create_engine, text  # noqa: PLC0415

    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as conn:
            pids = conn.execute(text("SELECT pid FROM pg_stat_activity WHERE datname = "
                                     "current_database() AND pid <> pg_backend_pid()"))
            return [int(p) for p in pids.scalars() if Path(f"/proc/{p}").exists()]
    finally:
        engine.dispose()


PORT = 0
"""The port ``serve`` is given (``--port``): 0, the one it says it took; another for a
taskyard that cannot say (before issue 36, to measure it with this client)."""


def _serve_args(workers: int | None) -> list[str]:
    return ["serve", "--port", str(PORT), *(["--workers", str(workers)] if workers else [])]


def submit_rate(url: str, jobs: int, clients: int, *, strict: bool = True,
                workers: int | None = None, profile: Path | None = None) -> dict[str, Any]:
    """POST ``jobs`` no-op jobs over ``clients`` keep-alive connections (after a warm-up
    of :data:`WARMUP`); the rate, latencies and CPU per request. A failed POST raises
    RuntimeError, or with ``strict=False`` is counted (``errors``, and the first one)."""
    token = _token(url)
    prefix = _py_spy(profile, url) if profile else ()
    with taskyard(url, *_serve_args(workers), port=PORT, prefix=prefix) as (base, proc):
        request = request_bytes("POST", f"{base}/api/v1/jobs", {"type": "noop"},
                                {"Authorization": f"Bearer {token}"})
        run_load(base, lambda _: request, min(WARMUP, max(jobs // 4, clients)), clients)
        with _cpu_of(proc, url) as used:
            done = run_load(base, lambda _: request, jobs, clients)
    errors = done.count - done.statuses.get(201, 0)
    if errors and strict:
        raise RuntimeError(f"{errors} submits failed, e.g. {done.first_error}")
    result = {"jobs": jobs, "clients": clients, "workers": workers or "default",
              "seconds": round(done.seconds, 2),
              "jobs_per_second": round(done.statuses.get(201, 0) / done.seconds, 1),
              "p50_ms": round(done.percentile_ms(0.5), 2),
              "p99_ms": round(done.percentile_ms(0.99), 2),
              "server_cpu_ms": round(used["server"] / done.count * 1000, 3),
              "client_cpu_ms": round(done.client_cpu / done.count * 1000, 3),
              "errors": errors, **({"first_error": done.first_error} if errors else {})}
    if "db" in used:
        result["db_cpu_ms"] = round(used["db"] / done.count * 1000, 3)
    if profile:
        result["profile"] = _summarize(profile, url)
    return result


def batch_rate(url: str, jobs: int, *, batch: int = 1000, clients: int = 4,
               workers: int | None = None) -> dict[str, Any]:
    """POST ``/api/v1/jobs/batch`` of ``batch`` no-op jobs until ``jobs`` are in."""
    token = _token(url)
    with taskyard(url, *_serve_args(workers), port=PORT) as (base, proc):
        request = request_bytes("POST", f"{base}/api/v1/jobs/batch",
                                {"jobs": [{"type": "noop"}] * batch},
                                {"Authorization": f"Bearer {token}"})
        run_load(base, lambda _: request, 2, clients)
        with _cpu_of(proc, url) as used:
            done = run_load(base, lambda _: request, max(1, jobs // batch), clients)
    if done.statuses.get(201, 0) != done.count:
        raise RuntimeError(f"batches failed: {done.statuses}, e.g. {done.first_error}")
    return {"jobs": done.count * batch, "batch": batch, "clients": clients,
            "seconds": round(done.seconds, 2),
            "jobs_per_second": round(done.count * batch / done.seconds, 1),
            "p50_ms": round(done.percentile_ms(0.5), 1),
            **{f"{k}_cpu_ms_per_batch": round(v / done.count * 1000, 1)
               for k, v in used.items()},
            "client_cpu_ms_per_batch": round(done.client_cpu / done.count * 1000, 2)}


@contextmanager
def _cpu_of(proc: subprocess.Popen[bytes], url: str) -> Iterator[dict[str, float]]:
    """CPU seconds the server's processes (``server``) and, PostgreSQL on this machine,
    the database's backends (``db``) use inside the block; filled in when it ends."""
    used: dict[str, float] = {}
    server = _tree(proc.pid)
    before, db_before = _cpu(server), {pid: _cpu([pid]) for pid in _db_backends(url)}
    yield used
    used["server"] = _cpu(server) - before
    if db_before or url.startswith("postgresql"):
        # Backends opened during the run count whole; those before, their share of it.
        used["db"] = sum(_cpu([pid]) - db_before.get(pid, 0.0) for pid in _db_backends(url))


def latency(url: str, count: int) -> dict[str, Any]:
    token = _token(url)
    port = _port()
    with taskyard(url, "up", "--workers", "1", "--capacity", "1", "--http", str(port),
                  port=port) as (base, _), httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        # The worker registers after the server answers: wait for it.
        while not http.get("/api/v1/workers").json()["items"]:
            time.sleep(0.05)
        samples = []
        for i in range(count + 10):
            before = time.time()
            job = http.post("/api/v1/jobs", json={"type": "latency"}).json()
            while (found := http.get(f"/api/v1/jobs/{job['id']}").json())["state"] not in (
                    "succeeded", "failed", "error"):
                time.sleep(0.002)
            if found["state"] != "succeeded":
                raise RuntimeError(f"latency job {job['id']} ended {found['state']}")
            if i >= 10:  # the first ones warm the worker's child process up
                samples.append((found["result"] - before) * 1000)
    samples.sort()
    return {"jobs": count, "p50_ms": round(statistics.median(samples), 2),
            "p99_ms": round(samples[min(len(samples) - 1, int(len(samples) * 0.99))], 2),
            "max_ms": round(samples[-1], 2)}


def _py_spy(folder: Path, url: str) -> tuple[str, ...]:
    found = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(found).exists():
        raise RuntimeError("--profile needs py-spy (pip install py-spy)")
    folder.mkdir(parents=True, exist_ok=True)
    store = "pg" if url.startswith("postgresql") else "sqlite"
    return (found, "record", "--rate", "200", "--gil", "--format", "raw", "--subprocesses",
            "--output", str(folder / f"{store}.raw.txt"), "--")


def _summarize(folder: Path, url: str, top: int = 40) -> str:
    """The raw stacks summed per function (share of samples in it or below), beside them."""
    store = "pg" if url.startswith("postgresql") else "sqlite"
    raw = folder / f"{store}.raw.txt"
    inclusive: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        total += int(count)
        for frame in set(stack.split(";")):
            inclusive[frame.split(" (")[0] + " " + frame.rpartition("/")[2].rstrip(")")] += \
                int(count)
    lines = [f"{100 * n / max(total, 1):5.1f}%  {name}" for name, n in inclusive.most_common(top)]
    summary = folder / f"{store}.summary.txt"
    summary.write_text(f"{total} samples\n" + "\n".join(lines) + "\n")
    return str(summary)


@contextmanager
def pg_cluster(given: str | None) -> Iterator[str]:
    if given:
        yield given
        return
    folder = tempfile.mkdtemp(prefix="bench-http-pg-")
    os.chmod(folder, 0o755)
    script = HERE / "scripts" / "pg-cluster"
    url = subprocess.run([str(script), "start", f"{folder}/pg"], check=True,
                         capture_output=True, text=True).stdout.strip()
    try:
        yield url
    finally:
        subprocess.run([str(script), "stop", f"{folder}/pg"], check=False)


def measure(url: str, args: argparse.Namespace) -> dict[str, Any]:
    profile = Path(args.profile) if args.profile else None
    return {**({"submit": submit_rate(url, args.jobs, args.clients, workers=args.workers,
                                      profile=profile)} if args.jobs else {}),
            **({"batch": batch_rate(url, args.batch_jobs, workers=args.workers)}
               if args.batch_jobs else {}),
            **({"latency": latency(url, args.latency)} if args.latency else {})}


def line(store: str, found: dict[str, Any]) -> str:
    text = f"{store:<7}"
    if "submit" in found:
        s = found["submit"]
        db = f", database {s['db_cpu_ms']:.2f}" if "db_cpu_ms" in s else ""
        text += (f" submit {s['jobs_per_second']:>7.1f} jobs/s p50 {s['p50_ms']:.1f} ms "
                 f"p99 {s['p99_ms']:.1f} ms ({s['clients']} connections, workers "
                 f"{s['workers']}, {s['errors']} errors; CPU ms a request: server "
                 f"{s['server_cpu_ms']:.2f}{db}, client {s['client_cpu_ms']:.2f})")
    if "batch" in found:
        b = found["batch"]
        db = f", database {b['db_cpu_ms_per_batch']:.0f}" if "db_cpu_ms_per_batch" in b else ""
        text += (f"   batch {b['jobs_per_second']:>8.1f} jobs/s (CPU ms a batch of "
                 f"{b['batch']}: server {b['server_cpu_ms_per_batch']:.0f}{db})")
    if "latency" in found:
        lat = found["latency"]
        text += (f"   submit→start p50 {lat['p50_ms']:.1f} ms p99 {lat['p99_ms']:.1f} ms "
                 f"({lat['jobs']} jobs)")
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=8000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--batch-jobs", type=int, default=20_000, help="0: no batch run")
    parser.add_argument("--latency", type=int, default=300, help="0: no latency run")
    parser.add_argument("--workers", type=int, help="taskyard serve --workers")
    parser.add_argument("--stores", default="sqlite,pg")
    parser.add_argument("--pg", help="PostgreSQL URL (default: a throwaway cluster)")
    parser.add_argument("--profile", help="Record the server with py-spy into this folder.")
    parser.add_argument("--port", type=int, default=0,
                        help="serve's port (default 0: the one it says it took)")
    parser.add_argument("--json", help="Also write the results to this file.")
    args = parser.parse_args()
    global PORT  # noqa: PLW0603 - one setting for the whole run
    PORT = args.port
    results: dict[str, Any] = {}
    folder = tempfile.mkdtemp(prefix="bench-http-")
    for store in args.stores.split(","):
        if store == "sqlite":
            results[store] = measure(f"sqlite:///{folder}/http.db", args)
        else:
            with pg_cluster(args.pg) as url:
                results[store] = measure(url, args)
        print(line(store, results[store]), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
