"""``taskyard schedule …`` through click, on both stores; the humanizer."""

from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner

from taskyard.cli.schedules import format_duration, humanize, schedule_group
from taskyard.core.durations import Interval
from taskyard.store import Store
from taskyard.store.records import TaskTypeSpec


@click.group()
@click.option("--db")
def root(db: str | None) -> None:
    """Stands in for cli/main.py: a root group with --db."""


root.add_command(schedule_group)


@pytest.fixture
def cli(store: Store, db_url: str):  # type: ignore[no-untyped-def]
    store.put_task_type(TaskTypeSpec("sync", "shell:true"))
    store.put_task_type(TaskTypeSpec("load-git", "shell:true", backoff_factor=2.0,
                                     interval=Interval(86400, 43200, 64 * 86400)))
    runner = CliRunner()

    def run(*args: str):  # type: ignore[no-untyped-def]
        return runner.invoke(root, ["--db", db_url, "schedule", *args])

    return run


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.4, "now"), (-0.4, "now"), (5, "in 5 seconds"), (1, "in a second"), (61, "in a minute"),
     (4 * 3600 + 100, "in 4 hours"), (3600, "in an hour"), (-15 * 86400, "15 days ago"),
     (31 * 86400, "in a month"), (-400 * 86400, "a year ago"), (90 * 86400, "in 3 months")],
)
def test_humanize(seconds, text):
    assert humanize(seconds) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(None, "-"), (30, "30s"), (0.5, "0.5s"), (300, "5m"), (7200, "2h"), (5400, "1h30m"),
     (86400, "1d"), (86400 * 1.5, "1d12h"), (90061, "1d1h")],
)
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


def test_add_list_json_pause_resume_delete(cli) -> None:  # type: ignore[no-untyped-def]
    out = cli("add", "nightly", "sync", "--cron", "0 3 * * *", "--timezone", "Europe/Paris",
              "--args", '{"project_id": 1}', "--priority", "2", "--paused")
    assert out.exit_code == 0, out.output
    assert out.output.startswith("schedule nightly: cron 0 3 * * * (Europe/Paris)")
    assert cli("add", "tick", "sync", "--every", "5m", "--catchup", "none").exit_code == 0
    out = cli("add", "git", "load-git", "--json")
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["current_interval"] == 86400
    out = cli("list")
    assert out.exit_code == 0
    lines = out.output.splitlines()
    assert lines[0].split()[:3] == ["NAME", "TYPE", "NEXT"]
    assert any("adaptive 1d" in line for line in lines)
    assert any("every 5m" in line and "in " in line for line in lines)
    docs = json.loads(cli("list", "--json").output)
    assert [d["name"] for d in docs] == ["git", "nightly", "tick"]
    for d in docs:
        assert {"name", "type", "next_run", "interval", "cron", "paused", "timezone", "args",
                "last_run_at", "last_outcome", "current_interval"} <= set(d)
    assert docs[1]["paused"] is True and docs[1]["args"] == {"project_id": 1}
    assert cli("resume", "nightly").output == "schedule nightly: resumed\n"
    assert cli("pause", "tick").output == "schedule tick: paused\n"
    assert json.loads(cli("show", "tick", "--json").output)[0]["paused"] is True
    assert cli("delete", "tick").exit_code == 0
    assert [d["name"] for d in json.loads(cli("list", "--json").output)] == ["git", "nightly"]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["add", "x", "sync", "--every", "5m", "--cron", "* * * * *"], 2, "not both"),
        (["add", "x", "sync", "--args", "[1]"], 2, "must be a JSON object"),
        (["add", "x", "sync", "--args", "{oops"], 2, "not JSON"),
        (["add", "x", "sync", "--catchup", "sometimes"], 2, "sometimes"),
        (["add", "x", "sync"], 2, "has no adaptive interval"),
        (["add", "x", "sync", "--cron", "61 * * * *"], 2, "minute field: 61 is out of range"),
        (["add", "x", "sync", "--cron", "0 3 * * *", "--timezone", "Nowhere/Land"], 2,
         "unknown time zone"),
        (["pause", "ghost"], 1, "no schedule 'ghost'"),
        (["resume", "ghost"], 1, "no schedule 'ghost'"),
        (["delete", "ghost"], 1, "no schedule 'ghost'"),
        (["show", "ghost"], 1, "no schedule 'ghost'"),
    ],
)
def test_errors_are_one_line_with_the_contract_exit_code(cli, args, code, message):
    out = cli(*args)
    assert out.exit_code == code
    assert message in out.output


def test_duplicate_is_a_failed_operation(cli) -> None:  # type: ignore[no-untyped-def]
    assert cli("add", "x", "sync", "--every", "1h").exit_code == 0
    out = cli("add", "x", "sync", "--every", "1h")
    assert (out.exit_code, out.output) == (1, "error: schedule 'x' already exists\n")
    assert cli("add", "x", "sync", "--every", "2h", "--replace").exit_code == 0


def test_empty_list(cli) -> None:  # type: ignore[no-untyped-def]
    assert cli("list").output == "no schedules\n"
    assert cli("list", "--json").output.strip() == "[]"
