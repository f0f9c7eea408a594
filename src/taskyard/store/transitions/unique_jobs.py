"""Unique jobs: a submission with a unique key finds the job that holds that key.

A job of type T submitted with ``unique_key=K`` holds K (for T) while it has not ended
and, with ``unique_for=W``, for W seconds after it was created whatever its state. A
submission whose key is held gets the holder's id (``on_duplicate="existing"``, the
default) or is refused (``"reject"``: Conflict naming the holder).

Race-free: submitters serialise on each (type, key) before they look — PostgreSQL: a
transaction-scoped advisory lock per key, taken in sorted order and kept until commit
(:meth:`Driver.serialize_on`); SQLite: write transactions are serial already — so of
two concurrent submitters one commits its job before the other looks.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from taskyard.core.states import TERMINAL
from taskyard.model.errors import Conflict, InvalidInput
from taskyard.model.records import ON_DUPLICATE, JobSubmission

if TYPE_CHECKING:
    from taskyard.store.unit import Tx

MAX_KEY = 400
_ENDED = ", ".join(f"'{s}'" for s in sorted(TERMINAL))
_HOLDER = (
    "SELECT id, state FROM jobs WHERE type = ? AND unique_key = ? "
    f"AND (state NOT IN ({_ENDED}) OR created_at > {{now}} - ?) ORDER BY id DESC LIMIT 1")


@dataclass
class Duplicates:
    """What a batch's unique keys resolved to, by index in the batch."""

    existing: dict[int, int] = field(default_factory=dict)
    """Submissions whose key a stored job holds: that job's id."""
    earlier: dict[int, int] = field(default_factory=dict)
    """Submissions whose key an earlier submission of the batch takes: its index."""


def check(sub: JobSubmission, where: str) -> None:
    """InvalidInput unless the submission's unique fields make sense."""
    key = sub.unique_key
    if key is None:
        if sub.unique_for is not None:
            raise InvalidInput(f"{where}: unique_for needs a unique_key")
        return
    if not isinstance(key, str) or not key or len(key) > MAX_KEY or "\x00" in key:
        raise InvalidInput(f"{where}: unique_key must be 1-{MAX_KEY} characters of text")
    window = sub.unique_for
    if window is not None and (isinstance(window, bool) or not isinstance(window, int | float)
                               or not math.isfinite(window) or window <= 0):
        raise InvalidInput(f"{where}: unique_for must be a duration of more than 0 seconds")
    if sub.on_duplicate not in ON_DUPLICATE:
        raise InvalidInput(f"{where}: on_duplicate must be one of {', '.join(ON_DUPLICATE)}")


def find_duplicates(tx: Tx, subs: Sequence[JobSubmission]) -> Duplicates:
    """Serialise on the batch's keys, then find who holds each (Conflict for a held key
    whose submission says ``reject``)."""
    for index, sub in enumerate(subs):
        check(sub, f"job {index}")
    keys = sorted({(s.type, s.unique_key or "") for s in subs if s.unique_key is not None})
    if tx.joined and not tx.driver.sees_commits_after_lock(tx.raw):
        raise InvalidInput("unique_key: the transaction must be READ COMMITTED (a snapshot "
                           "taken before the key's lock would not see its holder)")
    for type_name, key in keys:  # in one order: two batches never wait for each other
        tx.driver.serialize_on(tx.raw, json.dumps(["taskyard.unique", type_name, key]))
    found = Duplicates()
    first: dict[tuple[str, str], int] = {}
    for index, sub in enumerate(subs):
        unique = sub.unique_key
        if unique is None:
            continue
        key = unique
        if (sub.type, key) in first:
            _refuse_if(sub, f"job {first[sub.type, key]} of this batch")
            found.earlier[index] = first[sub.type, key]
            continue
        row = tx.raw.first(_HOLDER, (sub.type, key, sub.unique_for or 0.0))
        if row is None:
            first[sub.type, key] = index
            continue
        _refuse_if(sub, f"job {row[0]} ({row[1]})")
        found.existing[index] = int(row[0])
    return found


def _refuse_if(sub: JobSubmission, holder: str) -> None:
    if sub.on_duplicate == "reject":
        raise Conflict(f"unique key {sub.unique_key!r} of type {sub.type!r} is held by "
                       f"{holder}")
