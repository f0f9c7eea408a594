"""Unique jobs: a submission with a unique key finds the job that holds that key.

A job of type T submitted with ``unique_key=K`` holds K (for T) while it has not ended
and, with ``unique_for=W``, for W seconds after it was created whatever its state. A
submission whose key is held gets the holder's id (``on_duplicate="existing"``, the
default) or is refused (``"reject"``: Conflict naming the holder).

Race-free: submitters serialise on each (type, key) before they look — PostgreSQL: a
transaction-scoped advisory lock per key, taken in sorted order and kept until commit
(``Driver.read_key_holders``); SQLite: write transactions are serial already — so of
two concurrent submitters one commits its job before the other looks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from taskyard.model.errors import Conflict, InvalidInput
from taskyard.model.records import ON_DUPLICATE, JobSubmission
from taskyard.store.driver.params import ReadKeyHolders

if TYPE_CHECKING:
    from taskyard.store.unit import Tx

MAX_KEY = 400


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
    # Who holds each key, read once the keys are locked (see ReadKeyHolders).
    asked = list(dict.fromkeys((s.type, s.unique_key, s.unique_for or 0.0)
                               for s in subs if s.unique_key is not None))
    holders = dict(zip(asked, tx.driver.read_key_holders(
        tx.raw, ReadKeyHolders(asked, joined=tx.joined)), strict=True))
    found = Duplicates()
    first: dict[tuple[str, str], int] = {}
    for index, sub in enumerate(subs):
        key = sub.unique_key
        if key is None:
            continue
        if (sub.type, key) in first:
            _refuse_if(sub, f"job {first[sub.type, key]} of this batch")
            found.earlier[index] = first[sub.type, key]
            continue
        row = holders[(sub.type, key, sub.unique_for or 0.0)]
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
