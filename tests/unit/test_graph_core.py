"""Graph parsing, validation, cycle detection and substitution (pure core)."""

from __future__ import annotations

import hashlib
import itertools
import json
from graphlib import CycleError, TopologicalSorter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taskyard.core.graph import (
    Edge,
    GraphError,
    TaskNode,
    find_cycle,
    parse_graph,
)
from taskyard.core.limits import Limits
from taskyard.core.substitution import (
    SubstitutionError,
    references,
    result_references,
    substitute_ids,
    substitute_results,
)
from taskyard.store.schema.graph_rows import definition_hash


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
        ({"": {"type": "compile"}}, "task '': a label is 1-200 characters without dots"),
        ({"x" * 201: {"type": "compile"}}, "a label is 1-200 characters"),
        ({"a": "compile"}, "task 'a': must be a mapping with at least 'type'"),
        ({"a": {"type": "compile", "retries": 1, "color": 2}},
         "task 'a': unknown keys ['color', 'retries']"),
        ({"a": {"args": {}}}, "task 'a': 'type' must name a task type"),
        ({"a": {"type": ""}}, "task 'a': 'type' must name a task type"),
        ({"a": {"type": 3}}, "task 'a': 'type' must name a task type"),
        ({"a": {"type": "compile", "args": [1]}}, "task 'a': args must be a JSON object"),
        ({"a": {"type": "compile", "requires_mode": "all-done"}},
         "task 'a': requires_mode must be one of ['all-completed', 'all-resolved']"),
        ({"a": {"type": "compile", "requires": "b"}, "b": {"type": "compile"}},
         "task 'a': requires must be a list of labels"),
        ({"a": {"type": "compile", "requires": ["b", "b"]}, "b": {"type": "compile"}},
         "task 'a': requires 'b' twice"),
        ({"a": {"type": "compile", "requires": ["b", {"label": "b", "on": "always"}]},
          "b": {"type": "compile"}}, "task 'a': requires 'b' twice"),
        ({"a": {"type": "compile", "requires": [{"label": "b", "when": "x"}]}},
         "task 'a': a requires entry is a label or {label, on}"),
        ({"a": {"type": "compile", "requires": [{"on": "always"}]}},
         "task 'a': a requires entry is a label or {label, on}"),
        ({"a": {"type": "compile", "requires": [7]}},
         "task 'a': a requires entry is a label or {label, on}"),
        ({"a": {"type": "compile", "reruns": 1.5}}, "task 'a': reruns must be a whole number"),
        ({"a": {"type": "compile", "reruns": True}}, "task 'a': reruns must be a whole number"),
        ({"a": {"type": "compile", "priority": "high"}},
         "task 'a': priority must be a whole number"),
        ({"a": {"type": "compile", "priority": False}},
         "task 'a': priority must be a whole number"),
        ({"a": {"type": "compile", "priority": 10**30}},
         "task 'a': priority must be a whole number from -1000000000 to 1000000000"),
        ({"a": {"type": "compile", "reruns": 10**30}},
         "task 'a': reruns must be a whole number from 0 to 1000000"),
        ({"a\x00b": {"type": "compile"}}, "task 'a\\x00b': a label is 1-200 characters"),
        ({"a": {"type": "comp\x00ile"}}, "task 'a': type 'comp\\x00ile' holds a NUL character"),
        ({"a": {"type": "compile", "routing": "r\x00"}}, "task 'a' routing 'r\\x00' holds a NUL"),
        ({"a": {"type": "compile", "pools": ["e\nast"]}}, "task 'a': pool name 'e\\nast' holds"),
        ({"a": {"type": "compile", "locks": ["x\x7f"]}}, "task 'a': lock 'x\\x7f' holds"),
        ({"x" * 1_000_000: {"type": "compile"}}, "(1000000 characters): a label is 1-200"),
        ({"a": {"type": "compile", "requires": ["y" * 1_000_000]}},
         "task 'a': requires unknown label 'yyyy"),
        ({"a": {"type": "compile", "pools": "east"}},
         "task 'a': pools must be a non-empty list of names"),
        ({"a": {"type": "compile", "pools": []}}, "task 'a': pools must be a non-empty list"),
        ({"a": {"type": "compile", "pools": ["east", ""]}}, "task 'a': pools must be"),
        ({"a": {"type": "compile", "routing": "r" * 100}},
         "task 'a' routing: must be text of at most 99 characters"),
        ({"a": {"type": "compile", "routing": 5}}, "task 'a' routing: must be text"),
        ({"a": {"type": "compile", "convergence": "some"}},
         "task 'a': convergence must be 'all' or 'any'"),
        ({"a": {"type": "compile", "locks": "inv"}},
         "task 'a': locks must be a list of lock names"),
        ({"a": {"type": "compile", "locks": ["inv", ""]}}, "task 'a': locks must be a list"),
        ({"a": {"type": "compile", "timeout": [5]}},
         "task 'a': timeout must be a duration like 90, 90s, 5m, 2h or 1d"),
        ({"a": {"type": "compile", "timeout": True}}, "task 'a': timeout must be a duration"),
        ({"a": {"type": "compile", "timeout": "soon"}},
         "task 'a': timeout: 'soon' is not a duration"),
        ({"a": {"type": "compile", "timeout": -5}},
         "task 'a': timeout: -5 must be a non-negative duration"),
        ({"a": {"type": "compile", "timeout": "0s"}},
         "task 'a': timeout must be more than 0 seconds"),
        ({"a": {"type": "compile", "args": {"x": {"$subs": "jobId:b"}}}, "b": {"type": "test"}},
         "$subs 'jobId:b': expected 'taskId:LABEL'"),
        ({"a": {"type": "compile", "args": {"x": {"$result": "q"}}}},
         "task 'a': $result of unknown label 'q'"),
        ({"a": {"type": "compile"}, "b": {"type": "test", "args": {"x": {"$result": "a"}}}},
         "task 'b': $result of 'a' needs 'a' in its requires"),
    ],
)
def test_invalid_graphs_name_the_culprit(tasks: dict[str, object], message: str) -> None:
    with pytest.raises(GraphError) as caught:
        parse_graph({"tasks": tasks}, known_types=known)
    assert message in str(caught.value)


