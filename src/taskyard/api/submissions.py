"""Submit options as Python users write them, checked and turned into submissions."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from taskyard.core.durations import DurationError, parse_duration, parse_when
from taskyard.model.errors import InvalidInput
from taskyard.model.records import JobSubmission


@dataclass(frozen=True)
class SubmitOptions:
    """How jobs are submitted, besides their type and args (see :meth:`Yard.submit`)."""

    priority: int = 0
    run_after: float | str | None = None
    pools: Sequence[str] | None = None
    locks: Sequence[str] = ()
    timeout: float | str | None = None
    unique_key: str | None = None
    unique_for: float | str | None = None
    on_duplicate: str = "existing"
    connection: Any = None
    """A caller's connection whose transaction the submit joins (PostgreSQL)."""

    @classmethod
    def of(cls, where: str, **options: Any) -> SubmitOptions:
        """Options by name; InvalidInput names an unknown one."""
        unknown = set(options) - NAMES
        if unknown:
            raise InvalidInput(f"{where}: unknown options {sorted(unknown)} "
                               f"(one of {', '.join(sorted(NAMES))})")
        return cls(**options)

    def submissions(self, type_name: str, args_list: Sequence[Mapping[str, Any]],
                    now: Callable[[], float]) -> list[JobSubmission]:
        """One submission per args mapping; ``now``: the database clock (read only for a
        ``run_after`` given as a duration or a time)."""
        timeout = _seconds(self.timeout, "timeout")
        unique_for = _seconds(self.unique_for, "unique_for")
        when: float | None
        if isinstance(self.run_after, str):
            try:
                when = parse_when(self.run_after, now=now(), field="run_after")
            except DurationError as exc:
                raise InvalidInput(f"submit: {exc}") from None
        else:
            when = self.run_after
        pools = tuple(self.pools) if self.pools else None
        return [JobSubmission(
            type=type_name, args=dict(args) if isinstance(args, Mapping) else args,
            priority=self.priority, pools=pools, run_after=when, locks=tuple(self.locks),
            timeout=timeout, unique_key=self.unique_key, unique_for=unique_for,
            on_duplicate=self.on_duplicate) for args in args_list]


NAMES = frozenset(f.name for f in fields(SubmitOptions))


def _seconds(value: float | str | None, name: str) -> float | None:
    """Seconds of a positive duration (``90``, ``5m``), or InvalidInput naming ``name``."""
    if value is None:
        return None
    try:
        seconds = parse_duration(value, field=name)
    except DurationError as exc:
        raise InvalidInput(f"submit: {exc}") from None
    if seconds <= 0:
        raise InvalidInput(f"submit: {name}: {value!r} must be more than 0 seconds")
    return seconds
