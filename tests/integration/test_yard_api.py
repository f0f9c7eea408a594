"""The Python API: Yard, the task_type decorator, submit, wait, explain."""

from __future__ import annotations

import pytest

from conftest import Cluster
from taskyard import InvalidInput, Yard


def test_decorated_functions_become_task_types_and_run(cluster: Cluster) -> None:
    import handlers_decorated

    yard = cluster.yard
    with pytest.raises(InvalidInput, match="module level"):

        @yard.task_type("nested")
        def _nested(text: str) -> str:
            return text

    yard.task_type()(handlers_decorated.shout)
    cluster.add_scheduler()
    cluster.add_worker("w1")
    job_id = yard.submit(handlers_decorated.shout, {"text": "hi"})
    job = yard.wait(job_id, 30)
    assert (job.state, job.result, job.type) == ("succeeded", "HI", "shout")
    spec = yard.store.task_types.get("shout")
    assert spec is not None and spec.handler == "python:handlers_decorated:shout"


def test_decorator_policies_are_stored(db_url: str) -> None:
    import handlers_decorated

    yard = Yard(db_url)
    yard.task_type("multiply", retries=1, timeout=30)(handlers_decorated.multiply)
    yard.init()
    spec = yard.store.task_types.get("multiply")
    assert spec is not None and (spec.retries, spec.timeout) == (1, 30)
    yard.close()


def test_unknown_handler_module_is_refused_and_writes_nothing(db_url: str) -> None:
    yard = Yard(db_url)
    with pytest.raises(InvalidInput, match="module 'no_such_module' cannot be imported"):
        yard.add_task_type("x", "python:no_such_module:run")
    with pytest.raises(InvalidInput, match="has no function 'nope'"):
        yard.add_task_type("y", "python:handlers_for_tests:nope")
    assert yard.store.task_types.list() == []
    with pytest.raises(InvalidInput, match="unknown task type 'x'"):
        yard.submit("x")
    assert yard.jobs() == []
    yard.close()


def test_wait_times_out_and_explain_says_why(db_url: str) -> None:
    yard = Yard(db_url)
    yard.add_task_type("t", "shell:true", pools=["gpu"])
    job_id = yard.submit("t")
    with pytest.raises(TimeoutError):
        yard.wait(job_id, 0.1)
    assert [r.code for r in yard.explain(job_id)] == ["no_worker"]
    yard.close()
