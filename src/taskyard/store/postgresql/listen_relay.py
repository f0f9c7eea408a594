"""The relay of a host's shared listener (see store/postgresql/shared_listen.py): a thread
of the first process that took the host's lock file for one database, holding one
LISTEN connection and serving the host's listeners on a Unix socket."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import selectors
import socket
import struct
import threading
import time
from pathlib import Path
from typing import Any

IDLE_EXIT = 5.0
"""Seconds a relay without clients lingers before it leaves."""
MAX_BUFFER = 1 << 20
"""Bytes queued for a client that does not read; beyond, it is dropped (it reconnects)."""


_relays: dict[tuple[int, Path], threading.Thread] = {}
_held: dict[tuple[int, Path], tuple[int, socket.socket]] = {}
"""The lock file and socket of each relay of this process (closed in a forked child:
the lock is the relay's, not the child's, which runs no relay thread)."""
_relays_lock = threading.Lock()


def _forget_relays() -> None:
    for fd, server in _held.values():
        with contextlib.suppress(OSError):
            os.close(fd)
        with contextlib.suppress(OSError):
            server.close()
    _held.clear()
    _relays.clear()


os.register_at_fork(after_in_child=_forget_relays)


def become_relay(dsn: str, sock_path: Path, lock_path: Path) -> bool:
    """Start this process's relay for ``dsn`` if no process of the host runs one (the
    lock is free). True when one runs here now."""
    key = (os.getpid(), sock_path)
    with _relays_lock:
        running = _relays.get(key)
        if running is not None and running.is_alive():
            return True
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        try:
            with contextlib.suppress(FileNotFoundError):
                sock_path.unlink()  # a dead relay's
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            old = os.umask(0o177)
            try:
                server.bind(str(sock_path))
            finally:
                os.umask(old)
            server.listen(128)
        except OSError:
            os.close(fd)
            raise
        relay = _Relay(dsn, server, sock_path, fd)
        thread = threading.Thread(target=relay.run, name="taskyard-listen-relay", daemon=True)
        _relays[key] = thread
        _held[key] = (fd, server)
        thread.start()
        return True


class _Client:
    __slots__ = ("channels", "inbox", "outbox", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.inbox = b""
        self.outbox = b""
        self.channels: set[str] = set()


class _Relay:
    """The relay's thread: one connection to the server, its clients on the socket."""

    def __init__(self, dsn: str, server: socket.socket, sock_path: Path, lock_fd: int) -> None:
        self.dsn = dsn
        self.server = server
        self.sock_path = sock_path
        self.lock_fd = lock_fd
        self.selector = selectors.DefaultSelector()
        self.clients: dict[int, _Client] = {}
        self.conn: Any = None
        self.conn_fd = -1
        self.listening: set[str] = set()
        self.lonely_since: float | None = time.monotonic()
        self.retry_at = 0.0

    def run(self) -> None:
        self.server.setblocking(False)
        self.selector.register(self.server, selectors.EVENT_READ, None)
        try:
            while not self._idle_too_long():
                self._ensure_connection()
                for key, events in self.selector.select(timeout=0.5):
                    if key.fileobj is self.server:
                        self._accept()
                    elif key.data == "pg":
                        self._relay_notifications()
                    else:
                        client: _Client = key.data
                        if events & selectors.EVENT_READ:
                            self._from_client(client)
                        if events & selectors.EVENT_WRITE and client.sock.fileno() >= 0:
                            self._flush(client)
        finally:
            self._leave()

    def _idle_too_long(self) -> bool:
        if self.clients:
            self.lonely_since = None
            return False
        if self.lonely_since is None:
            self.lonely_since = time.monotonic()
        return time.monotonic() - self.lonely_since > IDLE_EXIT

    # -- the server ----------------------------------------------------------------------

    def _ensure_connection(self) -> None:
        if self.conn is not None or time.monotonic() < self.retry_at:
            return
        import psycopg  # noqa: PLC0415 - PostgreSQL only (slow import)

        try:
            conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=5)
            for channel in sorted(self.listening):
                conn.execute(f'LISTEN "{channel}"')
        except psycopg.Error:
            self.retry_at = time.monotonic() + 0.5
            return
        lost = self.retry_at > 0  # a connection before this one was lost
        self.conn, self.conn_fd = conn, conn.fileno()
        self.selector.register(self.conn_fd, selectors.EVENT_READ, "pg")
        if lost:
            for client in list(self.clients.values()):
                self._post(client, {"lost": True})

    def _drop_connection(self) -> None:
        if self.conn is None:
            return
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.selector.unregister(self.conn_fd)
        with contextlib.suppress(Exception):
            self.conn.close()
        self.conn = None
        self.retry_at = time.monotonic()  # at once; later failures wait

    def _relay_notifications(self) -> None:
        import psycopg  # noqa: PLC0415

        if self.conn is None:  # dropped by an earlier event of the same select round
            return
        try:
            for note in self.conn.notifies(timeout=0.0):
                message = {"n": note.channel, "p": note.payload}
                for client in list(self.clients.values()):
                    if note.channel in client.channels:
                        self._post(client, message)
        except psycopg.Error:
            self._drop_connection()

    def _listen(self, channel: str) -> None:
        import psycopg  # noqa: PLC0415

        if channel in self.listening:
            return
        self.listening.add(channel)
        if self.conn is None:
            return  # listened on when the connection is made again (then a "lost")
        try:
            self.conn.execute(f'LISTEN "{channel}"')
        except psycopg.Error:
            self._drop_connection()
            return
        self._relay_notifications()  # what arrived with the LISTEN's answer

    def _unlisten_unused(self, channels: set[str]) -> None:
        import psycopg  # noqa: PLC0415

        for channel in channels:
            if channel in self.listening and not any(
                    channel in c.channels for c in self.clients.values()):
                self.listening.discard(channel)
                if self.conn is not None:
                    try:
                        self.conn.execute(f'UNLISTEN "{channel}"')
                    except psycopg.Error:
                        self._drop_connection()

    # -- the clients ---------------------------------------------------------------------

    def _accept(self) -> None:
        try:
            sock, _ = self.server.accept()
        except BlockingIOError:
            return
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", creds)
        if uid != os.getuid():  # the socket is ours only; never serve another user
            sock.close()
            return
        sock.setblocking(False)
        client = _Client(sock)
        self.clients[sock.fileno()] = client
        self.selector.register(sock, selectors.EVENT_READ, client)

    def _from_client(self, client: _Client) -> None:
        try:
            chunk = client.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._close_client(client)
            return
        client.inbox += chunk
        *lines, client.inbox = client.inbox.split(b"\n")
        for line in lines:
            try:
                message = json.loads(line)
            except ValueError:
                self._close_client(client)
                return
            if "listen" in message:
                channel = str(message["listen"])
                self._listen(channel)
                client.channels.add(channel)
                self._post(client, {"ok": channel})
            elif "unlisten" in message:
                channel = str(message["unlisten"])
                client.channels.discard(channel)
                self._unlisten_unused({channel})

    def _post(self, client: _Client, message: dict[str, Any]) -> None:
        client.outbox += json.dumps(message).encode() + b"\n"
        if len(client.outbox) > MAX_BUFFER:
            self._close_client(client)  # it reads nothing: it reconnects and looks
            return
        self._flush(client)

    def _flush(self, client: _Client) -> None:
        try:
            sent = client.sock.send(client.outbox) if client.outbox else 0
        except BlockingIOError:
            sent = 0
        except OSError:
            self._close_client(client)
            return
        client.outbox = client.outbox[sent:]
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if client.outbox else 0)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.modify(client.sock, events, client)

    def _close_client(self, client: _Client) -> None:
        if self.clients.pop(client.sock.fileno(), None) is None:
            return
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(client.sock)
        client.sock.close()
        self._unlisten_unused(client.channels)

    def _leave(self) -> None:
        # Socket first, lock last: a process that takes the lock finds no live relay.
        with contextlib.suppress(OSError):
            self.sock_path.unlink()
        self.server.close()
        for client in list(self.clients.values()):
            client.sock.close()
        self.clients.clear()
        self._drop_connection()
        self.selector.close()
        os.close(self.lock_fd)
        with _relays_lock:
            _relays.pop((os.getpid(), self.sock_path), None)
            _held.pop((os.getpid(), self.sock_path), None)
