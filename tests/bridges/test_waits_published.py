"""Decisions and signals reach RabbitMQ like every event: ``job-awaiting`` when an
approval or a wait awaits, ``job-completed`` / ``job-failed`` with who decided, keyed by
the job's kind in place of a task type."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

from tests.bridges.consumer import Consumer
from tests.bridges.servers import RabbitBroker
from tests.polling import wait_for

from taskyard.api.yard import Yard


def test_approvals_and_signals_are_published(db_url: str, rabbitmq: RabbitBroker) -> None:
    consumer = Consumer(f"127.0.0.1:{rabbitmq.port}", f"taskyard-waits-{uuid.uuid4().hex[:8]}",
                        [("v1/scheduler:job-awaiting", "#"),
                         ("v1/scheduler:job-completed", "*.*.*.*.taskyard.approval.#"),
                         ("v1/scheduler:job-completed", "*.*.*.*.taskyard.wait.#"),
                         ("v1/scheduler:job-failed", "#")])
    consumer.declare()
    consumer.start()
    yard = Yard(db_url)
    graph_id = yard.submit_graph({"routing": "release", "tasks": {
        "yes": {"approval": {}}, "no": {"approval": {}},
        "ready": {"wait": {"signal": "go", "key": "v2"}}}})
    jobs = {j.label: j.id for j in yard.graph(graph_id).jobs}
    yard.approve(jobs["yes"], note="fine", by="ann")
    yard.deny(jobs["no"], by="bob")
    yard.signal("go", key="v2", payload={"tag": "v2"}, by="ci")
    publisher = subprocess.Popen([sys.executable, "-m", "taskyard", "--db", db_url,
                                  "publisher", "--amqp", rabbitmq.url],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for("six messages", lambda: len(consumer.received) >= 6, timeout=120)
    finally:
        publisher.terminate()
        publisher.wait(30)
        consumer.stop()
        yard.close()
    by_topic: dict[str, list[dict]] = {}
    for message in consumer.received:
        body = json.loads(message.body)
        by_topic.setdefault(body["event"]["topic"], []).append(
            {"routing_key": message.routing_key, **body["event"]["payload"]})
    assert sorted(p["kind"] for p in by_topic["job-awaiting"]) == ["approval", "approval",
                                                                  "wait"]
    completed = {p["job_id"]: p for p in by_topic["job-completed"]}
    assert completed[jobs["yes"]]["by"] == "ann"
    assert completed[jobs["yes"]]["routing_key"].split(".")[4:6] == ["taskyard", "approval"]
    assert completed[jobs["ready"]]["signal"] == "go"
    (failed,) = by_topic["job-failed"]
    assert (failed["job_id"], failed["decision"], failed["by"]) == (jobs["no"], "denied", "bob")
    assert f".{graph_id}.release." in failed["routing_key"]
