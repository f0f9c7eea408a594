"""``taskyard jobs search``, ``jobs cancel`` / ``jobs retry`` (every job a search finds)
and ``workers drain``: the dashboard's find-and-act, from a terminal. The filters are the
HTTP search's (``GET /api/v1/jobs/search``), read by the same code
(``api/search.py:job_query``, ``store/reads/job_search.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from taskyard.cli.inputs import LIMIT
from taskyard.cli.jobs import JOB_HEADERS, STATES, job_rows, jobs, workers
from taskyard.cli.main import State
from taskyard.cli.output import json_option, print_json, print_table

if TYPE_CHECKING:
    from taskyard.model.records import JobRecord
    from taskyard.store.reads.job_search import JobQuery

SORTS = click.Choice(["-created", "created", "-finished", "finished"])
F = Callable[..., Any]


def search_options(command: F) -> F:
    """The search's filters, as options (``jobs search``, ``jobs cancel``, ``jobs retry``)."""
    for option in reversed((
        click.option("-q", "--query", "q", help="A job id (123, #123), or text in the "
                     "label or args (any case)."),
        click.option("--state", "states", type=STATES, multiple=True,
                     help="Any of these states (repeatable)."),
        click.option("--type", "types", multiple=True, help="Any of these task types "
                     "(repeatable)."),
        click.option("--label", help="This label."),
        click.option("--graph", "graph_id", type=click.IntRange(1), help="Jobs of this graph."),
        click.option("--schedule", help="Jobs of this schedule."),
        click.option("--pool", help="One of the job's pools."),
        click.option("--worker", help="A worker that ran an attempt of it."),
        click.option("--since", help="Created (in end order: ended) at or after: a "
                     "duration back (2h) or an ISO 8601 time."),
        click.option("--until", help="… and before."),
    )):
        command = option(command)
    return command


def _query(state: State, sort: str, **filters: Any) -> JobQuery:
    from taskyard.api.search import job_query  # noqa: PLC0415 - start-up time

    return job_query(state.yard.store.now, q=filters["q"], state=filters["states"],
                     type=filters["types"], label=filters["label"],
                     graph_id=filters["graph_id"], schedule=filters["schedule"],
                     pool=filters["pool"], worker=filters["worker"],
                     since=filters["since"], until=filters["until"], sort=sort)


@jobs.command("search")
@search_options
@click.option("--sort", type=SORTS, default="-created", show_default=True,
              help="Creation order (newest first: -created) or end order (-finished).")
@click.option("--limit", type=LIMIT, default=100, show_default=True)
@json_option
@click.pass_obj
def jobs_search(state: State, /, sort: str, limit: int, as_json: bool, **filters: Any) -> None:
    """Find jobs by id, text, state, type, label, graph, schedule, pool, worker and time."""
    from taskyard.store.reads.job_search import search_jobs  # noqa: PLC0415

    query = _query(state, sort, **filters)
    found: list[JobRecord] = []
    after = None
    while len(found) < limit:  # a page may stop short at its bound: go on from there
        page = search_jobs(state.yard.store, query, after=after, limit=limit - len(found))
        found.extend(page.items)
        if page.next is None:
            break
        after = page.next
    if as_json:
        print_json([j.to_json() for j in found])
    else:
        print_table(JOB_HEADERS, job_rows(found), empty="no jobs")


def _bulk(action: str, help_text: str) -> click.Command:
    @click.option("--dry-run", is_flag=True, help="Count them; change nothing.")
    @click.option("-y", "--yes", is_flag=True, help="No confirmation.")
    @json_option
    @click.pass_obj
    def command(state: State, /, dry_run: bool, yes: bool, as_json: bool,
                **filters: Any) -> None:
        from taskyard.store.transitions.bulk import act_on_jobs  # noqa: PLC0415

        store = state.yard.store
        query = _query(state, "created", **filters)
        counted = act_on_jobs(store, action, query, dry_run=True)
        more = " (and more: run it again for the rest)" if counted.more else ""
        if dry_run or not counted.matched:
            done = counted
        elif yes or click.confirm(f"{action} {counted.matched} job(s){more}?", err=True):
            done = act_on_jobs(store, action, query, up_to=counted.up_to)
        else:
            raise click.Abort
        if as_json:
            print_json(done.to_json(dry_run=dry_run))
        elif dry_run:
            click.echo(f"{done.matched} job(s) to {action}{more}")
        else:
            click.echo(f"{action}: {done.changed} job(s) changed, {done.skipped} skipped "
                       f"(changed state meanwhile) of {done.matched}{more}")

    command.__doc__ = help_text
    return click.command(action)(search_options(command))


jobs.add_command(_bulk("cancel", "Cancel every job not ended yet that the filters find "
                       "(asks first, with the count; an event per job)."))
jobs.add_command(_bulk("retry", "Run once more every failed, errored, canceled or "
                       "dependency_failed job the filters find (asks first, with the count)."))


@workers.command("drain")
@click.argument("name")
@json_option
@click.pass_obj
def workers_drain(state: State, name: str, as_json: bool) -> None:
    """The live worker NAME finishes what it has and is given nothing new (until it is
    started again); a ``worker-draining`` event."""
    from taskyard.store.transitions.drain import drain_worker  # noqa: PLC0415

    worker_id = drain_worker(state.yard.store, name)
    if as_json:
        print_json({"id": worker_id, "name": name, "draining": True})
    else:
        click.echo(f"worker {name} draining")


def register(group: click.Group) -> None:
    """Hangs off the ``jobs`` and ``workers`` groups (registered by jobs.py)."""
    del group
