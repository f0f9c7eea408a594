"""PostgreSQL wake-ups: LISTEN on a dedicated autocommit connection. Writers NOTIFY in
their transaction, so a wake-up arrives only after the change is visible.

Where a process listens (:func:`make_listener`): on the database URL; on
``--listen-db`` when given (the server itself, while the database URL is a pooler's);
through one connection per host shared by the processes on it (``--shared-listener``,
store/postgresql/shared_listen.py); or nowhere, when the database URL is a pooler's in
transaction mode and no other is given — LISTEN through it would hear nothing once its
transaction ended — and then the listener wakes its owner every :data:`POLL_SECONDS`
to look for itself, which the log says once.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import Any

from taskyard.store.driver import Connections, Listener
from taskyard.store.interrupt import Interrupt, readable
from taskyard.store.postgresql.urls import pg_target

log = logging.getLogger("taskyard.store")
POLL_SECONDS = 0.5
"""How often a process that cannot LISTEN looks for what it would have been woken for."""
_said: set[str] = set()
_said_lock = threading.Lock()


def pg_channel(channel: str) -> str:
    """PostgreSQL channel name for a taskyard channel (``worker.3`` → ``taskyard_worker_3``)."""
    return "taskyard_" + channel.replace(".", "_")


class PgListener:
    """LISTEN on one channel; survives a lost connection (server restart, network):
    it reconnects on a later wait and reports a wake-up, since notifications sent
    meanwhile are lost and the caller must look for itself."""

    def __init__(self, url: str, channel: str, *, libpq: bool = False) -> None:
        """``url``: taskyard's URL, or a libpq URI already (``libpq``)."""
        self._dsn = url if libpq else pg_target(url).libpq()
        self._channel = pg_channel(channel)
        self._conn: Any = None
        self._payloads: list[str] = []
        self._held = False
        """Notifications may wait in the driver, not on the socket (they came with the
        answer to a LISTEN): the next wait reads them before it polls the socket."""
        self._connect()
        self._interrupt = Interrupt()  # once connected: a failed start leaves no pipe open

    def _connect(self) -> None:
        import psycopg  # noqa: PLC0415 - only PostgreSQL listeners need it (slow import)

        conn = psycopg.connect(self._dsn, autocommit=True, connect_timeout=5)
        conn.execute(f'LISTEN "{self._channel}"')
        self._conn = conn
        self._held = True

    def wait(self, timeout: float) -> bool:
        import psycopg  # noqa: PLC0415

        self._payloads = []
        if self._conn is None:
            try:
                self._connect()
            except psycopg.Error:
                self._interrupt.sleep(timeout)
                return False
            self._payloads.append("")
            return True
        try:
            # A poll of the socket, and psycopg only when it has something: a wait that
            # hears nothing is one system call (psycopg's own wait cost an idle fleet of
            # 50 workers a third of a CPU).
            deadline = time.monotonic() + max(timeout, 0.0)
            fd, woken = self._conn.fileno(), self._interrupt.fileno()
            while True:
                ready = [fd] if self._held else readable(
                    [fd, woken], deadline - time.monotonic())
                if fd in ready:
                    self._held = False
                    # All that came, a burst coalesced into one wake-up.
                    for note in self._conn.notifies(timeout=0.0):
                        self._payloads.append(note.payload)
                if woken in ready and self._interrupt.take():
                    break
                if self._payloads or time.monotonic() >= deadline:
                    break
        except (psycopg.Error, OSError, ValueError):
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
            self._held = True
        except psycopg.Error:
            self._drop()

    def _drop(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.close()
        self._conn = None

    def interrupt(self) -> None:
        self._interrupt.fire()

    def close(self) -> None:
        if self._conn is not None:
            self._drop()
        self._interrupt.close()


class PollingListener:
    """A listener that hears nothing and wakes its owner every ``every`` seconds (a
    spurious wake-up, which the Listener protocol allows): the owner looks for itself."""

    def __init__(self, every: float = POLL_SECONDS) -> None:
        self.every = every
        self._next = time.monotonic() + every
        self._paused = False
        self._interrupt = Interrupt()

    def wait(self, timeout: float) -> bool:
        now = time.monotonic()
        if now < self._next:
            if self._interrupt.sleep(min(timeout, self._next - now)):
                return False
            if time.monotonic() < self._next:
                return False
        self._next = time.monotonic() + self.every
        return not self._paused

    def payloads(self) -> list[str]:
        return [""]

    def pause(self) -> bool:
        self._paused = True
        return True

    def resume(self) -> None:
        self._paused = False
        self._next = time.monotonic() + self.every

    def interrupt(self) -> None:
        self._interrupt.fire()

    def close(self) -> None:
        self._interrupt.close()


def listen_target(url: str, connections: Connections) -> str | None:
    """Where to LISTEN (a libpq URI), or None where no LISTEN can be heard."""
    if connections.listen_url:
        return pg_target(connections.listen_url).libpq()
    target = pg_target(url)
    return None if target.pooled_by_transaction else target.libpq()


def own_connection(url: str, connections: Connections) -> bool:
    """Does each listener of such a store hold a connection of its own to the server
    (not a shared one, and not polling)?"""
    return not connections.shared_listener and listen_target(url, connections) is not None


def make_listener(url: str, connections: Connections, channel: str) -> Listener:
    """A listener on ``channel`` for a store of ``url`` (see the module docstring)."""
    dsn = listen_target(url, connections)
    if dsn is None:
        _say(url, "event=listen-polling every=%.1fs reason=the database URL is a pooler in "
             "transaction mode and no --listen-db (TASKYARD_LISTEN_DB) was given", POLL_SECONDS)
        return PollingListener()
    if connections.shared_listener:
        from taskyard.store.postgresql.shared_listen import SharedListener  # noqa: PLC0415

        try:
            return SharedListener(dsn, pg_channel(channel))
        except OSError as exc:
            _say(dsn, "event=listen-unshared reason=%s", " ".join(str(exc).split())[:200])
    return PgListener(dsn, channel, libpq=True)


def _say(key: str, message: str, *args: object) -> None:
    with _said_lock:
        if key in _said:
            return
        _said.add(key)
    log.info(message, *args)
