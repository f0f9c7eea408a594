"""Jobs listed one block each, as Software Heritage's scheduler lists tasks (seed 002's
``task list-pending`` and ``task list``): next run, interval, type, policy, status,
priority and args."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import click

from taskyard.cli.output import humanize, short
from taskyard.core.durations import duration_text, iso
from taskyard.core.states import JobState

if TYPE_CHECKING:
    from taskyard.model.records import JobRecord
    from taskyard.model.schedules import ScheduleRecord

_NOT_STARTED = {JobState.WAITING, JobState.PENDING, JobState.SUSPENDED}


def interval_text(schedule: ScheduleRecord | None) -> str:
    """A recurring job's interval: its schedule's (``every``, the adaptive one now, or
    the cron expression); ``none`` for a one-shot job."""
    if schedule is None:
        return "none"
    if schedule.cron is not None:
        return f"cron {schedule.cron}"
    seconds = schedule.every if schedule.every is not None else schedule.current_interval
    return "none" if seconds is None else duration_text(seconds)


def job_block(job: JobRecord, schedules: Mapping[str, ScheduleRecord], now: float) -> list[str]:
    """One job's lines (``Job ID`` and its fields, indented)."""
    schedule = schedules.get(job.schedule_name) if job.schedule_name else None
    if job.state in _NOT_STARTED:
        at = job.run_after if job.run_after is not None else job.created_at
        when = ("Next run", at)
    elif job.finished_at is not None:
        when = ("Finished", job.finished_at)
    else:
        when = ("Started", job.started_at or job.created_at)
    policy = "one-shot" if job.schedule_name is None else (
        f"recurring (schedule {job.schedule_name})")
    lines = [
        f"Job {job.id}",
        f"  {when[0]}: {humanize(when[1] - now)} ({iso(when[1])})",
        f"  Interval: {interval_text(schedule)}",
        f"  Type: {job.type}",
        f"  Policy: {policy}",
        f"  Status: {job.state}",
        f"  Priority: {job.priority}",
        "  Args:",
    ]
    # Keyword args, one a line (swh's "Keyword args"), each value as JSON.
    lines.extend(f"    {key}: {short(json.dumps(value), 200)}" for key, value in job.args.items())
    return lines


def print_blocks(jobs: Sequence[JobRecord], schedules: Sequence[ScheduleRecord],
                 now: float, heading: str) -> None:
    """``heading``, then each job's block after an empty line."""
    by_name = {s.name: s for s in schedules}
    click.echo(heading)
    for job in jobs:
        click.echo("")
        click.echo("\n".join(job_block(job, by_name, now)))
