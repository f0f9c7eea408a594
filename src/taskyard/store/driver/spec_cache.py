"""Task type specs kept per store for the one-job submit (PostgreSQL's pg_submit,
SQLite's sqlite_submit): each backend reads a spec with a version of its row, and
guards its insert with that version; this module holds what they share — the cache's
bounds and the decisions taken before the insert."""

from __future__ import annotations

import functools
from collections.abc import Callable, MutableMapping
from typing import Any

from taskyard.model.errors import InvalidInput
from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.store.transitions.events import encode_payload

CACHE_SIZE = 1024
"""Task types kept per store; the cache starts over when it is full."""


def job_to_insert(sub: JobSubmission, cache: MutableMapping[str, Any],
                  read: Callable[[], tuple[Any, TaskTypeSpec] | None],
                  build: Callable[[TaskTypeSpec], dict[str, Any]],
                  ) -> tuple[Any, TaskTypeSpec, dict[str, Any]] | None:
    """The version of the row ``sub``'s type was read at, its spec and ``sub``'s job
    row; the type comes from ``cache`` or, when missing, from ``read`` (None: no such
    type). None when the one-job path does not apply: unknown type, update on launch
    (prerequisites), or invalid input — the ordinary path decides those with the type
    read afresh (and raises the error)."""
    cached = cache.get(sub.type)
    if cached is None:
        cached = read()
        if cached is None:
            return None
        if len(cache) >= CACHE_SIZE:
            cache.clear()
        cache[sub.type] = cached
    version, spec = cached
    if spec.prerequisites:
        return None
    try:
        return version, spec, build(spec)
    except InvalidInput:
        return None


@functools.lru_cache(maxsize=CACHE_SIZE)
def payload_tail(type_name: str) -> str:
    """What follows the job id in a ``job-pending`` payload (``,"type":…}``)."""
    return "," + encode_payload({"type": type_name})[1:]
