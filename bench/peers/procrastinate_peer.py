"""procrastinate on the same PostgreSQL: ``procrastinate worker`` processes."""

from __future__ import annotations

import os
import sys
from typing import Any

from bench.peers.common import (
    Ctx,
    Peer,
    Procs,
    libpq_dsn,
    recreate_pg,
    run_db,
    settle_pg,
)

BATCH = 1000
# Sub-workers per worker process (its default is 1: for async tasks its docs raise it,
# howto/production/concurrency.md); procrastinate_app sizes the pool from the same value.
CONCURRENCY = int(os.environ.get("BENCH_PROCRASTINATE_CONCURRENCY", "10"))


class ProcrastinatePeer(Peer):
    name = "procrastinate-pg"
    batch_api = "Task.batch_defer (one INSERT of many jobs)"
    remaining_sql = "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')"

    def __init__(self, ctx: Ctx) -> None:
        super().__init__(ctx)
        assert ctx.pg, "procrastinate needs the PostgreSQL cluster"
        self.url = run_db(ctx.pg, "procrastinate")
        self.dsn = libpq_dsn(self.url)
        self._app: Any = None
        self._conn: Any = None
        self._worker_id: int | None = None

    def env(self) -> dict[str, str]:
        return {"BENCH_PROCRASTINATE_DSN": self.dsn}

    @property
    def app(self) -> Any:
        if self._app is None:
            self.apply_env()
            from bench.peers import procrastinate_app  # noqa: PLC0415

            self._app = procrastinate_app
            self._app.app.open()
        return self._app

    def reset(self) -> None:
        self.close()
        recreate_pg(self.url)
        self.app.app.schema_manager.apply_schema()

    def settle(self) -> None:
        settle_pg(self.url)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
            self._worker_id = None
        if self._app is not None:
            self._app.app.close()
            self._app = None

    def enqueue_stamp(self, path: str) -> None:
        self.app.stamp.defer(path=path)

    def enqueue_noops(self, count: int, *, batch: bool) -> None:
        noop = self.app.noop
        if batch:
            for start in range(0, count, BATCH):
                noop.batch_defer(*[{}] * min(BATCH, count - start))
        else:
            for _ in range(count):
                noop.defer()

    def _sql(self) -> Any:
        if self._conn is None:
            import psycopg  # noqa: PLC0415

            self._conn = psycopg.connect(self.dsn, autocommit=True)
        return self._conn

    def pending(self) -> int | None:
        row = self._sql().execute(
            "SELECT count(*) FROM procrastinate_jobs WHERE status = 'todo'").fetchone()
        return int(row[0])

    def start_workers(self, procs: Procs, k: int, workload: str) -> None:
        for i in range(k):
            procs.start("workers", [
                sys.executable, "-m", "procrastinate", "--app",
                "bench.peers.procrastinate_app.app", "worker", "--name", f"bench-{i}",
                "--concurrency", str(CONCURRENCY)])

    def cannot(self, shape: str, n: int) -> str | None:
        return "no dependencies between jobs (only locks and queueing locks)"

    def fill(self, n: int) -> None:
        """The backlog straight into procrastinate_jobs (bench setup, as taskyard's).
        Its insert triggers (a NOTIFY and an event row per job) are skipped, as taskyard's
        fill writes no events: they cost 4/5 of the fill and do not change the dequeue."""
        conn = self._sql()
        with conn.transaction():
            conn.execute("SET LOCAL session_replication_role = replica")
            conn.execute(
                "INSERT INTO procrastinate_jobs (queue_name, task_name, args) "
                "SELECT 'default', 'noop', '{}' FROM generate_series(1, %s)", (n,))
        conn.execute("ANALYZE procrastinate_jobs")

    def take(self, k: int) -> int:
        """k x the worker's own fetch (``procrastinate_fetch_job_v2``)."""
        conn = self._sql()
        if self._worker_id is None:
            self._worker_id = int(conn.execute(
                "SELECT * FROM procrastinate_register_worker_v1()").fetchone()[0])
        got = 0
        for _ in range(k):
            row = conn.execute(
                "SELECT id FROM procrastinate_fetch_job_v2(NULL::varchar[], %s)",
                (self._worker_id,)).fetchone()
            got += row[0] is not None
        return got

    def config(self) -> dict[str, str]:
        return {"storage": "procrastinate's schema on the same PostgreSQL (`PsycopgConnector`, "
                           f"pool `max_size={CONCURRENCY + 1}`: concurrency + 1, as its docs "
                           "size it for short jobs)",
                "workers": f"K x `procrastinate worker --concurrency {CONCURRENCY}` "
                           "(LISTEN/NOTIFY on and a 5 s fetch polling interval, the "
                           "defaults); async tasks (no thread hop)",
                "enqueue": f"`defer()` per job; batch: `batch_defer()` of {BATCH} jobs",
                "graphs": "cannot express (no job dependencies)"}
