"""``taskyard job logs ID [--attempt N] [--follow]``: the stdout and stderr workers keep
per attempt (the newest 1 MiB of each by default), written while it runs."""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING

import click

from taskyard.cli.jobs import job
from taskyard.cli.main import State
from taskyard.core.states import TERMINAL

if TYPE_CHECKING:
    from taskyard.api.http.views import Logs
    from taskyard.api.yard import Yard

POLL = 0.2
"""Seconds between two looks at a followed job's output."""


def _print(logs: Logs, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(logs.to_json()))
        return
    data = logs.to_json()
    # stdout to stdout and stderr to stderr, as the handler wrote them.
    if data["stdout"]:
        click.echo(data["stdout"], nl=not data["stdout"].endswith("\n"))
    if data["stderr"]:
        click.echo(data["stderr"], nl=not data["stderr"].endswith("\n"), err=True)


@job.command("logs")
@click.argument("job_id", type=int)
@click.option("--attempt", type=click.IntRange(min=1), help="Attempt number [default: latest].")
@click.option("--follow", "-f", is_flag=True,
              help="Wait for the job to start, print its output as it is written, until "
                   "the attempt ends (without --attempt: the job's later attempts too).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per attempt.")
@click.pass_obj
def logs(state: State, job_id: int, attempt: int | None, follow: bool, as_json: bool) -> None:
    """An attempt's stdout (to stdout) and stderr (to stderr), as written so far."""
    # Imported here: `taskyard --help` lists this command without the database stack.
    from taskyard.api.http.views import job_logs  # noqa: PLC0415 - start-up time

    yard = state.yard
    if not follow:
        _print(job_logs(yard, job_id, attempt), as_json)
        return
    if as_json:
        _follow_json(yard, job_id, attempt)
        return
    from taskyard.api.log_follow import LogFollower  # noqa: PLC0415 - start-up time

    follower = LogFollower(yard.store, job_id, attempt=attempt)
    while True:
        step = follower.step()
        for chunk in step.chunks:
            click.echo(chunk.data, nl=False, err=chunk.stream == "stderr")
        sys.stdout.flush()
        if step.done is not None:
            return
        if not step.more:
            time.sleep(POLL)


def _follow_json(yard: Yard, job_id: int, attempt: int | None) -> None:
    """``--follow --json``: one object per attempt, as each ends."""
    from taskyard.api.http.views import job_logs  # noqa: PLC0415 - start-up time

    shown = 0
    while True:
        job_now = yard.get_job(job_id)
        ended = job_now.state in TERMINAL
        for a in job_now.attempts:
            if a.attempt > shown and (a.finished_at is not None or ended) and (
                    attempt is None or a.attempt == attempt):
                _print(job_logs(yard, job_id, a.attempt), True)
                shown = a.attempt
        if ended or (attempt is not None and shown >= attempt):
            return
        time.sleep(POLL)


def register(group: click.Group) -> None:
    """``job logs`` hangs off the ``job`` group (registered by jobs.py)."""
    del group
