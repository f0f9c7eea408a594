"""``taskyard schedule …`` through the real entry point, on both stores; the humanizer."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from taskyard.cli.main import main
from taskyard.cli.output import humanize
from taskyard.cli.schedules import format_duration
from taskyard.core.durations import Interval
from taskyard.model.records import TaskTypeSpec
from taskyard.store import Store

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(store: Store, db_url: str, capsys: pytest.CaptureFixture[str]) -> Run:
    store.task_types.put(TaskTypeSpec("sync", "shell:true"))
    store.task_types.put(TaskTypeSpec("load-git", "shell:true", backoff_factor=2.0,
                                     interval=Interval(86400, 43200, 64 * 86400)))

    def run(*args: str) -> tuple[int, str, str]:
        with pytest.raises(SystemExit) as done:
            main(["--db", db_url, "schedule", *args])
        out, err = capsys.readouterr()
        return int(done.value.code or 0), out, err

    return run


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.4, "now"), (-0.4, "now"), (5, "in 5 seconds"), (1, "in a second"), (61, "in a minute"),
     (4 * 3600 + 100, "in 4 hours"), (3600, "in an hour"), (-15 * 86400, "15 days ago"),
     (31 * 86400, "in a month"), (-400 * 86400, "a year ago"), (90 * 86400, "in 3 months"),
     (86400 - 1, "in a day"), (44, "in 44 seconds"), (50, "in a minute"),
     (3 * 365 * 86400, "in 3 years")],
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


def test_add_list_json_pause_resume_delete(cli: Run) -> None:
    code, out, err = cli("add", "nightly", "sync", "--cron", "0 3 * * *",
                         "--timezone", "Europe/Paris", "--args", '{"project_id": 1}',
                         "--priority", "2", "--paused")
    assert code == 0, err
    assert out.startswith("schedule nightly: cron 0 3 * * * (Europe/Paris), next run paused")
    assert cli("add", "tick", "sync", "--every", "5m", "--catchup", "none")[0] == 0
    code, out, _ = cli("add", "git", "load-git", "--json")
    assert code == 0 and json.loads(out)["current_interval"] == 86400
    code, out, _ = cli("list")
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["NAME", "TYPE", "NEXT"]
    assert any("adaptive 1d" in line for line in lines)
    assert any("every 5m" in line and "in " in line for line in lines)
    docs = json.loads(cli("list", "--json")[1])
    assert [d["name"] for d in docs] == ["git", "nightly", "tick"]
    for d in docs:
        assert {"name", "type", "next_run", "interval", "cron", "paused", "timezone", "args",
                "last_run_at", "last_outcome", "current_interval"} <= set(d)
    assert docs[1]["paused"] is True and docs[1]["args"] == {"project_id": 1}
    assert cli("resume", "nightly")[1] == "schedule nightly: resumed\n"
    assert cli("pause", "tick")[1] == "schedule tick: paused\n"
    assert json.loads(cli("show", "tick", "--json")[1])["paused"] is True
    assert "every 5m" in cli("show", "tick")[1]
    assert cli("delete", "tick")[0] == 0
    assert [d["name"] for d in json.loads(cli("list", "--json")[1])] == ["git", "nightly"]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["add", "x", "sync", "--every", "5m", "--cron", "* * * * *"], 2, "not both"),
        (["add", "x", "sync", "--args", "[1]"], 2, "must be a JSON object"),
        (["add", "x", "sync", "--args", "{oops"], 2, "not valid JSON"),
        (["add", "x", "sync", "--catchup", "sometimes"], 2, "sometimes"),
        (["add", "x", "sync"], 1, "has no adaptive interval"),
        (["add", "x", "sync", "--cron", "61 * * * *"], 1, "minute field: 61 is out of range"),
        (["add", "x", "sync", "--cron", "0 3 * * *", "--timezone", "Nowhere/Land"], 1,
         "unknown time zone"),
        (["add", "x", "sync", "--every", "soon"], 1, "is not a duration"),
        (["pause", "ghost"], 1, "no schedule 'ghost'"),
        (["resume", "ghost"], 1, "no schedule 'ghost'"),
        (["delete", "ghost"], 1, "no schedule 'ghost'"),
        (["show", "ghost"], 1, "no schedule 'ghost'"),
    ],
)
def test_errors_are_one_line_with_the_contract_exit_code(cli, args, code, message):
    got, out, err = cli(*args)
    assert got == code
    assert message in err and len(err.strip().splitlines()) == 1 and out == ""


def test_duplicate_is_a_failed_operation(cli: Run) -> None:
    assert cli("add", "x", "sync", "--every", "1h")[0] == 0
    code, _, err = cli("add", "x", "sync", "--every", "1h")
    assert (code, err) == (1, "taskyard: error: schedule 'x' already exists\n")
    assert cli("add", "x", "sync", "--every", "2h", "--replace")[0] == 0


def test_empty_list(cli: Run) -> None:
    assert cli("list")[1] == "no schedules\n"
    assert cli("list", "--json")[1].strip() == "[]"
