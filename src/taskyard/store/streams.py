"""The cycle's candidates: pending jobs of one pools list, read page by page."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from taskyard.core.placement import Candidate

if TYPE_CHECKING:
    from taskyard.store.cycle import CycleTx


@dataclass(slots=True)
class Stream:
    """Pending jobs of one pools list, read page by page."""

    text: str
    pools: tuple[str, ...]
    buffer: collections.deque[Candidate] = field(default_factory=collections.deque)
    after: tuple[int, int] | None = None
    done: bool = False
    read: int = 0
    first: list[Candidate] | None = None
    """The first page, when it was read with the pools lists (PostgreSQL)."""
    first_page: int = 0
    """The size ``first`` was read with (a list shorter than that has no more)."""

    def key(self) -> tuple[int, int]:
        head = self.buffer[0]
        return (-head.priority, head.id)

    def fill(self, tx: CycleTx, page: int) -> bool:
        """Read the next page; False when the list has nothing more."""
        if self.done:
            return False
        if self.first is not None:
            batch, self.first = self.first, None
            self.done = len(batch) < self.first_page
        else:
            batch = tx.candidates(self.text, self.after, page)
            self.done = len(batch) < page
        if batch:
            self.after = (batch[-1].priority, batch[-1].id)
            self.buffer.extend(batch)
        return bool(batch)
