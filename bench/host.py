"""The machine and servers a benchmark ran on: the facts a reader needs to compare the
report with their own machine (cores, CPU, memory, load, every system's version)."""

from __future__ import annotations

import os
import platform
import subprocess
from contextlib import suppress
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent


def machine() -> dict[str, Any]:
    """The facts a reader needs to compare with their own machine."""
    facts: dict[str, Any] = {"python": platform.python_version(),
                             "kernel": platform.release(), "cores": os.cpu_count()}
    with suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                facts["cpu"] = line.split(":", 1)[1].strip()
                break
    with suppress(OSError, ValueError, IndexError):
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        facts["memory_gib"] = round(kb / 1024 / 1024, 1)
    with suppress(OSError):
        facts["load_at_start"] = list(os.getloadavg())
    versions: dict[str, str] = {}
    from importlib import metadata  # noqa: PLC0415

    for dist in ("taskyard", "procrastinate", "pgqueuer", "asyncpg", "huey", "celery", "kombu",
                 "redis", "psycopg", "SQLAlchemy"):
        with suppress(metadata.PackageNotFoundError):
            versions[dist] = metadata.version(dist)
    with suppress(OSError, subprocess.SubprocessError):  # Airflow: in its own venv
        from bench.peers.airflow_peer import venv  # noqa: PLC0415

        found = subprocess.run(
            [str(venv() / "bin" / "python"), "-c", "from importlib.metadata import version; "
             "print(version('apache-airflow'))"], check=False, text=True,
            capture_output=True, timeout=60).stdout.strip()
        if found:
            versions["apache-airflow"] = found
    with suppress(OSError, subprocess.SubprocessError):
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], check=False, cwd=HERE,
                             text=True, capture_output=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "src"], check=False,
                               cwd=HERE,
                               text=True, capture_output=True, timeout=10).stdout.strip()
        if rev:
            versions["taskyard"] += f" (git {rev}{', src modified' if dirty else ''})"
    facts["versions"] = versions
    return facts


def server_versions(servers: dict[str, str | None]) -> dict[str, str]:
    found: dict[str, str] = {}
    if servers.get("pg"):
        with suppress(Exception):
            import psycopg  # noqa: PLC0415

            from bench.peers.common import libpq_dsn, pg_url  # noqa: PLC0415

            with psycopg.connect(libpq_dsn(pg_url(str(servers["pg"]), "postgres"))) as conn:
                row = conn.execute("SHOW server_version").fetchone()
                found["postgresql"] = str(row[0]) if row else "?"
    if servers.get("redis"):
        with suppress(Exception):
            import redis  # noqa: PLC0415

            found["redis-server"] = str(
                redis.Redis.from_url(str(servers["redis"])).info("server")["redis_version"])
    return found