@pytest.mark.parametrize(("doc", "message"), [
    (["a"], "graph: the document must be a mapping with a 'tasks' key"),
    ({"tasks": {"a": {"type": "compile"}}, "name": "x"},
     "graph: unknown keys ['name'] (expected routing, tasks)"),
    ({"routing": "r" * 100, "tasks": {"a": {"type": "compile"}}},
     "graph routing: must be text of at most 99 characters"),
    ({"routing": ["r"], "tasks": {"a": {"type": "compile"}}},
     "graph routing: must be text of at most 99 characters"),
    ({}, "graph: 'tasks' must map at least one label to a task"),
    ({"tasks": {}}, "graph: 'tasks' must map at least one label to a task"),
    ({"tasks": ["a"]}, "graph: 'tasks' must map at least one label to a task"),
])
def test_an_invalid_document_is_refused_saying_why(doc: object, message: str) -> None:
    with pytest.raises(GraphError) as caught:
        parse_graph(doc, known_types=known)
    assert str(caught.value) == message


def test_a_graph_over_the_task_limit_is_refused() -> None:
    tasks = {f"t{i}": {"type": "compile"} for i in range(3)}
    with pytest.raises(GraphError, match=r"^graph: 3 tasks \(limit 2\)$"):
        parse_graph({"tasks": tasks}, known_types=known, limits=Limits(max_graph_tasks=2))
    assert len(parse_graph({"tasks": tasks}, known_types=known,
                           limits=Limits(max_graph_tasks=3)).tasks) == 3


def test_routing_is_checked_only_when_asked() -> None:
    doc = {"routing": "r" * 120, "tasks": {"a": {"type": "compile"}}}
    assert parse_graph(doc, known_types=known, require_routing_ok=False).routing == "r" * 120
    assert parse_graph({"routing": None, "tasks": {"a": {"type": "compile"}}},
                       known_types=known).routing == ""


def test_added_tasks_may_require_and_refer_to_existing_labels() -> None:
    # add-tasks: "build" is already in the graph, not in this document.
    spec = parse_graph({"tasks": {"test": {
        "type": "test", "requires": ["build"],
        "args": {"id": {"$subs": "taskId:build"}, "out": {"$result": "build"}}}}},
        known_types=known, existing=["build"])
    assert spec.tasks["test"].requires == (Edge("build", "success"),)
    with pytest.raises(GraphError, match="requires unknown label 'build'"):
        parse_graph({"tasks": {"test": {"type": "test", "requires": ["build"]}}},
                    known_types=known, existing=["lint"])


def test_a_child_listed_before_its_parent_is_no_cycle() -> None:
    spec = parse_graph({"tasks": {
        "deploy": {"type": "test", "requires": ["test", "build"]},
        "test": {"type": "test", "requires": ["build"]},
        "build": {"type": "compile"},
    }}, known_types=known)
    assert list(spec.tasks) == ["deploy", "test", "build"]
    assert [e.label for e in spec.tasks["deploy"].requires] == ["test", "build"]


def test_a_task_without_options_takes_the_defaults() -> None:
    spec = parse_graph({"tasks": {1: {"type": "compile", "args": None}}}, known_types=known)
    assert spec.tasks["1"] == TaskNode("1", "compile")  # YAML reads `1:` as a number


