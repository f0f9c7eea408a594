"""Jobs replayed from a database's history (``taskyard simulate --from-db``): each
arrives when it was created, and each of its attempts runs as long as it ran and ends
as it ended; everything else — where and when it runs — the simulation decides."""

from __future__ import annotations

from dataclasses import dataclass

from taskyard.core.locks import LockClaim
from taskyard.core.retry import RetryPolicy
from taskyard.core.states import AttemptState


@dataclass(frozen=True, slots=True)
class RecordedJob:
    """One recorded job; ``at`` is seconds from the window's start."""

    id: int
    type: str
    at: float
    priority: int
    pools: tuple[str, ...]
    cost: int
    claims: tuple[LockClaim, ...]
    retry: RetryPolicy
    timeout: float | None
    max_losses: int
    attempts: tuple[tuple[float, AttemptState], ...]
    """(seconds, how it ended) per attempt that ran; the last one repeats if more run."""
    requires: tuple[tuple[int, str], ...] = ()
    """(recorded id of a parent, condition); parents outside the window are left out."""
    convergence: str = "all"
    graph: int | None = None
