"""The DESIGN.md contract of the ``taskyard`` command, on both stores, through subprocesses:
command names and options, JSON field names, ISO 8601 UTC times, printed ids, exit codes
0/1/2 with one line on stderr, and a real run under ``taskyard up``."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

from acceptance_cli import ISO_UTC, Cli, Result

JOB_FIELDS = {"id", "type", "state", "attempt", "args", "result", "exit_code", "priority",
              "pools", "worker", "graph_id", "label", "created_at", "started_at",
              "finished_at", "attempts"}
ATTEMPT_FIELDS = {"attempt", "state", "worker", "exit_code", "started_at", "finished_at"}
TASK_TYPE_FIELDS = {"name", "handler", "pools", "cost", "timeout", "retries", "retry_delay"}
SCHEDULE_FIELDS = {"name", "type", "next_run", "interval", "cron", "paused"}
WORKER_FIELDS = {"name", "pools", "capacity", "state"}
GRAPH_FIELDS = {"id", "state", "routing", "jobs"}

TYPES = textwrap.dedent("""
    task_types:
      py: {handler: "python:acc_handlers:add"}
      sh:
        handler: >-
          shell:printf '{"job_id": "%s", "x": %s}' "$TASKYARD_JOB_ID" {x} > "$TASKYARD_RESULT"
      fails: {handler: "shell:echo going down >&2; exit 3"}
      slow: {handler: "shell:sleep 30"}
