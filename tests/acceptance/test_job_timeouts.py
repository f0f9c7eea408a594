"""Per-job timeouts through the Python API: ``Yard.submit(timeout=...)`` and a graph
task's ``timeout`` take durations as the command line does; bad ones change nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from taskyard.api.yard import Yard
from taskyard.model.errors import InvalidInput


@pytest.fixture
def yard(db_url: str) -> Iterator[Yard]:
    with Yard(db_url) as y:
        y.add_task_type("t", "shell:true", timeout=60)
        yield y


def test_submit_timeout_overrides_the_types(yard: Yard) -> None:
    plain = yard.submit("t")
    as_text = yard.submit("t", timeout="5m")
    as_number = yard.submit("t", timeout=90)
    assert [yard.get_job(j).timeout for j in (plain, as_text, as_number)] == [60, 300, 90]


@pytest.mark.parametrize("bad", ["soon", "5x", 0, "0s", -1, True])
def test_a_bad_submit_timeout_is_refused_and_writes_nothing(yard: Yard, bad: object) -> None:
    with pytest.raises(InvalidInput, match="timeout"):
        yard.submit("t", timeout=bad)  # type: ignore[arg-type]
    assert yard.jobs() == []


def test_graph_task_timeouts_read_durations(yard: Yard) -> None:
    graph_id = yard.submit_graph({"tasks": {
        "a": {"type": "t", "timeout": "2h"},
        "b": {"type": "t", "timeout": 45, "requires": ["a"]},
        "c": {"type": "t", "requires": ["a"]},
    }})
    jobs = {j.label: j.timeout for j in yard.graph(graph_id).jobs}
    assert jobs == {"a": 7200, "b": 45, "c": 60}


@pytest.mark.parametrize("bad", ["soon", "0s", [5], False])
def test_a_bad_graph_timeout_names_the_task(yard: Yard, bad: object) -> None:
    with pytest.raises(InvalidInput, match=r"task 'late'.*timeout"):
        yard.submit_graph({"tasks": {"early": {"type": "t"},
                                     "late": {"type": "t", "timeout": bad}}})
    assert yard.graphs() == [] and yard.jobs() == []
