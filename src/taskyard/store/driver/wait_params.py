"""The values the drivers' transitions of approvals, waits and sleeps take (see
:mod:`taskyard.store.driver.params`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StartAwaiting:
    """Jobs of ``ids`` just made awaiting (at submit, released by their parents, retried):
    their deadline is set ``timeout`` seconds from now (none without one) and, ``anew``
    (a retry), signals count from now on instead of from their creation."""

    ids: Sequence[int]
    anew: bool = False


@dataclass(frozen=True, slots=True)
class EndAwaiting:
    """Awaiting jobs of ``ids`` whose kind is one of ``kinds`` end in ``state`` with
    ``result`` (JSON text), guarded by their state; ``due``: only those whose deadline
    has passed on the database clock (a timeout)."""

    ids: Sequence[int]
    state: str
    result: str | None
    kinds: Sequence[str]
    due: bool = False


@dataclass(frozen=True, slots=True)
class FirstSignals:
    """Waits just made awaiting, each with the signal it expects: (job, name, key or None
    for any key, the time from which signals count). PostgreSQL locks each name first
    (in order), as :class:`SendSignal` does: of a signal and a wait at the same moment,
    whichever commits second sees the other."""

    waits: Sequence[tuple[int, str, str | None, float]]


@dataclass(frozen=True, slots=True)
class SendSignal:
    """A signal sent: its name, key (None: none), payload (JSON text) and sender. Stored,
    and every awaiting wait it matches succeeds with the payload as its result."""

    name: str
    key: str | None
    payload: str | None
    by: str | None
