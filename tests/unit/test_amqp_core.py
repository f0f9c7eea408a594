"""Seed 004's exchanges and routing keys for the RabbitMQ publisher (core/amqp.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taskyard.core.amqp import (
    TOPICS,
    AmqpUrlError,
    JobFacts,
    exchange_for,
    message_key,
    parse_amqp_url,
    word,
)
from taskyard.core.routing import routing_key, topic_matches

# Routing parts as users write them: words of letters, digits and dashes, maybe dotted.
_WORD = st.text("abcxyz019-", min_size=1, max_size=6)
_ROUTING = st.lists(_WORD, max_size=3).map(".".join)
_NAME = st.text("abc.-_*#", max_size=8)


def test_graph_exchanges_are_seed_004s_and_jobs_have_their_own():
    assert exchange_for("graph-running") == "v1/scheduler:task-graph-running"
    assert exchange_for("graph-blocked") == "v1/scheduler:task-graph-blocked"
    assert exchange_for("graph-finished") == "v1/scheduler:task-graph-finished"
    assert exchange_for("graph-canceled") == "v1/scheduler:task-graph-canceled"
    assert exchange_for("job-completed") == "v1/scheduler:job-completed"
    assert exchange_for("schedule-error") == "v1/scheduler:schedule-error"
    assert len({exchange_for(t) for t in TOPICS}) == len(TOPICS)


def test_keys_in_seed_004s_layout():
    stored = routing_key(12, "nightly", "linux")
    facts = JobFacts(type="compile", host="build-1.example", worker="w1")
    assert message_key("job-completed", stored, 57, 2, facts) == (
        "57.2.build-1_example.w1.taskyard.compile.taskyard.12.nightly.linux")
    assert message_key("job-pending", stored, 57) == "57._._._.taskyard._.taskyard.12.nightly.linux"
    assert message_key("graph-running", routing_key(12, "nightly", ""), None) == (
        "_._._._._._.taskyard.12.nightly")
    assert message_key("schedule-error", routing_key(None, "", ""), None) == (
        "_._._._._._.taskyard._._")
    # A job topic without a job (none is written so) still gets a key.
    assert message_key("job-pending", "oneword", None) == "_._._._._._.oneword"


@given(graph=st.integers(1, 10**9), routing=st.tuples(_ROUTING, _ROUTING),
       job=st.integers(1, 10**9), attempt=st.one_of(st.none(), st.integers(1, 99)),
       names=st.tuples(_NAME, _NAME, _NAME))
def test_one_pattern_serves_a_graph_and_its_jobs(graph, routing, job, attempt, names):
    """Seed 004's point: ``*.*.*.*.*.*.<scheduler>.<graph>.#`` binds a graph's messages
    and its tasks' alike, whatever the routing parts and names hold."""
    graph_routing, job_routing = routing
    graph_msg = message_key("graph-finished", routing_key(graph, graph_routing, ""), None)
    facts = JobFacts(*names)
    job_msg = message_key("job-running", routing_key(graph, graph_routing, job_routing), job,
                          attempt, facts)
    pattern = f"*.*.*.*.*.*.taskyard.{graph}.#"
    assert topic_matches(pattern, graph_msg)
    assert topic_matches(pattern, job_msg)
    assert not topic_matches(f"*.*.*.*.*.*.taskyard.{graph + 1}.#", job_msg)
    # The six words before the stored key: names never add words.
    assert job_msg.split(".")[:6] == [str(job), word(attempt), word(names[1]),
                                      word(names[2]), "taskyard", word(names[0])]
    assert topic_matches(f"{job}.#", job_msg)


@given(st.one_of(st.none(), st.integers(), _NAME))
def test_a_word_is_one_nonempty_word(value):
    w = word(value)
    assert w and "." not in w


@pytest.mark.parametrize(("url", "expected"), [
    ("amqp://localhost", ("localhost", 5672, "guest", "guest", "/", False)),
    ("amqp://u:p%40ss@127.0.0.1:5673/%2F", ("127.0.0.1", 5673, "u", "p@ss", "/", False)),
    ("amqps://u@broker/prod", ("broker", 5671, "u", "guest", "prod", True)),
    ("amqp://h:1/", ("h", 1, "guest", "guest", "/", False)),
])
def test_amqp_urls(url, expected):
    a = parse_amqp_url(url)
    assert (a.host, a.port, a.user, a.password, a.vhost, a.tls) == expected


@pytest.mark.parametrize("url", ["http://x", "amqp://", "amqp://h:99999", "localhost:5672"])
def test_bad_amqp_urls_say_so(url):
    with pytest.raises(AmqpUrlError, match="--amqp"):
        parse_amqp_url(url)
