"""Graph parsing, validation, cycle detection and substitution (pure core)."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taskyard.core.graph import (
    GraphError,
    TaskNode,
    find_cycle,
    parse_graph,
    references,
    substitute_ids,
    substitute_results,
)
from taskyard.store.graph_rows import definition_hash


def known(name: str) -> bool:
    return name in {"compile", "test"}


def test_valid_graph_parses_with_edges() -> None:
    spec = parse_graph(
        {"routing": "nightly", "tasks": {
            "build": {"type": "compile", "reruns": 2},
            "test": {"type": "test", "requires": ["build", ], "args": {
                "b": {"$subs": "taskId:build"}, "a": {"$result": "build"}}},
            "cleanup": {"type": "test", "requires": [{"label": "test", "on": "always"}]},
        }},
        known_types=known,
    )
    assert spec.tasks["test"].requires[0].on == "success"
    assert spec.tasks["cleanup"].requires[0].on == "always"
    assert spec.tasks["build"].reruns == 2


@pytest.mark.parametrize(
    ("tasks", "message"),
    [
        ({"a": {"type": "compile", "requires": ["a"]}}, "cycle a -> a"),
        ({"a": {"type": "compile", "requires": ["b"]}, "b": {"type": "compile",
          "requires": ["a"]}}, "cycle"),
        ({"a": {"type": "compile", "requires": ["zz"]}}, "requires unknown label 'zz'"),
        ({"a": {"type": "nope"}}, "unknown task type 'nope'"),
        ({"a": {"type": "compile", "args": {"x": {"$subs": "taskId:q"}}}}, "unknown label 'q'"),
        ({"a": {"type": "compile", "requires": [{"label": "b", "on": "maybe"}]},
          "b": {"type": "compile"}}, "on='maybe'"),
        ({"a": {"type": "compile", "args": {"x": "y" * 300_000}}}, "bytes"),
        ({"a": {"type": "compile", "reruns": -1}}, "reruns"),
        ({"a.b": {"type": "compile"}}, "without dots"),
    ],
)
def test_invalid_graphs_name_the_culprit(tasks: dict[str, object], message: str) -> None:
    with pytest.raises(GraphError, match=message.replace("(", r"\(")):
        parse_graph({"tasks": tasks}, known_types=known)


def test_cycle_is_reported_in_order() -> None:
    assert find_cycle({"a": ["c"], "b": ["a"], "c": ["b"]}) in (
        ["a", "b", "c", "a"], ["b", "c", "a", "b"], ["c", "a", "b", "c"])


def test_long_chain_validates_without_recursion() -> None:
    n = 100_000
    tasks = {f"t{i}": {"type": "compile", "requires": [f"t{i - 1}"] if i else []}
             for i in range(n)}
    spec = parse_graph({"tasks": tasks}, known_types=known)
    assert len(spec.tasks) == n
    tasks["t0"]["requires"] = [f"t{n - 1}"]
    with pytest.raises(GraphError, match="cycle"):
        parse_graph({"tasks": tasks}, known_types=known)


def test_substitutions() -> None:
    args = {"id": {"$subs": "taskId:build"}, "deep": [{"r": {"$result": "build"}}], "k": 1}
    assert references(args) == {"build"}
    with_ids = substitute_ids(args, {"build": 42})
    assert with_ids["id"] == 42 and with_ids["deep"][0]["r"] == {"$result": "build"}
    done = substitute_results(with_ids, {"build": {"artifact": "x.tar"}})
    assert done == {"id": 42, "deep": [{"r": {"artifact": "x.tar"}}], "k": 1}
    assert substitute_results({"r": {"$result": "b"}}, {"b": None}) == {"r": None}


def test_yaml_on_key_read_as_true_is_accepted() -> None:
    import yaml

    doc = yaml.safe_load("tasks:\n  a: {type: compile}\n"
                         "  b: {type: test, requires: [{label: a, on: always}]}\n")
    spec = parse_graph(doc, known_types=known)
    assert spec.tasks["b"].requires[0].on == "always"


def test_definition_hash_is_the_sha256_of_the_canonical_definition() -> None:
    # Stored hashes decide whether a re-added task is identical: the fast encoding
    # (cached parts around requires) must equal the plain JSON of definition().

    spec = parse_graph({"routing": "r", "tasks": {
        "a": {"type": "compile"},
        "b": {"type": "test", "requires": ["a"], "args": {"x": [1, {"y": "é"}], "b": None}},
        "c": {"type": "test", "requires": [{"label": "a", "on": "failure"}, "b"],
              "reruns": 3, "priority": -2, "pools": ["east", "west"], "routing": "x",
              "convergence": "any", "locks": ["k:{x}", "m:shared"], "timeout": "5m"},
        "d": {"type": "compile", "requires": ["a", "b"], "requires_mode": "all-resolved",
              "timeout": 1.5, "priority": 1},
    }}, known_types=known)
    for node in spec.tasks.values():
        assert definition_hash(node) == _plain_hash(node), node.label


def _plain_hash(node: TaskNode) -> str:
    """SHA-256 of the plain JSON of ``definition()``, its args as encoded."""
    rest = node.definition()
    del rest["args"]
    text = '{"args":' + node.args_text + "," + json.dumps(
        rest, sort_keys=True, separators=(",", ":"), default=list)[1:]
    return hashlib.sha256(text.encode()).hexdigest()


_LABELS = st.text(min_size=1, max_size=12).filter(lambda s: "." not in s)


@given(st.lists(_LABELS, min_size=1, max_size=6, unique=True),
       st.lists(st.sampled_from(["success", "failure", "always"]), min_size=5, max_size=5))
def test_definition_hash_of_any_labels_is_that_of_the_plain_json(
        labels: list[str], conditions: list[str]) -> None:
    # Quotes, backslashes, control and non-ASCII characters in labels: the requires part,
    # built by hand, must encode them exactly as json.dumps does.

    tasks: dict[str, dict[str, object]] = {labels[0]: {"type": "compile"}}
    for i, label in enumerate(labels[1:], 1):
        tasks[label] = {"type": "test", "requires": [
            {"label": parent, "on": conditions[j % 5]} for j, parent in enumerate(labels[:i])]}
    spec = parse_graph({"tasks": tasks}, known_types=known)
    for node in spec.tasks.values():
        assert definition_hash(node) == _plain_hash(node)
