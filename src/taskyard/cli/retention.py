"""``taskyard prune``: delete old finished jobs, graphs and events."""

from __future__ import annotations

import click

from taskyard.cli.main import DURATION, State
from taskyard.cli.output import json_option, print_json


@click.command("prune")
@click.option("--older-than", type=DURATION, required=True,
              help="Delete what finished longer ago than this (e.g. 30d).")
@click.option("--dry-run", is_flag=True, help="Count the first batch, delete nothing.")
@json_option
@click.pass_obj
def prune(state: State, older_than: float, dry_run: bool, as_json: bool) -> None:
    """Delete jobs that ended before the cutoff (with attempts, stages and edges), their
    empty graphs, and older events. Jobs still needed by unfinished work are kept."""
    from taskyard.store.transitions.retention import prune as prune_store  # noqa: PLC0415 - start-up

    report = prune_store(state.yard.store, older_than, dry_run=dry_run)
    if as_json:
        print_json(report.to_json())
    else:
        verb = "would delete (first batch)" if dry_run else "deleted"
        click.echo(f"{verb} {report.jobs} job(s), {report.graphs} graph(s), "
                   f"{report.events} event(s)")


def register(group: click.Group) -> None:
    group.add_command(prune)
