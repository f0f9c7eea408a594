"""What makes a task type valid, checked before anything is stored."""

from __future__ import annotations

import math

from taskyard.core.durations import parse_duration
from taskyard.core.handlers import parse_handler
from taskyard.core.limits import INT_MAX, check_name, check_text, whole
from taskyard.core.locks import check_template
from taskyard.core.rate_limits import check_rate_key, parse_rate_limit
from taskyard.model.errors import InvalidInput, refused_as_invalid
from taskyard.model.records import TaskTypeSpec


def validate_task_type(spec: TaskTypeSpec) -> None:
    """Reject a spec whose fields cannot work, naming the field."""
    with refused_as_invalid():
        check_name(spec.name, "task type name")
    where = f"task type {spec.name!r}"
    if any(c.isspace() for c in spec.name):
        raise InvalidInput(f"{where}: the name must be 1-200 characters without spaces")
    with refused_as_invalid(where):
        check_text(spec.handler, "handler")
        parse_handler(spec.handler)
        check_text(spec.description, "description")
        if not spec.pools:
            raise ValueError("pools must name at least one pool")
        for pool in spec.pools:
            check_name(pool, "pool name")
        whole(spec.cost, "cost")
        whole(spec.retries, "retries")
        whole(spec.max_worker_losses, "max_worker_losses")
        if spec.max_queue_length is not None:
            whole(spec.max_queue_length, "max_queue_length", minimum=1, maximum=INT_MAX)
        for lock in spec.locks:
            check_name(lock, "lock")
            check_template(lock)
    checks: list[tuple[bool, str]] = [
        (_finite(spec.retry_delay) and spec.retry_delay >= 0, "retry_delay must be >= 0"),
        (_finite(spec.retry_max_delay) and spec.retry_max_delay >= 0,
         "retry_max_delay must be >= 0"),
        (_finite(spec.retry_backoff) and spec.retry_backoff >= 1, "retry_backoff must be >= 1"),
        (spec.timeout is None or (_finite(spec.timeout) and spec.timeout > 0),
         "timeout must be > 0"),
        (spec.backoff_factor is None or (_finite(spec.backoff_factor)
                                         and spec.backoff_factor > 1),
         "backoff_factor must be > 1"),
    ]
    for ok, message in checks:
        if not ok:
            raise InvalidInput(f"{where}: {message}")
    _check_durations(spec, where)
    with refused_as_invalid(where):
        if spec.rate_limit is not None:
            parse_rate_limit(spec.rate_limit)
        if spec.rate_key is not None:
            check_rate_key(spec.rate_key)
    if spec.rate_key is not None and spec.rate_limit is None:
        raise InvalidInput(f"{where}: rate_key needs a rate_limit")


def _check_durations(spec: TaskTypeSpec, where: str) -> None:
    """Every duration of the type within :data:`DURATION_MAX` (100 years), so that no
    deadline or next run computed from it leaves the years a time may hold."""
    durations: list[tuple[str, float | None]] = [
        ("timeout", spec.timeout), ("retry_delay", spec.retry_delay),
        ("retry_max_delay", spec.retry_max_delay)]
    if spec.interval is not None:
        durations += [("interval", v) for v in (spec.interval.default,
                                                spec.interval.minimum, spec.interval.maximum)]
    durations += [(f"prerequisite {p.type!r} cache", p.cache) for p in spec.prerequisites]
    with refused_as_invalid(where):
        for name, value in durations:
            if value is not None:
                parse_duration(value, field=name)


def _finite(value: float) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)
