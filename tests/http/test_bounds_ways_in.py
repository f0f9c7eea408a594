"""Bounds on durations and times through each way in other than HTTP (issue 36, item 3:
Python, the CLI's options, a YAML file to ``apply``, a graph file), one way a test so
that each is seen on its own: refused naming the field and the range, nothing stored,
every list still readable. Imports only what 7e1cfb7 had too (which took them all)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from http_helpers import Api, taskyard

from taskyard.model.errors import InvalidInput

READS = ("/api/v1/jobs", "/api/v1/schedules", "/api/v1/task-types", "/api/v1/graphs")


def _stored(api: Api) -> list[int]:
    return [len(api.get(path).json()["items"]) for path in READS]


@pytest.fixture
def typed(api: Api) -> Api:
    assert api.post("/api/v1/task-types", json={"name": "t", "handler": "shell:true",
                                                "pools": ["nowhere"]}).status_code == 201
    return api


PYTHON: list[tuple[str, Callable[[Any], Any]]] = [
    ("run_after", lambda yard: yard.submit("t", run_after=1e308)),
    ("run_after", lambda yard: yard.submit("t", run_after="99999999999d")),
    ("timeout", lambda yard: yard.submit("t", timeout="5300w")),
    ("unique_for", lambda yard: yard.submit("t", unique_key="k", unique_for=1e308)),
    ("every", lambda yard: yard.add_schedule("s", "t", every=1e308)),
    ("retry_max_delay", lambda yard: yard.add_task_type("u", "shell:true",
                                                        retry_max_delay=1e308)),
    ("timeout", lambda yard: yard.submit_graph({"tasks": {"a": {"type": "t",
                                                                 "timeout": 1e308}}})),
    ("timeout", lambda yard: yard.apply({"task_types": {"u": {"handler": "shell:true",
                                                              "timeout": "99999999999d"}}})),
]


@pytest.mark.parametrize(("field", "call"), PYTHON, ids=[f"{f}-{i}" for i, (f, _) in
                                                        enumerate(PYTHON)])
def test_python_refuses_out_of_range(typed: Api, field: str,
                                     call: Callable[[Any], Any]) -> None:
    before = _stored(typed)
    with pytest.raises(InvalidInput, match=rf"{field}: .* is out of range"):
        call(typed.yard)
    assert _stored(typed) == before


CLI = [
    ("--run-after", ["submit", "t", "--run-after", "99999999999d"]),
    ("--timeout", ["submit", "t", "--timeout", "5300w"]),
    ("--every", ["schedule", "add", "s", "t", "--every", "99999999999d"]),
    ("--timeout", ["task-type", "add", "u", "--handler", "shell:true", "--timeout", "5300w"]),
    ("--retry-delay", ["task-type", "add", "u", "--handler", "shell:true",
                       "--retry-delay", "99999999999d"]),
]


@pytest.mark.parametrize(("option", "args"), CLI, ids=[" ".join(a[:2]) + o for o, a in CLI])
def test_cli_options_refuse_out_of_range(typed: Api, option: str, args: list[str]) -> None:
    before = _stored(typed)
    done = taskyard(typed.db_url, *args)
    assert done.returncode in (1, 2), (done.stdout, done.stderr)
    assert "out of range" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert _stored(typed) == before


FILES = [
    ("apply", "types.yaml", "task_types:\n  u:\n    handler: 'shell:true'\n"
                            "    retry_max_delay: 1.0e+308\n", "retry_max_delay"),
    ("apply", "schedules.yaml", "schedules:\n  s:\n    type: t\n    every: 99999999999d\n",
     "every"),
    ("graph submit", "graph.json", json.dumps({"tasks": {"a": {"type": "t", "timeout": 1e308},
                                                         "b": {"type": "t"}}}), "timeout"),
]


@pytest.mark.parametrize("case", FILES, ids=[f[1] for f in FILES])
def test_files_refuse_out_of_range(typed: Api, tmp_path: Path,
                                   case: tuple[str, str, str, str]) -> None:
    command, name, text, field = case
    before = _stored(typed)
    path = tmp_path / name
    path.write_text(text)
    done = taskyard(typed.db_url, *command.split(), str(path))
    assert done.returncode in (1, 2), (done.stdout, done.stderr)
    assert field in done.stderr and "out of range" in done.stderr, done.stderr
    assert _stored(typed) == before
    for args in (["jobs", "list", "--json"], ["schedule", "list"], ["graph", "list"]):
        assert taskyard(typed.db_url, *args).returncode == 0, args
