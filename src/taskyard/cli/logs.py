"""``taskyard job logs ID [--attempt N] [--follow]``: the stdout and stderr tails that
workers keep per attempt (bounded), written when the attempt ends."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from taskyard.cli.jobs import job
from taskyard.cli.main import State
from taskyard.core.states import TERMINAL

if TYPE_CHECKING:
    from taskyard.api.http.views import Logs


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
              help="Wait for the attempt (and, without --attempt, the job's later ones) to "
                   "end and print each one's output then.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per attempt.")
@click.pass_obj
def logs(state: State, job_id: int, attempt: int | None, follow: bool, as_json: bool) -> None:
    """An attempt's kept stdout (to stdout) and stderr (to stderr)."""
    # Imported here: `taskyard --help` lists this command without the database stack.
    from taskyard.api.http.feed import EventFeed  # noqa: PLC0415 - start-up time
    from taskyard.api.http.views import Logs, job_logs  # noqa: PLC0415 - start-up time

    yard = state.yard
    if not follow:
        _print(job_logs(yard, job_id, attempt), as_json)
        return
    feed = EventFeed(yard.store)
    try:
        shown = 0
        while True:
            job_now = yard.get_job(job_id)
            ended = job_now.state in TERMINAL
            for a in job_now.attempts:
                if a.attempt > shown and (a.finished_at is not None or ended) and (
                        attempt is None or a.attempt == attempt):
                    _print(Logs(job_id, a), as_json)
                    shown = a.attempt
            if ended or (attempt is not None and shown >= attempt):
                return
            feed.wait(5.0)
    finally:
        feed.close()


def register(group: click.Group) -> None:
    """``job logs`` hangs off the ``job`` group (registered by jobs.py)."""
    del group
