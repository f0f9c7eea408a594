"""What makes a task type valid, checked before anything is stored."""

from __future__ import annotations

from taskyard.core.handlers import HandlerSpecError, parse_handler
from taskyard.core.locks import LockTemplateError, check_template
from taskyard.core.rate_limits import RateLimitError, check_rate_key, parse_rate_limit
from taskyard.model.errors import InvalidInput
from taskyard.model.records import TaskTypeSpec


def validate_task_type(spec: TaskTypeSpec) -> None:
    """Reject a spec whose fields cannot work, naming the field."""
    where = f"task type {spec.name!r}"
    if not spec.name or len(spec.name) > 200 or any(c.isspace() for c in spec.name):
        raise InvalidInput(f"{where}: the name must be 1-200 characters without spaces")
    try:
        parse_handler(spec.handler)
    except HandlerSpecError as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    if not spec.pools or any(not p for p in spec.pools):
        raise InvalidInput(f"{where}: pools must name at least one pool")
    checks: list[tuple[bool, str]] = [
        (spec.cost >= 0, "cost must be >= 0"),
        (spec.retries >= 0, "retries must be >= 0"),
        (spec.max_worker_losses >= 0, "max_worker_losses must be >= 0"),
        (spec.retry_delay >= 0, "retry_delay must be >= 0"),
        (spec.retry_backoff >= 1, "retry_backoff must be >= 1"),
        (spec.timeout is None or spec.timeout > 0, "timeout must be > 0"),
        (spec.max_queue_length is None or spec.max_queue_length > 0,
         "max_queue_length must be > 0"),
        (spec.backoff_factor is None or spec.backoff_factor > 1, "backoff_factor must be > 1"),
    ]
    for ok, message in checks:
        if not ok:
            raise InvalidInput(f"{where}: {message}")
    for lock in spec.locks:
        try:
            check_template(lock)
        except LockTemplateError as exc:
            raise InvalidInput(f"{where}: {exc}") from None
    try:
        if spec.rate_limit is not None:
            parse_rate_limit(spec.rate_limit)
        if spec.rate_key is not None:
            check_rate_key(spec.rate_key)
    except RateLimitError as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    if spec.rate_key is not None and spec.rate_limit is None:
        raise InvalidInput(f"{where}: rate_key needs a rate_limit")
