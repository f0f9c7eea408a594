"""One LISTEN connection per host, shared by the taskyard processes on it.

A NOTIFY costs the server a signal to **every** backend that listens in the database,
whatever its channels (PostgreSQL 15 wakes them all; each reads the queue and drops
what is not for it): measured here, 10 µs of server CPU per notify with no listener,
0.5 ms with 50, 3.8 ms with 200 — each worker LISTENing on a connection of its own
makes every dispatch cost O(workers). Shared, a host costs one listener.

The first process of the host that wants to listen (for one database) becomes the
*relay*: it takes a lock file, binds a Unix socket beside it (both readable by its user
only), and runs a thread that holds one autocommit connection, LISTENs on every channel
its clients ask for and hands each notification to the clients of its channel. Every
listener, the relay's own process's included, is a client of the socket
(:class:`SharedListener`). The relay leaves when it has had no client for a while, or
with its process; a client that loses it (end of file) reports a wake-up — what was
sent meanwhile is lost, so its owner looks for itself, as after a lost connection —
and at its next wait connects again, becoming the relay if no one is.

Protocol, one JSON document a line: a client sends ``{"listen": CH}`` or
``{"unlisten": CH}``; the relay answers a listen with ``{"ok": CH}`` once its LISTEN
is in effect, sends ``{"n": CH, "p": PAYLOAD}`` for each notification and ``{"lost":
true}`` when its own connection was lost and made again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import select
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

from taskyard.store.interrupt import Interrupt
from taskyard.store.postgresql.listen_relay import become_relay

RUN_DIR_ENV = "TASKYARD_RUN_DIR"
"""The folder of the relay's socket and lock file (default: ``$XDG_RUNTIME_DIR``, else
the temporary folder)."""
CONNECT_WAIT = 10.0
"""Seconds a client tries to reach a relay (or become one) before giving up (OSError)."""


def paths(dsn: str) -> tuple[Path, Path]:
    """The relay's socket and lock file for ``dsn`` on this host, for this user."""
    folder = Path(os.environ.get(RUN_DIR_ENV) or os.environ.get("XDG_RUNTIME_DIR")
                  or tempfile.gettempdir())
    key = hashlib.sha256(f"{os.getuid()}\0{dsn}".encode()).hexdigest()[:20]
    return folder / f"taskyard-listen-{key}.sock", folder / f"taskyard-listen-{key}.lock"


class SharedListener:
    """A :class:`~taskyard.store.driver.Listener` on ``channel`` (a PostgreSQL channel
    name) through the host's relay for ``dsn`` (a libpq URI)."""

    def __init__(self, dsn: str, channel: str) -> None:
        self._dsn = dsn
        self._channel = channel
        self._sock: socket.socket | None = None
        self._buffer = b""
        self._payloads: list[str] = []
        self._paused = False
        self._connect()
        self._interrupt = Interrupt()  # once connected: a failed start leaves no pipe open

    def _connect(self) -> None:
        sock_path, lock_path = paths(self._dsn)
        deadline = time.monotonic() + CONNECT_WAIT
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.settimeout(CONNECT_WAIT)
                sock.connect(str(sock_path))
                self._sock, self._buffer = sock, b""
                self._send({"listen": self._channel})
                self._await_ok()
                return
            except OSError as exc:
                sock.close()
                self._sock = None
                if time.monotonic() > deadline:
                    raise OSError(f"no listen relay at {sock_path}: {exc}") from None
                if not become_relay(self._dsn, sock_path, lock_path):
                    time.sleep(0.05)  # another process is the relay, or becoming it

    def _send(self, message: dict[str, Any]) -> None:
        assert self._sock is not None
        self._sock.sendall(json.dumps(message).encode() + b"\n")

    def _await_ok(self) -> None:
        while True:
            for message in self._read(CONNECT_WAIT, block=True):
                if message.get("ok") == self._channel:
                    return

    def _read(self, timeout: float, *, block: bool = False) -> list[dict[str, Any]]:
        """The messages that arrive within ``timeout`` (all those already there, or the
        first to come). OSError when the relay is gone."""
        assert self._sock is not None
        messages: list[dict[str, Any]] = []
        self._sock.settimeout(max(timeout, 0.0) if timeout > 0 or block else 0.0)
        while b"\n" not in self._buffer:
            try:
                chunk = self._sock.recv(65536)
            except (TimeoutError, BlockingIOError):
                return messages
            if not chunk:
                raise ConnectionResetError("the listen relay went away")
            self._buffer += chunk
            self._sock.settimeout(0.0)  # something came: take what is there, no more
        *lines, self._buffer = self._buffer.split(b"\n")
        messages += [json.loads(line) for line in lines if line]
        return messages

    def wait(self, timeout: float) -> bool:
        self._payloads = []
        if self._sock is None:
            try:
                self._connect()
            except OSError:
                self._interrupt.sleep(timeout)
                return False
            self._payloads.append("")  # what was sent while we were away is lost
            return True
        try:
            if b"\n" not in self._buffer:
                fd, woken = self._sock.fileno(), self._interrupt.fileno()
                ready = select.select([fd, woken], [], [], max(timeout, 0.0))[0]
                if woken in ready and self._interrupt.take():
                    return False
                if not ready:
                    return False
            for message in self._read(0.0):
                if message.get("lost"):
                    self._payloads.append("")
                elif message.get("n") == self._channel and not self._paused:
                    self._payloads.append(str(message.get("p", "")))
        except (OSError, ValueError):
            self._drop()
            self._payloads.append("")
        return bool(self._payloads)

    def payloads(self) -> list[str]:
        return self._payloads

    def pause(self) -> bool:
        if self._sock is None:
            return False
        try:
            self._send({"unlisten": self._channel})
        except OSError:
            self._drop()
            return False
        self._paused = True
        return True

    def resume(self) -> None:
        self._payloads = []
        if self._sock is None:
            return  # the next wait connects and reports a wake-up
        try:
            self._read(0.0)  # stale: heard before the unlisten took effect
            self._paused = False
            self._send({"listen": self._channel})
            self._await_ok()
        except (OSError, ValueError):
            self._drop()

    def _drop(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
        self._sock, self._buffer = None, b""

    def interrupt(self) -> None:
        self._interrupt.fire()

    def close(self) -> None:
        self._drop()
        self._interrupt.close()
