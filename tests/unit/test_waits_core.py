"""Approvals, waits and sleeps: parsing, the state they enter, their ends, signals."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taskyard.core.explain import awaiting
from taskyard.core.graph import GraphError, parse_graph
from taskyard.core.states import JOB_TRANSITIONS, JobState
from taskyard.core.waits import (
    KEY_MAX,
    TIMED_OUT_BY,
    Decision,
    Kind,
    WaitError,
    WaitSpec,
    awaits_text,
    check_signal,
    decided,
    on_timeout,
    parse_wait,
    ready_state,
    signal_matches,
)

RELEASE = {"tasks": {
    "build": {"type": "compile"},
    "approve": {"approval": {"timeout": "1h"}, "requires": ["build"]},
    "ready": {"wait": {"signal": "deploy-ready", "key": "v2", "timeout": "30m"}},
    "settle": {"sleep": "10m", "requires": ["build"]},
    "deploy": {"type": "deploy", "requires": ["approve", "ready", "settle"],
               "args": {"release": {"$result": "ready"}}},
}}


def _parse(tasks: dict) -> dict:
    return parse_graph({"tasks": tasks}, known_types=lambda n: n in {"compile", "deploy"}).tasks


def test_the_contract_graph_parses() -> None:
    nodes = _parse(RELEASE["tasks"])
    approve, ready, settle = nodes["approve"], nodes["ready"], nodes["settle"]
    assert (approve.kind, approve.type, approve.timeout) == (Kind.APPROVAL, "", 3600.0)
    assert (ready.kind, ready.signal, ready.key, ready.timeout) == (
        Kind.WAIT, "deploy-ready", "v2", 1800.0)
    assert (settle.kind, settle.timeout) == (Kind.SLEEP, 600.0)
    assert nodes["build"].kind == Kind.TASK
    # Their definitions differ from a task's, and from each other's.
    assert approve.definition() != nodes["build"].definition()
    assert approve.definition()["wait"] == ["approval", None, None]


def test_wait_tasks_take_few_keys() -> None:
    nodes = _parse({"a": {"approval": None}, "w": {"wait": {"signal": "s", "key": 7},
                                                  "requires": ["a"], "convergence": "any",
                                                  "routing": "r"}})
    assert nodes["a"].timeout is None
    assert (nodes["w"].key, nodes["w"].convergence, nodes["w"].routing) == ("7", "any", "r")


@pytest.mark.parametrize(("tasks", "message"), [
    ({"a": {"approval": {}, "type": "compile"}},
     "task 'a': give exactly one of type, approval, wait or sleep (it has approval, type)"),
    ({"a": {"approval": {}, "sleep": "1m"}},
     "task 'a': give exactly one of type, approval, wait or sleep (it has approval, sleep)"),
    ({"a": {}}, "task 'a': 'type' must name a task type (or give approval, wait or sleep"),
    ({"a": {"approval": {}, "args": {}, "pools": ["p"]}},
     "task 'a': args, pools do not apply to an approval (it runs no handler); it takes "
     "requires, requires_mode, convergence and routing"),
    ({"a": {"sleep": "1m", "reruns": 2}}, "task 'a': reruns do not apply to a sleep"),
    ({"a": {"approval": 3}}, "task 'a': approval must be a mapping ({timeout})"),
    ({"a": {"wait": "s"}}, "task 'a': wait must be a mapping ({signal, key, timeout})"),
    ({"a": {"wait": {"signal": "s", "when": 1}}},
     "task 'a': wait has unknown keys ['when'] (expected key, signal, timeout)"),
    ({"a": {"wait": {}}}, "task 'a': wait: signal must name the signal (text)"),
    ({"a": {"wait": {"signal": "s", "key": 1.5}}}, "task 'a': wait: key must be text, got float"),
    ({"a": {"wait": {"signal": "s\n"}}}, "task 'a': wait: signal name 's\\n' holds"),
    ({"a": {"wait": {"signal": "s", "key": "k" * (KEY_MAX + 1)}}}, "task 'a': wait: key 'kkk"),
    ({"a": {"sleep": "0"}}, "task 'a': sleep must be more than 0 seconds, got '0'"),
    ({"a": {"sleep": None}}, "task 'a': sleep must be a duration like 90"),
    ({"a": {"sleep": True}}, "task 'a': sleep must be a duration like 90"),
    ({"a": {"sleep": "soon"}}, "task 'a': sleep"),
    ({"a": {"approval": {"timeout": "-1"}}}, "task 'a': approval timeout"),
    ({"a": {"approval": {}, "routing": "a.b" * 60}}, "task 'a' routing"),
    ({"a": {"approval": {}, "convergence": "most"}},
     "task 'a': convergence must be 'all' or 'any'"),
    ({"a": {"approval": {}, "requires_mode": "x"}}, "task 'a': requires_mode must be one of"),
    ({"a": {"approval": {}, "requires": ["nope"]}}, "task 'a': requires unknown label 'nope'"),
])
def test_bad_wait_tasks_are_named(tasks: dict, message: str) -> None:
    with pytest.raises(GraphError) as caught:
        _parse(tasks)
    assert str(caught.value).startswith(message)


def test_parse_wait_directly() -> None:
    assert parse_wait("t", Kind.SLEEP, 90) == WaitSpec(Kind.SLEEP, timeout=90.0)
    assert parse_wait("t", Kind.WAIT, {"signal": "go"}) == WaitSpec(Kind.WAIT, "go")
    with pytest.raises(WaitError, match="key must be text, got bool"):
        check_signal("go", True)


@given(st.sampled_from(list(Kind)))
def test_ready_state_is_reachable_from_waiting(kind: Kind) -> None:
    state = ready_state(kind)
    assert state in JOB_TRANSITIONS[JobState.WAITING]
    assert (state is JobState.PENDING) == (kind is Kind.TASK)


@given(st.sampled_from(list(Kind)))
def test_a_timeout_ends_an_awaiting_job(kind: Kind) -> None:
    state, result = on_timeout(kind)
    assert state in JOB_TRANSITIONS[JobState.AWAITING]
    if kind is Kind.SLEEP:
        assert (state, result) == (JobState.SUCCEEDED, None)
    else:
        assert state is JobState.FAILED
        assert result == {"decision": "timed_out", "note": None, "by": TIMED_OUT_BY}


def test_decisions_are_results() -> None:
    assert decided(Decision.APPROVED, "ok", "ann") == {
        "decision": "approved", "note": "ok", "by": "ann"}


names = st.sampled_from(["a", "b"])
keys = st.none() | st.sampled_from(["k1", "k2"])


@given(names, keys, names, keys)
def test_signal_matching(wanted: str, wanted_key: str | None, name: str,
                         key: str | None) -> None:
    matches = signal_matches(wanted, wanted_key, name, key)
    if name != wanted:
        assert not matches
    elif wanted_key is None:
        assert matches  # a wait without a key takes any key of its signal
    else:
        assert matches == (key == wanted_key)


def test_awaiting_reasons_say_what_and_how() -> None:
    assert awaits_text(Kind.WAIT, "go", None) == "signal 'go'"
    assert awaits_text(Kind.SLEEP, None, None) == "its sleep to end"
    assert awaiting(5, "approval", None, None, deadline=None, now=0.0).message == (
        "awaits an approval (taskyard job approve 5 or taskyard job deny 5); no timeout")
    reason = awaiting(5, "wait", "deploy ready", "v2", deadline=3600.0, now=100.0)
    assert reason.code == "awaiting_wait"
    assert reason.message == (
        "awaits signal 'deploy ready' with key 'v2' (taskyard signal 'deploy ready' --key "
        "v2); times out at 1970-01-01T01:00:00Z (in 3500s)")
    assert awaiting(5, "sleep", None, None, deadline=3600.0, now=4000.0).message == (
        "sleeps until 1970-01-01T01:00:00Z (in 0s)")


@given(st.lists(st.sets(st.sampled_from(["a", "b", "c"]), min_size=1), max_size=5),
       st.frozensets(st.sampled_from(["a", "b", "c"])))
def test_paused_pools_are_served_by_no_worker(pool_sets: list[set[str]],
                                              paused: frozenset[str]) -> None:
    from taskyard.core.placement import WorkerSlot, without_paused

    workers = [WorkerSlot(i, f"w{i}", tuple(sorted(p)), 2) for i, p in enumerate(pool_sets)]
    seen = without_paused(workers, paused)
    assert [w.id for w in seen] == [w.id for w in workers]
    for before, after in zip(workers, seen, strict=True):
        assert set(after.pools) == set(before.pools) - paused
        assert (after.capacity, after.prefetch) == (before.capacity, before.prefetch)


def test_pool_paused_reasons() -> None:
    from taskyard.core.explain import pool_paused

    assert pool_paused(["gpu"], every=True).message == (
        "its pools are paused (gpu): nothing new is placed there until taskyard pools resume")
    partly = pool_paused(["a", "b"], every=False)
    assert (partly.code, partly.detail) == ("pool_paused", "a, b")
    assert partly.message.startswith("of its pools, paused (a, b)")
