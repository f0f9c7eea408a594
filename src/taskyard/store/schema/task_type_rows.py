"""Task types as rows of ``task_types``, and back."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from taskyard.core.durations import Interval
from taskyard.core.rate_limits import parse_rate_limit
from taskyard.model.records import Prerequisite, TaskTypeSpec, dumps, loads
from taskyard.store import schema as t


def spec_to_row(spec: TaskTypeSpec) -> dict[str, Any]:
    interval = spec.interval
    return {
        "name": spec.name,
        "handler": spec.handler,
        "description": spec.description,
        "pools": dumps(list(spec.pools)),
        "cost": spec.cost,
        "timeout": spec.timeout,
        "retries": spec.retries,
        "retry_delay": spec.retry_delay,
        "retry_backoff": spec.retry_backoff,
        "retry_max_delay": spec.retry_max_delay,
        "interval_default": interval.default if interval else None,
        "interval_min": interval.minimum if interval else None,
        "interval_max": interval.maximum if interval else None,
        "backoff_factor": spec.backoff_factor,
        "max_queue_length": spec.max_queue_length,
        "locks": dumps(list(spec.locks)),
        "simultaneous": spec.simultaneous,
        "prerequisites": dumps(
            [{"type": p.type, "args": p.args, "cache": p.cache} for p in spec.prerequisites]
        ),
        "max_worker_losses": spec.max_worker_losses,
        "rate_limit": None if spec.rate_limit is None
        else parse_rate_limit(spec.rate_limit).encode(),
        "rate_key": spec.rate_key,
    }


def row_to_spec(row: Any) -> TaskTypeSpec:
    """A spec from a ``task_types`` row (any object with a ``_mapping``)."""
    return _spec(row._mapping)


COLUMNS = tuple(c.name for c in t.task_types.c)
SELECT_SPECS = f"SELECT {', '.join(COLUMNS)} FROM task_types WHERE {{which}}"


@functools.lru_cache(maxsize=512)
def cached_spec(row: tuple[Any, ...]) -> TaskTypeSpec:
    return _spec(dict(zip(COLUMNS, row, strict=True)))


def _spec(m: Mapping[str, Any]) -> TaskTypeSpec:
    interval = (
        Interval(m["interval_default"], m["interval_min"], m["interval_max"])
        if m["interval_default"] is not None
        else None
    )
    return TaskTypeSpec(
        name=m["name"],
        handler=m["handler"],
        description=m["description"],
        pools=tuple(loads(m["pools"])),
        cost=m["cost"],
        timeout=m["timeout"],
        retries=m["retries"],
        retry_delay=m["retry_delay"],
        retry_backoff=m["retry_backoff"],
        retry_max_delay=m["retry_max_delay"],
        interval=interval,
        backoff_factor=m["backoff_factor"],
        max_queue_length=m["max_queue_length"],
        locks=tuple(loads(m["locks"])),
        simultaneous=bool(m["simultaneous"]),
        prerequisites=tuple(
            Prerequisite(p["type"], p.get("args", {}), float(p.get("cache", 0)))
            for p in loads(m["prerequisites"])
        ),
        max_worker_losses=m["max_worker_losses"],
        rate_limit=m["rate_limit"],
        rate_key=m["rate_key"],
    )
