"""A TCP proxy on loopback in front of PostgreSQL that counts, per database, what the
clients ask of it, and can hold every byte for half a network round trip each way.

Counted per database (the one the connection's start-up message names):

- ``round_trips``: the times a client sends after the server has sent something since
  its last send: each is a wait for the server (an answer, or a notification). Bytes a
  client sends before any answer are one round trip however many statements they hold
  (a pipeline, ``BEGIN; ...; COMMIT`` in one go), and at a distance each costs one RTT.
- ``statements``: CommandComplete messages, one per statement the server ran (``BEGIN``,
  ``COMMIT``, ``LISTEN`` included), as ``pg_stat_statements`` counts top-level calls.
- ``transactions``: transaction ends the server reports (ReadyForQuery back to idle after
  a transaction block, or after an implicit transaction that ran a statement), and one
  per new connection (its backend's start-up runs one): commits and rollbacks, as
  ``pg_stat_database``'s ``xact_commit + xact_rollback`` counts them.
- ``errors`` (ErrorResponse), ``notifications`` (NotificationResponse) and
  ``connections`` opened.

The harness reads the counters before and after a window (``counts``); ``turns_between``
counts the round trips that began inside a time span (W2's enqueue -> handler start).
"""

from __future__ import annotations

import socket
import threading
import time
from collections import deque
from contextlib import suppress
from dataclasses import asdict, dataclass, fields
from urllib.parse import urlsplit, urlunsplit

SSL_REQUEST, GSS_REQUEST, CANCEL_REQUEST = 80877103, 80877104, 80877102
COMPLETE, READY, ERROR, NOTIFY = ord("C"), ord("Z"), ord("E"), ord("A")
IDLE = ord("I")


@dataclass
class Counts:
    round_trips: int = 0
    statements: int = 0
    transactions: int = 0
    errors: int = 0
    notifications: int = 0
    connections: int = 0

    def minus(self, other: Counts) -> Counts:
        return Counts(**{f.name: getattr(self, f.name) - getattr(other, f.name)
                         for f in fields(self)})

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class _Conn:
    """One client connection's parsing state (guarded by the proxy's lock)."""

    def __init__(self) -> None:
        self.database: str | None = None
        self.startup = True  # the client's untyped start-up messages are not over
        self.client_buf = bytearray()
        self.head = bytearray()  # the server message header read so far
        self.skip = 0  # bytes of the current server message's body still to pass
        self.raw_replies = 0  # one-byte answers owed to SSL / GSS encryption requests
        self.opaque = False  # encrypted: only round trips are counted
        self.last_sent_by_server = True  # a client's first bytes start a round trip
        self.early: list[float] = []  # round trips before the database was known
        self.status: int | None = None  # the last ReadyForQuery's transaction status
        self.worked = False  # a statement ran (or failed) since that ReadyForQuery
        self.socks: list[socket.socket] = []


