"""taskyard with its defaults, through the existing benchmarks (bench.throughput,
bench.backlog, bench.graphs), on SQLite or PostgreSQL."""

from __future__ import annotations

import sys
import time
from typing import Any

from bench import backlog, graphs, throughput
from bench.peers.common import Ctx, Procs, recreate_pg, remove_sqlite, run_db, settle_pg


class TaskyardSystem:
    batch_api = "Yard.submit_many (1,000 jobs per call)"

    def __init__(self, ctx: Ctx, backend: str) -> None:
        self.ctx = ctx
        self.backend = backend
        self.name = f"taskyard-{backend}"
        if backend == "sqlite":
            self.url = f"sqlite:///{ctx.tmp / 'taskyard.db'}"
        else:
            assert ctx.pg, "taskyard-pg needs the PostgreSQL cluster"
            self.url = run_db(ctx.pg, "taskyard")

    def _fresh(self) -> None:
        if self.backend == "sqlite":
            remove_sqlite(self.url[len("sqlite:///"):])
        else:
            recreate_pg(self.url)

    def w1(self, n: int, workers: int, *, batch: bool, timeout: float,
           enqueue_limit: float | None = None, inproc: bool = False,
           capacity: int | None = None) -> dict[str, Any]:
        return throughput.w1(self.url, n, workers, batch=batch, timeout=timeout,
                             enqueue_limit=enqueue_limit, inproc=inproc, capacity=capacity)

    def w2(self, m: int, warmup: int, timeout: float) -> dict[str, Any]:
        return throughput.w2(self.url, m, warmup, timeout)

    def w3(self, n: int, cycles: int) -> dict[str, Any]:
        self._fresh()
        return backlog.measure(self.url, n, cycles)

    def cannot(self, shape: str, n: int) -> str | None:
        return None

    def w4(self, shape: str, n: int, timeout: float) -> dict[str, Any]:
        self._fresh()
        out = self.ctx.tmp / "records"
        out.mkdir(exist_ok=True)
        # The worker's default capacity (one slot per CPU), as every other setting.
        return graphs.run(self.url, shape, n, capacity=None, timeout=timeout, record=str(out))

    def http(self, jobs: int, clients: int, count: int) -> dict[str, Any]:
        """bench.http on this store: POST /api/v1/jobs throughput over ``clients``
        keep-alive connections, batch throughput (1,000 jobs a request), then
        submit→start."""
        from bench import http  # noqa: PLC0415 (httpx: the bench and dev extras only)

        self._fresh()
        row: dict[str, Any] = {"workload": "HTTP"}
        # A failed POST is counted, not fatal: the rate is of the jobs that went in.
        submit = http.submit_rate(self.url, jobs, clients, strict=False)
        self._fresh()
        batch = http.batch_rate(self.url, max(jobs * 4, 2000))
        self._fresh()
        lat = http.latency(self.url, count)
        row.update(submit_per_s=submit["jobs_per_second"], clients=clients,
                   submit_errors=submit["errors"], first_error=submit.get("first_error"),
                   submit_p50_ms=submit["p50_ms"], submit_p99_ms=submit["p99_ms"],
                   server_cpu_ms=submit["server_cpu_ms"], client_cpu_ms=submit["client_cpu_ms"],
                   db_cpu_ms=submit.get("db_cpu_ms"), batch_per_s=batch["jobs_per_second"],
                   p50_ms=lat["p50_ms"], p99_ms=lat["p99_ms"], latency_jobs=count)
        return row

    # --- what bench.dbwork drives, as it drives a peer ---------------------------------
    remaining_sql = "SELECT count(*) FROM jobs WHERE state <> 'succeeded'"
    _yard: Any = None
    _last: Any = None

    def env(self) -> dict[str, str]:
        return {}

    def reset(self) -> None:
        self._yard = throughput.fresh(self.url)

    def enqueue_stamp(self, path: str) -> None:
        self._last = self._yard.submit("stamp", {"path": path})

    def enqueue_noops(self, count: int, *, batch: bool) -> None:
        if batch:
            for start in range(0, count, throughput.BATCH):
                self._yard.submit_many("noop", [{}] * min(throughput.BATCH, count - start))
        else:
            for _ in range(count):
                self._yard.submit("noop")

    def fill(self, n: int) -> None:
        self.enqueue_noops(n, batch=True)

    def settle(self) -> None:
        if self.backend == "pg":
            settle_pg(self.url)

    def start_workers(self, procs: Procs, k: int, workload: str) -> None:
        """As bench.throughput.daemons: ``taskyard scheduler`` and K workers."""
        base = [sys.executable, "-m", "taskyard", "--db", self.url]
        procs.start("scheduler", [*base, "scheduler"])
        for i in range(k):
            procs.start("workers", [*base, "worker", "--name", f"bench-{i}"])

    def after_start(self, observer: Any, deadline: float) -> None:
        """W2: the last job's end recorded (as bench.throughput.w2 waits for it), seen
        through the harness's own connection (``observer``, not counted)."""
        from taskyard.core.states import TERMINAL  # noqa: PLC0415

        ended = sorted(str(s) for s in TERMINAL)
        while time.monotonic() < deadline:
            if observer.execute("/* bench observer */ SELECT state = ANY(%s) FROM jobs "
                                "WHERE id = %s", (ended, self._last)).fetchone()[0]:
                return
            time.sleep(0.001)
        raise TimeoutError("the job's end was not recorded")

    def close(self) -> None:
        if self._yard is not None:
            self._yard.close()
            self._yard = None

    def config(self) -> dict[str, str]:
        return {"storage": "SQLite file (WAL), the default" if self.backend == "sqlite"
                else "PostgreSQL (psycopg 3), the same cluster as the peers",
                "workers": "defaults: `taskyard scheduler` + K x `taskyard worker` "
                           "(capacity: one slot per CPU, a Python child each; W4: 2 workers); "
                           "W1 K=2 once more with `--capacity 1` (2 slots in all)",
                "enqueue": "`Yard.submit()` per job (runs a cycle inline, the default); "
                           "batch: `Yard.submit_many()` of 1,000",
                "graphs": "every shape (`Yard.submit_graph`)"}
