"""Update on launch (AWX): which prerequisite a launched job needs, and whether
an existing run can stand in for a new one.

A task type lists prerequisites: a type, args templated from the launched
job's args, and a cache window in seconds. A prerequisite run is reused when
one with the same type and rendered args is still in flight (even with
``cache: 0``), or succeeded no longer than ``cache`` seconds ago; a failed one
is never reused. Otherwise a new prerequisite job is spawned.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_WHOLE = re.compile(r"^\{([A-Za-z_]\w*)\}$")
_PART = re.compile(r"\{([A-Za-z_]\w*)\}")


class PrerequisiteError(ValueError):
    """A prerequisite template names an arg the launched job does not have."""


def render_args(template: Mapping[str, Any], args: Mapping[str, Any], *, where: str) -> Any:
    """Fill ``"{name}"`` strings from ``args``; a whole-string placeholder keeps the type."""

    def fill(value: Any) -> Any:
        if isinstance(value, str):
            whole = _WHOLE.match(value)
            if whole:
                return lookup(whole.group(1))
            return _PART.sub(lambda m: str(lookup(m.group(1))), value)
        if isinstance(value, Mapping):
            return {k: fill(v) for k, v in value.items()}
        if isinstance(value, list):
            return [fill(v) for v in value]
        return value

    def lookup(name: str) -> Any:
        if name not in args:
            raise PrerequisiteError(f"{where}: the job's args have no {name!r}")
        return args[name]

    return fill(dict(template))


@dataclass(frozen=True, slots=True)
class PriorRun:
    """An existing job of the prerequisite's type with the same rendered args."""

    job_id: int
    state: str
    finished_at: float | None


IN_FLIGHT = frozenset({"waiting", "pending", "dispatched", "running", "suspended"})


@dataclass(frozen=True, slots=True)
class Reuse:
    job_id: int
    wait: bool
    """True when the reused run is still in flight: the launched job waits on it."""


@dataclass(frozen=True, slots=True)
class Spawn:
    pass


def decide(prior: Sequence[PriorRun], *, cache: float, now: float) -> Reuse | Spawn:
    """Reuse an in-flight run, else a success within the cache window, else spawn."""
    for run in prior:
        if run.state in IN_FLIGHT:
            return Reuse(run.job_id, wait=True)
    for run in prior:
        if (run.state == "succeeded" and run.finished_at is not None
                and now - run.finished_at <= cache):
            return Reuse(run.job_id, wait=False)
    return Spawn()
