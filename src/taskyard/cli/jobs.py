"""``taskyard submit``, ``jobs``, ``job`` and ``workers`` (``events``: events.py,
``job logs``: logs.py)."""

from __future__ import annotations

import shlex
import sys
from typing import Any

import click

from taskyard.cli.inputs import ID, LIMIT, PRIORITY, args_option, read_args, submit_file
from taskyard.cli.listing import print_blocks
from taskyard.cli.main import POSITIVE_DURATION, State
from taskyard.cli.output import duration, json_option, print_json, print_table, short, when
from taskyard.core.durations import DurationError, parse_when
from taskyard.core.states import JobState
from taskyard.model.records import JobRecord
from taskyard.model.tracing import from_environment


@click.command("submit")
@click.argument("type_name", metavar="[TYPE]", required=False)
@click.option("--from-file", "jobs_file", metavar="FILE|-",
              help="Instead of TYPE: one job a line (JSON Lines: type, args, priority, "
                   "run_after, pools, timeout…), submitted 1,000 at a time; prints the ids.")
@args_option
@click.option("--priority", type=PRIORITY, default=0, show_default=True,
              help="Larger runs first.")
@click.option("--run-after", help="Not before: a duration (2s, 5m) or an ISO 8601 time.")
@click.option("--pool", "pools", multiple=True, help="Run in these pools instead of the type's.")
@click.option("--lock", "locks", multiple=True, help="An extra lock for this job (repeatable).")
@click.option("--timeout", type=POSITIVE_DURATION,
              help="Per attempt, instead of the type's: 90, 90s, 5m, 2h, 1d.")
@click.option("--unique-key", help="No second job of this type with this key while one has "
              "not ended (or, with --unique-for, was created that recently).")
@click.option("--unique-for", type=POSITIVE_DURATION,
              help="How long a job holds its unique key after it was created (duration).")
@click.option("--on-duplicate", type=click.Choice(["existing", "reject"]), default="existing",
              show_default=True, help="When the key is held: print the holder's id, or fail.")
@click.option("--wait", is_flag=True,
              help="Then wait until the job ends (workers must run it); exit 1 unless it "
                   "succeeded.")
@click.pass_obj
def submit(state: State, type_name: str | None, jobs_file: str | None,
           args_text: str | None, priority: int, run_after: str | None,
           pools: tuple[str, ...], locks: tuple[str, ...], timeout: float | None,
           unique_key: str | None, unique_for: float | None, on_duplicate: str,
           wait: bool) -> None:
    """Submit a job; prints only its id (with --from-file: each job's id, a line each).
    Started with ``TRACEPARENT`` set, the jobs carry that trace context (docs/tracing.md)."""
    with from_environment():
        _submit(state, type_name, jobs_file, args_text, priority, run_after, pools, locks,
                timeout, unique_key, unique_for, on_duplicate, wait)


def _submit(state: State, type_name: str | None, jobs_file: str | None,
            args_text: str | None, priority: int, run_after: str | None,
            pools: tuple[str, ...], locks: tuple[str, ...], timeout: float | None,
            unique_key: str | None, unique_for: float | None, on_duplicate: str,
            wait: bool) -> None:
    if jobs_file is not None:
        if type_name is not None or wait:
            raise click.UsageError("--from-file takes no TYPE nor --wait: each line names "
                                   "its type and options")
        submit_file(state, jobs_file)
        return
    if type_name is None:
        raise click.UsageError("give the TYPE of the job (or --from-file FILE)")
    args = read_args(args_text)
    if run_after is not None:
        # Checked here so that a malformed value is bad usage, like a malformed --timeout;
        # the Yard reads it again against the database clock.
        try:
            parse_when(run_after, now=0.0, field="--run-after")
        except DurationError as exc:
            raise click.BadParameter(str(exc).removeprefix("--run-after: "),
                                     param_hint="--run-after") from None
    job_id = state.yard.submit(type_name, args or {}, priority=priority, run_after=run_after,
                               pools=pools or None, locks=locks, timeout=timeout,
                               unique_key=unique_key, unique_for=unique_for,
                               on_duplicate=on_duplicate)
    click.echo(job_id)
    if wait:
        sys.stdout.flush()
        ended = state.yard.wait(job_id)
        if ended.state != JobState.SUCCEEDED:
            why = f": {ended.error}" if ended.error else ""
            raise click.ClickException(f"job {job_id} {ended.state}{why}")


STATES = click.Choice([s.value for s in JobState])


def job_rows(jobs: list[JobRecord]) -> list[list[Any]]:
    return [[j.id, j.type or j.kind, j.label or "", j.state, j.priority, j.attempt, j.worker or "",
             when(j.created_at), duration(j.started_at, j.finished_at),
             "" if j.result is None else short(j.result, 40)] for j in jobs]


JOB_HEADERS = ["id", "type", "label", "state", "prio", "try", "worker", "created", "took",
               "result"]


@click.group("jobs")
def jobs() -> None:
    """List jobs."""


@jobs.command("list")
@click.option("--state", "state_filter", type=STATES, help="Only jobs in this state.")
@click.option("--type", "type_name", help="Only jobs of this task type.")
@click.option("--limit", type=LIMIT, default=100, show_default=True)
@click.option("-v", "--verbose", is_flag=True,
              help="One block per job (swh's `task list`): next run, interval, policy, args.")
@json_option
@click.pass_obj
def jobs_list(state: State, state_filter: str | None, type_name: str | None, limit: int,
              verbose: bool, as_json: bool) -> None:
    """Jobs, newest first."""
    found = state.yard.jobs(state=state_filter, type=type_name, limit=limit)
    if as_json:
        print_json([j.to_json() for j in found])
    elif verbose:
        _blocks(state, found, f"Found {len(found)} job(s)")
    else:
        print_table(JOB_HEADERS, job_rows(found), empty="no jobs")


