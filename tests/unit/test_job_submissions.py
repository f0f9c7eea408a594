"""Jobs of a batch (``Yard.submit_many(jobs)``, ``POST /api/v1/jobs/batch``) become the
same submissions as one ``Yard.submit`` each would make."""

from __future__ import annotations

from typing import Any

import pytest

from taskyard.api.submissions import SubmitOptions, job_submissions
from taskyard.model.errors import InvalidInput

NOW = 1_700_000_000.0
OPTIONS: list[dict[str, Any]] = [
    {}, {"priority": 7}, {"run_after": "5m", "pools": ["a", "b"], "locks": ["repo:1"]},
    {"timeout": 30, "unique_key": "k", "unique_for": "1h", "on_duplicate": "reject"},
    {"run_after": 1.8e9, "priority": -3, "timeout": "2h"},
]


def test_each_job_is_submitted_as_alone() -> None:
    jobs = [{"type": f"t{i % 2}", "args": {"i": i}, **OPTIONS[i % len(OPTIONS)]}
            for i in range(12)]
    made = job_submissions(jobs, lambda: NOW)
    for job, sub in zip(jobs, made, strict=True):
        options = {k: v for k, v in job.items() if k not in ("type", "args")}
        (alone,) = SubmitOptions(**options).submissions(job["type"], [job["args"]],
                                                        lambda: NOW)
        assert sub == alone


@pytest.mark.parametrize(("jobs", "message"), [
    ([{"type": "t"}, "x"], "job 1: a job must be an object"),
    ([{"type": "t"}, {"type": "t", "when": 1}], "job 1: unknown fields ['when']"),
    ([{"type": "t"}, {"args": {}}], "job 1: type: a task type name is required"),
    ([{"type": "t"}, {"type": "t\x00"}], "job 1: type 't\\x00' holds a NUL"),
    ([{"type": "t"}, {"type": "t", "args": [1]}], "job 1: args: must be an object"),
    ([{"type": "t", "priority": 1}, {"type": "t", "priority": "1"}], "job 1: priority"),
    ([{"type": "t", "pools": ["a"]}, {"type": "t", "pools": "a"}], "job 1: pools"),
    ([{"type": "t"}, {"type": "t", "run_after": {"at": 1}}], "job 1: run_after: must be"),
    ([{"type": "t"}] * 1001, "jobs: 1001 jobs; a batch holds 1 to 1000"),
])
def test_the_first_bad_job_is_named(jobs: list[Any], message: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        job_submissions(jobs, lambda: NOW)
    assert str(refused.value).startswith(message), str(refused.value)
