"""A simulation scenario: workers, task types, arrivals; parsed and checked whole.

The format is documented in docs/simulator.md. Task types take taskyard's own fields
(as in ``taskyard apply``) plus how long their attempts run and how often they fail.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from taskyard.core.durations import DurationError, parse_interval
from taskyard.core.locks import LockTemplateError, check_template
from taskyard.core.rate_limits import RateLimitError, check_rate_key, parse_rate_limit
from taskyard.core.retry import RetryPolicy
from taskyard.sim.arrival_spec import Arrival, parse_arrivals
from taskyard.sim.distributions import parse_duration_spec
from taskyard.sim.fields import (
    ScenarioError,
    boolean,
    duration,
    integer,
    known_keys,
    mapping,
    names,
    number,
    probability,
    text,
    times,
)
from taskyard.sim.recorded import RecordedJob
from taskyard.sim.specs import (
    DEFAULT_PREFETCH,
    Prerequisite,
    SchedulerSpec,
    TypeSpec,
    WorkerGroup,
)
from taskyard.sim.wait_spec import WaitBehaviour, check_graph, parse_waits

DEFAULT_START = "2026-01-05T00:00:00Z"
"""Virtual time 0 (a Monday, 00:00 UTC), for cron schedules."""
@dataclass(frozen=True)
class Scenario:
    name: str
    workers: tuple[WorkerGroup, ...]
    types: Mapping[str, TypeSpec]
    arrivals: tuple[Arrival, ...]
    seed: int = 1
    start_epoch: float = field(default_factory=lambda: _epoch(DEFAULT_START, "start"))
    until: float | None = None
    """Arrivals stop then (seconds from the start)."""
    stop: float | None = None
    """The simulation stops then at the latest; by default when all work has ended."""
    sample: float | None = None
    """Seconds between samples of the queue length; by default about 500 per run."""
    scheduler: SchedulerSpec = field(default_factory=SchedulerSpec)
    recorded: tuple[RecordedJob, ...] = ()
    """Replay: jobs from a database's history (see :mod:`taskyard.sim.replay`)."""
    waits: Mapping[str, WaitBehaviour] = field(default_factory=dict)
    """When the graphs' approvals and waits are decided (see :mod:`taskyard.sim.wait_spec`)."""

    def with_workers(self, sizes: Mapping[str, tuple[int, int | None]], *,
                     new_groups: bool = False) -> Scenario:
        """The scenario with other worker groups (``--workers GROUP=N[xC]``): ``N``
        workers of capacity ``C`` (else the group's). ``new_groups``: a name that is no
        group adds one, serving the pools the name lists (``east+default``)."""
        known = {g.name: g for g in self.workers}
        groups = list(self.workers)
        for name, (count, capacity) in sizes.items():
            group = known.get(name)
            if group is None and not new_groups:
                raise ScenarioError(
                    f"--workers {name}: no worker group {name!r} in the scenario "
                    f"(groups: {', '.join(sorted(known)) or 'none'})")
            if group is None:
                groups.append(WorkerGroup(name, count, 1 if capacity is None else capacity,
                                          tuple(name.split("+"))))
                continue
            groups[groups.index(group)] = dataclasses.replace(
                group, count=count, capacity=group.capacity if capacity is None else capacity)
        return dataclasses.replace(self, workers=tuple(groups))


_TOP = {"name", "seed", "start", "until", "stop", "sample", "scheduler", "workers",
        "task_types", "arrivals", "waits"}
_TYPE_FIELDS = {
    "handler", "description", "pools", "cost", "timeout", "retries", "retry_delay",
    "retry_backoff", "retry_max_delay", "interval", "backoff_factor", "max_queue_length",
    "locks", "simultaneous", "prerequisites", "max_worker_losses",
    "duration", "fail", "eventful", "rate_limit", "rate_key",
}
_WORKER_FIELDS = {"count", "capacity", "pools", "prefetch", "lease", "crash"}


