"""Adapters that run the benchmark workloads on taskyard and on its peers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Not at run time: a peer's daemon imports its app module (bench.peers.huey_app...),
    # which runs this file first; the harness would count in the peer's memory.
    from bench.peers.common import Ctx

SYSTEMS = ["taskyard-sqlite", "taskyard-pg", "procrastinate-pg", "pgqueuer-pg", "huey-sqlite",
           "huey-pg", "huey-redis", "celery-redis", "airflow-pg"]
NEEDS = {"taskyard-sqlite": set(), "taskyard-pg": {"pg"}, "procrastinate-pg": {"pg"},
         "pgqueuer-pg": {"pg"}, "airflow-pg": {"pg"},
         "huey-sqlite": set(), "huey-pg": {"pg"}, "huey-redis": {"redis"},
         "celery-redis": {"redis"}}


def make(name: str, ctx: Ctx) -> Any:
    """The system's adapter; peers' libraries are imported only when asked for."""
    if name.startswith("taskyard-"):
        from bench.peers.taskyard_sys import TaskyardSystem  # noqa: PLC0415

        return TaskyardSystem(ctx, name.split("-", 1)[1])
    if name == "procrastinate-pg":
        from bench.peers.procrastinate_peer import ProcrastinatePeer  # noqa: PLC0415

        return ProcrastinatePeer(ctx)
    if name == "pgqueuer-pg":
        from bench.peers.pgqueuer_peer import PgQueuerPeer  # noqa: PLC0415

        return PgQueuerPeer(ctx)
    if name.startswith("huey-"):
        from bench.peers.huey_peer import HueyPeer  # noqa: PLC0415

        return HueyPeer(ctx, name.split("-", 1)[1])
    if name == "celery-redis":
        from bench.peers.celery_peer import CeleryPeer  # noqa: PLC0415

        return CeleryPeer(ctx)
    if name == "airflow-pg":
        from bench.peers.airflow_peer import AirflowPeer  # noqa: PLC0415

        return AirflowPeer(ctx)
    raise ValueError(f"unknown system {name!r} (known: {', '.join(SYSTEMS)})")
