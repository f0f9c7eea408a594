"""RabbitMQ publisher benchmark: events published per second with publisher confirms.

On a fresh database (SQLite in a temporary folder, or ``--db URL``), ``--events`` jobs
are submitted (one ``job-pending`` event each); then a publisher (``taskyard publisher``'s
own loop, in this process) delivers the whole log to a broker, and the rate is
events / wall time from its start until its position passed the last event. A durable
queue is bound to every job exchange, so each confirm waits for the message to be on
disk as a consumer's would. The broker is a throwaway Debian rabbitmq-server (the
tests' harness) unless ``--amqp URL`` names one.

Usage: python -m bench.amqp [--events 20000] [--batch 500] [--db URL] [--amqp URL] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import amqp

from bench.throughput import fresh
from taskyard.bridges.publisher import Publisher
from taskyard.core.amqp import parse_amqp_url


@contextlib.contextmanager
def broker(url: str | None, folder: Path) -> Iterator[str]:
    if url is not None:
        yield url
        return
    from tests.bridges.servers import RabbitBroker  # noqa: PLC0415 - the tests' harness

    node = RabbitBroker(folder)
    try:
        node.start()
        yield node.url
    finally:
        node.stop()


def _bind_queue(url: str, queue: str) -> None:
    a = parse_amqp_url(url)
    conn = amqp.Connection(host=f"{a.host}:{a.port}", userid=a.user, password=a.password,
                           virtual_host=a.vhost)
    conn.connect()
    channel = conn.channel()
    channel.queue_declare(queue, durable=True, auto_delete=False)
    channel.exchange_declare("v1/scheduler:job-pending", "topic", durable=True,
                             auto_delete=False)
    channel.queue_bind(queue, "v1/scheduler:job-pending", "#")
    conn.close()


def run(events: int, batch: int, db: str | None, amqp_url: str | None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder, broker(amqp_url, Path(folder)) as url:
        yard = fresh(db or f"sqlite:///{folder}/bench.db")
        for start in range(0, events, 5000):
            yard.submit_many("noop", [{"n": n} for n in range(start, min(events, start + 5000))])
        last = yard.store.events.last(1).cursor
        _bind_queue(url, f"bench-{int(time.time())}")
        publisher = Publisher(yard.store, url, name="bench", batch=batch)
        stop = threading.Event()
        thread = threading.Thread(target=publisher.run, args=(stop,), daemon=True)
        began = time.monotonic()
        thread.start()
        while publisher.cursor is None or publisher.cursor < last:
            time.sleep(0.01)
        seconds = time.monotonic() - began
        stop.set()
        thread.join(30)
        yard.close()
    return {"events": events, "batch": batch, "seconds": round(seconds, 3),
            "events_per_second": round(publisher.stats.published / seconds, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--db", help="database URL [default: a SQLite file]")
    parser.add_argument("--amqp", help="broker URL [default: a throwaway rabbitmq-server]")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    figures = run(args.events, args.batch, args.db, args.amqp)
    print(f"published {figures['events']} events with confirms in {figures['seconds']}s: "
          f"{figures['events_per_second']} events/s (batch {figures['batch']})")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
