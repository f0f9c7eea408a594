"""``taskyard schedule backfill`` and the overlap / catch-up window options through the
real command, on both stores: ticks oldest first, ids one a line, ``--dry-run``, once
per tick, ``--max-active``, ``--cancel``; ``TASKYARD_LOGICAL_TIME`` in the handler's
environment, for a backfill's jobs and for the schedule's own."""

from __future__ import annotations

import textwrap

from acceptance_cli import ISO_UTC, Cli

STAMP = "shell:printf %s \"$TASKYARD_LOGICAL_TIME\" > $TASKYARD_RESULT"


def test_backfill_through_the_cli(cli: Cli) -> None:
    cli("init").ok()
    cli("task-type", "add", "stamp", "--handler", STAMP).ok()
    cli("schedule", "add", "hourly", "stamp", "--cron", "0 * * * *", "--overlap", "skip",
        "--catchup-window", "1d").ok()
    shown = cli("schedule", "show", "hourly", "--json").json()
    assert (shown["overlap"], shown["catchup_window"]) == ("skip", 86400.0)
    ticks = cli("schedule", "backfill", "hourly", "--from", "6h", "--to", "now",
                "--dry-run").ok().out.split()
    assert len(ticks) in (6, 7) and all(ISO_UTC.match(t) for t in ticks)
    assert ticks == sorted(ticks)
    assert cli("jobs", "list", "--json").json() == []  # a dry run writes nothing
    ids = cli("schedule", "backfill", "hourly", "--from", "6h", "--max-active", "2").ok()
    created = [int(i) for i in ids.out.split()]
    assert len(created) == len(ticks) and created == sorted(created)
    assert cli("schedule", "backfill", "hourly", "--from", "6h").ok().out == ""  # once
    states = [j["state"] for j in cli("jobs", "list", "--json").json()]
    assert states.count("pending") == 2  # --max-active 2: the rest wait their turn
    cli("up", "--workers", "1", "--until-idle", timeout=180).ok()
    jobs = sorted(cli("jobs", "list", "--json").json(), key=lambda j: j["id"])
    assert [j["result"] for j in jobs] == ticks  # TASKYARD_LOGICAL_TIME, as the tick
    assert [j["logical_time"] for j in jobs] == ticks
    # --json, then the cancel of what remains.
    more = cli("schedule", "backfill", "hourly", "--from", "12h", "--to", "6h", "--json").json()
    assert len(more["jobs"]) == 6 and more["existing"] == 0 and more["graph_id"]
    assert cli("schedule", "backfill", "hourly", "--cancel").ok().out == "6\n"
    line = cli("schedule", "backfill", "hourly").one_line_error(2)
    assert "--from" in line
    assert "in the future" in cli("schedule", "backfill", "hourly", "--from", "1h", "--to",
                                  "2999-01-01T00:00:00Z").one_line_error(1)
    assert "no schedule 'nope'" in cli("schedule", "backfill", "nope", "--from",
                                       "1h").one_line_error(1)


def test_a_schedules_own_job_knows_its_tick_and_apply_takes_the_options(cli: Cli) -> None:
    cli("init").ok()
    (cli.cwd / "deploy.yaml").write_text(textwrap.dedent(f"""
        task_types:
          stamp: {{handler: '{STAMP}'}}
        schedules:
          often: {{type: stamp, every: 1h, overlap: buffer-one, catchup: all,
                   catchup_window: 2h}}
    """))
    cli("apply", "deploy.yaml").ok()
    shown = cli("schedule", "show", "often", "--json").json()
    assert (shown["overlap"], shown["catchup"], shown["catchup_window"]) == (
        "buffer-one", "all", 7200.0)
    cli("up", "--workers", "1", "--until-idle", timeout=180).ok()
    (job,) = cli("jobs", "list", "--json").json()
    assert job["result"] == job["logical_time"] and ISO_UTC.match(job["result"])
    assert "overlap" in cli("schedule", "add", "x", "stamp", "--every", "1m", "--overlap",
                            "later").one_line_error(2)
