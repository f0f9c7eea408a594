"""The huey application the huey benchmarks enqueue to and run (``huey_consumer``).

Configured from the environment so the consumer process builds the same instance:
``BENCH_HUEY_STORAGE`` (``sqlite`` | ``pg`` | ``redis``), ``BENCH_HUEY_TARGET`` (file,
libpq DSN or redis URL), ``BENCH_HUEY_RESULTS`` (``1`` stores results: chords need them).
"""

from __future__ import annotations

import os
from typing import Any

from huey import Huey, PostgresHuey, RedisHuey, SqliteHuey

from bench import handlers

STORAGE = os.environ.get("BENCH_HUEY_STORAGE", "sqlite")
TARGET = os.environ.get("BENCH_HUEY_TARGET", "/tmp/bench-huey.db")
RESULTS = os.environ.get("BENCH_HUEY_RESULTS") == "1"


def make() -> Huey:
    if STORAGE == "sqlite":
        # WAL is SqliteHuey's default journal mode; fsync left at SQLite's default.
        return SqliteHuey("bench", filename=TARGET, results=RESULTS)
    if STORAGE == "pg":
        # huey 3's native PostgreSQL storage: SKIP LOCKED dequeue, LISTEN/NOTIFY wake-ups.
        return PostgresHuey("bench", dsn=TARGET, results=RESULTS)
    # blocking=True (the default): workers wait in BRPOP, no polling.
    return RedisHuey("bench", url=TARGET, results=RESULTS)


huey = make()


@huey.task()
def noop() -> None:
    handlers.noop()


@huey.task()
def stamp(path: str) -> None:
    handlers.stamp(path)


@huey.task()
def record(label: str, out: str, *rest: Any, final: bool = False) -> None:
    handlers.record(label, out, *rest, final=final)


@huey.task()
def fan_root(out: str, n: int) -> None:
    """The fan-out/fan-in graph's root: records itself, then enqueues the chord (huey
    cannot put a chord behind a task, so the root's handler submits it)."""
    handlers.record("root", out)
    members = [record.s(f"m{i}", out) for i in range(n - 2)]
    from huey import group  # noqa: PLC0415

    huey.enqueue(group(members).then(record, "join", out, final=True))