def load_scenario(path: str | Path) -> Scenario:
    """Read and check a scenario file (YAML); graph files are read relative to it."""
    source = Path(path)
    try:
        doc = yaml.safe_load(source.read_text())
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{source}: not YAML ({' '.join(str(exc).split())})") from None
    return parse_scenario(doc, name=source.stem, base=source.parent)


def parse_scenario(doc: Any, *, name: str = "scenario", base: Path | None = None) -> Scenario:
    """Check a scenario document (already loaded); every error names its field."""
    doc = mapping(doc, "scenario")
    known_keys(doc, _TOP, "scenario")
    types = {str(k): _task_type(str(k), v)
             for k, v in mapping(doc.get("task_types") or {}, "task_types").items()}
    for spec in types.values():
        for n, pre in enumerate(spec.prerequisites):
            if pre.type not in types:
                raise ScenarioError(f"task_types.{spec.name}.prerequisites[{n}].type: "
                                    f"unknown task type {pre.type!r}")
    workers = tuple(_worker_group(str(k), v)
                    for k, v in mapping(doc.get("workers") or {}, "workers").items())
    until = None if doc.get("until") is None else duration(doc["until"], "until")
    arrivals = parse_arrivals(doc.get("arrivals"), types, until, base or Path.cwd())
    waits = parse_waits(doc.get("waits"))
    for n, arrival in enumerate(arrivals):
        if arrival.graph is not None:
            check_graph(arrival.graph, waits, f"arrivals[{n}].graph")
    scheduler = mapping(doc.get("scheduler") or {}, "scheduler")
    known_keys(scheduler, {"aging", "scan_limit", "timeout_grace"}, "scheduler")
    return Scenario(
        name=text(doc.get("name", name), "name"),
        workers=workers, types=types, arrivals=arrivals,
        seed=integer(doc.get("seed", 1), "seed"),
        start_epoch=_epoch(doc.get("start", DEFAULT_START), "start"),
        until=until,
        stop=None if doc.get("stop") is None else duration(doc["stop"], "stop", positive=True),
        sample=None if doc.get("sample") is None else duration(doc["sample"], "sample",
                                                               positive=True),
        waits=waits,
        scheduler=SchedulerSpec(
            aging=duration(scheduler.get("aging", 600), "scheduler.aging"),
            scan_limit=integer(scheduler.get("scan_limit", 10_000), "scheduler.scan_limit",
                               minimum=1),
            timeout_grace=duration(scheduler.get("timeout_grace", 10),
                                   "scheduler.timeout_grace"),
        ),
    )