class Proxy:
    """``Proxy((host, port), delay=0.0)``: listens on 127.0.0.1 at ``port`` at once;
    ``delay`` seconds are added in each direction (half the round trip to simulate)."""

    def __init__(self, target: tuple[str, int], delay: float = 0.0) -> None:
        self.target = target
        self.delay = delay
        self.lock = threading.Lock()
        self._counts: dict[str | None, Counts] = {}
        self._turns: dict[str | None, list[float]] = {}
        self._conns: list[_Conn] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._closed = False
        threading.Thread(target=self._accept, name="wire-accept", daemon=True).start()

    def url(self, pg_url: str) -> str:
        """``pg_url`` (any PostgreSQL URL of the target) pointed at this proxy."""
        parts = urlsplit(pg_url)
        user = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
        return urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{self.port}"))

    def counts(self, database: str) -> Counts:
        with self.lock:
            return Counts(**self._counts.get(database, Counts()).as_dict())

    def turns_between(self, database: str, start: float, end: float) -> int:
        """Round trips on ``database`` that began in [start, end] (``time.time()``)."""
        with self.lock:
            return sum(start <= t <= end for t in self._turns.get(database, ()))

    def close(self) -> None:
        self._closed = True
        with suppress(OSError):
            self._listener.close()
        with self.lock:
            socks = [s for c in self._conns for s in c.socks]
        for s in socks:
            with suppress(OSError):
                s.close()

    # --- plumbing --------------------------------------------------------------------
    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
                server = socket.create_connection(self.target)
            except OSError:
                if self._closed:
                    return
                continue
            conn = _Conn()
            for s in (client, server):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                conn.socks.append(s)
            with self.lock:
                self._conns.append(conn)
            for src, dst, up in ((client, server, True), (server, client, False)):
                threading.Thread(target=self._pump, args=(conn, src, dst, up),
                                 name="wire-pump", daemon=True).start()

    def _pump(self, conn: _Conn, src: socket.socket, dst: socket.socket, up: bool) -> None:
        line = _DelayLine(dst, self.delay) if self.delay > 0 else None
        try:
            while data := src.recv(65536):
                with self.lock:
                    if up:
                        self._from_client(conn, data)
                    else:
                        self._from_server(conn, data)
                if line:
                    line.put(data)
                else:
                    dst.sendall(data)
        except OSError:
            pass
        finally:
            if line:
                line.drain()
            for s in (src, dst):  # the other direction ends too
                with suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()

    def _count(self, conn: _Conn) -> Counts:
        return self._counts.setdefault(conn.database, Counts())

    # --- the protocol (called under the lock, before the bytes are passed on) ---------
    def _from_client(self, conn: _Conn, data: bytes) -> None:
        if conn.startup:
            self._startup(conn, data)
        if conn.last_sent_by_server:
            conn.last_sent_by_server = False
            if not conn.startup and data[:1] == b"X":
                return  # Terminate: a goodbye waits for nothing
            if conn.database is None:  # encryption negotiation, or a start-up in pieces
                conn.early.append(time.time())
            else:
                self._count(conn).round_trips += 1
                self._turns.setdefault(conn.database, []).append(time.time())

    def _startup(self, conn: _Conn, data: bytes) -> None:
        buf = conn.client_buf
        buf += data
        while len(buf) >= 8:
            length = int.from_bytes(buf[0:4], "big")
            if len(buf) < length:
                return
            code = int.from_bytes(buf[4:8], "big")
            body = bytes(buf[8:length])
            del buf[:length]
            if code in (SSL_REQUEST, GSS_REQUEST):
                conn.raw_replies += 1
                continue
            conn.startup = False
            buf.clear()
            if code == CANCEL_REQUEST:
                conn.database = "(cancel request)"
            else:
                words = body.split(b"\0")
                params = dict(zip(words[0::2], words[1::2], strict=False))
                name = params.get(b"database") or params.get(b"user") or b""
                conn.database = name.decode(errors="replace")
            counts = self._count(conn)
            counts.connections += 1
            counts.transactions += 1  # the new backend's start-up, as the server counts it
            counts.round_trips += len(conn.early)
            self._turns.setdefault(conn.database, []).extend(conn.early)
            return

    def _from_server(self, conn: _Conn, data: bytes) -> None:
        conn.last_sent_by_server = True
        if conn.opaque:
            return
        i, n = 0, len(data)
        while conn.raw_replies and i < n:
            conn.raw_replies -= 1
            if data[i] != ord("N"):  # encryption accepted: nothing more can be read
                conn.opaque = True
                return
            i += 1
        counts = self._count(conn)
        head = conn.head
        while i < n:
            if conn.skip:  # the rest of a message's body, as it comes
                take = min(conn.skip, n - i)
                conn.skip -= take
                i += take
                continue
            if len(head) < 5:  # type byte and length
                take = min(5 - len(head), n - i)
                head += data[i:i + take]
                i += take
                if len(head) < 5:
                    return
            kind = head[0]
            if kind == READY:
                if i >= n:
                    return  # its status byte comes with the next bytes
                status = data[i]
                if conn.status is not None and status == IDLE and (
                        conn.status != IDLE or conn.worked):
                    counts.transactions += 1
                conn.status, conn.worked = status, False
            elif kind == COMPLETE:
                counts.statements += 1
                conn.worked = True
            elif kind == ERROR:
                counts.errors += 1
                conn.worked = True
            elif kind == NOTIFY:
                counts.notifications += 1
            conn.skip = int.from_bytes(head[1:5], "big") - 4
            head.clear()


class _DelayLine:
    """Bytes to a socket, each chunk ``delay`` seconds after it was put (in order)."""

    def __init__(self, sock: socket.socket, delay: float) -> None:
        self.sock = sock
        self.delay = delay
        self.queue: deque[tuple[float, bytes]] = deque()
        self.cv = threading.Condition()
        self.closed = False
        self.thread = threading.Thread(target=self._run, name="wire-delay", daemon=True)
        self.thread.start()

    def put(self, data: bytes) -> None:
        with self.cv:
            self.queue.append((time.monotonic() + self.delay, data))
            self.cv.notify()

    def drain(self) -> None:
        with self.cv:
            self.closed = True
            self.cv.notify()
        self.thread.join(5)

    def _run(self) -> None:
        while True:
            with self.cv:
                while not self.queue and not self.closed:
                    self.cv.wait()
                if not self.queue:
                    return
                due, data = self.queue.popleft()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            try:
                self.sock.sendall(data)
            except OSError:
                return
