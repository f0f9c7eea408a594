"""Arrivals of a scenario: what arrives (a job of a type, or a graph from a file) and
when (a Poisson process, given instants, a fixed interval, cron, an adaptive schedule).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from taskyard.core.cron import CronError, parse_cron, resolve_zone
from taskyard.core.graph import GraphError, GraphSpec, parse_graph
from taskyard.core.locks import check_template
from taskyard.core.templates import template_fields
from taskyard.sim.distributions import ArgsSpec, ValueSpec, parse_args, parse_value
from taskyard.sim.fields import (
    ScenarioError,
    boolean,
    duration,
    integer,
    known_keys,
    mapping,
    names,
    rate,
    text,
    times,
)

if TYPE_CHECKING:
    from taskyard.sim.specs import TypeSpec

TIMINGS = ("poisson", "at", "every", "cron", "adaptive")
_FIELDS = {"type", "graph", "name", "args", "priority", "pools", "burst", "start", "end",
           "count", "timezone", *TIMINGS}


@dataclass(frozen=True, slots=True)
class Arrival:
    """One arrival process: jobs of ``type`` or instances of ``graph``."""

    index: int
    name: str
    kind: str
    """One of :data:`TIMINGS`."""
    type: str | None = None
    graph: GraphSpec | None = None
    rate: float = 0.0
    at: tuple[float, ...] = ()
    burst: int = 1
    every: float = 0.0
    cron: str = ""
    timezone: str = "UTC"
    start: float = 0.0
    end: float | None = None
    count: int | None = None
    args: ArgsSpec = field(default_factory=ArgsSpec)
    priority: ValueSpec = field(default_factory=lambda: ValueSpec(fixed=0))
    pools: tuple[str, ...] | None = None


def parse_arrivals(value: Any, types: Mapping[str, TypeSpec], until: float | None,
                   base: Path) -> tuple[Arrival, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ScenarioError("arrivals: must be a list")
    return tuple(_arrival(n, item, types, until, base) for n, item in enumerate(value))


def _arrival(n: int, body: Any, types: Mapping[str, TypeSpec], until: float | None,
             base: Path) -> Arrival:
    where = f"arrivals[{n}]"
    body = mapping(body, where)
    known_keys(body, _FIELDS, where)
    kinds = [k for k in TIMINGS if k in body]
    if len(kinds) != 1:
        raise ScenarioError(f"{where}: give exactly one of {', '.join(TIMINGS)}")
    kind = kinds[0]
    if ("type" in body) == ("graph" in body):
        raise ScenarioError(f"{where}: give either type (a task type) or graph (a file)")
    type_name, graph = None, None
    if "type" in body:
        type_name = text(body["type"], f"{where}.type")
        if type_name not in types:
            raise ScenarioError(f"{where}.type: unknown task type {type_name!r}")
    else:
        if kind == "adaptive":
            raise ScenarioError(f"{where}.adaptive: a schedule of a task type, not a graph")
        for own in ("args", "priority", "pools"):
            if own in body:
                raise ScenarioError(f"{where}.{own}: a graph's tasks carry their own {own}")
        graph = _graph(body["graph"], f"{where}.graph", types, base)
    args = parse_args(body.get("args"), f"{where}.args")
    arrival = Arrival(
        index=n, name=text(body.get("name", f"arrivals[{n}]"), f"{where}.name"), kind=kind,
        type=type_name, graph=graph, args=args,
        priority=parse_value(body.get("priority", 0), f"{where}.priority", whole=True),
        pools=None if body.get("pools") is None else names(body["pools"], f"{where}.pools"),
        burst=integer(body.get("burst", 1), f"{where}.burst", minimum=1),
        start=duration(body.get("start", 0), f"{where}.start"),
        end=None if body.get("end") is None else duration(body["end"], f"{where}.end"),
        count=None if body.get("count") is None else integer(body["count"], f"{where}.count",
                                                             minimum=0),
        timezone=_zone(body.get("timezone", "UTC"), f"{where}.timezone"),
        **_timing(kind, body[kind], f"{where}.{kind}", types.get(type_name or "")),
    )
    if "burst" in body and kind != "at":
        raise ScenarioError(f"{where}.burst: goes with at (jobs at given instants)")
    if kind != "at" and arrival.end is None and arrival.count is None and until is None:
        raise ScenarioError(f"{where}: arrives for ever: give its end or count, or the "
                            "scenario's until")
    if type_name is not None:
        _check_args(types[type_name], args.names(), where)
    return arrival


def _timing(kind: str, value: Any, where: str, spec: TypeSpec | None) -> dict[str, Any]:
    if kind == "poisson":
        return {"rate": rate(value, where)}
    if kind == "at":
        return {"at": times(value, where)}
    if kind == "every":
        return {"every": duration(value, where, positive=True)}
    if kind == "cron":
        try:
            parse_cron(text(value, where))
        except CronError as exc:
            raise ScenarioError(f"{where}: {exc}") from None
        return {"cron": value}
    if not boolean(value, where):
        raise ScenarioError(f"{where}: must be true (a schedule on the type's interval)")
    assert spec is not None
    if spec.interval is None:
        raise ScenarioError(f"{where}: task type {spec.name!r} has no interval "
                            "(interval: DEFAULT,MIN,MAX)")
    return {}


def _zone(value: Any, where: str) -> str:
    try:
        resolve_zone(text(value, where))
    except CronError as exc:
        raise ScenarioError(f"{where}: {exc}") from None
    return str(value)


def _graph(value: Any, where: str, types: Mapping[str, TypeSpec], base: Path) -> GraphSpec:
    path = base / text(value, where)
    try:
        raw = path.read_text()
        doc = json.loads(raw) if path.suffix == ".json" else yaml.safe_load(raw)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise ScenarioError(f"{where}: cannot read {path}: {' '.join(str(exc).split())}"
                            ) from None
    try:
        spec = parse_graph(doc, known_types=lambda name: name in types)
    except GraphError as exc:
        raise ScenarioError(f"{where}: {exc}") from None
    for label, node in spec.tasks.items():
        if node.type:  # an approval, a wait or a sleep has none (see sim/waits.py)
            _check_args(types[node.type], set(node.args), f"{where} task {label!r}")
    return spec


def _check_args(spec: TypeSpec, given: set[str], where: str) -> None:
    """The args a type needs from every job: its duration's, its locks', its rate key's."""
    arg = spec.duration.arg
    if arg and arg not in given:
        raise ScenarioError(f"{where}.args: task type {spec.name!r} takes its duration from "
                            f"arg {arg!r}, which these jobs lack")
    for lock in spec.locks:
        lacking = [f for f in check_template(lock) if f not in given]
        if lacking:
            raise ScenarioError(f"{where}.args: task type {spec.name!r} takes its lock "
                                f"{lock!r} from arg {lacking[0]!r}, which these jobs lack")
    if spec.rate_key is not None:
        lacking = [f for f in template_fields(spec.rate_key, "rate_key") if f not in given]
        if lacking:
            raise ScenarioError(f"{where}.args: task type {spec.name!r} takes its rate key "
                                f"from arg {lacking[0]!r}, which these jobs lack")

