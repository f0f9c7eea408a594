"""``taskyard simulate``: the scheduling core in virtual time (see docs/simulator.md)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import click

from taskyard.cli.main import POSITIVE_DURATION
from taskyard.cli.output import json_option, print_json, print_table
from taskyard.model.errors import DatabaseUrlError

if TYPE_CHECKING:
    from taskyard.sim import SimResult
    from taskyard.sim.scenario import Scenario

_SIZE = re.compile(r"^([^=\s]+)=(\d+)(?:x(\d+))?$")


def _sizes(values: tuple[str, ...]) -> dict[str, tuple[int, int | None]]:
    sizes: dict[str, tuple[int, int | None]] = {}
    for value in values:
        match = _SIZE.match(value)
        if match is None:
            raise click.BadParameter(f"{value!r} is not NAME=N or NAME=NxC (e.g. build=40, "
                                     "east=10x4)", param_hint="--workers")
        name, count, capacity = match.groups()
        sizes[name] = (int(count), None if capacity is None else int(capacity))
    return sizes


@click.command("simulate")
@click.argument("scenario", required=False, type=click.Path(exists=True, dir_okay=False,
                                                             path_type=Path))
@click.option("--seed", type=int, help="Random seed [default: the scenario's, else 1].")
@json_option
@click.option("--plots", "plots", type=click.Path(file_okay=False, path_type=Path),
              help="Write queue.png, waits.png and utilization.png into this folder.")
@click.option("--workers", "workers", multiple=True, metavar="NAME=N[xC]",
              help="N workers (of capacity C) in group NAME instead of the scenario's "
                   "(repeatable). With --from-db, a group is named after its pools.")
@click.option("--from-db", "from_db", metavar="URL",
              help="Replay the jobs this database recorded instead of a scenario.")
@click.option("--since", type=POSITIVE_DURATION, default="24h", show_default=True,
              help="With --from-db: replay the jobs created this long ago until now.")
def simulate_command(scenario: Path | None, seed: int | None, as_json: bool,
                     plots: Path | None, workers: tuple[str, ...], from_db: str | None,
                     since: float) -> None:
    """Run SCENARIO.yaml (or a database's history) through taskyard's scheduling core in
    virtual time, and report utilization, waits, throughput, queues and lock
    contention."""
    # Imported here: `taskyard --help` lists this command without YAML or the simulator.
    from taskyard.sim import ScenarioError, load_scenario, simulate  # noqa: PLC0415
    from taskyard.sim.plots import PlotsUnavailable, write_plots  # noqa: PLC0415

    sizes = _sizes(workers)
    if (scenario is None) == (from_db is None):
        raise click.UsageError("give a SCENARIO file or --from-db URL (one of them)")
    try:
        if from_db is not None:
            model, notes = _replay(from_db, since, sizes)
        else:
            assert scenario is not None
            model, notes = load_scenario(scenario), None
            if sizes:
                model = model.with_workers(sizes)
        result = simulate(model, seed=seed)
    except ScenarioError as exc:
        raise click.ClickException(str(exc)) from None
    report = result.report
    if notes is not None:
        report["replay"] = notes
    if plots is not None:
        try:
            report["plots"] = [str(p) for p in write_plots(report, plots)]
        except PlotsUnavailable as exc:
            raise click.ClickException(str(exc)) from None
    if as_json:
        print_json(report)
    else:
        _print(result, report)


def _replay(url: str, since: float, sizes: dict[str, tuple[int, int | None]]
            ) -> tuple[Scenario, dict[str, object]]:
    # Imported here: only a replay needs the store (and SQLAlchemy).
    from taskyard.sim.replay import replay_scenario  # noqa: PLC0415
    from taskyard.store import open_store  # noqa: PLC0415
    from taskyard.store.diagnosis import check_url  # noqa: PLC0415
    from taskyard.store.reads.history import read_history  # noqa: PLC0415

    try:
        check_url(url, "simulate")
    except DatabaseUrlError as exc:
        raise click.BadParameter(str(exc), param_hint="--from-db") from None
    store = open_store(url)
    try:
        history = read_history(store, since)
    finally:
        store.close()
    model, notes = replay_scenario(history, name=f"replay of {store.engine.url.database}")
    if sizes:
        model = model.with_workers(sizes, new_groups=True)
    return model, {"jobs": notes.jobs, "left_out_canceled": notes.left_out_canceled,
                   "estimated_durations": notes.estimated, "recorded_workers": notes.workers,
                   "workers": {g.name: g.count for g in model.workers}}


def _print(result: SimResult, report: dict[str, object]) -> None:
    from taskyard.sim.report import tables  # noqa: PLC0415 - start-up time

    for table in tables(result.report):
        click.echo(f"\n{table.title.upper()}")
        print_table(table.headers, table.rows, empty="none")
    replay = report.get("replay")
    if isinstance(replay, dict):
        click.echo(f"\nreplayed {replay['jobs']} job(s); left out "
                   f"{replay['left_out_canceled']} canceled before they started; durations "
                   f"guessed for {replay['estimated_durations']} that never ran")
    for path in report.get("plots", []) or []:  # type: ignore[attr-defined]
        click.echo(f"wrote {path}")


def register(group: click.Group) -> None:
    group.add_command(simulate_command)
