"""The Celery application the Celery benchmarks send to and run
(``celery -A bench.peers.celery_app worker``).

``BENCH_CELERY_REDIS`` is the redis URL (broker on db 0, result backend on db 1).
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery, chord, group

from bench import handlers

REDIS = os.environ.get("BENCH_CELERY_REDIS", "redis://127.0.0.1:6379")

app = Celery("bench", broker=f"{REDIS}/0", backend=f"{REDIS}/1")
app.conf.update(
    task_ignore_result=True,         # no-ops: nothing to store (chord members opt back in)
    task_acks_late=False,            # the default: ack on receipt, one round trip less
    worker_prefetch_multiplier=64,   # "Optimizing": short tasks -> large multiplier
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
    result_expires=None,
)


@app.task(name="noop")
def noop() -> None:
    handlers.noop()


@app.task(name="stamp")
def stamp(path: str) -> None:
    handlers.stamp(path)


@app.task(name="record", ignore_result=False)
def record(label: str, out: str, *rest: Any, final: bool = False) -> None:
    handlers.record(label, out, *rest, final=final)


def fanout(out: str, n: int) -> Any:
    """root -> n-2 members -> join: a chain into a chord (the join is the chord's body)."""
    members = group(record.si(f"m{i}", out) for i in range(n - 2))
    return record.si("root", out) | chord(members, record.si("join", out, final=True))


def chain_of(out: str, n: int) -> Any:
    from celery import chain  # noqa: PLC0415

    return chain(record.si(f"t{i}", out, final=i == n - 1) for i in range(n))
