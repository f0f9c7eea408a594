"""``taskyard apply``: declarative task types, pools and schedules from YAML.

The same field names as the CLI options (see DESIGN.md), so a deployment can
keep its configuration in git. Everything is validated before anything is
written; unknown fields are named.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from taskyard.core.durations import DurationError, parse_duration, parse_interval
from taskyard.core.limits import check_name, check_text
from taskyard.model.errors import InvalidInput, refused_as_invalid
from taskyard.model.records import Prerequisite, TaskTypeSpec

TASK_TYPE_FIELDS = {
    "handler", "description", "pools", "cost", "timeout", "retries", "retry_delay",
    "retry_backoff", "retry_max_delay", "interval", "backoff_factor", "max_queue_length",
    "locks", "simultaneous", "prerequisites", "max_worker_losses", "rate_limit", "rate_key",
}


@dataclass
class Declarations:
    """What a configuration file declares, validated and ready to write."""

    task_types: list[TaskTypeSpec] = field(default_factory=list)
    pools: dict[str, str] = field(default_factory=dict)
    schedules: dict[str, dict[str, Any]] = field(default_factory=dict)


def parse_config(doc: Any) -> Declarations:
    """Validate a configuration document (already loaded from YAML)."""
    if doc is None:
        return Declarations()
    if not isinstance(doc, Mapping):
        raise InvalidInput("config: expected a mapping with task_types, pools, schedules")
    unknown = set(doc) - {"task_types", "pools", "schedules"}
    if unknown:
        raise InvalidInput(f"config: unknown sections {sorted(unknown)}")
    out = Declarations()
    types = doc.get("task_types") or {}
    if not isinstance(types, Mapping):
        raise InvalidInput("config: task_types must map names to task types")
    specs = [_task_type(str(name), body) for name, body in types.items()]
    out.task_types = _prerequisites_first(specs)
    pools = doc.get("pools") or {}
    if isinstance(pools, list):
        pools = dict.fromkeys(pools, "")
    if not isinstance(pools, Mapping):
        raise InvalidInput("config: pools must be a list of names or map names to descriptions")
    out.pools = {str(k): str((v or {}).get("description", "") if isinstance(v, Mapping)
                             else (v or "")) for k, v in pools.items()}
    for pool, description in out.pools.items():
        with refused_as_invalid("config: pools"):
            check_name(pool, "pool name")
            check_text(description, f"pool {pool!r}: description")
    schedules = doc.get("schedules") or {}
    if not isinstance(schedules, Mapping):
        raise InvalidInput("config: schedules must map names to schedules")
    for name, body in schedules.items():
        if not isinstance(body, Mapping):
            raise InvalidInput(f"schedule {name!r}: must be a mapping")
        out.schedules[str(name)] = dict(body)
    return out


def _task_type(name: str, body: Any) -> TaskTypeSpec:
    where = f"task type {name!r}"
    if not isinstance(body, Mapping):
        raise InvalidInput(f"{where}: must be a mapping with at least 'handler'")
    unknown = set(body) - TASK_TYPE_FIELDS
    if unknown:
        raise InvalidInput(f"{where}: unknown fields {sorted(unknown)}")
    if not isinstance(body.get("handler"), str):
        raise InvalidInput(f"{where}: 'handler' is required (python:MOD:FUNC or shell:CMD)")
    kwargs: dict[str, Any] = {}
    try:
        for key, convert in _CONVERTERS.items():
            if body.get(key) is not None:
                kwargs[key] = convert(body[key], f"{where}: {key}")
    except DurationError as exc:  # its message starts with the field: "{where}: {key}"
        raise InvalidInput(str(exc)) from None
    return TaskTypeSpec(name=name, handler=body["handler"], **kwargs)


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{where} must be a whole number")
    return value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{where} must be a number")
    return float(value)


def _names(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise InvalidInput(f"{where} must be a list of names")
    return tuple(value)


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"{where} must be true or false")
    return value


def _prereqs(value: Any, where: str) -> tuple[Prerequisite, ...]:
    if not isinstance(value, list):
        raise InvalidInput(f"{where} must be a list of {{type, args, cache}}")
    out = []
    for item in value:
        if not isinstance(item, Mapping) or not isinstance(item.get("type"), str):
            raise InvalidInput(f"{where}: each entry needs a 'type'")
        extra = set(item) - {"type", "args", "cache"}
        if extra:
            raise InvalidInput(f"{where}: unknown fields {sorted(extra)}")
        args = item.get("args") or {}
        if not isinstance(args, Mapping):
            raise InvalidInput(f"{where}: args must be a mapping")
        out.append(Prerequisite(item["type"], dict(args),
                                parse_duration(item.get("cache", 0), field=f"{where} cache")))
    return tuple(out)


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{where} must be text")
    return value

_CONVERTERS: dict[str, Callable[[Any, str], Any]] = {
    "description": lambda v, w: str(v),
    "pools": _names,
    "cost": _int,
    "timeout": lambda v, w: parse_duration(v, field=w),
    "retries": _int,
    "retry_delay": lambda v, w: parse_duration(v, field=w),
    "retry_backoff": _number,
    "retry_max_delay": lambda v, w: parse_duration(v, field=w),
    "interval": lambda v, w: parse_interval(v, field=w),
    "backoff_factor": _number,
    "max_queue_length": _int,
    "locks": _names,
    "simultaneous": _bool,
    "prerequisites": _prereqs,
    "max_worker_losses": _int,
    "rate_limit": _text,
    "rate_key": _text,
}



def _prerequisites_first(specs: list[TaskTypeSpec]) -> list[TaskTypeSpec]:
    """Order types so that a prerequisite's type is written before the type needing it."""
    by_name = {s.name: s for s in specs}
    ordered: list[TaskTypeSpec] = []
    placed: set[str] = set()
    for spec in specs:
        stack = [spec]
        while stack:
            top = stack[-1]
            missing = [p.type for p in top.prerequisites
                       if p.type in by_name and p.type not in placed and p.type != top.name
                       and by_name[p.type] not in stack]
            if missing:
                stack.append(by_name[missing[0]])
                continue
            stack.pop()
            if top.name not in placed:
                placed.add(top.name)
                ordered.append(top)
    return ordered
