"""Celery on redis: the prefork pool."""

from __future__ import annotations

import json
import os
import sys
import uuid
from typing import Any

from bench.peers.common import Ctx, Peer, Procs

# K worker processes = K `celery worker -P solo`: for no-op tasks the prefork pool's parent
# (which takes every message and hands it to a child over a pipe) is the bottleneck; here
# it completed ~40% fewer jobs per second than K solo workers. BENCH_CELERY_POOL=prefork
# runs `-P prefork -c K` instead.
POOL = os.environ.get("BENCH_CELERY_POOL", "solo")

# A chain travels as one message that carries every later step (protocol 2's "chain"
# header), so its messages add up to O(n^2) bytes: past this length it is not practical.
CHAIN_MAX = 2000


class CeleryPeer(Peer):
    name = "celery-redis"
    batch_api = None  # group().apply_async publishes one message per task

    def __init__(self, ctx: Ctx) -> None:
        super().__init__(ctx)
        assert ctx.redis, "celery needs redis-server"
        self.redis_url = ctx.redis
        self._app: Any = None
        self._result: Any = None

    def env(self) -> dict[str, str]:
        return {"BENCH_CELERY_REDIS": self.redis_url}

    @property
    def app(self) -> Any:
        if self._app is None:
            self.apply_env()
            from bench.peers import celery_app  # noqa: PLC0415

            self._app = celery_app
        return self._app

    def _redis(self, db: int) -> Any:
        import redis  # noqa: PLC0415

        return redis.Redis.from_url(f"{self.redis_url}/{db}")

    def reset(self) -> None:
        for db in (0, 1):
            self._redis(db).flushdb()

    def enqueue_stamp(self, path: str) -> None:
        self.app.stamp.delay(path)

    def enqueue_noops(self, count: int, *, batch: bool) -> None:
        noop = self.app.noop
        for _ in range(count):
            noop.delay()

    def pending(self) -> int | None:
        return int(self._redis(0).llen("celery"))

    def start_workers(self, procs: Procs, k: int, workload: str) -> None:
        base = [sys.executable, "-m", "celery", "-A", "bench.peers.celery_app", "worker",
                "-l", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"]
        if POOL == "prefork":
            procs.start("workers", [*base, "-P", "prefork", "-c", str(k), "-n", "bench@%h"])
        else:  # K solo workers: each takes from redis and runs its tasks itself
            for i in range(k):
                procs.start("workers", [*base, "-P", "solo", "-n", f"bench{i}@%h"])

    def cannot(self, shape: str, n: int) -> str | None:
        if shape == "random":
            return "no general DAG: chains, groups and chords only"
        if shape == "chain" and n > CHAIN_MAX:
            return (f"a chain message carries every later step (O(n^2) bytes in all): "
                    f"not practical past ~{CHAIN_MAX} tasks")
        return None

    def submit_graph(self, shape: str, n: int, out: str) -> None:
        make = self.app.fanout if shape == "fanout" else self.app.chain_of
        self._result = make(out, n).apply_async()

    def fill(self, n: int) -> None:
        """n no-op jobs straight into the broker's list, untimed (bench setup, as
        taskyard's): copies of one real message, each with ids of its own, pipelined."""
        r = self._redis(0)
        self.app.noop.delay()  # one real message, the template (LPUSH: at index 0)
        message = r.lindex("celery", 0)
        assert message is not None
        envelope = json.loads(message)
        tid = envelope["headers"]["id"].encode()
        tag = envelope["properties"]["delivery_tag"].encode()
        chunk = 1_000  # messages per LPUSH
        pipe = r.pipeline(transaction=False)
        for start in range(0, n - 1, chunk):
            pipe.lpush("celery", *[message.replace(tid, str(uuid.uuid4()).encode())
                                   .replace(tag, str(uuid.uuid4()).encode())
                                   for _ in range(min(chunk, n - 1 - start))])
            if len(pipe) >= 20:
                pipe.execute()
        pipe.execute()

    def take(self, k: int) -> int:
        """k x kombu's basic_get + ack on the worker's queue (the worker itself takes
        messages with BRPOP, prefetching many at once)."""
        if not hasattr(self, "_queue"):
            self._conn = self.app.app.connection_for_read()
            self._queue = self._conn.SimpleQueue("celery", no_ack=False)
        got = 0
        for _ in range(k):
            msg = self._queue.get(block=False)
            msg.ack()
            got += 1
        return got

    def close(self) -> None:
        self._result = None  # an AsyncResult collected at interpreter exit complains
        if hasattr(self, "_queue"):
            self._queue.close()
            self._conn.close()
            del self._queue

    def config(self) -> dict[str, str]:
        return {"broker": "redis (db 0), result backend redis (db 1, chords only)",
                "workers": ("K x `celery worker -P solo`" if POOL == "solo" else
                            "`celery worker -P prefork -c K`") +
                           " `--without-gossip --without-mingle --without-heartbeat` (K solo "
                           "workers beat one prefork pool of K by ~40% on no-ops here: its "
                           "parent relays every task), `worker_prefetch_multiplier=64` (the "
                           "Optimizing guide's advice for many short tasks), "
                           "`task_acks_late=False` (default), `task_ignore_result=True`",
                "enqueue": "`delay()` per job; batch: none (`group().apply_async()` "
                           "publishes one message per task)",
                "graphs": "chain: `chain(...)` up to ~2,000 tasks; fan-out/fan-in: "
                          "`root | chord(group(members), join)`; random: cannot express"}
