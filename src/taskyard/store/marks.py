"""How an aggregate method wants its transaction when a caller does not give one.

``store.jobs.get(1)`` runs :meth:`Jobs.get` in a transaction of its own (see
:class:`taskyard.store.store.OneShot`): a write transaction unless the method is
marked here. Inside a caller's unit of work (``tx.jobs.get(1)``) the marks change
nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable[..., object])
MARK = "__taskyard_tx__"


def reads(method: F) -> F:
    """Only reads: a read transaction (deferred on SQLite: it never waits for writers)."""
    setattr(method, MARK, "read")
    return method


def reads_each(method: F) -> F:
    """Reads that need no snapshot shared between their statements (PostgreSQL:
    autocommit, no BEGIN/COMMIT round trips)."""
    setattr(method, MARK, "read_each")
    return method


def kind_of(method: object) -> str:
    """``write``, ``read`` or ``read_each``."""
    return str(getattr(method, MARK, "write"))