def _epoch(value: Any, where: str) -> float:
    if isinstance(value, datetime):  # YAML reads an unquoted ISO time as a datetime
        moment = value
    else:
        try:
            moment = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError:
            raise ScenarioError(f"{where}: {value!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _worker_group(name: str, body: Any) -> WorkerGroup:
    where = f"workers.{name}"
    body = mapping(body, where)
    known_keys(body, _WORKER_FIELDS, where)
    if "capacity" not in body:
        raise ScenarioError(f"{where}.capacity: required (an integer >= 0)")
    crash_every: float | None = None
    crash_at: tuple[float, ...] = ()
    restart = 1.0
    if body.get("crash") is not None:
        crash = mapping(body["crash"], f"{where}.crash")
        known_keys(crash, {"every", "at", "restart"}, f"{where}.crash")
        if "every" not in crash and "at" not in crash:
            raise ScenarioError(f"{where}.crash: give every (mean time between crashes) "
                                "or at (instants)")
        if "every" in crash:
            crash_every = duration(crash["every"], f"{where}.crash.every", positive=True)
        if "at" in crash:
            crash_at = times(crash["at"], f"{where}.crash.at")
        restart = duration(crash.get("restart", 1), f"{where}.crash.restart")
    return WorkerGroup(
        name=name,
        count=integer(body.get("count", 1), f"{where}.count", minimum=0),
        capacity=integer(body["capacity"], f"{where}.capacity", minimum=0),
        pools=names(body.get("pools", ["default"]), f"{where}.pools"),
        prefetch=integer(body.get("prefetch", DEFAULT_PREFETCH), f"{where}.prefetch",
                         minimum=0),
        lease=duration(body.get("lease", 15), f"{where}.lease"),
        crash_every=crash_every, crash_at=crash_at, restart=restart,
    )


def _task_type(name: str, body: Any) -> TypeSpec:
    where = f"task_types.{name}"
    body = mapping(body, where)
    known_keys(body, _TYPE_FIELDS, where)
    if "duration" not in body:
        raise ScenarioError(f"{where}.duration: required (how long an attempt runs)")
    opt = body.get
    locks = names(opt("locks"), f"{where}.locks") if opt("locks") else ()
    for n, template in enumerate(locks):
        try:
            check_template(template)
        except LockTemplateError as exc:
            raise ScenarioError(f"{where}.locks[{n}]: {exc}") from None
    interval = None
    if opt("interval") is not None:
        try:
            interval = parse_interval(opt("interval"), field=f"{where}.interval")
        except DurationError as exc:
            raise ScenarioError(str(exc)) from None
    queue = opt("max_queue_length")
    return TypeSpec(
        name=name,
        pools=names(opt("pools", ["default"]), f"{where}.pools"),
        cost=integer(opt("cost", 1), f"{where}.cost", minimum=0),
        timeout=None if opt("timeout") is None else duration(opt("timeout"), f"{where}.timeout",
                                                             positive=True),
        retry=RetryPolicy(
            integer(opt("retries", 0), f"{where}.retries", minimum=0),
            duration(opt("retry_delay", 0), f"{where}.retry_delay"),
            number(opt("retry_backoff", 1), f"{where}.retry_backoff", minimum=1),
            duration(opt("retry_max_delay", 3600), f"{where}.retry_max_delay"),
        ),
        locks=locks,
        simultaneous=boolean(opt("simultaneous", True), f"{where}.simultaneous"),
        max_queue_length=None if queue is None else integer(
            queue, f"{where}.max_queue_length", minimum=1),
        max_worker_losses=integer(opt("max_worker_losses", 3), f"{where}.max_worker_losses",
                                  minimum=0),
        interval=interval,
        backoff_factor=None if opt("backoff_factor") is None else _factor(
            opt("backoff_factor"), f"{where}.backoff_factor"),
        prerequisites=_prerequisites(opt("prerequisites"), f"{where}.prerequisites"),
        **_rate(opt("rate_limit"), opt("rate_key"), where),
        duration=parse_duration_spec(body["duration"], f"{where}.duration"),
        fail=probability(opt("fail", 0.0), f"{where}.fail"),
        eventful=None if opt("eventful") is None else probability(opt("eventful"),
                                                                  f"{where}.eventful"),
    )


def _rate(limit: Any, key: Any, where: str) -> dict[str, Any]:
    """``rate_limit`` and ``rate_key``, checked as ``taskyard apply`` checks them."""
    if limit is None:
        if key is not None:
            raise ScenarioError(f"{where}.rate_key: needs a rate_limit")
        return {}
    try:
        rate = parse_rate_limit(limit, field=f"{where}.rate_limit")
        if key is not None:
            check_rate_key(text(key, f"{where}.rate_key"), field=f"{where}.rate_key")
    except RateLimitError as exc:
        raise ScenarioError(str(exc)) from None
    return {"rate_limit": rate, "rate_key": key}


def _factor(value: Any, where: str) -> float:
    factor = number(value, where)
    if factor <= 1 or math.isinf(factor):
        raise ScenarioError(f"{where}: must be a number > 1")
    return factor


def _prerequisites(value: Any, where: str) -> tuple[Prerequisite, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ScenarioError(f"{where}: must be a list of {{type, args, cache}}")
    out = []
    for n, entry in enumerate(value):
        at = f"{where}[{n}]"
        item = mapping(entry, at)
        known_keys(item, {"type", "args", "cache"}, at)
        out.append(Prerequisite(text(item.get("type"), f"{at}.type"),
                                dict(mapping(item.get("args") or {}, f"{at}.args")),
                                duration(item.get("cache", 0), f"{at}.cache")))
    return tuple(out)
