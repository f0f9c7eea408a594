"""``taskyard schedule backfill NAME --from WHEN --to WHEN`` (it hangs off the
``schedule`` group of schedules.py): a schedule's jobs for the ticks of a past range,
with progress on stderr while a long one is written and, ``--wait``, while it runs."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

import click

from taskyard.cli.inputs import POSITIVE_COUNT
from taskyard.cli.output import json_option, print_json
from taskyard.cli.schedules import State, schedule_group
from taskyard.core.durations import iso

SHOWN_FROM = 1000
"""Ticks from which writing them shows a progress bar."""


@contextlib.contextmanager
def _progress(label: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr (rich), fed ``(done, total)``; drawn on a terminal only."""
    from rich.console import Console  # noqa: PLC0415 - rich is slow to import
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn  # noqa: PLC0415

    console = Console(stderr=True)
    with Progress("[progress.description]{task.description}", BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), console=console,
                  transient=True, disable=not console.is_terminal) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


@schedule_group.command("backfill")
@click.argument("name")
@click.option("--from", "start", metavar="WHEN",
              help="First tick: an ISO 8601 time, or a duration ago (7d).")
@click.option("--to", "end", metavar="WHEN", default="now", show_default=True,
              help="End of the range (excluded): an ISO 8601 time, a duration ago, now.")
@click.option("--max-active", type=POSITIVE_COUNT,
              help="At most N of its jobs pending, dispatched or running at once.")
@click.option("--dry-run", is_flag=True, help="Print the ticks (ISO 8601), write nothing.")
@click.option("--cancel", "cancel", is_flag=True,
              help="Cancel what remains of NAME's backfills instead; print how many jobs.")
@click.option("--wait", is_flag=True,
              help="Then follow its jobs until they end (progress on stderr); exit 1 "
                   "unless every one succeeded.")
@json_option
@click.pass_obj
def backfill(state: State, *, name: str, start: str | None, end: str,
             max_active: int | None, dry_run: bool, cancel: bool, wait: bool,
             as_json: bool) -> None:
    """One job of schedule NAME per tick in [--from, --to), oldest first; prints their
    ids, one a line. A tick that has a job already (the schedule's own, or an earlier
    backfill's) gets none: running the same backfill again creates nothing."""
    yard = state.yard
    if cancel:
        click.echo(yard.cancel_backfill(name))
        return
    if start is None:
        raise click.UsageError("give --from WHEN (or --cancel)")
    with _progress(f"backfill {name}") as progress:
        done = yard.backfill(name, start, end, max_active=max_active, dry_run=dry_run,
                             progress=progress)
    if as_json:
        print_json(done.to_json())
    elif dry_run:
        for tick in done.ticks:
            click.echo(iso(tick))
    else:
        for job in done.jobs or []:
            click.echo(job)
    if wait and done.graph_id is not None:
        sys.stdout.flush()
        _follow(state, done.graph_id)


def _follow(state: State, graph_id: int) -> None:
    """Until the backfill's graph settles, its jobs done out of its total on stderr."""
    yard = state.yard
    with _progress(f"graph {graph_id}") as progress:
        while True:
            graph = yard.store.graphs.get(graph_id, jobs=False)
            progress(graph.jobs_done, graph.jobs_total)
            if graph.state != "running" and graph.jobs_done >= graph.jobs_total:
                break
            with contextlib.suppress(TimeoutError):  # woken by its events, or a second
                yard.wait_graph(graph_id, timeout=1.0)
    failed = sum(1 for j in yard.graph(graph_id).jobs if j.state != "succeeded")
    if failed:
        raise click.ClickException(f"backfill graph {graph_id}: {failed} job(s) did not "
                                   "succeed")


def register(group: click.Group) -> None:
    """``schedule backfill`` is on the ``schedule`` group (registered by schedules.py)."""
    del group
