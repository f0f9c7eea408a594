"""The handler child's environment, job after job (worker/child.py:JobEnv): each job's
variables set, and those only some jobs get unset for the jobs that do not have them."""

from __future__ import annotations

import os

import pytest

from taskyard.worker.child import JobEnv


def test_a_variable_of_an_earlier_job_is_unset_for_the_next(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("TASKYARD_LOGICAL_TIME", "TRACEPARENT", "TRACESTATE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("TASKYARD_JOB_ID", "0")
    env = JobEnv()
    env.apply({"TASKYARD_JOB_ID": "1", "TASKYARD_LOGICAL_TIME": "2026-01-01T00:00:00Z",
               "TRACEPARENT": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"})
    assert os.environ["TASKYARD_JOB_ID"] == "1"
    assert os.environ["TASKYARD_LOGICAL_TIME"] == "2026-01-01T00:00:00Z"
    env.apply({"TASKYARD_JOB_ID": "2", "TRACEPARENT": "00-" + "3" * 32 + "-" + "4" * 16 + "-01"})
    assert os.environ["TASKYARD_JOB_ID"] == "2"
    assert "TASKYARD_LOGICAL_TIME" not in os.environ
    assert os.environ["TRACEPARENT"].startswith("00-333")
    env.apply({"TASKYARD_JOB_ID": "3"})
    assert "TRACEPARENT" not in os.environ and os.environ["TASKYARD_JOB_ID"] == "3"


def test_a_variable_the_child_inherited_is_unset_for_a_job_without_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACEPARENT", "00-" + "5" * 32 + "-" + "6" * 16 + "-01")
    monkeypatch.delenv("TRACESTATE", raising=False)
    env = JobEnv()  # the worker's own trace context, inherited when the child started
    env.apply({"TASKYARD_JOB_ID": "1", "TRACESTATE": "k=v"})
    assert "TRACEPARENT" not in os.environ and os.environ["TRACESTATE"] == "k=v"
    env.apply({"TASKYARD_JOB_ID": "2"})
    assert "TRACESTATE" not in os.environ
