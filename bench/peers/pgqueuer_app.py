"""The PgQueuer application the PgQueuer benchmarks enqueue to and run
(``python -m pgqueuer run bench.peers.pgqueuer_app:create --batch-size N``).

``BENCH_PGQUEUER_DSN`` is the libpq DSN of its database. asyncpg is the driver PgQueuer's
documentation starts from; the entrypoints are ``async`` (PgQueuer's worker is asyncio:
a synchronous entrypoint would run in a thread for nothing). The payload of ``stamp`` and
``record`` is the path (or ``label|out|final``) as UTF-8 bytes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from bench import handlers


@asynccontextmanager
async def create() -> AsyncIterator[Any]:
    """PgQueuer's factory: one asyncpg connection, the entrypoints registered."""
    import asyncpg  # noqa: PLC0415
    from pgqueuer import PgQueuer  # noqa: PLC0415
    from pgqueuer.db import AsyncpgDriver  # noqa: PLC0415
    from pgqueuer.models import Job  # noqa: PLC0415

    conn = await asyncpg.connect(os.environ["BENCH_PGQUEUER_DSN"])
    pgq = PgQueuer(AsyncpgDriver(conn))

    @pgq.entrypoint("noop")
    async def noop(job: Job) -> None:
        handlers.noop()

    @pgq.entrypoint("stamp")
    async def stamp(job: Job) -> None:
        handlers.stamp((job.payload or b"").decode())

    try:
        yield pgq
    finally:
        await conn.close()


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.peers.pgqueuer_app BATCH``: what ``pgq run
    bench.peers.pgqueuer_app:create --batch-size BATCH`` does (``pgqueuer.run`` on uvloop,
    SIGTERM stops it). The CLI itself cannot be used: in PgQueuer 1.6.0 its
    ``--log-level`` option reaches the logger as a string and every ``pgq run`` fails."""
    import uvloop  # noqa: PLC0415
    from pgqueuer import run  # noqa: PLC0415

    args = sys.argv[1:] if argv is None else argv
    uvloop.run(run(create, batch_size=int(args[0]) if args else 10))
    return 0


if __name__ == "__main__":
    sys.exit(main())
