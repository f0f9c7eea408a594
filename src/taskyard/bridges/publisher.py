"""``taskyard publisher``: the event log, delivered to RabbitMQ topic exchanges.

An outbox follower. It reads committed events in commit order from its position
(``tx.events.committed``), publishes a page of them with publisher confirms, and only
once the broker confirmed all of them moves its position in the database
(``tx.outbox.advance``). So a message goes out only for a committed transaction, at
least once: a publisher killed, or a broker restarted, between a publish and the
position's move publishes the page again from the last confirmed event. It waits for
news on the ``events`` channel (every transaction that writes events wakes it), and
looks again every ``poll`` seconds for events held back by an older transaction
(PostgreSQL, see docs/events.md).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from taskyard.bridges.amqp_link import AmqpLink, LinkError, Outgoing
from taskyard.bridges.amqp_messages import fact_keys, outgoing
from taskyard.core.amqp import TOPICS, exchange_for
from taskyard.store import Listener, Store, open_store
from taskyard.store.transitions.events import EVENTS_CHANNEL, EventCursor

log = logging.getLogger("taskyard.publisher")
BATCH = 500
"""Most events published per confirm wait."""
DEFAULT_NAME = "amqp"


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


@dataclass
class PublisherStats:
    published: int = 0
    """Messages confirmed by the broker (republished ones count again)."""
    batches: int = 0
    reconnects: int = 0


class Publisher:
    """Follows the event log of ``store`` and publishes it to the broker at ``amqp_url``,
    as follower ``name`` (its position is kept under that name)."""

    def __init__(self, store: Store, amqp_url: str, *, name: str = DEFAULT_NAME,
                 batch: int = BATCH, confirm_timeout: float = 30.0, poll: float = 2.0,
                 max_backoff: float = 5.0) -> None:
        self.store = store
        self.amqp_url = amqp_url
        self.name = name
        self.batch = batch
        self.confirm_timeout = confirm_timeout
        self.poll = poll
        self.max_backoff = max_backoff
        self.stats = PublisherStats()
        self.cursor: EventCursor | None = None
        """The last confirmed position (None until read from the database)."""

    def run(self, stop: threading.Event, *, drain: float = 0.0) -> None:
        """Publish until ``stop`` is set, riding out broker and database failures; then,
        with ``drain``, go on for up to that many seconds while events are left (``up
        --until-idle`` publishes its last events before it exits)."""
        link: AmqpLink | None = None
        listener: Listener | None = None
        failures = 0
        try:
            while not stop.is_set():
                try:
                    if self.cursor is None:
                        self.cursor = self.store.outbox.position(self.name)
                        log.info("event=publisher-resumed name=%s tx=%s id=%s", self.name,
                                 self.cursor.tx, self.cursor.id)
                    if link is None:
                        link = self._connect()
                    if self._step(link):
                        failures = 0
                        continue
                    link.keepalive()
                    if listener is None:
                        listener = self.store.listener(EVENTS_CHANNEL)
                    listener.wait(self.poll)
                    failures = 0
                except LinkError as exc:
                    log.warning("event=publisher-link-failed name=%s error=%s", self.name,
                                _one_line(exc))
                    if link is not None:
                        link.close()
                    link = None
                    failures += 1
                    stop.wait(self._backoff(failures))
                except Exception as exc:  # the database: retried like the worker does
                    log.error("event=publisher-failed name=%s error=%s: %s", self.name,
                              type(exc).__name__, _one_line(exc))
                    if listener is not None:
                        listener.close()
                    listener = None
                    failures += 1
                    stop.wait(self._backoff(failures))
            if drain > 0 and link is not None:
                self._drain(link, time.monotonic() + drain)
        finally:
            if link is not None:
                link.close()
            if listener is not None:
                listener.close()
            log.info("event=publisher-stopped name=%s published=%d", self.name,
                     self.stats.published)

    def _drain(self, link: AmqpLink, deadline: float) -> None:
        try:
            while time.monotonic() < deadline and self._step(link):
                pass
        except Exception as exc:  # published later, from the position kept
            log.warning("event=publisher-drain-failed name=%s error=%s", self.name,
                        _one_line(exc))

    def _backoff(self, failures: int) -> float:
        return float(min(0.1 * 2.0 ** failures, self.max_backoff))

    def _connect(self) -> AmqpLink:
        link = AmqpLink(self.amqp_url)
        try:
            link.declare([exchange_for(topic) for topic in TOPICS])
        except Exception as exc:
            link.close()
            raise LinkError(f"declaring exchanges: {exc}") from exc
        self.stats.reconnects += 1
        log.info("event=publisher-connected name=%s", self.name)
        return link

    def _step(self, link: AmqpLink) -> bool:
        """Publish the next page of events, if any; True if there was one."""
        assert self.cursor is not None
        cursor, messages = self.read(self.cursor)
        if not messages:
            self.cursor = cursor
            return False
        link.publish(messages, self.confirm_timeout)
        self.stats.published += len(messages)
        self.stats.batches += 1
        # Confirmed: only now may the position move (a crash before this line
        # publishes the page again).
        with self.store.write() as tx:
            tx.outbox.advance(self.name, cursor)
        self.cursor = cursor
        log.debug("event=published name=%s count=%d tx=%s id=%s", self.name, len(messages),
                  cursor.tx, cursor.id)
        return True

    def read(self, after: EventCursor) -> tuple[EventCursor, list[Outgoing]]:
        """The messages of the next page of committed events, and the cursor after it."""
        with self.store.read() as tx:
            page = tx.events.committed(after, limit=self.batch)
            if not page.events:
                return page.cursor, []
            facts = tx.outbox.job_facts(fact_keys(page.events))
        return page.cursor, [outgoing(event, facts) for event in page.events]


def main_publisher(url: str, amqp_url: str, stop: threading.Event, *,
                   name: str = DEFAULT_NAME, batch: int = BATCH) -> int:
    """Run a publisher until ``stop``; used by ``taskyard publisher``."""
    store = open_store(url)
    try:
        Publisher(store, amqp_url, name=name, batch=batch).run(stop)
    finally:
        store.close()
    return 0