""")


def apply_types(cli: Cli) -> None:
    path = cli.cwd / "types.yaml"
    path.write_text(TYPES)
    cli("apply", str(path)).ok()


def printed_id(result: Result) -> int:
    """``submit`` and ``graph submit`` print the new id and nothing else."""
    assert result.code == 0, result
    assert re.fullmatch(r"\d+\n", result.out), result
    return int(result.out)


def assert_times(record: dict[str, Any], *names: str) -> None:
    for name in names:
        assert isinstance(record[name], str) and ISO_UTC.match(record[name]), (name, record)


def test_init_twice(cli: Cli, db_url: str, tmp_path: Path) -> None:
    # On SQLite, a file that does not exist yet: the first init creates it.
    url = f"sqlite:///{tmp_path / 'fresh.db'}" if db_url.startswith("sqlite") else db_url
    first = cli("init", db=url).ok()
    second = cli("init", db=url).ok()
    assert "ready" in first.out
    assert second.out == first.out
    assert cli("jobs", "list", "--json", db=url).json() == []


def test_task_type_add_and_list(cli: Cli) -> None:
    added = cli.many([
        ["task-type", "add", "py", "--handler", "python:acc_handlers:add",
         "--pool", "east", "--pool", "default", "--cost", "2", "--timeout", "5m",
         "--retries", "2", "--retry-delay", "10s", "--retry-backoff", "2",
         "--retry-max-delay", "2h", "--interval", "1d,12h,64d", "--backoff-factor", "2",
         "--max-queue-length", "3", "--lock", "project:{project_id}", "--lock", "cache:shared",
         "--no-simultaneous"],
        ["task-type", "add", "sh", "--handler", "shell:echo {x}"],
        # Rejected, and nothing written: a handler that does not import, or of no known kind.
        ["task-type", "add", "bad1", "--handler", "python:acc_handlers:nope"],
        ["task-type", "add", "bad2", "--handler", "ftp:somewhere"],
    ])
    for result in added[:2]:
        assert result.ok().out.startswith("task type ")
    assert "nope" in added[2].one_line_error(1)
    assert "ftp:somewhere" in added[3].one_line_error(1)

    listed = {t["name"]: t for t in cli("task-type", "list", "--json").json()}
    assert set(listed) == {"py", "sh"}
    py, sh = listed["py"], listed["sh"]
    assert set(py) >= TASK_TYPE_FIELDS
    assert py["handler"] == "python:acc_handlers:add"
    assert (py["pools"], py["cost"], py["timeout"]) == (["east", "default"], 2, 300)
    assert (py["retries"], py["retry_delay"], py["retry_backoff"]) == (2, 10, 2)
    assert py["retry_max_delay"] == 7200
    assert py["interval"] == {"default": 86400, "min": 43200, "max": 64 * 86400}
    assert (py["backoff_factor"], py["max_queue_length"]) == (2, 3)
    assert py["locks"] == ["project:{project_id}", "cache:shared"]
    assert py["simultaneous"] is False
    assert sh["handler"] == "shell:echo {x}"
    assert (sh["pools"], sh["cost"], sh["timeout"], sh["retries"]) == (["default"], 1, None, 0)
    assert (sh["retry_delay"], sh["retry_max_delay"], sh["simultaneous"]) == (0, 3600, True)


def test_submit_run_and_show(cli: Cli) -> None:
    apply_types(cli)
    submitted = cli.many([
        ["submit", "py", "--args", '{"a": 2, "b": 3}', "--priority", "5"],
        ["submit", "sh", "--args", '{"x": 7}', "--pool", "default"],
        ["submit", "fails"],
        ["submit", "slow", "--timeout", "1s"],
    ])
    py, sh, fails, slow = (printed_id(r) for r in submitted)

    queued = cli("jobs", "list", "--json").json()
    assert {j["id"] for j in queued} == {py, sh, fails, slow}
    for job in queued:
        assert set(job) >= JOB_FIELDS, job
        assert job["state"] == "pending"
        assert_times(job, "created_at")
    by_id = {j["id"]: j for j in queued}
    assert by_id[py]["priority"] == 5 and by_id[py]["args"] == {"a": 2, "b": 3}
    assert by_id[slow]["timeout"] == 1

    up = cli("up", "--workers", "1", "--until-idle", timeout=120)
    assert up.code == 0, up

    shown = cli.many([["job", "show", str(i), "--json"] for i in (py, sh, fails, slow)]
                     + [["workers", "list", "--all", "--json"],
                        ["jobs", "list", "--state", "succeeded", "--json"]])
    py_job, sh_job, fails_job, slow_job = (r.json() for r in shown[:4])
    for job in (py_job, sh_job, fails_job, slow_job):
        assert set(job) >= JOB_FIELDS, job
        assert_times(job, "created_at", "started_at", "finished_at")
        assert job["graph_id"] is None and job["label"] is None
        assert job["attempt"] == 1 and len(job["attempts"]) == 1
        attempt = job["attempts"][0]
        assert set(attempt) >= ATTEMPT_FIELDS, attempt
        assert attempt["attempt"] == 1
        assert_times(attempt, "started_at", "finished_at")
        assert isinstance(job["worker"], str) and attempt["worker"] == job["worker"]
        assert attempt["exit_code"] == job["exit_code"]
    # TASKYARD_JOB_ID, seen by both kinds of handler, is the id that submit printed.
    assert py_job["state"] == "succeeded"
    assert py_job["result"] == {"sum": 5, "job_id": str(py)}
    assert sh_job["state"] == "succeeded" and sh_job["exit_code"] == 0
    assert sh_job["result"] == {"job_id": str(sh), "x": 7}
    assert (fails_job["state"], fails_job["exit_code"]) == ("failed", 3)
    # The per-job timeout: the handler is stopped and the job fails with exit code 130.
    assert (slow_job["state"], slow_job["exit_code"]) == ("failed", 130)

    workers = shown[4].json()
    assert workers
    for worker in workers:
        assert set(worker) >= WORKER_FIELDS, worker
        assert worker["pools"] == ["default"] and worker["state"] == "stopped"
    assert {j["id"] for j in shown[5].json()} == {py, sh}


GRAPH = """
routing: nightly
tasks:
  build:
    type: sh
    args: {x: 1}
    timeout: 5m
  test:
    type: py
    requires: [build]
    args:
      a: 1
      b: {$subs: "taskId:build"}
