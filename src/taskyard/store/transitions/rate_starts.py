"""Rate starts: when the cycle dispatched each job of a rate-limited task type, by key.

The cycle reads the newest starts of the keys it meets (through the index on type, key
and time: at most the limit's count of rows per key), records its own after it
dispatched them, and forgets those older than the longest window
(:data:`~taskyard.core.rate_limits.LONGEST_WINDOW`). The rule itself is core's
(:mod:`taskyard.core.rate_limits`); only the cycle, under its global lock, writes here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from taskyard.core.rate_limits import LONGEST_WINDOW, RateLimit

if TYPE_CHECKING:
    from taskyard.store.unit import Tx


class RateStarts:
    """The starts of rate-limited jobs, in one transaction."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx
        self._now: float | None = None

    def now(self) -> float:
        """The database clock, read once per unit of work: the moment the cycle's
        rate decisions are made at (never later than the dispatches they allow)."""
        if self._now is None:
            self._now = self.tx.driver.read_now(self.tx.raw)
        return self._now

    def recent(self, type_name: str, key: str, limit: RateLimit) -> list[float]:
        """The newest starts of (type, key) within ``limit``'s window before :meth:`now`
        (``limit.count`` of them at most: enough to decide)."""
        return self.tx.driver.recent_starts(self.tx.raw, type_name, key,
                                            self.now() - limit.per, limit.count)

    def record(self, started: Sequence[tuple[str, str]]) -> None:
        """The cycle dispatched jobs of these (type, key): one start each, at the clock
        of this statement, which follows the dispatches (so no window measured on the
        attempts' dispatch times holds more starts than the limit)."""
        self.tx.driver.record_starts(self.tx.raw, started)

    def forget_old(self) -> int:
        """Forget starts that no window reaches any more; how many. (The cutoff is a
        value, not the clock's expression: PostgreSQL's clock is volatile, and a
        condition on it could not use the index.)"""
        return self.tx.driver.forget_starts(self.tx.raw, self.now() - LONGEST_WINDOW)
