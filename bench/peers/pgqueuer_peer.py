"""PgQueuer on the same PostgreSQL: worker processes running ``pgqueuer.run`` (what
``pgq run --batch-size N`` does: asyncpg, LISTEN/NOTIFY), as its documentation runs one."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from datetime import timedelta
from typing import Any

from bench.peers.common import Ctx, Peer, Procs, libpq_dsn, recreate_pg, run_db, settle_pg

BATCH = 1000  # jobs per batch enqueue call (one INSERT ... SELECT FROM unnest)
# Jobs a worker takes per dequeue (``PgQueuer.run(batch_size=...)``; its default is 10).
RUN_BATCH = int(os.environ.get("BENCH_PGQUEUER_BATCH", "10"))
TAKE_BATCH = 10  # W3: the dequeue path hands out this many per call, as a worker would


class PgQueuerPeer(Peer):
    name = "pgqueuer-pg"
    batch_api = "Queries.enqueue of lists (one INSERT of many jobs)"
    remaining_sql = "SELECT count(*) FROM pgqueuer"  # a finished job leaves the table

    def __init__(self, ctx: Ctx) -> None:
        super().__init__(ctx)
        assert ctx.pg, "PgQueuer needs the PostgreSQL cluster"
        self.url = run_db(ctx.pg, "pgqueuer")
        self.dsn = libpq_dsn(self.url)
        self._conn: Any = None
        self._queries: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._async: Any = None  # (asyncpg connection, Queries) for the W3 dequeues

    def env(self) -> dict[str, str]:
        return {"BENCH_PGQUEUER_DSN": self.dsn}

    @property
    def queries(self) -> Any:
        """``SyncQueries`` on an autocommit psycopg connection: each enqueue is committed
        (durable) when it returns."""
        if self._queries is None:
            import psycopg  # noqa: PLC0415
            from pgqueuer.db import SyncPsycopgDriver  # noqa: PLC0415
            from pgqueuer.queries import SyncQueries  # noqa: PLC0415

            self._conn = psycopg.connect(self.dsn, autocommit=True)
            self._queries = SyncQueries(SyncPsycopgDriver(self._conn))
        return self._queries

    def _run(self, coro: Any) -> Any:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coro)

    async def _open_async(self) -> Any:
        import asyncpg  # noqa: PLC0415
        from pgqueuer.db import AsyncpgDriver  # noqa: PLC0415
        from pgqueuer.queries import Queries  # noqa: PLC0415

        conn = await asyncpg.connect(self.dsn)
        return conn, Queries(AsyncpgDriver(conn))

    def reset(self) -> None:
        self.close()
        recreate_pg(self.url)

        async def install() -> None:
            conn, queries = await self._open_async()
            try:
                await queries.install()
            finally:
                await conn.close()

        self._run(install())

    def settle(self) -> None:
        settle_pg(self.url)

    def close(self) -> None:
        if self._async is not None:
            self._run(self._async[0].close())
            self._async = None
        if self._loop is not None:
            self._loop.close()
            self._loop = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None
            self._queries = None

    def enqueue_stamp(self, path: str) -> None:
        self.queries.enqueue("stamp", path.encode())

    def enqueue_noops(self, count: int, *, batch: bool) -> None:
        q = self.queries
        if batch:
            for start in range(0, count, BATCH):
                k = min(BATCH, count - start)
                q.enqueue(["noop"] * k, [None] * k, [0] * k)
        else:
            for _ in range(count):
                q.enqueue("noop", None)

    def pending(self) -> int | None:
        row = self._sql("SELECT count(*) FROM pgqueuer WHERE status = 'queued'")
        return int(row[0])

    def _sql(self, statement: str) -> Any:
        self.queries  # noqa: B018 (opens the connection)
        return self._conn.execute(statement).fetchone()

    def start_workers(self, procs: Procs, k: int, workload: str) -> None:
        for _ in range(k):
            procs.start("workers", [
                sys.executable, "-m", "bench.peers.pgqueuer_app", str(RUN_BATCH)])

    def cannot(self, shape: str, n: int) -> str | None:
        return "no dependencies between jobs (a queue of independent jobs)"

    def fill(self, n: int) -> None:
        """The backlog straight into the queue table (bench setup, as taskyard's): one
        INSERT ... SELECT, its per-row NOTIFY trigger skipped as procrastinate's is."""
        self.queries  # noqa: B018
        with self._conn.transaction():
            self._conn.execute("SET LOCAL session_replication_role = replica")
            self._conn.execute(
                "INSERT INTO pgqueuer (priority, entrypoint, status, payload) "
                "SELECT 0, 'noop', 'queued', NULL FROM generate_series(1, %s)", (n,))
        self._conn.execute("ANALYZE pgqueuer")

    def take(self, k: int) -> int:
        """k jobs through the worker's own dequeue (``Queries.dequeue``), 10 per call."""
        from pgqueuer.ports.repository import EntrypointExecutionParameter  # noqa: PLC0415

        if self._async is None:
            self._async = self._run(self._open_async())
        queries = self._async[1]
        manager = uuid.uuid4()
        entrypoints = {"noop": EntrypointExecutionParameter(concurrency_limit=0)}

        async def take_all() -> int:
            got = 0
            while got < k:
                jobs = await queries.dequeue(
                    batch_size=min(TAKE_BATCH, k - got), entrypoints=entrypoints,
                    queue_manager_id=manager, global_concurrency_limit=None,
                    heartbeat_timeout=timedelta(seconds=30))
                if not jobs:
                    break
                got += len(jobs)
            return got

        return int(self._run(take_all()))

    def config(self) -> dict[str, str]:
        return {"storage": "PgQueuer's schema on the same PostgreSQL (durability `durable`, "
                           "its default)",
                "workers": "K x `pgqueuer.run(factory, batch_size=...)` on uvloop, as `pgq "
                           f"run` does (`PgQueuer.run`, batch size {RUN_BATCH}, asyncpg, "
                           "LISTEN/NOTIFY); async entrypoints",
                "enqueue": "`SyncQueries.enqueue()` per job on an autocommit psycopg "
                           f"connection; batch: lists of {BATCH} jobs in one call",
                "graphs": "cannot express (no job dependencies)"}
