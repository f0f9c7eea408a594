"""HTTP API benchmark: submit throughput and submit→start latency through ``/api/v1``.

For each store (SQLite, and PostgreSQL on a throwaway cluster from scripts/pg-cluster,
or ``--pg URL``), on a fresh database:

- submit throughput: ``taskyard serve`` alone (no worker: nothing competes with the
  submits); ``--clients`` threads, each with a keep-alive connection, POST
  ``/api/v1/jobs`` until ``--jobs`` jobs are in; rate = jobs / wall time.
- submit→start latency: ``taskyard up --workers 1 --http PORT`` on an idle system;
  ``--latency`` jobs one after the other, each waiting for the previous to end; latency =
  the handler's start (its result: ``time.time()``) - the time just before the POST.

The client runs on the same machine as the server (2 cores shared): figures include the
client's own CPU. Usage: python -m bench.http [--jobs 2000] [--clients 8] [--latency 300]
[--stores sqlite,pg] [--pg URL] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench.throughput import fresh
from taskyard.api.http.tokens import mint_token

HERE = Path(__file__).resolve().parent.parent


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def taskyard(url: str, *args: str, port: int) -> Iterator[str]:
    """A taskyard daemon serving HTTP on ``port``; yields its base URL."""
    # This process's path too: a run from another checkout serves that checkout's taskyard.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *[p for p in sys.path if p]])}
    proc = subprocess.Popen([sys.executable, "-m", "taskyard", "--db", url, *args], env=env,
                            cwd=HERE, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"taskyard {' '.join(args)} did not start")
            time.sleep(0.1)
        yield base
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _token(url: str) -> str:
    yard = fresh(url)
    try:
        return mint_token(yard.store, "bench", "write")[0]
    finally:
        yard.close()


def submit_rate(url: str, jobs: int, clients: int, *, strict: bool = True) -> dict[str, Any]:
    """POST ``jobs`` no-op jobs from ``clients`` threads; the rate. A failed POST raises
    RuntimeError, or with ``strict=False`` is counted (``errors``, and the first one)."""
    token = _token(url)
    port = _port()
    with taskyard(url, "serve", "--port", str(port), port=port) as base:
        headers = {"Authorization": f"Bearer {token}"}
        left = [jobs]
        lock = threading.Lock()
        errors: list[str] = []

        def client() -> None:
            with httpx.Client(base_url=base, headers=headers, timeout=60) as http:
                while True:
                    with lock:
                        if left[0] <= 0:
                            return
                        left[0] -= 1
                    answer = http.post("/api/v1/jobs", json={"type": "noop"})
                    if answer.status_code != 201:
                        errors.append(answer.text)

        threads = [threading.Thread(target=client) for _ in range(clients)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - started
    if errors and strict:
        raise RuntimeError(f"{len(errors)} submits failed, e.g. {errors[0]}")
    return {"jobs": jobs, "clients": clients, "seconds": round(seconds, 2),
            "jobs_per_second": round((jobs - len(errors)) / seconds, 1),
            "errors": len(errors), **({"first_error": errors[0][:300]} if errors else {})}


def latency(url: str, count: int) -> dict[str, Any]:
    token = _token(url)
    port = _port()
    with taskyard(url, "up", "--workers", "1", "--capacity", "1", "--http", str(port),
                  port=port) as base, httpx.Client(
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--latency", type=int, default=300)
    parser.add_argument("--stores", default="sqlite,pg")
    parser.add_argument("--pg", help="PostgreSQL URL (default: a throwaway cluster)")
    parser.add_argument("--json", help="Also write the results to this file.")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    folder = tempfile.mkdtemp(prefix="bench-http-")
    for store in args.stores.split(","):
        if store == "sqlite":
            url = f"sqlite:///{folder}/http.db"
            results[store] = {"submit": submit_rate(url, args.jobs, args.clients),
                              "latency": latency(url, args.latency)}
        else:
            with pg_cluster(args.pg) as url:
                results[store] = {"submit": submit_rate(url, args.jobs, args.clients),
                                  "latency": latency(url, args.latency)}
        submit, lat = results[store]["submit"], results[store]["latency"]
        print(f"{store:<7} submit {submit['jobs_per_second']:>7.1f} jobs/s "
              f"({submit['jobs']} jobs, {submit['clients']} clients)   submit→start "
              f"p50 {lat['p50_ms']:.1f} ms  p99 {lat['p99_ms']:.1f} ms  "
              f"(max {lat['max_ms']:.1f}, {lat['jobs']} jobs)", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