def test_every_task_option_is_parsed() -> None:
    spec = parse_graph({"tasks": {
        "a": {"type": "compile"},
        "b": {"type": "test", "requires": ["a"], "requires_mode": "all-resolved",
              "reruns": 0, "priority": -3, "pools": ["east", "west"], "routing": "eu",
              "convergence": "any", "locks": ["inv:{n}:shared"], "timeout": "2m",
              "args": {"n": 1}},
        "c": {"type": "test", "requires": ["a"], "requires_mode": "all-completed",
              "routing": None, "locks": None, "pools": None, "timeout": 30},
        "d": {"type": "test", "requires_mode": "all-resolved"},
    }}, known_types=known)
    assert spec.tasks["b"] == TaskNode(
        "b", "test", {"n": 1}, (Edge("a", "always"),), 0, -3, ("east", "west"), "eu", "any",
        ("inv:{n}:shared",), 120.0, '{"n":1}')
    assert spec.tasks["c"] == TaskNode("c", "test", {}, (Edge("a", "success"),), timeout=30.0)
    assert spec.tasks["d"].requires == ()


def test_a_requires_entry_may_set_its_own_condition_over_the_mode() -> None:
    spec = parse_graph({"tasks": {
        "a": {"type": "compile"}, "b": {"type": "compile"},
        "c": {"type": "test", "requires_mode": "all-resolved",
              "requires": ["a", {"label": "b", "on": "failure"}]},
    }}, known_types=known)
    assert spec.tasks["c"].requires == (Edge("a", "always"), Edge("b", "failure"))


_DAG_EDGES = st.dictionaries(st.sampled_from("abcdefg"),
                             st.lists(st.sampled_from("abcdefgxy"), max_size=4, unique=True),
                             min_size=1, max_size=7)


@given(_DAG_EDGES)
def test_find_cycle_finds_a_real_cycle_exactly_when_there_is_one(
        requires: dict[str, list[str]]) -> None:
    # Labels x and y are outside the graph (existing tasks): they cannot close a loop.
    cycle = find_cycle(requires)
    sorter = TopologicalSorter({k: [p for p in v if p in requires] for k, v in requires.items()})
    try:
        sorter.prepare()
    except CycleError:
        assert cycle is not None
    else:
        assert cycle is None
        return
    assert cycle[0] == cycle[-1] and len(set(cycle)) == len(cycle) - 1
    for child, parent in itertools.pairwise(cycle):
        assert child in requires[parent]  # each label requires the one before it


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
    with pytest.raises(GraphError, match="cycle") as caught:
        parse_graph({"tasks": tasks}, known_types=known)
    # The whole cycle would be a 700 kB line: its ends are enough to find it.
    assert str(caught.value).startswith("graph: cycle of 100000 tasks, ")
    assert " -> … -> " in str(caught.value) and len(str(caught.value)) < 200


def test_error_lines_quote_at_most_a_short_piece_of_a_value() -> None:
    with pytest.raises(GraphError) as caught:
        parse_graph({"tasks": {"x" * 1_000_000: {"type": "compile"}}}, known_types=known)
    assert len(str(caught.value)) < 200
    with pytest.raises(GraphError) as caught:
        parse_graph({"tasks": {"a": {"type": "compile", "requires": ["y" * 10**6]}}},
                    known_types=known)
    assert len(str(caught.value)) < 200


def test_substitutions() -> None:
    args = {"id": {"$subs": "taskId:build"}, "deep": [{"r": {"$result": "build"}}], "k": 1}
    assert references(args) == {"build"}
    with_ids = substitute_ids(args, {"build": 42})
    assert with_ids["id"] == 42 and with_ids["deep"][0]["r"] == {"$result": "build"}
    done = substitute_results(with_ids, {"build": {"artifact": "x.tar"}})
    assert done == {"id": 42, "deep": [{"r": {"artifact": "x.tar"}}], "k": 1}
    assert substitute_results({"r": {"$result": "b"}}, {"b": None}) == {"r": None}


def test_only_a_mapping_with_the_marker_alone_is_a_marker() -> None:
    args = {"a": {"$result": "build"}, "b": [{"$result": "test"}, {"$result": 3}],
            "c": {"$result": "lint", "keep": True}, "d": {"$subs": "taskId:build", "x": 1}}
    assert result_references(args) == {"build", "test"}
    assert references(args) == set()
    assert substitute_ids(args, {}) == args
    assert substitute_results(args, {"build": 1, "test": [2], "lint": 3}) == {
        "a": 1, "b": [[2], {"$result": 3}], "c": {"$result": "lint", "keep": True},
        "d": {"$subs": "taskId:build", "x": 1}}
    # A result not there yet (the parent has not ended) keeps its marker.
    assert substitute_results({"a": {"$result": "build"}}, {}) == {"a": {"$result": "build"}}


@pytest.mark.parametrize("target", ["build", "taskid:build", 5])
def test_a_subs_marker_must_name_a_task_id(target: object) -> None:
    with pytest.raises(SubstitutionError) as caught:
        references({"x": [{"$subs": target}]})
    assert str(caught.value) == f"$subs {target!r}: expected 'taskId:LABEL'"


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


# Any text a label may hold: no dots, no control characters, no lone surrogates.
_LABELS = st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1,
                  max_size=12).filter(lambda s: "." not in s)


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
