"""``taskyard schedule``: add, list, show, pause, resume and delete schedules.

Registered by ``cli/main.py``, whose ``main()`` turns store errors into one line
on stderr (exit 1) and usage errors into exit 2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import click

from taskyard.cli.inputs import PRIORITY, args_option, read_args
from taskyard.cli.main import POSITIVE_DURATION
from taskyard.cli.output import humanize, json_option, print_json, print_table
from taskyard.core.durations import duration_text, iso
from taskyard.core.recurrence import Catchup
from taskyard.core.ticks import Overlap

if TYPE_CHECKING:
    from taskyard.api.yard import Yard
    from taskyard.model.schedules import ScheduleRecord


def format_duration(seconds: float | None) -> str:
    """Seconds in the units the CLI reads (``90s``, ``5m``, ``1d12h``); ``-`` for none."""
    return "-" if seconds is None else duration_text(seconds)


def describe(s: ScheduleRecord, now: float) -> list[str]:
    """The human columns of one schedule: name, type, next run, interval, last outcome."""
    if s.kind == "cron":
        rhythm = f"cron {s.cron}" + ("" if s.timezone == "UTC" else f" ({s.timezone})")
    elif s.kind == "every":
        rhythm = f"every {format_duration(s.every)}"
    else:
        rhythm = f"adaptive {format_duration(s.current_interval)}"
    last = s.last_outcome or "-"
    if s.last_run_at is not None:
        last = f"{last} {humanize(s.last_run_at - now)}"
    upcoming = "paused" if s.paused else f"{humanize(s.next_run - now)} ({iso(s.next_run)})"
    return [s.name, s.type, upcoming, rhythm, last]


HEADERS = ("name", "type", "next run", "interval", "last")


class State(Protocol):
    """What ``cli/main.py`` puts in ``ctx.obj`` (its ``State``): a lazily opened Yard."""

    @property
    def yard(self) -> Yard: ...


def _print(yard: Yard, records: list[ScheduleRecord], as_json: bool) -> None:
    if as_json:
        print_json([r.to_json() for r in records])
        return
    now = yard.store.now()
    print_table(HEADERS, (describe(r, now) for r in records), empty="no schedules")


@click.group("schedule")
def schedule_group() -> None:
    """Recurring work: fixed intervals, cron in a time zone, or adaptive intervals."""


@schedule_group.command("add")
@click.argument("name")
@click.argument("type_name", metavar="TYPE")
@click.option("--every", help="Fixed interval: 90, 90s, 5m, 2h, 1d.")
@click.option("--cron", help="Five fields: minute hour day-of-month month day-of-week.")
@args_option
@click.option("--timezone", help="IANA zone the cron fields are read in (default UTC).")
@click.option("--priority", type=PRIORITY, default=0, show_default=True)
@click.option("--catchup", type=click.Choice([c.value for c in Catchup]), default="one",
              show_default=True, help="Missed runs after downtime: one, all (≤100/cycle), none.")
@click.option("--catchup-window", type=POSITIVE_DURATION,
              help="Missed runs older than this (1d) are skipped, whatever --catchup says.")
@click.option("--overlap", type=click.Choice([o.value for o in Overlap]), default="allow",
              show_default=True, help="A run due while the last one has not ended: start "
              "another, skip it, or keep one queued (buffer-one).")
@click.option("--paused", is_flag=True, help="Create it paused.")
@click.option("--replace", is_flag=True, help="Redefine an existing schedule, keeping history.")
@json_option
@click.pass_obj
def add(state: State, *, name: str, type_name: str, every: str | None, cron: str | None,
        args_text: str | None, timezone: str | None, priority: int, catchup: str,
        catchup_window: float | None, overlap: str, paused: bool, replace: bool,
        as_json: bool) -> None:
    """Create schedule NAME of task type TYPE.

    With neither --every nor --cron it follows TYPE's adaptive interval.
    """
    if every is not None and cron is not None:
        raise click.UsageError("give --every or --cron, not both")
    args = read_args(args_text)
    record = state.yard.add_schedule(name, type_name, every=every, cron=cron, args=args,
                                     timezone=timezone, priority=priority, catchup=catchup,
                                     catchup_window=catchup_window, overlap=overlap,
                                     paused=paused, replace=replace)
    if as_json:
        print_json(record.to_json())
        return
    _, _, upcoming, rhythm, _ = describe(record, state.yard.store.now())
    click.echo(f"schedule {record.name}: {rhythm}, next run {upcoming}")


@schedule_group.command("list")
@json_option
@click.pass_obj
def list_(state: State, as_json: bool) -> None:
    """Schedules with their next run (e.g. "in 4 hours"), interval and last outcome."""
    _print(state.yard, state.yard.list_schedules(), as_json)


@schedule_group.command("show")
@click.argument("name")
@json_option
@click.pass_obj
def show(state: State, name: str, as_json: bool) -> None:
    """One schedule (``--json``: one object)."""
    record = state.yard.get_schedule(name)
    if as_json:
        print_json(record.to_json())
    else:
        _print(state.yard, [record], False)


def _simple(verb: str, method: str, help_text: str) -> None:
    """A command ``verb NAME`` that calls the Yard's ``method`` (named, not imported:
    the Yard and the database stack load when a command runs)."""
    @schedule_group.command(verb, help=help_text)
    @click.argument("name")
    @click.pass_obj
    def command(state: State, name: str) -> None:
        getattr(state.yard, method)(name)
        click.echo(f"schedule {name}: {verb}d")


_simple("pause", "pause_schedule", "Stop creating jobs for NAME (running jobs go on).")
_simple("resume", "resume_schedule",
        "Create jobs for NAME again; runs missed while paused are skipped.")
_simple("delete", "delete_schedule", "Remove NAME; its jobs stay in the history.")


@schedule_group.command("run")
@click.argument("name")
@click.pass_obj
def run_now(state: State, name: str) -> None:
    """Run NAME now, once (its next run stays); prints the new job's id."""
    click.echo(state.yard.run_schedule(name))


def register(group: click.Group) -> None:
    group.add_command(schedule_group)
