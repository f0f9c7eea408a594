"""One connection to a RabbitMQ broker in confirm mode (py-amqp, blocking).

A batch of messages is written at once and then the broker's confirms are collected
(``basic.ack``, possibly for many at a time): a confirm per round trip would cap the
publisher at one message per network round trip. Any failure — a nack, a closed
connection, confirms that do not come in time — raises :class:`LinkError`; the caller
then drops the link and publishes the whole batch again on a new one.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from taskyard.core.amqp import parse_amqp_url

try:
    import amqp
except ImportError:  # pragma: no cover - the optional extra is missing
    amqp = None

HEARTBEAT = 30
"""Seconds between heartbeats (negotiated down to the broker's if lower)."""


class LinkError(Exception):
    """The broker did not confirm a batch: publish it again on a new link."""


class MissingExtra(RuntimeError):
    """An optional dependency of a bridge is not installed."""


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One message to publish: persistent, JSON."""

    exchange: str
    routing_key: str
    body: bytes
    message_id: str
    type: str
    timestamp: int
    headers: dict[str, Any] = field(default_factory=dict)


def require_amqp() -> None:
    """Fail at start, in one line, when the optional extra is missing."""
    if amqp is None:
        raise MissingExtra("the RabbitMQ publisher needs py-amqp: "
                           "pip install 'taskyard[amqp]'")


class AmqpLink:
    """A connection and a channel in confirm mode; exchanges declared as needed."""

    def __init__(self, url: str, *, connect_timeout: float = 10.0,
                 heartbeat: int = HEARTBEAT) -> None:
        require_amqp()
        address = parse_amqp_url(url)
        self._conn = amqp.Connection(
            host=f"{address.host}:{address.port}", userid=address.user,
            password=address.password, virtual_host=address.vhost, ssl=address.tls,
            connect_timeout=connect_timeout, heartbeat=heartbeat,
            client_properties={"connection_name": "taskyard publisher"})
        self._declared: set[str] = set()
        self._pending: set[int] = set()
        self._nacked = False
        self._tag = 0
        try:
            self._conn.connect()
            self._channel = self._conn.channel()
            self._channel.confirm_select()
        except Exception as exc:
            self.close()
            raise LinkError(f"cannot connect to {address.host}:{address.port}: {exc}") from exc
        self._channel.events["basic_ack"].add(self._on_ack)
        self._channel.events["basic_nack"].add(self._on_nack)

    def declare(self, exchanges: Sequence[str]) -> None:
        """Declare durable topic exchanges (idempotent; once per link)."""
        for name in exchanges:
            if name not in self._declared:
                self._channel.exchange_declare(name, "topic", durable=True, auto_delete=False)
                self._declared.add(name)

    def publish(self, messages: Sequence[Outgoing], timeout: float) -> None:
        """Publish ``messages`` and return once the broker confirmed every one of them
        (persisted, for durable queues); :class:`LinkError` otherwise."""
        try:
            self.declare(sorted({m.exchange for m in messages}))
            for m in messages:
                self._channel.basic_publish(amqp.Message(
                    m.body, content_type="application/json", content_encoding="utf-8",
                    delivery_mode=2, message_id=m.message_id, type=m.type,
                    timestamp=m.timestamp, app_id="taskyard", application_headers=m.headers),
                    exchange=m.exchange, routing_key=m.routing_key)
                self._tag += 1
                self._pending.add(self._tag)
            self._wait_for_confirms(timeout)
        except LinkError:
            raise
        except Exception as exc:  # the connection or the channel is gone
            raise LinkError(f"{type(exc).__name__}: {exc}") from exc

    def _wait_for_confirms(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self._pending and not self._nacked:
            left = deadline - time.monotonic()
            if left <= 0:
                raise LinkError(f"{len(self._pending)} messages not confirmed in {timeout:g}s")
            try:
                self._conn.drain_events(timeout=min(left, 1.0))
            except TimeoutError:
                self._conn.heartbeat_tick()
        if self._nacked:
            raise LinkError("the broker refused (nacked) a message")

    def keepalive(self) -> None:
        """Between batches: answer the broker's heartbeats and notice a closed
        connection early (raises :class:`LinkError`)."""
        try:
            self._conn.heartbeat_tick()
            self._conn.drain_events(timeout=0.001)
        except TimeoutError:
            return
        except Exception as exc:
            raise LinkError(f"{type(exc).__name__}: {exc}") from exc

    def _on_ack(self, tag: int, multiple: bool) -> None:
        if multiple:
            self._pending = {t for t in self._pending if t > tag}
        else:
            self._pending.discard(tag)

    def _on_nack(self, tag: int, multiple: bool) -> None:
        self._on_ack(tag, multiple)
        self._nacked = True

    def close(self) -> None:
        """Close the connection; one already broken is only released."""
        try:
            self._conn.close()
        except Exception:
            self._conn.collect()
