"""``taskyard graph submit|show|list|cancel|add-tasks``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from taskyard.cli.inputs import ID, LIMIT
from taskyard.cli.main import State
from taskyard.cli.output import duration, json_option, print_json, print_table, short, when
from taskyard.model.tracing import from_environment

if TYPE_CHECKING:
    from taskyard.api.yard import Yard
    from taskyard.model.records import GraphRecord


def load_graph_file(path: Path) -> Any:
    """The graph document in ``path`` (see :mod:`taskyard.cli.graph_files`)."""
    from taskyard.cli.graph_files import load  # noqa: PLC0415 - start-up time

    return load(path)


FILE = click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))


@click.group("graph")
def graph() -> None:
    """Task graphs: submit, show, list, cancel, add tasks."""


@graph.command("submit")
@FILE
@click.pass_obj
def submit(state: State, file: Path) -> None:
    """Validate and submit a graph file; prints only the graph id."""
    doc = load_graph_file(file)  # before the database: a bad file fails on its own
    with from_environment():  # TRACEPARENT: the trace its jobs carry
        click.echo(state.yard.submit_graph(doc))


@graph.command("add-tasks")
@click.argument("graph_id", type=ID)
@FILE
@click.pass_obj
def add_tasks(state: State, graph_id: int, file: Path) -> None:
    """Add tasks ({tasks: {...}}) to a running or finished graph."""
    doc = load_graph_file(file)
    with from_environment():
        ids = state.yard.add_graph_tasks(graph_id, doc)
    click.echo(f"added {len(ids)} task(s) to graph {graph_id}")


EXPLAINED = 50
"""Most unstarted jobs of one ``graph show`` explained: each costs a replay of the
placement (``job show``'s), and a large graph has thousands."""


def _tree(yard: Yard, record: GraphRecord) -> list[list[Any]]:
    rows = []
    explained = 0
    for j in sorted(record.jobs, key=lambda j: j.id):
        why = j.error if j.state in ("skipped", "dependency_failed", "canceled") else ""
        if j.state in ("waiting", "pending", "suspended", "awaiting") and explained < EXPLAINED:
            explained += 1
            why = "; ".join(r.message for r in yard.explain(j.id))
        elif isinstance(j.result, dict) and j.kind != "task" and "decision" in j.result:
            note = j.result.get("note")
            why = f"{j.result['decision']} by {j.result.get('by')}" + (f": {note}" if note else "")
        rows.append([j.label, j.type or j.kind, j.state, j.attempt,
                     duration(j.started_at, j.finished_at), j.worker or "", j.id,
                     short(why or "", 70)])
    return rows


@graph.command("show")
@click.argument("graph_id", type=ID)
@json_option
@click.pass_obj
def show(state: State, graph_id: int, as_json: bool) -> None:
    """A graph's state and its jobs (label, state, attempts, duration, worker, and why
    one has not run)."""
    record = state.yard.graph(graph_id)
    if as_json:
        print_json(record.to_json())
        return
    stalled = f" (stalled since {when(record.stalled_at)})" if record.stalled_at else ""
    click.echo(f"graph {record.id}  {record.state}{stalled}  routing={record.routing or '-'}  "
               f"{record.jobs_done}/{record.jobs_total} done  created {when(record.created_at)}")
    print_table(["label", "type", "state", "tries", "took", "worker", "job", "why"],
                _tree(state.yard, record))


@graph.command("list")
@click.option("--state", "state_filter",
              type=click.Choice(["running", "blocked", "finished", "canceled"]))
@click.option("--limit", type=LIMIT, default=100, show_default=True)
@json_option
@click.pass_obj
def list_(state: State, state_filter: str | None, limit: int, as_json: bool) -> None:
    """Graphs, newest first."""
    found = state.yard.graphs(state=state_filter, limit=limit)
    if as_json:
        print_json([g.to_json() for g in found])
        return
    print_table(["id", "state", "routing", "done", "created", "finished"],
                ([g.id, g.state, g.routing, f"{g.jobs_done}/{g.jobs_total}",
                  when(g.created_at), when(g.finished_at)] for g in found), empty="no graphs")


@graph.command("cancel")
@click.argument("graph_id", type=ID)
@click.pass_obj
def cancel(state: State, graph_id: int) -> None:
    """Cancel a graph: running jobs are stopped, waiting and pending ones canceled."""
    click.echo(f"graph {graph_id} {state.yard.cancel_graph(graph_id).state}")


def register(group: click.Group) -> None:
    group.add_command(graph)