"""


def test_graph_submit_show_and_validation(cli: Cli) -> None:
    apply_types(cli)
    files = {
        "good.yaml": GRAPH,
        "unknown-label.yaml": "tasks:\n  test: {type: py, requires: [build]}\n",
        "bad-timeout.yaml": "tasks:\n  build: {type: sh, timeout: soon}\n",
        "cycle.yaml": "tasks:\n  a: {type: sh, requires: [b]}\n  b: {type: sh, requires: [a]}\n",
        "unknown-type.yaml": "tasks:\n  build: {type: compile}\n",
    }
    for name, text in files.items():
        (cli.cwd / name).write_text(text)
    results = cli.many([["graph", "submit", str(cli.cwd / name)] for name in files]
                       + [["graph", "show", "424242", "--json"]])
    graph_id = printed_id(results[0])
    # Every validation failure is exit 1, naming the culprit.
    unknown, timeout, cycle, unknown_type, missing = (r.one_line_error(1) for r in results[1:])
    assert "'build'" in unknown and "'test'" in unknown
    assert "task 'build'" in timeout and "soon" in timeout
    assert "cycle" in cycle
    assert "compile" in unknown_type
    assert "424242" in missing

    graph = cli("graph", "show", str(graph_id), "--json").json()
    assert set(graph) >= GRAPH_FIELDS
    assert (graph["id"], graph["state"], graph["routing"]) == (graph_id, "running", "nightly")
    jobs = {j["label"]: j for j in graph["jobs"]}
    assert set(jobs) == {"build", "test"}
    for job in jobs.values():
        assert set(job) >= JOB_FIELDS, job
        assert job["graph_id"] == graph_id
    # A graph task's timeout reads durations like the command line's.
    assert jobs["build"]["timeout"] == 300
    assert jobs["test"]["args"] == {"a": 1, "b": jobs["build"]["id"]}
    assert jobs["test"]["state"] == "waiting"
    # Nothing of the rejected graphs was written.
    assert [g["id"] for g in cli("graph", "list", "--json").json()] == [graph_id]


def test_schedule_list(cli: Cli) -> None:
    apply_types(cli)
    added = cli.many([
        ["schedule", "add", "nightly", "sh", "--cron", "0 3 * * *", "--args", '{"x": 1}'],
        ["schedule", "add", "often", "sh", "--every", "5m", "--paused", "--args", "{\"x\": 2}"],
        # The shell command needs {x}: a schedule that cannot give it is refused now,
        # not at each of its runs.
        ["schedule", "add", "broken", "sh", "--every", "5m"],
    ])
    added[0].ok()
    added[1].ok()
    assert "the job's args have no 'x'" in added[2].one_line_error(1)
    schedules = {s["name"]: s for s in cli("schedule", "list", "--json").json()}
    assert set(schedules) == {"nightly", "often"}
    for schedule in schedules.values():
        assert set(schedule) >= SCHEDULE_FIELDS, schedule
        assert schedule["type"] == "sh"
        assert_times(schedule, "next_run")
    nightly, often = schedules["nightly"], schedules["often"]
    assert (nightly["cron"], nightly["interval"], nightly["paused"]) == ("0 3 * * *", None, False)
    assert nightly["next_run"].split("T")[1].startswith("03:00:00")
    assert (often["cron"], often["interval"], often["paused"]) == (None, 300, True)


def test_failed_operations_exit_1(cli: Cli) -> None:
    apply_types(cli)
    cases: list[tuple[list[str], str]] = [
        (["submit", "nosuch"], "nosuch"),
        (["job", "show", "424242"], "424242"),
        (["job", "show", "424242", "--json"], "424242"),
        (["job", "cancel", "424242"], "424242"),
        (["schedule", "add", "x", "nosuch", "--every", "5m"], "nosuch"),
    ]
    results = cli.many([args for args, _ in cases])
    for (_, culprit), result in zip(cases, results, strict=True):
        assert culprit in result.one_line_error(1), result
    # None of them wrote anything.
    empty = cli.many([["jobs", "list", "--json"], ["schedule", "list", "--json"]])
    assert [r.json() for r in empty] == [[], []]


def test_a_graph_file_of_aliases_of_aliases_is_refused_not_expanded(
        cli: Cli, tmp_path: Path) -> None:
    """YAML aliases can make a 1 kB file stand for 10^9 values: refused by the args
    limits, without walking or encoding them all."""
    apply_types(cli)
    lines = ["tasks:", "  a:", "    type: sh", "    args:",
             "      l0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    lines += [f"      l{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lines) + "\n")
    error = cli("graph", "submit", str(path)).one_line_error(1)
    assert "task 'a': args hold more than" in error
    assert cli("graph", "list", "--json").json() == []


def test_bad_usage_exits_2_before_touching_the_database(tmp_path: Path) -> None:
    """Usage errors do not depend on the store: checked once, against a SQLite file that
    must not come into being."""
    path = tmp_path / "never.db"
    cli = Cli(f"sqlite:///{path}", tmp_path)
    graphs = {
        "dup-label.yaml": "tasks:\n  build: {type: sh}\n  other: {type: sh}\n"
                          "  build: {type: py}\n",
        "dup-label.json": '{"tasks": {"build": {"type": "sh"}, "build": {"type": "py"}}}',
        "dup-key.yaml": "tasks:\n  build:\n    type: sh\n    type: py\n",
        "broken.yaml": "tasks: [\n",
    }
    for name, text in graphs.items():
        (tmp_path / name).write_text(text)
    cases: list[tuple[list[str], int, str]] = [
        (["submit", "sh", "--args", "{bad"], 2, "--args"),
        (["submit", "sh", "--args", "[1, 2]"], 2, "--args"),
        (["submit", "sh", "--timeout", "soon"], 2, "--timeout"),
        (["submit", "sh", "--run-after", "whenever"], 2, "--run-after"),
        (["submit"], 2, "TYPE"),
        (["job", "show", "abc"], 2, "abc"),
        (["frobnicate"], 2, "frobnicate"),
        (["jobs", "list", "--frobnicate"], 2, "--frobnicate"),
        (["jobs", "list", "--state", "nonsense"], 2, "nonsense"),
        (["task-type", "add", "t", "--handler", "shell:true", "--timeout", "5x"], 2, "--timeout"),
        (["task-type", "add", "t", "--handler", "shell:true", "--retry-max-delay", "soon"], 2,
         "--retry-max-delay"),
        (["schedule", "add", "x", "sh", "--every", "5m", "--cron", "0 3 * * *"], 2, "--cron"),
        # A duplicate label or key is a validation error (exit 1) found while reading the
        # file, so before the database is opened; an unreadable file is a bad argument.
        (["graph", "submit", str(tmp_path / "dup-label.yaml")], 1, "duplicate label 'build'"),
        (["graph", "submit", str(tmp_path / "dup-label.json")], 1, "duplicate label 'build'"),
        (["graph", "submit", str(tmp_path / "dup-key.yaml")], 1,
         "duplicate key 'type' in task 'build'"),
        (["graph", "submit", str(tmp_path / "broken.yaml")], 2, "broken.yaml"),
        (["graph", "submit", str(tmp_path / "missing.yaml")], 2, "missing.yaml"),
    ]
    results = cli.many([args for args, _, _ in cases])
    for (_, code, culprit), result in zip(cases, results, strict=True):
        assert culprit in result.one_line_error(code), result
    assert "line 4" in results[12].err
    assert not path.exists()


def test_help_needs_no_database(tmp_path: Path) -> None:
    cli = Cli("foo://nowhere", tmp_path)
    results = cli.many([["--help"], ["submit", "--help"], ["task-type", "add", "--help"]])
    for result in results:
        assert result.ok().out.startswith("Usage: ")
    assert "--timeout" in results[1].out
    assert "--retry-max-delay" in results[2].out


def test_events_filters_see_every_event_not_only_the_first_page(cli: Cli, db_url: str) -> None:
    from taskyard.api.yard import Yard

    with Yard(db_url, inline_cycle=False) as yard:
        yard.add_task_type("noop", "shell:true")
        yard.submit_many("noop", [{}] * 1200)  # 1,200 job-pending events first
        graph_id = yard.submit_graph({"routing": "late", "tasks": {"a": {"type": "noop"}}})
    found = cli("events", "--topic", "graph-running", "--json").ok().json()
    assert [e["payload"]["graph_id"] for e in found] == [graph_id]
    matched = cli("events", "--pattern", f"taskyard.{graph_id}.#", "--limit", "1",
                  "--json").ok().json()
    assert len(matched) == 1 and matched[0]["topic"] == "graph-running"
