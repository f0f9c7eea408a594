"""``taskyard job approve | deny`` (they hang off the ``job`` group of jobs.py) and
``taskyard signal``: what ends approvals and waits (core/waits.py)."""

from __future__ import annotations

import click

from taskyard.cli.inputs import ID, read_json
from taskyard.cli.jobs import job
from taskyard.cli.main import State


def _decision(name: str, verb: str, help_text: str) -> click.Command:
    """``job approve`` or ``job deny`` (``verb``: what it prints)."""

    @job.command(name, help=help_text)
    @click.argument("job_id", type=ID)
    @click.option("--note", help="Why: kept in the job's result with who decided.")
    @click.pass_obj
    def decide(state: State, job_id: int, note: str | None) -> None:
        act = state.yard.approve if name == "approve" else state.yard.deny
        click.echo(f"job {job_id} {verb}: {act(job_id, note=note).state}")

    return decide


job_approve = _decision("approve", "approved", "Approve an awaiting approval: it succeeds, "
                        "and what requires it may run.")
job_deny = _decision("deny", "denied", "Deny an awaiting approval: it fails (its failure "
                     "edges apply).")


@click.command("signal")
@click.argument("name")
@click.option("--key", help="Only waits for this key (and those for any key) take it.")
@click.option("--payload", metavar="JSON|@FILE|-",
              help="Any JSON value: the result of the waits it completes.")
@click.pass_obj
def signal(state: State, name: str, key: str | None, payload: str | None) -> None:
    """Send a signal; prints only how many jobs it completed. A wait submitted before it
    that awaits later still gets it."""
    value = None if payload is None else read_json(payload, "--payload")
    click.echo(len(state.yard.signal(name, key, value)))


def register(group: click.Group) -> None:
    """``signal`` on the root group; ``job approve`` and ``job deny`` are on ``job``."""
    group.add_command(signal)
