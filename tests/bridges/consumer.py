"""A RabbitMQ consumer as users run them: its own durable queue bound to exchanges by
patterns, manual acks, reconnecting when the broker goes away."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import amqp

from taskyard.core.routing import topic_matches

Binding = tuple[str, str]
"""(exchange, pattern)"""


@dataclass(frozen=True)
class Received:
    message_id: str
    exchange: str
    routing_key: str
    body: bytes
    headers: dict[str, object] = field(default_factory=dict)


@dataclass
class Consumer:
    url_host: str
    queue: str
    bindings: Sequence[Binding]
    received: list[Received] = field(default_factory=list)
    connections: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def declare(self) -> None:
        """Declare the exchanges, the durable queue and its bindings (before anything is
        published: a topic exchange drops what no queue is bound to)."""
        conn = amqp.Connection(host=self.url_host)
        conn.connect()
        try:
            self._bind(conn.channel())
        finally:
            conn.close()

    def _bind(self, channel: amqp.Channel) -> None:
        channel.queue_declare(self.queue, durable=True, auto_delete=False)
        for exchange, pattern in self.bindings:
            channel.exchange_declare(exchange, "topic", durable=True, auto_delete=False)
            channel.queue_bind(self.queue, exchange, pattern)

    def wants(self, exchange: str, key: str) -> bool:
        return any(e == exchange and topic_matches(p, key) for e, p in self.bindings)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True, name="consumer")
        self._thread.start()

    def ids(self) -> set[str]:
        with self._lock:
            return {r.message_id for r in self.received}

    def _run(self) -> None:
        while not self._stop.is_set():
            conn = amqp.Connection(host=self.url_host, connect_timeout=2)
            try:
                conn.connect()
                channel = conn.channel()
                self._bind(channel)
                channel.basic_qos(0, 200, False)
                channel.basic_consume(self.queue, callback=self._on_message)
                self.connections += 1
                while not self._stop.is_set():
                    with contextlib.suppress(TimeoutError):
                        conn.drain_events(timeout=0.5)
            except Exception:  # the broker went away: connect again
                self._stop.wait(0.5)
            finally:
                with contextlib.suppress(Exception):
                    conn.collect()

    def _on_message(self, message: amqp.Message) -> None:
        info = message.delivery_info
        # py-amqp decodes a body whose content_encoding it knows.
        body = message.body if isinstance(message.body, bytes) else message.body.encode()
        with self._lock:
            self.received.append(Received(message.properties["message_id"], info["exchange"],
                                          info["routing_key"], body,
                                          dict(message.properties.get("application_headers")
                                               or {})))
        message.channel.basic_ack(info["delivery_tag"])

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
