"""Retention is on by default (issue 20): ``scheduler`` and ``up`` prune finished work
after 30 days unless told otherwise (``--retain 0`` or ``off`` keeps everything)."""

from __future__ import annotations

import signal
import subprocess
import time

from acceptance_cli import Cli


def _started_line(proc: subprocess.Popen[str]) -> str:
    """The scheduler's start line (it logs it first thing), then stop it."""
    assert proc.stderr is not None
    deadline = time.monotonic() + 120
    line = ""
    while "event=scheduler-started" not in line:
        assert time.monotonic() < deadline, "the scheduler never started"
        line = proc.stderr.readline()
        assert line or proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    return line


def test_scheduler_and_up_retain_30_days_by_default(cli: Cli) -> None:
    cli("init").ok()
    helps = cli.many([["scheduler", "--help"], ["up", "--help"]])
    for result in helps:
        assert "[default: 30d]" in " ".join(result.ok().out.split()), result.out
    assert "retain=30d" in _started_line(cli.popen("scheduler"))
    assert "retain=off" in _started_line(cli.popen("scheduler", "--retain", "off"))
    assert "retain=off" in _started_line(cli.popen("scheduler", "--retain", "0"))
    assert "retain=2h" in _started_line(cli.popen("scheduler", "--retain", "2h"))
    bad = cli("scheduler", "--retain", "soon")
    assert "'soon' is not a duration" in bad.one_line_error(2)


def test_the_scheduler_prunes_what_finished_before_the_cutoff(cli: Cli) -> None:
    cli("task-type", "add", "hi", "--handler", "shell:echo hi").ok()
    job_id = cli("submit", "hi").ok().out.strip()
    cli("up", "--workers", "1", "--until-idle", timeout=240).ok()
    assert cli("job", "show", job_id, "--json").json()["state"] == "succeeded"
    scheduler = cli.popen("scheduler", "--retain", "1s")
    try:
        deadline = time.monotonic() + 120
        while cli("job", "show", job_id).code != 1:  # "no job": pruned
            assert time.monotonic() < deadline, "the job was never pruned"
            assert scheduler.poll() is None, scheduler.communicate()
            time.sleep(0.5)
    finally:
        scheduler.send_signal(signal.SIGTERM)
        _, err = scheduler.communicate(timeout=60)
    assert "event=pruned jobs=1" in err
    assert cli("events", "--json").json() == []  # its events went with it
