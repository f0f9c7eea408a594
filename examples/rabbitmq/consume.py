"""A RabbitMQ consumer of taskyard's messages: one durable queue, bound by patterns.

    python consume.py amqp://guest:guest@127.0.0.1:5672/ 'v1/scheduler:task-graph-blocked=#' \
        'v1/scheduler:job-failed=*.*.*.*.*.*.taskyard.*.nightly.#'

Each argument after the URL is EXCHANGE=PATTERN. Prints one line per message (exchange,
routing key, state, message id) until Ctrl-C, or with --idle N once no message came for
N seconds. Deduplicate by message id: taskyard publishes at least once.
"""

from __future__ import annotations

import json
import sys
from urllib.parse import unquote, urlsplit

import amqp


def main(argv: list[str]) -> None:
    idle = None
    if argv and argv[0] == "--idle":
        idle, argv = float(argv[1]), argv[2:]
    url, bindings = urlsplit(argv[0]), [a.split("=", 1) for a in argv[1:]]
    conn = amqp.Connection(host=f"{url.hostname}:{url.port or 5672}",
                           userid=unquote(url.username or "guest"),
                           password=unquote(url.password or "guest"),
                           virtual_host=unquote(url.path[1:]) or "/")
    conn.connect()
    channel = conn.channel()
    queue = "taskyard-example"
    channel.queue_declare(queue, durable=True, auto_delete=False)
    for exchange, pattern in bindings:
        # The publisher declares these too: whoever comes first creates them.
        channel.exchange_declare(exchange, "topic", durable=True, auto_delete=False)
        channel.queue_bind(queue, exchange, pattern)
    seen: set[str] = set()

    def on_message(message: amqp.Message) -> None:
        info, message_id = message.delivery_info, message.properties["message_id"]
        if message_id not in seen:
            seen.add(message_id)
            body = json.loads(message.body)
            print(f"{info['exchange']:34} {info['routing_key']:58} {body['state']:9} "
                  f"{message_id}", flush=True)
        channel.basic_ack(info["delivery_tag"])

    channel.basic_consume(queue, callback=on_message)
    try:
        while True:
            conn.drain_events(timeout=idle)
    except (KeyboardInterrupt, TimeoutError):
        pass
    finally:
        conn.close()


if __name__ == "__main__":
    main(sys.argv[1:])
