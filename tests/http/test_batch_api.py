"""Batch submit (issue 36): ``POST /api/v1/jobs/batch``, ``Yard.submit_many(jobs)`` and
``taskyard submit --from-file``, one path: up to 1,000 jobs, all or nothing, an error
naming the first bad job's index and field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from http_helpers import Api, taskyard

from taskyard.model.errors import InvalidInput


def _types(api: Api) -> None:
    for name in ("a", "b"):
        assert api.post("/api/v1/task-types", json={
            "name": name, "handler": "shell:echo {x}"}).status_code == 201


def _count(api: Api) -> int:
    return len(api.get("/api/v1/jobs", params={"limit": 1000}).json()["items"])


def test_a_batch_is_submitted_in_order(api: Api) -> None:
    _types(api)
    jobs = [{"type": "a", "args": {"x": 1}, "pools": ["nowhere"]},
            {"type": "b", "args": {"x": "two"}, "priority": 5, "run_after": "1h"},
            {"type": "a", "args": {"x": 3}, "timeout": "5m", "unique_key": "k"},
            {"type": "a", "args": {"x": 4}, "unique_key": "k"}]
    answer = api.post("/api/v1/jobs/batch", json={"jobs": jobs})
    assert answer.status_code == 201, answer.text
    items = answer.json()["items"]
    assert [(j["type"], j["args"]) for j in items[:3]] == [
        (j["type"], j["args"]) for j in jobs[:3]]
    assert items[0]["pools"] == ["nowhere"] and items[1]["priority"] == 5
    assert items[1]["run_after"] is not None and items[2]["timeout"] == 300
    assert items[0]["id"] < items[1]["id"] < items[2]["id"]
    assert items[3]["id"] == items[2]["id"]  # the key was held: the holder, as for one
    assert _count(api) == 3


@pytest.mark.parametrize(("bad", "status", "words"), [
    ({"type": "nope"}, 422, "job 2: type: unknown task type 'nope'"),
    ({"type": "a", "args": {"x": 1}, "run_after": "soon"}, 422, "job 2: run_after"),
    ({"type": "a", "args": {"x": 1}, "priority": "high"}, 400, "job 2: priority"),
    ({"type": "a", "args": {"x": 1}, "colour": "red"}, 400, "job 2: colour"),
    ({"type": "a"}, 422, "job 2: shell handler: the job's args have no 'x'"),
    ({"type": "a", "args": {"x": "\u0000"}}, 422, "job 2: args holds a NUL character"),
    ({"args": {"x": 1}}, 400, "job 2: type"),
])
def test_a_bad_job_refuses_the_whole_batch_naming_it(api: Api, bad: dict[str, object],
                                                     status: int, words: str) -> None:
    _types(api)
    good = {"type": "a", "args": {"x": 1}}
    answer = api.post("/api/v1/jobs/batch", json={"jobs": [good, good, bad, good]})
    assert answer.status_code == status, answer.text
    assert answer.json()["error"]["message"].startswith(words), answer.text
    assert _count(api) == 0


def test_a_batch_holds_1_to_1000_jobs(api: Api) -> None:
    _types(api)
    job = {"type": "a", "args": {"x": 1}}
    assert api.post("/api/v1/jobs/batch", json={"jobs": [job] * 1001}).status_code == 400
    assert api.post("/api/v1/jobs/batch", json={"jobs": []}).status_code == 400
    full = api.post("/api/v1/jobs/batch", json={"jobs": [job] * 1000})
    assert full.status_code == 201 and len(full.json()["items"]) == 1000
    with api.client("read") as reader:
        assert reader.post("/api/v1/jobs/batch", json={"jobs": [job]}).status_code == 403


def test_python_submit_many_takes_jobs(api: Api) -> None:
    _types(api)
    ids = api.yard.submit_many([{"type": "a", "args": {"x": 1}},
                                {"type": "b", "args": {"x": 2}, "priority": 3}])
    assert [api.yard.get_job(i).type for i in ids] == ["a", "b"]
    with pytest.raises(InvalidInput, match=r"^job 1: run_after: .* out of range"):
        api.yard.submit_many([{"type": "a", "args": {"x": 1}},
                              {"type": "a", "args": {"x": 1}, "run_after": 1e308}])
    with pytest.raises(InvalidInput, match="give a type and its args"):
        api.yard.submit_many([{"type": "a"}], priority=3)
    assert _count(api) == 2


def test_submit_from_file(api: Api, tmp_path: Path) -> None:
    _types(api)
    lines = [json.dumps({"type": "a" if i % 2 else "b", "args": {"x": i}}) for i in range(2500)]
    path = tmp_path / "jobs.jsonl"
    path.write_text("\n".join(lines[:1200]) + "\n\n" + "\n".join(lines[1200:]) + "\n")
    done = taskyard(api.db_url, "submit", "--from-file", str(path))
    assert done.returncode == 0, done.stderr
    ids = [int(x) for x in done.stdout.split()]
    assert len(ids) == 2500 and ids == sorted(ids)
    last = api.get(f"/api/v1/jobs/{ids[-1]}").json()
    assert last["args"] == {"x": 2499} and last["type"] == "a"
    # A bad line: named by its number; its batch is not submitted.
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "a", "args": {"x": 1}}\n\n{"type": "a", "args": {"x": 1}, '
                   '"run_after": "99999999999d"}\n')
    refused = taskyard(api.db_url, "submit", "--from-file", str(bad))
    assert refused.returncode == 1, refused.stderr
    assert f"{bad} line 3: run_after" in refused.stderr and refused.stdout == ""
    malformed = tmp_path / "malformed.jsonl"
    malformed.write_text('{"type": "a"}\n[1]\n')
    assert taskyard(api.db_url, "submit", "--from-file", str(malformed)).returncode == 2
    assert taskyard(api.db_url, "submit", "a", "--from-file", str(path)).returncode == 2
    piped = subprocess.run([sys.executable, "-m", "taskyard", "--db", api.db_url, "submit",
                            "--from-file", "-"], input='{"type": "b", "args": {"x": 0}}\n',
                           capture_output=True, text=True, check=False)
    assert piped.returncode == 0 and len(piped.stdout.split()) == 1
    assert _count(api) == 1000  # a page: 2,501 jobs are in
    assert api.get("/api/v1/jobs", params={"limit": 1000, "type": "a"}).json()["next"]