@jobs.command("list-pending")
@click.argument("type_name", metavar="TYPE")
@click.option("--limit", type=LIMIT, default=100, show_default=True)
@json_option
@click.pass_obj
def jobs_pending(state: State, type_name: str, limit: int, as_json: bool) -> None:
    """That type's jobs due now (pending, run_after passed), oldest first, as swh's
    `task list-pending` shows them."""
    found = state.yard.store.jobs.pending(type_name, limit)
    if as_json:
        print_json([j.to_json() for j in found])
    else:
        _blocks(state, found, f"Found {len(found)} {type_name} job(s)")


def _blocks(state: State, found: list[JobRecord], heading: str) -> None:
    recurring = any(j.schedule_name for j in found)
    print_blocks(found, state.yard.list_schedules() if recurring else [],
                 state.yard.store.now(), heading)


@click.group("job")
def job() -> None:
    """Show, cancel or retry one job."""


@job.command("show")
@click.argument("job_id", type=ID)
@json_option
@click.pass_obj
def job_show(state: State, job_id: int, as_json: bool) -> None:
    """A job, its attempts, and why it is not running yet."""
    record = state.yard.get_job(job_id)
    reasons = state.yard.explain(job_id)
    # What its handler got: `$result` markers filled in, once it was dispatched.
    received = state.yard.store.attempts.dispatched_args(record)
    if as_json:
        print_json({**record.to_json(), "dispatched_args": received,
                    "explain": [r.to_json() for r in reasons]})
        return
    fields = [("id", record.id), ("type", record.type), ("kind", _kind(record)),
              ("state", record.state),
              ("label", record.label), ("graph", record.graph_id), ("priority", record.priority),
              ("pools", ", ".join(record.pools)), ("locks", ", ".join(record.locks) or None),
              ("args", short(record.args if received is None else received, 200)),
              ("attempt", record.attempt),
              ("worker", record.worker), ("created", when(record.created_at)),
              ("started", when(record.started_at)), ("finished", when(record.finished_at)),
              ("exit code", record.exit_code), ("error", record.error),
              ("result", None if record.result is None else short(record.result, 200))]
    for name, value in fields:
        if value not in (None, ""):
            click.echo(f"{name + ':':<10} {value}")
    for reason in reasons:
        click.echo(f"{'why:':<10} {reason.message}")
    for name, how in _decisions(record):
        click.echo(f"{name + ':':<10} {how}")
    if record.attempts:
        click.echo("")
        print_table(["attempt", "state", "worker", "exit", "started", "took", "error"],
                    [[a.attempt, a.state, a.worker, a.exit_code, when(a.started_at),
                      duration(a.started_at, a.finished_at), a.error or ""]
                     for a in record.attempts])
        if record.stages:
            click.echo("")
            print_table(["attempt", "stage", "state", "started", "took", "result"],
                        [[st.attempt, st.name, st.state, when(st.started_at),
                          duration(st.started_at, st.finished_at),
                          "" if st.result is None else short(st.result, 60)]
                         for st in record.stages])
        last = record.attempts[-1]
        for name, tail in (("stdout", last.stdout_tail), ("stderr", last.stderr_tail)):
            if tail:
                click.echo(f"\n--- {name} (tail) ---\n{tail.rstrip()}")


def _kind(record: JobRecord) -> str | None:
    """An approval's, a wait's or a sleep's kind (with the signal a wait expects)."""
    if record.kind == "task":
        return None
    if record.signal is None:
        return record.kind
    key = "any key" if record.signal_key is None else f"key {record.signal_key!r}"
    return f"wait for signal {record.signal!r} ({key})"


def _decisions(record: JobRecord) -> list[tuple[str, str]]:
    """What ends an awaiting approval or wait, as the commands to type."""
    if record.state != JobState.AWAITING:
        return []
    if record.kind == "approval":
        return [("approve", f"taskyard job approve {record.id} [--note TEXT]"),
                ("deny", f"taskyard job deny {record.id} [--note TEXT]")]
    if record.kind == "wait":
        key = "" if record.signal_key is None else f" --key {shlex.quote(record.signal_key)}"
        return [("signal", f"taskyard signal {shlex.quote(record.signal or '')}{key} "
                           "[--payload JSON]")]
    return []


@job.command("cancel")
@click.argument("job_id", type=ID)
@click.pass_obj
def job_cancel(state: State, job_id: int) -> None:
    """Cancel a job (a running one is stopped); its dependents end dependency_failed."""
    click.echo(f"job {job_id} {state.yard.cancel(job_id).state}")


@job.command("retry")
@click.argument("job_id", type=ID)
@click.pass_obj
def job_retry(state: State, job_id: int) -> None:
    """Run a failed job once more; prints the state it is in now (pending or waiting)."""
    click.echo(f"job {job_id} retried: {state.yard.retry(job_id).state}")


@click.group("workers")
def workers() -> None:
    """Workers."""


@workers.command("list")
@click.option("--all", "include_gone", is_flag=True, help="Include stopped and expelled workers.")
@json_option
@click.pass_obj
def workers_list(state: State, include_gone: bool, as_json: bool) -> None:
    """Live workers, their pools and load."""
    found = state.yard.workers(include_gone=include_gone)
    if as_json:
        print_json([w.to_json() for w in found])
        return
    print_table(["name", "state", "pools", "capacity", "used", "running", "heartbeat"],
                ([w.name, w.state, ", ".join(w.pools), w.capacity, w.used, w.running,
                  when(w.last_heartbeat_at)] for w in found), empty="no workers")


def register(group: click.Group) -> None:
    for command in (submit, jobs, job, workers):
        group.add_command(command)
