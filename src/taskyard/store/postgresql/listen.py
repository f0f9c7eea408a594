"""PostgreSQL wake-ups: LISTEN on a dedicated autocommit connection. Writers NOTIFY in
their transaction, so a wake-up arrives only after the change is visible."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from sqlalchemy.engine import make_url


def pg_channel(channel: str) -> str:
    """PostgreSQL channel name for a taskyard channel (``worker.3`` → ``taskyard_worker_3``)."""
    return "taskyard_" + channel.replace(".", "_")


class PgListener:
    """LISTEN on one channel; survives a lost connection (server restart, network):
    it reconnects on a later wait and reports a wake-up, since notifications sent
    meanwhile are lost and the caller must look for itself."""

    def __init__(self, url: str, channel: str) -> None:
        self._dsn = make_url(url).set(drivername="postgresql").render_as_string(
            hide_password=False)
        self._channel = pg_channel(channel)
        self._conn: Any = None
        self._payloads: list[str] = []
        self._connect()

    def _connect(self) -> None:
        import psycopg  # noqa: PLC0415 - only PostgreSQL listeners need it (slow import)

        conn = psycopg.connect(self._dsn, autocommit=True, connect_timeout=5)
        conn.execute(f'LISTEN "{self._channel}"')
        self._conn = conn

    def wait(self, timeout: float) -> bool:
        import psycopg  # noqa: PLC0415

        self._payloads = []
        if self._conn is None:
            try:
                self._connect()
            except psycopg.Error:
                time.sleep(max(timeout, 0.0))
                return False
            self._payloads.append("")
            return True
        try:
            for note in self._conn.notifies(timeout=max(timeout, 0.0), stop_after=1):
                self._payloads.append(note.payload)
            if self._payloads:
                # Coalesce a burst of notifications into one wake-up.
                for note in self._conn.notifies(timeout=0.0):
                    self._payloads.append(note.payload)
        except psycopg.Error:
            self._drop()
            self._payloads.append("")
            return True
        return bool(self._payloads)

    def payloads(self) -> list[str]:
        return self._payloads

    def pause(self) -> bool:
        """UNLISTEN: a paused connection must not collect notifications (the server
        queues them for every listener, and an unread one holds the queue back)."""
        import psycopg  # noqa: PLC0415

        if self._conn is None:
            return False
        try:
            self._conn.execute(f'UNLISTEN "{self._channel}"')
        except psycopg.Error:
            self._drop()
            return False
        return True

    def resume(self) -> None:
        import psycopg  # noqa: PLC0415

        self._payloads = []
        if self._conn is None:
            return  # the next wait reconnects and reports a wake-up
        try:
            # Notifications read before the UNLISTEN took effect are stale: dropped.
            for _ in self._conn.notifies(timeout=0.0):
                pass
            self._conn.execute(f'LISTEN "{self._channel}"')
        except psycopg.Error:
            self._drop()

    def _drop(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.close()
        self._conn = None

    def close(self) -> None:
        if self._conn is not None:
            self._drop()
