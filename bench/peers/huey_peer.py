"""huey on SQLite (``SqliteHuey``), on PostgreSQL (``PostgresHuey``) and on redis
(``RedisHuey``), run by ``huey_consumer`` with worker processes."""

from __future__ import annotations

import sys
import uuid
from typing import Any

from bench.peers.common import (
    Ctx,
    Peer,
    Procs,
    libpq_dsn,
    recreate_pg,
    remove_sqlite,
    run_db,
    settle_pg,
)

CONSUMER = [sys.executable, "-m", "huey.bin.huey_consumer", "bench.peers.huey_app.huey"]


class HueyPeer(Peer):
    batch_api = None  # huey.enqueue(group) loops over storage.enqueue: no batch insert
    remaining_sql = "SELECT count(*) FROM huey_task"  # a dequeued job leaves the table

    def __init__(self, ctx: Ctx, storage: str) -> None:
        super().__init__(ctx)
        self.storage = storage
        self.name = f"huey-{storage}"
        self.results = False
        if storage == "sqlite":
            self.target = str(ctx.tmp / "huey.db")
        elif storage == "pg":
            assert ctx.pg, "huey-pg needs the PostgreSQL cluster"
            self.pg = self.url = run_db(ctx.pg, "huey")
            self.target = libpq_dsn(self.pg)
        else:
            assert ctx.redis, "huey-redis needs redis-server"
            self.target = f"{ctx.redis}/2"
        self._app: Any = None

    def env(self) -> dict[str, str]:
        return {"BENCH_HUEY_STORAGE": self.storage, "BENCH_HUEY_TARGET": self.target,
                "BENCH_HUEY_RESULTS": "1" if self.results else "0"}

    @property
    def app(self) -> Any:
        if self._app is None:
            self.apply_env()
            from bench.peers import huey_app  # noqa: PLC0415

            self._app = huey_app
        return self._app

    def reset(self) -> None:
        self.close()
        if self.storage == "sqlite":
            remove_sqlite(self.target)
        elif self.storage == "pg":
            recreate_pg(self.pg)
        else:
            import redis  # noqa: PLC0415

            redis.Redis.from_url(self.target).flushdb()
        if self.storage != "redis":  # the tables again, in the fresh database
            self.app.huey.storage.initialize_schema()

    def settle(self) -> None:
        if self.storage == "pg":
            settle_pg(self.pg)

    def close(self) -> None:
        if self._app is not None:
            self._app.huey.storage.close()

    def enqueue_stamp(self, path: str) -> None:
        self.app.stamp(path)

    def enqueue_noops(self, count: int, *, batch: bool) -> None:
        noop = self.app.noop
        for _ in range(count):
            noop()

    def pending(self) -> int | None:
        return int(self.app.huey.pending_count())

    def start_workers(self, procs: Procs, k: int, workload: str) -> None:
        cmd = [*CONSUMER, "-k", "process", "-w", str(k), "-n", "-C", "-q"]
        if workload == "W2" and self.storage == "sqlite":
            cmd += ["-d", "0.001", "-m", "0.001", "-b", "1"]
        procs.start("workers", cmd)

    def cannot(self, shape: str, n: int) -> str | None:
        if shape == "chain":
            return ("a huey pipeline nests every later step in its message: serializing one "
                    "raises RecursionError from ~500 steps")
        return None if shape == "fanout" else "no general DAG: only pipelines, groups and chords"

    def w4(self, shape: str, n: int, timeout: float) -> dict[str, Any]:
        self.results = True  # chord members report through the result store
        try:
            return super().w4(shape, n, timeout)
        finally:
            self.results = False

    def submit_graph(self, shape: str, n: int, out: str) -> None:
        self.app.fan_root(out, n)

    def fill(self, n: int) -> None:
        """n no-op jobs straight into huey's queue storage, untimed (bench setup, as
        taskyard's): copies of one real message, each with a task id of its own."""
        huey = self.app.huey
        task = self.app.noop.s()
        message = huey.serialize_task(task)
        tid = task.id.encode()
        storage = huey.storage
        chunk = 20_000
        for start in range(0, n, chunk):
            batch = [message.replace(tid, str(uuid.uuid4()).encode())
                     for _ in range(min(chunk, n - start))]
            if self.storage == "redis":
                pipe = storage.conn.pipeline(transaction=False)
                for i in range(0, len(batch), 1_000):  # messages per LPUSH
                    pipe.lpush(storage.queue_key, *batch[i:i + 1_000])
                pipe.execute()
            elif self.storage == "pg":
                with storage.db(commit=True) as curs, curs.copy(
                        f"COPY {storage.table_task} (queue, data, priority) FROM STDIN") as copy:
                    for data in batch:
                        copy.write_row((storage.name, data, 0))
            else:
                with storage.db(commit=True) as curs:
                    curs.executemany("insert into task (queue, data, priority) values (?, ?, 0)",
                                     [(storage.name, data) for data in batch])
        if self.storage == "pg":
            storage.sql(f"analyze {storage.table_task}")

    def take(self, k: int) -> int:
        got = 0
        for _ in range(k):
            if self.app.huey.dequeue() is not None:
                got += 1
        return got

    def config(self) -> dict[str, str]:
        store = {"sqlite": "SqliteHuey (WAL, its default)",
                 "pg": "PostgresHuey (huey 3's psycopg 3 storage: SKIP LOCKED, LISTEN/NOTIFY)",
                 "redis": "RedisHuey (blocking BRPOP)"}[self.storage]
        lat = (" W2: `-d 0.001 -m 0.001 -b 1` (poll every 1 ms: SQLite cannot block)"
               if self.storage == "sqlite" else " W2: blocking dequeue, no polling delay")
        return {"storage": store,
                "workers": "`huey_consumer -k process -w K -n -C` (processes, not threads: "
                           "the GIL; no periodic scheduler, no health checks); results off "
                           "(nothing stored for no-ops)." + lat,
                "graphs": "fan-out/fan-in: a root task whose handler enqueues "
                          "`group(members).then(join)` (a chord, results on); chain and "
                          "random: cannot express"}
