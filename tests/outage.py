"""A database that becomes unreachable for one daemon (and only for it), then comes
back: the self-fencing tests of workers and Celery pools."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Callable, Iterator
from pathlib import Path

from sqlalchemy.engine import make_url
from tests.integration.tcp_proxy import TcpProxy

from taskyard.store.sqlite.locks import write_lock_path_for

Outage = tuple[str, Callable[[], None], Callable[[], None]]
"""(URL the daemon uses, cut(), restore())."""


@contextlib.contextmanager
def outage(url: str) -> Iterator[Outage]:
    """PostgreSQL: the daemon connects through a proxy that drops every connection.
    SQLite: a writer that never commits holds the write lock (every write waits)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = write_lock_path_for(parsed.database)
        assert path is not None
        holder = open(path, "ab")  # noqa: SIM115

        def cut() -> None:
            fcntl.flock(holder.fileno(), fcntl.LOCK_EX)

        def restore() -> None:
            fcntl.flock(holder.fileno(), fcntl.LOCK_UN)

        try:
            yield url, cut, restore
        finally:
            restore()
            holder.close()
        return
    proxy = TcpProxy(parsed.host or "127.0.0.1", parsed.port or 5432)
    try:
        yield (parsed.set(port=proxy.port).render_as_string(hide_password=False), proxy.cut,
               proxy.restore)
    finally:
        proxy.close()


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
