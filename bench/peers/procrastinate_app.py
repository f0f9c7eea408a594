"""The procrastinate application the procrastinate benchmarks defer to and run
(``procrastinate --app bench.peers.procrastinate_app.app worker``).

``BENCH_PROCRASTINATE_DSN`` is the libpq DSN of its database. The tasks are ``async``:
procrastinate's worker is asyncio, and a synchronous task would run in a thread
(``sync_to_async``) for nothing, since the handlers do no blocking work worth a thread.
"""

from __future__ import annotations

import os

import procrastinate

from bench import handlers

CONCURRENCY = int(os.environ.get("BENCH_PROCRASTINATE_CONCURRENCY", "10"))

# The pool as procrastinate's docs size it for short jobs (discussions.md, "Mind the size
# of your PostgreSQL pool"): as many connections as sub-workers, plus one (psycopg_pool's
# default is 4); the LISTEN connection is apart.
app = procrastinate.App(connector=procrastinate.PsycopgConnector(
    conninfo=os.environ.get("BENCH_PROCRASTINATE_DSN", ""),
    max_size=CONCURRENCY + 1))


@app.task(name="noop")
async def noop() -> None:
    handlers.noop()


@app.task(name="stamp")
async def stamp(path: str) -> None:
    handlers.stamp(path)
