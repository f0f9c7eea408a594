"""``taskyard task-type add|list``, ``taskyard apply``, ``taskyard pools list``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from taskyard.cli.inputs import COUNT, QUEUE_LENGTH
from taskyard.cli.main import DURATION, POSITIVE_DURATION, State
from taskyard.cli.output import json_option, print_json, print_table
from taskyard.core.durations import DurationError, duration_text, parse_interval
from taskyard.core.limits import too_deep
from taskyard.core.rate_limits import RateLimitError, parse_rate_limit
from taskyard.model.errors import InvalidInput, NotFound

if TYPE_CHECKING:
    from taskyard.model.records import TaskTypeSpec


def _rate_limit(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """A malformed --rate-limit is bad usage (exit 2), like a malformed duration."""
    try:
        return None if value is None else parse_rate_limit(value, field="").encode()
    except RateLimitError as exc:
        raise click.BadParameter(str(exc).removeprefix(": "), param_hint="--rate-limit") from None


@click.group("task-type")
def task_type() -> None:
    """Declare and list task types."""


@task_type.command("add")
@click.argument("name")
@click.option("--handler", required=True,
              help="python:MODULE:FUNCTION, shell:'COMMAND {arg}' or celery:TASK_NAME "
                   "(run by `taskyard celery-pool`).")
@click.option("--description", default="")
@click.option("--pool", "pools", multiple=True, help="Pool, in order of preference (repeatable).")
@click.option("--cost", type=COUNT, default=1, show_default=True,
              help="Capacity units a job uses.")
@click.option("--timeout", type=POSITIVE_DURATION, help="Per attempt: 90, 90s, 5m, 2h, 1d.")
@click.option("--retries", type=COUNT, default=0, show_default=True,
              help="Extra attempts after a failure (N+1 in all).")
@click.option("--retry-delay", type=DURATION, default="0", help="Delay before a retry (duration).")
@click.option("--retry-backoff", type=float, default=1.0, show_default=True,
              help="Each further retry waits this factor longer.")
@click.option("--retry-max-delay", type=DURATION,
              help="Longest delay a growing backoff reaches (duration) [default: 1h].")
@click.option("--interval", help="Adaptive recurring interval DEFAULT[,MIN,MAX], e.g. 1d,12h,64d.")
@click.option("--backoff-factor", type=float, help="Adaptive interval factor (> 1).")
@click.option("--max-queue-length", type=QUEUE_LENGTH,
              help="At most N jobs of this type dispatched or running.")
@click.option("--lock", "locks", multiple=True,
              help="KEY[:shared|:exclusive|:group=NAME]; KEY may hold {arg} (repeatable).")
@click.option("--no-simultaneous", is_flag=True,
              help="Two jobs of this type with the same args never run at once.")
@click.option("--max-worker-losses", type=COUNT, default=3, show_default=True,
              help="Times a job may lose its worker before it ends in error (not retries).")
@click.option("--rate-limit", callback=_rate_limit, metavar="N/s|N/m|N/h",
              help="At most N starts per second, minute or hour (per --rate-key).")
@click.option("--rate-key", metavar="TEMPLATE",
              help="Split the rate limit per key, e.g. 'tenant:{tenant}' (from the args).")
@click.option("--no-verify", is_flag=True, help="Do not check that a python handler imports.")
@click.pass_obj
def add(state: State, name: str, handler: str, description: str, pools: tuple[str, ...],
        cost: int, timeout: float | None, retries: int, retry_delay: float,
        retry_backoff: float, retry_max_delay: float | None, interval: str | None,
        backoff_factor: float | None, max_queue_length: int | None, locks: tuple[str, ...],
        no_simultaneous: bool, max_worker_losses: int, rate_limit: str | None,
        rate_key: str | None, no_verify: bool) -> None:
    """Create or update a task type."""
    try:
        parsed_interval = None if interval is None else parse_interval(interval,
                                                                       field="--interval")
    except DurationError as exc:
        raise click.BadParameter(str(exc).removeprefix("--interval: "),
                                 param_hint="--interval") from None
    # Unset, the spec's own default applies (as in YAML, where the field is optional).
    optional = {} if retry_max_delay is None else {"retry_max_delay": retry_max_delay}
    spec = state.yard.add_task_type(
        name, handler, verify=not no_verify, description=description,
        pools=pools or ("default",), cost=cost, timeout=timeout, retries=retries,
        retry_delay=retry_delay, retry_backoff=retry_backoff, interval=parsed_interval,
        backoff_factor=backoff_factor, max_queue_length=max_queue_length, locks=locks,
        simultaneous=not no_simultaneous, max_worker_losses=max_worker_losses,
        rate_limit=rate_limit, rate_key=rate_key, **optional,
    )
    click.echo(f"task type {spec.name} saved")


def policy_lines(spec: TaskTypeSpec) -> list[tuple[str, str]]:
    """A type's policy fields as ``taskyard apply`` names them, in the CLI's words
    (durations as 30s, 5m, 1d; ``none`` where unset)."""
    iv = spec.interval

    def text(value: object) -> str:
        return "none" if value is None else str(value)

    def seconds(value: float | None) -> str:
        return "none" if value is None else duration_text(value)

    return [
        ("pools", ", ".join(spec.pools)), ("cost", text(spec.cost)),
        ("timeout", seconds(spec.timeout)), ("retries", text(spec.retries)),
        ("retry_delay", seconds(spec.retry_delay)), ("retry_backoff", f"{spec.retry_backoff:g}"),
        ("retry_max_delay", seconds(spec.retry_max_delay)),
        ("interval", "none" if iv is None else
         ",".join(duration_text(v) for v in (iv.default, iv.minimum, iv.maximum))
         + " (default,min,max)"),
        ("backoff_factor", "none" if spec.backoff_factor is None
         else f"{spec.backoff_factor:g}"),
        ("max_queue_length", text(spec.max_queue_length)),
        ("rate_limit", text(spec.rate_limit)), ("rate_key", text(spec.rate_key)),
        ("locks", ", ".join(spec.locks) or "none"),
        ("simultaneous", "true" if spec.simultaneous else "false"),
        ("prerequisites", ", ".join(f"{p.type} (cache {duration_text(p.cache)})"
                                    for p in spec.prerequisites) or "none"),
        ("max_worker_losses", text(spec.max_worker_losses)),
    ]


@task_type.command("list")
@click.option("-v", "--verbose", is_flag=True, help="Show every policy field.")
@click.option("-t", "--type", "only", multiple=True, help="Only these types (repeatable).")
@json_option
@click.pass_obj
def list_(state: State, verbose: bool, only: tuple[str, ...], as_json: bool) -> None:
    """List task types (like swh's `task-type list`); an unknown -t type fails."""
    specs = state.yard.store.task_types.list()
    missing = sorted(set(only) - {s.name for s in specs})
    if missing:
        raise NotFound(f"no task type {', '.join(map(repr, missing))}")
    specs = [s for s in specs if not only or s.name in only]
    if as_json:
        print_json([s.to_json() for s in specs])
        return
    click.echo("Known task types:")
    for s in specs:
        click.echo(f"{s.name}: {s.handler}" if verbose else f"{s.name}:")
        if s.description:
            click.echo(f"  {s.description}")
        if verbose:
            for label, value in policy_lines(s):
                click.echo(f"  {label}: {value}")


@click.command("apply")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--no-verify", is_flag=True, help="Do not check that python handlers import.")
@click.pass_obj
def apply(state: State, file: Path, no_verify: bool) -> None:
    """Create or update the task types, pools and schedules a YAML file declares."""
    import yaml  # noqa: PLC0415 - start-up time: only apply reads YAML

    try:
        doc: Any = yaml.safe_load(file.read_text())
    except yaml.YAMLError as exc:
        raise click.BadParameter(f"not valid YAML: {exc}", param_hint="FILE") from None
    except RecursionError:  # nested far beyond the limit: the limit's own message
        raise InvalidInput(str(too_deep(str(file)))) from None
    decl = state.yard.apply(doc, verify=not no_verify)
    click.echo(f"applied {len(decl.task_types)} task type(s), {len(decl.pools)} pool(s), "
               f"{len(decl.schedules)} schedule(s)")


@click.group("pools")
def pools() -> None:
    """Pools: named groups of workers."""


@pools.command("list")
@json_option
@click.pass_obj
def pools_list(state: State, as_json: bool) -> None:
    """Pools with their live workers and capacity, and whether they are paused."""
    rows = state.yard.pools()
    if as_json:
        print_json(rows)
        return
    print_table(["pool", "workers", "capacity", "used", "paused"],
                ([r["name"], ", ".join(r["workers"]) or "-", r["capacity"], r["used"],
                  "paused" if r["paused"] else "-"] for r in rows), empty="no pools")


@pools.command("pause")
@click.argument("name")
@click.pass_obj
def pools_pause(state: State, name: str) -> None:
    """Place nothing new in pool NAME (jobs running there go on)."""
    state.yard.pause_pool(name)
    click.echo(f"pool {name} paused")


@pools.command("resume")
@click.argument("name")
@click.pass_obj
def pools_resume(state: State, name: str) -> None:
    """Place jobs in pool NAME again."""
    state.yard.pause_pool(name, paused=False)
    click.echo(f"pool {name} resumed")


def register(group: click.Group) -> None:
    group.add_command(task_type)
    group.add_command(apply)
    group.add_command(pools)
