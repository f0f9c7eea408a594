"""``taskyard publisher`` against a real RabbitMQ: a consumer binding patterns gets every
message it binds — through a SIGKILL of the publisher and one of the broker."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from tests.bridges.consumer import Consumer
from tests.bridges.servers import RabbitBroker
from tests.polling import wait_for
from tests.store.driver import drive

from taskyard.api.yard import Yard
from taskyard.bridges.amqp_link import Outgoing
from taskyard.bridges.publisher import Publisher
from taskyard.model.records import ClaimedJob
from taskyard.store.transitions.events import START

GRAPH_EXCHANGES = [f"v1/scheduler:task-graph-{s}" for s in ("running", "blocked", "finished")]
JOB_EXCHANGES = [f"v1/scheduler:job-{s}"
                 for s in ("pending", "running", "completed", "failed", "exception")]
BINDINGS = [
    # Seed 004's point: one pattern for a graph's messages and its tasks' alike.
    *[(e, "*.*.*.*.*.*.taskyard.*.nightly.#") for e in GRAPH_EXCHANGES + JOB_EXCHANGES],
    ("v1/scheduler:job-completed", "#"),                   # every completion
    ("v1/scheduler:job-failed", "*.*.*.*.*.flaky.#"),      # failures of one task type
    ("v1/scheduler:job-exception", "#"),
    ("v1/scheduler:task-graph-blocked", "_._._._._._.#"),
]


def _decide(job: ClaimedJob) -> tuple[str, Any]:
    return ("failed", None) if job.args.get("fail") else ("succeeded", {"n": job.job_id})


def _round(yard: Yard, i: int) -> None:
    """About fifteen events: a graph (nightly or weekly) with a task that may fail, a
    job outside graphs, now and then a cancel."""
    yard.submit_graph({"routing": "nightly" if i % 2 else "weekly", "tasks": {
        "build": {"type": "step", "args": {"n": i}, "routing": "linux"},
        "test": {"type": "flaky", "args": {"fail": i % 3 == 0}, "requires": ["build"]},
        "ship": {"type": "step", "args": {}, "requires": ["test"]}}})
    solo = yard.submit("step", args={"solo": i}, run_after="1d" if i % 4 == 0 else None)
    drive(yard.store, _decide)
    if i % 4 == 0:
        yard.cancel(solo)


def _publisher(url: str, broker: RabbitBroker, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "taskyard", "-v", "--db", url, "publisher", "--amqp",
             broker.url, "--batch", "50"], stdout=out, stderr=subprocess.STDOUT)


def _all_messages(yard: Yard) -> dict[str, Outgoing]:
    """What the log holds, as messages (the mapping itself is unit-tested in core)."""
    publisher = Publisher(yard.store, "amqp://unused", batch=10_000)
    _cursor, messages = publisher.read(START)
    assert len(messages) < 10_000
    return {m.message_id: m for m in messages}


def test_every_bound_message_arrives_through_a_publisher_kill_and_a_broker_kill(
        db_url: str, rabbitmq: RabbitBroker, tmp_path: Path) -> None:
    consumer = Consumer(f"127.0.0.1:{rabbitmq.port}", f"taskyard-test-{uuid.uuid4().hex[:8]}",
                        BINDINGS)
    consumer.declare()
    consumer.start()
    yard = Yard(db_url)
    yard.add_task_type("step", handler="python:tests.handlers_for_tests:echo")
    yard.add_task_type("flaky", handler="python:tests.handlers_for_tests:echo")
    log = tmp_path / "publisher.log"
    publisher = _publisher(db_url, rabbitmq, log)
    try:
        for i in range(6):
            _round(yard, i)
        wait_for("messages before the publisher is killed", lambda: len(consumer.ids()) >= 10)
        publisher.send_signal(signal.SIGKILL)
        publisher.wait(30)
        for i in range(6, 10):
            _round(yard, i)  # published by the next publisher, from the confirmed position
        publisher = _publisher(db_url, rabbitmq, log)
        seen = len(consumer.ids())
        wait_for("the new publisher to deliver", lambda: len(consumer.ids()) > seen)
        rabbitmq.kill()
        for i in range(10, 14):
            _round(yard, i)  # while the broker is down
        rabbitmq.start()
        for i in range(14, 18):
            _round(yard, i)
        # The log is read as the publisher reads it: up to the oldest transaction still
        # running, so a read made while one runs may stop short of events the consumer
        # gets a moment later. Read it again until it and the consumer agree.
        messages: dict[str, Outgoing] = {}
        expected: set[str] = set()

        def agreed() -> bool:
            nonlocal messages, expected
            messages = _all_messages(yard)
            expected = {i for i, m in messages.items()
                        if consumer.wants(m.exchange, m.routing_key)}
            return expected == consumer.ids()

        wait_for("every bound message", agreed, timeout=180)
        assert len(expected) > 100
    finally:
        publisher.terminate()
        publisher.wait(30)
        consumer.stop()
        yard.close()
    assert consumer.ids() == expected, log.read_text()[-3000:]
    for got in consumer.received:  # each with its exchange, key and body
        sent = messages[got.message_id]
        assert (got.exchange, got.routing_key, got.body) == (
            sent.exchange, sent.routing_key, sent.body)
    assert consumer.connections >= 2  # the broker did go away
    assert "event=publisher-link-failed" in log.read_text()
    bodies = [json.loads(r.body) for r in consumer.received]
    blocked = [b for b in bodies if b["event"]["topic"] == "graph-blocked"]
    assert blocked and all(b["state"] == "blocked" and b["schedulerId"] == "taskyard"
                           for b in blocked)
    assert any(r.routing_key.startswith("_._._._._._.taskyard.") for r in consumer.received)


def test_up_publishes_its_events_before_it_exits(db_url: str, rabbitmq: RabbitBroker,
                                                 tmp_path: Path) -> None:
    """``up --amqp URL --until-idle``: the last jobs' events are published before it exits."""
    consumer = Consumer(f"127.0.0.1:{rabbitmq.port}", f"taskyard-up-{uuid.uuid4().hex[:8]}",
                        [("v1/scheduler:job-completed", "#")])
    consumer.declare()
    consumer.start()
    yard = Yard(db_url)
    yard.init()
    yard.add_task_type("step", handler="python:tests.handlers_for_tests:echo")
    jobs = [yard.submit("step", {"n": n}) for n in range(3)]
    yard.close()
    root = Path(__file__).resolve().parents[2]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "taskyard", "--db", db_url, "up", "--workers", "1",
             "--until-idle", "--amqp", rabbitmq.url], check=False, cwd=root,
            capture_output=True,
            timeout=120, env={**os.environ, "PYTHONPATH": str(root)})
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        wait_for("the three completions", lambda: len(consumer.ids()) >= 3)
    finally:
        consumer.stop()
    keys = sorted(r.routing_key for r in consumer.received)
    assert [k.split(".")[0] for k in keys] == [str(j) for j in sorted(jobs)]
    assert all(k.endswith(".taskyard.step.taskyard._._._") for k in keys)
