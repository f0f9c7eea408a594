"""A light HTTP/1.1 load client for bench.http: keep-alive connections on asyncio (uvloop
when installed), one request in flight per connection, each answer read whole
(status line, headers, ``Content-Length`` body) before the next request is sent.

It does what a client library does on the wire — real requests on persistent
connections — without the library's per-request Python (httpx spends ~0.3 ms of CPU a
request, which on a 2-core machine is CPU taken from the server it measures). Its own
CPU time is measured and reported with every run.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit


@dataclass
class LoadResult:
    """What a run did: answers by status, latencies (seconds), wall and client CPU time."""

    statuses: dict[int, int] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    seconds: float = 0.0
    client_cpu: float = 0.0
    first_error: str | None = None
    bodies: list[bytes] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(self.statuses.values())

    def percentile_ms(self, q: float) -> float:
        ordered = sorted(self.latencies)
        if not ordered:
            return 0.0
        return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000


def request_bytes(method: str, url: str, body: Any, headers: dict[str, str]) -> bytes:
    """One HTTP/1.1 request with a JSON body, ready to send as many times as wanted."""
    parts = urlsplit(url)
    payload = json.dumps(body, separators=(",", ":")).encode()
    head = [f"{method} {parts.path or '/'} HTTP/1.1", f"Host: {parts.netloc}",
            "Content-Type: application/json", f"Content-Length: {len(payload)}",
            *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + payload


async def _read_answer(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    body = await reader.readexactly(length) if length else b""
    return status, body


async def _run(host: str, port: int, make: Callable[[int], bytes], total: int, *,
               connections: int, expect: int, keep_bodies: bool) -> LoadResult:
    result = LoadResult()
    sent = 0

    async def connection() -> None:
        nonlocal sent
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while sent < total:
                index = sent
                sent += 1
                payload = make(index)
                started = time.perf_counter()
                writer.write(payload)
                status, body = await _read_answer(reader)
                result.latencies.append(time.perf_counter() - started)
                result.statuses[status] = result.statuses.get(status, 0) + 1
                if status != expect and result.first_error is None:
                    result.first_error = f"{status} {body[:300]!r}"
                if keep_bodies:
                    result.bodies.append(body)
        finally:
            writer.close()

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(connection() for _ in range(connections)))
    result.seconds = time.perf_counter() - wall
    result.client_cpu = time.process_time() - cpu
    return result


def run_load(base: str, make: Callable[[int], bytes], total: int, connections: int, *,
             expect: int = 201, keep_bodies: bool = False) -> LoadResult:
    """``total`` requests (``make(i)`` gives the i-th one's bytes) over ``connections``
    keep-alive connections to ``base``."""
    parts = urlsplit(base)
    runner: Callable[[Coroutine[Any, Any, LoadResult]], LoadResult] = asyncio.run
    try:
        import uvloop  # noqa: PLC0415 - optional: the lightest loop when installed

        runner = uvloop.run
    except ImportError:
        pass
    return runner(_run(parts.hostname or "127.0.0.1", parts.port or 80, make, total,
                       connections=connections, expect=expect, keep_bodies=keep_bodies))
