"""Anti-starvation aging of pending jobs (the rule of :func:`core.recurrence.effective_priority`).

A pending job's priority rises by 1 for each full ``period`` it has waited since it
was created (or since its ``run_after``, if later); the priority it was submitted
with is kept in ``base_priority``. The update reads the oldest pending jobs through
the ``(state, id)`` index, at most ``limit`` of them, so its cost does not grow with
the backlog; the oldest jobs are the ones that starve first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from taskyard.model.errors import InvalidInput
from taskyard.store.driver.params import AgePending

if TYPE_CHECKING:
    from taskyard.store.unit import Tx

class Aging:
    """Anti-starvation aging, in one transaction."""

    READS: ClassVar[frozenset[str]] = frozenset()
    """Methods a call through the store (``store.aging.<method>``) runs in a read
    transaction; the others run in a write transaction (:class:`taskyard.store.store.OneShot`)."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx

    def age_pending(self, period: float, limit: int = 1000) -> int:
        """Raise the priority of the oldest pending jobs by their full periods waited;
        returns how many jobs changed. ``period`` is in seconds (> 0)."""
        if period <= 0 or limit <= 0:
            raise InvalidInput("aging: period and limit must be > 0")
        return self.tx.driver.age_pending(self.tx.raw, AgePending(period, limit))
