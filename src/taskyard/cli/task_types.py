"""``taskyard task-type add|list``, ``taskyard apply``, ``taskyard pools list``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import yaml

from taskyard.cli.main import DURATION, POSITIVE_DURATION, State
from taskyard.cli.output import json_option, print_json, print_table
from taskyard.core.durations import DurationError, parse_interval
from taskyard.core.rate_limits import RateLimitError, parse_rate_limit
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
@click.option("--cost", type=click.IntRange(min=0), default=1, show_default=True,
              help="Capacity units a job uses.")
@click.option("--timeout", type=POSITIVE_DURATION, help="Per attempt: 90, 90s, 5m, 2h, 1d.")
@click.option("--retries", type=click.IntRange(min=0), default=0, show_default=True,
              help="Extra attempts after a failure (N+1 in all).")
@click.option("--retry-delay", type=DURATION, default="0", help="Delay before a retry (duration).")
@click.option("--retry-backoff", type=float, default=1.0, show_default=True,
              help="Each further retry waits this factor longer.")
@click.option("--retry-max-delay", type=DURATION,
              help="Longest delay a growing backoff reaches (duration) [default: 1h].")
@click.option("--interval", help="Adaptive recurring interval DEFAULT[,MIN,MAX], e.g. 1d,12h,64d.")
@click.option("--backoff-factor", type=float, help="Adaptive interval factor (> 1).")
@click.option("--max-queue-length", type=click.IntRange(min=1),
              help="At most N jobs of this type dispatched or running.")
@click.option("--lock", "locks", multiple=True,
              help="KEY[:shared|:exclusive|:group=NAME]; KEY may hold {arg} (repeatable).")
@click.option("--no-simultaneous", is_flag=True,
              help="Two jobs of this type with the same args never run at once.")
@click.option("--max-worker-losses", type=click.IntRange(min=0), default=3, show_default=True,
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


def _interval_text(spec: TaskTypeSpec) -> str:
    if spec.interval is None:
        return "None"
    iv = spec.interval
    return f"{_human(iv.default)} [{_human(iv.minimum)}, {_human(iv.maximum)}]"


def _human(seconds: float) -> str:
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{days} day{'s' if days != 1 else ''}, {clock}" if days else clock


@task_type.command("list")
@click.option("-v", "--verbose", is_flag=True, help="Show every policy field.")
@click.option("-t", "--type", "only", multiple=True, help="Only these types.")
@json_option
@click.pass_obj
def list_(state: State, verbose: bool, only: tuple[str, ...], as_json: bool) -> None:
    """List task types (like swh's `task-type list`)."""
    specs = [s for s in state.yard.store.task_types.list() if not only or s.name in only]
    if as_json:
        print_json([s.to_json() for s in specs])
        return
    click.echo("Known task types:")
    for s in specs:
        click.echo(f"{s.name}: {s.handler}" if verbose else f"{s.name}:")
        if s.description:
            click.echo(f"  {s.description}")
        if verbose:
            retry_delay = _human(s.retry_delay) if s.retry_delay else "None"
            for label, value in (
                ("pools", ", ".join(s.pools)), ("cost", s.cost),
                ("timeout", None if s.timeout is None else _human(s.timeout)),
                ("interval", _interval_text(s)), ("backoff_factor", s.backoff_factor),
                ("max_queue_length", s.max_queue_length),
                ("rate_limit", s.rate_limit),
                ("rate_key", s.rate_key),
                ("num_retries", s.retries or None), ("retry_delay", retry_delay),
                ("retry_max_delay", _human(s.retry_max_delay)),
                ("max_worker_losses", s.max_worker_losses),
                ("locks", ", ".join(s.locks) or None),
                ("simultaneous", s.simultaneous),
                ("prerequisites", ", ".join(f"{p.type} (cache {p.cache:g}s)"
                                            for p in s.prerequisites) or None),
            ):
                click.echo(f"  {label}: {value}")


@click.command("apply")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--no-verify", is_flag=True, help="Do not check that python handlers import.")
@click.pass_obj
def apply(state: State, file: Path, no_verify: bool) -> None:
    """Create or update the task types, pools and schedules a YAML file declares."""
    try:
        doc: Any = yaml.safe_load(file.read_text())
    except yaml.YAMLError as exc:
        raise click.BadParameter(f"not valid YAML: {exc}", param_hint="FILE") from None
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
    """Pools with their live workers and capacity."""
    rows = state.yard.pools()
    if as_json:
        print_json(rows)
        return
    print_table(["pool", "workers", "capacity", "used"],
                ([r["name"], ", ".join(r["workers"]) or "-", r["capacity"], r["used"]]
                 for r in rows), empty="no pools")


def register(group: click.Group) -> None:
    group.add_command(task_type)
    group.add_command(apply)
    group.add_command(pools)
